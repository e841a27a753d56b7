"""The package's command line, run from a chapter as a reader would run it from a shell."""
from __future__ import annotations

import os
import subprocess
import sys

from ..errors import InputError


def cli_command(*args: str, torchrun_processes: int | None = None) -> list[str]:
    """``python -m finrl_tutorial ARGS`` with this notebook's Python, or under ``torchrun
    --standalone --nproc_per_node=K`` when ``torchrun_processes`` is K."""
    launcher = ([sys.executable, "-m", "torch.distributed.run", "--standalone",
                 f"--nproc_per_node={torchrun_processes}"] if torchrun_processes else [sys.executable])
    return [*launcher, "-m", "finrl_tutorial", *map(str, args)]


def run_cli(*args: str, torchrun_processes: int | None = None, timeout: float = 900) -> str:
    """Run `cli_command` (one torch thread per process), wait for it, and return its standard
    output; a failing command raises with the end of its standard error."""
    command = cli_command(*args, torchrun_processes=torchrun_processes)
    completed = subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                               env=os.environ | {"OMP_NUM_THREADS": "1"})
    if completed.returncode != 0:
        raise InputError(f"`{' '.join(command[1:])}` failed with exit code {completed.returncode}:\n"
                         f"{completed.stderr[-3000:]}")
    return completed.stdout
