"""The one table format every data source is normalised to, and its validation.

A *bar table* has one row per (trading day, ticker) on which the stock traded:

=============  ========  ==========================================================
column         required  meaning
=============  ========  ==========================================================
``date``       yes       trading day (anything ``pandas.to_datetime`` parses)
``tic``        yes       ticker, e.g. ``600000.SH``
``open``       yes       unadjusted prices in yuan
``high``       yes
``low``        yes
``close``      yes
``volume``     yes       shares (not lots)
``amount``     no        turnover in yuan (not thousands of yuan)
``pre_close``  no        the exchange's reference previous close (ex-rights adjusted)
``adj_factor`` no        cumulative adjustment factor (tushare ``adj_factor``)
``up_limit``   no        the day's limit-up price
``down_limit`` no        the day's limit-down price
``is_st``      no        1 when the stock is under special treatment (±5 % limit)
``cash_dividend`` no     cash dividend per share, pre-tax, on its ex-date row
``bonus_shares``  no     bonus + transfer shares per share (10送3 = 0.3), ex-date row
=============  ========  ==========================================================

Any other numeric column is a user feature (a factor) that reaches the observation.
A stock absent on a trading day was suspended that day: do not add rows for it.
"""
from __future__ import annotations

import pandas as pd

REQUIRED_COLUMNS = ("date", "tic", "open", "high", "low", "close", "volume")
OPTIONAL_COLUMNS = ("amount", "pre_close", "adj_factor", "up_limit", "down_limit", "is_st",
                    "cash_dividend", "bonus_shares")
PRICE_COLUMNS = ("open", "high", "low", "close")


class DataError(ValueError):
    """Bad input data. The message names the problem in one line."""


def _examples(frame: pd.DataFrame, limit: int = 3) -> str:
    rows = [f"{row.tic} {pd.Timestamp(row.date).date()}" for row in frame.head(limit).itertuples()]
    more = f" (+{len(frame) - limit} more)" if len(frame) > limit else ""
    return ", ".join(rows) + more


def feature_columns(frame: pd.DataFrame) -> list[str]:
    """User feature columns: every numeric column that is not part of the schema."""
    known = set(REQUIRED_COLUMNS) | set(OPTIONAL_COLUMNS)
    return [c for c in frame.columns if c not in known and pd.api.types.is_numeric_dtype(frame[c])]


def validate_bars(frame: pd.DataFrame, min_history: int = 2) -> pd.DataFrame:
    """Check a bar table and return a clean copy sorted by (date, tic).

    Raises :class:`DataError` naming the first problem found: a missing column, unparseable
    dates, non-numeric or NaN prices, a price <= 0, high < low, a duplicate (date, tic), or a
    ticker with fewer than ``min_history`` trading days.
    """
    if not isinstance(frame, pd.DataFrame):
        raise DataError(f"expected a pandas DataFrame of daily bars, got {type(frame).__name__}")
    frame = frame.copy()
    frame.columns = [str(c).strip().lower() for c in frame.columns]
    missing = [c for c in REQUIRED_COLUMNS if c not in frame.columns]
    if missing:
        raise DataError(f"missing required column(s): {', '.join(missing)} "
                        f"(required: {', '.join(REQUIRED_COLUMNS)})")
    if frame.empty:
        raise DataError("the data has no rows")

    dates = pd.to_datetime(frame["date"].astype(str), errors="coerce", format="mixed")
    bad = frame.loc[dates.isna(), "date"]
    if len(bad):
        raise DataError(f"unparseable date(s) in column 'date': {', '.join(map(repr, bad.head(3).tolist()))}")
    frame["date"] = dates.dt.normalize().astype("datetime64[ns]")
    frame["tic"] = frame["tic"].astype(str).str.strip()

    for column in PRICE_COLUMNS + ("volume",) + tuple(c for c in OPTIONAL_COLUMNS if c in frame.columns):
        values = pd.to_numeric(frame[column], errors="coerce")
        not_numeric = values.isna() & frame[column].notna()
        if not_numeric.any():
            raise DataError(f"non-numeric value(s) in column '{column}': {_examples(frame[not_numeric])}")
        frame[column] = values.astype("float64")

    for column in PRICE_COLUMNS:
        nan = frame[column].isna()
        if nan.any():
            raise DataError(f"NaN in price column '{column}' at {_examples(frame[nan])}")
        nonpositive = frame[column] <= 0
        if nonpositive.any():
            raise DataError(f"price <= 0 in column '{column}' at {_examples(frame[nonpositive])}")
    inverted = frame["high"] < frame["low"]
    if inverted.any():
        raise DataError(f"high < low at {_examples(frame[inverted])}")
    if (frame["volume"] < 0).any():
        raise DataError(f"negative volume at {_examples(frame[frame['volume'] < 0])}")
    frame["volume"] = frame["volume"].fillna(0.0)

    duplicated = frame.duplicated(["date", "tic"], keep=False)
    if duplicated.any():
        raise DataError(f"duplicate (date, tic) row(s): {_examples(frame[duplicated])}")

    counts = frame.groupby("tic").size()
    short = counts[counts < min_history]
    if len(short):
        raise DataError(f"ticker(s) with too little history (< {min_history} trading days): "
                        + ", ".join(f"{t} ({n} days)" for t, n in short.head(5).items()))
    return frame.sort_values(["date", "tic"], ignore_index=True)
