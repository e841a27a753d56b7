"""Scale-out readings of ``bench scale`` records: speed-ups, phases, and a cost model.

Chapters 4, 5, 6 and 8 read the same record with the same functions:

* `speedups` — every configuration's rate against one baseline, by default the **fastest
  single-process configuration** (the in-process trainer with the highest median samples/s), with
  the round-by-round ratios (``bench scale`` interleaves its repeats, so run *i* of every
  configuration comes from round *i*), the load averages the runs ended at, and a verdict from
  the rounds (`speed_verdict`: faster, slower, a tie only inside the stated margin
  `SPEED_TIE_MARGIN`, else inconclusive);
* `phase_table` — where an iteration's seconds go (rollout, transfer, update, all-reduce,
  waiting) in each layout;
* `fit_cost_model` / `CostModel` — a three-number model of an iteration, fitted to the phases of
  one and two processes, and its projection to more processes (`project`, `plot_projection`),
  like with like against `fit_trainer_model` / `TrainerModel`: one in-process trainer with as
  many envs as the processes hold together;
* `round_ratios` / `holm_speed_tests` — the round-by-round ratios behind a verdict, and a family of
  verdicts tested together with Holm's correction (`chance_every_round`: how often 3 rounds all
  fall on one side of 1 by chance alone);
* `peer_comparisons` / `peer_ppo_layouts` — a ``bench peers`` record read like with like: every
  ratio between two measurements of the same number of accounts (or within one library), each
  named with its baseline.

All functions are pure: records in, tables, numbers or a figure out. The chapters read
`SCALE_RECORD`, measured on a quiet machine; `LOADED_SCALE_RECORD`, the same command on the same
machine under heavy load, shows what load does to the same layouts.
"""
from __future__ import annotations

import dataclasses
import math
import statistics
import textwrap
from typing import Iterable

import pandas as pd

from ..bench.scale import PHASES, default_minibatches, scale_label
from ..errors import InputError
from .teaching import p_value

SCALE_RECORD = "bench_scale_quiet.jsonl"
"""The ``bench scale`` record the scale-out chapters read: 2 CPU cores, quiet (each record holds its
load average; the chapters print them)."""

LOADED_SCALE_RECORD = "bench_scale.jsonl"
"""The same command on the same 2-core machine under heavy load: what load does, not speed."""

DDP_CONTROL_RECORD = "bench_scale_ddp_control.jsonl"
"""A ``bench scale`` record of two DDP ranks beside in-process trainers with both minibatch sizes
(``--trainer-batch-sizes 1024 2048``): chapter 5.5's like-with-like control (2 CPU cores, quiet)."""

BASELINE_LAYOUT = "trainer"
"""The single-process configuration every speed-up of the scale-out chapters is measured against."""

SPEED_TIE_MARGIN = 0.05
"""The equivalence margin of a speed ratio: two configurations "tie" only when *every* round's
ratio lies within ±5 % of 1 (0.95–1.05×). A stated choice, not something the data decide: a
throughput difference under 5 % is smaller than most layout choices are worth, while the rounds
of a shared two-core machine spread by tens of percent, so few comparisons there reach it. A
ratio whose rounds fall on both sides of 1 but reach past the margin is ``inconclusive``: the
rounds can tell the two neither apart nor equal (`speed_verdict`)."""

SPEED_VERDICTS = ("faster", "slower", "tie", "inconclusive", "one ratio")
"""The words `speed_verdict` returns (``baseline`` marks the baseline's own row of `speedups`)."""


def _records(records: Iterable[dict], key: str) -> list[dict]:
    return [r for r in records if isinstance(r.get(key), (int, float)) and r.get(key) == r.get(key)]


def _runs(record: dict, key: str) -> list[float]:
    runs = record.get("runs") or [{key: record[key]}]
    return [float(run[key]) for run in runs if run.get(key) is not None]


def _loads(record: dict) -> list[float]:
    runs = record.get("runs") or [record]
    return [run["loadavg"][0] for run in runs if run.get("loadavg")]


def fastest_single_process(records: Iterable[dict], key: str = "samples_per_s") -> dict:
    """The in-process trainer record with the highest median ``key``, among those with PPO's default
    minibatches (a trainer with larger ones runs another update: a control, not the baseline): the
    baseline of `speedups`."""
    trainers = [r for r in _records(records, key) if r["layout"] == BASELINE_LAYOUT and default_minibatches(r)]
    if not trainers:
        raise InputError(f"the records hold no {BASELINE_LAYOUT!r} layout with {key}: run "
                         "`python -m finrl_tutorial bench scale --layouts trainer ...` to measure the baseline")
    return max(trainers, key=lambda r: r[key])


def speedups(records: Iterable[dict], key: str = "samples_per_s", baseline: str | None = None,
             layouts: Iterable[str] | None = None, margin: float | None = SPEED_TIE_MARGIN) -> pd.DataFrame:
    """One row per configuration (labelled by `scale_label`) with a ``key`` rate: its median, the
    min and max of its repeats, its speed-up against ``baseline`` (a label; default the fastest
    in-process trainer, `fastest_single_process`) as the ratio of medians and, where both keep
    their repeats, the min and max of the round-by-round ratios; the repeats and the range of
    1-minute load averages the runs ended at, and a ``verdict`` from the rounds (`speed_verdict`:
    ``faster`` or ``slower`` only if every round says so, ``tie`` only if every round lies within
    ``1 ± margin``, else ``inconclusive``; ``one ratio`` where the two records hold no paired
    rounds), recomputed from the records' stored runs every time, with its ``margin``. ``layouts``
    keeps only those layouts (the baseline row is always kept). The ``baseline`` column names the
    baseline in every row."""
    records = _records(records, key)
    by_label = {scale_label(r): r for r in records}
    base_label = baseline or scale_label(fastest_single_process(records, key))
    if base_label not in by_label:
        raise InputError(f"no configuration labelled {base_label!r} with {key} in the records; "
                         f"there are: {', '.join(by_label)}")
    base = by_label[base_label]
    base_runs = _runs(base, key)
    wanted = set(layouts) if layouts is not None else None
    rows = {}
    for label, record in by_label.items():
        if wanted is not None and record["layout"] not in wanted and label != base_label:
            continue
        values = _runs(record, key)
        paired = len(values) == len(base_runs) and "runs" in record and "runs" in base
        ratios = [v / b for v, b in zip(values, base_runs)] if paired else [record[key] / base[key]]
        loads = _loads(record)
        rows[label] = {"layout": record["layout"], "processes": int(record["processes"]),
                       "median": float(record[key]), "min": min(values), "max": max(values),
                       "speed-up": float(record[key]) / float(base[key]),
                       "rounds min": min(ratios), "rounds max": max(ratios), "repeats": len(values),
                       "load min": min(loads) if loads else math.nan, "load max": max(loads) if loads else math.nan,
                       "verdict": speed_verdict(ratios if paired else [], margin) if label != base_label
                       else "baseline", "margin": math.nan if margin is None else float(margin),
                       "baseline": base_label}
    return pd.DataFrame(rows).T.infer_objects()


