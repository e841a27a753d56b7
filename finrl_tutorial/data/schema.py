"""The one table format every data source is normalised to, and its validation.

A *bar table* has one row per (trading day, ticker) on which the stock traded:

=============  ========  ==========================================================
column         required  meaning
=============  ========  ==========================================================
``date``       yes       trading day: ``YYYY-MM-DD``, ``YYYYMMDD``, ``YYYY/MM/DD``, a
                         timestamp (a time zone is converted to the exchange's date),
                         or any one format given as ``date_format``
``tic``        yes       ticker, e.g. ``600000.SH`` (also ``600000``, ``sh.600000``,
                         ``SH600000``, ``600000.XSHG``: all become ``600000.SH``)
``open``       yes       unadjusted prices in yuan, finite and > 0,
``high``       yes       with low <= open, close <= high
``low``        yes
``close``      yes
``volume``     yes       shares (not lots), finite and >= 0
``amount``     no        turnover in yuan (not thousands of yuan): amount / volume
                         must lie within the day's [low, high]
``pre_close``  no        the exchange's reference previous close (ex-rights adjusted)
``adj_factor`` no        cumulative adjustment factor (tushare ``adj_factor``), > 0
``up_limit``   no        the day's limit-up price (the day's prices lie within the limits)
``down_limit`` no        the day's limit-down price
``is_st``      no        1 when the stock is under special treatment (±5 % limit), else 0
``cash_dividend`` no     cash dividend per share, pre-tax, on its ex-date row
``bonus_shares``  no     bonus + transfer shares per share (10送3 = 0.3), ex-date row
=============  ========  ==========================================================

Any other numeric column is a user feature (a factor) that reaches the observation: its cells
must be numbers (empty cells are allowed and mean "not known yet"; they carry the last value
forward), never text or ±inf. A column of text only (a name, an industry) is kept but is not a
feature. A saved index (a column named ``Unnamed: 0``, ``index`` or ``level_0``) is dropped. A stock absent on a trading day was
suspended that day: do not add rows for it.

`validate_bars` is the one entry check every source goes through: whatever it returns is
finite, consistent and sorted, with canonical tickers, or it raised a `DataError` naming the
column, the first offending rows and their values.
"""
from __future__ import annotations

import re
import warnings
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from .. import rules
from ..errors import ConfigError, DataWarning, InputError

REQUIRED_COLUMNS = ("date", "tic", "open", "high", "low", "close", "volume")
OPTIONAL_COLUMNS = ("amount", "pre_close", "adj_factor", "up_limit", "down_limit", "is_st",
                    "cash_dividend", "bonus_shares")
PRICE_COLUMNS = ("open", "high", "low", "close")

RESERVED_NAMES = frozenset({"ref_close", "split_ratio", "dividend", "action_detected", "up_limit_", "down_limit_",
                            "adj_open", "adj_high", "adj_low", "adj_close", "adj_volume", "tradable"})
"""Column names the cleaning computes itself (a user factor of that name would be overwritten):
a user factor may not take them."""

TICK = 0.01
"""A-share prices are quoted in fen: the 0.01 yuan tick (the exchanges' trading rules)."""

PRICE_RANGE = (0.10, 100_000.0)
"""Prices must lie in this range (yuan per share). Below ¥0.10 a ±10 % limit is less than one
0.01 tick (limits would round onto the price itself); no A-share has traded there. The highest
A-share price so far is about ¥2,600 (600519.SH, 2021): ¥100,000 is a price in fen or in another
unit, and no account could buy a lot of it."""

EX_RIGHTS_RANGE = (1 / 1.5, 1.5)
"""On a row with an announced ``cash_dividend``/``bonus_shares``, close / ex-rights reference
(previous close less the cash, divided by 1 + the shares) must lie in this range: wider than any
daily limit (±30 % at most), so only a dividend or bonus written in the wrong unit (per 10
shares, 每10股) falls outside."""

MAX_BONUS_SHARES = 10.0
"""Bonus + transfer shares per share above this are a ratio per 10 shares written as per share."""

EXCHANGE_TIMEZONE = "Asia/Shanghai"
"""Shanghai, Shenzhen and Beijing trade on Beijing time: tz-aware dates become dates there."""

AMOUNT_TOLERANCE = 0.05
"""amount / volume may lie this fraction outside [low, high] (providers round both); a unit
mistake (thousands of yuan, lots instead of shares) is off by 100× or more."""

PRE_CLOSE_RANGE = (1 / 20, 20.0)
"""close / pre_close must lie in this range: wider than any limit, IPO day included; a price
in another unit (fen, thousands) is far outside."""

FACTOR_LIMIT = 1e100
"""A user factor's values must lie within ±this (their squares must not overflow)."""

_OTHER_NAMES = {"date": ("trade_date", "time", "datetime", "day"), "tic": ("ts_code", "code", "symbol", "ticker"),
                "volume": ("vol",)}  # what providers call the required columns

_INDEX_LIKE = re.compile(r"unnamed: \d+|level_\d+|index")


class DataError(InputError):
    """Bad input data. The message names the problem in one line."""


# --------------------------------------------------------------------------- tickers

