"""Chapter 5's readings (multiple learners: DataParallel and DDP) of the ``bench scale`` records.

The chapter shows the calls a reader reuses (`phase_table`, `speedups`, `fit_cost_model` of
`finrl_tutorial.book.scale`) and states what the records say in its own Markdown; the functions
here turn the records into the chapter's tables, figures and folded method blocks:

* `ddp_labels`, `optimiser_steps`, `phase_seconds`, `plot_phases`, `measurement_note` — section
  5.5: where a DDP iteration's time goes, the optimiser steps behind each configuration, and how the
  record was measured (a collapsed block);
* `like_with_like`, `control_note` — 5.5's control: two ranks against the in-process trainer that takes the same
  optimiser steps;
* `check_table`, `added_all_reduce`, `faster_device`, `plot_ddp_projection` — section 5.6: the cost model for ranks,
  its projection and the faster-device what-if;
* `recorded_rows` — the chapter's measured box;
* `plot_rank0_validation`, `plot_entropy_change` — section 5.3: rank 0's log.

Every number is computed from the records passed in; nothing here measures.
"""
from __future__ import annotations

import dataclasses
from typing import Iterable

import pandas as pd

from ..agents import make_config
from ..bench.scale import PHASES, scale_label
from ..errors import InputError
from .folded import MethodNote, how_measured
from .teaching import reader_command
from .workers import load_range, run_loads
from .scale import (CostModel, TrainerModel, chance_every_round, family_view, holm_speed_tests, measured_points,
                    phase_table, plot_projection, round_ratios, same_work_seconds, speedup_text, speedups)

LAYOUTS = ("trainer", "ddp")
"""The layouts chapter 5 reads from a ``bench scale`` record: the in-process trainer and DDP."""

FASTER_DEVICE = 10
"""The what-if of section 5.6: each rank's rollout and update this many times shorter, the overhead
of an added rank unchanged (a chosen factor, not a measurement)."""

PHASE_COLORS = {"rollout": "C0", "transfer": "C4", "update": "C1", "all_reduce": "C2", "waiting": "C3"}


def _phrase(baseline: str) -> str:
    """``"the fastest in-process trainer (128 envs, 2 threads)"`` for a trainer baseline label."""
    prefix = "in-process trainer"
    if baseline.startswith(prefix):
        return "the fastest " + baseline
    return f"the {baseline}"


def _ranks(table: pd.DataFrame, processes: int) -> str:
    found = [label for label, row in table.iterrows() if row["layout"] == "ddp" and row["processes"] == processes]
    if not found:
        raise InputError(f"the records hold no ddp layout with {processes} rank(s): run "
                         "`python -m finrl_tutorial bench scale --layouts trainer ddp --processes 1 2`")
    return found[0]


def ddp_labels(table: pd.DataFrame) -> tuple[str, str, str]:
    """Reads a `speedups` table; returns the labels ``(baseline, one rank, two ranks)``: its
    baseline (the fastest in-process trainer) and its DDP rows of one and of two ranks."""
    return str(table["baseline"].iloc[0]), _ranks(table, 1), _ranks(table, 2)


def _record(records: Iterable[dict], label: str) -> dict:
    found = [r for r in records if r.get("layout") in LAYOUTS and "phases" in r and scale_label(r) == label]
    if not found:
        raise InputError(f"no trainer or ddp record with phases is labelled {label!r}")
    return found[-1]


def optimiser_steps(records: Iterable[dict], label: str) -> tuple[int, int]:
    """Reads the ``bench scale`` records; returns, for the configuration ``label`` (a `scale_label`),
    its optimiser steps per iteration and the samples behind each step (all ranks together: DDP's
    all-reduce averages every rank's minibatch into one step). ``bench scale`` trains every layout
    with `PPOConfig`'s default settings, so each process's rollout is ``envs_per_process`` × the
    default ``horizon_len``."""
    record = _record(records, label)
    ranks = int(record["processes"]) if record["layout"] == "ddp" else 1
    sizes = {"batch_size": int(record["batch_size"])} if record.get("batch_size") else {}  # --trainer-batch-sizes
    per_rank = make_config("ppo", num_envs=int(record["envs_per_process"]), **sizes)
    return per_rank.repeat_times * per_rank.num_minibatches, min(per_rank.batch_size, per_rank.rollout_size) * ranks