def check_speed_margin(margin) -> float:
    """``margin`` as a float if it is a finite number in [0, 1), else a ValueError naming it."""
    try:
        value = float(margin)
    except (TypeError, ValueError):
        raise ValueError(f"the speed tie margin must be a number in [0, 1), got {margin!r}") from None
    if isinstance(margin, bool) or not math.isfinite(value) or not 0 <= value < 1:
        raise ValueError(f"the speed tie margin must be a finite number in [0, 1) (a share of 1×), got {margin!r}")
    return value


def speed_verdict(ratios: Iterable[float], margin: float | None = SPEED_TIE_MARGIN) -> str:
    """The verdict of round-by-round speed ratios (each round's rate ÷ the baseline's in the same
    round): ``faster`` when every round lies above 1, ``slower`` when every round lies below 1,
    ``tie`` only when every round lies within ``1 ± margin`` (`SPEED_TIE_MARGIN`; None: no
    margin, so never a tie), else ``inconclusive`` (the rounds fall on both sides of 1, or touch
    it, and reach past the margin). Fewer than two ratios (one measurement, or two records
    without paired rounds) are ``one ratio``: a single number cannot show on which side of 1 the
    rounds lie, so it gets no verdict."""
    ratios = [float(r) for r in ratios]
    if len(ratios) < 2:
        return "one ratio"
    if min(ratios) > 1:
        return "faster"
    if max(ratios) < 1:
        return "slower"
    if margin is not None and all(abs(r - 1) <= check_speed_margin(margin) for r in ratios):
        return "tie"
    return "inconclusive"


def speed_verdict_reason(verdict: str, margin: float | None = SPEED_TIE_MARGIN) -> str:
    """Why round-by-round ratios got ``verdict`` (`speed_verdict`), in a few words."""
    bound = "no equivalence margin" if margin is None else f"the tie margin of ±{100 * margin:g} % around 1"
    return {"faster": "faster in every round", "slower": "slower in every round",
            "tie": f"every round lies within {bound}",
            "inconclusive": f"not every round lies on one side of 1, nor every round within {bound}"
            if margin is not None else "not every round lies on one side of 1, and without a margin nothing is a tie",
            "one ratio": "one ratio, not paired rounds, so no verdict"}[verdict]


def speed_verdict_words(verdict: str, margin: float | None = SPEED_TIE_MARGIN) -> str:
    """``verdict`` (`speed_verdict`) with its reason: ``"faster in every round"``, ``"a tie (every
    round lies within …)"``, ``"inconclusive (not every round lies on one side of 1, …)"``."""
    reason = speed_verdict_reason(verdict, margin)
    return {"tie": f"a tie ({reason})", "inconclusive": f"inconclusive ({reason})"}.get(verdict, reason)


#: How close to a boundary of `speed_verdict` (1, or 1 ± the tie margin) a round's ratio must lie for
#: `speedup_text` to say so: two decimals cannot show on which side of the boundary it lies.
NEAR_BOUNDARY = 0.01


def near_boundary_words(low: float, high: float, margin: float | None = SPEED_TIE_MARGIN,
                        within: float = NEAR_BOUNDARY) -> str:
    """Which end of the rounds' range ``[low, high]`` lies within ``within`` of a boundary of
    `speed_verdict` (1, or ``1 ± margin``), on which side, in words (``""`` when neither does):
    ``"the lowest round lies below 1, within 0.01 of it"``. Printed at two decimals, such a round
    reads as the boundary itself, and the verdict turns on its side."""
    bounds = [(1.0, "1")]
    if margin is not None:
        bounds += [(1 - margin, f"the tie margin's lower end {1 - margin:.2f}"),
                   (1 + margin, f"the tie margin's upper end {1 + margin:.2f}")]
    words = []
    for name, value in (("lowest", low), ("highest", high)):
        for bound, bound_name in bounds:
            if value != bound and abs(value - bound) < within:
                side = "below" if value < bound else "above"
                words.append(f"the {name} round lies {side} {bound_name}, within {within:g} of it")
    return "; ".join(words)


def speedup_text(table: pd.DataFrame, label: str) -> str:
    """``"0.85× the samples/s of the in-process trainer (256 envs) (round by round against it:
    0.80–0.90×): slower in every round"``: one row of `speedups` in words, its baseline named, with
    its verdict (`speed_verdict`, computed from the records' runs) and the reason for it. The rounds
    are printed at two decimals; an end within `NEAR_BOUNDARY` of a boundary of the verdict is named,
    with its side (`near_boundary_words`): ``"(round by round against it: 1.00–1.23×; the lowest
    round lies below 1, within 0.01 of it)"``."""
    row = table.loc[label]
    verdict = row["verdict"]
    margin = float(row["margin"]) if "margin" in row and row["margin"] == row["margin"] else SPEED_TIE_MARGIN
    rounds = ""
    if row["repeats"] > 1 and row["rounds min"] != row["rounds max"]:
        near = near_boundary_words(float(row["rounds min"]), float(row["rounds max"]), margin)
        rounds = (f" (round by round against it: {row['rounds min']:.2f}–{row['rounds max']:.2f}×"
                  + (f"; {near}" if near else "") + ")")
    words = f": {speed_verdict_words(verdict, margin)}" if row["repeats"] > 1 and verdict in SPEED_VERDICTS else ""
    return f"{row['speed-up']:.2f}× the samples/s of the {row['baseline']}{rounds}{words}"