_EXCHANGES = {"SH": "SH", "SS": "SH", "XSHG": "SH", "SZ": "SZ", "XSHE": "SZ", "BJ": "BJ", "BJSE": "BJ",
              "XBSE": "BJ", "BSE": "BJ"}
_CODE_THEN_EXCHANGE = re.compile(r"(\d{6})\.?(" + "|".join(_EXCHANGES) + r")")
_EXCHANGE_THEN_CODE = re.compile(r"(" + "|".join(_EXCHANGES) + r")\.?(\d{6})")


def exchange_of(code: str) -> str:
    """The exchange of a bare 6-digit A-share code: ``SH``, ``SZ`` or ``BJ``.

    6xxxxx trade in Shanghai, 0xxxxx / 3xxxxx in Shenzhen, 4xxxxx / 8xxxxx / 92xxxx in Beijing.
    """
    text = str(code).strip()
    if not re.fullmatch(r"\d{6}", text):
        raise DataError(f"not a 6-digit A-share code: {code!r}")
    if text.startswith("92") or text[0] in "48":
        return "BJ"
    if text[0] == "6":
        return "SH"
    if text[0] in "03":
        return "SZ"
    raise DataError(f"cannot tell the exchange of code {code!r} (expected 6xxxxx Shanghai, "
                    "0xxxxx/3xxxxx Shenzhen, 4xxxxx/8xxxxx/92xxxx Beijing); write it with its exchange, "
                    f"e.g. {text}.SH")


def canonical_ticker(ticker, strict: bool = False) -> str:
    """A ticker in the package's form ``600000.SH``.

    Accepts ``600000``, ``600000.SH``, ``600000.sh``, ``sh.600000``, ``SH600000``,
    ``600000.XSHG`` / ``.XSHE`` (JoinQuant, RiceQuant), ``600000.SS`` (Yahoo). An explicit
    exchange is kept as written. Anything else is an error when ``strict``; otherwise it is your
    own code, kept stripped and upper-cased (so ``abc`` and ``ABC`` are one stock), and the
    rules treat it as a main-board stock (±10 %).
    """
    text = str(ticker).strip().upper()
    if re.fullmatch(r"\d{6}", text):
        return f"{text}.{exchange_of(text)}"
    match = _CODE_THEN_EXCHANGE.fullmatch(text)
    if match:
        return f"{match.group(1)}.{_EXCHANGES[match.group(2)]}"
    match = _EXCHANGE_THEN_CODE.fullmatch(text)
    if match:
        return f"{match.group(2)}.{_EXCHANGES[match.group(1)]}"
    if strict or not text or text in ("NAN", "NONE", "<NA>"):
        raise DataError(f"not an A-share ticker: {ticker!r} (expected e.g. 600000.SH, 000001.SZ or 600000)")
    return text


def stock_ticker(spelling) -> str:
    """`canonical_ticker`, refusing by name a code that is not an A-share stock (a B-share, fund,
    index, bond, Hong Kong or foreign ticker: `rules.not_an_a_share`) instead of reading it as a
    main-board stock."""
    ticker = canonical_ticker(spelling)
    reason = rules.not_an_a_share(ticker)
    if reason is not None:
        raise DataError(f"ticker {spelling!r} is {reason}, not an A-share stock: the rules cover Shanghai, "
                        "Shenzhen and Beijing A-shares only; leave its rows out")
    return ticker


# --------------------------------------------------------------------------- dates

_DATE_FORMATS = {
    "%Y-%m-%d": "YYYY-MM-DD", "%Y%m%d": "YYYYMMDD", "%Y/%m/%d": "YYYY/MM/DD", "%Y.%m.%d": "YYYY.MM.DD",
    "%d/%m/%Y": "DD/MM/YYYY", "%m/%d/%Y": "MM/DD/YYYY", "%d-%m-%Y": "DD-MM-YYYY", "%m-%d-%Y": "MM-DD-YYYY",
    "%d.%m.%Y": "DD.MM.YYYY", "ISO8601": "ISO 8601 date and time",
}
_HAS_TIMEZONE = re.compile(r".*\d{2}:\d{2}(:\d{2}(\.\d+)?)?\s*(Z|UTC|[+-]\d{2}(:?\d{2})?)$", re.IGNORECASE)


def _exchange_dates(stamps: pd.Series) -> pd.Series:
    """Calendar dates on the exchange: tz-aware stamps are converted to Beijing time first."""
    if isinstance(stamps.dtype, pd.DatetimeTZDtype):
        stamps = stamps.dt.tz_convert(EXCHANGE_TIMEZONE).dt.tz_localize(None)
    return stamps.dt.normalize().astype("datetime64[ns]")


