"""Offline tests of the provider adapters in finrl_tutorial.data.sources.

Each provider is replaced by a fake client with the same methods, fed by small frames in that
provider's raw format (tests/fixtures/sources, see its README): 600000.SH and 600030.SH over
2019-10-28 .. 2019-11-01, with 600030.SH suspended on 2019-10-30.
"""
from __future__ import annotations

import os
import sys
import time
import traceback
import types
import warnings
from pathlib import Path

import pandas as pd
import pytest

from finrl_tutorial.data import sources
from finrl_tutorial.data.schema import DataError
from finrl_tutorial.data.sources import (
    MissingTokenError, SourceResult, fetch_akshare, fetch_baostock, fetch_tushare, from_plain_code,
    read_bars, to_baostock_code, to_plain_code,
)

FIXTURES = Path(__file__).parent / "fixtures" / "sources"
TICKERS = ["600000.SH", "600030.SH"]
START, END = "2019-10-28", "2019-11-01"
TRADING_DAYS = pd.to_datetime(["2019-10-28", "2019-10-29", "2019-10-30", "2019-10-31", "2019-11-01"])
SUSPENDED = ("600030.SH", pd.Timestamp("2019-10-30"))
TOKEN = "tok-5e3cbf0a9d1c4f7e8b2a6d0c1e9f3a7b"


def _between(frame, column, start, end, fmt):
    dates = pd.to_datetime(frame[column].astype(str), format=fmt)
    return frame[(dates >= pd.to_datetime(start, format=fmt)) & (dates <= pd.to_datetime(end, format=fmt))]


def _row(bars, tic, day):
    rows = bars[(bars.tic == tic) & (bars.date == pd.Timestamp(day))]
    assert len(rows) == 1
    return rows.iloc[0]


# --------------------------------------------------------------------------- fake clients

class FakeTushare:
    """tushare.pro_api() stand-in: trade_date strings, rows newest first, lots, thousand yuan."""

    def __init__(self, errors=None, clock=None):
        self.calls = []
        self.errors = errors or {}  # (endpoint, code) -> exception to raise
        self.clock = clock
        self.call_times = []
        self._daily = pd.read_csv(FIXTURES / "tushare_daily.csv", dtype={"trade_date": str})
        self._cal = pd.read_csv(FIXTURES / "tushare_trade_cal.csv", dtype={"cal_date": str, "pretrade_date": str})
        self._index = pd.read_csv(FIXTURES / "tushare_index_daily.csv", dtype={"trade_date": str})

    def _record(self, endpoint, code, params):
        self.calls.append((endpoint, code, params))
        self.call_times.append(self.clock.now if self.clock else time.monotonic())
        if (endpoint, code) in self.errors:
            raise self.errors[(endpoint, code)]

    def daily(self, ts_code, start_date, end_date):
        self._record("daily", ts_code, dict(start_date=start_date, end_date=end_date))
        rows = self._daily[self._daily.ts_code == ts_code]
        return _between(rows, "trade_date", start_date, end_date, "%Y%m%d").reset_index(drop=True)

    def trade_cal(self, exchange, start_date, end_date, is_open=None):
        self._record("trade_cal", exchange, dict(start_date=start_date, end_date=end_date, is_open=is_open))
        return _between(self._cal, "cal_date", start_date, end_date, "%Y%m%d").reset_index(drop=True)

    def index_daily(self, ts_code, start_date, end_date):
        self._record("index_daily", ts_code, dict(start_date=start_date, end_date=end_date))
        rows = self._index[self._index.ts_code == ts_code]
        return _between(rows, "trade_date", start_date, end_date, "%Y%m%d").reset_index(drop=True)


class FakeAkshare:
    """akshare stand-in: Chinese headers, oldest first, 6-digit codes, lots and yuan."""

    def __init__(self, errors=None):
        self.calls = []
        self.errors = errors or {}
        self._daily = pd.read_csv(FIXTURES / "akshare_stock_zh_a_hist.csv", dtype={"股票代码": str})
        self._index = pd.read_csv(FIXTURES / "akshare_index_zh_a_hist.csv")

    def stock_zh_a_hist(self, symbol, period, start_date, end_date, adjust):
        self.calls.append(("stock_zh_a_hist", dict(symbol=symbol, period=period, start_date=start_date,
                                                   end_date=end_date, adjust=adjust)))
        if symbol in self.errors:
            raise self.errors[symbol]
        rows = _between(self._daily, "日期", start_date, end_date, "mixed")
        return rows[rows["股票代码"] == symbol].reset_index(drop=True)

    def index_zh_a_hist(self, symbol, period, start_date, end_date):
        self.calls.append(("index_zh_a_hist", dict(symbol=symbol, period=period, start_date=start_date,
                                                   end_date=end_date)))
        return _between(self._index, "日期", start_date, end_date, "mixed").reset_index(drop=True)