def plot_speedups(table: pd.DataFrame, ax, title: str, xlabel: str = "training samples / s (rollout + update)"):
    """Bars of `speedups`' medians with min..max whiskers, each labelled with its speed-up
    against the table's baseline (drawn as a dashed line)."""
    medians = table["median"].astype(float)
    labels = list(table.index)
    colors = ["tab:grey" if label == table["baseline"].iloc[0] else "tab:blue" for label in labels]
    ax.barh(labels, medians, color=colors, alpha=0.85)
    ax.errorbar(medians, labels, xerr=[medians - table["min"], table["max"] - medians], fmt="none",
                color="black", capsize=4)
    for y, (x, speed, lo, hi) in enumerate(zip(table["max"], table["speed-up"], table["rounds min"],
                                               table["rounds max"])):
        text = f"{medians.iloc[y]:,.0f}  ({speed:.2f}×" + (f", rounds {lo:.2f}–{hi:.2f}×)" if lo != hi else ")")
        ax.annotate(text, (x, y), xytext=(4, 0), textcoords="offset points", va="center", fontsize="small")
    ax.axvline(float(table.loc[table["baseline"].iloc[0], "median"]), color="tab:grey", linestyle="--",
               linewidth=1)
    ax.set_xlim(0, 1.9 * float(table["max"].max()))
    ax.invert_yaxis()
    ax.set_xlabel(xlabel + f";  ×: against the {table['baseline'].iloc[0]}")
    ax.set_title(title, fontsize="medium")
    ax.grid(axis="x", alpha=0.3)


def phase_table(records: Iterable[dict], layouts: Iterable[str] = ("trainer", "workers", "ddp")) -> pd.DataFrame:
    """Seconds per iteration of every phase (medians over the repeats), the samples of one
    iteration and the samples/s those phases imply, one row per configuration that timed them."""
    wanted = set(layouts)
    rows = {}
    for record in records:
        if record.get("layout") in wanted and isinstance(record.get("phases"), dict):
            phases = {name: float(record["phases"].get(name, 0.0)) for name in PHASES}
            total = sum(phases.values())
            rows[scale_label(record)] = phases | {"total": total, "samples": int(record["samples_per_iteration"]),
                                                  "samples / s (phases)": record["samples_per_iteration"] / total,
                                                  "samples / s (measured)": float(record["samples_per_s"])}
    return pd.DataFrame(rows).T


# --- the cost model -------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class CostModel:
    """Seconds of one training iteration with P processes, each holding the same number of
    sub-envs (so P processes collect P times the samples of one):

    * ``workers``: ``T(P) = rollout + P × update / thread_speedup + overhead × (P − 1)`` — the
      workers' rollouts run side by side, the learner's update of all P blocks does not (the
      serial part);
    * ``ddp``: ``T(P) = rollout + update + overhead × (P − 1)`` — every rank updates its own
      block, and the gradients meet in an all-reduce.

    ``rollout`` and ``update`` are one process's phases (seconds per iteration), ``overhead`` the
    seconds each added process adds (weights out and waiting for the slowest worker, or the
    all-reduce and waiting for the slowest rank, and whatever sharing the machine costs), and
    ``thread_speedup`` how much faster the update of two workers ran on their two learner threads
    than on one (1: one thread). It is measured at P = 2 and assumed the same beyond, as for a pool
    whose update stays on two threads (`DEFAULT_LEARNER_THREADS`); one worker is modelled on one
    thread, as ``bench scale`` measures it.
    Assumes one free core (or device) per process; nothing in it knows about a machine's size."""

    layout: str
    rollout: float
    update: float
    overhead: float
    samples_per_process: int
    thread_speedup: float = 1.0

    @property
    def serial_fraction(self) -> float:
        """The share of one process's iteration that more processes do not split: the update in
        the workers layout, nothing in DDP."""
        return self.update / (self.rollout + self.update) if self.layout == "workers" else 0.0

    @property
    def overhead_fraction(self) -> float:
        """The overhead of one added process as a share of one process's iteration."""
        return self.overhead / (self.rollout + self.update)

    def iteration_seconds(self, processes: int) -> float:
        if processes < 1:
            raise InputError(f"processes must be >= 1, got {processes}")
        extra = self.overhead * (processes - 1)
        if self.layout == "workers":  # one worker: one learner thread, whatever the pool's setting
            threads = self.thread_speedup if processes > 1 else 1.0
            return self.rollout + processes * self.update / threads + extra
        return self.rollout + self.update + extra

    def samples_per_s(self, processes: int) -> float:
        return processes * self.samples_per_process / self.iteration_seconds(processes)

    def projectable(self) -> "CostModel":
        """The model a projection uses: a negative fitted overhead set to 0. Two points fix the
        overhead, so the noise of the measurement can make it negative, and an added process
        cannot make an iteration shorter; extrapolating a negative overhead would grow with P."""
        return dataclasses.replace(self, overhead=max(0.0, self.overhead))


def clamped_terms(model: CostModel) -> dict[str, float]:
    """The terms of ``model`` that a projection (`CostModel.projectable`, so `project` and
    `plot_projection`) does not use as fitted, each with its fitted value in seconds per iteration:
    ``{"overhead": -0.0055}`` when the fitted overhead is negative (the projection uses 0), ``{}``
    when every term is used as fitted."""
    projected = model.projectable()
    return {field.name: float(getattr(model, field.name)) for field in dataclasses.fields(CostModel)
            if getattr(model, field.name) != getattr(projected, field.name)}