def _parse_strings(texts: pd.Index, column: str, date_format: str | None) -> pd.Series:
    """Unique date strings -> dates, by the one format that reads all of them."""
    def parse(fmt):
        if fmt == "ISO8601" and zoned:
            return pd.to_datetime(texts, format="ISO8601", utc=True, errors="coerce")
        return pd.to_datetime(texts, format=fmt, errors="coerce")

    zoned = np.array([bool(_HAS_TIMEZONE.match(t)) for t in texts])
    if zoned.any() and not zoned.all():
        raise DataError(f"dates in column {column!r} mix time zones: {texts[zoned][0]!r} has one, "
                        f"{texts[~zoned][0]!r} has none")
    zoned = bool(zoned.any())
    if date_format is not None:
        try:
            parsed = parse(date_format)
        except (ValueError, TypeError) as error:
            raise DataError(f"bad date format {date_format!r}: {error}") from None
        bad = texts[pd.isna(parsed)]
        if len(bad):
            raise DataError(f"date(s) in column {column!r} do not match the format {date_format!r}: "
                            + ", ".join(map(repr, bad[:3])))
        return pd.Series(parsed, index=texts)

    candidates = {fmt: parse(fmt) for fmt in (["ISO8601"] if zoned else _DATE_FORMATS)}
    complete = {fmt: p for fmt, p in candidates.items() if not pd.isna(p).any()}
    if complete:
        readings = list(complete.items())
        first_fmt, first = readings[0]
        for fmt, other in readings[1:]:
            differs = np.flatnonzero(np.asarray(_exchange_dates(pd.Series(first)) != _exchange_dates(pd.Series(other))))
            if len(differs):
                i = differs[0]
                raise DataError(
                    f"ambiguous dates in column {column!r}: {texts[i]!r} reads as "
                    f"{pd.Timestamp(first[i]).date()} ({_DATE_FORMATS[first_fmt]}) or "
                    f"{pd.Timestamp(other[i]).date()} ({_DATE_FORMATS[fmt]}); "
                    "say which with --date-format (date_format=), e.g. '%d/%m/%Y'")
        return pd.Series(first, index=texts)
    best_fmt = max(candidates, key=lambda fmt: int((~pd.isna(candidates[fmt])).sum()))
    failed = pd.isna(candidates[best_fmt])
    bad = texts[failed]
    if (~failed).any():
        for fmt, parsed in candidates.items():
            readable = ~pd.isna(parsed[failed])
            if fmt != best_fmt and readable.any():
                raise DataError(f"dates in column {column!r} mix formats: {texts[~failed][0]!r} "
                                f"({_DATE_FORMATS[best_fmt]}) and {bad[readable][0]!r} ({_DATE_FORMATS[fmt]}); "
                                "write every date in one format")
    hint = f" (the others read as {_DATE_FORMATS[best_fmt]})" if (~failed).any() else \
        " (expected e.g. YYYY-MM-DD, or give --date-format)"
    raise DataError(f"unparseable date(s) in column {column!r}: {', '.join(map(repr, bad[:3]))}{hint}")


def parse_dates(values: pd.Series, column: str = "date", date_format: str | None = None) -> pd.Series:
    """Strictly parsed trading dates (``datetime64[ns]`` at midnight), one per value.

    Strings must all follow one format: the one of ``date_format`` if given, else the one
    format among the usual ones (ISO, YYYYMMDD, DD/MM/YYYY, MM/DD/YYYY …) that reads every
    value. When two formats read every value differently (``03/04/2020``), the dates are
    ambiguous and that is an error. Time-zone-aware values become the date in Beijing.
    """
    values = pd.Series(values).reset_index(drop=True)
    missing = values.isna()
    if missing.any():
        rows = np.flatnonzero(missing.to_numpy())[:3].tolist()
        raise DataError(f"missing date(s) in column {column!r} at row(s) {rows}")
    if pd.api.types.is_datetime64_any_dtype(values.dtype):
        return _exchange_dates(values)
    if pd.api.types.is_bool_dtype(values.dtype):
        raise DataError(f"column {column!r} holds True/False, not dates")
    if pd.api.types.is_numeric_dtype(values.dtype):
        whole = values.astype(float)
        if not (whole == whole.round()).all() or not whole.between(1e7, 1e8 - 1).all():
            example = values[~(whole.between(1e7, 1e8 - 1) & (whole == whole.round()))].iloc[0]
            raise DataError(f"dates in column {column!r} are numbers that are not YYYYMMDD (e.g. {_show(example)}): "
                            "write them as YYYY-MM-DD")
        values = whole.astype("int64").astype(str)
    if values.map(lambda v: isinstance(v, (pd.Timestamp, np.datetime64)) or hasattr(v, "year")).all():
        stamps = [pd.Timestamp(v) for v in values]
        if any(s.tzinfo is not None for s in stamps):  # each converted on its own (time zones may differ)
            stamps = [s.tz_convert(EXCHANGE_TIMEZONE).tz_localize(None) if s.tzinfo is not None else s
                      for s in stamps]
        return pd.Series(pd.DatetimeIndex(stamps).normalize().astype("datetime64[ns]"))
    texts = values.astype(str).str.strip()
    unique = pd.Index(texts.unique())
    parsed = _parse_strings(unique, column, date_format)
    return _exchange_dates(pd.Series(parsed.reindex(texts.to_numpy()).to_numpy()))