class FakeResultData:
    """baostock ResultData: error_code/error_msg, fields, next()/get_row_data() over string rows."""

    def __init__(self, rows, fields, error_code="0", error_msg="success"):
        self.error_code, self.error_msg, self.fields = error_code, error_msg, fields
        self._rows, self._at = rows, -1

    def next(self):
        self._at += 1
        return self._at < len(self._rows)

    def get_row_data(self):
        return list(self._rows[self._at])


class FakeBaostock:
    """baostock module stand-in: login/logout and string-typed query results."""

    def __init__(self, error_for=None, raise_for=None):
        self.calls = []
        self.logged_in = False
        self.logouts = 0
        self.error_for = error_for  # code answered with error_code != '0'
        self.raise_for = raise_for  # code whose query raises
        self._k = pd.read_csv(FIXTURES / "baostock_k_data.csv", dtype=str, keep_default_na=False)
        self._dates = pd.read_csv(FIXTURES / "baostock_trade_dates.csv", dtype=str)

    def login(self):
        self.logged_in = True
        return FakeResultData([], [], error_code="0", error_msg="success")

    def logout(self):
        self.logouts += 1
        self.logged_in = False

    def query_history_k_data_plus(self, code, fields, start_date, end_date, frequency, adjustflag):
        assert self.logged_in, "query before login"
        self.calls.append(("query_history_k_data_plus", dict(code=code, fields=fields, start_date=start_date,
                                                             end_date=end_date, frequency=frequency,
                                                             adjustflag=adjustflag)))
        if code == self.raise_for:
            raise ConnectionError("socket closed")
        if code == self.error_for:
            return FakeResultData([], [], error_code="10004011", error_msg="用户未登录")
        names = fields.split(",")
        rows = _between(self._k[self._k.code == code], "date", start_date, end_date, "%Y-%m-%d")
        return FakeResultData(rows[names].values.tolist(), names)

    def query_trade_dates(self, start_date, end_date):
        self.calls.append(("query_trade_dates", dict(start_date=start_date, end_date=end_date)))
        rows = _between(self._dates, "calendar_date", start_date, end_date, "%Y-%m-%d")
        return FakeResultData(rows.values.tolist(), list(rows.columns))


class FakeClock:
    def __init__(self):
        self.now = 1000.0
        self.sleeps = []

    def monotonic(self):
        return self.now

    def sleep(self, seconds):
        self.sleeps.append(seconds)
        self.now += seconds


@pytest.fixture
def clock(monkeypatch):
    fake = FakeClock()
    monkeypatch.setattr(sources, "_clock", fake.monotonic)
    monkeypatch.setattr(sources, "_sleep", fake.sleep)
    return fake


@pytest.fixture
def no_token(monkeypatch):
    monkeypatch.delenv("TUSHARE_TOKEN", raising=False)


def tushare(client=None, **kwargs):
    kwargs.setdefault("min_interval", 0)
    return fetch_tushare(TICKERS, START, END, client=client or FakeTushare(), **kwargs)


# --------------------------------------------------------------------------- tushare

def test_tushare_converts_lots_and_thousand_yuan():
    bars = tushare().bars
    row = _row(bars, "600000.SH", "2019-10-28")  # raw: vol 723804.66 lots, amount 922489.039 k yuan
    assert row.volume == pytest.approx(72_380_466)
    assert row.amount == pytest.approx(922_489_039)
    assert row.close == 12.70 and row.pre_close == 12.90


def test_tushare_bars_sorted_by_date_then_tic_and_schema_columns():
    result = tushare()
    bars = result.bars
    assert isinstance(result, SourceResult) and result.source == "tushare"
    assert list(bars.columns) == ["date", "tic", "open", "high", "low", "close", "volume", "amount", "pre_close"]
    assert bars.equals(bars.sort_values(["date", "tic"], ignore_index=True))
    assert bars.date.is_monotonic_increasing  # the raw rows were newest first
    assert set(bars.tic) == set(TICKERS)


def test_tushare_suspension_is_an_absent_row_and_pre_close_spans_it():
    bars = tushare().bars
    assert len(bars) == 9
    assert not ((bars.tic == SUSPENDED[0]) & (bars.date == SUSPENDED[1])).any()
    # the day after the suspension refers back to the last traded close
    assert _row(bars, "600030.SH", "2019-10-31").pre_close == 21.87


def test_tushare_calendar_from_trade_cal():
    client = FakeTushare()
    result = tushare(client)
    assert result.calendar.equals(pd.DatetimeIndex(TRADING_DAYS, name="date"))
    assert ("trade_cal", "SSE", {"start_date": "20191028", "end_date": "20191101", "is_open": "1"}) in client.calls


def test_tushare_benchmark_is_csi300_close_oldest_first():
    client = FakeTushare()
    bench = tushare(client).benchmark
    assert bench.name == "CSI 300"
    assert list(bench.index) == list(TRADING_DAYS)
    assert bench.iloc[0] == 3921.19 and bench.iloc[-1] == 3952.39
    assert any(c[:2] == ("index_daily", "000300.SH") for c in client.calls)


