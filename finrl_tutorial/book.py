"""What the book's chapters share: fast mode, the one-thread setup, temporary run folders, records.

A chapter starts with ``from finrl_tutorial.book import FAST, setup_chapter`` and ``setup_chapter()``
instead of repeating the same preamble. The committed records under the repository's ``book/data/``
ship inside the package as ``finrl_tutorial.records``, so a chapter run alone (Colab: the notebook in
an empty folder, the package installed from the repository) finds them with :func:`record_path`.
"""
from __future__ import annotations

import fnmatch
import importlib.resources
import inspect
import json
import os
import tempfile
import warnings
from pathlib import Path

import torch

from .errors import InputError

FAST = os.environ.get("FINRL_TUTORIAL_FAST", "") not in ("", "0")
"""True in CI (``FINRL_TUTORIAL_FAST=1``): chapters run small versions of their experiments."""


def setup_chapter(threads: int = 1) -> None:
    """One torch thread (on a small CPU a second thread slows small networks down), plots inline,
    and no ipywidgets warning from tqdm."""
    torch.set_num_threads(threads)
    warnings.filterwarnings("ignore", message="IProgress not found")
    try:
        from IPython import get_ipython
    except ImportError:  # plain Python: nothing to set up for plots
        return
    shell = get_ipython()
    if shell is not None:
        shell.run_line_magic("matplotlib", "inline")


def temp_run_folder(prefix: str = "finrl_tutorial_") -> Path:
    """A fresh folder for a chapter's training runs (never one the reader already has)."""
    return Path(tempfile.mkdtemp(prefix=prefix))


def record_path(name: str) -> Path:
    """The committed record ``name`` (e.g. ``"bench_env.jsonl"``): from the installed package
    (``finrl_tutorial.records``) or, in a checkout, from ``book/data/``."""
    candidates = []
    try:
        candidates.append(Path(str(importlib.resources.files("finrl_tutorial.records") / name)))
    except ModuleNotFoundError:  # an editable install or a checkout on sys.path: no records package
        pass
    candidates.append(Path(__file__).resolve().parent.parent / "book" / "data" / name)
    for path in candidates:
        if path.is_file():
            return path
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
    try:
        # a Traversable: records has no __init__.py, so this may be a MultiplexedPath, whose str() is no path
        entries = list(importlib.resources.files("finrl_tutorial.records").iterdir())
    except ModuleNotFoundError:  # an editable install or a checkout on sys.path: no records package
        folder = Path(__file__).resolve().parent.parent / "book" / "data"
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
    longest = max((len(run) for run in source.split("\n") for run in _backtick_runs(run)), default=0)
    fence = "`" * max(3, longest + 1)
    text = f"{fence}python\n{source.rstrip()}\n{fence}"
    try:
        from IPython.display import Markdown
    except ImportError:
        return text
    return Markdown(text)


def _backtick_runs(line: str) -> list[str]:
    runs, current = [], ""
    for char in line:
        if char == "`":
            current += char
        elif current:
            runs.append(current)
            current = ""
    return runs + ([current] if current else [])


def measured_box(this_run: dict, committed: dict, shows: str, does_not_show: str, title: str = "What this chapter measured"):
    """The box at the end of a chapter: this run's numbers, the committed full-size numbers (each
    naming its record), and what they do and do not show. Returns an IPython Markdown object
    (displayed by the cell), or the Markdown text outside IPython."""
    lines = [f"**{title}**", "", "| | |", "| --- | --- |"]
    lines += [f"| this run: {name} | {value} |" for name, value in this_run.items()]
    lines += [f"| full size (committed): {name} | {value} |" for name, value in committed.items()]
    lines += ["", f"*Shows:* {shows}", "", f"*Does not show:* {does_not_show}"]
    text = "\n".join(lines)
    try:
        from IPython.display import Markdown
    except ImportError:
        return text
    return Markdown(text)
