"""Benchmarks: ``python -m finrl_tutorial bench env|train|scale|gpu|peers|learn``, one JSON line per run.

Speed is measured here, never in unit tests. Every record carries the machine and the date so a
number can be traced to where it was measured.
"""
from __future__ import annotations

import datetime
import os
import platform
import time

import torch

from ..data.market import MarketData


def machine() -> dict:
    """Where a figure was measured."""
    info = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "cpu_count": os.cpu_count(), "platform": platform.platform(), "torch": torch.__version__,
            "threads": torch.get_num_threads()}
    if torch.cuda.is_available():
        info["gpu"] = torch.cuda.get_device_name(0)
    return info


def market_with_stocks(market: MarketData, stocks: int) -> MarketData:
    """The market widened (columns repeated) or narrowed to ``stocks`` columns, for speed tests."""
    return market.select_stocks([i % market.num_stocks for i in range(stocks)])


def timed(step, seconds: float, min_calls: int = 3, sync=lambda: None) -> tuple[int, float]:
    """Call ``step()`` repeatedly for about ``seconds`` (after one warm-up call); returns
    ``(calls, elapsed)``. ``sync`` waits for queued device work before the clock is read."""
    step()
    sync()
    calls, start = 0, time.perf_counter()
    while True:
        step()
        calls += 1
        if calls >= min_calls and calls % 8 == 0:
            sync()
            if time.perf_counter() - start >= seconds:
                break
    sync()
    return calls, time.perf_counter() - start


def add_arguments(parser) -> None:
    from . import env, gpu, learn, peers, scale, sweep, train

    kinds = parser.add_subparsers(dest="bench", required=True)
    for module in (env, train, scale, gpu, peers, learn, sweep):
        module.add_arguments(kinds)


def run(args):
    """Yield the JSON records of the chosen benchmark."""
    from . import env, gpu, learn, peers, scale, sweep, train

    torch.set_num_threads(getattr(args, "threads", 1) or 1)
    module = {"env": env, "train": train, "scale": scale, "gpu": gpu, "peers": peers, "learn": learn,
              "sweep": sweep}[args.bench]
    yield from module.run(args)


# The measuring functions the book calls (imported last: these modules import the helpers above).
from .env import measure_env  # noqa: E402
from .train import measure_loop  # noqa: E402
from .sweep import (along_the_curve, default_variants, describe, factor_bars, log_volume_ratio, plot_sweep,  # noqa: E402
                    provenance, run_sweep, summary_table)  # chapters 2 and 7

__all__ = ["machine", "market_with_stocks", "measure_env", "measure_loop", "timed"]
__all__ += ["along_the_curve", "default_variants", "describe", "factor_bars", "log_volume_ratio", "plot_sweep", "provenance",
            "run_sweep", "summary_table"]  # chapters 2 and 7