def parse_date(value, what: str) -> pd.Timestamp:
    """One date given as an argument (``start``, ``end``): ``YYYY-MM-DD``, ``YYYYMMDD``,
    ``YYYY/MM/DD``, an ISO timestamp, or a date/Timestamp object. Nothing day-first or
    month-first: one value cannot show which it is."""
    if not isinstance(value, str) and (isinstance(value, (pd.Timestamp, np.datetime64)) or hasattr(value, "year")):
        return parse_dates(pd.Series([value]), what).iloc[0]
    text = str(value).strip()
    for fmt in ("%Y-%m-%d", "%Y%m%d", "%Y/%m/%d", "ISO8601"):
        if fmt == "ISO8601" and not re.match(r"\d{4}-\d{2}-\d{2}[T ]", text):
            continue
        try:
            return parse_dates(pd.Series([text]), what, date_format=fmt).iloc[0]
        except DataError:
            continue
    raise DataError(f"{what} date {value!r} is not a date in the form YYYY-MM-DD (or YYYYMMDD)")


# --------------------------------------------------------------------------- validation

def _show(value) -> str:
    """A cell as the user wrote it: ``-1.0``, ``inf``, ``'abc'`` (not numpy's ``np.float64(-1.0)``)."""
    if isinstance(value, (bool, np.bool_)):
        return repr(bool(value))
    if isinstance(value, (int, float, np.integer, np.floating)):
        return repr(float(value)) if isinstance(value, (float, np.floating)) else repr(int(value))
    return repr(value)


def _examples(frame: pd.DataFrame, column: str | None = None, limit: int = 3) -> str:
    """``600000.SH 2020-01-07 (row 3)[: value]`` for the first ``limit`` rows, + how many more."""
    parts = []
    for index, row in frame.head(limit).iterrows():
        date = row["date"]
        date = pd.Timestamp(date).date() if isinstance(date, (pd.Timestamp, np.datetime64)) else date
        where = f"{row['tic']} {date} (row {index})"
        parts.append(f"{where}: {_show(row[column])}" if column is not None else where)
    more = f" (+{len(frame) - limit} more)" if len(frame) > limit else ""
    return ", ".join(parts) + more


def feature_columns(frame: pd.DataFrame) -> list[str]:
    """User feature columns: every numeric column that is not part of the schema."""
    known = set(REQUIRED_COLUMNS) | set(OPTIONAL_COLUMNS)
    return [c for c in frame.columns if c not in known and pd.api.types.is_numeric_dtype(frame[c])]


def _numbers(frame: pd.DataFrame, column: str, what: str) -> pd.Series:
    """``frame[column]`` as float64; a cell that is not a number is an error naming it."""
    raw = frame[column]
    if pd.api.types.is_bool_dtype(raw.dtype):
        return raw.astype("float64")
    values = pd.to_numeric(raw, errors="coerce")
    not_numeric = values.isna() & raw.notna()
    if not_numeric.any():
        raise DataError(f"non-numeric value(s) in {what} {column!r}: {_examples(frame[not_numeric], column)}")
    return values.astype("float64")


def _check(frame: pd.DataFrame, bad: pd.Series, message: str, column: str | None = None) -> None:
    if bad.any():
        raise DataError(f"{message} at {_examples(frame[bad], column)}")


def _dominating_value(values: pd.Series) -> int | None:
    """Index of a single value that inflates the column's standard deviation more than 10×
    (its z-scores would squash every other value towards 0), or None."""
    finite = values.dropna()
    if len(finite) < 20:
        return None
    deviation = (finite - finite.median()).to_numpy()
    worst = int(np.abs(deviation).argmax())
    rest = np.delete(deviation, worst)
    rest_std = rest.std()
    if rest_std == 0:
        return None  # a rare-event dummy: the other values are all alike anyway
    return finite.index[worst] if abs(deviation[worst]) / np.sqrt(len(deviation)) > 10 * rest_std else None


