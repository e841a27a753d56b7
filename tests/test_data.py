"""Data pipeline: the embedded sample, cleaning facts, no look-ahead, provider fields, bad input."""
import numpy as np
import pandas as pd
import pytest
import torch

from finrl_tutorial.data import (SSE15_SPLITS, DataError, MarketData, PreparedMarket, load_market, load_sample,
                                 prepare_market, validate_bars)
from finrl_tutorial.data.market import _ARRAY_FIELDS

# stockstats (a dependency) calls set_index(inplace=True), deprecated in pandas 3.1: not our concern here
pytestmark = pytest.mark.filterwarnings("ignore:The inplace keyword in DataFrame.set_index")


def _day(market: MarketData, date: str) -> int:
    return int(pd.DatetimeIndex(market.dates).get_loc(pd.Timestamp(date)))


def _col(market: MarketData, tic: str) -> int:
    return market.tickers.index(tic)


# --- the embedded sample --------------------------------------------------------------------------

def test_sample_calendar_and_universe(sse15):
    assert isinstance(sse15, PreparedMarket)
    full = sse15.full
    assert full.num_stocks == 15 and len(full.tickers) == 15
    assert full.tickers == sorted(full.tickers) and all(t.endswith(".SH") for t in full.tickers)
    assert full.num_days == 1221
    assert full.date_range() == ("2015-01-05", "2020-01-03")
    assert np.all(np.diff(full.dates.astype("int64")) > 0)
    assert full.source == "sample:sse15"
    for name in _ARRAY_FIELDS:
        tensor = getattr(full, name)
        assert tensor.shape[:2] == (1221, 15), name
        if tensor.is_floating_point() and name not in ("up_limit",):
            assert torch.isfinite(tensor).all(), name
    assert full.features.shape == (1221, 15, len(full.feature_names))
    assert full.features.abs().max() <= 5.0


def test_load_sample_schema(sse15_bars):
    assert list(sse15_bars.columns) == ["date", "tic", "open", "high", "low", "close", "volume"]
    assert len(sse15_bars) == 17960
    # volume converted from lots to shares: 600000.SH traded 5,135,687.09 lots on the first day
    first = sse15_bars[(sse15_bars["tic"] == "600000.SH") & (sse15_bars["date"] == "2015-01-05")]
    assert float(first["volume"].iloc[0]) == pytest.approx(513_568_709.0)


def test_suspended_stock_days(sse15):
    info = sse15.full.info
    assert info["suspended_by_ticker"]["600050.SH"] == 95
    assert info["suspended_by_ticker"]["600309.SH"] == 133
    tradable = sse15.full.tradable
    assert int((~tradable).sum()) == info["suspended_stock_days"]
    assert int((~tradable[:, _col(sse15.full, "600050.SH")]).sum()) == 95
    # 1,221 days x 15 stocks minus the absent rows = the sample's 17,960 rows
    assert 1221 * 15 - info["suspended_stock_days"] == 17960
    assert sse15.summary()["suspended_stock_days"] == info["suspended_stock_days"]


README_ACTIONS = [("600000.SH", "2016-06-23"), ("600000.SH", "2017-05-25"), ("600016.SH", "2018-07-05"),
                  ("600309.SH", "2017-05-18"), ("600547.SH", "2019-08-20"), ("600570.SH", "2019-05-15")]


def test_readme_corporate_actions_detected(sse15):
    full = sse15.full
    actions = {(a["tic"], a["date"]): a for a in full.info["corporate_actions"]}
    for tic, date in README_ACTIONS:
        assert (tic, date) in actions, (tic, date)
        assert actions[(tic, date)]["how"] == "detected"
        day, col = _day(full, date), _col(full, tic)
        ratio = float(full.split_ratio[day, col])
        assert ratio > 1.05
        assert ratio == pytest.approx(actions[(tic, date)]["ratio"], rel=1e-5)
        # a holder keeps the previous close at the reference: ratio x reference + cash
        assert ratio * float(full.pre_close[day, col]) + float(full.dividend[day, col]) == pytest.approx(
            float(full.close[day - 1, col]), rel=1e-12)
        # and the raw close-to-close move was beyond the -10 % limit
        assert float(full.close[day, col] / full.close[day - 1, col]) < 0.9
    years = {a["date"][:4] for a in full.info["corporate_actions"] if a["tic"] == "600276.SH"}
    assert years == {"2015", "2016", "2017", "2018", "2019"}
    for action in full.info["corporate_actions"]:
        day, col = _day(full, action["date"]), _col(full, action["tic"])
        assert float(full.split_ratio[day, col]) != 1.0 or float(full.dividend[day, col]) > 0
    # an action exactly on the listed days
    assert int(((full.split_ratio != 1.0) | (full.dividend > 0)).sum()) == len(actions)


