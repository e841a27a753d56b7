"""Synthetic markets with a planted edge: reproducible, clean, the requested IC, and an oracle that earns it."""
from dataclasses import replace
from functools import lru_cache

import numpy as np
import pandas as pd
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from finrl_tutorial import rules
from finrl_tutorial.backtest import oracle_capture, oracle_record
from finrl_tutorial.backtest.runner import buy_and_hold_baseline
from finrl_tutorial.data import (SIGNAL_FAMILIES, SyntheticMarket, SyntheticSpec, make_synthetic, prepare_market,
                                 validate_bars)
from finrl_tutorial.data.synthetic import MAX_MOVE, START_DATE
from finrl_tutorial.envs import EnvConfig

# stockstats (a dependency) calls set_index(inplace=True), deprecated in pandas 3.1: not our concern here
pytestmark = pytest.mark.filterwarnings("ignore:The inplace keyword in DataFrame.set_index")

SIGNALS = tuple(f for f in SIGNAL_FAMILIES if f != "none")


@lru_cache(maxsize=None)
def _market(**kwargs) -> SyntheticMarket:
    return make_synthetic(SyntheticSpec(**kwargs))


def _wide(bars: pd.DataFrame, column: str) -> pd.DataFrame:
    return bars.pivot(index="date", columns="tic", values=column)


def _pooled_corr(predictor: pd.DataFrame, target: pd.DataFrame) -> float:
    """corr(predictor at close t, target of day t+1), pooled over stocks and days."""
    x = predictor.to_numpy()[:-1].ravel()
    y = target.to_numpy()[1:].ravel()
    return float(np.corrcoef(x, y)[0, 1])


def _close_to_close(bars: pd.DataFrame) -> pd.DataFrame:
    close = _wide(bars, "close")
    return (close / close.shift(1) - 1.0).fillna(0.0)


def _excess_stats(record, baseline) -> tuple[float, float]:
    """Excess cumulative return over the baseline, and the t statistic of the daily excess returns."""
    excess = record.wealth.pct_change().dropna() - baseline.wealth.pct_change().dropna()
    cumulative = (record.wealth.iloc[-1] / record.wealth.iloc[0]) - (baseline.wealth.iloc[-1] / baseline.wealth.iloc[0])
    return float(cumulative), float(excess.mean() / excess.std(ddof=1) * np.sqrt(len(excess)))


# --- the generator ---------------------------------------------------------------------------------

def test_same_seed_same_market_other_seed_other_market():
    first = make_synthetic(SyntheticSpec(seed=3))
    again = make_synthetic(SyntheticSpec(seed=3))
    pd.testing.assert_frame_equal(first.bars, again.bars)
    pd.testing.assert_frame_equal(first.expected_return, again.expected_return)
    assert torch.equal(first.market.full.features, again.market.full.features)
    other = make_synthetic(SyntheticSpec(seed=4))
    assert not np.allclose(first.bars["close"].to_numpy(), other.bars["close"].to_numpy())


@pytest.mark.parametrize("family", SIGNAL_FAMILIES)
def test_bars_are_clean_a_share_bars(family):
    syn = _market(family=family)
    bars = syn.bars
    spec = syn.spec
    # the own-data schema, unchanged by validation
    expected_columns = ["date", "tic", "open", "high", "low", "close", "volume"]
    if family not in ("momentum", "reversal"):
        expected_columns.append("signal")
    assert list(bars.columns) == expected_columns
    pd.testing.assert_frame_equal(validate_bars(bars)[expected_columns],
                                  bars.astype({"volume": "float64"}), check_dtype=False)
    assert len(bars) == spec.num_stocks * spec.num_days  # no suspensions
    # calendar: weekdays from 2016-01-04
    dates = pd.DatetimeIndex(sorted(bars["date"].unique()))
    assert dates[0] == pd.Timestamp(START_DATE) and (dates.day_of_week < 5).all()
    assert len(dates) == spec.num_days and dates.equals(pd.bdate_range(START_DATE, periods=spec.num_days))
    # main-board codes: the ±10 % limit applies
    tickers = sorted(bars["tic"].unique())
    assert len(tickers) == spec.num_stocks
    assert all(rules.board_of(t) == "main" for t in tickers)
    assert all((rules.limit_rate(t, dates[:1]) == 0.10).all() for t in tickers)
    # prices: ticks, candle consistency, start in ¥5..¥50, moves strictly inside ±9.5 %
    for column in ("open", "high", "low", "close"):
        cents = bars[column].to_numpy() * 100
        assert np.allclose(cents, np.round(cents), atol=1e-6), column
        assert (bars[column] > 0).all()
    assert (bars["high"] >= bars[["open", "close"]].max(axis=1)).all()
    assert (bars["low"] <= bars[["open", "close"]].min(axis=1)).all()
    first_day = bars[bars["date"] == dates[0]]
    assert first_day["open"].between(5 * (1 - MAX_MOVE), 50 * (1 + MAX_MOVE)).all()
    close = _wide(bars, "close")
    previous = close.shift(1)
    for column in ("open", "high", "low", "close"):
        move = (_wide(bars, column) / previous - 1.0).iloc[1:]
        assert (move.abs() < MAX_MOVE + 1e-9).all().all(), column
    # volume: positive whole lots of shares
    assert bars["volume"].dtype.kind == "i" and (bars["volume"] > 0).all() and (bars["volume"] % 100 == 0).all()


