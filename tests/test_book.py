"""The book: sources in the repository, and the HTML that `jupyter-book build .` makes of them.

(a) Sources, always: every chapter in ``_toc.yml`` exists, carries no saved outputs, starts with a
    hidden (``remove-cell``) cell that installs the package in Colab from the repository URL of
    ``_config.yml``, imports the package once (``import finrl_tutorial as ft``), honours fast mode
    (``ft.book.FAST``) and pins torch to one thread (``ft.book.setup_chapter()``).
    Chapters run as Colab runs them: no ``Path("data/…")``, no ``../tests``, no ``sys.path`` edits;
    every record a chapter cites (``record_path("…")``/``read_records("…")``) exists under
    ``book/data`` and carries its date, machine and command; the glossary is in the table of contents
    with an anchor for every term the book links to. The reference pages (``REFERENCE``, notebooks
    without a chapter number, between the chapters and the glossary) are held to the same rules,
    goals, summary and exercises included; figure numbering and the closing box are the chapters'.
(b) The built HTML, when ``_build/html`` exists (CI builds the book before the tests): a page per
    chapter, at least one image on each, a Colab launch link, MathJax served from the book itself,
    no page that loads a script (or a stylesheet) from another host (the book works offline), no
    visible code cell that is only asserts (check cells are tagged ``remove-cell``), and the glossary
    page with its anchors.
(c) A book that teaches, on the built HTML: every chapter has its goals, a summary and 3-5 exercises
    (hints and solutions folded away); every code cell that draws a figure shows it on the page; no
    page speaks of how the project is made; every multiplier ("N×") in the prose names its baseline.
(d) The small statistics the first chapters teach with (``finrl_tutorial.book.teaching``).

The chapters themselves run as tests in ``tests/test_colab.py`` (each alone, against the installed wheel).
"""
from __future__ import annotations

import ast
import html
import json
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

yaml = pytest.importorskip("yaml")  # PyYAML comes with jupyter-book (requirements.txt)
from book_toc import toc_files  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
HTML = ROOT / "_build" / "html"
CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
TOC = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))


PAGES = toc_files(TOC)  # without the root page (book/intro)
CHAPTERS = [entry for entry in PAGES if re.match(r"book/\d\d_", entry)]  # the numbered notebooks
#: Reference pages: notebooks without a chapter number, after the chapters and before the glossary.
REFERENCE = ["book/synthetic_markets", "book/plain_learner", "book/selection_and_overfitting"]
#: Every notebook page: each is held to the chapter rules (sources, goals, summary, exercises); the
#: figure numbering and the closing box stay the numbered chapters'.
NOTEBOOKS = CHAPTERS + REFERENCE
GLOSSARY = ROOT / "book" / "glossary.md"
#: Terms every chapter may link to as ``glossary.md#<anchor>`` (book_common rule 6).
GLOSSARY_TERMS = ("sharpe", "sortino", "calmar", "daily-turnover", "approximate-kl", "clip-fraction", "rank",
                  "all-reduce", "env-step", "episode-days-vs-horizon-length", "excess-return", "oracle-capture",
                  "survivorship-bias", "non-overlap-rule-and-holm-correction",
                  "block-bootstrap-and-confidence-interval", "tie", "inconclusive", "walk-forward",
                  "information-coefficient-ic", "signal-rule", "informed-oracle", "deflated-sharpe-ratio", "probability-of-backtest-overfitting-pbo",
                  "policy-value-and-advantage", "truncation-and-termination", "record", "a-share-trading-terms",
                  "batched-env-and-vmap-env", "subprocess-vecenv", "break-even-size", "kernel-launch-and-cuda-graph",
                  "worker-and-shard", "shared-memory", "dataparallel-and-distributeddataparallel-ddp", "gloo-and-nccl",
                  "torch-thread-and-oversubscription", "serial-fraction-and-overhead-share", "cost-model-and-projection",
                  "interleaved-rounds")
#: The machine() keys a JSON-lines record carries at its top level (or inside a ``machine`` dict).
MACHINE_KEYS = ("cpu_count", "platform", "torch")
REPO_URL = CONFIG["repository"]["url"].rstrip("/")


def _notebook(entry: str) -> dict:
    return json.loads((ROOT / f"{entry}.ipynb").read_text(encoding="utf-8"))


def _code_cells(entry: str) -> list[dict]:
    return [cell for cell in _notebook(entry)["cells"] if cell["cell_type"] == "code"]


def _source(cell: dict) -> str:
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


# --------------------------------------------------------------------------- (a) the sources

def test_config_sets_up_an_executed_offline_book_with_colab():
    assert CONFIG["author"] == "finrl_tutorial contributors"
    assert CONFIG["only_build_toc_files"] is True
    execute = CONFIG["execute"]
    assert execute["execute_notebooks"] == "force" and execute["allow_errors"] is False
    assert execute["timeout"] >= 600
    for excluded in ("_build", "runs", "tests", ".ci", "finrl_tutorial"):
        assert excluded in CONFIG["exclude_patterns"]
    assert REPO_URL == "https://github.com/finrl-tutorial/finrl_tutorial"
    assert CONFIG["repository"]["branch"] == "main"
    assert CONFIG["launch_buttons"]["colab_url"] == "https://colab.research.google.com"
    assert CONFIG["html"]["use_repository_button"] is True
    mathjax = CONFIG["sphinx"]["config"]["mathjax_path"]
    assert not mathjax.startswith(("http:", "https:", "//")), "MathJax must be vendored, not loaded from a CDN"
    static = [ROOT / path for path in CONFIG["sphinx"]["config"]["html_static_path"]]
    assert any((folder / mathjax).is_file() for folder in static), f"{mathjax} is not in {static}"
    assert any((folder / "mathjax/output/chtml/fonts/woff-v2/MathJax_Main-Regular.woff").is_file() for folder in static)


