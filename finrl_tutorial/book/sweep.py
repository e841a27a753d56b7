"""Reading `bench sweep` records (chapters 2 and 7): tables, sentences and captions computed from a
record, as pure functions; `finrl_tutorial.bench.sweep` measures and writes the records."""
from __future__ import annotations

import re
from collections.abc import Mapping

import pandas as pd

from ..bench.sweep import verdict


def summary_table(record: dict) -> pd.DataFrame:
    """The summary of a sweep record as a table: one row per market and variant, final and best
    validation Sharpe as ``mean ± std [min, max]`` and the verdict against the base (`verdict`,
    recomputed from the seeds' values: the record's stored string may be the older "tie")."""
    rows = []
    base_name = record.get("base_variant", "base")
    bases = {row["market"]: row for row in record["summary"] if row["variant"] == base_name}
    for row in record["summary"]:
        line = {"market": row["market"], "variant": row["variant"], "seeds": len(row["seeds"])}
        for measure in ("final_valid_sharpe", "best_valid_sharpe"):
            s = row[measure]
            line[measure.replace("_", " ")] = f"{s['mean']:.2f} ± {s['std']:.2f} [{s['min']:.2f}, {s['max']:.2f}]"
            base = bases.get(row["market"])
            line[f"{measure.split('_')[0]} vs {base_name}"] = (
                verdict(s["values"], base[measure]["values"]) if f"{measure}_vs_base" in row and base else "")
        line["wall s"] = round(row["wall_seconds"]["mean"], 1)
        line["buy-and-hold valid Sharpe"] = round(row["buy_and_hold_valid_sharpe"], 2)
        if "oracle_valid_sharpe" in row:
            line["signal rule valid Sharpe"] = round(row["oracle_valid_sharpe"], 2)
        rows.append(line)
    return pd.DataFrame(rows).set_index(["market", "variant"])


MEASURE_NAMES = {"final_valid_sharpe": "final validation Sharpe", "best_valid_sharpe": "best validation Sharpe"}


def describe(record: dict, measure: str = "final_valid_sharpe") -> list[str]:
    """One sentence per market and variant, computed from the record: the variant's ``measure``
    (mean ± std over seeds) against the base's and the buy-and-hold reference, and whether the
    difference is an effect (the seed ranges do not overlap, `verdict`) or inconclusive (they
    overlap: no effect shown, and no equality either)."""
    base_name = record.get("base_variant", "base")
    rows = {(row["market"], row["variant"]): row for row in record["summary"]}
    sentences = []
    for (market, variant), row in rows.items():
        base = rows.get((market, base_name))
        if variant == base_name or base is None:
            continue
        mine, theirs = row[measure], base[measure]
        seeds = len(row["seeds"])
        outcome = verdict(mine["values"], theirs["values"])
        if outcome == "inconclusive":
            reading = "the seed ranges overlap: inconclusive"
        elif outcome == "too few seeds":
            reading = f"{seeds} seed(s) against {len(base['seeds'])}: too few seeds for a verdict"
        else:
            word = "above" if outcome == "higher" else "below"
            reading = f"all {seeds} seeds lie {word} all of the base's: an effect"
        sentences.append(
            f"{market}: {variant} ended at a {MEASURE_NAMES[measure]} of {mine['mean']:.2f} ± {mine['std']:.2f} "
            f"(seeds {mine['min']:.2f} to {mine['max']:.2f}), {base_name} at {theirs['mean']:.2f} ± "
            f"{theirs['std']:.2f} ({theirs['min']:.2f} to {theirs['max']:.2f}), buy-and-hold at "
            f"{row['buy_and_hold_valid_sharpe']:.2f}; {reading}.")
    return sentences


def _eval_every(record: Mapping) -> int | None:
    """The iterations between two validations of a sweep record's runs (None if the runs differ)."""
    every = {run.get("eval_every") for run in record.get("runs", [])}
    return every.pop() if len(every) == 1 and None not in every else None


def sweep_caption(record: dict, name: str, reader_out: str | None = None) -> str:
    """Where a sweep record comes from, for a caption: date, machine, seeds, budget and the
    command(s) that made it (a merged record lists the commands of its parts). With
    ``reader_out``, the commands are replaced by the one a reader runs to make the whole record
    again: the first part's options, every variant (no ``--variants``), no ``--resume`` or
    ``--merge``, ``--out reader_out`` (no temporary folder of the machine that made it), and the
    plain learner's ``--set`` where the record ran it (`teaching.ran_plain_learner`)."""
    from .teaching import ran_plain_learner, reader_command  # the same rule for every record's command

    machine_info = record["machine"]
    parts = record.get("merged_from", [])
    asked = re.search(r"--total-steps (\d+)", parts[0]["command"] if parts else record["command"])
    rounded = (f" (the command's --total-steps {int(asked.group(1)):,} rounded down to whole iterations that split "
               f"into --evaluations {record['evaluations']} equal parts)"
               if asked and int(asked.group(1)) != record["total_steps"] else "")
    every = _eval_every(record)
    spacing = f"every {every} iterations after it" if every else "at regular intervals"
    lines = [f"Record {name}: {record['date']}, {machine_info['platform']}, {machine_info['cpu_count']} CPUs, "
             f"torch {machine_info['torch']}; seeds {record['seeds']}, {record['total_steps']:,} env-steps per run"
             f"{rounded}, {record['evaluations'] + 1} validations each (one after the first iteration, then one "
             f"{spacing}, the last at the end)."]
    if reader_out is not None:
        source = parts[0]["command"] if parts else record["command"]
        plain = ran_plain_learner(record)  # then the command gets the plain learner's --set
        lines.append(f"To make it again ({len(record['runs'])} runs"
                     + (", with the plain learner it ran" if plain else "") + "): "
                     f"{reader_command(source, reader_out, plain=plain)}")
        return "\n".join(lines)
    lines.append(f"Command: {record['command']}")
    for part in parts:
        lines.append(f"  part ({part['runs']} runs, {part['date']}): {part['command']}")
    return "\n".join(lines)