def test_tushare_without_benchmark_skips_index_daily():
    client = FakeTushare()
    assert tushare(client, with_benchmark=False).benchmark is None
    assert [c[0] for c in client.calls] == ["daily", "daily", "trade_cal"]


def test_tushare_request_parameters():
    client = FakeTushare()
    fetch_tushare(["600000.sh"], "20191028", pd.Timestamp("2019-11-01"), client=client, min_interval=0)
    assert client.calls[0] == ("daily", "600000.SH", {"start_date": "20191028", "end_date": "20191101"})


def test_tushare_cache_hit_on_second_call(tmp_path):
    first_client, second_client = FakeTushare(), FakeTushare()
    first = tushare(first_client, cache_dir=tmp_path)
    second = tushare(second_client, cache_dir=tmp_path)
    assert len(first_client.calls) == 4
    assert second_client.calls == []  # everything came from disk
    pd.testing.assert_frame_equal(first.bars, second.bars)
    assert first.calendar.equals(second.calendar)
    pd.testing.assert_series_equal(first.benchmark, second.benchmark)
    files = sorted(p.name for p in tmp_path.rglob("*") if p.is_file())
    assert len(files) == 4 and all(name.endswith(".csv") for name in files)  # no leftover temp files


def test_tushare_cache_is_keyed_by_parameters(tmp_path):
    tushare(FakeTushare(), cache_dir=tmp_path)
    other = FakeTushare()
    fetch_tushare(TICKERS, "2019-10-29", END, client=other, cache_dir=tmp_path, min_interval=0)
    assert len(other.calls) == 4  # a different window is a different request


def test_tushare_window_reaching_today_is_not_cached(tmp_path):
    end = pd.Timestamp.today().normalize() + pd.Timedelta(days=30)
    for _ in range(2):
        client = FakeTushare()
        fetch_tushare(TICKERS, START, end, client=client, cache_dir=tmp_path, min_interval=0)
        assert len(client.calls) == 4
    assert not any(p.is_file() for p in tmp_path.rglob("*"))


def test_tushare_rate_limit_spaces_calls(clock):
    client = FakeTushare(clock=clock)
    fetch_tushare(TICKERS, START, END, client=client, min_interval=0.35)
    gaps = [b - a for a, b in zip(client.call_times, client.call_times[1:])]
    assert len(gaps) == 3 and all(gap >= 0.35 - 1e-9 for gap in gaps)
    assert len(clock.sleeps) == 3  # no wait before the first call


def test_tushare_rate_limit_counts_time_already_spent(clock):
    throttle = sources._Throttle(0.35)
    throttle.wait()
    clock.now += 0.30  # work between calls
    throttle.wait()
    assert clock.sleeps == [pytest.approx(0.05)]


def test_tushare_rate_limit_real_clock():
    client = FakeTushare()
    began = time.monotonic()
    fetch_tushare(TICKERS, START, END, client=client, min_interval=0.05)
    assert time.monotonic() - began >= 3 * 0.05  # 4 calls, 3 gaps; lower bound only


def test_tushare_min_interval_zero_never_sleeps(monkeypatch):
    monkeypatch.setattr(sources, "_sleep", lambda s: pytest.fail("slept with min_interval=0"))
    tushare(min_interval=0)


def test_tushare_missing_token_message(no_token):
    with pytest.raises(MissingTokenError) as info:
        fetch_tushare(TICKERS, START, END)
    assert isinstance(info.value, DataError)
    assert str(info.value) == (
        "TUSHARE_TOKEN is not set: pass token=... or export TUSHARE_TOKEN (get one at tushare.pro); "
        "or use source='akshare'/'baostock' which need no token")


def test_tushare_token_from_environment_builds_pro_api(monkeypatch):
    seen = []
    fake = types.SimpleNamespace(pro_api=lambda token: seen.append(token) or FakeTushare())
    monkeypatch.setitem(sys.modules, "tushare", fake)
    monkeypatch.setenv("TUSHARE_TOKEN", f"  {TOKEN}\n")
    assert fetch_tushare(TICKERS, START, END, min_interval=0).source == "tushare"
    assert seen == [TOKEN]