def clamp_sentence(model: CostModel, unit: str = "process") -> str:
    """`clamped_terms` in one sentence for the page, ``""`` when nothing is clamped: ``"The fit
    gives −5.5 ms per added worker, within noise of 0; the projection uses 0."`` (``unit``: the
    process's name, ``"worker"`` or ``"rank"``). "Within noise" is the caller's claim to check
    against its record's noise floor."""
    clamped = clamped_terms(model)
    if "overhead" not in clamped:
        return ""
    return (f"The fit gives {1000 * clamped['overhead']:.1f} ms per added {unit}".replace("-", "\u2212")
            + ", within noise of 0; the projection uses 0.")


def _phase_seconds(record: dict) -> tuple[float, float, float]:
    """(rollout incl. transfer, update, all-reduce + waiting) of a record's phases."""
    phases = record["phases"]
    return (phases["rollout"] + phases.get("transfer", 0.0), phases["update"],
            phases.get("all_reduce", 0.0) + phases.get("waiting", 0.0))


def _one(records: list[dict], layout: str, processes: int, threads: int | None = None) -> dict:
    found = [r for r in records if r["layout"] == layout and r["processes"] == processes and "phases" in r
             and (threads is None or r.get("learner_threads") == threads)]
    if not found:
        raise InputError(f"the records hold no {layout} layout with {processes} process(es)"
                         + (f" and learner_threads={threads}" if threads else "") + " and phases: run "
                         "`python -m finrl_tutorial bench scale --layouts trainer workers ddp --processes 1 2`")
    return found[-1]


def fit_cost_model(records: Iterable[dict], layout: str, learner_threads: int = 1) -> CostModel:
    """The `CostModel` of ``layout`` (``workers`` or ``ddp``) from the phases of its 1- and
    2-process records: rollout and update from one process, the overhead from what two processes'
    phases add beyond the model's other terms, and (workers) the update's speed-up on
    ``learner_threads`` threads, from the two 2-worker records. Two points fix the three numbers,
    so the model reproduces both by construction: see `model_check`."""
    if layout not in ("workers", "ddp"):
        raise InputError(f"the cost model covers the workers and ddp layouts, got {layout!r}")
    records = list(records)
    one = _one(records, layout, 1)
    rollout, update, communication = _phase_seconds(one)
    update += communication  # one rank's all-reduce: part of its own iteration
    samples = int(one["samples_per_iteration"])
    thread_speedup = 1.0
    if layout == "workers":
        two = _one(records, layout, 2, threads=1)
        if learner_threads != 1:
            threaded = _one(records, layout, 2, threads=learner_threads)
            thread_speedup = _phase_seconds(two)[1] / _phase_seconds(threaded)[1]
            two = threaded
        model = CostModel(layout, rollout, update, 0.0, samples, thread_speedup)
    else:
        two = _one(records, layout, 2)
        model = CostModel(layout, rollout, update, 0.0, samples)
    measured_two = sum(_phase_seconds(two))
    return dataclasses.replace(model, overhead=measured_two - model.iteration_seconds(2))


def model_check(records: Iterable[dict], model: CostModel) -> pd.DataFrame:
    """The model against every point the records hold for its layout (and thread count): the
    samples/s it predicts, the samples/s measured from the training runs' wall clock, and the
    relative error. The phases fix the model, the wall clock does not: the error is the time an
    iteration spends outside the timed phases (logging, the pool's bookkeeping) plus noise."""
    rows = {}
    for record in records:
        if record.get("layout") != model.layout or "phases" not in record:
            continue
        if model.layout == "workers" and record["processes"] > 1:
            threads_of_model = 1 if model.thread_speedup == 1.0 else record["processes"]
            if record.get("learner_threads") != threads_of_model:
                continue
        processes = int(record["processes"])
        predicted = model.samples_per_s(processes)
        rows[scale_label(record)] = {"processes": float(processes), "model samples / s": predicted,
                                     "measured samples / s": float(record["samples_per_s"]),
                                     "error": predicted / float(record["samples_per_s"]) - 1}
    return pd.DataFrame(rows).T


@dataclasses.dataclass(frozen=True)
class TrainerModel:
    """The fastest in-process trainer at any size, for like-with-like projections: one process
    with ``N`` samples per iteration takes ``T(N) = fixed + N × per_sample`` seconds (a straight
    line through the one-thread trainer's phases at the two env counts the record measured), and
    its rate is anchored to the fastest trainer's measured median at ``anchor_samples``:
    ``rate(N) = anchor_rate × [N / T(N)] / [anchor_samples / T(anchor_samples)]``. So the rate
    grows with the envs as the one-thread trainer's did, and it assumes that the gain of the
    anchor's threads stays the same at every size and that the update's seconds grow with the
    samples, whatever the minibatch size. Past the largest measured size it is an extrapolation."""

    fixed: float
    per_sample: float
    anchor_samples: int
    anchor_rate: float
    label: str
    measured_samples: tuple[int, ...]

    def samples_per_s(self, samples: float) -> float:
        def shape(n: float) -> float:
            return n / (self.fixed + self.per_sample * n)
        return self.anchor_rate * shape(samples) / shape(self.anchor_samples)


def fit_trainer_model(records: Iterable[dict], key: str = "samples_per_s") -> TrainerModel:
    """The `TrainerModel` of a record: the line through the one-thread in-process trainer's phases
    (rollout + update seconds per iteration) at its smallest and largest measured size, anchored to
    the fastest in-process trainer (`fastest_single_process`)."""
    records = list(records)
    anchor = fastest_single_process(records, key)
    ones = sorted((r for r in records if r.get("layout") == BASELINE_LAYOUT and "phases" in r
                   and r.get("learner_threads", 1) == 1), key=lambda r: r["samples_per_iteration"])
    if len({r["samples_per_iteration"] for r in ones}) < 2:
        raise InputError("the like-with-like baseline needs the one-thread in-process trainer at two sizes: run "
                         "`python -m finrl_tutorial bench scale --layouts trainer --processes 1 2`")
    (n1, t1), (n2, t2) = [(int(r["samples_per_iteration"]), sum(_phase_seconds(r))) for r in (ones[0], ones[-1])]
    per_sample = (t2 - t1) / (n2 - n1)
    return TrainerModel(t1 - per_sample * n1, per_sample, int(anchor["samples_per_iteration"]), float(anchor[key]),
                        scale_label(anchor), tuple(sorted({int(r["samples_per_iteration"]) for r in ones})))