def validate_bars(frame: pd.DataFrame, min_history: int = 2, date_format: str | None = None) -> pd.DataFrame:
    """Check a bar table and return a clean copy sorted by (date, tic).

    One pass at the entry, for every source. Raises :class:`DataError` naming the first problem
    found (column, first rows and values): a missing or duplicated column, a missing, ambiguous
    or mixed-format date, a ticker that cannot be read, a price that is not a finite number > 0,
    low > open/close > high, a bad optional column (see the module docstring), a user factor
    with text or ±inf in it or one value that would swamp its normalisation, a name the cleaning
    reserves, a duplicate (date, tic) (spellings of one ticker count as one), or a ticker with
    fewer than ``min_history`` trading days. Tickers come back canonical (``600000.SH``), dates as
    ``datetime64[ns]`` exchange dates.
    """
    if not isinstance(frame, pd.DataFrame):
        raise DataError(f"expected a pandas DataFrame of daily bars, got {type(frame).__name__}")
    frame = frame.copy()
    frame.columns = [str(c).strip().lower() for c in frame.columns]
    repeated = sorted({c for c in frame.columns if list(frame.columns).count(c) > 1})
    if repeated:
        raise DataError(f"duplicate column name(s) (names are case-insensitive): {', '.join(repeated)}")
    frame = frame.drop(columns=[c for c in frame.columns if _INDEX_LIKE.fullmatch(c)])  # a saved index
    missing = [c for c in REQUIRED_COLUMNS if c not in frame.columns]
    if missing:
        renames = [f"{other} -> {name}" for name in missing for other in _OTHER_NAMES.get(name, ())
                   if other in frame.columns]
        hint = f"; rename {', '.join(renames)}" if renames else ""
        raise DataError(f"missing required column(s): {', '.join(missing)} "
                        f"(required: {', '.join(REQUIRED_COLUMNS)}){hint}")
    if frame.empty:
        raise DataError("the data has no rows")
    frame = frame.reset_index(drop=True)  # row numbers in messages are positions in the input

    spelled = frame["tic"]
    if spelled.isna().any():
        raise DataError(f"missing ticker(s) in column 'tic' at row(s) {np.flatnonzero(spelled.isna())[:3].tolist()}")
    if pd.api.types.is_numeric_dtype(spelled.dtype) and not pd.api.types.is_bool_dtype(spelled.dtype):
        if not (spelled == spelled.round()).all():
            raise DataError(f"tickers in column 'tic' are numbers with decimals (e.g. {_show(spelled.iloc[0])})")
        spelled = spelled.astype("int64").map(lambda code: f"{code:06d}")  # 1 was 000001 before a number lost its zeros
    canonical = {t: stock_ticker(t) for t in spelled.unique()}
    frame["tic"] = spelled.map(canonical)
    written = frame["date"]
    frame["date"] = parse_dates(written, "date", date_format)

    present_optional = tuple(c for c in OPTIONAL_COLUMNS if c in frame.columns)
    for column in PRICE_COLUMNS + ("volume",) + present_optional:
        frame[column] = _numbers(frame, column, "column")
    for column in PRICE_COLUMNS:
        _check(frame, frame[column].isna(), f"NaN in price column {column!r}")
        _check(frame, np.isinf(frame[column]), f"non-finite price in column {column!r}", column)
        _check(frame, frame[column] <= 0, f"price <= 0 in column {column!r}", column)
        _check(frame, frame[column] < PRICE_RANGE[0], f"price below ¥{PRICE_RANGE[0]:.2f} in column {column!r} "
               "(its ±10 % limit would be under one 0.01 tick; no A-share trades there: prices in another unit?)",
               column)
        _check(frame, frame[column] > PRICE_RANGE[1], f"price above ¥{PRICE_RANGE[1]:,.0f} in column {column!r} "
               "(no A-share has traded above about ¥2,600, and no account could buy a lot: prices in fen, or "
               "another unit?)", column)
    _warn_off_tick(frame)
    high, low = frame["high"], frame["low"]
    slack = 1e-9 * high  # the same decimal written twice may differ in the last bit
    _check(frame, high < low, "high < low")
    for column in ("open", "close"):
        _check(frame, (frame[column] > high + slack) | (frame[column] < low - slack),
               f"{column} outside [low, high]", column)
    _check(frame, frame["volume"].isna(), "missing volume (write 0 for no trades, or leave the row out)")
    _check(frame, ~np.isfinite(frame["volume"]), "non-finite volume", "volume")
    _check(frame, frame["volume"] < 0, "negative volume", "volume")
    if (frame["volume"] == 0).all():
        raise DataError("volume is 0 on every row: nothing can be traded (at most a share of the day's volume "
                        "fills); give the traded volume in shares")
    silent = frame.groupby("tic")["volume"].max()
    if (silent == 0).any():
        warnings.warn(f"ticker(s) with volume 0 on every row: {', '.join(silent[silent == 0].index[:5])}: they can "
                      "never be traded (give their traded volume in shares, or leave them out)", DataWarning,
                      stacklevel=3)
    _check_optional(frame, present_optional)

    for column in [c for c in frame.columns if c not in REQUIRED_COLUMNS + OPTIONAL_COLUMNS]:
        _check_factor(frame, column)

    duplicated = frame.duplicated(["date", "tic"], keep=False)
    if duplicated.any():
        rows = frame[duplicated]
        spellings = sorted({str(s) for s in spelled[duplicated]})
        also = f" (one ticker spelled {', '.join(map(repr, spellings))})" \
            if len(spellings) > rows["tic"].nunique() else ""
        if not also and written[duplicated].astype(str).nunique() > frame.loc[duplicated, "date"].nunique():
            also = " (the rows differ only in the time of day: the bars must be daily)"
        raise DataError(f"duplicate (date, tic) row(s): {_examples(rows)}{also}")
    _check_corporate_actions(frame)

    counts = frame.groupby("tic").size()
    short = counts[counts < min_history]
    if len(short):
        raise DataError(f"ticker(s) with too little history (< {min_history} trading days): "
                        + ", ".join(f"{t} ({n} days)" for t, n in short.head(5).items()))
    return frame.sort_values(["date", "tic"], ignore_index=True)


