"""Fetch daily A-share bars from tushare, akshare or baostock, normalised to the schema.

Every ``fetch_*`` function returns a :class:`SourceResult` whose ``bars`` already passed
:func:`~finrl_tutorial.data.schema.validate_bars`: columns ``date, tic, open, high, low, close,
volume`` (shares), ``amount`` (yuan) and, where the provider has it, ``pre_close``; tickers in
tushare form (``600000.SH``); sorted by date then ticker; a suspended day is an absent row.

The three providers disagree on almost everything, and each difference is handled in one place:

=============  =======================  =====================  ==========================
               tushare ``daily``        akshare                baostock
=============  =======================  =====================  ==========================
ticker         ``600000.SH``            ``600000``             ``sh.600000``
dates          ``YYYYMMDD``             ``YYYY-MM-DD``         ``YYYY-MM-DD``
row order      newest first             oldest first           oldest first
volume         lots (100 shares)        lots                   shares
amount         thousand yuan            yuan                   yuan
suspension     no row                   no row                 row with ``tradestatus`` 0
needs          a token (tushare.pro)    nothing                login() / logout()
=============  =======================  =====================  ==========================

The provider libraries are optional (``pip install finrl_tutorial[sources]``) and imported only
when a function needs them. Every function takes ``client=``: a stand-in object with the same
methods, which is how the tests run offline.
"""
from __future__ import annotations

import contextlib
import importlib
import importlib.util
import os
import re
import socket
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

import pandas as pd

from ..atomic import write_csv
from ..errors import one_line
from .schema import DataError, canonical_ticker, exchange_of, validate_bars

__all__ = [
    "SourceResult", "MissingTokenError", "fetch_tushare", "fetch_akshare", "fetch_baostock",
    "read_bars", "read_csv_bars", "to_plain_code", "to_baostock_code", "from_plain_code", "source_status",
    "SOURCE_SERVERS",
]

BENCHMARK_NAME = "CSI 300"
BENCHMARK_TICKER = "000300.SH"

# Indirections so tests can replace the clock without touching the ``time`` module.
_clock: Callable[[], float] = time.monotonic
_sleep: Callable[[float], None] = time.sleep


@dataclass
class SourceResult:
    """Normalised bars plus what else the source knows about the same window."""

    bars: pd.DataFrame
    source: str  # "tushare" | "akshare" | "baostock" | "csv"
    calendar: pd.DatetimeIndex | None = None  # exchange trading days in [start, end]
    benchmark: pd.Series | None = None  # CSI 300 close indexed by date, name "CSI 300"
    listings: pd.DataFrame | None = None  # tic, list_date (and issue_price where known)


class MissingTokenError(DataError):
    """tushare needs a personal token and none was given."""


# --------------------------------------------------------------------------- tickers and dates

_TICKER = re.compile(r"(\d{6})\.(SH|SZ|BJ)")


def from_plain_code(code: str) -> str:
    """``'600000'`` -> ``'600000.SH'``: the exchange follows from the leading digits
    (`finrl_tutorial.data.schema.exchange_of`)."""
    text = str(code).strip()
    return f"{text}.{exchange_of(text)}"


def _ticker(ticker: str) -> str:
    """A ticker in tushare form; a bare 6-digit code gets its exchange suffix."""
    text = str(ticker).strip().upper()
    if re.fullmatch(r"\d{6}", text):
        return from_plain_code(text)
    if not _TICKER.fullmatch(text):
        raise DataError(f"not an A-share ticker: {ticker!r} (expected e.g. 600000.SH or 000001.SZ)")
    return text


def to_plain_code(ticker: str) -> str:
    """``'600000.SH'`` -> ``'600000'`` (akshare's form)."""
    return _ticker(ticker)[:6]


def to_baostock_code(ticker: str) -> str:
    """``'600000.SH'`` -> ``'sh.600000'`` (baostock's form)."""
    code, exchange = _ticker(ticker).split(".")
    return f"{exchange.lower()}.{code}"


def normalize_tickers(tickers: str | Iterable[str]) -> list[str]:
    """A-share tickers in any usual spelling (``600000``, ``sh.600000``, ``SH600000``,
    ``600000.XSHG``) as canonical ``600000.SH`` codes, without repeats, in the order given."""
    items = [tickers] if isinstance(tickers, str) else list(tickers)
    out = list(dict.fromkeys(canonical_ticker(t, strict=True) for t in items))
    if not out:
        raise DataError("no tickers given")
    return out


