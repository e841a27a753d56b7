"""Data: sources → validated bars → cleaned `MarketData` with train/valid/test splits."""
from __future__ import annotations

import os

import pandas as pd

from .clean import DEFAULT_INDICATORS, SSE15_SPLITS, PreparedMarket, fraction_splits, prepare_market
from .market import MarketData
from .sample import SAMPLES, load_sample, sample_licence
from .schema import DataError, validate_bars
from .synthetic import SIGNAL_FAMILIES, SyntheticMarket, SyntheticSpec, make_synthetic, oracle_capture

SOURCES = ("sample", "tushare", "akshare", "baostock")


def load_market(source: str = "sample", *, tickers=None, start=None, end=None, splits=None,
                indicators=DEFAULT_INDICATORS, sample: str = "sse15", token: str | None = None,
                cache_dir: str | None = None) -> PreparedMarket:
    """Load bars from ``source`` and clean them into a `PreparedMarket`.

    ``source`` is ``sample`` (the embedded data, no network), ``tushare`` (token from ``token`` or
    ``TUSHARE_TOKEN``), ``akshare``, ``baostock``, or the path of a CSV file in the bar schema.
    ``tickers``/``start``/``end`` select the universe and dates (required for online sources).
    ``splits`` maps train/valid/test to (start, end); default: the sample's own splits, else
    60/20/20 % of the calendar.
    """
    from . import sources

    benchmark = calendar = listings = None
    if source == "sample":
        bars = load_sample(sample)
        label = f"sample:{sample}"
        if splits is None and sample == "sse15" and start is None and end is None:
            splits = SSE15_SPLITS
    elif source in ("tushare", "akshare", "baostock"):
        if not tickers or start is None or end is None:
            raise DataError(f"source {source!r} needs tickers, start and end")
        fetch = getattr(sources, f"fetch_{source}")
        extra = {"token": token, "cache_dir": cache_dir or os.path.expanduser("~/.cache/finrl_tutorial")} \
            if source == "tushare" else {}
        result = fetch(tickers, start, end, corporate_actions=True, **extra)
        bars, calendar, benchmark, label = result.bars, result.calendar, result.benchmark, source
        listings = result.listings
    elif source.lower().endswith(".csv") or os.path.exists(source):
        bars, label = sources.read_bars(source).bars, source
    else:
        raise DataError(f"unknown data source {source!r}: use sample, tushare, akshare, baostock or a CSV path")

    bars = validate_bars(bars)
    if tickers:
        wanted = [tickers] if isinstance(tickers, str) else list(tickers)
        known = set(bars["tic"])  # accept '600000' for '600000.SH'; own data may use any codes
        wanted = [t if t in known else sources.normalize_tickers(t)[0] for t in wanted]
        bars = bars[bars["tic"].isin(wanted)]
        missing = sorted(set(wanted) - set(bars["tic"]))
        if missing:
            raise DataError(f"ticker(s) not in the data: {', '.join(missing)}")
    if start is not None:
        bars = bars[bars["date"] >= pd.Timestamp(start)]
    if end is not None:
        bars = bars[bars["date"] <= pd.Timestamp(end)]
    return prepare_market(bars, splits=splits, indicators=indicators, calendar=calendar,
                          benchmark=benchmark, source=label, listings=listings)


__all__ = ["DEFAULT_INDICATORS", "SAMPLES", "SIGNAL_FAMILIES", "SOURCES", "SSE15_SPLITS", "DataError", "MarketData",
           "PreparedMarket", "SyntheticMarket", "SyntheticSpec", "fraction_splits", "load_market", "load_sample",
           "make_synthetic", "oracle_capture", "prepare_market", "sample_licence", "validate_bars"]