def test_toc_lists_the_intro_and_the_chapters_in_course_order_then_the_glossary():
    assert TOC["format"] == "jb-book" and TOC["root"] == "book/intro"
    assert (ROOT / "book" / "intro.md").is_file()
    assert len(CHAPTERS) >= 8
    numbers = [int(re.match(r"book/(\d\d)_", entry).group(1)) for entry in CHAPTERS]
    assert numbers == sorted(numbers)
    # one top-level entry per chapter number; a chapter's further pages are its sections, with its number
    top = [chapter["file"] for part in TOC["parts"] for chapter in part["chapters"] if re.match(r"book/\d\d_", chapter["file"])]
    top_numbers = [int(re.match(r"book/(\d\d)_", entry).group(1)) for entry in top]
    assert len(set(top_numbers)) == len(top_numbers), f"two chapters share a number: {top}"
    for part in TOC["parts"]:
        for chapter in part["chapters"]:
            for section in chapter.get("sections", []) or []:
                assert section["file"][:8] == chapter["file"][:8], f"{section['file']} is a page of {chapter['file']}"
    assert PAGES[-1] == "book/glossary" and GLOSSARY.is_file(), "the glossary is the last page of the book"
    assert set(PAGES) == set(CHAPTERS) | set(REFERENCE) | {"book/glossary"}, \
        f"pages that are neither chapter, reference page nor glossary: {PAGES}"
    assert PAGES[-1 - len(REFERENCE):-1] == REFERENCE, "the reference pages come after the chapters, before the glossary"


def _slug(heading: str) -> str:
    """The anchor MyST gives a heading (``myst_heading_anchors``): lowercase, punctuation dropped,
    spaces as hyphens."""
    return re.sub(r"\s+", "-", re.sub(r"[^\w\s-]", "", heading.strip().lower()))


def _glossary_anchors() -> set[str]:
    return {_slug(line.lstrip("#")) for line in GLOSSARY.read_text(encoding="utf-8").splitlines()
            if re.match(r"^#{2,3} ", line)}


def test_glossary_defines_every_term_the_book_links_to():
    assert CONFIG["sphinx"]["config"].get("myst_heading_anchors", 0) >= 2, "headings must be link targets"
    anchors = _glossary_anchors()
    assert set(GLOSSARY_TERMS) <= anchors, f"glossary lacks {sorted(set(GLOSSARY_TERMS) - anchors)}"
    text = GLOSSARY.read_text(encoding="utf-8")
    assert "risk-free rate of 0" in text and "252 trading days" in text, "the ratios' conventions are stated"
    linked = {}
    for entry in ["book/intro.md", *[f"{page}.md" if page == "book/glossary" else f"{page}.ipynb" for page in PAGES]]:
        source = (ROOT / entry).read_text(encoding="utf-8")
        for anchor in re.findall(r"glossary(?:\.md)?#([\w-]+)", source):
            linked.setdefault(anchor, []).append(entry)
        for anchor in re.findall(r"\]\(#([\w-]+)\)", source) if entry.endswith("glossary.md") else []:
            linked.setdefault(anchor, []).append(entry)
    broken = {anchor: pages for anchor, pages in linked.items() if anchor not in anchors}
    assert not broken, f"links to glossary anchors that do not exist: {broken}"


@pytest.mark.parametrize("entry", NOTEBOOKS)
def test_chapter_exists_as_a_notebook(entry):
    assert (ROOT / f"{entry}.ipynb").is_file(), f"{entry}.ipynb is in _toc.yml but not in the repository"


@pytest.mark.parametrize("entry", NOTEBOOKS)
def test_chapter_has_no_saved_outputs(entry):
    dirty = [i for i, cell in enumerate(_notebook(entry)["cells"])
             if cell["cell_type"] == "code" and (cell.get("outputs") or cell.get("execution_count") is not None)]
    assert not dirty, (f"{entry}.ipynb has saved outputs in code cells {dirty}: clear them "
                       "(jupyter nbconvert --clear-output --inplace)")


@pytest.mark.parametrize("entry", NOTEBOOKS)
def test_no_markdown_line_starts_with_a_percent_sign(entry):
    """MyST reads a line that starts with ``%`` as a comment and drops it from the page: a wrapped
    sentence that puts "% of ..." at the start of a line loses its words silently."""
    dropped = [(i, line) for i, cell in enumerate(_notebook(entry)["cells"]) if cell["cell_type"] == "markdown"
               for line in "".join(cell["source"]).splitlines() if line.lstrip().startswith("%")]
    assert not dropped, f"{entry}.ipynb: markdown lines MyST would drop as comments: {dropped}"


VISIBLE_CELL_LINES = 30
"""The longest code cell a reader scrolls past: longer work (prose from a record, a busy figure) is a
function in the book room that the chapter calls."""

HIDDEN_INPUT_TAGS = {"remove-cell", "remove-input", "hide-input", "hide-cell"}


@pytest.mark.parametrize("entry", NOTEBOOKS)
def test_every_visible_code_cell_is_short_enough_to_read(entry):
    long_cells = [(i, lines) for i, cell in enumerate(_notebook(entry)["cells"])
                  if cell["cell_type"] == "code"
                  and not HIDDEN_INPUT_TAGS & set(cell.get("metadata", {}).get("tags", []))
                  for lines in [len("".join(cell["source"]).strip().splitlines())]
                  if lines > VISIBLE_CELL_LINES]
    assert not long_cells, (f"{entry}.ipynb: visible code cells longer than {VISIBLE_CELL_LINES} lines "
                            f"(cell index, lines): {long_cells}; move the work into finrl_tutorial/book/")


@pytest.mark.parametrize("entry", NOTEBOOKS)
def test_chapter_starts_with_a_hidden_colab_install_of_the_configured_repository(entry):
    first = _code_cells(entry)[0]
    source = _source(first)
    assert "remove-cell" in first.get("metadata", {}).get("tags", []), "the install cell must be tagged remove-cell"
    assert '"google.colab" in sys.modules' in source, "install only inside Colab"
    urls = re.findall(r"git\+(https://\S+?)[\"'\s]", source + "\n")
    assert urls == [REPO_URL], f"install URL {urls} differs from _config.yml repository.url {REPO_URL}"


def _tags(cell: dict) -> list[str]:
    return cell.get("metadata", {}).get("tags", [])


