"""Benchmarks: ``python -m finrl_tutorial bench env|train|scale|gpu|peers|learn``, one JSON line per run.

Speed is measured here, never in unit tests. Every record carries the machine and the date
(`machine`, from `finrl_tutorial.provenance`) so a number can be traced to where it was measured.
"""
from __future__ import annotations

import torch

from ..provenance import machine
from .common import market_with_stocks, timed
from . import env, gpu, learn, peers, scale, train
from .env import measure_env
from .train import measure_loop

KINDS = {"env": env, "train": train, "scale": scale, "gpu": gpu, "peers": peers, "learn": learn}
"""``bench <kind>`` → the module that measures it."""


def add_arguments(parser) -> None:
    kinds = parser.add_subparsers(dest="bench", required=True)
    for module in KINDS.values():
        module.add_arguments(kinds)


def run(args):
    """Yield the JSON records of the chosen benchmark."""
    torch.set_num_threads(getattr(args, "threads", 1) or 1)
    yield from KINDS[args.bench].run(args)


__all__ = ["machine", "market_with_stocks", "measure_env", "measure_loop", "timed"]