def test_tushare_token_is_never_leaked(monkeypatch, tmp_path, capsys, caplog):
    leak = PermissionError(f"抱歉，您没有访问该接口的权限 (token={TOKEN})")
    clients = iter([FakeTushare(errors={("index_daily", "000300.SH"): leak}),
                    FakeTushare(errors={("daily", "600030.SH"): leak})])
    monkeypatch.setitem(sys.modules, "tushare", types.SimpleNamespace(pro_api=lambda token: next(clients)))
    monkeypatch.delenv("TUSHARE_TOKEN", raising=False)

    with warnings.catch_warnings(record=True) as caught:  # benchmark failure: warning, no benchmark
        warnings.simplefilter("always")
        result = fetch_tushare(TICKERS, START, END, token=TOKEN, cache_dir=tmp_path, min_interval=0)
    assert result.benchmark is None and len(result.bars) == 9
    with pytest.raises(DataError) as info:  # a bar failure: an error
        fetch_tushare(TICKERS, "2019-10-29", END, token=TOKEN, cache_dir=tmp_path, min_interval=0)

    texts = [str(info.value), "".join(traceback.format_exception(info.value)),
             *(str(w.message) for w in caught), *capsys.readouterr(), caplog.text]
    assert "600030.SH" in texts[0] and "权限" in texts[0]  # the provider's reason is kept...
    assert any("index_daily" in t for t in texts)
    for path in tmp_path.rglob("*"):
        texts.append(str(path))
        if path.is_file():
            texts.append(path.read_text(encoding="utf-8"))
    assert len(list(tmp_path.rglob("*.csv"))) == 4  # the cache was really written (3 + 1 new window)
    assert not [t for t in texts if TOKEN in t]  # ...but never the token


def test_tushare_provider_exception_names_ticker_and_endpoint():
    client = FakeTushare(errors={("daily", "600030.SH"): RuntimeError("抱歉，您每分钟最多访问该接口500次\nretry")})
    with pytest.raises(DataError) as info:
        tushare(client)
    message = str(info.value)
    assert "600030.SH" in message and "daily" in message and "\n" not in message
    assert info.value.__cause__ is None and info.value.__context__ is None


def test_tushare_ticker_without_rows_is_an_error():
    with pytest.raises(DataError, match=r"tushare daily returned no bars for 600016\.SH"):
        fetch_tushare(["600000.SH", "600016.SH"], START, END, client=FakeTushare(), min_interval=0)


def test_tushare_calendar_failure_warns_and_keeps_bars():
    client = FakeTushare(errors={("trade_cal", "SSE"): PermissionError("需要2000积分")})
    with pytest.warns(UserWarning, match="trade_cal.*continuing without the calendar"):
        result = tushare(client)
    assert result.calendar is None and len(result.bars) == 9


# --------------------------------------------------------------------------- akshare

def test_akshare_converts_chinese_columns_and_lots():
    client = FakeAkshare()
    result = fetch_akshare(TICKERS, START, END, client=client)
    bars = result.bars
    assert result.source == "akshare" and result.calendar is None
    assert list(bars.columns) == ["date", "tic", "open", "high", "low", "close", "volume", "amount"]
    row = _row(bars, "600000.SH", "2019-10-28")  # raw: 成交量 723805 lots, 成交额 922489039 yuan
    assert (row.open, row.high, row.low, row.close) == (12.75, 12.88, 12.65, 12.70)
    assert row.volume == 72_380_500 and row.amount == 922_489_039
    assert bars.equals(bars.sort_values(["date", "tic"], ignore_index=True))
    assert len(bars) == 9 and not ((bars.tic == SUSPENDED[0]) & (bars.date == SUSPENDED[1])).any()
    assert client.calls[0] == ("stock_zh_a_hist", dict(symbol="600000", period="daily", start_date="20191028",
                                                       end_date="20191101", adjust=""))


def test_akshare_benchmark():
    client = FakeAkshare()
    bench = fetch_akshare(TICKERS, START, END, client=client).benchmark
    assert bench.name == "CSI 300" and list(bench.index) == list(TRADING_DAYS)
    assert bench.iloc[-1] == 3952.39
    assert client.calls[-1] == ("index_zh_a_hist", dict(symbol="000300", period="daily",
                                                        start_date="20191028", end_date="20191101"))
    assert fetch_akshare(TICKERS, START, END, client=FakeAkshare(), with_benchmark=False).benchmark is None


def test_akshare_provider_exception_names_ticker():
    client = FakeAkshare(errors={"600030": KeyError("date")})
    with pytest.raises(DataError, match=r"akshare stock_zh_a_hist failed for 600030\.SH: KeyError"):
        fetch_akshare(TICKERS, START, END, client=client)


def test_akshare_ticker_without_rows_is_an_error():
    with pytest.raises(DataError, match=r"no bars for 000001\.SZ"):
        fetch_akshare(["600000.SH", "000001.SZ"], START, END, client=FakeAkshare())


# --------------------------------------------------------------------------- baostock

def test_baostock_drops_suspended_rows_and_keeps_units():
    client = FakeBaostock()
    result = fetch_baostock(TICKERS, START, END, client=client)
    bars = result.bars
    assert result.source == "baostock"
    assert list(bars.columns) == ["date", "tic", "open", "high", "low", "close", "pre_close", "volume",
                                  "amount", "is_st"]
    assert len(bars) == 9  # the tradestatus '0' row of 600030.SH on 2019-10-30 is gone
    assert not ((bars.tic == SUSPENDED[0]) & (bars.date == SUSPENDED[1])).any()
    row = _row(bars, "600000.SH", "2019-10-28")  # raw strings: volume in shares, amount in yuan
    assert row.volume == 72_380_466 and row.amount == 922_489_039 and row.pre_close == 12.90
    assert (bars.is_st == 0).all() and bars.dtypes["close"] == "float64"
    assert bars.equals(bars.sort_values(["date", "tic"], ignore_index=True))


