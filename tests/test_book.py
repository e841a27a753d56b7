"""The book: sources in the repository, and the HTML that `jupyter-book build .` makes of them.

(a) Sources, always: every chapter in ``_toc.yml`` exists, carries no saved outputs, starts with a
    hidden (``remove-cell``) cell that installs the package in Colab from the repository URL of
    ``_config.yml``, imports the package, honours fast mode and pins torch to one thread.
(b) The built HTML, when ``_build/html`` exists (CI builds the book before the tests): a page per
    chapter, at least one image on each, a Colab launch link, MathJax served from the book itself,
    and no page that loads a script (or a stylesheet) from another host: the book works offline.

The chapters themselves run as tests too: pytest's ``testpaths`` include ``book`` and nbval
executes every notebook (see ``pyproject.toml``).
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml")  # PyYAML comes with jupyter-book (requirements.txt)

ROOT = Path(__file__).resolve().parents[1]
HTML = ROOT / "_build" / "html"
CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
TOC = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))


def _toc_files(node) -> list[str]:
    """Every ``file:`` entry of the table of contents, in order (parts, chapters, sections)."""
    found = []
    if isinstance(node, dict):
        if "file" in node:
            found.append(node["file"])
        for key in ("parts", "chapters", "sections"):
            for child in node.get(key, []) or []:
                found += _toc_files(child)
    return found


CHAPTERS = _toc_files(TOC)  # without the root page (book/intro)
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


def test_toc_lists_the_intro_and_the_chapters_in_course_order():
    assert TOC["format"] == "jb-book" and TOC["root"] == "book/intro"
    assert (ROOT / "book" / "intro.md").is_file()
    assert len(CHAPTERS) >= 8
    numbers = [int(re.match(r"book/(\d\d)_", entry).group(1)) for entry in CHAPTERS]
    assert numbers == sorted(numbers) and len(set(numbers)) == len(numbers)


@pytest.mark.parametrize("entry", CHAPTERS)
def test_chapter_exists_as_a_notebook(entry):
    assert (ROOT / f"{entry}.ipynb").is_file(), f"{entry}.ipynb is in _toc.yml but not in the repository"


@pytest.mark.parametrize("entry", CHAPTERS)
def test_chapter_has_no_saved_outputs(entry):
    dirty = [i for i, cell in enumerate(_notebook(entry)["cells"])
             if cell["cell_type"] == "code" and (cell.get("outputs") or cell.get("execution_count") is not None)]
    assert not dirty, (f"{entry}.ipynb has saved outputs in code cells {dirty}: clear them "
                       "(jupyter nbconvert --clear-output --inplace)")


@pytest.mark.parametrize("entry", CHAPTERS)
def test_chapter_starts_with_a_hidden_colab_install_of_the_configured_repository(entry):
    first = _code_cells(entry)[0]
    source = _source(first)
    assert "remove-cell" in first.get("metadata", {}).get("tags", []), "the install cell must be tagged remove-cell"
    assert '"google.colab" in sys.modules' in source, "install only inside Colab"
    urls = re.findall(r"git\+(https://\S+?)[\"'\s]", source + "\n")
    assert urls == [REPO_URL], f"install URL {urls} differs from _config.yml repository.url {REPO_URL}"


@pytest.mark.parametrize("entry", CHAPTERS)
def test_chapter_uses_the_package_in_fast_mode_with_one_thread(entry):
    code = "\n".join(_source(cell) for cell in _code_cells(entry)[1:])
    assert re.search(r"^\s*(from finrl_tutorial[\w.]* import|import finrl_tutorial)", code, re.M), \
        "a chapter runs the package; it must import it"
    assert 'FAST = os.environ.get("FINRL_TUTORIAL_FAST") == "1"' in code
    assert "torch.set_num_threads(1)" in code
    assert re.search(r"^\s*assert ", code, re.M), "a chapter asserts its key results"


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
@pytest.mark.parametrize("entry", CHAPTERS)
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