def round_records(records: Iterable[dict], index: int) -> list[dict]:
    """The records as round ``index`` of their interleaved rounds measured them: each record that kept
    its rounds (``runs``, with phases) takes that round's phases and samples/s; the others stay."""
    out = []
    for record in records:
        runs = record.get("runs") or []
        if len(runs) > index and "phases" in runs[index]:
            record = record | {"phases": runs[index]["phases"], "samples_per_s": runs[index]["samples_per_s"]}
        out.append(record)
    return out


def projection_by_round(records: Iterable[dict], layout: str, learner_threads: int = 1,
                        processes: Iterable[int] = (4, 8)) -> pd.DataFrame:
    """The like-with-like projection (`project` against `fit_trainer_model`) refitted on each
    interleaved round alone (`round_records`), one row per round: how far the projection moves when
    the phases it is fitted to come from one round instead of the rounds' medians. A spread, not a
    confidence interval: three rounds make three fits."""
    records, processes = list(records), tuple(processes)
    counts = [len(r["runs"]) for r in records if r.get("layout") in (layout, BASELINE_LAYOUT) and "phases" in r
              and r.get("runs")]
    if not counts:
        raise InputError(f"the records keep no rounds of the {layout} layout and the in-process trainer")
    rows = {}
    for index in range(min(counts)):
        one_round = round_records(records, index)
        model = fit_cost_model(one_round, layout, learner_threads)
        projected = project(model, processes, baseline=fit_trainer_model(one_round))
        rows[index + 1] = {p: float(projected.loc[p, "speed-up"]) for p in processes}
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("round")


def _baseline_rate(baseline, samples: float) -> float:
    return baseline.samples_per_s(samples) if isinstance(baseline, TrainerModel) else float(baseline)


def project(model: CostModel, processes: Iterable[int] = (1, 2, 4, 8, 16),
            baseline: "float | TrainerModel | None" = None) -> pd.DataFrame:
    """The model's samples/s at each process count (a projection beyond the measured points; a
    negative fitted overhead counts as 0, `CostModel.projectable`; `clamped_terms` names what that
    changed), and, with ``baseline``, the
    speed-up against it: a fixed rate (samples/s), or a `TrainerModel`, read at the samples per
    iteration of the ``P`` processes (like with like: one process holding all their envs), its
    rate in ``baseline samples / s``."""
    rows = {}
    model = model.projectable()
    for p in processes:
        rate = model.samples_per_s(p)
        row = {"samples / s": rate}
        if baseline:
            base = _baseline_rate(baseline, p * model.samples_per_process)
            row |= ({"samples / iteration": float(p * model.samples_per_process), "baseline samples / s": base}
                    if isinstance(baseline, TrainerModel) else {}) | {"speed-up": rate / base}
        rows[p] = row
    return pd.DataFrame(rows).T.rename_axis("processes")


