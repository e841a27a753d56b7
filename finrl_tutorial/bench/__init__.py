"""Benchmarks: ``python -m finrl_tutorial bench env|processes|train|scale|gpu|peers|learn|sweep|walkforward``, one JSON line per run.

Speed is measured here, never in unit tests. Every record carries the machine and the date
(`machine`, from `finrl_tutorial.provenance`) so a number can be traced to where it was measured. The bench measures and writes records;
the book room (`finrl_tutorial.book`) turns them into tables, sentences and captions.
"""
from __future__ import annotations

import shlex
import sys
from pathlib import Path

import torch

from ..provenance import machine
from .common import market_with_stocks, timed
from . import env, gpu, learn, peers, processes, scale, sweep, train, walkforward
from .env import measure_env
from .scale import scale_label
from .train import measure_loop
from .sweep import default_variants, factor_bars, log_volume_ratio, plot_sweep, run_sweep  # chapters 2, 7

KINDS = {"env": env, "processes": processes, "train": train, "scale": scale, "gpu": gpu, "peers": peers, "learn": learn, "sweep": sweep,
         "walkforward": walkforward}
"""``bench <kind>`` → the module that measures it."""


def add_arguments(parser) -> None:
    kinds = parser.add_subparsers(dest="bench", required=True)
    for module in KINDS.values():
        module.add_arguments(kinds)


def command_line(argv: list[str] | None = None) -> str:
    """The command line of this process, as typed: ``python -m finrl_tutorial …`` when it runs the
    package's ``__main__`` (``sys.argv[0]`` is then the path of ``__main__.py``)."""
    argv = list(sys.argv if argv is None else argv)
    head = Path(argv[0]) if argv else Path()
    if head.name == "__main__.py" and head.parent.name == "finrl_tutorial":
        return shlex.join(["python", "-m", "finrl_tutorial", *argv[1:]])
    return shlex.join(argv)


def run(args):
    """Yield the JSON records of the chosen benchmark, each with the ``command`` that made it
    (a benchmark that writes its own, like ``bench peers``, keeps it). The record is completed in
    place, so a benchmark that also writes the records it yielded to ``--out`` (``bench gpu``,
    ``bench scale``) writes them with their command."""
    torch.set_num_threads(getattr(args, "threads", 1) or 1)
    command = command_line()
    for record in KINDS[args.bench].run(args):
        if isinstance(record, dict):
            record.setdefault("command", command)
        yield record


__all__ = ["command_line", "default_variants", "factor_bars", "log_volume_ratio", "machine", "market_with_stocks",
           "measure_env", "measure_loop", "plot_sweep", "run_sweep", "scale_label", "timed"]