def phase_seconds(phases: pd.DataFrame) -> pd.DataFrame:
    """Reads a `phase_table`; returns the small table the chapter shows: seconds per iteration of
    each phase rank 0 timed (a phase no configuration spent time in is left out), their total, and
    the samples of one iteration (all processes together)."""
    shown = [phase for phase in PHASES if (phases[phase] > 0).any()]
    table = phases[shown + ["total"]].astype(float).round(3)
    table.columns = [phase.replace("_", "-") for phase in shown] + ["total"]
    table["samples / iteration"] = phases["samples"].astype(int)
    return table


def plot_phases(phases: pd.DataFrame, ax) -> None:
    """Reads a `phase_table`; draws on ``ax`` one stacked bar per configuration: the seconds of an
    iteration in rollout, update, all-reduce and waiting (rank 0, median of the rounds)."""
    left = pd.Series(0.0, index=phases.index)
    for phase in PHASES:
        if (phases[phase] > 0).any():
            ax.barh(phases.index, phases[phase], left=left, color=PHASE_COLORS[phase], label=phase.replace("_", "-"))
            left += phases[phase]
    ax.invert_yaxis()
    ax.set(xlabel="seconds per iteration (rank 0, median of the rounds)", title="where an iteration goes")
    ax.set_xlim(0, 1.45 * float(left.max()))  # room for the legend beside the bars
    ax.legend(fontsize="small", loc="upper right")
    ax.grid(axis="x", alpha=0.3)


def _dropdown(title: str, bullets: list[str]) -> MethodNote:
    """A folded method note (`folded.how_measured`) titled ``title`` holding the Markdown ``bullets``."""
    return how_measured("\n".join(bullets), title=title)


def measurement_note(records: Iterable[dict], name: str) -> object:
    """Reads the ``bench scale`` record ``name`` (its records passed in); returns (as Markdown) a
    collapsed *How this was measured* block: the record and machine, the interleaved rounds and the
    verdict rule, how rank 0 times the all-reduce and the waiting, the load averages of the
    trainer's and DDP's runs (`load_range`), the same work timed in two processes, and the
    round-by-round ratios of one and two ranks (two ranks' marked as not like with like)."""
    records = list(records)
    table = speedups(records, layouts=list(LAYOUTS))
    baseline, one, two = ddp_labels(table)
    first, cores = records[0], int(records[0]["cpu_count"])
    loads = run_loads(records, LAYOUTS)
    low, high = min(loads), max(loads)
    bullets = [f"* The record is `{name}`, measured on {first['date'][:10]} on {cores} CPU cores "
               f"(torch {first['torch']}). Every layout trains with `PPOConfig`'s default settings of that day "
               f"(the plain learner, glossary). Command: "
               f"`{reader_command(first['command'])}`.",
               f"* `bench scale` runs every configuration {int(table['repeats'].max())} times in interleaved rounds: "
               "run *i* of every configuration comes from round *i*, so each speed-up is also taken round by round. "
               "*Faster* or *slower* means every round says so. With "
               f"{int(table['repeats'].max())} rounds, two equally fast configurations would still land on one side "
               f"of 1 in every round {chance_every_round(int(table['repeats'].max())):.0%} of the time, so these "
               "verdicts are exploratory; 5.5 tests them together with Holm's correction "
               "(`ft.book.scale.holm_speed_tests`).",
               "* Rank 0 times each phase on its own clock: a communication hook times every gradient all-reduce, "
               "and a barrier just before it times how long rank 0 waits for the slower rank.",
               f"* The 1-minute load average was {load_range(records, LAYOUTS)}, on {cores} cores (the benchmark's "
               "own processes included)" + (": neither rank had a core to itself, so these are a busy machine's figures."
                              if low > cores else ": below the number of cores, a quiet machine."
                              if high < cores else ".")]
    same = same_work_seconds(records, "ddp")
    bullets.append(f"* The same work in two processes: one iteration's rollout of {same['envs']} envs took "
                   f"{same['trainer']:.2f} s in the in-process trainer and {same['ddp']:.2f} s in one DDP rank, "
                   "in the same rounds."
                   + (" The work is identical, so the difference is not parallelism (chapter 4.4 reads it as each "
                      "process's share of the busy cores): read every ratio with that in mind."
                      if not 0.83 < same["ratio"] < 1.2 else ""))
    steps_differ = optimiser_steps(records, two) != optimiser_steps(records, baseline)
    bullets += [("* Two ranks (other optimiser steps, so not like with like: see above)" if steps_differ
                 else "* Two ranks") + f" ran {speedup_text(table, two)}.",
                f"* One rank ran {speedup_text(table, one)}."]
    return _dropdown("How this was measured", bullets)


