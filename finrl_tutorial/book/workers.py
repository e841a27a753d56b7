"""Chapter 4's tables, figures and folded blocks: rollout workers, the live comparison, the recorded
``bench scale`` record.

The chapter trains a few layouts itself (`live_table`, `live_view`) and reads the quiet record
through the shared functions of `finrl_tutorial.book.scale` (`speedups`, `phase_table`,
`fit_cost_model`, `project`); this module turns their results into the chapter's figures and small
tables, and the chapter states what they say in its own Markdown. Method details (rounds, load
averages, the record's command) go into a collapsed block, `method_note`, that the chapter shows at
the end of a section. `load_range` names the load averages of chapters 4, 5 and 8.
"""
from __future__ import annotations

import math
import os
from typing import Iterable, Mapping

import pandas as pd

from ..training.workers import DEFAULT_LEARNER_THREADS
from . import scale
from .folded import MethodNote, how_measured
from .teaching import listed, ran_plain_learner, reader_command


def _range(values) -> str:
    """``"0.8–1.4"`` (one decimal), or one number when both ends print alike."""
    low, high = f"{min(values):.1f}", f"{max(values):.1f}"
    return low if low == high else f"{low}–{high}"


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" + ("s" if count != 1 else "")


# --- load averages: one way to compute and name them, for chapters 4, 5 and 8 ----------------------

_LAYOUT_RUNS = {"trainer": ("the in-process trainer", "in-process trainers"), "workers": ("the workers", "workers"),
                "ddp": ("DDP", "DDP ranks")}
_NUMBERS = {1: "one", 2: "two", 3: "three", 4: "four", 8: "eight"}


def run_loads(records: Iterable[dict], layouts: Iterable[str] | None = None, processes: int | None = None
              ) -> list[float]:
    """The 1-minute load averages the runs of a ``bench scale`` record ended at: every stored run
    (each round) of every record whose layout is in ``layouts`` (None: every record) and, if given,
    that ran ``processes`` processes."""
    wanted = set(layouts) if layouts is not None else None
    return [float(run["loadavg"][0]) for r in records
            if (wanted is None or r.get("layout") in wanted)
            and (processes is None or int(r.get("processes") or 0) == processes)
            for run in (r.get("runs") or [r]) if run.get("loadavg")]


def load_scope(layouts: Iterable[str] | None = None, processes: int | None = None) -> str:
    """Which runs a load range of `run_loads` covers, in words: ``"over the runs of the in-process
    trainer and the workers"``, ``"over the runs of two workers"``, ``"over every run of the record"``."""
    if layouts is None:
        return "over every run of the record" + ("" if processes is None else f" with {processes} processes")
    layouts = list(layouts)
    if processes is None or processes == 1 and layouts == ["trainer"]:
        names = [_LAYOUT_RUNS.get(layout, (layout, layout))[0] for layout in layouts]
    else:
        number = _NUMBERS.get(processes, str(processes))
        names = [f"{number} {_LAYOUT_RUNS.get(layout, (layout, layout))[1]}" for layout in layouts]
    return "over the runs of " + listed(names)


def load_range(records: Iterable[dict], layouts: Iterable[str] | None = None, processes: int | None = None) -> str:
    """The range of `run_loads` (one decimal, `_range`) followed by `load_scope`: ``"0.8–1.4 over
    the runs of the in-process trainer and the workers"``. Every load range of chapters 4 and 5 is
    this function's."""
    loads = run_loads(records, layouts, processes)
    if not loads:
        raise ValueError("the records hold no load average for " + load_scope(layouts, processes)[5:])
    return f"{_range(loads)} {load_scope(layouts, processes)}"


# --- a collapsed block: how something was measured ----------------------------------------------

def method_note(items: Iterable[str], title: str = "How this was measured") -> MethodNote:
    """The method lines ``items`` (a little Markdown each) as one folded list (`folded.how_measured`)."""
    return how_measured([str(item) for item in items], title=title)


# --- 4.2: one shard of start days per worker -----------------------------------------------------

