"""Chapter 5's readings (multiple learners: DataParallel and DDP) of the ``bench scale`` records.

The chapter shows the calls a reader reuses (`phase_table`, `speedups`, `fit_cost_model` of
`finrl_tutorial.book.scale`); the functions here turn their results into the chapter's tables,
figures and sentences:

* `ddp_labels`, `optimiser_steps`, `phase_seconds`, `plot_phases`, `ddp_reading`,
  `measurement_note` — section 5.5: where a DDP iteration's time goes, what two ranks bought
  against the fastest in-process trainer, and how the record was measured (a collapsed block);
* `check_table`, `faster_device`, `plot_ddp_projection`, `projection_reading` — section 5.6: the
  cost model for ranks and its projection, marked as one;
* `loaded_reading`, `committed_rows` — section 5.7 and the chapter's measured box.

Every number in a sentence is computed from the records passed in; nothing here measures.
"""
from __future__ import annotations

import dataclasses
from typing import Iterable

import pandas as pd

from ..agents import make_config
from ..bench.scale import PHASES, scale_label
from ..errors import InputError
from .folded import MethodNote, how_measured, markdown as _markdown
from .teaching import reader_command
from .workers import load_range, run_loads
from .scale import (BASELINE_LAYOUT, CostModel, measured_points, phase_table, plot_projection, project,
                    same_work_seconds, speed_verdict_reason, speedup_text, speedups)

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


def _verdict(verdict: str) -> str:
    """A verdict of `speed_verdict` in a few words, for a sentence that has no room for the rule."""
    return {"tie": "a tie in every round", "inconclusive": "inconclusive (the rounds do not all lie on one side of 1)",
            "baseline": "the baseline"}.get(verdict) or speed_verdict_reason(verdict)


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
    per_rank = make_config("ppo", num_envs=int(record["envs_per_process"]))
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


def _same_envs_trainer(table: pd.DataFrame, records: list[dict], label: str) -> str | None:
    """The one-thread in-process trainer with as many envs as one process of ``label``, if measured."""
    envs = int(_record(records, label)["envs_per_process"])
    for r in records:
        if (r.get("layout") == BASELINE_LAYOUT and int(r.get("learner_threads") or 1) == 1
                and int(r["num_envs"]) == envs and scale_label(r) in table.index):
            return scale_label(r)
    return None


def ddp_reading(records: Iterable[dict]) -> object:
    """Reads a ``bench scale`` record with trainer and ddp layouts; returns (as Markdown) the
    bullets under section 5.5's figure. Where two ranks take other optimiser steps than the fastest
    in-process trainer, the first bullet leads with *not like with like* and the step difference,
    then gives the ratio with its verdict, and names what would make it like with like (an
    in-process trainer with the ranks' step size, said to be missing when the record lacks it);
    otherwise it states two ranks' speed-up. Then where two ranks' iteration went (all-reduce,
    waiting), one rank, and the ratio against one rank named as the weaker baseline."""
    records = list(records)
    table, phases = speedups(records, layouts=list(LAYOUTS)), phase_table(records, layouts=LAYOUTS)
    baseline, one, two = ddp_labels(table)
    fastest = _phrase(baseline)
    row, pair = table.loc[two], phases.loc[two]
    ratio = f"{row['speed-up']:.2f}× the samples/s of {fastest}: {_verdict(row['verdict'])}."
    (steps, size), (base_steps, base_size) = optimiser_steps(records, two), optimiser_steps(records, baseline)
    if (steps, size) != (base_steps, base_size):
        headline = (f"* **Not like with like.** Per iteration, two ranks take {steps} optimiser steps of {size:,} "
                    "samples: the all-reduce averages both ranks' minibatches into one step. "
                    f"{fastest[0].upper() + fastest[1:]} takes {base_steps} steps of {base_size:,} on as many "
                    f"samples. With that difference, two ranks ran {ratio} "
                    f"Like with like would need an in-process trainer with `batch_size={size}`")
        if any(r.get("layout") == BASELINE_LAYOUT and r.get("batch_size") == size for r in records):
            headline += "."
        else:
            headline += (". The record has none, so part of the ratio may come from the larger steps (chapter 2.2 "
                         "times what the minibatch size alone does).")
        lines = [headline]
    else:
        lines = [f"* **Two ranks** ran {ratio}"]
    lines.append(f"* **Where the time goes:** of two ranks' {pair['total']:.2f} s per iteration, rank 0 spent "
                 f"{pair['all_reduce']:.2f} s in all-reduces and {pair['waiting']:.2f} s waiting for the other rank. "
                 "The rest is each rank's own rollout and update.")
    single = table.loc[one]
    text = f"* **One rank** ran {single['speed-up']:.2f}× the samples/s of the same baseline"
    twin = _same_envs_trainer(table, records, one)
    if twin is not None:
        envs = int(_record(records, one)["envs_per_process"])
        text += f", and the in-process trainer with the same {envs} envs {table.loc[twin, 'speed-up']:.2f}× it"
        close = abs(single["speed-up"] / table.loc[twin, "speed-up"] - 1) < 0.05
        text += ": DDP's machinery around one process costs little." if close else "."
    else:
        text += "."
    lines.append(text)
    if single["speed-up"] < 1:
        lines.append(f"* **Against one rank** two ranks ran {row['median'] / single['median']:.2f}× its samples/s. "
                     "That number is larger because one rank is slower than the fastest single process, "
                     "so it is not the comparison to read.")
    return _markdown("\n".join(lines))


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
               f"(torch {first['torch']}). Every layout trains with `PPOConfig`'s default settings. Command: "
               f"`{reader_command(first['command'])}`.",
               f"* `bench scale` runs every configuration {int(table['repeats'].max())} times in interleaved rounds: "
               "run *i* of every configuration comes from round *i*, so each speed-up is also taken round by round. "
               "*Faster* or *slower* means every round says so.",
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


