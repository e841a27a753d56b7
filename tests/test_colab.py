"""Every chapter runs as Colab runs it: the notebook alone in an empty folder, the package installed
from a wheel (not this checkout, not an editable install).

The wheel is built once from a copy of the repository (``pip wheel --no-deps --no-build-isolation``)
and installed into a temporary target (``pip install --no-deps --target``), which the chapters' kernels
import through ``PYTHONPATH``: a path on ``PYTHONPATH`` is searched by ``PathFinder`` before the
finder of an editable install (which sits after it in ``sys.meta_path``), and the first test proves
that the installed copy, not the checkout, is the one imported. Each chapter is then copied alone into
an empty folder and executed there under nbval in fast mode, with a first cell added to the copy that
checks, inside the kernel, where ``finrl_tutorial`` came from.

This is the one place pytest executes the chapters (``testpaths = ["tests"]``). When
``FINRL_TUTORIAL_EXECUTED_DIR`` names a folder, each chapter that passes is written there with its
outputs (``tests/keep_executed.py``; the added check cell taken out), and ``.ci/run`` builds the book
from those notebooks rather than executing every chapter a second time.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from keep_executed import number_code_cells

pytest.importorskip("yaml")
nbformat = pytest.importorskip("nbformat")
pytest.importorskip("nbval")
from book_toc import toc_notebooks  # noqa: E402  (needs yaml)

ROOT = Path(__file__).resolve().parents[1]
COPY_IGNORE = shutil.ignore_patterns(".git", "_build", "build", "runs", "*.egg-info", ".hypothesis",
                                     ".pytest_cache", "__pycache__", ".ipynb_checkpoints", ".venv")
CHAPTERS = toc_notebooks()  # the notebooks of _toc.yml, in course order


def _run(command: list[str], **kwargs) -> subprocess.CompletedProcess:
    result = subprocess.run(command, capture_output=True, text=True, **kwargs)
    assert result.returncode == 0, f"{' '.join(command)} failed:\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
    return result


@pytest.fixture(scope="session")
def installed(tmp_path_factory) -> dict:
    """The wheel built from a clean copy of the repository, and the folder it is installed into."""
    base = tmp_path_factory.mktemp("colab")
    source = base / "src"
    shutil.copytree(ROOT, source, ignore=COPY_IGNORE)  # a clean tree: no stale build/ goes into the wheel
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(base / "wheel"),
          str(source)])
    wheel = next((base / "wheel").glob("finrl_tutorial-*.whl"))
    site = base / "site"
    _run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(site), str(wheel)])
    env = dict(os.environ, PYTHONPATH=str(site), FINRL_TUTORIAL_FAST="1", MPLBACKEND="Agg",
               OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"), FINRL_TUTORIAL_SITE=str(site))
    return {"wheel": wheel, "site": site, "env": env}


def test_the_installed_wheel_not_the_checkout_is_imported(installed):
    """PYTHONPATH wins over an editable install's finder and over the checkout."""
    where = _run([sys.executable, "-c", "import finrl_tutorial, finrl_tutorial.records as r; "
                  "print(finrl_tutorial.__file__); print(list(r.__path__)[0])"],
                 env=installed["env"], cwd=installed["site"].parent).stdout.split()
    site = installed["site"].resolve()
    assert all(Path(path).resolve().is_relative_to(site) for path in where), (where, site)


def test_the_wheel_ships_the_records_and_the_sample_data(installed):
    names = set(zipfile.ZipFile(installed["wheel"]).namelist())
    records = sorted(path.name for path in (ROOT / "book" / "data").iterdir()
                     if path.suffix in (".json", ".jsonl", ".png", ".md"))
    assert records, "no stored records under book/data"
    missing = [name for name in records if f"finrl_tutorial/records/{name}" not in names]
    assert not missing, f"records missing from the wheel: {missing}"
    sample = sorted(path.name for path in (ROOT / "finrl_tutorial" / "data" / "sample").iterdir() if path.is_file())
    assert sample and all(f"finrl_tutorial/data/sample/{name}" in names for name in sample), sample
    # and the installed package finds them where a chapter looks
    found = _run([sys.executable, "-c", "from finrl_tutorial.book import record_path, record_names; "
                  "print(record_path('bench_env.jsonl')); print(len(record_names()))"],
                 env=installed["env"], cwd=installed["site"].parent).stdout.split()
    assert Path(found[0]).resolve().is_relative_to(installed["site"].resolve()) and int(found[1]) >= len(
        [r for r in records if not r.endswith(".md")])


