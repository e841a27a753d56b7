"""Tests for finrl_tutorial.metrics and finrl_tutorial.plots.

Ratios are checked against empyrical-reloaded (the maintained fork of Quantopian's
empyrical) on seeded random return series, and against hand-computed tiny curves.
"""

from __future__ import annotations

import inspect
import json
import math

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from matplotlib.figure import Figure

from finrl_tutorial import metrics as M
from finrl_tutorial import plots as P
from finrl_tutorial.training import LOG_COLUMNS

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def wealth_from_returns(r: np.ndarray, start: float = 1e6) -> pd.Series:
    """Wealth curve of len(r)+1 points: start, start*(1+r1), ..."""
    idx = pd.bdate_range("2020-01-02", periods=len(r) + 1)
    return pd.Series(start * np.concatenate([[1.0], np.cumprod(1.0 + np.asarray(r))]), index=idx)


# --------------------------------------------------------------------------- empyrical

try:  # reference implementation; only the comparison tests need it
    import empyrical
except ImportError:  # pragma: no cover
    empyrical = None

needs_empyrical = pytest.mark.skipif(empyrical is None, reason="empyrical-reloaded not installed")

CASES = [
    # (seed, n days, daily mean, daily std)
    (0, 252, 0.0005, 0.012),
    (1, 600, -0.0003, 0.020),
    (2, 40, 0.0020, 0.005),
    (3, 1000, 0.0001, 0.030),
]


@pytest.fixture(params=CASES, ids=lambda c: f"seed{c[0]}-n{c[1]}")
def case(request):
    seed, n, mu, sd = request.param
    r = np.random.default_rng(seed).normal(mu, sd, n)
    w = wealth_from_returns(r)
    return pd.Series(r, index=w.index[1:]), w


def test_daily_returns_recover_input(case):
    r, w = case
    got = M.daily_returns(w)
    assert got.index.equals(r.index)
    np.testing.assert_allclose(got.to_numpy(), r.to_numpy(), rtol=1e-9, atol=1e-12)