@pytest.mark.parametrize("entry", NOTEBOOKS)
def test_chapter_imports_the_package_once_and_sets_up_in_fast_mode_with_one_thread(entry):
    """One import, as d2l does: ``import finrl_tutorial as ft`` reaches every room (``ft.book``,
    ``ft.bench``, ``ft.agents``, ...), ``ft.book.setup_chapter()`` pins torch to one thread and
    ``ft.book.FAST`` picks the small versions; no ``from finrl_tutorial... import`` line, no second
    import of the package or of one of its modules."""
    code = "\n".join(_source(cell) for cell in _code_cells(entry)[1:])
    imports = re.findall(r"^\s*(?:from\s+finrl_tutorial\b[\w.]*\s+import\b.*|import\s+finrl_tutorial\b.*)$", code, re.M)
    assert [line.strip() for line in imports] == ["import finrl_tutorial as ft"], \
        f"{entry}: the package is imported once, as `import finrl_tutorial as ft`; found {imports}"
    assert re.search(r"^ft\.book\.setup_chapter\(", code, re.M), "the preamble calls ft.book.setup_chapter()"
    assert "ft.book.FAST" in code, "a chapter honours fast mode through ft.book.FAST"
    checks = [cell for cell in _code_cells(entry) if re.search(r"^\s*assert ", _source(cell), re.M)]
    assert checks, "a chapter asserts its key results"
    assert all("remove-cell" in _tags(cell) for cell in checks if _asserts(_source(cell))[1]), \
        "cells that are only asserts are the chapter's checks: tag them remove-cell"


@pytest.mark.parametrize("entry", NOTEBOOKS)
def test_chapter_runs_alone_as_in_colab(entry):
    """Nothing that needs the repository around the notebook: records through finrl_tutorial.book,
    no test helpers, no sys.path edits, no module inside a room."""
    code = "\n".join(_source(cell) for cell in _code_cells(entry))
    offences = {
        "reads data/ next to the notebook (use finrl_tutorial.book.record_path)": r"Path\(\s*[\"']data\b|[\"']data/",
        "reaches into the repository (../)": r"[\"']\.\./",
        "edits sys.path": r"sys\.path\.(insert|append)",
        "imports a module inside a room (import from the room's package)":
            r"^\s*(from|import) finrl_tutorial\.(agents|envs|training|bench|data|backtest)\.\w+",
    }
    found = [why for why, pattern in offences.items() if re.search(pattern, code, re.M)]
    assert not found, f"{entry}: {found}"


def _cited_records(entry: str) -> set[str]:
    """The records a chapter names (``record_path("…")``, ``read_records("…")``) and those its
    ``record_names("pattern")`` calls find under book/data."""
    code = "\n".join(_source(cell) for cell in _code_cells(entry))
    names = set(re.findall(r"(?:record_path|read_records)\(\s*[\"']([^\"'*?{}]+)[\"']", code))
    for pattern in re.findall(r"record_names\(\s*[\"']([^\"']+)[\"']", code):
        names |= {path.name for path in (ROOT / "book" / "data").glob(pattern) if path.is_file()}
    return names


def _record_problems(record: dict) -> list[str]:
    problems = []
    machine = record.get("machine") if isinstance(record.get("machine"), dict) else record
    if not (record.get("date") or machine.get("date")):
        problems.append("no date")
    if not all(key in machine for key in MACHINE_KEYS):
        problems.append(f"no machine ({', '.join(MACHINE_KEYS)})")
    if not (isinstance(record.get("command"), str) and record["command"].strip()):
        problems.append("no command")
    return problems


CITED = sorted({(entry, name) for entry in NOTEBOOKS for name in _cited_records(entry)})


@pytest.mark.parametrize("entry,name", CITED, ids=[f"{Path(e).name}:{n}" for e, n in CITED])
def test_every_record_a_chapter_cites_is_committed_with_date_machine_and_command(entry, name):
    path = ROOT / "book" / "data" / name
    assert path.is_file(), f"{entry} cites {name}, which is not recorded under book/data"
    text = path.read_text(encoding="utf-8")
    if name.endswith(".jsonl"):
        records = [json.loads(line) for line in text.splitlines() if line.strip()]
    elif name.endswith(".json"):
        document = json.loads(text)  # a list of records (bench gpu --out) or one report
        records = document if isinstance(document, list) else [document]
    else:
        return  # a figure: its record is cited by name next to it
    assert records, f"{name} is empty"
    problems = {i: p for i, record in enumerate(records) for p in [_record_problems(record)] if p}
    assert not problems, f"{name}: records without what made them (line: problems): {problems}"


# --------------------------------------------------------------------------- (b) the built HTML

needs_build = pytest.mark.skipif(not (HTML / "index.html").is_file(),
                                 reason="no built book at _build/html: run `jupyter-book build .` first "
                                        "(CI builds it before the tests)")

_EXTERNAL_SCRIPT = re.compile(r"<script\b[^>]*\bsrc\s*=\s*[\"']?\s*(?:https?:)?//([^/\"'\s>]+)", re.I)
_EXTERNAL_STYLESHEET = re.compile(r"<link\b(?=[^>]*\brel\s*=\s*[\"']?stylesheet)[^>]*\bhref\s*=\s*[\"']?\s*"
                                  r"(?:https?:)?//([^/\"'\s>]+)", re.I)
_IMAGE = re.compile(r"<img\b[^>]*\bsrc\s*=\s*[\"']([^\"']+\.(?:png|svg)|data:image/[^\"']+)[\"']", re.I)


def _page(entry: str) -> str:
    return (HTML / f"{entry}.html").read_text(encoding="utf-8")


@needs_build
@pytest.mark.parametrize("entry", CHAPTERS)
def test_built_book_has_a_page_with_a_figure_for_every_chapter(entry):
    page = HTML / f"{entry}.html"
    assert page.is_file(), f"no page {page.relative_to(ROOT)} for the chapter {entry}"
    images = _IMAGE.findall(_page(entry))
    assert images, f"{entry}: no <img> with a png/svg or inline image on the page"
    for src in images:
        if not src.startswith("data:"):
            assert (page.parent / src).resolve().is_file(), f"{entry}: image {src} is missing from the build"


@needs_build
@pytest.mark.parametrize("entry", NOTEBOOKS)
def test_built_chapter_pages_link_to_colab(entry):
    name = Path(entry).name
    links = re.findall(r"href=\"(https://colab\.research\.google\.com/[^\"]+)\"", _page(entry))
    assert links, f"{entry}: no Colab launch link"
    assert any(link.startswith(f"https://colab.research.google.com/github/{REPO_URL.split('github.com/')[1]}/blob/"
                               f"{CONFIG['repository']['branch']}/") and link.endswith(f"{name}.ipynb")
               for link in links), links


