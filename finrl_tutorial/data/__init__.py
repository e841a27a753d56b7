"""Data: sources → validated bars → cleaned `MarketData` with train/valid/test splits."""
from __future__ import annotations

import os

import pandas as pd

from . import sources
from .clean import (DEFAULT_INDICATORS, SSE15_SPLITS, PreparedMarket, check_split_lengths, fraction_splits,
                    prepare_market, prepare_validated)
from .market import MarketData
from .sample import SAMPLES, load_sample, sample_licence
from .schema import DataError, canonical_ticker, check_splits, names_argument, parse_date, validate_bars
from .sources import source_status
from .synthetic import SIGNAL_FAMILIES, SyntheticMarket, SyntheticSpec, make_synthetic

SOURCES = ("sample", "tushare", "akshare", "baostock")


def load_market(source="sample", *, tickers=None, start=None, end=None, splits=None,
                indicators=DEFAULT_INDICATORS, sample: str = "sse15", token: str | None = None,
                cache_dir: str | None = None, date_format: str | None = None,
                feature_stats: dict | None = None) -> PreparedMarket:
    """Load bars from ``source`` and clean them into a `PreparedMarket`.

    ``source`` is ``sample`` (the embedded data, no network), ``tushare`` (token from ``token`` or
    ``TUSHARE_TOKEN``), ``akshare``, ``baostock``, the path of a CSV file in the bar schema (a
    string or a ``Path``), or a DataFrame in the bar schema.
    ``tickers``/``start``/``end`` select the universe and dates (required for online sources).
    ``splits`` maps train/valid/test to (start, end); default: the sample's own splits, else
    60/20/20 % of the calendar. ``date_format`` reads an ambiguous date column (``'%d/%m/%Y'``);
    ``feature_stats`` normalises with given statistics instead of fitting them (see `prepare_market`).
    """
    tickers = names_argument(tickers, "tickers")
    indicators = tuple(names_argument(indicators, "indicators") or ())
    check_splits(splits)  # before any (slow, online) fetch
    first = parse_date(start, "start") if start is not None else None
    last = parse_date(end, "end") if end is not None else None
    if first is not None and last is not None and first > last:
        raise DataError(f"start {first.date()} is after end {last.date()}")
    benchmark = calendar = listings = None
    validated = False  # the fetchers validate their own output
    if isinstance(source, pd.DataFrame):
        bars, label = source, "dataframe"
    elif isinstance(source, os.PathLike):
        bars, label = sources.read_csv_bars(source), str(source)
    elif not isinstance(source, str):
        raise DataError(f"source must be a name, a CSV path or a DataFrame, got {type(source).__name__}")
    elif source == "sample":
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
        validated = True
    elif source.lower().endswith((".csv", ".csv.gz", ".csv.bz2", ".csv.zip", ".csv.xz")) or os.path.exists(source):
        bars, label = sources.read_csv_bars(source), source
    else:
        raise DataError(f"unknown data source {source!r}: use sample, tushare, akshare, baostock or a CSV path")

    if not validated:
        bars = validate_bars(bars, min_history=1, date_format=date_format)  # the one entry check
    if tickers:
        wanted = list(dict.fromkeys(canonical_ticker(t) for t in tickers))  # the spelling the bars have now
        bars = bars[bars["tic"].isin(wanted)]
        missing = [t for t in wanted if t not in set(bars["tic"])]
        if missing:
            raise DataError(f"ticker(s) not in the data: {', '.join(missing)}")
    covers = f"{bars['date'].min().date()}..{bars['date'].max().date()}"
    if last is not None:
        bars = bars[bars["date"] <= last]
    # bars before `start` stay as history: they warm up the indicators, so a day's features do
    # not depend on where the window starts (a backtest on any window sees the training inputs)
    window = bars[bars["date"] >= first] if first is not None else bars
    if window.empty:
        raise DataError(f"no bars between {first.date() if first is not None else 'the start'} and "
                        f"{last.date() if last is not None else 'the end'} (the data covers {covers})")
    counts = window.groupby("tic").size()
    short = counts[counts < 2]
    if len(short):
        raise DataError("ticker(s) with too little history (< 2 trading days): "
                        + ", ".join(f"{t} ({n} days)" for t, n in short.head(5).items()))
    bars = bars[bars["tic"].isin(counts.index)]  # a stock gone before the window is not in it
    return prepare_validated(bars.reset_index(drop=True), splits=splits, indicators=indicators, calendar=calendar,
                             benchmark=benchmark, source=label, feature_stats=feature_stats, listings=listings,
                             window_start=first if first is not None and bars["date"].min() < first else None)


__all__ = ["DEFAULT_INDICATORS", "SAMPLES", "SIGNAL_FAMILIES", "SOURCES", "SSE15_SPLITS", "DataError", "MarketData",
           "PreparedMarket", "SyntheticMarket", "SyntheticSpec", "check_split_lengths", "fraction_splits", "load_market",
           "load_sample", "make_synthetic", "prepare_market", "sample_licence", "source_status", "validate_bars"]