def plot_projection(models: dict[str, CostModel], baseline: "float | TrainerModel", measured: dict[str, dict[int, tuple]], ax,
                    title: str, max_processes: int = 16, measured_up_to: int = 2, unit: str = "processes",
                    hypothetical: tuple[str, ...] = ()):
    """Speed-up against ``baseline`` (samples/s of the fastest single process, or a `TrainerModel`
    read at the same samples per iteration as the P processes: like with like) of each model from 1
    to ``max_processes``: solid where this machine measured (up to ``measured_up_to``), dotted
    beyond, in a shaded band marked *projection*; a model named in ``hypothetical`` (a what-if, not
    fitted to this machine) is dotted everywhere and read against its own single process.
    ``measured`` adds each label's measured points ``{P: (median, low, high)}`` (speed-ups) with
    whiskers, and the line of perfect scaling. Each curve is the model's `CostModel.projectable`
    form: a negative fitted overhead is drawn as 0 (`clamped_terms` says which models that
    changes). The y axis is linear from 0 to at least 2× (a log axis squashed points between 0.9 and
    1.15 into a few pixels), so the perfect-scaling line leaves the top; each curve's last value is
    written beside it. The legend sits below the axes. A two-point fit is least strained close to its points: chapters 4 and 5 draw it to 8 (``max_processes=8``)."""
    counts = list(range(1, max_processes + 1))
    ax.axvspan(measured_up_to + 0.5, max_processes + 0.5, color="tab:orange", alpha=0.08)
    ax.text(measured_up_to + 0.7, 0.97, "projection (cost model)", transform=ax.get_xaxis_transform(),
            va="top", fontsize="small", color="tab:orange")
    ax.plot(counts, counts, color="grey", linestyle=":", linewidth=1, label="perfect: P × the baseline")
    heights = [1.0]  # every value drawn, for the axis's top
    annotated = set()  # (processes, median) of the measured points already labelled
    for k, (label, model) in enumerate(models.items()):
        color = f"C{k}"
        if label in hypothetical:  # its own single process is its baseline: it runs on other hardware
            own = model.projectable().samples_per_s(1)
            speed = [model.projectable().samples_per_s(p) / own for p in counts]
            ax.plot(counts, speed, ":", color=color,
                    linewidth=2, label=f"{label}: what-if model, against its own 1 {unit[:-1]}")
        else:
            speed = [model.projectable().samples_per_s(p) / _baseline_rate(baseline, p * model.samples_per_process)
                     for p in counts]
            inside = [p for p in counts if p <= measured_up_to]
            ax.plot(inside, speed[:len(inside)], "-", color=color, label=f"{label}: model (fitted to the timed phases)")
            ax.plot(counts[len(inside) - 1:], speed[len(inside) - 1:], ":", color=color, linewidth=2)
            for p, (median, low, high) in measured.get(label, {}).items():
                ax.errorbar([p], [median], yerr=[[median - low], [high - median]], fmt="o", color=color, capsize=4,
                            label=f"{label}: measured (whole runs: median, range of the rounds)" if p == min(measured[label]) else None)
                if (p, median) in annotated:  # one measurement shared by two layouts (one process): one label
                    continue
                annotated.add((p, median))
                # two curves' labels at one count: right of the points, the higher point's raised, the lower's lowered
                above = median >= max(values[p][0] for values in measured.values() if p in values)
                ax.annotate(f"{median:.2f}×", (p, median), xytext=(9, 10 if above else -10),
                            textcoords="offset points", ha="left", va="bottom" if above else "top",
                            fontsize="small", color=color)
                heights.append(high)
        heights += speed
        ax.annotate(f"{speed[-1]:.2f}×", (counts[-1], speed[-1]), xytext=(4, 0), textcoords="offset points",
                    va="center", fontsize="small", color=color)
    # what 1.0 is: a measured rate, or a model of the trainer read at each point's envs (not a measured point)
    only_what_if = bool(models) and all(label in hypothetical for label in models)  # a panel of what-ifs alone
    ax.axhline(1.0, color="black", linewidth=0.8, label=(
        f"1.0: its own single {unit[:-1]}" if only_what_if
        else "1.0: the trainer model at as many envs (fitted to measured sizes)" if isinstance(baseline, TrainerModel)
        else "1.0: the fastest single process, measured"))
    ax.set_xscale("log", base=2)
    ax.set_xlim(0.85, max_processes * 1.35)  # room for the last values' labels
    ax.set_ylim(0, max(2.0, 1.15 * max(heights)))  # linear, from 0: a ratio's size reads as its height
    ax.set_xticks([p for p in (1, 2, 4, 8, 16, 32) if p <= max_processes], [str(p) for p in (1, 2, 4, 8, 16, 32)
                                                                              if p <= max_processes])
    ax.set_xlabel(f"{unit} (each with its own core or device, as the model assumes)")
    drawn_what_if = any(label in hypothetical for label in models)
    ax.set_ylabel(f"speed-up over its own\nsingle {unit[:-1]}" if only_what_if else "speed-up over the fastest\nsingle process" + (
        " with as many envs" if isinstance(baseline, TrainerModel) else "") + (
        "\n(a what-if: over its own 1 " + unit[:-1] + ")" if drawn_what_if else ""))
    ax.set_title("\n".join(textwrap.wrap(title, 75, break_on_hyphens=False)), fontsize="medium")  # a long title on two lines, not cut
    ax.grid(alpha=0.3, which="both")
    # below the axes, so that it hides neither the curves nor the band's label
    ax.legend(fontsize="small", loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=1, frameon=False)  # one column: two would be wider than the axes and squeeze them


def measured_points(table: pd.DataFrame, layout: str, threads: int | None = None,
                    baseline: TrainerModel | None = None, samples_per_process: int | None = None) -> dict[int, tuple]:
    """``{processes: (speed-up, rounds min, rounds max)}`` of one layout's rows of `speedups`
    (for `plot_projection`); ``threads`` keeps the workers rows of that learner thread count
    (and the one-worker row). With a `TrainerModel` ``baseline`` (and the ``samples_per_process``
    of one process), every ratio is taken against it at the row's samples per iteration instead:
    the table's ratio × the table baseline's rate ÷ the model's rate there (1 where the model reads
    its anchor, the table's baseline)."""
    points = {}
    for label, row in table[table["layout"] == layout].iterrows():
        if threads is not None and row["processes"] > 1 and f"on {threads} thread" not in label:
            continue
        factor = 1.0
        if baseline is not None:
            base_rate = float(table.loc[row["baseline"], "median"])
            factor = base_rate / baseline.samples_per_s(int(row["processes"]) * samples_per_process)
        points[int(row["processes"])] = tuple(factor * float(row[k]) for k in ("speed-up", "rounds min", "rounds max"))
    return points


def learner_threads_reading(records: Iterable[dict]) -> dict:
    """The two 2-worker records, the update on 1 thread and on 2: each one's median samples/s,
    the round-by-round ratios (2 threads ÷ 1) and the load averages, and which was faster."""
    records = list(records)
    one, two = _one(records, "workers", 2, threads=1), _one(records, "workers", 2, threads=2)
    ratios = [b / a for a, b in zip(_runs(one, "samples_per_s"), _runs(two, "samples_per_s"))]
    return {"1 thread": one["samples_per_s"], "2 threads": two["samples_per_s"],
            "ratio": two["samples_per_s"] / one["samples_per_s"], "rounds": ratios,
            "update seconds": {1: one["phases"]["update"], 2: two["phases"]["update"]},
            "loads": _loads(one) + _loads(two), "faster": 1 if one["samples_per_s"] >= two["samples_per_s"] else 2,
            "median of rounds": statistics.median(ratios)}


# --- many verdicts from few rounds: Holm's correction ----------------------------------------------

def round_ratios(records: Iterable[dict], label: str, key: str = "samples_per_s",
                 baseline: str | None = None) -> list[float]:
    """The round-by-round ratios of the configuration ``label`` (a `scale_label`) to ``baseline``
    (default the fastest in-process trainer, `fastest_single_process`): run *i* of one ÷ run *i*
    of the other, the ratios `speedups` reads its ``rounds min`` / ``rounds max`` and verdict from."""
    records = _records(records, key)
    by_label = {scale_label(r): r for r in records}
    base_label = baseline or scale_label(fastest_single_process(records, key))
    for name in (label, base_label):
        if name not in by_label:
            raise InputError(f"no configuration labelled {name!r} with {key} in the records; "
                             f"there are: {', '.join(by_label)}")
    values, base = _runs(by_label[label], key), _runs(by_label[base_label], key)
    if len(values) != len(base) or "runs" not in by_label[label] or "runs" not in by_label[base_label]:
        raise InputError(f"{label!r} and {base_label!r} hold no paired rounds")
    return [v / b for v, b in zip(values, base)]