def _check_optional(frame: pd.DataFrame, present: tuple[str, ...]) -> None:
    """Optional provider columns: finite where given, positive where prices, and consistent with the bars."""
    for column in present:
        values = frame[column]
        _check(frame, np.isinf(values), f"non-finite value in column {column!r}", column)
    for column in ("pre_close", "adj_factor", "up_limit"):
        if column in present:
            _check(frame, frame[column] <= 0, f"{column} <= 0", column)
    if "down_limit" in present:
        _check(frame, frame["down_limit"] < 0, "down_limit < 0", "down_limit")
    if "amount" in present:
        amount, volume = frame["amount"], frame["volume"]
        _check(frame, amount < 0, "negative amount", "amount")
        traded = (volume > 0) & (amount > 0)
        average = amount / volume.where(traded)
        outside = traded & ((average < frame["low"] * (1 - AMOUNT_TOLERANCE))
                            | (average > frame["high"] * (1 + AMOUNT_TOLERANCE)))
        if outside.any():
            row = frame[outside].iloc[0]
            raise DataError(f"amount / volume (the day's average price, {row['amount'] / row['volume']:.4g}) outside "
                            f"[low, high] = [{row['low']}, {row['high']}] at {_examples(frame[outside])}: "
                            "amount must be in yuan and volume in shares")
    if "pre_close" in present:
        ratio = frame["close"] / frame["pre_close"]
        low, high = PRE_CLOSE_RANGE
        _check(frame, (ratio < low) | (ratio > high),
               "pre_close far from the day's close (it must be the previous close in yuan)", "pre_close")
    if "up_limit" in present and "down_limit" in present:
        _check(frame, frame["down_limit"] > frame["up_limit"], "down_limit > up_limit", "down_limit")
    half_tick = 0.005 + 1e-9
    if "up_limit" in present:
        _check(frame, frame["high"] > frame["up_limit"] + half_tick, "high above up_limit (no trade can pass "
               "the limit)", "high")
    if "down_limit" in present:
        _check(frame, frame["low"] < frame["down_limit"] - half_tick, "low below down_limit (no trade can pass "
               "the limit)", "low")
    if "is_st" in present:
        _check(frame, frame["is_st"].notna() & ~frame["is_st"].isin((0.0, 1.0)), "is_st not 0 or 1", "is_st")


def _warn_off_tick(frame: pd.DataFrame) -> None:
    """Prices off the 0.01 tick are legal numbers but not exchange prices: adjusted (qfq/hfq)
    prices, or a unit mistake. The env trades them as given (limits, lots and fees assume raw
    prices), so say so."""
    ticks = frame[list(PRICE_COLUMNS)].to_numpy() / TICK
    off = np.abs(ticks - np.round(ticks)) > 1e-6 * np.maximum(1.0, np.abs(ticks))
    if off.any():
        rows = np.flatnonzero(off.any(axis=1))
        column = PRICE_COLUMNS[int(np.flatnonzero(off[rows[0]])[0])]
        warnings.warn(f"{len(rows)} row(s) have prices off the 0.01 yuan tick, e.g. "
                      f"{_examples(frame.iloc[rows[:1]], column)}: A-share prices are quoted in fen; adjusted "
                      "(qfq/hfq) prices would give wrong limits, lots and fees — give unadjusted prices",
                      DataWarning, stacklevel=4)


def _check_corporate_actions(frame: pd.DataFrame) -> None:
    """Announced dividends and bonus shares: not negative, and consistent with the prices (a cash
    dividend below the previous close, a close near the ex-rights reference they imply)."""
    present = [c for c in ("cash_dividend", "bonus_shares") if c in frame.columns]
    if not present:
        return
    for column in present:
        _check(frame, frame[column] < 0, f"negative {column} (a dividend or bonus issue adds to the holder: "
               "write it as a positive amount per share, or leave the cell empty)", column)
    if "bonus_shares" in present:
        _check(frame, frame["bonus_shares"] > MAX_BONUS_SHARES, f"bonus_shares above {MAX_BONUS_SHARES:g} per share "
               "(is it per 10 shares? 10送3 is 0.3)", "bonus_shares")
    ordered = frame.sort_values(["tic", "date"])
    previous = ordered.groupby("tic")["close"].shift(1).reindex(frame.index)
    cash = frame["cash_dividend"].fillna(0.0) if "cash_dividend" in frame else pd.Series(0.0, index=frame.index)
    shares = frame["bonus_shares"].fillna(0.0) if "bonus_shares" in frame else pd.Series(0.0, index=frame.index)
    acted = ((cash > 0) | (shares > 0)) & previous.notna()
    _check(frame, acted & (cash >= previous), "cash_dividend at or above the previous close (a dividend cannot "
           "reach the price: is it per 10 shares? 每10股派X元 is X/10 per share)", "cash_dividend")
    ratio = frame["close"] / ((previous - cash) / (1.0 + shares))
    low, high = EX_RIGHTS_RANGE
    column = "cash_dividend" if "cash_dividend" in present else "bonus_shares"
    _check(frame, acted & ((ratio < low) | (ratio > high)), "the close is far from the ex-rights price that "
           "cash_dividend/bonus_shares imply (beyond any daily limit: per 10 shares instead of per share?)", column)