@needs_build
def test_no_built_page_loads_scripts_or_stylesheets_from_another_host():
    pages = sorted(HTML.rglob("*.html"))
    assert pages
    offenders = {str(page.relative_to(HTML)): sorted(set(_EXTERNAL_SCRIPT.findall(text) + _EXTERNAL_STYLESHEET.findall(text)))
                 for page in pages for text in [page.read_text(encoding="utf-8")]}
    offenders = {page: hosts for page, hosts in offenders.items() if hosts}
    assert not offenders, f"pages that need the network: {offenders}"


@needs_build
def test_equations_render_with_the_vendored_mathjax():
    with_math = [entry for entry in CHAPTERS if 'class="math' in _page(entry)]
    assert with_math, "no chapter shows an equation: then MathJax need not be vendored at all"
    for entry in with_math:
        scripts = re.findall(r"<script\b[^>]*\bsrc=\"([^\"]*mathjax[^\"]*)\"", _page(entry), re.I)
        assert scripts and all(not s.startswith(("http", "//")) for s in scripts), (entry, scripts)
        assert all((HTML / entry).parent.joinpath(s.split("?")[0]).resolve().is_file() for s in scripts), scripts
    assert (HTML / "_static/mathjax/output/chtml/fonts/woff-v2/MathJax_Main-Regular.woff").is_file()


_CELL_INPUT = re.compile(r"<div class=\"cell_input[^\"]*\">.*?<pre>(.*?)</pre>", re.S)


def _visible_code(entry: str) -> list[str]:
    """The source of every code cell whose input the built page shows."""
    return [html.unescape(re.sub(r"<[^>]+>", "", block)) for block in _CELL_INPUT.findall(_page(entry))]


def _asserts(code: str) -> tuple[int, bool]:
    """(assert statements anywhere, whether the top level is asserts only) of a cell's code; magics
    and shell lines are left out."""
    lines = [line for line in code.splitlines() if not line.lstrip().startswith(("%", "!"))]
    try:
        tree = ast.parse("\n".join(lines))
    except SyntaxError:
        return 0, False
    count = sum(isinstance(node, ast.Assert) for node in ast.walk(tree))
    return count, bool(tree.body) and all(isinstance(node, ast.Assert) for node in tree.body)


@needs_build
@pytest.mark.parametrize("entry", NOTEBOOKS)
def test_no_visible_code_cell_is_a_wall_of_asserts(entry):
    """Check cells are the chapter's tests, tagged remove-cell: a visible cell keeps at most one assert
    line, and never consists of asserts only."""
    cells = _visible_code(entry)
    assert cells, f"{entry}: no code cell on the page"
    offenders = [code.strip().splitlines()[0][:80] for code in cells
                 for count, only in [_asserts(code)] if only or count > 1]
    assert not offenders, f"{entry}: visible cells that are (mostly) asserts; tag them remove-cell: {offenders}"


@needs_build
def test_built_book_has_the_glossary_with_its_anchors_in_the_navigation():
    page = HTML / "book" / "glossary.html"
    assert page.is_file(), "no glossary page in the build"
    ids = set(re.findall(r"<section[^>]*\bid=\"([^\"]+)\"", page.read_text(encoding="utf-8")))
    assert set(GLOSSARY_TERMS) <= ids, f"glossary anchors missing from the page: {sorted(set(GLOSSARY_TERMS) - ids)}"
    assert re.search(r"href=\"[^\"]*glossary\.html\"", (HTML / "book" / "intro.html").read_text(encoding="utf-8")), \
        "the glossary is not in the navigation"
    for entry in CHAPTERS:
        for anchor in re.findall(r"href=\"glossary\.html#([\w-]+)\"", _page(entry)):
            assert anchor in ids, f"{entry} links to glossary#{anchor}, which the page lacks"


def _visible_text(entry: str) -> str:
    """The text a reader sees in the page's article: prose, inline code and every cell's output,
    without the source of code cells and of code listings (which may hold any characters)."""
    bs4 = pytest.importorskip("bs4")
    soup = bs4.BeautifulSoup(_page(entry), "html.parser")
    article = soup.find("article") or soup.body
    for tag in article.find_all(["script", "style"]):
        tag.decompose()
    for tag in article.select("div.cell_input"):
        tag.decompose()
    listing = lambda classes: bool(classes) and "output" not in classes and any(  # noqa: E731
        name.startswith("highlight-") for name in classes)
    for tag in article.find_all("div", class_=lambda c: listing((c or "").split())):
        tag.decompose()
    return article.get_text()


#: A Markdown table row that reached the page as text: "| |", "| --- |", "| — |" (smart dashes).
_RAW_TABLE_ROW = re.compile(r"\|[ \t]*[-—–:]*[ \t]*\|")


@needs_build
@pytest.mark.parametrize("entry", [TOC["root"], *PAGES])
def test_no_built_page_shows_markdown_source_as_text(entry):
    """Markdown the renderer left alone shows its source: a table's rows ("| | |", "| — | — |": the
    book's renderer of cell outputs knows no tables) or a link's "[text](target)"."""
    text = _visible_text(entry)
    rows = [text[max(0, m.start() - 40):m.end() + 40] for m in _RAW_TABLE_ROW.finditer(text)]
    links = [text[max(0, m.start() - 40):m.end() + 40] for m in re.finditer(r"\]\(", text)]
    assert not rows, f"{entry}: raw Markdown table rows on the page: {rows[:3]}"
    assert not links, f"{entry}: link source shown as text: {links[:3]}"


@needs_build
@pytest.mark.parametrize("entry", CHAPTERS)
def test_built_chapter_shows_its_measured_box_as_a_table(entry):
    bs4 = pytest.importorskip("bs4")
    boxes = bs4.BeautifulSoup(_page(entry), "html.parser").select("div.measured-box")
    assert boxes, f"{entry}: no 'What this chapter measured' box (ft.book.measured_box) on the page"
    for box in boxes:
        assert box.find("table") is not None and len(box.find_all("td")) >= 2, f"{entry}: the box has no table"