def chance_every_round(rounds: int) -> float:
    """Probability that ``rounds`` ratios all lie above 1, or all below, when the two configurations
    are equally fast and each round falls on either side with probability 1/2, independently of the
    others: 2 of the 2**rounds equally likely patterns. For 3 rounds, 2 / 8 = 25 % per comparison, so
    an "every round" verdict from 3 rounds is exploratory on its own."""
    if rounds < 1:
        raise InputError(f"rounds must be >= 1, got {rounds}")
    return 2 / 2 ** rounds


def holm_speed_tests(comparisons, level: float = 0.05) -> pd.DataFrame:
    """Speed verdicts of a family of comparisons, corrected for their number. ``comparisons`` maps a
    name to its round-by-round ratios (`round_ratios`; each compares one configuration with its
    baseline in the same rounds). Each row: the rounds, the geometric mean of the ratios, the verdict
    of the rounds alone (`speed_verdict`), the one-sample t-test's p-value on the log ratios (is the
    mean log ratio 0, i.e. equally fast?), its Holm adjustment over **all** the rows
    (`finrl_tutorial.book.teaching.holm`; glossary: "Non-overlap rule and Holm correction"), and
    ``Holm verdict``: "faster" or "slower" only where the adjusted p-value is below ``level``, else
    "inconclusive" (no tie: a large p-value is no evidence of equality). A comparison with fewer than
    two rounds, or with identical rounds, gets p = 1."""
    import numpy as np
    from scipy import stats  # here, not at the top: `import finrl_tutorial` stays quick for the CLI

    from .teaching import holm

    rows = {}
    for name, ratios in dict(comparisons).items():
        logs = np.log(np.asarray([float(r) for r in ratios], dtype=float))
        p = float(stats.ttest_1samp(logs, 0.0).pvalue) if len(logs) > 1 and logs.std() > 0 else 1.0
        rows[name] = {"rounds": len(logs), "geometric mean": float(np.exp(logs.mean())),
                      "rounds verdict": speed_verdict(ratios), "p (t)": p}
    table = pd.DataFrame(rows).T.infer_objects()
    table["p (Holm)"] = holm(table["p (t)"].tolist()).to_numpy()
    table["Holm verdict"] = np.where(table["p (Holm)"] < level,
                                     np.where(table["geometric mean"] > 1, "faster", "slower"), "inconclusive")
    return table


def family_view(family: pd.DataFrame):
    """A `holm_speed_tests` table as the chapters show it (a Styler): ratios as ``1.29×``, p-values at
    3 decimals."""
    return family.style.format({"geometric mean": "{:.2f}×", "p (t)": p_value, "p (Holm)": p_value})


# --- chapter 6: the cost of one call of a batched env ------------------------------------------------

def fit_per_call(num_envs: Iterable[int], env_steps_per_s: Iterable[float]) -> dict[str, float]:
    """Least-squares fit of the seconds of one step call, ``t(n) = call + n × account``, to a sweep
    of a batched env (``n`` accounts, measured env-steps/s): the fixed cost of a call, the cost of
    one more account, and the size ``call / account`` at which the two are equal (below it the
    fixed cost dominates; throughput grows almost in proportion to ``n``), and the standard error of
    the per-account cost (from the residuals; NaN with two sizes): where ``account`` lies within two
    of them of 0, the sweep cannot tell the per-account cost from 0, and ``call / account`` is no estimate."""
    sizes = [float(n) for n in num_envs]
    seconds = [n / rate for n, rate in zip(sizes, env_steps_per_s)]
    if len(sizes) < 2 or len(set(sizes)) < 2:
        raise InputError("fit_per_call needs at least two different sizes")
    mean_n, mean_t = statistics.fmean(sizes), statistics.fmean(seconds)
    slope = (sum((n - mean_n) * (t - mean_t) for n, t in zip(sizes, seconds))
             / sum((n - mean_n) ** 2 for n in sizes))
    call = mean_t - slope * mean_n
    spread = sum((n - mean_n) ** 2 for n in sizes)
    residual = sum((t - call - slope * n) ** 2 for n, t in zip(sizes, seconds))
    slope_se = math.sqrt(residual / (len(sizes) - 2) / spread) if len(sizes) > 2 else math.nan
    return {"call_seconds": call, "account_seconds": slope, "account_seconds_se": slope_se,
            "break_even_accounts": call / slope if slope > 0 else math.inf}


def same_work_seconds(records: Iterable[dict], layout: str) -> dict:
    """The rollout phase of the same work (one process's sub-envs, one iteration) in the in-process
    trainer and in one process of ``layout`` (``workers`` or ``ddp``), from the same rounds, and
    their ratio: on a machine with more runnable processes than cores, the same work can take
    different times in different processes (each gets a share of the cores), which is no parallel
    speed-up."""
    records = list(records)
    one = _one(records, layout, 1)
    trainers = [r for r in records if r["layout"] == BASELINE_LAYOUT and "phases" in r
                and r["num_envs"] == one["envs_per_process"]]
    if not trainers:
        raise InputError(f"the records hold no in-process trainer with {one['envs_per_process']} envs and phases")
    trainer = trainers[-1]
    return {"trainer": trainer["phases"]["rollout"], layout: one["phases"]["rollout"],
            "ratio": trainer["phases"]["rollout"] / one["phases"]["rollout"], "envs": int(one["envs_per_process"])}


PEER_NAMES = {"finrl_env": "FinRL's StockTradingEnv", "elegantrl_env": "ElegantRL's vectorised env",
              "our_env": "our env", "sb3_ppo_finrl_env": "SB3's PPO on FinRL's env",
              "sb3_ppo_our_env": "SB3's PPO on our single env", "our_ppo": "our PPO"}