def _check_factor(frame: pd.DataFrame, column: str) -> None:
    """A user factor: numbers (empty cells allowed), no ±inf, no single value swamping the rest.
    A column with no number at all is text (a name, an industry): kept, not a feature."""
    raw = frame[column]
    if column in RESERVED_NAMES:
        hint = " (cash dividends per share go in the column 'cash_dividend')" if column == "dividend" else ""
        raise DataError(f"column {column!r} has a name the cleaning uses itself (its own value would replace "
                        f"yours): rename it{hint}")
    if pd.api.types.is_bool_dtype(raw.dtype):
        frame[column] = raw.astype("float64")
        return
    if not pd.api.types.is_numeric_dtype(raw.dtype):
        if pd.to_numeric(raw, errors="coerce").notna().sum() == 0:
            return  # text only: not a feature
        values = _numbers(frame, column, "user factor")
    else:
        values = raw.astype("float64")
    if values.isna().all():
        raise DataError(f"user factor {column!r} has no values at all: fill it or drop the column")
    _check(frame, np.isinf(values), f"non-finite value in user factor {column!r}", column)
    _check(frame, values.abs() > FACTOR_LIMIT, f"user factor {column!r} beyond ±{FACTOR_LIMIT:g} (cannot be "
           "normalised)", column)
    worst = _dominating_value(values)
    if worst is not None:
        raise DataError(f"one value of user factor {column!r} swamps all others (z-scoring would squash them to ~0) "
                        f"at {_examples(frame.loc[[worst]], column)}: fix it, or transform the factor (log, rank, clip)")
    frame[column] = values


# --------------------------------------------------------------------------- arguments

def names_argument(value, what: str) -> list[str] | None:
    """A list of names given as an argument (``tickers``, ``indicators``): None, one string
    (commas separate names: ``"600000.SH,600519.SH"``, as on the command line) or an iterable
    of strings/codes. Anything else is a `DataError` naming the argument."""
    if value is None:
        return None
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    if isinstance(value, (bytes, Mapping)) or not hasattr(value, "__iter__"):
        raise DataError(f"{what} must be a list of names (or one string), got {type(value).__name__} {value!r}")
    names = list(value)
    bad = [name for name in names if not isinstance(name, (str, int, np.integer)) or isinstance(name, bool)]
    if bad:
        raise DataError(f"{what} must be names, got {bad[0]!r}")
    return [str(name) if isinstance(name, str) else f"{int(name):06d}" for name in names]


# --------------------------------------------------------------------------- splits

SPLIT_NAMES = ("train", "valid", "test")


class SplitError(DataError, ConfigError):
    """A bad ``splits`` argument: a config value (`ConfigError`) about the data's dates (`DataError`)."""


def check_splits(splits) -> dict | None:
    """``splits`` as given to `load_market`/`prepare_market`: None, or a mapping of ``train`` (required),
    ``valid`` and ``test`` to ``(start, end)`` dates, each start <= end, in that order in time and
    disjoint (normalisation is fitted on train and the model chosen on valid: a test period before
    them would be scored by a model fitted on its future). Returns the mapping; raises `SplitError`
    (both a `ConfigError` and a `DataError`), or a `DataError` for a date that cannot be read."""
    if splits is None:
        return None
    if not isinstance(splits, Mapping) or not splits:
        raise SplitError("splits must be a dict like {'train': (start, end), 'valid': (start, end), "
                          f"'test': (start, end)}}, got {type(splits).__name__} {str(splits)[:40]!r}")
    unknown = [name for name in splits if name not in SPLIT_NAMES]
    if unknown:
        raise SplitError(f"unknown split name(s) {', '.join(map(repr, unknown))}: use train, valid, test")
    if "train" not in splits:
        raise SplitError("splits need a 'train' entry (normalisation is fitted on it)")
    bounds = {}
    for name in SPLIT_NAMES:
        if name not in splits:
            continue
        pair = splits[name]
        if isinstance(pair, (str, bytes)) or not isinstance(pair, Sequence) or len(pair) != 2:
            raise SplitError(f"split {name!r} must be a (start, end) pair of dates, got {pair!r}")
        start, end = (parse_date(value, f"split {name!r} {which}") for value, which in zip(pair, ("start", "end")))
        if start > end:
            raise SplitError(f"split {name!r} starts ({start.date()}) after it ends ({end.date()})")
        bounds[name] = (start, end)
    named = list(bounds.items())
    for (name_a, (_, end_a)), (name_b, (start_b, _)) in zip(named, named[1:]):
        if start_b <= end_a:
            raise SplitError(f"split {name_b!r} ({start_b.date()}..) must start after split {name_a!r} ends "
                              f"({end_a.date()}): train, valid and test follow each other in time without overlap "
                              "(a test period before train is scored by a model fitted on its future)")
    return dict(splits)


# --------------------------------------------------------------------------- factors

LOOKAHEAD_IC = 0.3
"""|rank IC| of a factor against a next-bar return above which it is taken to look ahead. Real
daily factors reach 0.02-0.05 (a strong one 0.1): 0.3 is far beyond anything a factor known at
the close can have, and a copy of the next day's return scores about 1."""

LOOKAHEAD_MIN_PAIRS = 50
"""Fewer (factor, next return) pairs than this: too few to tell."""

MOSTLY_EMPTY = 0.5
"""A factor empty on more than this fraction of its training rows is mostly stale (carried forward)."""