def test_measured_box_displays_as_an_html_table():
    """The box a chapter ends with is HTML (Jupyter, Colab and the book render it alike), one table
    row per measurement under its group, text escaped; ``str`` gives the same content as text."""
    from IPython.core.formatters import DisplayFormatter

    import finrl_tutorial as ft

    box = ft.book.measured_box({"live <run>": "1.5× & more"}, {"bench_x.json": "2026-01-01"}, "what it shows",
                               "what it does not", fast=False)
    shown = DisplayFormatter().format(box)[0]
    assert "text/html" in shown and "text/markdown" not in shown, sorted(shown)
    page = shown["text/html"]
    assert page.count("<table") == 1 and "| |" not in page and "---" not in page
    assert "<td>live &lt;run&gt;</td><td>1.5× &amp; more</td>" in page and "<td>bench_x.json</td>" in page
    assert page.index(">This run (live)<") < page.index("live &lt;run&gt;") < page.index(">Full size (record)<")
    assert "<em>Shows:</em> what it shows" in page and "<em>Does not show:</em> what it does not" in page
    assert all(part in str(box) for part in ("live <run>: 1.5× & more", "bench_x.json: 2026-01-01", "what it shows"))
    # in fast mode (a small budget) this run's numbers are labelled as a fast-mode run's, once, in the box
    fast = ft.book.measured_box({"live": "1"}, {"bench_x.json": "2"}, "shows", "does not", fast=True)._repr_html_()
    assert ">This run (live, fast mode: small budgets)<" in fast
    assert (ft.book.measured_box({"a": "1"}, {}, "s", "d").rows[0][0] != "this run (live)") == ft.book.FAST


# --------------------------------------------------------------------------- (c) a book that teaches
#
# Every chapter has the shape of a textbook chapter (d2l.ai, Spinning Up): what the reader will be
# able to do, the chapter, a summary, exercises; every figure it draws reaches the page; it speaks of
# the project and nothing else; and every "N×" it claims names what it is N times.

#: Headings of the goals section at the top of a chapter (before its first numbered section).
GOALS_HEADING = re.compile(r"^(what you will (learn|be able to do)|learning goals|goals)\b", re.I)


def _article(entry: str):
    """The page's article (the chapter itself, without the theme's navigation)."""
    bs4 = pytest.importorskip("bs4")  # BeautifulSoup comes with the book's theme (pydata-sphinx-theme)
    soup = bs4.BeautifulSoup(_page(entry), "html.parser")
    article = soup.find("article") or soup.body
    for tag in article.find_all(["script", "style"]):
        tag.decompose()
    return article


def _heading_text(tag) -> str:
    return re.sub(r"\s+", " ", tag.get_text(" ", strip=True).replace("#", "")).strip()


def _sections(article, level: str = "h2") -> list[tuple[str, object]]:
    """(heading text, section element) of every section whose heading is ``level``, in page order."""
    return [(_heading_text(section.find(level)), section) for section in article.find_all("section")
            if section.find(level, recursive=False) is not None]


def _top_level_items(section) -> list:
    """Items of the numbered lists of a section that are not nested in another list or an
    admonition (an exercise's hint may hold a list of its own)."""
    items = []
    for ordered in section.find_all("ol"):
        if ordered.find_parent(["li", "ol", "ul"]) is not None:
            continue
        if any("admonition" in (parent.get("class") or []) or parent.name == "details" for parent in ordered.parents):
            continue
        items += ordered.find_all("li", recursive=False)
    return items


@needs_build
@pytest.mark.parametrize("entry", NOTEBOOKS)
def test_built_chapter_has_goals_a_summary_and_three_to_five_exercises(entry):
    """A goals section ("What you will learn", a list of at least two things) before the first
    numbered section; a "Summary" section; an "Exercises" section whose numbered list holds 3-5
    exercises; hints and solutions in it are hidden (MyST dropdown admonitions, closed HTML
    ``<details>``, or code cells tagged hide-input or hide-cell), so a reader tries first."""
    sections = _sections(_article(entry))
    titles = [title for title, _ in sections]
    goals = [i for i, title in enumerate(titles) if GOALS_HEADING.match(title)]
    numbered = [i for i, title in enumerate(titles) if re.match(r"^\d+\.\d+", title)]
    assert goals, f"{entry}: no goals section ('What you will learn') among {titles}"
    assert not numbered or goals[0] < numbered[0], f"{entry}: the goals come before section {titles[numbered[0]]}"
    goal_items = sections[goals[0]][1].find_all("li")
    assert len(goal_items) >= 2, f"{entry}: the goals section lists {len(goal_items)} goal(s)"
    summary = [section for title, section in sections if title.lower() == "summary"]
    assert summary and summary[0].get_text(" ", strip=True).lower() != "summary", f"{entry}: no Summary section"
    exercises = [section for title, section in sections if title.lower() == "exercises"]
    assert exercises, f"{entry}: no Exercises section among {titles}"
    count = len(_top_level_items(exercises[0]))
    assert 3 <= count <= 5, f"{entry}: {count} exercises (a numbered list of 3-5 in the Exercises section)"
    for admonition in exercises[0].find_all(class_="admonition"):
        title = admonition.find(class_="admonition-title")
        if title is not None and re.match(r"(hint|solution|answer)", title.get_text(strip=True), re.I):
            assert "dropdown" in admonition.get("class", []), \
                f"{entry}: the exercise's '{title.get_text(strip=True)}' is shown open: give it `:class: dropdown`"
    for folded in exercises[0].find_all("details"):  # an HTML <details> hint is closed unless it says `open`
        summary_text = folded.find("summary").get_text(strip=True) if folded.find("summary") else ""
        if re.match(r"(hint|solution|answer)", summary_text, re.I):
            assert not folded.has_attr("open"), f"{entry}: the exercise's '{summary_text}' is shown open"


#: A code cell makes a figure when its code (comments left out) creates one through pyplot, draws
#: with a pandas/matplotlib ``.plot``/``.barh``/``.pcolormesh`` call or calls a ``plot_*`` function
#: (the package's figures: plot_equity, plot_sweep, bt.plot, ft.book.plot_scale_summary ...).
_MAKES_FIGURE = re.compile(r"\bplt\.(?:subplots|figure|subplot|plot|bar|barh)\s*\(|\.plot(?:\.\w+)?\s*\(|"
                           r"\.(?:barh|bar|pcolormesh|imshow|scatter|hist)\s*\(|\bplot_\w+\s*\(")


