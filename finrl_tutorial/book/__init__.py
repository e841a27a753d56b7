"""The book room: what the chapters share, and every reading of a stored record.

A chapter starts with ``import finrl_tutorial as ft`` and ``ft.book.setup_chapter()`` instead of
repeating the same preamble; ``ft.book.FAST`` says whether it runs its small versions. The bench
(`finrl_tutorial.bench`) measures and writes records; this room turns them into tables, sentences,
captions and figures: `report` (chapters 4-8: env throughput, the loop's cost, GPU,
peers, the recorded full-size run), `scale` (chapters 4, 5, 8: speed-ups, the cost model),
`sweep` (chapters 2 and 7) and `teaching` (chapters 1-3: the yardsticks, like-with-like
comparisons, a record's command as a reader runs it). On top of these, one module per chapter holds
what that chapter shows, so its visible cells stay short: `demo` (chapter 1), `learning` (1.9-1.12,
2 and 7), `teaching_ppo` (3), `workers` (4), `learners` (5), `batched` (6) and `benchmarks` (8);
`folded` is the closed "How this was measured" block they share; `synthetic` holds the reference page
"The synthetic markets" (the generator's numbers and what a planted edge is worth). The stored records under the
repository's ``book/data/`` ship inside the package as ``finrl_tutorial.records``, so a chapter run alone (Colab: the notebook in
an empty folder, the package installed from the repository) finds them with :func:`record_path`.
"""
from __future__ import annotations

import fnmatch
import importlib.resources
import inspect
import itertools
import json
import re
import tempfile
import warnings
from pathlib import Path

import torch

from ..errors import InputError, show_data_warnings_in_one_line
from ..provenance import fast_mode
from . import report, scale, sweep
from . import batched, benchmarks, demo, folded, learners, learning, teaching_ppo, workers  # a module per chapter
from . import teaching  # chapters 1-3: like-with-like comparisons, Holm, distance from the untrained agent
from . import synthetic  # the reference page "The synthetic markets": the generator's numbers, what an edge is worth
from .cli import cli_command, run_cli
from .folded import markdown as _markdown
# The readings of stored records, one import away for the chapters (``ft.book.describe(record)``).
from .report import env_throughput_table, loop_cost_lines, peer_summary, peer_table, provenance, rollout_share_table
from .scale import (CostModel, fit_cost_model, fit_per_call, model_check, phase_table, plot_projection,
                    plot_speedups, project, speed_verdict, speedup_text, speedups)
from .sweep import MEASURE_NAMES, describe, summary_table, sweep_caption
from .teaching import reader_command

FAST = fast_mode()
"""True in CI (``FINRL_TUTORIAL_FAST=1``): chapters run small versions of their experiments."""


def setup_chapter(threads: int = 1) -> None:
    """One torch thread (on a small CPU a second thread slows small networks down), plots inline,
    data warnings on one line (as the command line shows them, without the package's file
    paths), and no ipywidgets warning from tqdm."""
    torch.set_num_threads(threads)
    show_data_warnings_in_one_line()
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
    """Where the stored records are: the installed package ``finrl_tutorial.records`` or, in a
    checkout (an editable install, or the repository on sys.path: no records package), ``book/data/``.
    A Traversable: without an ``__init__.py`` the package may be a MultiplexedPath, whose str() is no path."""
    try:
        return importlib.resources.files("finrl_tutorial.records")
    except ModuleNotFoundError:
        return Path(__file__).resolve().parents[2] / "book" / "data"


def record_path(name: str) -> Path:
    """The stored record ``name`` (e.g. ``"bench_env.jsonl"``): from the installed package
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
    """Names of the stored records matching ``pattern`` (e.g. ``"gpu*.json"``), sorted."""
    folder = _records_folder()
    entries = list(folder.iterdir()) if folder.is_dir() else []
    return sorted(entry.name for entry in entries if entry.is_file() and fnmatch.fnmatch(entry.name, pattern))


def show_source(obj, lines: tuple[int, int] | None = None, until: str | None = None):
    """The installed source of ``obj`` (a function, class or module) as a listing: what runs is what
    the reader sees, in the built book and in Jupyter or Colab alike. ``lines=(first, last)`` keeps
    those lines of the object's source (1-based, inclusive); ``until`` keeps the lines before the
    first that contains it (e.g. ``"def __post_init__"``: a config's fields without its checks).
    Returns an IPython ``Markdown`` object holding a fenced Python block (highlighted by Jupyter and
    by the book alike), or the fenced text outside IPython."""
    source = inspect.getsource(obj)
    if until is not None:
        kept = list(itertools.takewhile(lambda line: until not in line, source.splitlines()))
        if len(kept) == len(source.splitlines()):
            raise InputError(f"{until!r} is not in the source of {getattr(obj, '__qualname__', obj)}")
        source = "\n".join(kept).rstrip() + "\n"
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


class MeasuredBox:
    """What :func:`measured_box` returns: an HTML box (a note admonition holding a two-column table)
    that Jupyter, Colab and the built book all render the same way. The book's renderer of Markdown
    outputs is plain CommonMark, which has no tables, so the box is HTML; ``str(box)`` is the same
    box as Markdown text, for a terminal."""

    def __init__(self, title: str, this_run: dict, recorded: dict, shows: str, does_not_show: str,
                 fast: bool = False):
        self.title, self.shows, self.does_not_show = title, shows, does_not_show
        # a fast-mode run trains on a small fraction of the budget: the label says so once, in the box
        run = "this run (live, fast mode: small budgets)" if fast else "this run (live)"
        self.rows = [(run, str(name), str(value)) for name, value in this_run.items()]
        self.rows += [("full size (record)", str(name), str(value)) for name, value in recorded.items()]

    def _repr_html_(self) -> str:
        from html import escape
        body = []
        for group in dict.fromkeys(group for group, _, _ in self.rows):
            body.append(f'<tr><th colspan="2">{escape(group[0].upper() + group[1:])}</th></tr>')
            body += [f"<tr><td>{escape(name)}</td><td>{escape(value)}</td></tr>"
                     for g, name, value in self.rows if g == group]
        return ('<div class="admonition note measured-box">'
                f'<p class="admonition-title">{escape(self.title)}</p>'
                '<table class="table measured-box-table"><tbody>' + "".join(body) + "</tbody></table>"
                f"<p><em>Shows:</em> {escape(self.shows)}</p>"
                f"<p><em>Does not show:</em> {escape(self.does_not_show)}</p></div>")

    def __str__(self) -> str:
        lines = [self.title, ""] + [f"- {group}: {name}: {value}" for group, name, value in self.rows]
        return "\n".join(lines + ["", f"Shows: {self.shows}", "", f"Does not show: {self.does_not_show}"])

    __repr__ = __str__


def measured_box(this_run: dict, recorded: dict, shows: str, does_not_show: str,
                 title: str = "What this chapter measured", fast: bool | None = None) -> MeasuredBox:
    """The box at the end of a chapter: this run's numbers, the recorded full-size numbers (each
    naming its record), and what they do and do not show; ``fast`` (default: `FAST`) labels this
    run's numbers as a small-budget (fast-mode) run's. Returns a :class:`MeasuredBox`, which a
    cell displays as an HTML table inside a note (in Jupyter, Colab and the built book alike) and
    ``print`` shows as text."""
    return MeasuredBox(title, this_run, recorded, shows, does_not_show, FAST if fast is None else fast)