def plot_start_windows(layouts: Mapping[int, list], dates, ax) -> None:
    """Draw on ``ax`` where each worker's episodes may start: one row per layout of ``layouts``
    (``{workers: [(first day, last day), ...]}`` as `shard_start_windows` returns them), one bar per
    worker over the trading ``dates`` (the split's dates, indexed by day)."""
    dates = pd.DatetimeIndex(dates)
    for row, (workers, windows) in enumerate(layouts.items()):
        for k, (lo, hi) in enumerate(windows):
            start, end = dates[lo], dates[hi - 1]
            ax.barh(row, (end - start).days, left=start, color=f"C{k}", edgecolor="white")
            ax.text(start + (end - start) / 2, row, f"worker {k}", ha="center", va="center", color="white",
                    fontsize="small")
    ax.set_yticks(range(len(layouts)), [_plural(n, "worker") for n in layouts])
    ax.invert_yaxis()
    years = str(dates[0].year) if dates[0].year == dates[-1].year else f"{dates[0].year}–{dates[-1].year}"
    ax.set_title(f"Where each worker's episodes may start (train split, {years})")


def window_text(windows) -> str:
    """``[(first, last), ...]`` of `shard_start_windows` as half-open day windows, one per worker:
    ``"worker 0: days [365, 731), worker 1: days [0, 365)"`` (first day included, last excluded)."""
    return ", ".join(f"worker {k}: days [{lo}, {hi})" for k, (lo, hi) in enumerate(windows))


# --- 4.3: this notebook's own runs ---------------------------------------------------------------

def load_average() -> float:
    """The 1-minute load average now: how many processes wanted a core (this notebook's included);
    NaN where the OS has none (Windows)."""
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else math.nan


def layout_name(workers: int, threads: int) -> str:
    """The chapter's name of a live run: ``"in-process trainer, 2 threads"`` (``workers`` 0: no
    pool) or ``"2 workers, update on 1 thread"``."""
    if workers == 0:
        return f"in-process trainer, {_plural(threads, 'thread')}"
    return f"{_plural(workers, 'worker')}, update on {_plural(threads, 'thread')}"


def live_table(runs: Mapping[tuple[int, int], object], loads: Mapping[tuple[int, int], float] | None = None
               ) -> pd.DataFrame:
    """One row per live run, in the order of ``runs`` (``{(workers, update threads): TrainResult}``,
    0 workers: the in-process trainer): env-steps, samples/s, episodes finished, workers, update
    threads, the load average after the run (from ``loads``, NaN where missing) and the samples/s
    ÷ those of the fastest in-process trainer (column ``"÷ fastest in-process trainer"``; see
    `fastest_trainer`). Rows are named by `layout_name`."""
    loads = loads or {}
    rows = {}
    for (workers, threads), result in runs.items():
        rows[layout_name(workers, threads)] = {
            "env-steps": float(result.env_steps), "samples / s": float(result.samples_per_s),
            "episodes finished": float(result.log["train/episodes"].sum()), "workers": float(workers),
            "update threads": float(threads), "load average": float(loads.get((workers, threads), math.nan))}
    table = pd.DataFrame.from_dict(rows, orient="index")
    table["÷ fastest in-process trainer"] = table["samples / s"] / table.loc[fastest_trainer(table), "samples / s"]
    return table


def fastest_trainer(live: pd.DataFrame) -> str:
    """The row of `live_table` (or any table with ``workers`` and ``samples / s``) of the in-process
    trainer with the highest samples/s: the baseline of the live comparison."""
    trainers = live.loc[live["workers"] == 0, "samples / s"].astype(float)
    if trainers.empty:
        raise ValueError("the live runs hold no in-process trainer (0 workers) to compare against")
    return str(trainers.idxmax())