def _makes_figure(code: str) -> bool:
    lines = [re.sub(r"#.*$", "", line) for line in code.splitlines() if not line.lstrip().startswith("def ")]
    return bool(_MAKES_FIGURE.search("\n".join(lines)))


def _page_cells(entry: str) -> list:
    """The page's code cells (``div.cell``), in order."""
    return _article(entry).find_all("div", class_="cell")


@needs_build
@pytest.mark.parametrize("entry", NOTEBOOKS)
def test_every_figure_a_chapter_draws_is_on_its_page(entry):
    """Each code cell the page keeps (every cell not tagged remove-cell, in order) is one ``div.cell``
    of the page; each such cell that makes a figure must show an image in its output (a figure
    that is built but neither the cell's last expression nor displayed never reaches the reader),
    and the page holds at least as many images as such cells."""
    kept = [cell for cell in _code_cells(entry)[1:] if "remove-cell" not in _tags(cell) and _source(cell).strip()]
    cells = _page_cells(entry)
    assert len(cells) == len(kept), (f"{entry}: {len(kept)} code cells in the notebook are not removed, the page "
                                     f"shows {len(cells)}: the page no longer maps cell for cell")
    missing = []
    for cell, page_cell in zip(kept, cells):
        if _makes_figure(_source(cell)):
            output = page_cell.find("div", class_="cell_output")
            if output is None or not output.find("img"):
                missing.append(_source(cell).strip().splitlines()[0][:70])
    assert not missing, f"{entry}: cells that draw a figure the page does not show: {missing}"
    drawn = sum(_makes_figure(_source(cell)) for cell in kept)
    assert len(_IMAGE.findall(_page(entry))) >= drawn


def _figure_options(cell: dict) -> tuple[str, str, str]:
    """The cell's figure metadata as myst-nb reads it: (image alt text, figure caption, figure name)."""
    options = cell.get("metadata", {}).get("mystnb", {})
    return (str(options.get("image", {}).get("alt", "")).strip(),
            str(options.get("figure", {}).get("caption", "")).strip(),
            str(options.get("figure", {}).get("name", "")).strip())


def _figure_cells(entry: str) -> list[dict]:
    return [cell for cell in _code_cells(entry)[1:]
            if "remove-cell" not in _tags(cell) and _makes_figure(_source(cell))]


@pytest.mark.parametrize("entry", CHAPTERS)
def test_every_figure_a_chapter_draws_has_alt_text_and_a_caption(entry):
    """A figure is read by people who cannot see it (alt text: what it shows, in words, never a file
    name) and by people who can (a caption: what to read from it), as in a textbook. The cell's
    ``mystnb`` metadata carries both; its ``name`` (``fig-NN-...``, NN the chapter) makes it citable."""
    number = re.match(r"book/(\d\d)_", entry).group(1)
    problems = []
    for cell in _figure_cells(entry):
        alt, caption, name = _figure_options(cell)
        where = _source(cell).strip().splitlines()[0][:60]
        if len(alt.split()) < 4 or re.search(r"\.(?:png|svg|jpe?g)\b", alt):
            problems.append(f"{where}: alt text {alt!r} does not say what the figure shows")
        if len(caption.split()) < 6:
            problems.append(f"{where}: caption {caption!r} is missing or too short to say what to read")
        if not re.fullmatch(rf"fig-{number}-[a-z0-9-]+", name):
            problems.append(f"{where}: figure name {name!r} is not fig-{number}-<words>")
    assert not problems, f"{entry}: " + "; ".join(problems)


def test_figures_are_numbered_by_chapter_in_page_order():
    """Each caption starts with its label, "Figure N.k.", N the chapter and k counting its figures in
    reading order (a chapter's second page continues its count), as in a textbook."""
    counts: dict[str, int] = {}
    for entry in CHAPTERS:
        number = re.match(r"book/(\d\d)_", entry).group(1)
        for cell in _figure_cells(entry):
            counts[number] = counts.get(number, 0) + 1
            label = f"Figure {int(number)}.{counts[number]}. "
            assert _figure_options(cell)[1].startswith(label), f"{entry}: {_figure_options(cell)[1][:40]!r} should start {label!r}"

def test_figure_names_are_unique_across_the_book():
    names = [_figure_options(cell)[2] for entry in CHAPTERS for cell in _figure_cells(entry)]
    names = [name for name in names if name]
    assert len(names) == len(set(names)), sorted(name for name in set(names) if names.count(name) > 1)


@needs_build
@pytest.mark.parametrize("entry", CHAPTERS)
def test_built_captions_carry_only_the_books_own_figure_numbers(entry):
    """A caption reads "Figure 3.2. ...", with no book-wide Sphinx number ("Fig. 13") before it."""
    numbers = [span.get_text(strip=True) for span in _article(entry).select("span.caption-number")]
    assert not numbers, f"{entry}: Sphinx figure numbers before the captions: {numbers[:3]}"


@needs_build
@pytest.mark.parametrize("entry", CHAPTERS)
def test_built_figures_have_their_caption_and_words_for_their_alt_text(entry):
    """On the page, every image is inside a numbered figure with its caption, and no image's alt text
    is a file path (what a reader without the image would hear)."""
    article = _article(entry)
    images = article.find_all("img")
    bad_alt = [image.get("alt", "") for image in images
               if re.search(r"\.(?:png|svg|jpe?g)$", image.get("alt", "")) or not image.get("alt", "").strip()]
    assert not bad_alt, f"{entry}: images whose alt text is a file name or empty: {bad_alt[:3]}"
    captions = [figure.find("figcaption") for figure in article.find_all("figure")]
    assert sum(caption is not None for caption in captions) >= len(_figure_cells(entry))

#: Words about how the project is made, which a reader of the book cannot place. Matched as whole
#: words, case-insensitively, on the whole text of every page (prose, code and outputs alike).
OUTSIDE_WORDS = (r"sessions?", r"helpers?", r"briefs?", r"lent", r"CEO", r"engineers?", r"merger",
                 r"main job", r"tasks?", r"tickets?", r"pull requests?", r"PR\s*#\d+", r"issue\s*#?\d+",
                 r"(?:this|the|that|open|filed|github)\s+issues?(?!\s+(?:price|date|size|of\s+shares))",
                 r"issue tracker", r"filed by", r"developer brief", r"today's learner", r"earlier learner",
                 r"pilot runs?", r"README's")