@pytest.mark.parametrize("family", SIGNAL_FAMILIES)
def test_cleaning_finds_nothing_to_fix(family):
    syn = _market(family=family)
    market = syn.market
    info = market.full.info
    assert info["corporate_actions"] == []
    assert info["suspended_stock_days"] == 0
    assert bool(market.full.tradable.all())
    assert market.full.source == f"synthetic:{family}"
    assert (market.full.split_ratio == 1.0).all()
    # no price reaches its limit, so every stock can always be bought and sold
    assert (market.full.high < market.full.up_limit).all() and (market.full.low > market.full.down_limit).all()
    has_signal = family not in ("momentum", "reversal")
    assert ("signal" in market.full.feature_names) == has_signal
    assert info["user_factors"] == (["signal"] if has_signal else [])
    # the 60/20/20 splits, and the same market as cleaning the bars by hand
    days = syn.spec.num_days
    assert [market.splits[s].num_days for s in ("train", "valid", "test")] == [
        int(0.6 * days), int(0.8 * days) - int(0.6 * days), days - int(0.8 * days)]
    again = prepare_market(syn.bars)
    assert torch.equal(again.full.features, market.full.features)
    # expected returns on the market's calendar and columns
    assert list(syn.expected_return.columns) == market.full.tickers
    assert syn.expected_return.index.equals(pd.DatetimeIndex(market.full.dates))
    assert np.isfinite(syn.expected_return.to_numpy()).all()


def test_expected_return_uses_observed_values_only():
    """E[r_{t+1} | close t] is the loading times what the bars show at close t: nothing from later days."""
    for family in SIGNAL_FAMILIES:
        syn = _market(family=family)
        loading = syn.spec.loading
        if family in ("momentum", "reversal"):
            predictor = _close_to_close(syn.bars)  # what return_1d shows
        elif family == "cross_section":
            signal = _wide(syn.bars, "signal")
            predictor = signal.sub(signal.mean(axis=1), axis=0) / np.sqrt(1 - 1 / syn.spec.num_stocks)
        else:
            predictor = _wide(syn.bars, "signal")
        np.testing.assert_allclose(syn.expected_return.to_numpy(), loading * predictor.to_numpy(), atol=1e-12)
    # and the agent sees that return: return_1d (normalised) is an affine map of the close-to-close return
    syn = _market(family="momentum")
    feature = syn.market.full.features[1:, :, syn.market.full.feature_names.index("return_1d")].numpy()
    raw = _close_to_close(syn.bars).to_numpy()[1:]
    assert np.corrcoef(feature.ravel(), raw.ravel())[0, 1] > 0.999


@pytest.mark.parametrize("family", ["factor", "momentum", "reversal", "cross_section"])
def test_measured_ic_matches_the_requested_ic(family):
    for ic in (0.05, 0.15):
        syn = _market(family=family, num_stocks=20, num_days=3000, ic=ic, seed=1)
        returns = _close_to_close(syn.bars)
        if family == "factor":
            predictor = _wide(syn.bars, "signal")
        elif family == "cross_section":
            signal = _wide(syn.bars, "signal")
            predictor = signal.sub(signal.mean(axis=1), axis=0)
            # the raw column mixes in a large common part: on its own level it carries little
            assert abs(_pooled_corr(signal, returns)) < 0.5 * ic
        else:
            predictor = returns if family == "momentum" else -returns
        measured = _pooled_corr(predictor, returns)
        assert measured == pytest.approx(ic, abs=0.03), (family, ic, measured)
        assert syn.realised_ic() == pytest.approx(measured, abs=1e-9)


