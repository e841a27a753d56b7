"""Market fidelity, one table row per case, through the public API (`prepare_market`, the envs,
`rules`), with the single, batched and vmap envs agreeing wherever an env is involved."""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
import torch

from finrl_tutorial import rules
from finrl_tutorial.data import DataError, clean, prepare_market
from finrl_tutorial.envs import EnvConfig, StockTradingEnv, VecStockTradingEnv, VmapStockTradingEnv


def _bars(tickers=("600000.SH", "600036.SH", "601398.SH"), dates=None, seed=0, base=10.0):
    """Random walks inside the ±5 % band on exchange trading days (XSHG) of 2019."""
    dates = rules.exchange_sessions("2019-03-01", "2019-05-31") if dates is None else pd.DatetimeIndex(dates)
    rng = np.random.default_rng(seed)
    frames = []
    for j, tic in enumerate(tickers):
        close = np.round(base * (1 + j) * np.cumprod(1 + rng.uniform(-0.02, 0.02, len(dates))), 2)
        open_ = np.round(close * (1 + rng.uniform(-0.005, 0.005, len(dates))), 2)
        frames.append(pd.DataFrame({"date": dates, "tic": tic, "open": open_, "high": np.maximum(open_, close) + 0.02,
                                    "low": np.minimum(open_, close) - 0.02, "close": close, "volume": 1e7}))
    return pd.concat(frames, ignore_index=True)