def oversubscribed_note(load: float, cores: int) -> str:
    """One sentence to print under a live speed table when the machine was oversubscribed (a load
    average above its ``cores``: more processes wanted a core than there were), else ``""``. Then
    a layout on two threads waits for the scheduler at every operation (4.5), so its ratio says
    more about the machine's other work than about the layout."""
    if not math.isfinite(load) or load <= cores:
        return ""
    return (f"Oversubscribed: the load average reached {load:.1f} on {cores} cores during these runs, so the "
            "layouts on two threads shared their cores with other work; their ratios are not meaningful here "
            "(the record below was measured on a quiet machine).")


def live_view(live: pd.DataFrame, cores: int | None = None):
    """`live_table` as the chapter shows it (a pandas Styler): the load averages left out (they go
    into `live_method`), the ratio to the fastest in-process trainer as ``1.05×``. With ``cores``,
    the caption carries `oversubscribed_note` when a run ended above them."""
    shown = live.drop(columns=["load average"])
    styler = shown.style.format({"env-steps": "{:,.0f}", "samples / s": "{:,.0f}", "episodes finished": "{:.0f}",
                                 "workers": "{:.0f}", "update threads": "{:.0f}",
                                 "÷ fastest in-process trainer": "{:.2f}×"})
    loads = live["load average"].astype(float).dropna()
    note = oversubscribed_note(float(loads.max()), cores) if cores is not None and len(loads) else ""
    return styler.set_caption(note) if note else styler


def live_method(live: pd.DataFrame, cores: int, total_steps: int) -> MethodNote:
    """The collapsed block at the end of 4.3: each live run's budget, what is and is not timed, and
    the range of the load averages the runs ended at (from `live_table`)."""
    loads = live["load average"].astype(float).dropna()
    items = [f"Each layout trained once on {total_steps:,} env-steps with validation off (`eval_every=0`); "
             "samples/s is the training loop's rate (rollout plus update). Starting the worker processes is not "
             "timed. One run per layout: no rounds, so no verdict."]
    if len(loads):
        busy = loads.max() > cores
        items.append(f"Load average at the end of each run: {_range(loads)} over the runs above, on {cores} cores "
                     "(the number of processes that wanted a core, averaged over the last minute, this notebook's "
                     "included)"
                     + (": above the cores, so the runs shared the machine with other work." if busy
                        else ": below the cores."))
    return method_note(items, "How this run was measured")


# --- 4.4: the stored record -------------------------------------------------------------------

PHASE_COLUMNS = ("rollout", "transfer", "update", "total", "samples / s (measured)")
"""The columns of `phase_table` the chapter shows: where the seconds go, and the rate they give."""


def phase_view(phases: pd.DataFrame):
    """`phase_table` as the chapter shows it (a Styler): seconds per iteration of the rollout, the
    transfer, the update and their total, and the measured samples/s; the phases these layouts do
    not have (all-reduce, waiting) left out."""
    shown = phases.loc[:, list(PHASE_COLUMNS)].rename(columns={"samples / s (measured)": "samples / s"})
    return (shown.style.format("{:.3f}", subset=["rollout", "transfer", "update", "total"])
            .format("{:,.0f}", subset=["samples / s"])
            .set_caption("seconds per iteration (medians over the rounds) and the measured samples/s"))


def plot_phases(phases: pd.DataFrame, ax, cores: int | None = None) -> None:
    """Stacked bars on ``ax``: the rollout, transfer and update seconds of one iteration per layout
    (rows of `phase_table`); ``cores`` (the record's machine) goes into the title."""
    left = pd.Series(0.0, index=phases.index)
    for k, phase in enumerate(("rollout", "transfer", "update")):
        ax.barh(phases.index, phases[phase].astype(float), left=left, color=f"C{k}", label=phase)
        left += phases[phase].astype(float)
    ax.invert_yaxis()
    ax.set_xlabel("seconds per iteration (median of the rounds)")
    machine = f" (quiet machine, {cores} CPU cores)" if cores else ""
    ax.set_title(f"The phases of one iteration, per layout{machine}", fontsize="medium")
    ax.set_xlim(0, 1.35 * float(left.max()))  # room for the legend beside the bars
    ax.legend(loc="upper right")
    ax.grid(axis="x", alpha=0.3)


