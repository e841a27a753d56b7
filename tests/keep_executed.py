"""A pytest plugin for the nbval run of one chapter: once every cell has passed, it writes the
notebook with the outputs its kernel produced, so that the book can be built from the very run
that tested it (``.ci/run``) instead of executing every chapter a second time.

nbval keeps each cell's outputs on its test item (``IPyNbCell.test_outputs``, a list of nbformat
output nodes); the item's ``cell`` is the cell of the notebook nbval read (``item.parent.nb``).
Loaded by ``tests/test_colab.py`` through ``pytest.main(plugins=[...])``; not a test module.
"""
from __future__ import annotations

import os
from pathlib import Path


class KeepExecuted:
    """Writes the executed notebook to ``path`` at the end of a session in which no test failed
    (``path`` is a private scratch file, read once the run has ended: a plain write serves)."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self.items: list = []

    def pytest_collection_finish(self, session):
        self.items = list(session.items)

    def pytest_sessionfinish(self, session, exitstatus):
        if exitstatus != 0:  # a cell failed (or nothing ran): keep nothing
            return
        notebook = None
        for item in self.items:
            cell, outputs = getattr(item, "cell", None), getattr(item, "test_outputs", None)
            if cell is not None and outputs is not None:  # a notebook cell that ran
                notebook = item.parent.nb
                cell.outputs = list(outputs)
                cell.execution_count = 0  # ran; numbered below
        if notebook is not None:
            import nbformat

            number_code_cells(notebook)
            nbformat.write(notebook, self.path)


def number_code_cells(notebook) -> None:
    """Execution counts 1, 2, ... over the code cells that ran (``execution_count`` not None)."""
    ran = [cell for cell in notebook.cells if cell.cell_type == "code" and cell.execution_count is not None]
    for number, cell in enumerate(ran, 1):
        cell.execution_count = number
        for output in cell.outputs:
            if output.get("output_type") == "execute_result":
                output["execution_count"] = number