def speed_family(records: Iterable[dict], loaded_records: Iterable[dict]) -> pd.DataFrame:
    """Every speed verdict chapter 5 draws, tested together (`holm_speed_tests`): one and two DDP ranks
    against the fastest in-process trainer of the record ``records`` (5.5), and two ranks against the
    fastest in-process trainer of the loaded record ``loaded_records`` (5.7). Each row names its
    baseline."""
    records, loaded_records = list(records), list(loaded_records)
    baseline, one, two = ddp_labels(speedups(records, layouts=list(LAYOUTS)))
    loaded_base, _, loaded_two = ddp_labels(speedups(loaded_records, layouts=list(LAYOUTS)))
    return holm_speed_tests({f"{one} ÷ {baseline}": round_ratios(records, one),
                             f"{two} ÷ {baseline}": round_ratios(records, two),
                             f"under load: {loaded_two} ÷ {loaded_base}": round_ratios(loaded_records, loaded_two)})


def like_with_like(records: Iterable[dict]) -> pd.DataFrame:
    """Chapter 5.5's like-with-like control, read from a ``bench scale`` record made with
    ``--trainer-batch-sizes`` (`finrl_tutorial.book.scale.DDP_CONTROL_RECORD`): two DDP ranks
    against the *control*, the in-process trainer that takes the same optimiser steps (as many
    envs, minibatches as large as the ranks' averaged step, on as many threads as ranks); two
    ranks against the fastest in-process trainer with the default minibatches (the chapter's
    baseline); and the control against that baseline (what the larger minibatches alone change).
    Tested together (`holm_speed_tests`); each row is named ``configuration ÷ baseline``, and
    ``optimiser steps`` gives both sides' steps per iteration × samples per step."""
    records = list(records)
    table = speedups(records, layouts=list(LAYOUTS))
    baseline, two = str(table["baseline"].iloc[0]), _ranks(table, 2)
    steps, samples = optimiser_steps(records, two)
    two_ranks = _record(records, two)
    controls = [scale_label(r) for r in records if r.get("layout") == "trainer" and "phases" in r
                and int(r["num_envs"]) == int(two_ranks["num_envs"])
                and int(r.get("learner_threads") or 1) == int(two_ranks["processes"])
                and optimiser_steps(records, scale_label(r)) == (steps, samples)]
    if not controls:
        raise InputError(f"the record holds no in-process trainer that takes {two}'s optimiser steps "
                         f"({steps} of {samples:,} samples): run `bench scale --trainer-batch-sizes ...`")
    control = controls[0]
    pairs = [(two, control), (two, baseline), (control, baseline)]
    family = holm_speed_tests({f"{label} ÷ {base}": round_ratios(records, label, baseline=base)
                               for label, base in pairs})
    family["optimiser steps"] = ["{} ÷ {}".format(*(f"{n} × {m:,}" for n, m in (optimiser_steps(records, label),
                                                                               optimiser_steps(records, base))))
                                 for label, base in pairs]
    return family


