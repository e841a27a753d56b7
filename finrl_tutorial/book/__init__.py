"""The book room: what the chapters share, and every reading of a committed record.

A chapter starts with ``import finrl_tutorial as ft`` and ``ft.book.setup_chapter()`` instead of
repeating the same preamble; ``ft.book.FAST`` says whether it runs its small versions. The bench
(`finrl_tutorial.bench`) measures and writes records; this room turns them into tables, sentences,
captions and figures: `report` (chapters 4-8: env throughput, the loop's cost, scale-out, GPU,
peers, the committed full-size run) and `sweep` (chapters 2 and 7). The committed records under the
repository's ``book/data/``
ship inside the package as ``finrl_tutorial.records``, so a chapter run alone (Colab: the notebook in
an empty folder, the package installed from the repository) finds them with :func:`record_path`. The committed records under the repository's ``book/data/``
ship inside the package as ``finrl_tutorial.records``, so a chapter run alone (Colab: the notebook in
an empty folder, the package installed from the repository) finds them with :func:`record_path`.
"""
from __future__ import annotations

import fnmatch
import importlib.resources
import inspect
import json
import os
import re
import tempfile
import warnings
from pathlib import Path

import torch

from ..errors import InputError
from . import report, sweep
from . import teaching  # chapters 1-3: like-with-like comparisons, Holm, distance from the untrained agent
# The readings of committed records, one import away for the chapters (``ft.book.describe(record)``).
from .report import (env_throughput_table, full_run_commentary, gpu_summary, loop_cost_lines, peer_ratio_table,
                     peer_summary, peer_table, peer_target_lines, provenance, scale_findings, scale_spread)
from .sweep import MEASURE_NAMES, along_the_curve, describe, summary_table, sweep_caption

FAST = os.environ.get("FINRL_TUTORIAL_FAST", "") not in ("", "0")
"""True in CI (``FINRL_TUTORIAL_FAST=1``): chapters run small versions of their experiments."""


def setup_chapter(threads: int = 1) -> None:
    """One torch thread (on a small CPU a second thread slows small networks down), plots inline,
    and no ipywidgets warning from tqdm."""
    torch.set_num_threads(threads)
    warnings.filterwarnings("ignore", message="IProgress not found")
    try:
        from IPython import get_ipython  # optional: a notebook has it, plain Python may not
    except ImportError:  # plain Python: nothing to set up for plots
        return
    shell = get_ipython()
    if shell is not None:
        shell.run_line_magic("matplotlib", "inline")


def temp_run_folder(prefix: str = "finrl_tutorial_") -> Path:
    """A fresh folder for a chapter's training runs (never one the reader already has)."""
    return Path(tempfile.mkdtemp(prefix=prefix))


def _records_folder():
    """Where the committed records are: the installed package ``finrl_tutorial.records`` or, in a
    checkout (an editable install, or the repository on sys.path: no records package), ``book/data/``.
    A Traversable: without an ``__init__.py`` the package may be a MultiplexedPath, whose str() is no path."""
    try:
        return importlib.resources.files("finrl_tutorial.records")
    except ModuleNotFoundError:
        return Path(__file__).resolve().parents[2] / "book" / "data"


def record_path(name: str) -> Path:
    """The committed record ``name`` (e.g. ``"bench_env.jsonl"``): from the installed package
    (``finrl_tutorial.records``) or, in a checkout, from ``book/data/``."""
    entry = _records_folder() / name
    if entry.is_file():
        return Path(str(entry))
    raise InputError(f"record {name!r} not found: it ships with the package (finrl_tutorial.records) "
                     "and lives in the repository's book/data/; reinstall the package from the repository")


def read_records(name: str) -> list[dict]:
    """The JSON records of ``name``: one per line (``.jsonl``); or one document (``.json``): a list of
    records as it is (``bench gpu --out``), any other document as a list of one (a ``report.json``)."""
    text = record_path(name).read_text(encoding="utf-8")
    if name.endswith(".jsonl"):
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    document = json.loads(text)
    return document if isinstance(document, list) else [document]


def record_names(pattern: str = "*") -> list[str]:
    """Names of the committed records matching ``pattern`` (e.g. ``"gpu*.json"``), sorted."""
    folder = _records_folder()
    entries = list(folder.iterdir()) if folder.is_dir() else []
    return sorted(entry.name for entry in entries if entry.is_file() and fnmatch.fnmatch(entry.name, pattern))


