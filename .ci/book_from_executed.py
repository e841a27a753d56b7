"""Lays out the book's sources with the chapters the tests executed, for a build that executes nothing.

    python .ci/book_from_executed.py EXECUTED_DIR SOURCE_DIR

EXECUTED_DIR holds ``book/<chapter>.ipynb`` as ``tests/test_colab.py`` writes them (with
``FINRL_TUTORIAL_EXECUTED_DIR``): every chapter run alone against the installed wheel, with its
outputs. SOURCE_DIR (made fresh; it must not exist) receives ``_config.yml`` with execution turned
off, ``_toc.yml`` and ``book/``, each chapter replaced by its executed copy once its cells are
checked to be the checkout's. ``jupyter-book build SOURCE_DIR --path-output .`` then renders the
outputs the tests produced, so that CI executes each chapter once. Exit code 2 and one line when a
chapter is missing, stale or SOURCE_DIR is in the way.
"""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

import nbformat
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from book_toc import toc_notebooks  # noqa: E402  (the list the tests execute)


def same_cells(executed, source) -> bool:
    """The executed copy holds the source's cells, in order, with the same text."""
    return [(c.cell_type, c.source) for c in executed.cells] == [(c.cell_type, c.source) for c in source.cells]


def main(executed_dir: Path, source_dir: Path) -> int:
    if source_dir.exists():
        print(f"error: {source_dir} exists; remove it first", file=sys.stderr)
        return 2
    executed = {}
    for entry in toc_notebooks(ROOT):
        path = executed_dir / f"{entry}.ipynb"
        if not path.is_file():
            print(f"error: no executed copy of {entry} at {path} (did its test pass?)", file=sys.stderr)
            return 2
        notebook = nbformat.read(path, as_version=4)
        if not same_cells(notebook, nbformat.read(ROOT / f"{entry}.ipynb", as_version=4)):
            print(f"error: {path} is not an execution of the checkout's {entry}.ipynb", file=sys.stderr)
            return 2
        executed[entry] = notebook
    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    config["execute"]["execute_notebooks"] = "off"  # the outputs come from the tests' run
    source_dir.mkdir(parents=True)
    (source_dir / "_config.yml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    shutil.copy2(ROOT / "_toc.yml", source_dir / "_toc.yml")
    shutil.copytree(ROOT / "book", source_dir / "book", ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    for entry, notebook in executed.items():
        nbformat.write(notebook, source_dir / f"{entry}.ipynb")
    print(f"{len(executed)} executed chapters laid out in {source_dir}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print("usage: python .ci/book_from_executed.py EXECUTED_DIR SOURCE_DIR", file=sys.stderr)
        sys.exit(2)
    sys.exit(main(Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve()))