def test_plain_limit_up_day_is_not_a_corporate_action(sse15):
    full = sse15.full
    day, col = _day(full, "2015-02-16"), _col(full, "600050.SH")
    close, prev = float(full.close[day, col]), float(full.close[day - 1, col])
    assert (prev, close) == (4.85, 5.34)
    assert close / prev - 1 > 0.10  # +10.1 %: over 10 % only because the limit is rounded to the tick
    assert float(full.split_ratio[day, col]) == 1.0
    assert float(full.pre_close[day, col]) == prev
    assert float(full.up_limit[day, col]) == pytest.approx(5.34)
    assert ("600050.SH", "2015-02-16") not in {(a["tic"], a["date"]) for a in full.info["corporate_actions"]}


def test_sse15_split_sizes(sse15):
    assert sse15.split_dates["train"] == ("2015-01-05", "2017-12-29")
    assert sse15.split_dates["test"][0] == "2019-01-02"
    assert sse15.split_dates["test"][1] == "2020-01-03"
    assert sse15.split_dates["valid"] == ("2018-01-02", "2018-12-28")
    days = {name: sse15.splits[name].num_days for name in ("train", "valid", "test")}
    assert days == {"train": 732, "valid": 243, "test": 246}
    assert sum(days.values()) == sse15.full.num_days
    # the splits are contiguous slices of the full calendar
    assert torch.equal(sse15.train.close, sse15.full.close[:732])
    assert torch.equal(sse15.valid.features, sse15.full.features[732:975])
    assert torch.equal(sse15.test.tradable, sse15.full.tradable[975:])
    assert sse15.summary()["splits"]["train"] == {"start": "2015-01-05", "end": "2017-12-29", "days": 732}
    assert SSE15_SPLITS["train"][1] == "2017-12-29" and SSE15_SPLITS["test"][0] == "2019-01-02"


def test_load_market_selection(sse15_bars):
    prepared = load_market(tickers=["600000.SH", "600519.SH"], start="2016-01-01", end="2016-12-31")
    assert prepared.full.tickers == ["600000.SH", "600519.SH"]
    assert prepared.full.first_date >= "2016-01-01" and prepared.full.last_date <= "2016-12-31"
    assert set(prepared.splits) == {"train", "valid", "test"}  # 60/20/20 by default
    with pytest.raises(DataError, match="600999.SH"):
        load_market(tickers=["600000.SH", "600999.SH"])


# --- suspensions ----------------------------------------------------------------------------------

def test_suspended_day_keeps_last_close_never_a_future_price(sse15):
    full = sse15.full
    col = _col(full, "600309.SH")
    first, last = _day(full, "2017-12-05"), _day(full, "2018-06-01")
    assert not full.tradable[first:last + 1, col].any()
    assert full.tradable[first - 1, col] and full.tradable[last + 1, col]
    last_close = float(full.close[first - 1, col])
    middle = (first + last) // 2
    for name in ("open", "high", "low", "close"):
        assert float(getattr(full, name)[middle, col]) == last_close, name
    assert torch.all(full.close[first:last + 1, col] == last_close)
    assert float(full.close[last + 1, col]) != last_close  # the resumption price is not back-filled
    assert float(full.split_ratio[middle, col]) == 1.0
    # features are carried forward from the last traded day, not taken from the future
    assert torch.equal(full.features[middle, col], full.features[first - 1, col])