def _quiet_prepare(bars, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return prepare_market(bars, indicators=(), **kwargs)


def _run_all_envs(market, actions, config, start_day=0):
    """The same actions in the single, batched (2 identical accounts) and vmap envs: per step the
    holdings, cash and traded value of each, which must agree."""
    single = StockTradingEnv(market, config)
    single.reset(options={"start_day": start_day})
    batched = [cls(market, 2, config, dtype=torch.float64) for cls in (VecStockTradingEnv, VmapStockTradingEnv)]
    for env in batched:
        env.reset(options={"start_day": start_day})
    history = []
    for action in actions:
        _, _, _, _, info = single.step(np.asarray(action, dtype=np.float64))
        row = [(single.account.holdings.numpy().copy(), float(single.account.cash), info["traded_value"])]
        for env in batched:
            _, _, _, _, binfo = env.step(torch.tensor([action, action], dtype=torch.float64))
            for k in range(2):
                row.append((env.account.holdings[k].numpy().copy(), float(env.account.cash[k]),
                            float(binfo["traded_value"][k])))
        for holdings, cash, traded in row[1:]:
            np.testing.assert_array_equal(holdings, row[0][0])
            assert cash == pytest.approx(row[0][1], abs=1e-6) and traded == pytest.approx(row[0][2], abs=1e-6)
        history.append(row[0])
    return history


# --- codes and boards ------------------------------------------------------------------------------

@pytest.mark.parametrize("code, board", [
    ("688001", "star"), ("688001.SH", "star"), ("689009", "star"), ("300750", "chinext"), ("301001", "chinext"),
    ("302132", "chinext"), ("830799", "bse"), ("430047", "bse"), ("920002", "bse"), ("600000", "main"),
    ("605499", "main"), ("000001", "main"), ("002594", "main"), ("003816.SZ", "main"),
])
def test_board_with_or_without_suffix(code, board):
    assert rules.board_of(code) == board
    assert rules.not_an_a_share(code) is None


@pytest.mark.parametrize("code, kind", [
    ("200002.SZ", "B-share"), ("900901.SH", "B-share"), ("510300.SH", "fund"),
    ("159915.SZ", "fund"), ("000300.SH", "index"), ("399001.SZ", "index"), ("00700.HK", "Hong Kong"),
    ("AAPL", "foreign"), ("113050.SH", "bond"),
])
def test_non_a_share_codes_are_refused_by_name(code, kind):
    bars = _bars(tickers=("600000.SH", code))
    with pytest.raises(DataError, match=kind) as error:
        _quiet_prepare(bars)
    assert code in str(error.value)


# --- ticks and odd lots ----------------------------------------------------------------------------

def test_fills_off_the_tick_by_default_in_every_env():
    bars = _bars(seed=1)
    market = _quiet_prepare(bars).full
    config = EnvConfig(episode_days=None, action_mode="shares", max_lots=1, slippage=0.0005)
    history = _run_all_envs(market, [[1.0, 0.0, 0.0], [-1.0, 0.0, 0.0]], config, start_day=3)
    assert history[0][2] == pytest.approx(100 * float(market.open[4, 0]) * 1.0005, rel=1e-9)
    assert history[1][2] == pytest.approx(100 * float(market.open[5, 0]) * 0.9995, rel=1e-9)


def test_fills_on_the_tick_against_the_trader_in_every_env():
    bars = _bars(seed=1)
    market = _quiet_prepare(bars).full
    config = EnvConfig(episode_days=None, action_mode="shares", max_lots=1, slippage=0.0005, fill_on_tick=True)
    history = _run_all_envs(market, [[1.0, 0.0, 0.0], [-1.0, 0.0, 0.0]], config, start_day=3)
    open_buy, open_sell = float(market.open[4, 0]), float(market.open[5, 0])
    buy = np.ceil(open_buy * 1.0005 * 100 - 1e-6) / 100
    sell = np.floor(open_sell * 0.9995 * 100 + 1e-6) / 100
    assert history[0][2] == pytest.approx(100 * buy, abs=1e-9)
    assert history[1][2] == pytest.approx(100 * sell, abs=1e-9)
    assert round(buy * 100) == pytest.approx(buy * 100, abs=1e-9) and buy > open_buy * 1.0005 - 1e-12


@pytest.mark.parametrize("held_after_bonus, sell, sold", [(150, 50, 50), (150, 100, 100), (150, 120, 100),
                                                            (150, 150, 150), (150, 40, 0)])
def test_an_odd_remainder_sells_on_its_own(held_after_bonus, sell, sold):
    """100 shares bought, a 10送5 bonus (provider column) makes them 150; then ask to sell."""
    bars = _bars(seed=2)
    ex_day = bars["date"].drop_duplicates().iloc[6]
    bars["bonus_shares"] = np.where((bars["tic"] == "600000.SH") & (bars["date"] == ex_day), 0.5, 0.0)
    after = (bars["tic"] == "600000.SH") & (bars["date"] >= ex_day)
    for column in ("open", "high", "low", "close"):
        bars.loc[after, column] = np.round(bars.loc[after, column] / 1.5, 2)
    market = _quiet_prepare(bars).full
    config = EnvConfig(episode_days=None, action_mode="shares", max_lots=2)
    steps = [[0.5, 0, 0]] + [[0, 0, 0]] * 4 + [[-sell / 200, 0, 0]]
    history = _run_all_envs(market, steps, config, start_day=1)
    assert history[-2][0][0] == held_after_bonus
    assert history[-1][0][0] == held_after_bonus - sold


# --- corporate actions detected from bars alone (the embedded sample) ------------------------------

@pytest.mark.parametrize("tic, date, bonus, true_reference", [
    ("600519.SH", "2015-07-17", 0.1, 224.74),   # 10送1派43.74: the exchange's reference is that day's low
    ("600000.SH", "2017-05-25", 0.3, 11.75),    # 10转3派2: (15.47 - 0.20) / 1.3 = 11.746 -> 11.75
])
def test_detected_ex_days_of_the_sample(sse15, tic, date, bonus, true_reference):
    full = sse15.full
    day, col = list(pd.DatetimeIndex(full.dates)).index(pd.Timestamp(date)), full.tickers.index(tic)
    ratio, dividend, reference = (float(full.split_ratio[day, col]), float(full.dividend[day, col]),
                                  float(full.pre_close[day, col]))
    previous, close = float(full.close[day - 1, col]), float(full.close[day, col])
    assert ratio == pytest.approx(1 + bonus)
    assert ratio * reference + dividend == pytest.approx(previous)
    # the holder's ex-day return is the exchange's to within 2 points (it was -9.26 % and -8.6 %)
    holder = (ratio * close + dividend) / previous - 1
    assert holder == pytest.approx(close / true_reference - 1, abs=0.02)
    (evidence,) = [e for e in full.info["detected_actions"] if (e["tic"], e["date"]) == (tic, date)]
    assert evidence["low"] < evidence["limit_down_from_previous_close"]  # impossible without an action
    assert evidence["confidence"] in ("high", "medium", "low")
    if tic == "600000.SH":  # it closed at its real limit-up 12.93 = round(11.75 x 1.1): that pins the reference
        assert evidence["limit_locked_close"] and reference == pytest.approx(true_reference)
        assert float(full.up_limit[day, col]) == pytest.approx(close)


def test_a_hole_in_the_data_is_no_corporate_action():
    """98 exchange days missing from every stock, across which one stock fell 30 %: a warning, no action."""
    dates = rules.exchange_sessions("2019-01-02", "2019-12-31")
    kept = dates[:40].append(dates[138:])
    bars = _bars(dates=kept, seed=3)
    late = (bars["tic"] == "600036.SH") & (bars["date"] >= dates[138])
    for column in ("open", "high", "low", "close"):
        bars.loc[late, column] = np.round(bars.loc[late, column] * 0.7, 2)
    with pytest.warns(UserWarning, match="hole in the data"):
        market = prepare_market(bars, indicators=()).full
    assert market.info["corporate_actions"] == [] and len(market.info["data_holes"]) == 98


# --- a provider's total adjustment, with and without its dividend table ----------------------------

def _ex_day(bonus, cash_share, ex=30, seed=8):
    """600000.SH goes ex on day ``ex`` (``bonus`` shares and a cash dividend of ``cash_share`` of the
    last close, per share): prices from then on follow the exchange's reference, and ``pre_close``
    carries that reference (as tushare's and baostock's bars do)."""
    bars = _bars(seed=seed)
    rows = bars.index[bars["tic"] == "600000.SH"]
    previous = float(bars.loc[rows[ex - 1], "close"])
    cash = round(previous * cash_share, 2)
    reference = float(rules.ex_rights_reference(previous, cash, bonus))
    scale = reference / previous
    for column in ("open", "high", "low", "close"):
        bars.loc[rows[ex:], column] = np.round(bars.loc[rows[ex:], column] * scale, 2)
    bars["pre_close"] = bars.groupby("tic")["close"].shift(1)
    bars.loc[rows[ex], "pre_close"] = reference
    return bars, rows[ex], previous, cash, reference


def _action_of(market, bars, label):
    date = str(pd.Timestamp(bars.loc[label, "date"]).date())
    (action,) = [a for a in market.info["corporate_actions"] if (a["tic"], a["date"]) == ("600000.SH", date)]
    return action


@pytest.mark.parametrize("case, bonus, cash_share, split_ratio", [
    ("10送1.6", 0.16, 0.0, 1.1),         # a bonus off the whole-per-10 grid: 1 share per 10 + cash
    ("10转4.5派1", 0.45, 0.01, 1.4),
    ("派12% (a large cash dividend)", 0.0, 0.12, 1.1),  # beyond 1.1 in total: part of it becomes shares
    ("10送3派1", 0.3, 0.01, 1.3),          # on the grid: the split is right
])
def test_a_total_adjustment_is_split_and_warned_and_the_dividend_table_makes_it_exact(case, bonus, cash_share,
                                                                                        split_ratio):
    bars, label, previous, cash, reference = _ex_day(bonus, cash_share)
    with pytest.warns(UserWarning, match=r"1 ex-day\(s\).*total adjustment.*without the dividend table.*9\.1%"):
        market = prepare_market(bars, indicators=()).full
    action = _action_of(market, bars, label)
    assert action["how"] == "split" and action["ratio"] == pytest.approx(split_ratio)
    assert action["ratio"] * reference + action["dividend"] == pytest.approx(previous, abs=1e-4)  # wealth exact
    # the part of the holding booked on the wrong side, within the stated bound
    wrong = abs(action["ratio"] - (1 + bonus)) * reference / previous
    assert wrong < clean.SPLIT_EXPOSURE_BOUND

    bars["cash_dividend"], bars["bonus_shares"] = 0.0, 0.0
    bars.loc[label, ["cash_dividend", "bonus_shares"]] = [cash, bonus]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        market = prepare_market(bars, indicators=()).full
    assert not [w for w in caught if "total adjustment" in str(w.message) or "disagree" in str(w.message)]
    action = _action_of(market, bars, label)
    assert (action["how"], action["ratio"], action["dividend"]) == ("announced", pytest.approx(1 + bonus),
                                                                     pytest.approx(cash))
    assert market.info["dividend_table_disagreements"] == []


def test_a_dividend_table_that_disagrees_with_the_prices_keeps_its_shares_and_the_prices_wealth():
    """pre_close says 10送3派5 (¥0.50 cash), the table only 10送3: warned; the cash follows the prices."""
    bars, label, previous, cash, reference = _ex_day(0.3, 0.05)
    bars["cash_dividend"], bars["bonus_shares"] = 0.0, 0.0
    bars.loc[label, "bonus_shares"] = 0.3
    with pytest.warns(UserWarning, match="dividend table and the prices' own adjustment.*disagree"):
        market = prepare_market(bars, indicators=()).full
    action = _action_of(market, bars, label)
    assert action["how"] == "announced" and action["ratio"] == pytest.approx(1.3)
    assert action["dividend"] == pytest.approx(previous - 1.3 * reference, abs=1e-4)
    (disagreement,) = market.info["dividend_table_disagreements"]
    assert disagreement["data_reference"] == reference
    assert disagreement["table_reference"] == pytest.approx(previous / 1.3, abs=0.01)


def test_a_missing_pre_close_on_an_announced_ex_day_takes_the_announced_reference():
    bars, label, previous, cash, reference = _ex_day(0.3, 0.01)
    bars.loc[label, "pre_close"] = np.nan
    bars["cash_dividend"], bars["bonus_shares"] = 0.0, 0.0
    bars.loc[label, ["cash_dividend", "bonus_shares"]] = [cash, 0.3]
    market = _quiet_prepare(bars).full
    day, col = list(pd.DatetimeIndex(market.dates)).index(bars.loc[label, "date"]), market.tickers.index("600000.SH")
    assert float(market.pre_close[day, col]) == pytest.approx(reference)
    assert _action_of(market, bars, label)["ratio"] == pytest.approx(1.3)


# --- calendar and listings -------------------------------------------------------------------------

def test_a_saturday_row_is_warned():
    bars = _bars(seed=4)
    saturday = bars[bars["date"] == bars["date"].iloc[0]].copy()
    saturday["date"] = pd.Timestamp("2019-03-02")  # a Saturday
    with pytest.warns(UserWarning, match="not A-share trading days.*2019-03-02"):
        market = prepare_market(pd.concat([saturday, bars], ignore_index=True), indicators=()).full
    assert market.info["off_calendar_dates"] == ["2019-03-02"]


def test_a_stock_first_seen_later_is_a_new_listing():
    """A STAR stock first seen a week after the data starts, +35 % on its second day."""
    bars = _bars(tickers=("600000.SH", "600036.SH", "601398.SH", "688001.SH"), seed=5)
    dates = bars["date"].drop_duplicates().sort_values()
    star = bars["tic"] == "688001.SH"
    bars = bars[~star | (bars["date"] >= dates.iloc[5])].reset_index(drop=True)
    second = (bars["tic"] == "688001.SH") & (bars["date"] > dates.iloc[5])
    for column in ("open", "high", "low", "close"):
        bars.loc[second, column] = np.round(bars.loc[second, column] * 1.35, 2)
    market = _quiet_prepare(bars).full
    col = market.tickers.index("688001.SH")
    assert market.info["listings_inferred"] == {"688001.SH": str(dates.iloc[5].date())}
    assert market.info["corporate_actions"] == []
    assert torch.isinf(market.up_limit[5:10, col]).all() and torch.isfinite(market.up_limit[10:, col]).all()


def test_ipo_days_two_to_five_count_exchange_days_across_a_holiday():
    """A STAR listing on 2020-01-22; the data starts after the Spring Festival closure: 02-03 is
    its third trading day, so 02-03..02-05 are unlimited and 02-06 (day 6) has ±20 %."""
    dates = rules.exchange_sessions("2020-02-03", "2020-03-31")
    bars = _bars(tickers=("600000.SH", "688001.SH"), dates=dates, seed=6)
    listing = pd.DataFrame({"tic": ["688001.SH"], "list_date": ["2020-01-22"]})
    market = _quiet_prepare(bars, listings=listing).full
    col = market.tickers.index("688001.SH")
    assert torch.isinf(market.up_limit[:3, col]).all() and (market.down_limit[:3, col] == 0).all()
    assert torch.isfinite(market.up_limit[3:, col]).all()


# --- ST ----------------------------------------------------------------------------------------------

def test_st_warning_once_and_the_st_column_used():
    bars = _bars(seed=7)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        prepare_market(bars, indicators=(), source="fidelity-no-st")
        prepare_market(bars, indicators=(), source="fidelity-no-st")
    assert sum("no 'is_st' column" in str(w.message) for w in caught) == 1
    bars["is_st"] = (bars["tic"] == "600000.SH").astype(float)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        market = prepare_market(bars, indicators=(), source="fidelity-st").full
    assert not any("is_st" in str(w.message) for w in caught)
    col = market.tickers.index("600000.SH")
    expected = np.floor(float(market.pre_close[5, col]) * 1.05 * 100 + 0.5) / 100
    assert float(market.up_limit[5, col]) == pytest.approx(expected)  # ±5 % for ST before 2026-07-06
    # the ST daily buy cap: at most 500,000 shares a day, in every env
    config = EnvConfig(episode_days=None, action_mode="shares", max_lots=10_000, initial_cash=1e8,
                       max_participation=float("inf"))
    history = _run_all_envs(market, [[1.0, 1.0, 0.0]], config, start_day=3)
    assert history[0][0][0] == rules.ST_DAILY_BUY_CAP and history[0][0][1] == 1_000_000