def test_none_market_has_no_ic():
    syn = _market(family="none", num_stocks=20, num_days=3000, seed=1)
    returns = _close_to_close(syn.bars)
    assert abs(_pooled_corr(_wide(syn.bars, "signal"), returns)) < 0.03
    assert abs(_pooled_corr(returns, returns)) < 0.03  # no price pattern either
    assert (syn.expected_return.to_numpy() == 0.0).all()


def test_the_edge_is_intraday_and_the_overnight_gap_is_noise():
    """The env fills at the next open: the predictable part must be in open→close, not close→open."""
    syn = _market(family="factor", num_stocks=20, num_days=3000, ic=0.15, seed=1)
    signal = _wide(syn.bars, "signal")
    close, open_ = _wide(syn.bars, "close"), _wide(syn.bars, "open")
    overnight = open_ / close.shift(1) - 1.0
    intraday = close / open_ - 1.0
    assert abs(_pooled_corr(signal, overnight)) < 0.02
    assert _pooled_corr(signal, intraday) > 0.15  # stronger than ic: the gap's noise is not in this leg


# --- the oracle ------------------------------------------------------------------------------------

def test_oracle_weights_follow_the_rule():
    for family in SIGNAL_FAMILIES:
        syn = _market(family=family)
        weights = syn.oracle_weights("test").numpy()
        test = syn.market.test
        assert weights.shape == (test.num_days - 1, test.num_stocks)
        start = syn.split_offset("test")
        expected = syn.expected_return.to_numpy()[start:start + test.num_days - 1]
        sums = weights.sum(axis=1)
        assert np.allclose(sums[sums > 0], 1.0)
        if family == "cross_section":
            held = weights > 0
            assert (held.sum(axis=1) == test.num_stocks // 2).all()
            worst_held = np.where(held, expected, np.inf).min(axis=1)
            best_left = np.where(held, -np.inf, expected).max(axis=1)
            assert (worst_held >= best_left).all()
        else:
            assert ((weights > 0) == (expected >= 0)).all()
    assert syn.split_offset("train") == 0


def test_oracle_policy_counts_days_and_refuses_extra_calls():
    syn = _market(family="factor")
    policy = syn.oracle("valid")
    obs = torch.zeros(1, 7, dtype=torch.float32)
    first = policy(obs)
    assert first.shape == (1, syn.spec.num_stocks) and first.dtype == torch.float32
    assert torch.allclose(first[0].double(), syn.oracle_weights("valid")[0])
    for _ in range(syn.market.valid.num_days - 2):
        policy(obs)
    with pytest.raises(RuntimeError, match="fresh oracle"):
        policy(obs)
    with pytest.raises(ValueError, match="unknown split"):
        syn.oracle("holdout")


def test_oracle_record_forces_target_weights():
    syn = _market(family="factor")
    default = oracle_record(syn, "test")
    from_shares = oracle_record(syn, "test", EnvConfig(action_mode="shares", max_lots=1))
    pd.testing.assert_series_equal(default.wealth, from_shares.wealth)
    assert default.fees.sum() > 0  # full costs are charged


@pytest.mark.parametrize("family", SIGNALS)
def test_oracle_earns_its_planted_edge(family):
    # the price-only edges flip daily (turnover ~1.2 a day): with fees and slippage they need a stronger signal
    ic = 0.2 if family in ("momentum", "reversal") else 0.15
    excesses = []
    for seed in (0, 1, 2):
        syn = _market(family=family, ic=ic, seed=seed)
        oracle = oracle_record(syn, "test", EnvConfig())
        baseline = buy_and_hold_baseline(syn.market.test, EnvConfig())
        excess, t_stat = _excess_stats(oracle, baseline)
        assert excess > 0.05, (family, seed, excess)
        excesses.append(excess)
    assert np.mean(excesses) > 0.15, (family, excesses)


def test_oracle_has_no_edge_on_the_control_market():
    for seed in (0, 1, 2):
        syn = _market(family="none", ic=0.15, seed=seed)
        oracle = oracle_record(syn, "test")
        baseline = buy_and_hold_baseline(syn.market.test)
        excess, t_stat = _excess_stats(oracle, baseline)
        assert t_stat < 2.0 and excess < 0.03, (seed, excess, t_stat)


def test_oracle_capture():
    syn = _market(family="factor", ic=0.15)
    oracle = oracle_record(syn, "test")
    baseline = buy_and_hold_baseline(syn.market.test)
    assert oracle_capture(oracle, oracle, baseline) == pytest.approx(1.0)
    assert oracle_capture(baseline, oracle, baseline) == pytest.approx(0.0)
    halfway = replace(oracle, wealth=(oracle.wealth + baseline.wealth) / 2)
    assert oracle_capture(halfway, oracle, baseline) == pytest.approx(0.5)
    # no excess to capture: undefined, not a huge or negative ratio
    assert np.isnan(oracle_capture(oracle, baseline, oracle))


# --- the spec ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("change, message", [
    ({"family": "trend"}, "unknown family 'trend'"),
    ({"ic": 0.6}, "ic must be in"),
    ({"ic": -0.1}, "ic must be in"),
    ({"num_stocks": 1}, "num_stocks must be in"),
    ({"num_stocks": 2.5}, "num_stocks must be an integer"),
    ({"num_days": 30}, "too short for the 60/20/20 splits"),
    ({"persistence": 1.0}, r"persistence must be in \[0, 1\)"),
    ({"persistence": -0.2}, r"persistence must be in \[0, 1\)"),
    ({"volatility": 0.0}, "volatility must be in"),
    ({"market_volatility": -0.01}, "market_volatility must be in"),
    ({"drift": 0.5}, "drift must be in"),
    ({"seed": -1}, "seed must be >= 0"),
    ({"overnight_share": 1.5}, "overnight_share must be in"),
    ({"common_signal_scale": -1.0}, "common_signal_scale must be >= 0"),
    ({"ic": float("nan")}, "ic must be finite"),
])
def test_spec_validation(change, message):
    with pytest.raises(ValueError, match=message) as error:
        SyntheticSpec(**change)
    assert "\n" not in str(error.value)