def _timestamp(value: Any, what: str) -> pd.Timestamp:
    """Accept ``'YYYY-MM-DD'``, ``'YYYYMMDD'``, a date or a Timestamp."""
    try:
        if isinstance(value, str):
            text = value.strip()
            if re.fullmatch(r"\d{8}", text):
                return pd.to_datetime(text, format="%Y%m%d")
            if re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
                return pd.to_datetime(text, format="%Y-%m-%d")
            raise ValueError(text)
        stamp = pd.Timestamp(value)
        if pd.isna(stamp):
            raise ValueError(value)
        return stamp.normalize()
    except (TypeError, ValueError):
        raise DataError(f"{what} date {value!r} is not YYYY-MM-DD, YYYYMMDD or a Timestamp") from None


def _window(start: Any, end: Any) -> tuple[pd.Timestamp, pd.Timestamp]:
    first, last = _timestamp(start, "start"), _timestamp(end, "end")
    if first > last:
        raise DataError(f"start {first.date()} is after end {last.date()}")
    return first, last


# --------------------------------------------------------------------------- shared plumbing

def _require(module: str) -> Any:
    """Import an optional provider library, or say how to install it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        if exc.name not in (None, module):
            problem = f"{module} is installed but cannot be imported: {one_line(exc, limit=300)}"
        else:
            problem = f"{module} is not installed: pip install {module}"
    raise DataError(problem)


def _call(source: str, endpoint: str, label: str, method: Callable[..., Any],
          secret: str | None = None, /, **params: Any) -> Any:
    """Call one provider endpoint; any exception becomes a one-line DataError naming ``label``.

    The DataError is raised outside the ``except`` block, so it carries no chained provider
    exception whose text might include the token.
    """
    try:
        return method(**params)
    except Exception as exc:  # providers raise anything: permissions, HTTP, KeyError on bad codes
        problem = one_line(exc, secret, limit=300)
    raise DataError(f"{source} {endpoint} failed for {label}: {problem}")


# --------------------------------------------------------------------------- can a provider run here?

SOURCE_SERVERS = {"akshare": ("push2his.eastmoney.com", 443), "baostock": ("public-api.baostock.com", 10030)}
"""The server each free provider fetches daily bars from, as ``(host, port)``: `source_status` tries a
TCP connect to it (akshare's daily bars come from eastmoney)."""


def _installed(module: str) -> bool:
    """Whether ``module`` can be found, without importing it (importing a provider can be slow)."""
    return importlib.util.find_spec(module) is not None


def _reachable(host: str, port: int, timeout: float) -> bool:
    """A quick TCP connect: is ``host:port`` reachable from here within ``timeout`` seconds?"""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def source_status(source: str, *, token: str | None = None, timeout: float = 2.0) -> str | None:
    """Why ``source`` cannot fetch from here, in a few words, or None when it is worth trying.

    ``sample`` always runs. ``tushare`` needs a token (``token`` or ``TUSHARE_TOKEN``; the token
    itself never appears in the answer) and the library; ``akshare`` and ``baostock`` need their
    library and their server (`SOURCE_SERVERS`, a TCP connect of at most ``timeout`` seconds). None
    does not promise the fetch works: a provider can still refuse a request (`load_market` then
    raises a one-line `DataError`). An unknown source name raises a DataError.
    """
    if source == "sample":
        return None
    if source not in ("tushare", "akshare", "baostock"):
        raise DataError(f"unknown data source {source!r}: use sample, tushare, akshare or baostock")
    if source == "tushare" and not (token or os.environ.get("TUSHARE_TOKEN")):
        return "TUSHARE_TOKEN is not set"
    if not _installed(source):
        return f"{source} is not installed (pip install {source})"
    if source in SOURCE_SERVERS:
        host, port = SOURCE_SERVERS[source]
        if not _reachable(host, port, timeout):
            return f"its server ({host}) is not reachable"
    return None


@dataclass(frozen=True)
class _Layout:
    """How one provider's raw daily table maps onto the schema."""

    columns: Mapping[str, str]  # raw column -> schema column (must include one -> "date")
    units: Mapping[str, float] = field(default_factory=dict)  # schema column -> factor to schema unit


def _normalise(raw: Any, tic: str, layout: _Layout, what: str,
               start: pd.Timestamp, end: pd.Timestamp) -> pd.DataFrame:
    """Rename, parse and rescale one raw response; keep rows dated within [start, end].

    Handles the common quirks: string or YYYYMMDD dates, numbers as strings, lots and thousands.
    """
    if raw is None:
        raw = pd.DataFrame()
    if not isinstance(raw, pd.DataFrame):
        raise DataError(f"{what} for {tic}: expected a DataFrame, got {type(raw).__name__}")
    missing = [c for c in layout.columns if c not in raw.columns]
    if missing and len(raw):
        raise DataError(f"{what} for {tic}: response lacks column(s) {', '.join(missing)} "
                        f"(has {', '.join(map(str, raw.columns))})")
    if missing:  # an empty frame often comes without columns at all
        return pd.DataFrame(columns=["date", "tic", *[c for c in layout.columns.values() if c != "date"]])
    frame = raw[list(layout.columns)].rename(columns=dict(layout.columns))
    dates = pd.to_datetime(frame["date"].astype(str).str.strip(), format="mixed", errors="coerce")
    if dates.isna().any():
        bad = frame.loc[dates.isna(), "date"].head(3).tolist()
        raise DataError(f"{what} for {tic}: unparseable date(s) {bad}")
    frame["date"] = dates.dt.normalize().astype("datetime64[ns]")
    for column in frame.columns.drop("date"):
        frame[column] = pd.to_numeric(frame[column], errors="coerce")
    for column, factor in layout.units.items():
        frame[column] = frame[column] * factor
    frame.insert(1, "tic", tic)
    frame = frame[(frame["date"] >= start) & (frame["date"] <= end)]
    return frame.sort_values("date", ignore_index=True)


def _bars(raw: Any, tic: str, layout: _Layout, what: str,
          start: pd.Timestamp, end: pd.Timestamp) -> pd.DataFrame:
    """Normalised bars of one ticker; no rows at all is an error naming the ticker."""
    frame = _normalise(raw, tic, layout, what, start, end)
    if frame.empty:
        raise DataError(f"{what} returned no bars for {tic} between {start.date()} and {end.date()} "
                        "(wrong code, not listed yet, or suspended throughout?)")
    return frame


def _calendar(raw: Any, date_column: str, open_column: str, what: str,
              start: pd.Timestamp, end: pd.Timestamp) -> pd.DatetimeIndex:
    """Trading days from a provider calendar table with a 0/1 open flag."""
    layout = _Layout({date_column: "date", open_column: "is_open"})
    frame = _normalise(raw, "calendar", layout, what, start, end)
    days = frame.loc[frame["is_open"] == 1, "date"]
    if days.empty:
        raise DataError(f"{what} lists no trading day between {start.date()} and {end.date()}")
    return pd.DatetimeIndex(sorted(set(days)), name="date").astype("datetime64[ns]")


def _benchmark(raw: Any, date_column: str, close_column: str, what: str,
               start: pd.Timestamp, end: pd.Timestamp) -> pd.Series:
    """CSI 300 close indexed by date."""
    layout = _Layout({date_column: "date", close_column: "close"})
    frame = _bars(raw, BENCHMARK_TICKER, layout, what, start, end)
    series = frame.drop_duplicates("date").set_index("date")["close"].astype("float64")
    series.name = BENCHMARK_NAME
    return series


def _endpoint(source: str, client: Any, name: str) -> Callable[..., Any]:
    """The client's endpoint ``name``; one this client (or library version) lacks is a DataError
    like any other provider failure, so `_optional` turns it into a warning."""
    if not hasattr(client, name):
        raise DataError(f"{source} {name} is not available from this client")
    return getattr(client, name)


def _optional(what: str, fetch: Callable[[], Any]) -> Any:
    """Calendar and benchmark are extras: a provider failure warns and yields None."""
    try:
        return fetch()
    except DataError as exc:
        warnings.warn(f"{exc}; continuing without the {what}", stacklevel=3)
        return None


def _result(parts: list[pd.DataFrame], source: str, calendar: pd.DatetimeIndex | None,
            benchmark: pd.Series | None, listings: pd.DataFrame | None = None) -> SourceResult:
    # Short histories are allowed here; how much history a model needs is the caller's business.
    bars = validate_bars(pd.concat(parts, ignore_index=True), min_history=1)
    return SourceResult(bars=bars, source=source, calendar=calendar, benchmark=benchmark, listings=listings)


# --------------------------------------------------------------------------- tushare

_TUSHARE_DAILY = _Layout(
    {"trade_date": "date", "open": "open", "high": "high", "low": "low", "close": "close",
     "vol": "volume", "amount": "amount", "pre_close": "pre_close"},
    units={"volume": 100.0, "amount": 1000.0},  # tushare: vol in lots, amount in thousand yuan
)
_MISSING_TOKEN = ("TUSHARE_TOKEN is not set: pass token=... or export TUSHARE_TOKEN (get one at "
                  "tushare.pro); or use source='akshare'/'baostock' which need no token")


class _Throttle:
    """Space calls at least ``min_interval`` seconds apart (tushare caps calls per minute)."""

    def __init__(self, min_interval: float):
        self.min_interval = max(0.0, float(min_interval))
        self._last: float | None = None

    def wait(self) -> None:
        if self._last is not None and self.min_interval > 0:
            delay = self._last + self.min_interval - _clock()
            if delay > 0:
                _sleep(delay)
        self._last = _clock()


class _TushareCalls:
    """Every tushare request goes through here: disk cache, rate limit, error wrapping.

    Cache files are named after the endpoint and its parameters only; the token lives inside
    the client and is never part of a key, a file, or a message.
    """

    def __init__(self, client: Any, token: str | None, cache_dir: str | os.PathLike | None,
                 min_interval: float):
        self.client = client
        self.token = token
        self.cache_dir = Path(cache_dir).expanduser() / "tushare" if cache_dir is not None else None
        self.throttle = _Throttle(min_interval)

    def _path(self, endpoint: str, params: Mapping[str, Any]) -> Path | None:
        if self.cache_dir is None:
            return None
        key = "_".join(f"{k}-{v}" for k, v in sorted(params.items()))
        return self.cache_dir / (re.sub(r"[^A-Za-z0-9.=-]+", "_", f"{endpoint}_{key}") + ".csv")

    def __call__(self, endpoint: str, label: str, *, cache: bool, **params: Any) -> pd.DataFrame:
        path = self._path(endpoint, params) if cache else None
        if path is not None and path.is_file():
            with contextlib.suppress(Exception):  # an unreadable cache file is just a miss
                return pd.read_csv(path, dtype=str, encoding="utf-8")
        self.throttle.wait()
        raw = _call("tushare", endpoint, label, getattr(self.client, endpoint), self.token, **params)
        if path is not None and isinstance(raw, pd.DataFrame) and len(raw):
            write_csv(raw, path)  # empty answers are not cached: a rerun retries them
        return raw


def fetch_tushare(tickers: str | Iterable[str], start: Any, end: Any, *, token: str | None = None,
                  cache_dir: str | os.PathLike | None = None, client: Any = None,
                  min_interval: float = 0.35, with_benchmark: bool = True,
                  corporate_actions: bool = False) -> SourceResult:
    """Daily bars from tushare pro (``daily``), the SSE calendar and the CSI 300 close.

    With ``corporate_actions``: the announced dividends (``dividend``, rows 实施 with an ex-date;
    needs 2000 points) as ``cash_dividend``/``bonus_shares``, ST status from the name history
    (``namechange``: a name containing "ST") as ``is_st``, and listing dates (``stock_basic``;
    issue price = the listing day's ``pre_close``). Each of these is optional: a failure warns.

    ``token`` defaults to the ``TUSHARE_TOKEN`` environment variable; it is only needed when
    no ``client`` is passed. Calls are spaced ``min_interval`` seconds apart. With
    ``cache_dir`` each raw response is kept as a CSV and reused on the next run; windows that
    end today or later are not cached, because their data is still growing.
    """
    names = normalize_tickers(tickers)
    start, end = _window(start, end)
    token = (token or os.environ.get("TUSHARE_TOKEN") or "").strip() or None
    if client is None:
        if token is None:
            raise MissingTokenError(_MISSING_TOKEN)
        client = _call("tushare", "pro_api", "client setup", _require("tushare").pro_api,
                       token, token=token)
    call = _TushareCalls(client, token, cache_dir, min_interval)
    cache = end < pd.Timestamp.today().normalize()
    window = {"start_date": f"{start:%Y%m%d}", "end_date": f"{end:%Y%m%d}"}

    parts = [_bars(call("daily", tic, cache=cache, ts_code=tic, **window), tic, _TUSHARE_DAILY,
                   "tushare daily", start, end) for tic in names]
    listings = None
    if corporate_actions:
        def endpoint(name):  # the calls go through `call` by name, once the client is known to have it
            _endpoint("tushare", client, name)
            return name

        for i, tic in enumerate(names):
            dividends = _optional("dividend table", lambda: _tushare_dividends(
                call(endpoint("dividend"), tic, cache=cache, ts_code=tic), tic))
            names_table = _optional("ST history", lambda: _tushare_names(
                call(endpoint("namechange"), tic, cache=cache, ts_code=tic), tic))
            parts[i] = _with_st(_with_dividends(parts[i], dividends), names_table)
        basics = _optional("listing dates", lambda: pd.concat(
            [_normalise(call(endpoint("stock_basic"), tic, cache=cache, ts_code=tic, fields="ts_code,list_date"),
                        tic, _Layout({"list_date": "date"}), "tushare stock_basic", pd.Timestamp.min,
                        pd.Timestamp.max) for tic in names], ignore_index=True))
        listings = _listings(basics, parts)
    calendar = _optional("calendar", lambda: _calendar(
        call("trade_cal", "the SSE calendar", cache=cache, exchange="SSE", is_open="1", **window),
        "cal_date", "is_open", "tushare trade_cal", start, end))
    benchmark = _optional("benchmark", lambda: _benchmark(
        call("index_daily", BENCHMARK_TICKER, cache=cache, ts_code=BENCHMARK_TICKER, **window),
        "trade_date", "close", "tushare index_daily", start, end)) if with_benchmark else None
    return _result(parts, "tushare", calendar, benchmark, listings)


# --------------------------------------------------------------------------- akshare

_AKSHARE_DAILY = _Layout(
    {"日期": "date", "开盘": "open", "最高": "high", "最低": "low", "收盘": "close",
     "成交量": "volume", "成交额": "amount"},
    units={"volume": 100.0},  # akshare (eastmoney): 成交量 in lots, 成交额 already in yuan
)


def fetch_akshare(tickers: str | Iterable[str], start: Any, end: Any, *, client: Any = None,
                  with_benchmark: bool = True, corporate_actions: bool = False) -> SourceResult:
    """Unadjusted daily bars from akshare (``stock_zh_a_hist``) and the CSI 300 close.

    akshare has no pre-close column and no exchange calendar: ``calendar`` is None. With
    ``corporate_actions``: the back-adjustment factor (``stock_zh_a_daily(adjust="hfq-factor")``,
    one row per ex-day) as ``adj_factor``, which makes each ex-day's total adjustment exact; the
    dividend table (``stock_history_dividend_detail(indicator="分红")``, sina: implemented plans
    (进度 实施) with 送股/转增 shares and 派息 cash per 10 shares, pre-tax) as
    ``cash_dividend``/``bonus_shares``, which splits that total into shares and cash exactly; and
    the listing date (``stock_individual_info_em``, 上市时间). akshare has no ST *history* (its ST
    list is today's), so ``is_st`` stays absent.
    """
    names = normalize_tickers(tickers)
    start, end = _window(start, end)
    ak = client if client is not None else _require("akshare")
    window = {"start_date": f"{start:%Y%m%d}", "end_date": f"{end:%Y%m%d}"}

    parts = [_bars(_call("akshare", "stock_zh_a_hist", tic, ak.stock_zh_a_hist,
                         symbol=to_plain_code(tic), period="daily", adjust="", **window),
                   tic, _AKSHARE_DAILY, "akshare stock_zh_a_hist", start, end) for tic in names]
    listings = None
    if corporate_actions:
        for i, tic in enumerate(names):
            symbol = f"{tic[-2:].lower()}{tic[:6]}"
            factors = _optional("adjustment factors", lambda: _call(
                "akshare", "stock_zh_a_daily", tic, _endpoint("akshare", ak, "stock_zh_a_daily"), symbol=symbol,
                adjust="hfq-factor"))
            dividends = _optional("dividend table", lambda: _akshare_dividends(_call(
                "akshare", "stock_history_dividend_detail", tic,
                _endpoint("akshare", ak, "stock_history_dividend_detail"), symbol=to_plain_code(tic), indicator="分红"), tic))
            parts[i] = _with_dividends(_with_factor(parts[i], factors), dividends)
        infos = []
        for tic in names:
            info = _optional("listing date", lambda: _call(
                "akshare", "stock_individual_info_em", tic, _endpoint("akshare", ak, "stock_individual_info_em"),
                symbol=to_plain_code(tic)))
            if isinstance(info, pd.DataFrame) and {"item", "value"} <= set(info.columns):
                found = info.loc[info["item"].astype(str) == "上市时间", "value"]
                if len(found):
                    infos.append({"tic": tic, "date": pd.to_datetime(str(found.iloc[0]), errors="coerce")})
        listings = _listings(pd.DataFrame(infos) if infos else None, parts)
    benchmark = _optional("benchmark", lambda: _benchmark(
        _call("akshare", "index_zh_a_hist", BENCHMARK_TICKER, ak.index_zh_a_hist,
              symbol=to_plain_code(BENCHMARK_TICKER), period="daily", **window),
        "日期", "收盘", "akshare index_zh_a_hist", start, end)) if with_benchmark else None
    return _result(parts, "akshare", None, benchmark, listings)


# --------------------------------------------------------------------------- baostock

_BAOSTOCK_FIELDS = "date,code,open,high,low,close,preclose,volume,amount,tradestatus,isST"
_BAOSTOCK_DAILY = _Layout(
    {"date": "date", "open": "open", "high": "high", "low": "low", "close": "close",
     "preclose": "pre_close", "volume": "volume", "amount": "amount", "isST": "is_st"},
)  # baostock: volume already in shares, amount in yuan; every value arrives as a string


def _baostock_frame(result: Any, endpoint: str, label: str) -> pd.DataFrame:
    """Drain a baostock ResultData (``error_code``, ``next()``, ``get_row_data()``) into a frame."""
    rows = []
    while str(result.error_code) == "0" and result.next():
        rows.append(result.get_row_data())
    if str(result.error_code) != "0":
        raise DataError(f"baostock {endpoint} failed for {label}: "
                        f"{result.error_msg} (error code {result.error_code})")
    return pd.DataFrame(rows, columns=list(result.fields))


def fetch_baostock(tickers: str | Iterable[str], start: Any, end: Any, *, client: Any = None,
                   with_benchmark: bool = True, corporate_actions: bool = False) -> SourceResult:
    """Unadjusted daily bars from baostock, its trading calendar and the CSI 300 close.

    baostock lists suspended days as rows with ``tradestatus`` 0 and volume 0; they are dropped,
    because a suspension is an absent row in the schema. ``isST`` becomes ``is_st``. With
    ``corporate_actions``: the dividends (``query_dividend_data`` by operating year:
    ``dividCashPsBeforeTax``, ``dividStocksPs`` + ``dividReserveToStockPs`` on
    ``dividOperateDate``) and the listing date (``query_stock_basic``, ``ipoDate``).
    """
    names = normalize_tickers(tickers)
    start, end = _window(start, end)
    bs = client if client is not None else _require("baostock")
    window = {"start_date": f"{start:%Y-%m-%d}", "end_date": f"{end:%Y-%m-%d}"}

    def query(code: str, label: str, fields: str) -> pd.DataFrame:
        result = _call("baostock", "query_history_k_data_plus", label, bs.query_history_k_data_plus,
                       code=code, fields=fields, frequency="d", adjustflag="3", **window)
        return _baostock_frame(result, "query_history_k_data_plus", label)

    def trading(raw: pd.DataFrame) -> pd.DataFrame:
        return raw[raw["tradestatus"].astype(str).str.strip() != "0"] if "tradestatus" in raw else raw

    login = _call("baostock", "login", "the session", bs.login)
    if str(getattr(login, "error_code", "0")) != "0":
        raise DataError(f"baostock login failed: {login.error_msg} (error code {login.error_code})")
    try:
        parts = [_bars(trading(query(to_baostock_code(tic), tic, _BAOSTOCK_FIELDS)), tic,
                       _BAOSTOCK_DAILY, "baostock query_history_k_data_plus", start, end)
                 for tic in names]
        listings = None
        if corporate_actions:
            def dividends(tic):
                frames = [_baostock_frame(_call("baostock", "query_dividend_data", tic, bs.query_dividend_data,
                                                code=to_baostock_code(tic), year=str(year), yearType="operate"),
                                          "query_dividend_data", tic) for year in range(start.year, end.year + 1)]
                return _baostock_dividends(pd.concat(frames, ignore_index=True), tic)

            for i, tic in enumerate(names):
                parts[i] = _with_dividends(parts[i], _optional("dividend table", lambda: dividends(tic)))
            basics = _optional("listing dates", lambda: pd.concat([_normalise(
                _baostock_frame(_call("baostock", "query_stock_basic", tic, bs.query_stock_basic,
                                      code=to_baostock_code(tic)), "query_stock_basic", tic),
                tic, _Layout({"ipoDate": "date"}), "baostock query_stock_basic", pd.Timestamp.min,
                pd.Timestamp.max) for tic in names], ignore_index=True))
            listings = _listings(basics, parts)
        calendar = _optional("calendar", lambda: _calendar(
            _baostock_frame(_call("baostock", "query_trade_dates", "the calendar",
                                  bs.query_trade_dates, **window), "query_trade_dates", "the calendar"),
            "calendar_date", "is_trading_day", "baostock query_trade_dates", start, end))
        benchmark = _optional("benchmark", lambda: _benchmark(
            query(to_baostock_code(BENCHMARK_TICKER), BENCHMARK_TICKER, "date,code,close"),
            "date", "close", "baostock query_history_k_data_plus", start, end)) if with_benchmark else None
    finally:
        with contextlib.suppress(Exception):  # a failing logout must not hide the real error
            bs.logout()
    return _result(parts, "baostock", calendar, benchmark, listings)


# --------------------------------------------------------------------------- corporate actions, ST, listings

def _with_dividends(bars: pd.DataFrame, actions: pd.DataFrame | None) -> pd.DataFrame:
    """Put announced actions (``ex_date, cash_dividend, bonus_shares``) on the first bar on or
    after each ex-date (a stock suspended on its ex-date goes ex on its next trading day)."""
    if actions is None or actions.empty or bars.empty:
        return bars
    bars = bars.sort_values("date").reset_index(drop=True)
    position = bars["date"].searchsorted(pd.DatetimeIndex(actions["ex_date"]))
    inside = (position < len(bars)) & (pd.DatetimeIndex(actions["ex_date"]) >= bars["date"].iloc[0])
    bars["cash_dividend"] = 0.0
    bars["bonus_shares"] = 0.0
    for row, at in zip(actions[inside].itertuples(), position[inside]):
        bars.loc[at, "cash_dividend"] += float(row.cash_dividend)
        bars.loc[at, "bonus_shares"] += float(row.bonus_shares)
    return bars


def _actions_frame(ex_dates, cash, shares) -> pd.DataFrame:
    frame = pd.DataFrame({"ex_date": pd.to_datetime(pd.Series(ex_dates).astype(str).str.strip(), format="mixed",
                                                    errors="coerce"),
                          "cash_dividend": pd.to_numeric(pd.Series(cash), errors="coerce").fillna(0.0).to_numpy(),
                          "bonus_shares": pd.to_numeric(pd.Series(shares), errors="coerce").fillna(0.0).to_numpy()})
    frame = frame[frame["ex_date"].notna() & ((frame["cash_dividend"] > 0) | (frame["bonus_shares"] > 0))]
    return frame.drop_duplicates("ex_date").sort_values("ex_date", ignore_index=True)


def _tushare_dividends(raw: Any, tic: str) -> pd.DataFrame:
    """tushare ``dividend``: implemented plans (div_proc 实施) with an ex-date; pre-tax cash."""
    if not isinstance(raw, pd.DataFrame) or raw.empty:
        return _actions_frame([], [], [])
    missing = {"ex_date", "cash_div_tax", "stk_div"} - set(raw.columns)
    if missing:
        raise DataError(f"tushare dividend for {tic}: response lacks column(s) {', '.join(sorted(missing))}")
    done = raw[raw["div_proc"].astype(str).str.strip() == "实施"] if "div_proc" in raw else raw
    return _actions_frame(done["ex_date"], done["cash_div_tax"], done["stk_div"])


def _baostock_dividends(raw: pd.DataFrame, tic: str) -> pd.DataFrame:
    """baostock ``query_dividend_data``: cash per share before tax, bonus + transfer shares per share."""
    if raw.empty:
        return _actions_frame([], [], [])
    if "dividOperateDate" not in raw:
        raise DataError(f"baostock query_dividend_data for {tic}: response lacks column dividOperateDate")
    def numeric(column):
        return pd.to_numeric(raw.get(column, pd.Series(0.0, index=raw.index)), errors="coerce").fillna(0.0)

    return _actions_frame(raw["dividOperateDate"], numeric("dividCashPsBeforeTax"),
                          numeric("dividStocksPs") + numeric("dividReserveToStockPs"))


def _akshare_dividends(raw: Any, tic: str) -> pd.DataFrame:
    """akshare ``stock_history_dividend_detail(indicator="分红")`` (sina 分红配股): implemented plans
    (进度 实施) with an ex-date (除权除息日); 送股, 转增 (shares) and 派息 (yuan, pre-tax) are per
    10 shares held."""
    if not isinstance(raw, pd.DataFrame) or raw.empty:
        return _actions_frame([], [], [])
    if "除权除息日" not in raw:
        raise DataError(f"akshare stock_history_dividend_detail for {tic}: response lacks column 除权除息日")
    done = raw[raw["进度"].astype(str).str.strip() == "实施"] if "进度" in raw else raw

    def per_share(column):
        values = done.get(column, pd.Series(0.0, index=done.index))
        return pd.to_numeric(values, errors="coerce").fillna(0.0) / 10.0

    return _actions_frame(done["除权除息日"], per_share("派息"), per_share("送股") + per_share("转增"))


def _tushare_names(raw: Any, tic: str) -> pd.DataFrame | None:
    """tushare ``namechange``: name, start_date, end_date (end empty = still in force)."""
    if not isinstance(raw, pd.DataFrame) or raw.empty:
        return None
    if not {"name", "start_date"} <= set(raw.columns):
        raise DataError(f"tushare namechange for {tic}: response lacks column(s) name/start_date")
    frame = pd.DataFrame({
        "name": raw["name"].astype(str),
        "start": pd.to_datetime(raw["start_date"].astype(str), format="mixed", errors="coerce"),
        "end": pd.to_datetime(raw.get("end_date", pd.Series(None, index=raw.index)).astype(str), format="mixed",
                              errors="coerce"),
    })
    return frame[frame["start"].notna()]


def _with_st(bars: pd.DataFrame, names: pd.DataFrame | None) -> pd.DataFrame:
    """``is_st`` = 1 on the days the stock's name carried "ST" (ST, *ST, SST ...)."""
    if names is None or names.empty:
        return bars
    bars = bars.copy()
    st = pd.Series(0.0, index=bars.index)
    for row in names.itertuples():
        if "ST" in row.name.upper():
            end = row.end if pd.notna(row.end) else pd.Timestamp.max
            st[(bars["date"] >= row.start) & (bars["date"] <= end)] = 1.0
    bars["is_st"] = st
    return bars


def _with_factor(bars: pd.DataFrame, factors: Any) -> pd.DataFrame:
    """A factor table (date + one factor column, a row per change) as the bars' ``adj_factor``."""
    if not isinstance(factors, pd.DataFrame) or factors.empty or "date" not in factors or len(factors.columns) < 2:
        return bars
    value = [c for c in factors.columns if c != "date"][0]
    table = pd.DataFrame({"date": pd.to_datetime(factors["date"].astype(str), format="mixed", errors="coerce")
                          .astype("datetime64[ns]"),
                          "adj_factor": pd.to_numeric(factors[value], errors="coerce")}).dropna()
    table = table.sort_values("date")
    merged = pd.merge_asof(bars.sort_values("date").astype({"date": "datetime64[ns]"}), table, on="date",
                           direction="backward")
    merged["adj_factor"] = merged["adj_factor"].fillna(1.0) if table["date"].min() <= merged["date"].min() \
        else merged["adj_factor"].bfill()
    return merged


def _listings(basics: pd.DataFrame | None, parts: list[pd.DataFrame]) -> pd.DataFrame | None:
    """``tic, list_date, issue_price``; the issue price is the listing day's ``pre_close``
    where the bars include the listing day and carry one (tushare: the IPO price)."""
    if basics is None or basics.empty:
        return None
    rows = []
    for row in basics.dropna(subset=["date"]).itertuples():
        price = None
        for part in parts:
            day = part[(part["tic"] == row.tic) & (part["date"] == row.date)]
            if len(day) and "pre_close" in day and pd.notna(day["pre_close"].iloc[0]):
                price = float(day["pre_close"].iloc[0])
        rows.append({"tic": row.tic, "list_date": row.date, "issue_price": price})
    return pd.DataFrame(rows) if rows else None


# --------------------------------------------------------------------------- your own file

def read_csv_bars(path: str | os.PathLike) -> pd.DataFrame:
    """The raw table of a bar file (CSV, compressed is fine), not yet validated."""
    path = Path(path).expanduser()
    if path.is_dir():
        raise DataError(f"{path} is a folder, not a bar file (CSV)")
    if not path.is_file():
        raise DataError(f"bar file not found: {path}")
    try:  # keep codes like 000001 intact, whatever the case of the header
        frame = pd.read_csv(path, dtype={"tic": str, "TIC": str, "Tic": str})
    except Exception as exc:
        problem = one_line(exc, limit=300)
    else:
        header = str(frame.columns[0]) if len(frame.columns) == 1 else ""
        for separator in (";", "\t", "|"):
            if separator in header:
                raise DataError(f"bar file {path} has one column {header[:60]!r}: it seems to use "
                                f"{separator!r} between values; write it with commas")
        return frame
    raise DataError(f"cannot read bar file {path}: {problem}")


def read_bars(path_or_frame: str | os.PathLike | pd.DataFrame, date_format: str | None = None) -> SourceResult:
    """Bars from a CSV file (compressed is fine) or a DataFrame already in the schema.

    ``date_format`` (e.g. ``'%d/%m/%Y'``) reads the date column when its format is ambiguous.
    """
    if isinstance(path_or_frame, pd.DataFrame):
        frame = path_or_frame
    elif isinstance(path_or_frame, (str, os.PathLike)):
        frame = read_csv_bars(path_or_frame)
    else:
        raise DataError(f"expected a CSV path or a DataFrame, got {type(path_or_frame).__name__}")
    return SourceResult(bars=validate_bars(frame, min_history=1, date_format=date_format), source="csv")