WHERE_CHECK = """# added by tests/test_colab.py: the kernel imports the installed wheel, not the checkout
import os as _os
from pathlib import Path as _Path
import finrl_tutorial as _package
assert _Path(_package.__file__).resolve().is_relative_to(_Path(_os.environ["FINRL_TUTORIAL_SITE"]).resolve()), _package.__file__
"""


KEEP_PLUGIN = Path(__file__).with_name("keep_executed.py")
# nbval under pytest.main with the plugin that writes the executed notebook (argv: plugin, output, pytest args)
RUN_NBVAL = """import importlib.util, sys, pytest
spec = importlib.util.spec_from_file_location("keep_executed", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
sys.exit(pytest.main(sys.argv[3:], plugins=[module.KeepExecuted(sys.argv[2])]))
"""


# the chapters that start worker processes or DDP ranks run while no other test does (tests/conftest.py)
WHOLE_MACHINE = {"book/04_workers", "book/05_learners"}


@pytest.mark.parametrize("entry", [pytest.param(entry, marks=pytest.mark.whole_machine) if entry in WHOLE_MACHINE
                                   else entry for entry in CHAPTERS])
def test_chapter_runs_alone_with_the_installed_package(entry, installed, tmp_path):
    notebook = nbformat.read(ROOT / f"{entry}.ipynb", as_version=4)
    notebook.cells.insert(1, nbformat.v4.new_code_cell(WHERE_CHECK))
    folder = tmp_path / "colab"
    folder.mkdir()
    copy = folder / Path(entry).with_suffix(".ipynb").name
    nbformat.write(notebook, copy)
    assert sorted(p.name for p in folder.iterdir()) == [copy.name]  # the notebook alone
    executed = tmp_path / "executed.ipynb"  # outside the folder: the notebook stays alone there
    result = subprocess.run([sys.executable, "-c", RUN_NBVAL, str(KEEP_PLUGIN), str(executed), "--nbval-lax",
                             "--nbval-current-env", "-p", "no:cacheprovider", "-q", "--rootdir", str(folder),
                             copy.name],
                            cwd=folder, env=installed["env"], capture_output=True, text=True, timeout=1800)
    assert result.returncode == 0, f"{entry} failed when run alone:\n{result.stdout[-8000:]}\n{result.stderr[-2000:]}"
    kept = nbformat.read(executed, as_version=4)
    assert len(kept.cells) == len(notebook.cells) and kept.cells[1].source == WHERE_CHECK
    ran = [cell for cell in kept.cells if cell.cell_type == "code"]
    assert all(cell.execution_count == number for number, cell in enumerate(ran, 1)), "a code cell did not run"
    if os.environ.get("FINRL_TUTORIAL_EXECUTED_DIR"):
        _keep(kept, Path(os.environ["FINRL_TUTORIAL_EXECUTED_DIR"]) / f"{entry}.ipynb")


def _keep(kept, path: Path) -> None:
    """The executed chapter as the book shows it: without the added check cell, cells numbered from 1."""
    from finrl_tutorial.atomic import atomic_open

    del kept.cells[1]
    number_code_cells(kept)
    with atomic_open(path, encoding="utf-8") as stream:  # .ci/run never reads half a chapter
        nbformat.write(kept, stream)


def test_every_chapter_is_collected():
    assert len(CHAPTERS) >= 8 and all(json.loads((ROOT / f"{c}.ipynb").read_text())["cells"] for c in CHAPTERS)