def test_every_suspended_close_is_the_last_traded_close(sse15):
    full = sse15.full
    close, tradable = full.close.numpy(), full.tradable.numpy()
    for col in range(full.num_stocks):
        last = None
        for day in range(full.num_days):
            if tradable[day, col]:
                last = close[day, col]
            elif last is not None:
                assert close[day, col] == last, (full.tickers[col], day)


def test_suspension_and_resumption_in_synthetic_bars(synthetic_bars):
    bars = synthetic_bars(days=30)
    dates = sorted(bars["date"].unique())
    gap = bars[(bars["tic"] == "600036.SH") & bars["date"].isin(dates[10:15])]
    bars = bars.drop(gap.index)
    market = prepare_market(bars, splits={"train": (dates[0], dates[19]), "test": (dates[20], dates[-1])},
                            indicators=()).full
    col = market.tickers.index("600036.SH")
    assert market.tradable[:, col].tolist() == [True] * 10 + [False] * 5 + [True] * 15
    assert torch.all(market.close[10:15, col] == market.close[9, col])
    assert market.info["suspended_by_ticker"] == {"600036.SH": 5}


def test_zero_volume_day_is_not_tradable(synthetic_bars):
    bars = synthetic_bars(days=20)
    bars.loc[5, "volume"] = 0.0
    market = prepare_market(bars, indicators=()).full
    day = _day(market, bars.loc[5, "date"])
    assert not market.tradable[day, _col(market, bars.loc[5, "tic"])]


# --- no look-ahead, train-only normalisation --------------------------------------------------------

@pytest.mark.parametrize("cut_date", ["2016-06-23", "2017-05-25", "2018-02-01"])
def test_no_look_ahead(sse15_bars, cut_date):
    """Removing every bar from day k on leaves all arrays of days < k unchanged."""
    dates = pd.DatetimeIndex(sorted(pd.to_datetime(sse15_bars["date"]).unique()))
    k = dates.get_loc(pd.Timestamp(cut_date))
    splits = {"train": (str(dates[0].date()), str(dates[250].date())),
              "test": (str(dates[251].date()), str(dates[k - 1].date()))}
    full = prepare_market(sse15_bars, splits=splits).full
    cut = prepare_market(sse15_bars[pd.to_datetime(sse15_bars["date"]) < dates[k]], splits=splits).full
    assert cut.num_days == k and cut.tickers == full.tickers
    assert np.array_equal(cut.dates, full.dates[:k])
    assert cut.feature_names == full.feature_names
    assert cut.info["feature_mean"] == full.info["feature_mean"]
    assert cut.info["feature_std"] == full.info["feature_std"]
    for name in _ARRAY_FIELDS:
        assert torch.equal(getattr(cut, name), getattr(full, name)[:k]), name
    # raw (un-normalised) features agree too
    mean, std = torch.tensor(full.info["feature_mean"]), torch.tensor(full.info["feature_std"])
    torch.testing.assert_close(cut.features * std + mean, full.features[:k] * std + mean, rtol=0, atol=0)


def test_normalisation_is_fitted_on_train_only(sse15_bars, sse15):
    bars = sse15_bars.copy()
    late = pd.to_datetime(bars["date"]) >= pd.Timestamp("2019-01-02")
    rng = np.random.default_rng(0)
    noise = rng.uniform(0.97, 1.03, int(late.sum()))
    for column in ("open", "high", "low", "close"):
        bars.loc[late, column] = np.round(bars.loc[late, column] * noise, 2)
    bars.loc[late, "volume"] = bars.loc[late, "volume"] * 3
    changed = prepare_market(bars, splits=SSE15_SPLITS)
    assert changed.full.info["feature_mean"] == sse15.full.info["feature_mean"]
    assert changed.full.info["feature_std"] == sse15.full.info["feature_std"]
    assert torch.equal(changed.train.features, sse15.train.features)
    assert torch.equal(changed.valid.features, sse15.valid.features)
    assert not torch.equal(changed.test.features, sse15.test.features)
    # the train split is z-scored: mean ~0, std ~1 on traded stock-days (before clipping)
    train = sse15.train.features[sse15.train.tradable]
    assert train.mean(0).abs().max() < 0.1
    assert ((train.std(0) - 1).abs() < 0.2).all()


# --- provider fields -----------------------------------------------------------------------------

