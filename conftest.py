"""Root pytest setup: chapters and tests run in fast mode unless told otherwise."""
import os

import pytest

# Fast mode shrinks training budgets (same code path); set before nbval starts any kernel.
os.environ.setdefault("FINRL_TUTORIAL_FAST", "1")
os.environ.setdefault("MPLBACKEND", "Agg")


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """With pytest-xdist (pyproject's ``-n auto``): every test goes to whichever process is free,
    except a notebook's cells, which must all run in one process, in order (one kernel)."""
    from xdist.scheduler import LoadScopeScheduling

    class NotebookInOneProcess(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return path if path.endswith(".ipynb") else nodeid

    return NotebookInOneProcess(config, log)