def worker_labels(table: pd.DataFrame) -> tuple[str, str, str]:
    """The rows of `speedups` for one worker, two workers with the update on one thread, and two
    workers with the update on two threads: ``(one_worker, one_thread, two_threads)``."""
    labels = list(table.index)
    try:
        one_worker = next(label for label in labels if label.startswith("workers ×1"))
        one_thread = next(label for label in labels if "×2" in label and "on 1 thread" in label)
        two_threads = next(label for label in labels if "×2" in label and "on 2 threads" in label)
    except StopIteration:
        raise ValueError("the table holds no one-worker row, or not both two-worker rows (1 and 2 threads)") from None
    return one_worker, one_thread, two_threads


def speedup_title(table: pd.DataFrame) -> str:
    """The title of the chapter's speed-up figure: how many rounds the bars summarise."""
    return (f"Samples/s per layout: median of {int(table['repeats'].max())} rounds, whiskers min..max; "
            "in brackets the ratio to the baseline")


def _default_label(table: pd.DataFrame) -> str:
    """The two-worker row of `speedups` that runs the pool's default learner threads."""
    _, one_thread, two_threads = worker_labels(table)
    return two_threads if DEFAULT_LEARNER_THREADS == 2 else one_thread


def _provenance(records: list[dict], name: str) -> str:
    first = records[0]
    return (f"The record `{name}`: measured {first['date'][:16].replace('T', ' ')} UTC on {first['cpu_count']} CPU "
            f"cores, torch {first['torch']}, {_plural(int(first['threads']), 'torch thread')} per process, "
            f"{'the plain learner (glossary)' if ran_plain_learner(first) else 'the default learner'}. Command: "
            f"`{reader_command(first['command'])}`.")


def record_method(records: Iterable[dict], name: str, phases: pd.DataFrame) -> MethodNote:
    """The collapsed block at the end of 4.4, from the record ``records`` (named ``name``) and its
    `phase_table`: the record's date, machine and command; how the rounds interleave; how a verdict is
    read (`SPEED_TIE_MARGIN`); what the baseline is; the load averages; the same work in two processes
    (`same_work_seconds`); and the record's noise floor (one worker's update against the in-process
    trainer's update of the same samples on one thread)."""
    records = list(records)
    table = scale.speedups(records, layouts=["trainer", "workers"])
    one_worker, _, _ = worker_labels(table)
    cores = records[0]["cpu_count"]
    loads = run_loads(records, ("trainer", "workers"))
    same = scale.same_work_seconds(records, "workers")
    same_trainer = f"in-process trainer ({same['envs']} envs)"
    worker_update, trainer_update = float(phases.loc[one_worker, "update"]), float(phases.loc[same_trainer, "update"])
    gap = max(worker_update, trainer_update) / min(worker_update, trainer_update) - 1  # the larger over the smaller
    busy = min(loads) > cores
    items = [
        _provenance(records, name),
        f"**Rounds.** Every configuration runs once per round, {int(table['repeats'].max())} rounds, one after the "
        "other, so a slow spell of the machine hits all of them alike; run *i* of every configuration comes from "
        "round *i*, and each ratio is also taken round by round.",
        "**Verdicts.** Faster (or slower) only if every round lies above (or below) 1; a tie only if every round lies "
        f"within ±{100 * scale.SPEED_TIE_MARGIN:g} % of 1, a stated margin (`ft.book.scale.SPEED_TIE_MARGIN`); "
        "otherwise inconclusive: the rounds tell the two neither apart nor equal. With "
        f"{int(table['repeats'].max())} rounds, two equally fast layouts would still land on one side of 1 in every "
        f"round {scale.chance_every_round(int(table['repeats'].max())):.0%} of the time, so these verdicts are "
        "exploratory; 4.4 tests them together with Holm's correction (`ft.book.scale.holm_speed_tests`).",
        "**The baseline.** The in-process trainer is timed on one torch thread and on two, the cores the two-worker "
        "layouts use for their rollouts and (with two learner threads) for the update; the faster of the two is the "
        "baseline.",
        f"**Load average** while the record ran: {load_range(records, ('trainer', 'workers'))}, on {cores} cores (the "
        "number of processes that wanted a core, averaged over the last minute, the benchmark's own included)"
        + (": more than the cores, so these are a busy machine's figures." if busy else ": below the cores, a quiet "
           "machine."),
        f"**The same work in two processes.** One iteration's rollout of {same['envs']} envs took "
        f"{same['trainer']:.2f} s in the in-process trainer and {same['workers']:.2f} s in one worker, in the same "
        "rounds." + ("" if 0.83 < same["ratio"] < 1.2 else
                     " The work is identical, so that difference is no parallel speed-up: with more runnable "
                     "processes than cores, a layout with more processes can get a larger share of the cores."),
        f"**The noise floor.** One worker and the {same_trainer} make the same update, on one thread and on the same "
        f"samples: {worker_update:.2f} s and {trainer_update:.2f} s per iteration, the larger {gap:.0%} above the "
        "smaller for identical work. A phase difference of that size between two layouts is noise, not a cost of the layout.",
    ]
    return method_note(items)