def control_note(records: Iterable[dict], name: str) -> object:
    """Reads the control record ``name`` (`like_with_like`; its records passed in); returns a
    collapsed *How the control was measured* block: the record, its date, machine and command, the
    interleaved rounds and the load averages of its runs."""
    records = list(records)
    first, cores = records[0], int(records[0]["cpu_count"])
    rounds = max(int(r.get("repeats", 1)) for r in records)
    loads = run_loads(records, LAYOUTS)
    return _dropdown("How the control was measured", [
        f"* The record is `{name}`, measured on {first['date'][:10]} on {cores} CPU cores (torch "
        f"{first['torch']}), with the default learner. Command: `{reader_command(first['command'])}`.",
        f"* Every configuration ran {rounds} times in interleaved rounds; the 1-minute load average was "
        f"{load_range(records, LAYOUTS)}" + (", below the number of cores: a quiet machine." if max(loads) < cores
                                             else f" on {cores} cores: a busy machine's figures."),
        "* Each ratio is taken round by round; the t-test on the log ratios and Holm's correction are "
        "`ft.book.scale.holm_speed_tests`'s."])


def check_table(check: pd.DataFrame) -> pd.DataFrame:
    """Reads a `model_check` table; returns it for display: processes as whole numbers, rates
    rounded to whole samples/s, the error as a signed percentage."""
    return pd.DataFrame({"processes": check["processes"].astype(int),
                         "model samples / s": check["model samples / s"].map("{:,.0f}".format),
                         "measured samples / s": check["measured samples / s"].map("{:,.0f}".format),
                         "error": check["error"].map("{:+.0%}".format)}, index=check.index)


def added_all_reduce(records: Iterable[dict]) -> float:
    """The seconds per iteration that the second rank adds to the all-reduce in a ``bench scale``
    record (two ranks' all-reduce phase less one rank's): the part of the fitted overhead that is
    communication. The rest of the overhead is waiting for the slower rank and two ranks sharing
    the machine's cores."""
    seconds = {row["processes"]: row["phases"]["all_reduce"] for row in records
               if row.get("layout") == "ddp" and "phases" in row}
    if not {1, 2} <= set(seconds):
        raise ValueError("the record holds no phases of one and two DDP ranks")
    return max(seconds[2] - seconds[1], 0.0)


def faster_device(model: CostModel, factor: float = FASTER_DEVICE, fixed_overhead: float | None = None) -> CostModel:
    """Returns the what-if of ``model``: one rank's rollout and update ``factor`` times shorter (as
    on a faster device, one per rank). Of the overhead of an added rank, ``fixed_overhead`` seconds
    (the all-reduce, `added_all_reduce`) stay as they are and the rest (waiting for the slower rank,
    sharing cores) shortens with the work; without it the whole overhead stays."""
    fixed = model.overhead if fixed_overhead is None else min(fixed_overhead, model.overhead)
    return dataclasses.replace(model, rollout=model.rollout / factor, update=model.update / factor,
                               overhead=fixed + (model.overhead - fixed) / factor)


WHAT_IF = "iteration {factor:g}× shorter than fitted, all-reduce unchanged"
"""The label of the what-if curve (`plot_ddp_projection`)."""


def plot_ddp_projection(model: CostModel, table: pd.DataFrame, ax, factor: float = FASTER_DEVICE,
                        max_processes: int = 8, trainer: TrainerModel | None = None,
                        fixed_overhead: float | None = None, what_if_ax=None) -> None:
    """Reads the fitted DDP `CostModel` and the `speedups` table it came from; draws on ``ax`` its
    speed-up from 1 to ``max_processes`` ranks (solid where measured, dotted in the shaded
    projection band), the measured points, and the `faster_device` what-if (dotted all along,
    against its own single rank): on ``ax`` too, or alone on ``what_if_ax`` where one is given, so
    that each panel has one baseline. The baseline is the table's (the fastest in-process trainer),
    or, with ``trainer`` (`fit_trainer_model`), one in-process trainer with as many envs as the
    ranks hold together: like with like. ``fixed_overhead`` is the what-if's unshortened overhead
    (`faster_device`)."""
    baseline = str(table["baseline"].iloc[0])
    what_if = WHAT_IF.format(factor=factor)
    against = (f"one in-process trainer with as many envs, {trainer.label.split('(')[-1].split(', ')[-1].rstrip(')')}"
               if trainer is not None else _phrase(baseline))
    measured = measured_points(table, "ddp", baseline=trainer, samples_per_process=model.samples_per_process)
    rate = trainer if trainer is not None else float(table.loc[baseline, "median"])
    faster = faster_device(model, factor, fixed_overhead)
    models = {"DDP ranks (fitted)": model} | ({} if what_if_ax is not None else {what_if: faster})
    plot_projection(models, rate, {"DDP ranks (fitted)": measured}, ax,
                    f"DDP: measured at 1-2 ranks, projected to {max_processes} (against {against})",
                    unit="ranks", hypothetical=(what_if,), max_processes=max_processes)
    if what_if_ax is not None:
        plot_projection({what_if: faster}, rate, {}, what_if_ax,
                        f"What-if, a projection only: each rank's device {factor:g}× as fast, its all-reduce "
                        "kept (against its own single rank)", unit="ranks", hypothetical=(what_if,),
                        max_processes=max_processes)