def test_baostock_request_parameters_login_logout():
    client = FakeBaostock()
    fetch_baostock(["600000.SH"], START, END, client=client)
    assert client.calls[0] == ("query_history_k_data_plus", dict(
        code="sh.600000", fields="date,code,open,high,low,close,preclose,volume,amount,tradestatus,isST",
        start_date="2019-10-28", end_date="2019-11-01", frequency="d", adjustflag="3"))
    assert client.logouts == 1 and not client.logged_in


def test_baostock_calendar_and_benchmark():
    result = fetch_baostock(TICKERS, START, END, client=FakeBaostock())
    assert result.calendar.equals(pd.DatetimeIndex(TRADING_DAYS, name="date"))
    assert result.benchmark.name == "CSI 300" and list(result.benchmark.index) == list(TRADING_DAYS)
    assert result.benchmark.iloc[0] == 3921.19


def test_baostock_error_code_names_ticker_and_still_logs_out():
    client = FakeBaostock(error_for="sh.600030")
    with pytest.raises(DataError, match=r"baostock query_history_k_data_plus failed for 600030\.SH: 用户未登录"):
        fetch_baostock(TICKERS, START, END, client=client)
    assert client.logouts == 1


def test_baostock_exception_names_ticker_and_still_logs_out():
    client = FakeBaostock(raise_for="sh.600000")
    with pytest.raises(DataError, match=r"failed for 600000\.SH: ConnectionError: socket closed"):
        fetch_baostock(TICKERS, START, END, client=client)
    assert client.logouts == 1


# --------------------------------------------------------------------------- across providers

def test_providers_agree_on_the_same_days():
    by_source = {
        "tushare": tushare().bars,
        "akshare": fetch_akshare(TICKERS, START, END, client=FakeAkshare()).bars,
        "baostock": fetch_baostock(TICKERS, START, END, client=FakeBaostock()).bars,
    }
    prices = ["date", "tic", "open", "high", "low", "close", "amount"]
    for bars in by_source.values():
        pd.testing.assert_frame_equal(bars[prices], by_source["tushare"][prices])
    common = prices + ["volume", "pre_close"]
    pd.testing.assert_frame_equal(by_source["baostock"][common], by_source["tushare"][common])


@pytest.mark.parametrize("name", ["tushare", "akshare", "baostock"])
def test_missing_library_is_a_clear_error(monkeypatch, name):
    monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setenv("TUSHARE_TOKEN", TOKEN)
    fetch = {"tushare": fetch_tushare, "akshare": fetch_akshare, "baostock": fetch_baostock}[name]
    with pytest.raises(DataError) as info:
        fetch(TICKERS, START, END)
    assert str(info.value) == f"{name} is not installed: pip install {name}"


@pytest.mark.parametrize("start", ["2019-10-28", "20191028", pd.Timestamp("2019-10-28 15:00")])
def test_dates_in_any_accepted_form(start):
    client = FakeAkshare()
    fetch_akshare(TICKERS, start, END, client=client, with_benchmark=False)
    assert client.calls[0][1]["start_date"] == "20191028"


@pytest.mark.parametrize("start, end", [("Oct 28 2019", END), ("2019/10/28", END), (START, "2019-10-27")])
def test_bad_dates_are_data_errors(start, end):
    with pytest.raises(DataError):
        fetch_akshare(TICKERS, start, end, client=FakeAkshare())


# --------------------------------------------------------------------------- tickers

@pytest.mark.parametrize("plain, ticker", [("600000", "600000.SH"), ("688981", "688981.SH"),
                                           ("000001", "000001.SZ"), ("300750", "300750.SZ"),
                                           ("830799", "830799.BJ"), ("430047", "430047.BJ"),
                                           ("920002", "920002.BJ")])
def test_plain_code_round_trip(plain, ticker):
    assert from_plain_code(plain) == ticker
    assert to_plain_code(ticker) == plain


def test_baostock_code():
    assert to_baostock_code("600000.SH") == "sh.600000"
    assert to_baostock_code("000001.sz") == "sz.000001"
    assert to_baostock_code("300750") == "sz.300750"


@pytest.mark.parametrize("bad", ["60000", "6000000", "abcdef", "900901", "200002", ""])
def test_from_plain_code_rejects_invalid(bad):
    with pytest.raises(DataError):
        from_plain_code(bad)


@pytest.mark.parametrize("bad", ["600000.SS", "sh.600000", "600000SH", "AAPL"])
def test_to_plain_code_rejects_invalid(bad):
    with pytest.raises(DataError):
        to_plain_code(bad)


# --------------------------------------------------------------------------- read_bars