# --- 4.4-4.5: the chapter's speed verdicts, tested together ----------------------------------------

#: The name of 4.5's comparison in `speed_family`: two workers, the update on 2 threads ÷ on 1 thread.
THREADS_COMPARISON = "two workers: update on 2 threads ÷ on 1 thread"


def speed_family(records: Iterable[dict]) -> pd.DataFrame:
    """Every speed verdict chapter 4 draws from the record ``records``, tested together
    (`scale.holm_speed_tests`): the three worker layouts of 4.4 against the fastest in-process trainer,
    and 4.5's two learner threads against one (`THREADS_COMPARISON`). Each row names its baseline."""
    records = list(records)
    table = scale.speedups(records, layouts=["trainer", "workers"])
    baseline = table["baseline"].iloc[0]
    comparisons = {f"{label} ÷ {baseline}": scale.round_ratios(records, label) for label in worker_labels(table)}
    comparisons[THREADS_COMPARISON] = scale.learner_threads_reading(records)["rounds"]
    return scale.holm_speed_tests(comparisons)


family_view = scale.family_view


# --- 4.5: one learner thread or two ----------------------------------------------------------------

def threads_table(quiet: Mapping, loaded: Mapping):
    """The two `learner_threads_reading`\\ s side by side (a Styler): per machine state, the range of
    the load averages of the two-worker runs (as `load_range` prints it, `load_scope` in the column's
    name), the samples/s of two workers with the update on one thread and on two, their
    ratio (two threads ÷ one) and the update's seconds per iteration on each."""
    rows = {}
    load_column = f"load average {load_scope(('workers',), 2)}"
    for name, reading in (("quiet machine", quiet), ("same machine, heavy load", loaded)):
        rows[name] = {load_column: _range(reading["loads"]),
                      "samples / s, 1 thread": float(reading["1 thread"]),
                      "samples / s, 2 threads": float(reading["2 threads"]),
                      "2 threads ÷ 1 thread": float(reading["ratio"]),
                      "update s, 1 thread": float(reading["update seconds"][1]),
                      "update s, 2 threads": float(reading["update seconds"][2])}
    table = pd.DataFrame.from_dict(rows, orient="index")
    return (table.style.format({"samples / s, 1 thread": "{:,.0f}", "samples / s, 2 threads": "{:,.0f}",
                                "2 threads ÷ 1 thread": "{:.2f}×", "update s, 1 thread": "{:.2f}",
                                "update s, 2 threads": "{:.2f}"})
            .set_caption("two workers, the update on one learner thread and on two"))


def loaded_method(records: Iterable[dict], name: str) -> MethodNote:
    """The collapsed block at the end of 4.5: the loaded record's date, machine and command, and
    the load averages its worker and trainer runs ended at (`load_range`)."""
    records = list(records)
    return method_note([_provenance(records, name),
                        f"Load average while it ran: {load_range(records, ('trainer', 'workers'))}, on "
                        f"{records[0]['cpu_count']} cores: many more processes wanted a core than there were. It "
                        "shows what load does to the layouts, not their speed."], "How the loaded record was measured")