def _bonus_bars(synthetic_bars, day=15):
    """Bars where 600000.SH halves on ``day`` (a 10-for-10 bonus share issue)."""
    bars = synthetic_bars(days=40, seed=3)
    a = bars["tic"] == "600000.SH"
    index = bars.index[a][day:]
    for column in ("open", "high", "low", "close"):
        bars.loc[index, column] = np.round(bars.loc[index, column] / 2, 2)
    return bars, bars.loc[bars.index[a][day], "date"]


def test_pre_close_marks_a_bonus_issue(synthetic_bars):
    bars, ex_date = _bonus_bars(synthetic_bars)
    bars["pre_close"] = bars.groupby("tic")["close"].shift(1)
    a = (bars["tic"] == "600000.SH") & (bars["date"] == ex_date)
    prev_close = float(bars.loc[bars.index[bars.index.get_loc(bars.index[a][0]) - 1], "close"])
    bars.loc[a, "pre_close"] = prev_close / 2
    market = prepare_market(bars, indicators=()).full
    assert market.info["corporate_actions"] == [
        {"tic": "600000.SH", "date": ex_date, "ratio": 2.0, "dividend": 0.0, "how": "split"}]
    day, col = _day(market, ex_date), _col(market, "600000.SH")
    assert float(market.split_ratio[day, col]) == pytest.approx(2.0)
    assert float(market.pre_close[day, col]) == pytest.approx(prev_close / 2)
    assert float(market.up_limit[day, col]) == pytest.approx(np.floor(prev_close / 2 * 1.1 * 100 + 0.5) / 100)
    # the return feature sees the adjusted move, not a -50 % crash
    ret = market.feature_names.index("return_1d")
    mean, std = market.info["feature_mean"][ret], market.info["feature_std"][ret]
    assert abs(float(market.features[day, col, ret]) * std + mean) < 0.05


def test_adj_factor_marks_a_bonus_issue(synthetic_bars):
    bars, ex_date = _bonus_bars(synthetic_bars)
    bars["adj_factor"] = np.where((bars["tic"] == "600000.SH") & (pd.to_datetime(bars["date"])
                                                                   >= pd.Timestamp(ex_date)), 2.0, 1.0)
    market = prepare_market(bars, indicators=()).full
    assert market.info["corporate_actions"] == [
        {"tic": "600000.SH", "date": ex_date, "ratio": 2.0, "dividend": 0.0, "how": "split"}]
    assert float(market.split_ratio[_day(market, ex_date), _col(market, "600000.SH")]) == pytest.approx(2.0)


def test_detected_bonus_issue_without_provider_fields(synthetic_bars):
    bars, ex_date = _bonus_bars(synthetic_bars)
    market = prepare_market(bars, indicators=()).full
    (action,) = market.info["corporate_actions"]
    assert (action["tic"], action["date"], action["how"]) == ("600000.SH", ex_date, "detected")
    # estimated from the ex-day's open, which this random walk puts 2.3 % above the true reference
    assert action["ratio"] == pytest.approx(2.0, rel=0.06)
    (evidence,) = market.info["detected_actions"]
    assert evidence["reference"] * action["ratio"] + action["dividend"] == pytest.approx(evidence["previous_close"])


def test_provider_limits_are_used(synthetic_bars):
    bars = synthetic_bars(days=20)
    bars["up_limit"] = bars["close"] * 1.05
    bars["down_limit"] = bars["close"] * 0.95
    market = prepare_market(bars, indicators=()).full
    col = _col(market, "600000.SH")
    rows = bars[bars["tic"] == "600000.SH"]
    torch.testing.assert_close(market.up_limit[:, col], torch.tensor(rows["up_limit"].to_numpy()))


def test_user_factor_reaches_features(synthetic_bars):
    bars = synthetic_bars(days=40)
    rng = np.random.default_rng(1)
    bars["my_factor"] = rng.normal(size=len(bars))
    bars["comment"] = "text columns are ignored"
    market = prepare_market(bars).full
    assert "my_factor" in market.feature_names and "comment" not in market.feature_names
    assert market.info["user_factors"] == ["my_factor"]
    index = market.feature_names.index("my_factor")
    mean, std = market.info["feature_mean"][index], market.info["feature_std"][index]
    raw = bars.pivot(index="date", columns="tic", values="my_factor")[market.tickers].to_numpy()
    torch.testing.assert_close(market.features[:, :, index] * std + mean, torch.tensor(raw), rtol=1e-9, atol=1e-9)