def test_read_bars_from_csv_keeps_leading_zeros(tmp_path):
    frame = pd.DataFrame({"date": ["2019-10-29", "2019-10-28"] * 2,
                          "tic": ["000001.SZ"] * 2 + ["000002"] * 2,
                          "open": [16.5, 16.4, 31.0, 30.9], "high": [16.8, 16.6, 31.5, 31.2],
                          "low": [16.3, 16.2, 30.5, 30.6], "close": [16.6, 16.5, 31.2, 31.0],
                          "volume": [1e7, 1.1e7, 5e6, 4e6]})
    path = tmp_path / "bars.csv.gz"
    frame.to_csv(path, index=False)
    result = read_bars(path)
    assert result.source == "csv" and result.calendar is None and result.benchmark is None
    # leading zeros kept, and the bare code gets its exchange (one spelling per stock)
    assert list(result.bars.tic) == ["000001.SZ", "000002.SZ", "000001.SZ", "000002.SZ"]
    assert result.bars.date.is_monotonic_increasing
    pd.testing.assert_frame_equal(read_bars(frame).bars, result.bars)


def test_read_bars_missing_file_names_the_path(tmp_path):
    path = tmp_path / "nowhere" / "bars.csv"
    with pytest.raises(DataError, match="bars.csv") as info:
        read_bars(path)
    assert str(path) in str(info.value)


def test_read_bars_validates():
    with pytest.raises(DataError, match="missing required column"):
        read_bars(pd.DataFrame({"date": ["2019-10-28"], "tic": ["600000.SH"]}))


# --------------------------------------------------------------------------- live providers

def _check_live(result):
    bars = result.bars
    row = _row(bars, "600000.SH", "2019-10-28")
    assert row.close == pytest.approx(12.70)
    assert row.volume == pytest.approx(72_380_466, rel=1e-3)  # shares, not lots
    assert row.amount > 5e8  # yuan, not thousands
    assert not ((bars.tic == SUSPENDED[0]) & (bars.date == SUSPENDED[1])).any()


@pytest.mark.network
def test_live_tushare():
    pytest.importorskip("tushare")
    if not os.environ.get("TUSHARE_TOKEN"):
        pytest.skip("TUSHARE_TOKEN is not set")
    result = fetch_tushare(TICKERS, START, END)
    _check_live(result)
    assert result.calendar.equals(pd.DatetimeIndex(TRADING_DAYS, name="date"))


@pytest.mark.network
def test_live_akshare():
    pytest.importorskip("akshare")
    _check_live(fetch_akshare(TICKERS, START, END))


@pytest.mark.network
def test_live_baostock():
    pytest.importorskip("baostock")
    result = fetch_baostock(TICKERS, START, END)
    _check_live(result)
    assert result.calendar.equals(pd.DatetimeIndex(TRADING_DAYS, name="date"))


# --------------------------------------------------------------------------- corporate actions, ST, listings