# --- 4.6: the cost model ---------------------------------------------------------------------------

def model_label(threads: int) -> str:
    """The chapter's name of the workers cost model with the update on ``threads`` learner threads."""
    return (f"workers, update on {_plural(threads, 'thread')}"
            + (" (default)" if threads == DEFAULT_LEARNER_THREADS else ""))


def model_checks(records: Iterable[dict], models: Mapping[int, scale.CostModel]) -> pd.DataFrame:
    """`model_check` of each model of ``models`` (``{learner threads: CostModel}``), one block of rows
    per model (`model_label`), the samples/s it predicts beside the measured ones."""
    records = list(records)
    return pd.concat({model_label(threads): scale.model_check(records, model) for threads, model in models.items()})


def check_view(check: pd.DataFrame):
    """`model_checks` as the chapter shows it (a Styler): rates with thousands separators, the error in %."""
    return (check.drop(columns=["processes"]).style
            .format({"model samples / s": "{:,.0f}", "measured samples / s": "{:,.0f}", "error": "{:+.0%}"})
            .set_caption("each model against the record's points"))


def fit_table(model: scale.CostModel) -> pd.DataFrame:
    """The fitted terms of a workers `CostModel`, one row each with what it is and its value in
    words: the rollout r, the update u, the serial fraction s, the update's speed-up on two threads
    t, and the overhead o of each added worker (also as a share of one worker's iteration; where it
    is negative, that the projection uses 0: `scale.clamped_terms`)."""
    rows = {
        "r": ("one worker's rollout", f"{model.rollout:.2f} s per iteration"),
        "u": ("one worker's update", f"{model.update:.2f} s per iteration"),
        "s = u / (r + u)": ("the serial fraction: the update's share of one worker's iteration",
                            f"{model.serial_fraction:.0%}"),
        "t": ("the update's speed-up on two threads (two threads' rate ÷ one thread's)",
              f"{model.thread_speedup:.2f}"),
        "o": ("what each added worker costs", f"{model.overhead:+.3f} s per iteration "
                                              f"({model.overhead_fraction:+.1%} of one worker's iteration)"
                                              + ("; the projection uses 0" if "overhead" in scale.clamped_terms(model)
                                                 else "")),
    }
    return pd.DataFrame.from_dict(rows, orient="index", columns=["what it is", "fitted on the record"]
                                  ).rename_axis("term")


def projection_inputs(models: Mapping[int, scale.CostModel], table: pd.DataFrame,
                      trainer: scale.TrainerModel | None = None
                      ) -> tuple[dict[str, scale.CostModel], dict[str, dict[int, tuple]]]:
    """What `plot_projection` takes for ``models`` (``{learner threads: CostModel}``): the models by
    `model_label`, and each one's measured points of ``table`` (`speedups`; `measured_points`),
    against ``trainer`` (`fit_trainer_model`: one in-process trainer with as many envs as the
    workers hold together) where given, else against the table's baseline."""
    labelled = {model_label(threads): model for threads, model in models.items()}
    measured = {model_label(threads): scale.measured_points(table, "workers", threads=threads, baseline=trainer,
                                                            samples_per_process=model.samples_per_process)
                for threads, model in models.items()}
    return labelled, measured