def _rank_ic(factor: pd.Series, forward: pd.Series) -> tuple[float, int]:
    """Spearman correlation of the two, pooled over every (stock, day) with both known, and the count."""
    both = factor.notna() & forward.notna() & np.isfinite(forward)
    count = int(both.sum())
    if count < LOOKAHEAD_MIN_PAIRS:
        return 0.0, count
    a, b = factor[both].rank().to_numpy(), forward[both].rank().to_numpy()
    if a.std() == 0 or b.std() == 0:
        return 0.0, count
    return float(np.corrcoef(a, b)[0, 1]), count


def _forward_returns(bars: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, pd.Series]]:
    """The bars sorted by (tic, date) and what a factor known at day t's close cannot know: the
    next bar's close-to-close return, the gap to the next open (the price an order decided at t
    fills at), and the open-to-open return of a position filled there. Per stock, on its own
    consecutive bars."""
    ordered = bars.sort_values(["tic", "date"])
    by_stock = ordered.groupby("tic")
    close = ordered["close"]
    next_close, next_open = by_stock["close"].shift(-1), by_stock["open"].shift(-1)
    return ordered, {
        "next close-to-close return": next_close / close - 1.0,
        "gap to the next open (the fill price)": next_open / close - 1.0,
        "next open-to-open return": by_stock["open"].shift(-2) / next_open - 1.0,
    }


def lookahead_scores(bars: pd.DataFrame, column: str, _forward=None) -> dict[str, float]:
    """Rank IC of user factor ``column`` against each of `_forward_returns`, pooled over stocks
    (so one stock is enough): about 0 for a factor known at the close, 1 for a copy of the future."""
    ordered, forward = _forward if _forward is not None else _forward_returns(bars)
    factor = ordered[column].astype(float)
    return {name: _rank_ic(factor, values)[0] for name, values in forward.items()}


def _copied_future_price(ordered: pd.DataFrame, column: str, share: float = 0.9) -> str | None:
    """The next bar's price column that the factor copies (equal within 1e-9 on more than ``share``
    of the rows where both are known, and more often than today's own prices), or None."""
    factor = ordered[column].astype(float)
    by_stock = ordered.groupby("tic")
    for name in PRICE_COLUMNS:
        future, today = by_stock[name].shift(-1), ordered[name]
        known = factor.notna() & future.notna()
        if known.sum() < LOOKAHEAD_MIN_PAIRS:
            return None
        def same(prices):
            return float((np.abs(factor[known] - prices[known]) <= 1e-9 * prices[known].abs()).mean())
        if same(future) > share and same(future) > same(today):
            return f"next bar's {name} (the price an order decided today fills at)" if name == "open" else \
                f"next bar's {name}"
    return None


def check_factors(bars: pd.DataFrame, factors, train_start, train_end) -> list[str]:
    """Checks of user factors before training, on validated bars and the train split's dates.

    Refuses (`DataError`) a factor with no value in the training split (normalisation is fitted
    there: it would be a constant the agent never saw vary). Warns (`DataWarning`, returned as
    well) on a factor constant or mostly empty on the training split, and loudly on one that
    looks ahead: a rank IC against a next-bar return beyond `LOOKAHEAD_IC`."""
    messages = []
    in_train = (bars["date"] >= pd.Timestamp(train_start)) & (bars["date"] <= pd.Timestamp(train_end))
    forward = _forward_returns(bars) if len(factors) else None
    for column in factors:
        values = bars.loc[in_train, column]
        known = values.dropna()
        if known.empty:
            first = bars.loc[bars[column].notna(), "date"].min()
            raise DataError(f"user factor {column!r} has no value in the training split "
                            f"({pd.Timestamp(train_start).date()}..{pd.Timestamp(train_end).date()}; its first value "
                            f"is on {pd.Timestamp(first).date()}): "
                            "its normalisation cannot be fitted and the agent never sees it vary; fill it from the "
                            "start of train, or drop it")
        if known.nunique() == 1:
            messages.append(f"user factor {column!r} is constant ({known.iloc[0]:g}) on the training split: it "
                            "teaches the agent nothing, and other values later are out of distribution; drop it")
        empty = 1.0 - len(known) / len(values)
        if empty > MOSTLY_EMPTY:
            messages.append(f"user factor {column!r} is empty on {empty:.0%} of the training split's rows: those "
                            "cells carry the last value forward (stale); fill it or drop it")
        copied = _copied_future_price(forward[0], column)
        if copied:
            messages.append(f"LOOK-AHEAD? user factor {column!r} equals the {copied} on most rows: a value "
                            "of day t may use bars up to t's close only (shift(1), not shift(-1)); results with it are "
                            "not to be trusted")
        scores = lookahead_scores(bars, column, forward)
        name, worst = max(scores.items(), key=lambda item: abs(item[1]))
        if abs(worst) > LOOKAHEAD_IC:
            messages.append(f"LOOK-AHEAD? user factor {column!r} has a rank IC of {worst:+.2f} with the {name}: real "
                            f"factors reach 0.02-0.05, beyond {LOOKAHEAD_IC} it almost surely uses the future (is it "
                            "shifted by a day? a factor on day t may use bars up to t's close only); results with it "
                            "are not to be trusted")
    for message in messages:
        warnings.warn(message, DataWarning, stacklevel=3)
    return messages