@needs_empyrical
@pytest.mark.parametrize(
    "ours, theirs",
    [
        (M.cumulative_return, "cum_returns_final"),
        (M.annual_return, "annual_return"),
        (M.annual_volatility, "annual_volatility"),
        (M.sharpe_ratio, "sharpe_ratio"),
        (M.sortino_ratio, "sortino_ratio"),
        (M.max_drawdown, "max_drawdown"),
        (M.calmar_ratio, "calmar_ratio"),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_matches_empyrical(case, ours, theirs):
    r, w = case
    expected = getattr(empyrical, theirs)(r)
    got = ours(w)
    assert isinstance(got, float)
    assert got == pytest.approx(float(expected), rel=1e-8, abs=1e-12)


@needs_empyrical
@pytest.mark.parametrize("rf", [0.02, 0.05])
def test_sharpe_sortino_rates_match_empyrical(case, rf):
    r, w = case
    per_day = (1 + rf) ** (1 / 252) - 1
    assert M.sharpe_ratio(w, risk_free=rf) == pytest.approx(
        empyrical.sharpe_ratio(r, risk_free=per_day), rel=1e-8
    )
    assert M.sortino_ratio(w, required_return=rf) == pytest.approx(
        empyrical.sortino_ratio(r, required_return=per_day), rel=1e-8
    )


@needs_empyrical
def test_drawdown_series_matches_empyrical(case):
    r, w = case
    got = M.drawdown_series(w)
    assert got.index.equals(w.index)
    assert got.iloc[0] == 0.0
    np.testing.assert_allclose(
        got.iloc[1:].to_numpy(), np.asarray(empyrical.stats.drawdown_series(r)), atol=1e-12
    )


# --------------------------------------------------------------------------- by hand

TINY = pd.Series([100.0, 110.0, 99.0, 121.0], index=pd.bdate_range("2024-01-02", periods=4))


def test_tiny_curve_by_hand():
    r = np.array([0.1, -0.1, 121 / 99 - 1])
    np.testing.assert_allclose(M.daily_returns(TINY).to_numpy(), r)
    assert M.cumulative_return(TINY) == pytest.approx(0.21)
    assert M.max_drawdown(TINY) == pytest.approx(-0.1)
    np.testing.assert_allclose(M.drawdown_series(TINY).to_numpy(), [0, 0, -0.1, 0], atol=1e-15)
    assert M.annual_return(TINY) == pytest.approx(1.21 ** (252 / 3) - 1)
    sd = np.std(r, ddof=1)
    assert M.annual_volatility(TINY) == pytest.approx(sd * math.sqrt(252))
    assert M.sharpe_ratio(TINY) == pytest.approx(r.mean() / sd * math.sqrt(252))
    downside = math.sqrt(0.1**2 / 3) * math.sqrt(252)
    assert M.sortino_ratio(TINY) == pytest.approx(r.mean() * 252 / downside)
    assert M.calmar_ratio(TINY) == pytest.approx((1.21 ** (252 / 3) - 1) / 0.1)


def test_halving_is_minus_half():
    w = pd.Series([1.0, 2.0, 1.0, 1.5])
    assert M.max_drawdown(w) == pytest.approx(-0.5)
    assert M.cumulative_return(w) == pytest.approx(0.5)


def test_one_year_of_days_gives_cagr_equal_to_total_return():
    r = np.full(252, 0.0)
    r[10] = 0.10
    w = wealth_from_returns(r)
    assert M.annual_return(w) == pytest.approx(0.10)


def test_turnover_is_traded_value_over_previous_wealth():
    w = pd.Series([100.0, 200.0, 50.0, 100.0], index=list("abcd"))
    traded = pd.Series([10.0, 20.0, 0.0, 5.0], index=list("abcd"))
    # a: 10/100 (start capital), b: 20/100, c: 0/200, d: 5/50
    assert M.average_daily_turnover(traded, w) == pytest.approx(np.mean([0.1, 0.2, 0.0, 0.1]))
    # a subset of dates: mean over the given days only
    assert M.average_daily_turnover(traded[["b", "d"]], w) == pytest.approx(0.15)
    with pytest.raises(ValueError, match="not in wealth"):
        M.average_daily_turnover(pd.Series([1.0], index=["z"]), w)
    with pytest.raises(ValueError, match=">= 0"):
        M.average_daily_turnover(pd.Series([-1.0], index=["a"]), w)


# --------------------------------------------------------------------------- undefined cases


def test_constant_wealth_is_all_zero_not_nan():
    w = pd.Series([5.0] * 10)
    s = M.performance_summary(w)
    for key in ("cumulative_return", "annual_return", "annual_volatility", "sharpe_ratio",
                "sortino_ratio", "max_drawdown", "calmar_ratio"):
        assert s[key] == 0.0, key
    assert s["final_wealth"] == 5.0 and s["days"] == 9


def test_constant_growth_has_zero_vol_and_no_drawdown():
    """Float rounding makes the returns differ by ~1e-17; that is not volatility."""
    w = pd.Series(100.0 * 1.001 ** np.arange(300))
    assert np.std(M.daily_returns(w).to_numpy(), ddof=1) > 0  # the residue exists
    assert M.annual_volatility(w) == 0.0
    assert M.sharpe_ratio(w) == 0.0
    assert M.sortino_ratio(w) == 0.0  # no down day
    assert M.max_drawdown(w) == 0.0
    assert M.calmar_ratio(w) == 0.0
    assert M.annual_return(w) == pytest.approx(1.001**252 - 1)


def test_no_down_day_sortino_is_zero_but_sharpe_defined():
    w = pd.Series([1.0, 1.01, 1.03, 1.04, 1.10])
    assert M.sortino_ratio(w) == 0.0
    assert M.sharpe_ratio(w) > 0
    assert M.calmar_ratio(w) == 0.0


def test_two_points_single_return_day():
    w = pd.Series([100.0, 90.0])
    assert M.annual_volatility(w) == 0.0
    assert M.sharpe_ratio(w) == 0.0
    assert M.sortino_ratio(w) == 0.0
    assert M.max_drawdown(w) == pytest.approx(-0.1)
    assert M.cumulative_return(w) == pytest.approx(-0.1)


@needs_empyrical
def test_ratios_from_empyrical_are_nan_or_inf_where_ours_are_zero():
    """Documents where we deliberately differ from empyrical."""
    flat = pd.Series([0.0] * 5)
    up = pd.Series([0.01, 0.02, 0.01])
    assert math.isnan(empyrical.sharpe_ratio(flat))
    assert math.isnan(empyrical.calmar_ratio(up))
    assert math.isinf(empyrical.sortino_ratio(up))
    w_flat, w_up = wealth_from_returns(flat), wealth_from_returns(up)
    assert M.sharpe_ratio(w_flat) == M.calmar_ratio(w_up) == M.sortino_ratio(w_up) == 0.0


# --------------------------------------------------------------------------- input errors


@pytest.mark.parametrize(
    "bad, msg",
    [
        (pd.Series([], dtype=float), "at least 2"),
        (pd.Series([100.0]), "at least 2"),
        (pd.Series([100.0, np.nan, 101.0]), "NaN"),
        (pd.Series([100.0, 0.0, 101.0]), "positive"),
        (pd.Series([100.0, -5.0]), "positive"),
        (pd.Series([100.0, np.inf]), "infinite"),
        (pd.Series(["a", "b"]), "numeric"),
    ],
)
@pytest.mark.parametrize(
    "fn",
    [M.daily_returns, M.cumulative_return, M.annual_return, M.annual_volatility,
     M.sharpe_ratio, M.sortino_ratio, M.max_drawdown, M.calmar_ratio, M.drawdown_series,
     M.performance_summary],
    ids=lambda f: f.__name__,
)
def test_bad_wealth_raises(fn, bad, msg):
    with pytest.raises(ValueError, match=msg):
        fn(bad)


def test_bad_rate_raises():
    with pytest.raises(ValueError):
        M.sharpe_ratio(TINY, risk_free=-1.0)


# --------------------------------------------------------------------------- summary


def test_summary_keys_types_and_json():
    r = np.random.default_rng(7).normal(0.0004, 0.01, 300)
    w = wealth_from_returns(r)
    traded = pd.Series(0.1 * w.to_numpy(), index=w.index)
    fees = pd.Series(3.0, index=w.index)
    s = M.performance_summary(w, traded_value=traded, fees=fees)
    assert list(s) == [
        "cumulative_return", "annual_return", "annual_volatility", "sharpe_ratio",
        "sortino_ratio", "max_drawdown", "calmar_ratio", "turnover", "total_fees",
        "final_wealth", "days",
    ]
    assert tuple(s) == M.SUMMARY_KEYS
    for k, v in s.items():
        assert type(v) is (int if k == "days" else float), (k, type(v))
        assert math.isfinite(v), k
    assert s["days"] == 300
    assert s["final_wealth"] == pytest.approx(w.iloc[-1])
    assert s["total_fees"] == pytest.approx(3.0 * 301)
    assert s["sharpe_ratio"] == pytest.approx(M.sharpe_ratio(w))
    # turnover: day 0 is 0.1 * W0 / W0, later 0.1 * W_t / W_{t-1} = 0.1 * (1 + r_t)
    assert s["turnover"] == pytest.approx(np.mean(np.concatenate([[0.1], 0.1 * (1 + r)])))
    back = json.loads(json.dumps(s, allow_nan=False))
    assert back == s


def test_summary_defaults_and_scalar_fees():
    s = M.performance_summary(TINY)
    assert s["turnover"] == 0.0 and s["total_fees"] == 0.0
    assert M.performance_summary(TINY, fees=12.5)["total_fees"] == 12.5
    json.dumps(M.performance_summary(pd.Series([1.0, 1.0])), allow_nan=False)


def test_inputs_not_mutated_and_plain_lists_accepted():
    w = TINY.copy()
    M.performance_summary(w)
    pd.testing.assert_series_equal(w, TINY)
    assert M.max_drawdown([100, 110, 99, 121]) == pytest.approx(-0.1)


# --------------------------------------------------------------------------- properties

# Returns on a 1-basis-point grid in [-50 %, +50 %]: equal returns are exactly equal
# (up to float noise), distinct ones differ by >= 1e-4, so "zero volatility" is never
# a knife-edge decision that a rescaling could flip.
returns_lists = st.lists(
    st.integers(min_value=-5000, max_value=5000).map(lambda bp: bp / 10_000),
    min_size=1,
    max_size=300,
)


@settings(max_examples=200, deadline=None)
@given(returns_lists)
def test_max_drawdown_in_range(r):
    w = wealth_from_returns(np.array(r), start=1.0)
    mdd = M.max_drawdown(w)
    assert -1.0 <= mdd <= 0.0
    dd = M.drawdown_series(w)
    assert (dd <= 0).all() and (dd >= -1).all()
    assert mdd == dd.min()


@settings(max_examples=200, deadline=None)
@given(returns_lists, st.sampled_from([1e-3, 0.37, 7.0, 1e6]))
def test_scaling_wealth_leaves_statistics_unchanged(r, c):
    w = wealth_from_returns(np.array(r), start=100.0)
    a, b = M.performance_summary(w), M.performance_summary(w * c)
    for key in M.SUMMARY_KEYS:
        if key in ("final_wealth", "total_fees", "turnover", "days"):
            continue
        assert math.isfinite(b[key]), key
        assert b[key] == pytest.approx(a[key], rel=1e-6, abs=1e-9), key
    assert b["final_wealth"] == pytest.approx(c * a["final_wealth"])
    assert b["days"] == a["days"] == len(r)


# --------------------------------------------------------------------------- plots


def _assert_png(path, tmp_path):
    assert path.exists() and path.stat().st_size > 0
    assert path.read_bytes()[:8] == PNG_MAGIC
    leftovers = [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    assert leftovers == []


def test_plot_equity(tmp_path):
    rng = np.random.default_rng(0)
    curves = {
        "agent": wealth_from_returns(rng.normal(0.001, 0.01, 200)),
        "benchmark": wealth_from_returns(rng.normal(0.0, 0.01, 200), start=3e5),
    }
    out = tmp_path / "equity.png"
    fig = P.plot_equity(curves, path=out, title="test")
    assert isinstance(fig, Figure) and len(fig.axes) == 2
    _assert_png(out, tmp_path)
    # normalised: every top-axis line starts at 1.0
    for line in fig.axes[0].get_lines()[:2]:
        assert line.get_ydata()[0] == pytest.approx(1.0)
    with pytest.raises(ValueError):
        P.plot_equity({})
    ax_dd = fig.axes[-1]  # the drawdowns: a line per curve, one filled area (the agent's), not overlapping fills
    assert len(ax_dd.get_lines()) == 2 and len(ax_dd.collections) == 1


def test_plot_learning_curve(tmp_path):
    log = pd.DataFrame(
        {
            "env_steps": np.arange(0, 10_000, 500),
            "train/final_wealth": np.linspace(0.9, 1.1, 20),
            "valid/sharpe_ratio": [np.nan if i % 4 else 0.1 * i for i in range(20)],
        }
    )
    out = tmp_path / "learning.png"
    fig = P.plot_learning_curve(log, path=out)  # the defaults: the log has two of their three columns
    assert len(fig.axes) == 2
    assert len(fig.axes[1].get_lines()[0].get_xdata()) == 5  # NaN rows dropped
    _assert_png(out, tmp_path)
    # a missing column is skipped
    fig = P.plot_learning_curve(log, y=("train/final_wealth", "valid/missing"))
    assert len(fig.axes) == 1
    with pytest.raises(ValueError, match="none of the columns"):
        P.plot_learning_curve(log, y="nope")


def test_plot_learning_curve_defaults_are_columns_of_the_training_log():
    parameters = inspect.signature(P.plot_learning_curve).parameters
    assert parameters["x"].default in LOG_COLUMNS
    assert set(parameters["y"].default) <= set(LOG_COLUMNS)
    log = pd.DataFrame({column: np.arange(4.0) for column in LOG_COLUMNS})  # a log.csv as the trainer writes it
    assert len(P.plot_learning_curve(log).axes) == len(parameters["y"].default)


def test_plot_band(tmp_path):
    rng = np.random.default_rng(1)
    steps = np.arange(0, 1000, 100)
    curves = {
        "ppo": pd.DataFrame(rng.normal(size=(10, 3)).cumsum(0), index=steps, columns=[0, 1, 2]),
        "a2c": pd.DataFrame(rng.normal(size=(10, 1)), index=steps, columns=[0]),
    }
    out = tmp_path / "band.png"
    fig = P.plot_band(curves, x="env_steps", path=out, ylabel="return")
    line = fig.axes[0].get_lines()[0]
    np.testing.assert_allclose(line.get_ydata(), curves["ppo"].mean(axis=1).to_numpy())
    _assert_png(out, tmp_path)


def test_plot_bars(tmp_path):
    out = tmp_path / "sub" / "bars.png"  # parent directory is created
    fig = P.plot_bars({"cpu x1": 1.2e3, "cpu x16": 1.5e4, "gpu x4096": 2.0e6}, path=out,
                      ylabel="steps/s", log=True)
    assert fig.axes[0].get_yscale() == "log"
    _assert_png(out, out.parent)
    with pytest.raises(ValueError):
        P.plot_bars({"a": 0.0}, log=True)


def test_save_overwrites_existing_file_atomically(tmp_path):
    out = tmp_path / "bars.png"
    out.write_bytes(b"old")
    P.plot_bars({"a": 1.0, "b": 2.0}, path=out)
    _assert_png(out, tmp_path)