def check_table(check: pd.DataFrame) -> pd.DataFrame:
    """Reads a `model_check` table; returns it for display: processes as whole numbers, rates
    rounded to whole samples/s, the error as a signed percentage."""
    return pd.DataFrame({"processes": check["processes"].astype(int),
                         "model samples / s": check["model samples / s"].map("{:,.0f}".format),
                         "measured samples / s": check["measured samples / s"].map("{:,.0f}".format),
                         "error": check["error"].map("{:+.0%}".format)}, index=check.index)


def faster_device(model: CostModel, factor: float = FASTER_DEVICE) -> CostModel:
    """Returns the what-if of ``model``: one rank's rollout and update ``factor`` times shorter (as
    on a faster device), the overhead of an added rank unchanged."""
    return dataclasses.replace(model, rollout=model.rollout / factor, update=model.update / factor)


WHAT_IF = "iteration {factor:g}× shorter than fitted, same overhead"
"""The label of the what-if curve (`plot_ddp_projection`)."""


def plot_ddp_projection(model: CostModel, table: pd.DataFrame, ax, factor: float = FASTER_DEVICE,
                        max_processes: int = 8) -> None:
    """Reads the fitted DDP `CostModel` and the `speedups` table it came from; draws on ``ax`` its
    speed-up against the table's baseline from 1 to ``max_processes`` ranks (solid where measured,
    dotted in the shaded projection band), the measured points, and the `faster_device` what-if
    (dotted all along, against its own single rank)."""
    baseline = str(table["baseline"].iloc[0])
    what_if = WHAT_IF.format(factor=factor)
    plot_projection({"DDP ranks (fitted)": model, what_if: faster_device(model, factor)},
                    float(table.loc[baseline, "median"]), {"DDP ranks (fitted)": measured_points(table, "ddp")}, ax,
                    f"DDP: measured at 1-2 ranks, projected to {max_processes} (against {_phrase(baseline)})",
                    unit="ranks", hypothetical=(what_if,), max_processes=max_processes)