# --- bad input ------------------------------------------------------------------------------------

def _drop(bars, column):
    return bars.drop(columns=[column])


def _set(column, value, row=3):
    def change(bars):
        bars = bars.astype({column: object}) if isinstance(value, str) else bars
        bars.loc[row, column] = value
        return bars
    return change


BAD_INPUTS = {
    "missing column": (lambda b: _drop(b, "close"), r"missing required column.*close"),
    "missing volume": (lambda b: _drop(b, "volume"), r"missing required column.*volume"),
    "NaN price": (_set("close", np.nan), r"NaN in price column 'close'"),
    "zero price": (_set("open", 0.0), r"price <= 0 in column 'open'"),
    "negative price": (_set("low", -1.0), r"price <= 0 in column 'low'"),
    "high < low": (lambda b: b.assign(high=np.where(b.index == 4, b["low"] - 0.5, b["high"])), r"high < low"),
    "duplicate": (lambda b: pd.concat([b, b.iloc[[7]]], ignore_index=True), r"duplicate \(date, tic\)"),
    "too little history": (lambda b: pd.concat([b, b.iloc[[0]].assign(tic="600519.SH")], ignore_index=True),
                           r"too little history.*600519.SH"),
    "unparseable date": (_set("date", "not-a-date"), r"unparseable date.*not-a-date"),
    "non-numeric price": (_set("high", "abc"), r"non-numeric value.*'high'"),
    "negative volume": (_set("volume", -5.0), r"negative volume"),
}


@pytest.mark.parametrize("name", list(BAD_INPUTS))
def test_bad_input_raises_data_error(synthetic_bars, name):
    change, message = BAD_INPUTS[name]
    bars = change(synthetic_bars(days=20))
    with pytest.raises(DataError, match=message):
        validate_bars(bars)
    with pytest.raises(DataError, match=message):
        prepare_market(bars, indicators=())


def test_more_bad_inputs(synthetic_bars):
    assert issubclass(DataError, ValueError)
    with pytest.raises(DataError, match="DataFrame"):
        validate_bars([1, 2, 3])
    with pytest.raises(DataError, match="no rows"):
        validate_bars(synthetic_bars(days=20).iloc[:0])
    with pytest.raises(DataError, match="too little history"):
        validate_bars(synthetic_bars(days=20), min_history=30)
    bars = synthetic_bars(days=20)
    dates = sorted(bars["date"].unique())
    with pytest.raises(DataError, match=r"split 'test'.*fewer than 2 trading days"):
        prepare_market(bars, splits={"train": (dates[0], dates[10]), "test": (dates[11], dates[11])}, indicators=())
    with pytest.raises(DataError, match="fewer than 2 trading days"):
        prepare_market(bars, splits={"train": ("2030-01-01", "2030-12-31")}, indicators=())
    with pytest.raises(DataError, match="overlap"):
        prepare_market(bars, splits={"train": (dates[0], dates[10]), "test": (dates[10], dates[-1])}, indicators=())
    with pytest.raises(DataError, match="'train'"):
        prepare_market(bars, splits={"valid": (dates[0], dates[10]), "test": (dates[11], dates[-1])}, indicators=())
    with pytest.raises(DataError, match="unknown or failing stockstats indicator"):
        prepare_market(bars, indicators=("no_such_indicator_xyz",))
    with pytest.raises(DataError, match="too few"):
        prepare_market(synthetic_bars(days=5), indicators=())
    with pytest.raises(DataError, match="unknown data source 'nosuchsource'"):
        load_market("nosuchsource")
    with pytest.raises(DataError, match="unknown sample 'nope'"):
        load_market(sample="nope")
    with pytest.raises(DataError, match="unknown sample 'nope'"):
        load_sample("nope")