"""How the chapters name each ``bench peers`` measurement."""


def _peer_rate(record: dict) -> float:
    value = record.get("env_steps_per_s")
    return float(value if value is not None else record["samples_per_s"])


def _peer_name(record: dict) -> str:
    name = PEER_NAMES.get(record["measurement"], record["measurement"])
    if record["measurement"] == "elegantrl_env" and record.get("env"):  # the class the record measured, by name
        return f"ElegantRL's {record['env'].rsplit('.', 1)[-1]}"
    if record["measurement"] == "our_env":
        return "our single env" if record["num_envs"] == 1 else "our batched env"
    if record.get("overrides"):  # our PPO with `bench peers --set`: name what it changed
        changed = ", ".join(f"{key}={','.join(map(str, value)) if isinstance(value, list) else value}"
                            for key, value in record["overrides"].items())
        return f"{name}, {changed}"
    return name


def peer_comparisons(peer_records: Iterable[dict], margin: float | None = SPEED_TIE_MARGIN) -> pd.DataFrame:
    """A ``bench peers`` record read like with like, one row per ratio, each named ``"X ÷ baseline"``:

    * ``same accounts``: two libraries' envs at the same number of accounts (our single env against
      FinRL's one-account env; our batched env against ElegantRL's vectorised env at each count both
      ran);
    * ``batching, ours`` / ``batching, ElegantRL``: what more accounts per call add within one
      library (against its own smallest count);
    * ``same learner, one account``: SB3's PPO with the same settings on our env and on FinRL's;
    * ``batching, our PPO``: our loop at more accounts against its own smallest count.

    No ratio sets different numbers of accounts of different libraries against each other. Columns:
    what is compared, the accounts of each side, the ratio of the medians, the range of the
    round-by-round ratios (``bench peers`` times every measurement once per round, so run *i* of
    every record comes from round *i*; the ratios themselves in ``rounds``) and the verdict (`speed_verdict` with ``margin``:
    ``faster``/``slower`` only if every round says so, ``tie`` only if every round lies within
    ``1 ± margin``, else ``inconclusive``), recomputed from the stored runs."""
    records = [r for r in peer_records if "runs" in r and "label" in r]
    by_label = {r["label"]: r for r in records}

    def of(measurement: str) -> dict[int, dict]:
        return {int(r.get("num_envs") or 1): r for r in records if r["measurement"] == measurement}

    ours, finrl, elegant = of("our_env"), of("finrl_env"), of("elegantrl_env")
    ppo = of("our_ppo")
    rows: dict[str, dict] = {}

    def add(kind: str, numerator: dict, denominator: dict) -> None:
        if len(numerator["runs"]) != len(denominator["runs"]):
            raise InputError(f"{numerator['label']} and {denominator['label']} have different numbers of rounds")
        rounds = [a / b for a, b in zip(numerator["runs"], denominator["runs"])]
        accounts = [int(r.get("num_envs") or 1) for r in (numerator, denominator)]
        label = (f"{_peer_name(numerator)} ({accounts[0]:,}) ÷ {_peer_name(denominator)} ({accounts[1]:,})")
        rows[label] = {"compares": kind, "accounts": accounts[0] if accounts[0] == accounts[1] else
                       f"{accounts[0]:,} vs {accounts[1]:,}", "numerator": numerator["label"],
                       "baseline": denominator["label"], "ratio of medians": _peer_rate(numerator) / _peer_rate(denominator),
                       "round by round: min": min(rounds), "max": max(rounds), "verdict": speed_verdict(rounds, margin),
                       "rounds": rounds}

    if 1 in ours and 1 in finrl:
        add("same accounts", ours[1], finrl[1])
    for n in sorted(set(ours) & set(elegant)):
        add("same accounts", ours[n], elegant[n])
    for library, counts in (("ours", ours), ("ElegantRL", elegant)):
        smallest = min(counts) if counts else None
        for n in sorted(counts):
            if n != smallest:
                add(f"batching, {library}", counts[n], counts[smallest])
    if "sb3_ppo_our_env" in by_label and "sb3_ppo_finrl_env" in by_label:
        add("same learner, one account", by_label["sb3_ppo_our_env"], by_label["sb3_ppo_finrl_env"])
    for n in sorted(ppo):
        if n != min(ppo):
            add("batching, our PPO", ppo[n], ppo[min(ppo)])
    if not rows:
        raise InputError("the peers record holds no two measurements that can be compared like with like")
    return pd.DataFrame.from_dict(rows, orient="index")


def peer_ppo_layouts(peer_records: Iterable[dict]) -> pd.DataFrame:
    """The PPO loops of a ``bench peers`` record with the layout each ran: accounts, samples per
    iteration, passes over each sample, minibatch size, gradient steps per 1,000 samples and the
    median samples/s. SB3 steps one account; ours many: no row here is a like-with-like ratio of
    the other (the record holds no SB3 run with as many accounts as ours)."""
    rows = {}
    for r in peer_records:
        if "samples_per_s" not in r or "runs" not in r:
            continue
        if "n_steps" in r:  # stable-baselines3: one env, n_steps per iteration
            accounts, samples, passes, batch = 1, int(r["n_steps"]), int(r["n_epochs"]), int(r["batch_size"])
        else:
            accounts = int(r["num_envs"])
            samples, passes, batch = accounts * int(r["horizon_len"]), int(r["repeat_times"]), int(r["batch_size"])
        steps = passes * math.ceil(samples / min(batch, samples))
        rows[f"{_peer_name(r)} ({accounts:,})"] = {
            "accounts": accounts, "samples / iteration": samples, "passes": passes, "minibatch": batch,
            "gradient steps / 1,000 samples": 1000 * steps / samples, "samples / s (median)": _peer_rate(r)}
    if not rows:
        raise InputError("the peers record holds no PPO measurement")
    return pd.DataFrame.from_dict(rows, orient="index")
