"""Reading stored benchmark records: the tables and sentences of chapters 4-8, as pure functions.

Every function takes records (the dicts of a ``bench`` JSON-lines file, or a ``report.json``) and
returns a table or sentences computed from them; nothing here measures or reads files, so the same
reading serves the book, the README and the tests. Fields a newer record may add are used when
present; records without them are still read.
"""
from __future__ import annotations

import re
from typing import Iterable

import pandas as pd

from ..errors import InputError


#: The keys of :func:`finrl_tutorial.provenance.machine` that a JSON-lines record carries at its top level.
MACHINE_KEYS = ("cpu_count", "platform", "torch", "threads")


def _frame(records: Iterable[dict] | pd.DataFrame) -> pd.DataFrame:
    return records.copy() if isinstance(records, pd.DataFrame) else pd.DataFrame(list(records))


def _joined(values) -> str:
    return ", ".join(map(str, sorted(set(values))))


_ARCHITECTURES = {"x86_64": "x86-64", "amd64": "x86-64", "aarch64": "ARM64", "arm64": "ARM64"}


def short_platform(platform: str) -> str:
    """The operating system and processor architecture of a ``platform.platform()`` string
    (``"Linux-6.18.44-…-x86_64-with-glibc2.36"`` → ``"Linux x86-64"``): the kernel build says nothing
    about a speed a reader can compare."""
    parts = str(platform).split("-")
    arch = next((_ARCHITECTURES[part.lower()] for part in parts if part.lower() in _ARCHITECTURES), "")
    return " ".join(part for part in (parts[0], arch) if part)


_CODE = re.compile(r"\b[\w.]+\(\)|\b\w+ = [\w*/+\-.()]+|\b[\w.]+(?:/[\w.]+)+\.py\b")


def code_spans(text: str) -> str:
    """``text`` with the code in it (a call such as ``torch.cuda.synchronize()``, a formula such as
    ``rate = n*steps/seconds``, a file such as ``envs/env.py``) set in backticks, so that Markdown prints it as code, not as italics."""
    return _CODE.sub(lambda match: f"`{match.group(0)}`", str(text))


def provenance(records: Iterable[dict] | pd.DataFrame) -> dict:
    """Where and when a file of records was measured: count, time span (UTC), cores, threads,
    torch, GPU and platform (operating system and architecture, `short_platform`; a nested ``machine``
    dict is read like top-level machine keys)."""
    frame = _frame(records)
    if "machine" in frame:  # report-style records: {"machine": {...}, ...}
        nested = pd.DataFrame([m if isinstance(m, dict) else {} for m in frame["machine"]])
        for key in nested:
            frame[key] = frame[key].fillna(nested[key]) if key in frame else nested[key]
    dates = pd.to_datetime(frame["date"], utc=True)
    gpus = frame["gpu"].dropna() if "gpu" in frame else []
    return {
        "records": len(frame),
        "measured": f"{dates.min():%Y-%m-%d %H:%M} .. {dates.max():%H:%M} UTC",
        "CPU cores": _joined(frame["cpu_count"]),
        "torch threads": _joined(frame["threads"]),
        "torch": _joined(frame["torch"]),
        "GPU": _joined(gpus) if len(gpus) else "none",
        "platform": _joined(frame["platform"].map(short_platform)),
    }


def env_throughput_table(env_records: Iterable[dict] | pd.DataFrame) -> pd.DataFrame:
    """Env steps/s by number of sub-envs (rows) and kind of env (columns), from ``bench env``."""
    return _frame(env_records).pivot_table(index="num_envs", columns="env", values="env_steps_per_s")


def loop_cost_lines(train_records: Iterable[dict] | pd.DataFrame) -> list[str]:
    """For the largest ``bench train`` size: the rollout's rate, the whole loop's rate and the
    share of the time the update takes, each from one record. No share of the bare env's rate
    is given: ``bench train`` does not measure the bare env, and a ``bench env`` record is another
    run (`rollout_share_table` reads the share from rows that measured both together)."""
    loop = _frame(train_records)
    largest = int(loop["num_envs"].max())
    at = loop[loop["num_envs"] == largest].set_index("algo")
    lines = []
    for algo, r in at.iterrows():
        rollout_rate, total_rate = r["rollout_env_steps_per_s"], r["samples_per_s"]
        share = 1 - total_rate / rollout_rate  # (1/total - 1/rollout) / (1/total)
        lines.append(f"{algo.upper()} with {largest:,} envs: rollout {rollout_rate:,.0f}/s, "
                     f"whole loop {total_rate:,.0f}/s: the update takes {share:.0%} of the time")
    return lines


def rollout_share_table(records: Iterable[dict] | pd.DataFrame, layout: str = "vec") -> pd.DataFrame:
    """Rows that measured the bare env, its rollout and the whole training loop together (the
    ``vec`` rows of a ``bench scale`` record up to ``--loop-max-envs``), one per size: the three
    rates, the rollout's share of the bare env's rate and the update's share of the loop's time.
    Every ratio is within one row, so within one run of one machine."""
    frame = _frame(records)
    needed = ["env_steps_per_s", "rollout_env_steps_per_s", "samples_per_s"]
    if not set(needed) <= set(frame):
        raise InputError("the records hold no row that measured the bare env, its rollout and the loop together "
                         "(`bench scale` writes them in its vec rows)")
    rows = frame[(frame.get("layout") == layout) & frame[needed].notna().all(axis=1)]
    if rows.empty:
        raise InputError(f"the records hold no {layout} row with {', '.join(needed)}")
    rows = rows.sort_values("num_envs")
    return pd.DataFrame({
        "bare env (env-steps / s)": rows["env_steps_per_s"].to_numpy(),
        "rollout (env-steps / s)": rows["rollout_env_steps_per_s"].to_numpy(),
        "whole loop (samples / s)": rows["samples_per_s"].to_numpy(),
        "rollout ÷ bare env": (rows["rollout_env_steps_per_s"] / rows["env_steps_per_s"]).to_numpy(),
        "update's share of the loop": (1 - rows["samples_per_s"] / rows["rollout_env_steps_per_s"]).to_numpy(),
    }, index=pd.Index(rows["num_envs"].astype(int).to_numpy(), name="envs"))


def peer_summary(peer_records: Iterable[dict]) -> dict:
    """The ``summary`` record of a ``bench peers`` file: one run per file (the readings pair each
    summary's ratios with the repeats of its own run, so two runs in one file would mix)."""
    summaries = [r for r in peer_records if r.get("measurement") == "summary"]
    if len(summaries) != 1:
        raise InputError(f"a bench peers file holds one run (one summary record), this one {len(summaries)}: "
                         "write each run to its own file (--out)")
    return summaries[0]


def peer_table(peer_records: Iterable[dict]) -> pd.DataFrame:
    """One row per peer measurement: library, label, median rate, min and max of the repeats,
    spread ((max − min) / median) and number of repeats."""
    frame = pd.DataFrame([r for r in peer_records if "label" in r])
    rate = frame["env_steps_per_s"] if "env_steps_per_s" in frame else pd.Series(float("nan"), index=frame.index)
    if "samples_per_s" in frame:
        rate = rate.fillna(frame["samples_per_s"])
    return pd.DataFrame({
        "library": frame["library"],
        "what": frame["label"],
        "per second (median)": rate,
        "min": frame["runs"].apply(min),
        "max": frame["runs"].apply(max),
        "spread": frame["spread"],
        "repeats": frame["repeats"],
    })
