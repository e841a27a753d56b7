"""Root pytest setup: chapters and tests run in fast mode unless told otherwise."""
import os

# Fast mode shrinks training budgets (same code path); set before nbval starts any kernel.
os.environ.setdefault("FINRL_TUTORIAL_FAST", "1")
os.environ.setdefault("MPLBACKEND", "Agg")