def test_validate_bars_normalises(synthetic_bars):
    bars = synthetic_bars(days=10).rename(columns={"close": " Close "}).sample(frac=1.0, random_state=0)
    clean = validate_bars(bars)
    assert "close" in clean.columns
    assert clean["date"].dtype == "datetime64[ns]"
    assert clean.equals(clean.sort_values(["date", "tic"], ignore_index=True))
    assert clean["close"].dtype == np.float64


# --- MarketData -----------------------------------------------------------------------------------

def test_market_to_dtype(sse15):
    market = sse15.train.to(dtype=torch.float32)
    for name in _ARRAY_FIELDS:
        before, after = getattr(sse15.train, name), getattr(market, name)
        assert after.shape == before.shape, name
        assert after.dtype == (torch.bool if name in ("tradable", "is_st") else torch.float32), name
    assert sse15.train.close.dtype == torch.float64  # the original is untouched
    assert market.num_days == sse15.train.num_days and market.tickers == sse15.train.tickers
    assert "float32" in repr(market)


def test_market_slice_between_select(sse15):
    full = sse15.full
    part = full.slice_days(10, 30)
    assert part.num_days == 20 and len(part.dates) == 20
    assert part.dates[0] == full.dates[10]
    assert torch.equal(part.features, full.features[10:30])
    year = full.between("2016-01-01", "2016-12-31")
    assert year.first_date.startswith("2016") and year.last_date.startswith("2016")
    assert year.num_days == int(((full.dates >= np.datetime64("2016-01-01"))
                                 & (full.dates <= np.datetime64("2016-12-31"))).sum())
    for name in _ARRAY_FIELDS:
        assert getattr(year, name).shape[0] == year.num_days == len(year.dates), name
    shard = full.select_stocks([0, 3, 14])
    assert shard.tickers == [full.tickers[i] for i in (0, 3, 14)]
    assert shard.num_stocks == 3 and shard.num_features == full.num_features
    for name in _ARRAY_FIELDS:
        assert getattr(shard, name).shape[:2] == (full.num_days, 3), name
    assert torch.equal(shard.close[:, 1], full.close[:, 3])
    with pytest.raises(ValueError):
        full.slice_days(5, 5)
    with pytest.raises(ValueError):
        full.slice_days(0, full.num_days + 1)
    with pytest.raises(ValueError, match="fewer than 2 trading days"):
        full.between("2030-01-01", "2030-12-31")


# --- dividends, listings and the first bar ---------------------------------------------------------

def _with_pre_close(bars):
    bars = bars.copy()
    bars["pre_close"] = bars.groupby("tic")["close"].shift(1)
    return bars


def test_pre_close_marks_a_cash_dividend(synthetic_bars):
    """A ¥0.30 dividend inside the limit: only the provider's pre_close reveals it; it is paid as cash."""
    bars = _with_pre_close(synthetic_bars(days=30, seed=4))
    rows = bars.index[bars["tic"] == "600000.SH"]
    ex = rows[12]
    prev_close = float(bars.loc[rows[11], "close"])
    bars.loc[ex, "pre_close"] = round(prev_close - 0.30, 2)
    market = prepare_market(bars, indicators=()).full
    date = str(pd.Timestamp(bars.loc[ex, "date"]).date())
    assert market.info["corporate_actions"] == [
        {"tic": "600000.SH", "date": date, "ratio": 1.0, "dividend": pytest.approx(0.30, abs=1e-9), "how": "split"}]
    day, col = _day(market, date), _col(market, "600000.SH")
    assert float(market.split_ratio[day, col]) == 1.0
    assert float(market.dividend[day, col]) == pytest.approx(0.30, abs=1e-9)
    assert int((market.dividend > 0).sum()) == 1


