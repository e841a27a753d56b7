"""`.ci/book_from_executed.py`: the book is built from the chapters the tests executed, and only
from executions of the checkout's own chapters (a missing, stale or foreign copy ends in exit 2)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
yaml = pytest.importorskip("yaml")
from book_toc import toc_notebooks  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / ".ci" / "book_from_executed.py"


def _lay_out(executed: Path, source: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), str(executed), str(source)], capture_output=True, text=True,
                          timeout=120)


@pytest.fixture
def executed(tmp_path) -> Path:
    """Stand-ins for executed chapters: the checkout's notebooks with an output added to a code cell."""
    folder = tmp_path / "executed"
    for entry in toc_notebooks(ROOT):
        notebook = nbformat.read(ROOT / f"{entry}.ipynb", as_version=4)
        code = next(cell for cell in notebook.cells if cell.cell_type == "code")
        code.outputs = [nbformat.v4.new_output("stream", name="stdout", text="ran\n")]
        (folder / entry).parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(notebook, folder / f"{entry}.ipynb")
    return folder


def test_the_executed_chapters_replace_the_sources_and_nothing_executes(executed, tmp_path):
    done = _lay_out(executed, tmp_path / "source")
    assert done.returncode == 0, done.stderr
    config = yaml.safe_load((tmp_path / "source" / "_config.yml").read_text(encoding="utf-8"))
    assert config["execute"]["execute_notebooks"] == "off"
    assert {k: v for k, v in config.items() if k != "execute"} == {
        k: v for k, v in yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8")).items() if k != "execute"}
    for entry in toc_notebooks(ROOT):
        laid = nbformat.read(tmp_path / "source" / f"{entry}.ipynb", as_version=4)
        assert any(cell.get("outputs") for cell in laid.cells), entry  # the executed copy, not the source
    assert (tmp_path / "source" / "book" / "glossary.md").is_file()


@pytest.mark.parametrize("damage, message", [
    (lambda path: path.unlink(), "no executed copy"),
    (lambda path: _edit_first_markdown(path), "is not an execution of the checkout's"),
])
def test_a_missing_or_stale_chapter_is_refused_in_one_line(executed, tmp_path, damage, message):
    damage(executed / f"{toc_notebooks(ROOT)[0]}.ipynb")
    done = _lay_out(executed, tmp_path / "source")
    assert done.returncode == 2 and message in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert not (tmp_path / "source").exists()  # nothing half laid out


def test_a_folder_in_the_way_is_refused(executed, tmp_path):
    (tmp_path / "source").mkdir()
    (tmp_path / "source" / "mine.txt").write_text("keep me")
    done = _lay_out(executed, tmp_path / "source")
    assert done.returncode == 2 and "exists" in done.stderr
    assert (tmp_path / "source" / "mine.txt").read_text() == "keep me"


def _edit_first_markdown(path: Path) -> None:
    notebook = nbformat.read(path, as_version=4)
    cell = next(cell for cell in notebook.cells if cell.cell_type == "markdown")
    cell.source += "\nA sentence the checkout does not have."
    nbformat.write(notebook, path)


def test_ci_builds_from_the_kept_notebooks():
    """.ci/run keeps the chapters the tests run and builds the book from them, then checks the HTML."""
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    order = [ci.index(part) for part in ('FINRL_TUTORIAL_EXECUTED_DIR="$PWD/_build/executed" python3 -m pytest',
                                         "book_from_executed.py _build/executed _build/book_source",
                                         "jupyter-book build _build/book_source --path-output . -W",
                                         "python3 -m pytest tests/test_book.py")]
    assert order == sorted(order)