def test_spec_loading():
    spec = SyntheticSpec(family="factor", ic=0.1, volatility=0.02, market_volatility=0.01)
    assert spec.loading == pytest.approx(np.hypot(0.02, 0.01) * 0.1 / np.sqrt(1 - 0.01))
    assert SyntheticSpec(family="momentum", ic=0.2).loading == pytest.approx(0.2)
    assert SyntheticSpec(family="reversal", ic=0.2).loading == pytest.approx(-0.2)
    assert SyntheticSpec(family="none", ic=0.2).loading == 0.0


def test_bars_saved_as_csv_load_as_the_same_market(tmp_path):
    """A user hands the bars to ``train --data``: the CSV round trip gives the same market."""
    from finrl_tutorial.data import load_market

    syn = _market(family="factor")
    path = tmp_path / "synthetic.csv"
    syn.bars.to_csv(path, index=False)
    loaded = load_market(str(path))
    assert loaded.full.tickers == syn.market.full.tickers
    assert loaded.split_dates == syn.market.split_dates
    assert torch.allclose(loaded.full.features, syn.market.full.features, atol=1e-9)
    assert torch.equal(loaded.full.open, syn.market.full.open)


@settings(max_examples=15, deadline=None)
@given(family=st.sampled_from(SIGNAL_FAMILIES), stocks=st.integers(2, 12), days=st.integers(50, 400),
       ic=st.floats(0.0, 0.5), persistence=st.floats(0.0, 0.99), volatility=st.floats(0.001, 0.05),
       market_volatility=st.floats(0.0, 0.05), drift=st.floats(-0.01, 0.01), seed=st.integers(0, 2**32))
def test_any_valid_spec_gives_clean_bars(family, stocks, days, ic, persistence, volatility, market_volatility,
                                         drift, seed):
    spec = SyntheticSpec(family=family, num_stocks=stocks, num_days=days, ic=ic, persistence=persistence,
                         volatility=volatility, market_volatility=market_volatility, drift=drift, seed=seed)
    syn = make_synthetic(spec)
    assert syn.market.full.info["corporate_actions"] == []
    assert bool(syn.market.full.tradable.all())
    close = _wide(syn.bars, "close")
    assert ((close / close.shift(1) - 1.0).iloc[1:].abs() < MAX_MOVE + 1e-9).all().all()
    assert (syn.bars["low"] > 0).all() and np.isfinite(syn.expected_return.to_numpy()).all()
    assert syn.oracle_weights("test").sum(dim=1).le(1.0 + 1e-12).all()