def projection_reading(model: CostModel, table: pd.DataFrame, processes: tuple[int, ...] = (4, 8),
                       factor: float = FASTER_DEVICE) -> object:
    """Reads the fitted DDP `CostModel` and its `speedups` table; returns (as Markdown) the fitted
    numbers, the projection to ``processes`` ranks against the fastest in-process trainer (marked
    as a projection, with its assumptions) and the `faster_device` what-if's overhead share."""
    baseline = str(table["baseline"].iloc[0])
    projection = project(model, processes, baseline=float(table.loc[baseline, "median"]))
    envs = model.samples_per_process // make_config("ppo").horizon_len
    rates = [f"{p} ranks {row['speed-up']:.2f}×" for p, row in projection.iterrows()]
    rates = ", ".join(rates[:-1]) + (" and " if len(rates) > 1 else "") + rates[-1]
    faster = faster_device(model, factor)
    lines = [f"* **Fitted:** one rank's rollout $r$ = {model.rollout:.2f} s and update $u$ = {model.update:.2f} s per "
             f"iteration; each added rank costs $o$ = {model.overhead:+.2f} s, an overhead share "
             f"$h$ = {model.overhead_fraction:+.0%}.",
             f"* **Projection, not measurement:** the model gives {rates} the samples/s of {_phrase(baseline)}, if the "
             "assumptions below hold.",
             "* **What it assumes:** one free core (or device) per rank; each added rank costs what the second rank "
             "cost on this machine (a ring all-reduce's latency does grow with the ranks); "
             f"{envs} envs per rank, as measured."]
    if model.overhead > 0:
        lines.append(f"* **What-if (dotted curve), also a projection:** with one rank's work {factor:g} times "
                     f"shorter, as on a faster device, and the same overhead, the model's $h$ rises to "
                     f"{faster.overhead_fraction:+.0%}. So the model projects that a fast device needs larger per-rank "
                     "batches to keep $h$ small; no record here measures it. The curve is read against its own "
                     "single rank.")
    return _markdown("\n".join(lines))


def loaded_reading(records: Iterable[dict]) -> object:
    """Reads the loaded ``bench scale`` record (`LOADED_SCALE_RECORD`); returns (as Markdown) the
    bullet of section 5.7: two ranks against that record's fastest in-process trainer, with the
    verdict of its rounds and the load average of the two ranks' runs (`load_range`)."""
    records = list(records)
    table = speedups(records, layouts=list(LAYOUTS))
    baseline, _, two = ddp_labels(table)
    row, cores = table.loc[two], int(records[0]["cpu_count"])
    heavy = "heavy load" if min(run_loads(records, ("ddp",), 2)) > 2 * cores else "load"
    return _markdown(f"* **Under {heavy}** (the same benchmark, with a load average of "
                     f"{load_range(records, ('ddp',), 2)}, on {cores} cores; chapter 4.5 reads the same record) "
                     "two ranks ran "
                     f"{row['speed-up']:.2f}× the samples/s of {_phrase(baseline)} there: {_verdict(row['verdict'])}. "
                     "That is a busy machine's answer, not DDP's limit.")


def committed_rows(records: Iterable[dict], name: str) -> dict[str, str]:
    """Reads the ``bench scale`` record ``name`` (its records passed in); returns the committed rows
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


# --- sections 5.2 and 5.3: DataParallel's plan, rank 0's log --------------------------------------

def data_parallel_plan(agent, minibatch: int, gpus: int, gpu_records: Iterable[str] = ()) -> object:
    """Reads an agent (a torch module), the update's minibatch size, this machine's GPU count and the
    names of the committed GPU records; returns (as Markdown) what `DataParallel` would do with two
    GPUs where it cannot run (fewer than two), and whether any GPU record measured it."""
    import torch  # the agent's weights are torch tensors; the room imports torch already

    halves = [len(part) for part in torch.arange(minibatch).chunk(2)]  # how scatter cuts a minibatch
    megabytes = sum(p.numel() * p.element_size() for p in agent.parameters()) / 1e6
    records = list(gpu_records)
    text = (f"`DataParallel` is not run here: it needs at least 2 GPUs, and this machine has {gpus}. "
            f"With 2 GPUs it would cut each minibatch of {minibatch:,} samples into halves of {halves[0]:,}, copy "
            f"the agent's weights ({megabytes:.2f} MB) to the second GPU at every forward pass, run both halves, "
            "and sum the gradients on the first GPU.")
    text += (f" Committed GPU records: {', '.join(records)}." if records
             else " No GPU record is committed: `DataParallel` and NCCL are not measured on a GPU in this book.")
    return _markdown(text)


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