def show_source(obj, lines: tuple[int, int] | None = None):
    """The installed source of ``obj`` (a function, class or module) as a listing: what runs is what
    the reader sees, in the built book and in Jupyter or Colab alike. ``lines=(first, last)`` keeps
    those lines of the object's source (1-based, inclusive). Returns an IPython ``Markdown`` object
    holding a fenced Python block (highlighted by Jupyter and by the book alike), or the fenced text
    outside IPython."""
    source = inspect.getsource(obj)
    if lines is not None:
        first, last = lines
        chunk = source.splitlines()[first - 1:last] if first >= 1 else []
        if not chunk:
            raise InputError(f"lines {lines} are outside the {len(source.splitlines())} lines of the source")
        source = "\n".join(chunk) + "\n"
    # a fence longer than any run of backticks inside the source (docstrings may hold ``code``)
    longest = max((len(run) for run in re.findall("`+", source)), default=0)
    fence = "`" * max(3, longest + 1)
    return _markdown(f"{fence}python\n{source.rstrip()}\n{fence}")


def _markdown(text: str):
    """``text`` as an IPython ``Markdown`` object (a cell displays it), or the text itself outside IPython."""
    try:
        from IPython.display import Markdown  # optional: a notebook has it, plain Python may not
    except ImportError:
        return text
    return Markdown(text)


def measured_box(this_run: dict, committed: dict, shows: str, does_not_show: str, title: str = "What this chapter measured"):
    """The box at the end of a chapter: this run's numbers, the committed full-size numbers (each
    naming its record), and what they do and do not show. Returns an IPython Markdown object
    (displayed by the cell), or the Markdown text outside IPython."""
    lines = [f"**{title}**", "", "| | |", "| --- | --- |"]
    lines += [f"| this run: {name} | {value} |" for name, value in this_run.items()]
    lines += [f"| full size (committed): {name} | {value} |" for name, value in committed.items()]
    lines += ["", f"*Shows:* {shows}", "", f"*Does not show:* {does_not_show}"]
    return _markdown("\n".join(lines))


# --- chapters 4 and 5: speed-ups from the committed `bench scale` record, with their spread ---

def scale_summary(records: list[dict], configurations: dict[str, tuple[str, int]], baseline: str,
                  key: str = "samples_per_s"):
    """One row per ``label: (layout, processes)`` of `bench scale` records: the median of ``key``
    over the repeats, its min and max, the speed-up over ``baseline`` (the median of the
    round-by-round ratios: `bench scale` interleaves its repeats, so run i of every configuration
    comes from round i) with the rounds' min and max, the repeats and the load averages (1 min)
    the runs ended at. A configuration missing from the records is left out."""
    import pandas as pd

    found = {}
    for label, (layout, processes) in configurations.items():
        matches = [r for r in records if r["layout"] == layout and r["processes"] == processes and key in r]
        if matches:
            found[label] = matches[-1]
    if baseline not in found:
        raise InputError(f"the records hold no {configurations[baseline]} configuration (the baseline {baseline!r})")

    def runs(record):
        return [run[key] for run in record.get("runs", [{key: record[key]}])]

    base = runs(found[baseline])
    rows = {}
    for label, record in found.items():
        values = runs(record)
        ratios = [value / b for value, b in zip(values, base)]
        loads = [run["loadavg"][0] for run in record.get("runs", []) if run.get("loadavg")]
        rows[label] = {"median": record[key], "min": min(values), "max": max(values),
                       "speed-up": float(pd.Series(ratios).median()), "speed-up min": min(ratios),
                       "speed-up max": max(ratios), "repeats": len(values),
                       "load min": min(loads) if loads else float("nan"),
                       "load max": max(loads) if loads else float("nan")}
    return pd.DataFrame(rows).T


def plot_scale_summary(summary, ax, title: str, xlabel: str = "training samples / s (rollout + update)"):
    """Bars of `scale_summary`'s medians with min..max whiskers, each labelled with its speed-up."""
    medians = summary["median"].astype(float)
    ax.barh(list(summary.index), medians, color="tab:grey", alpha=0.8)
    ax.errorbar(medians, list(summary.index), xerr=[medians - summary["min"], summary["max"] - medians],
                fmt="none", color="black", capsize=4)
    labels = [f"{m:,.0f}  ({s:.2f}×, rounds {lo:.2f}–{hi:.2f}×)" for m, s, lo, hi in
              zip(medians, summary["speed-up"], summary["speed-up min"], summary["speed-up max"])]
    for y, (x, text) in enumerate(zip(summary["max"], labels)):
        ax.annotate(text, (x, y), xytext=(4, 0), textcoords="offset points", va="center", fontsize="small")
    ax.set_xlim(0, 1.8 * float(summary["max"].max()))
    ax.invert_yaxis()
    ax.set_xlabel(xlabel)
    ax.set_title(title, fontsize="medium")
    ax.grid(axis="x", alpha=0.3)

