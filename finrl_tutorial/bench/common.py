"""What every benchmark shares: a market of any width, and a timing loop."""
from __future__ import annotations

import time

import torch

from ..data.clean import PreparedMarket
from ..data.market import MarketData


def market_with_stocks(market: MarketData | PreparedMarket, stocks: int) -> MarketData | PreparedMarket:
    """The market widened (columns repeated) or narrowed to ``stocks`` columns, for speed tests; a
    `PreparedMarket` is widened in every split alike."""
    count = (market.full if isinstance(market, PreparedMarket) else market).num_stocks
    return market.select_stocks([i % count for i in range(stocks)])


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


def sync_for(device) -> callable:
    """A function that waits for the queued work of ``device`` (nothing to wait for on the CPU)."""
    device = torch.device(device)
    return (lambda: torch.cuda.synchronize(device)) if device.type == "cuda" else (lambda: None)