_OUTSIDE = re.compile(r"(?<![\w-])(?:" + "|".join(OUTSIDE_WORDS) + r")(?![\w-])", re.I)


def _page_text(entry: str) -> str:
    return re.sub(r"\s+", " ", html.unescape(_article(entry).get_text(" ")))


ALL_PAGES = ["book/intro", *PAGES]


@needs_build
@pytest.mark.parametrize("entry", ALL_PAGES)
def test_no_page_speaks_of_how_the_project_is_made(entry):
    found = sorted({match.group(0) for match in _OUTSIDE.finditer(_page_text(entry))})
    assert not found, f"{entry}: words from outside the project on the page: {found}"


def test_outside_words_catch_what_they_should_and_spare_the_market_words():
    for leak in ("the README's main job", "never lent a GPU", "the developer brief", "this issue", "issue #20",
                 "one session", "The helper switches", "today's learner", "the README's section", "a few pilot runs"):
        assert _OUTSIDE.search(leak), leak
    for fine in ("a bonus-share issue", "the issue price", "rights issues", "briefly", "the main board",
                 "relented", "helpers_of_x"):
        assert not _OUTSIDE.search(fine), fine


#: A multiplier in the prose: a number written right before "×" (or " x "), not followed by another
#: number or a parenthesis (then it is arithmetic: "64 × 64", "15 × (9 + 3)").
_MULTIPLIER = re.compile(r"(?<![\w.,])\d[\d,]*(?:\.\d+)?\s?(?:×|x(?=[\s,.;:)]|$))(?!\s*[\d(¼½¾])")
#: What it is a multiple of. Either a reference word after it ("1.8× the base's", "0.13× of one
#: worker", "3.2× faster than", "2× more than SB3"), or a sentence that names its reference before
#: the list ("relative to the base: A 1.2×, B 0.9×", "against one rank, ...").
_REFERENCE_AFTER = re.compile(r"\b(?:than|vs\.?|versus|against|over|of|relative to|compared (?:with|to)|"
                              r"the base(?:line)?'?s?|baseline|ours|as (?:much|many|fast|long)|its)\b", re.I)
#: ... or a possessive right after it: "10× buy-and-hold's fees", "1.8× the base's", "0.75× the
#: fastest in-process trainer's samples/s" (up to three words before the owner).
_POSSESSIVE_AFTER = re.compile(r"^\s*(?!(?:with|at|in|on|for|by|from|to|and|but|while)\b)(?:the\s+)?"
                               r"(?:[\w-]+\s+){0,3}[\w-]+['’]s\b", re.I)
_REFERENCE_BEFORE = re.compile(r"\b(?:relative to|against|vs\.?|versus|compared (?:with|to)|over|than|"
                               r"÷|divided by|ratio of|per (?:the )?base)\b|÷", re.I)
REFERENCE_WINDOW = 10  # words after the multiplier in which its reference must appear


def _sentences(article) -> list[str]:
    """Sentences of the page's prose and printed outputs: paragraphs, list items, headings and the
    lines of output blocks (code inputs and tables are left out: a table's header names its ratio)."""
    for tag in article.select("div.cell_input, table, .MathJax, .math"):
        tag.decompose()
    for literal in article.find_all("code"):  # inline code is code: `seed + 1000 × rank` is arithmetic
        if _MULTIPLIER.search(literal.get_text()):
            literal.decompose()
    sentences = []
    for block in article.find_all(["p", "pre", "h1", "h2", "h3", "dt", "dd", "caption", "figcaption"]):
        text = html.unescape(block.get_text(" " if block.name != "pre" else ""))
        for line in text.splitlines() if block.name == "pre" else [text]:
            sentences += re.split(r"(?<=[.!?])\s+(?=[A-Z*(•])", re.sub(r"\s+", " ", line).strip())
    return [sentence for sentence in sentences if sentence]


def _unreferenced_multipliers(sentence: str) -> list[str]:
    unnamed, named = [], False
    for match in _MULTIPLIER.finditer(sentence):
        after = " ".join(sentence[match.end():].split()[:REFERENCE_WINDOW])
        named = named or bool(_REFERENCE_AFTER.search(after) or _POSSESSIVE_AFTER.match(after)
                              or _REFERENCE_BEFORE.search(sentence[:match.start()]))
        if not named:  # once a multiplier of the sentence names its baseline, the later ones share it
            unnamed.append(match.group(0).strip())
    return unnamed


@needs_build
@pytest.mark.parametrize("entry", ALL_PAGES)
def test_every_speed_up_in_the_prose_names_its_baseline(entry):
    """Every multiplier a sentence states ("1.48×", "324 x") says what it is a multiple of, in the
    same sentence: a reference word within the next ten words (than, vs, versus, against, over, of,
    relative to, compared with, the base's, baseline, ours, its, as much/many/fast as), a
    possessive right after it ("10× buy-and-hold's fees"), or, for a list of ratios, a sentence that
    names its reference before them ("relative to the base: A 1.2×, B 0.9×"); once one multiplier
    of a sentence names its baseline, the later ones in that sentence share it. Arithmetic
    ("64 × 64", "15 × (9 + 3)", inline code such as `seed + 1000 × rank`) is no multiplier; a
    table's ratios are named by its header. A rule on words cannot tell a fair baseline from a slow one; it makes the baseline
    visible, so that a reader can judge it."""
    offenders = [(sentence[:120], numbers) for sentence in _sentences(_article(entry))
                 for numbers in [_unreferenced_multipliers(sentence)] if numbers]
    assert not offenders, f"{entry}: multipliers without a baseline: {offenders}"