class FakeTushareActions(FakeTushare):
    """Adds the dividend, namechange and stock_basic endpoints."""

    def __init__(self, *args, dividend_error=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.dividend_error = dividend_error

    def dividend(self, ts_code):
        self._record("dividend", ts_code, {})
        if self.dividend_error:
            raise self.dividend_error
        if ts_code != "600000.SH":
            return pd.DataFrame(columns=["ts_code", "div_proc", "stk_div", "cash_div_tax", "ex_date"])
        return pd.DataFrame({"ts_code": [ts_code] * 3, "div_proc": ["实施", "预案", "实施"],
                             "stk_div": [0.0, 0.5, 0.3], "cash_div_tax": [0.30, 1.0, 0.0],
                             "ex_date": ["20191030", None, "20180705"]})

    def namechange(self, ts_code):
        self._record("namechange", ts_code, {})
        if ts_code != "600030.SH":
            return pd.DataFrame({"name": ["浦发银行"], "start_date": ["19991110"], "end_date": [None]})
        return pd.DataFrame({"name": ["中信证券", "ST中信"], "start_date": ["20030106", "20191031"],
                             "end_date": ["20191030", None]})

    def stock_basic(self, ts_code, fields):
        self._record("stock_basic", ts_code, {"fields": fields})
        return pd.DataFrame({"ts_code": [ts_code], "list_date": ["19991110" if ts_code == "600000.SH" else "20191029"]})


def test_tushare_dividends_st_and_listings():
    client = FakeTushareActions()
    result = fetch_tushare(TICKERS, START, END, client=client, min_interval=0, corporate_actions=True)
    bars = result.bars
    a = bars[bars.tic == "600000.SH"].set_index("date")
    # the implemented 2019 plan lands on its ex-date; the plan (预案) and an older one do not
    assert a.loc["2019-10-30", "cash_dividend"] == 0.30 and a["cash_dividend"].sum() == pytest.approx(0.30)
    assert (a["bonus_shares"] == 0).all()
    b = bars[bars.tic == "600030.SH"].set_index("date")
    assert b["is_st"].tolist() == [float(d >= pd.Timestamp("2019-10-31")) for d in b.index]  # ST from 10-31
    assert b["is_st"].sum() >= 1 and b["is_st"].iloc[0] == 0
    assert (a["is_st"] == 0).all()
    listings = result.listings.set_index("tic")
    assert listings.loc["600000.SH", "list_date"] == pd.Timestamp("1999-11-10")
    # 600030.SH "listed" on 2019-10-29 in this fake: the issue price is that day's pre_close
    assert listings.loc["600030.SH", "issue_price"] == float(b.loc["2019-10-29", "pre_close"])
    assert pd.isna(listings.loc["600000.SH", "issue_price"])


def test_tushare_dividend_permission_error_warns_and_keeps_bars():
    client = FakeTushareActions(dividend_error=PermissionError("抱歉，您没有访问该接口的权限"))
    with pytest.warns(UserWarning, match="dividend.*continuing without the dividend table"):
        result = fetch_tushare(TICKERS, START, END, client=client, min_interval=0, corporate_actions=True)
    plain = fetch_tushare(TICKERS, START, END, client=FakeTushare(), min_interval=0)
    assert len(result.bars) == len(plain.bars) and "cash_dividend" not in result.bars


def test_dividend_on_a_suspended_ex_date_goes_to_the_next_bar():
    bars = pd.DataFrame({"date": pd.to_datetime(["2019-10-28", "2019-10-29", "2019-10-31"]), "tic": "600000.SH",
                         "close": [10.0, 10.0, 9.7]})
    actions = sources._actions_frame(["20191030", "20191101"], [0.3, 0.2], [0.0, 0.0])
    out = sources._with_dividends(bars, actions)
    assert out["cash_dividend"].tolist() == [0.0, 0.0, 0.3]  # 10-30 suspended; 11-01 after the data


class FakeBaostockActions(FakeBaostock):
    def query_dividend_data(self, code, year, yearType):
        self.calls.append(("query_dividend_data", dict(code=code, year=year, yearType=yearType)))
        fields = ["code", "dividOperateDate", "dividCashPsBeforeTax", "dividStocksPs", "dividReserveToStockPs"]
        rows = [[code, "2019-10-30", "0.3", "0.1", "0.2"]] if code == "sh.600000" and year == "2019" else []
        return FakeResultData(rows, fields)

    def query_stock_basic(self, code):
        return FakeResultData([[code, "1999-11-10"]], ["code", "ipoDate"])


def test_baostock_dividends_and_listings():
    result = fetch_baostock(TICKERS, START, END, client=FakeBaostockActions(), corporate_actions=True)
    a = result.bars[result.bars.tic == "600000.SH"].set_index("date")
    assert a.loc["2019-10-30", "cash_dividend"] == 0.3
    assert a.loc["2019-10-30", "bonus_shares"] == pytest.approx(0.3)  # 0.1 bonus + 0.2 transfer per share
    assert a["cash_dividend"].sum() == pytest.approx(0.3)
    assert set(result.listings["list_date"]) == {pd.Timestamp("1999-11-10")}


class FakeAkshareActions(FakeAkshare):
    def stock_zh_a_daily(self, symbol, adjust):
        self.calls.append(("stock_zh_a_daily", dict(symbol=symbol, adjust=adjust)))
        return pd.DataFrame({"date": ["1900-01-01", "2019-10-30"], "hfq_factor": ["1.0", "1.05"]})

    def stock_individual_info_em(self, symbol):
        return pd.DataFrame({"item": ["股票代码", "上市时间"], "value": [symbol, 19991110]})


class FakeAkshareDividends(FakeAkshareActions):
    """Adds sina's 分红 table (per 10 shares): a plan not yet implemented, and the 2019-10-30 cash
    dividend that the 1.05 factor stands for, 派 10 x prev x (1 - 1/1.05) yuan per 10 shares."""

    def stock_history_dividend_detail(self, symbol, indicator):
        self.calls.append(("stock_history_dividend_detail", dict(symbol=symbol, indicator=indicator)))
        daily = self._daily[self._daily["股票代码"] == symbol].set_index("日期")
        previous = float(daily.loc["2019-10-29", "收盘"])
        return pd.DataFrame({"公告日期": ["2020-04-01", "2019-10-20"], "送股": [3, 0], "转增": [2, 0],
                             "派息": [5.0, round(10 * previous * (1 - 1 / 1.05), 2)], "进度": ["预案", "实施"],
                             "除权除息日": [None, "2019-10-30"], "股权登记日": [None, "2019-10-29"],
                             "红股上市日": [None, None]})


def test_akshare_adjustment_factor_and_listing():
    client = FakeAkshareActions()
    result = fetch_akshare(["600000.SH"], START, END, client=client, corporate_actions=True)
    assert ("stock_zh_a_daily", {"symbol": "sh600000", "adjust": "hfq-factor"}) in client.calls
    factor = result.bars.set_index("date")["adj_factor"]
    assert factor.loc[:"2019-10-29"].eq(1.0).all() and factor.loc["2019-10-30":].eq(1.05).all()
    assert result.listings["list_date"].tolist() == [pd.Timestamp("1999-11-10")]
    from finrl_tutorial.data import prepare_market

    market = prepare_market(result.bars, indicators=(), splits={"train": (START, END)}).full
    (action,) = market.info["corporate_actions"]
    assert action["date"] == "2019-10-30" and action["how"] == "split"
    # a total factor of 1.05 is under one bonus share per 10: all of it is cash, prev × (1 - 1/1.05)
    closes = result.bars.set_index("date")["close"]
    assert action["ratio"] == 1.0
    assert action["dividend"] == pytest.approx(closes.loc["2019-10-29"] * (1 - 1 / 1.05), abs=1e-4)


def test_akshare_dividend_table_makes_the_split_exact():
    client = FakeAkshareDividends()
    result = fetch_akshare(["600000.SH"], START, END, client=client, corporate_actions=True)
    assert ("stock_history_dividend_detail", {"symbol": "600000", "indicator": "分红"}) in client.calls
    a = result.bars.set_index("date")
    closes = a["close"]
    cash = round(10 * closes.loc["2019-10-29"] * (1 - 1 / 1.05), 2) / 10
    # the implemented plan lands on its ex-date, per share; the plan (预案) does not
    assert a.loc["2019-10-30", "cash_dividend"] == pytest.approx(cash) and a["cash_dividend"].sum() == pytest.approx(cash)
    assert (a["bonus_shares"] == 0).all()
    from finrl_tutorial.data import prepare_market

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        market = prepare_market(result.bars, indicators=(), splits={"train": (START, END)}).full
    assert not [w for w in caught if "total adjustment" in str(w.message) or "disagree" in str(w.message)]
    (action,) = market.info["corporate_actions"]
    assert (action["how"], action["ratio"], action["dividend"]) == ("announced", 1.0, pytest.approx(cash))


def test_akshare_without_the_dividend_endpoint_warns_and_keeps_the_factor():
    with pytest.warns(UserWarning, match="stock_history_dividend_detail is not available.*continuing without "
                                         "the dividend table"):
        result = fetch_akshare(["600000.SH"], START, END, client=FakeAkshareActions(), corporate_actions=True)
    assert "adj_factor" in result.bars and "cash_dividend" not in result.bars


# --------------------------------------------------------------------------- can a source run here?

@pytest.fixture
def probes(monkeypatch):
    """source_status with its probes replaced: no import search, no network. ``state`` says which
    libraries are installed and which servers answer; ``tried`` records each connect."""
    state = {"installed": {"tushare", "akshare", "baostock"}, "reachable": set(), "tried": []}

    def reachable(host, port, timeout):
        state["tried"].append((host, port, timeout))
        return host in state["reachable"]

    monkeypatch.setattr(sources, "_installed", lambda module: module in state["installed"])
    monkeypatch.setattr(sources, "_reachable", reachable)
    monkeypatch.delenv("TUSHARE_TOKEN", raising=False)
    return state


def test_source_status_says_why_tushare_cannot_run_and_never_shows_the_token(probes, monkeypatch):
    assert sources.source_status("tushare") == "TUSHARE_TOKEN is not set"
    assert sources.source_status("tushare", token=TOKEN) is None  # no server probe for tushare
    probes["installed"].discard("tushare")
    monkeypatch.setenv("TUSHARE_TOKEN", TOKEN)
    why = sources.source_status("tushare")
    assert why == "tushare is not installed (pip install tushare)" and TOKEN not in why
    assert probes["tried"] == []


@pytest.mark.parametrize("source", ["akshare", "baostock"])
def test_source_status_checks_the_library_then_the_server(probes, source):
    host, port = sources.SOURCE_SERVERS[source]
    probes["installed"].discard(source)
    assert sources.source_status(source) == f"{source} is not installed (pip install {source})"
    assert probes["tried"] == []  # no connect when the library is missing
    probes["installed"].add(source)
    assert sources.source_status(source, timeout=0.5) == f"its server ({host}) is not reachable"
    assert probes["tried"] == [(host, port, 0.5)]
    probes["reachable"].add(host)
    assert sources.source_status(source) is None


def test_source_status_of_the_sample_is_none_and_an_unknown_name_is_an_error(probes):
    assert sources.source_status("sample") is None
    with pytest.raises(DataError, match="unknown data source 'yahoo'"):
        sources.source_status("yahoo")
    from finrl_tutorial import data

    assert data.source_status is sources.source_status and "source_status" in data.__all__


def test_reachable_is_false_when_nothing_listens():
    import socket

    with socket.socket() as probe:  # a port that was free a moment ago: nothing listens on it now
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    assert sources._reachable("127.0.0.1", port, timeout=0.5) is False
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        assert sources._reachable("127.0.0.1", server.getsockname()[1], timeout=0.5) is True