def test_announced_dividend_columns_are_exact(synthetic_bars):
    """10送3派5 announced on the ex-day row: ratio 1.3, ¥0.50 cash, reference (prev − 0.5) / 1.3."""
    bars = synthetic_bars(days=30, seed=5)
    rows = bars.index[bars["tic"] == "600000.SH"]
    ex = rows[10]
    for column in ("open", "high", "low", "close"):
        bars.loc[rows[10:], column] = np.round(bars.loc[rows[10:], column] / 1.3, 2)
    bars["cash_dividend"] = np.nan
    bars["bonus_shares"] = np.nan
    bars.loc[ex, ["cash_dividend", "bonus_shares"]] = [0.5, 0.3]
    market = prepare_market(bars, indicators=()).full
    assert "cash_dividend" not in market.feature_names and "bonus_shares" not in market.feature_names
    date = str(pd.Timestamp(bars.loc[ex, "date"]).date())
    day, col = _day(market, date), _col(market, "600000.SH")
    prev = float(bars.loc[rows[9], "close"])
    assert float(market.split_ratio[day, col]) == pytest.approx(1.3)
    assert float(market.dividend[day, col]) == pytest.approx(0.5)
    assert float(market.pre_close[day, col]) == pytest.approx(np.floor((prev - 0.5) / 1.3 * 100 + 0.5) / 100)
    (action,) = market.info["corporate_actions"]
    assert (action["how"], action["ratio"], action["dividend"]) == ("announced", 1.3, 0.5)


def test_new_star_listing_days_two_to_five_have_no_limit(synthetic_bars):
    """A STAR IPO rising 35 % on day 2: no corporate action, no limit until day 6."""
    bars = synthetic_bars(tickers=("688001.SH", "600000.SH", "600036.SH", "601398.SH"), days=20, seed=6)
    rows = bars.index[bars["tic"] == "688001.SH"]
    for column in ("open", "high", "low", "close"):
        bars.loc[rows[1:], column] = np.round(bars.loc[rows[1:], column] * 1.35, 2)
    listing = pd.DataFrame({"tic": ["688001.SH"], "list_date": [bars.loc[rows[0], "date"]]})
    market = prepare_market(bars, indicators=(), listings=listing).full
    col = _col(market, "688001.SH")
    assert market.info["corporate_actions"] == []
    assert float(market.split_ratio[:, col].prod()) == 1.0
    assert torch.isinf(market.up_limit[:5, col]).all() and (market.down_limit[:5, col] == 0).all()
    assert torch.isfinite(market.up_limit[5:, col]).all()
    assert float(market.up_limit[5, col]) == pytest.approx(
        np.floor(float(market.close[4, col]) * 1.2 * 100 + 0.5) / 100)
    # without the listing date a rise beyond the limit is still no corporate action (actions lower prices)
    unlisted = prepare_market(bars, indicators=()).full
    assert unlisted.info["corporate_actions"] == []


def test_first_bar_keeps_a_provider_pre_close(synthetic_bars):
    bars = _with_pre_close(synthetic_bars(days=20, seed=7))
    first = bars.index[(bars["tic"] == "600000.SH")][0]
    bars.loc[first, "pre_close"] = 10.00
    market = prepare_market(bars, indicators=()).full
    col = _col(market, "600000.SH")
    assert float(market.up_limit[0, col]) == pytest.approx(11.00)
    assert float(market.down_limit[0, col]) == pytest.approx(9.00)
    other = _col(market, "600036.SH")  # no pre_close on its first bar: no limit that day
    assert torch.isinf(market.up_limit[0, other])
    # an IPO day seen without its listing date (pre_close = the issue price): its own range stays legal
    bars.loc[first, ["open", "high", "low", "close"]] = [12.00, 14.40, 11.80, 14.40]
    market = prepare_market(bars, indicators=()).full
    assert float(market.up_limit[0, col]) == pytest.approx(14.40) and float(market.down_limit[0, col]) == 9.00


def test_volume_reaches_the_market(sse15, sse15_bars):
    full = sse15.full
    row = sse15_bars[(sse15_bars["tic"] == "600000.SH") & (sse15_bars["date"] == "2015-01-05")]
    assert float(full.volume[0, _col(full, "600000.SH")]) == float(row["volume"].iloc[0])
    assert (full.volume[~full.tradable] == 0).all() and (full.volume[full.tradable] > 0).all()
    # the sample has no pre_close: small dividends are invisible; the cash part of a detected
    # ex-day is the only dividend
    paid = {(str(full.dates[d]), full.tickers[c]) for d, c in torch.nonzero(full.dividend > 0).tolist()}
    assert paid <= {(a["date"], a["tic"]) for a in full.info["detected_actions"]}