def test_the_multiplier_rule_can_fail_and_spares_arithmetic():
    assert _unreferenced_multipliers("Chapter 6's headline: 324×.") == ["324×"]
    assert _unreferenced_multipliers("Two ranks reach 1.48× with 4,096 accounts.") == ["1.48×"]
    assert _unreferenced_multipliers("Two ranks run at 0.55× the speed of the plain trainer.") == []
    assert _unreferenced_multipliers("The batched env is 324× faster than 2 subprocess accounts.") == []
    assert _unreferenced_multipliers("Update cost relative to the base: repeat_times=16 4.1×, repeat_times=2 0.6×.") == []
    assert _unreferenced_multipliers("1 + 15 × (9 + 3) = 181 numbers; 64 × 64 = 4,096 samples.") == []
    assert _unreferenced_multipliers("The random policy paid 1,015× buy-and-hold's fees.") == []
    assert _unreferenced_multipliers("It cost 4.1× per sample, and 0.6× with two passes.") == ["4.1×", "0.6×"]
    assert _unreferenced_multipliers("2 ranks ran 1.4× the samples/s of one rank, short of the ceiling of 2×.") == []
    assert _unreferenced_multipliers("One worker made 0.75× the fastest in-process trainer's samples/s.") == []
    assert _unreferenced_multipliers("Two ranks reach 1.48× with the new layout's defaults.") == ["1.48×"]


def test_plot_equity_draws_the_agent_on_top_and_wider_than_every_baseline():
    import pandas as pd

    from finrl_tutorial.plots import plot_equity

    days = pd.date_range("2019-01-01", periods=5)
    curves = {"agent": pd.Series([1.0, 1.1, 1.2, 1.1, 1.3], index=days),
              "buy_and_hold": pd.Series([1.0, 1.1, 1.2, 1.1, 1.3], index=days),  # on top of the agent
              "random": pd.Series([1.0, 0.9, 1.0, 0.9, 1.0], index=days)}
    axis = plot_equity(curves).axes[0]
    lines = {line.get_label(): line for line in axis.get_lines() if not line.get_label().startswith("_")}
    agent = lines["agent"]
    others = [line for label, line in lines.items() if label != "agent"]
    assert all(agent.get_zorder() > line.get_zorder() and agent.get_linewidth() >= 1.5 * line.get_linewidth()
               for line in others)
    assert [text.get_text() for text in axis.get_legend().get_texts()][0] == "agent"
    plain = plot_equity(curves, highlight=None).axes[0]
    assert len({line.get_linewidth() for line in plain.get_lines() if not line.get_label().startswith("_")}) == 1
    # relative to buy-and-hold: a middle axis where the agent, drawn on buy-and-hold above, sits on the 0 line
    relative = plot_equity(curves, relative_to="buy_and_hold").axes
    assert len(relative) == 3 and relative[1].get_ylabel() == "above buy_and_hold (%)"
    drawn = [line for line in relative[1].get_lines() if len(line.get_xdata()) == 5]
    assert len(drawn) == 2  # the agent and random; the reference is the dashed 0 line
    assert [float(v) for v in drawn[-1].get_ydata()] == [0.0] * 5  # the agent (drawn last) equals buy-and-hold
    assert [round(float(v), 6) for v in drawn[0].get_ydata()][:2] == [0.0, round(100 * (0.9 / 1.1 - 1), 6)]
    with pytest.raises(ValueError, match="relative_to='csi300' is not one of the curves"):
        plot_equity(curves, relative_to="csi300")


# --------------------------------------------------------------------------- (d) the readings chapters 1-3 teach with


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(min_value=0.0, max_value=1.0), min_size=1, max_size=30))
def test_holm_adjusts_upward_keeps_the_order_and_starts_at_bonferroni(p_values):
    from finrl_tutorial.book.teaching import holm

    adjusted = holm(p_values).to_numpy()
    raw = np.asarray(p_values)
    assert (adjusted >= raw - 1e-12).all() and (adjusted <= 1.0).all()
    order = np.argsort(raw, kind="stable")
    assert (np.diff(adjusted[order]) >= -1e-12).all(), "a smaller p-value never gets a larger adjustment"
    assert adjusted[order[0]] == pytest.approx(min(1.0, len(raw) * raw[order[0]]))


def test_holm_matches_the_textbook_example_and_the_no_overlap_chance_is_exact():
    from itertools import permutations

    from finrl_tutorial.book.teaching import chance_of_no_overlap, holm

    assert holm([0.01, 0.04, 0.03, 0.5]).round(6).tolist() == [0.04, 0.09, 0.09, 0.5]
    # 3 + 3 exchangeable draws: count the orderings in which one group's three all lie above or below
    orderings = set(permutations("aaabbb"))
    separated = sum(o[:3] in (("a",) * 3, ("b",) * 3) for o in orderings)
    assert chance_of_no_overlap(3) == separated / len(orderings) == 0.1


def test_paired_captures_keep_only_markets_both_learners_ran():
    from finrl_tutorial.book.teaching import paired_captures, t_interval

    def row(learner, captures):
        return {"learner": learner, "run_steps": 100, "env_steps": 100, "select": "best", "family": "factor",
                "captures": captures}

    record = {"summary": [row("ppo", [1.0, 2.0, None, 4.0, 5.0]), row("a2c", [0.5, 1.0, 3.0])]}
    paired = paired_captures(record, ("ppo", 100, "best"), ("a2c", 100, "best"))
    assert paired["market"].tolist() == [0, 1] and paired["difference"].tolist() == [0.5, 1.0]
    interval = t_interval(paired["difference"])
    assert interval["n"] == 2 and interval["low"] < interval["mean"] == 0.75 < interval["high"]
    assert np.isnan(t_interval([1.0])["low"])


def test_distances_from_the_untrained_agent_are_zero_for_itself_and_bounded():
    import pandas as pd
    import torch

    from finrl_tutorial.book.teaching import parameter_distance, portfolio_distance

    net = torch.nn.Linear(3, 2)
    assert parameter_distance(net, net) == 0.0
    moved = torch.nn.Linear(3, 2)
    with torch.no_grad():
        for p, q in zip(moved.parameters(), net.parameters()):
            p.copy_(2 * q)
    assert parameter_distance(moved, net) == pytest.approx(1.0)
    all_cash = pd.DataFrame([[0.0, 0.0]] * 3, columns=["a", "b"])
    all_in_a = pd.DataFrame([[1.0, 0.0]] * 3, columns=["a", "b"])
    half = pd.DataFrame([[0.5, 0.0]] * 3, columns=["a", "b"])
    assert portfolio_distance(all_cash, all_cash) == 0.0
    assert portfolio_distance(all_in_a, all_cash) == pytest.approx(1.0)
    assert portfolio_distance(half, all_cash) == pytest.approx(0.5)