def ratio_table(model: scale.CostModel, fastest: float, fastest_label: str, trainer: scale.TrainerModel,
                envs_per_worker: int, processes: Iterable[int] = (4, 8)) -> pd.DataFrame:
    """The ratios 4.6 reads from ``model`` (a workers `CostModel`), one row each: what is set against
    what, and the ratio. The bound ``t / s`` against one worker; the model's one worker and that bound
    against the fastest in-process trainer (``fastest`` samples/s, named ``fastest_label``); and the
    projection (`project`) at each of ``processes`` against one in-process trainer with as many envs
    (``trainer``: `fit_trainer_model`; ``envs_per_worker`` names its envs) and against the fastest
    one alone."""
    bound = model.thread_speedup / model.serial_fraction
    one = model.samples_per_s(1) / fastest
    same_envs = scale.project(model, processes, baseline=trainer)
    alone = scale.project(model, processes, baseline=fastest)
    rows = [("bound: any number of workers (model)", "one worker", bound),
            ("one worker (model)", fastest_label, one),
            ("bound: any number of workers (model)", fastest_label, bound * one)]
    for p in processes:
        rows.append((f"{p} workers (projection)",
                     f"in-process trainer ({p * envs_per_worker} envs, 2 threads, extrapolated)",
                     float(same_envs.loc[p, "speed-up"])))
    for p in processes:
        rows.append((f"{p} workers (projection)", fastest_label, float(alone.loc[p, "speed-up"])))
    return pd.DataFrame(rows, columns=["samples/s of", "against", "ratio"])


def ratio_view(ratios: pd.DataFrame):
    """`ratio_table` as the chapter shows it: the ratios as ``1.23×``, no index."""
    return (ratios.style.format("{:.2f}×", subset=["ratio"]).hide(axis="index")
            .set_caption("the cost model's ratios, each with its baseline"))


# --- the chapter's box ---------------------------------------------------------------------------

def chapter_box(live: pd.DataFrame, records: Iterable[dict], model: scale.CostModel, loaded_records: Iterable[dict],
                name: str, loaded_name: str, cores: int | None = None):
    """The box at the end of the chapter (`measured_box`): this run's ratios to the fastest in-process
    trainer (`live_table`), and from the quiet record ``name`` (its ``records``) the two-worker
    speed-ups (`speedups`), the serial fraction of ``model`` and the load averages of the trainer's
    and workers' runs (`load_range`), and from the loaded record ``loaded_name`` (``loaded_records``)
    two learner threads against one (`learner_threads_reading`) with the load of those runs. With
    ``cores``, this run's rows say so when the live runs were oversubscribed (`oversubscribed_note`):
    then their ratios are the machine's other work, not the layouts."""
    from . import measured_box
    records, loaded_records = list(records), list(loaded_records)
    table = scale.speedups(records, layouts=["trainer", "workers"])
    loaded, date = scale.learner_threads_reading(loaded_records), records[0]["date"]
    baseline = fastest_trainer(live)
    _, one_thread, two_threads = worker_labels(table)
    default = _default_label(table)
    loads = live["load average"].astype(float).dropna()
    busy = cores is not None and len(loads) and oversubscribed_note(float(loads.max()), cores)
    warning = f" (oversubscribed: load {loads.max():.1f} on {cores} cores, not meaningful)" if busy else ""
    this_run = {row: f"{ratio:.2f}× the samples/s of the {baseline}" + warning
                for row, ratio in live["÷ fastest in-process trainer"].items() if row != baseline}
    recorded = {
        f"{name} ({date[:10]}), two workers, update on 1 thread" + (" (the default)" if default == one_thread else ""):
            scale.speedup_text(table, one_thread),
        f"{name}, two workers, update on 2 threads" + (" (the default)" if default == two_threads else ""):
            scale.speedup_text(table, two_threads),
        f"{name}, serial fraction of one worker's iteration": f"{model.serial_fraction:.0%}",
        f"{name}, load average while measuring": load_range(records, ("trainer", "workers")),
        f"{loaded_name} (load {load_range(loaded_records, ('workers',), 2)}), two learner threads against one":
            f"{loaded['ratio']:.2f}× the samples/s of one thread",
    }
    return measured_box(
        this_run=this_run, recorded=recorded,
        shows="where an iteration's time goes with rollout workers, what one and two workers bought against the "
              "fastest in-process trainer on a quiet two-core machine, and which learner thread count was faster "
              "there and under load",
        does_not_show="machines with more free cores (the projection is a model), envs that cannot be batched, or GPUs")