def recorded_rows(records: Iterable[dict], name: str) -> dict[str, str]:
    """Reads the ``bench scale`` record ``name`` (its records passed in); returns the recorded rows
    of the chapter's measured box, each naming the record: two ranks' and one rank's speed-ups
    against the fastest in-process trainer, the optimiser steps per iteration, and the all-reduce
    and waiting of a two-rank iteration. Where two ranks take other optimiser steps than the
    baseline, the two-rank row's name says the comparison is not like with like."""
    records = list(records)
    table, phases = speedups(records, layouts=list(LAYOUTS)), phase_table(records, layouts=LAYOUTS)
    baseline, one, two = ddp_labels(table)
    (steps, size), (base_steps, base_size) = optimiser_steps(records, two), optimiser_steps(records, baseline)
    pair = phases.loc[two]
    unlike = ", not like with like (next row)" if (steps, size) != (base_steps, base_size) else ""
    return {f"{name} ({records[0]['date'][:10]}), DDP two ranks{unlike}": speedup_text(table, two),
            f"{name}, optimiser steps per iteration": f"two ranks {steps} of {size:,} samples, the {baseline} "
                                                      f"{base_steps} of {base_size:,}",
            f"{name}, DDP one rank": speedup_text(table, one),
            f"{name}, two ranks: all-reduce + waiting per iteration":
                f"{pair['all_reduce'] + pair['waiting']:.2f} s of {pair['total']:.2f} s"}


# --- section 5.3: rank 0's log --------------------------------------------------------------------

def plot_rank0_validation(log: pd.DataFrame, hold_sharpe: float, ax) -> None:
    """Reads rank 0's ``log.csv`` (a DataFrame) and buy-and-hold's validation Sharpe; draws on ``ax``
    the validation Sharpe against env-steps, with 0 and buy-and-hold's Sharpe as lines."""
    valid = log.dropna(subset=["valid/sharpe_ratio"])
    ax.plot(valid["env_steps"], valid["valid/sharpe_ratio"], "o-")
    ax.axhline(0, color="grey", linewidth=0.8)
    ax.axhline(hold_sharpe, color="tab:orange", linestyle=":", label=f"buy-and-hold ({hold_sharpe:.2f})")
    ax.legend(fontsize="small")
    ax.set(xlabel="env-steps (both ranks)", ylabel="validation Sharpe (2018)", title="rank 0: validation")
    ax.grid(alpha=0.3)


def entropy_change(log: pd.DataFrame) -> pd.Series:
    """Reads rank 0's ``log.csv``; returns the policy's entropy per iteration as its change (in %)
    relative to the first iteration."""
    return 100 * (log["loss/entropy"] / log["loss/entropy"].iloc[0] - 1)


def plot_entropy_change(log: pd.DataFrame, ax) -> None:
    """Reads rank 0's ``log.csv``; draws on ``ax`` the entropy's change from the first iteration
    (`entropy_change`) on an axis of at least ±1 %, so that noise cannot pass for a trend."""
    change = entropy_change(log)
    ax.plot(log["env_steps"], change, "o-", color="tab:purple")
    span = max(1.0, 1.2 * float(change.abs().max()))
    ax.set_ylim(-span, span)
    ax.axhline(0, color="grey", linewidth=0.8)
    ax.set(xlabel="env-steps (both ranks)", ylabel="entropy, % change from iteration 0",
           title=f"policy entropy (first iteration {log['loss/entropy'].iloc[0]:.3f})")
    ax.grid(alpha=0.3)
