"""The readings of the reference page "The synthetic markets" (``finrl_tutorial.book.synthetic``):
the model's numbers, measurements of generated markets, the fundamental law and the oracle reruns."""
from __future__ import annotations

import math

import numpy as np
import pytest

import finrl_tutorial as ft
from finrl_tutorial.book import synthetic as sm


def test_half_life_halves_the_signal_and_refuses_a_persistence_outside_0_1():
    for phi in (0.1, 0.5, 0.9, 0.99):
        assert phi ** sm.half_life(phi) == pytest.approx(0.5)
    assert sm.half_life(0.5) == pytest.approx(1.0) and sm.half_life(0.0) == 0.0
    assert sm.half_life(0.9) == pytest.approx(6.5788, abs=1e-4)
    for bad in (-0.1, 1.0, 1.5):
        with pytest.raises(ValueError, match="persistence"):
            sm.half_life(bad)


def test_model_numbers_follow_the_loading_formula_and_the_round_trip():
    numbers = sm.model_numbers(ft.SyntheticSpec(), ics=(0.05, 0.03))
    noise = math.hypot(0.02, 0.01)
    assert numbers["noise"] == pytest.approx(noise)
    for ic in (0.05, 0.03):
        k = numbers["table"].loc[ic, "k: next-day move per 1-σ signal"]
        assert k == pytest.approx(noise * ic / math.sqrt(1 - ic ** 2))
        # the IC the loading gives back: k / sqrt(k² + σ_u²)
        assert k / math.hypot(k, noise) == pytest.approx(ic)
        assert numbers["table"].loc[ic, "move over the signal's life, k / (1 - φ)"] == pytest.approx(10 * k)
        assert numbers["table"].loc[ic, "days of k that pay a round trip"] == pytest.approx(numbers["round_trip"] / k)
    # commission both sides, stamp duty on the sale, transfer fee both sides, 5 bp slippage each way
    assert numbers["round_trip"] == pytest.approx(2 * 0.00025 + 0.001 + 2 * 0.00002 + 2 * 0.0005)
    # a weaker signal takes longer to pay for its costs
    assert numbers["table"]["days of k that pay a round trip"].is_monotonic_increasing


def test_fundamental_law_grows_with_ic_and_breadth_and_is_exact_arithmetic():
    table = sm.fundamental_law_table(ics=(0.02, 0.03, 0.05, 0.10), stocks=(10, 30, 100, 300))
    assert (np.diff(table.to_numpy(), axis=0) > 0).all() and (np.diff(table.to_numpy(), axis=1) > 0).all()
    assert table.loc[0.05, 100] == pytest.approx(0.05 * math.sqrt(252 * 100))
    # four times the stocks, twice the ratio; twice the IC, twice the ratio
    assert sm.fundamental_law_ir(0.05, 120) == pytest.approx(2 * sm.fundamental_law_ir(0.05, 30))
    assert sm.fundamental_law_ir(0.10, 30) == pytest.approx(2 * sm.fundamental_law_ir(0.05, 30))
    with pytest.raises(ValueError):
        sm.fundamental_law_ir(0.05, 0)


def test_ideal_ir_is_the_law_times_the_hedge_of_the_market_move():
    spec = ft.SyntheticSpec(ic=0.05, num_stocks=100)
    factor = spec.noise_volatility / (spec.volatility * math.sqrt(1 - spec.ic ** 2)) * math.sqrt(99 / 100)
    assert sm.ideal_ir(spec) == pytest.approx(sm.fundamental_law_ir(0.05, 100) * factor)
    # without a market move the ideal is the law, but for N - 1 of N bets
    calm = ft.SyntheticSpec(ic=0.05, num_stocks=100, market_volatility=0.0)
    assert sm.ideal_ir(calm) == pytest.approx(sm.fundamental_law_ir(0.05, 100) * math.sqrt(99 / 100) / math.sqrt(1 - 0.05 ** 2))
    with pytest.raises(ValueError, match="factor"):
        sm.ideal_ir(ft.SyntheticSpec(family="momentum"))


@pytest.fixture(scope="module")
def markets():
    return [ft.make_synthetic(ft.SyntheticSpec(ic=0.05, num_stocks=30, num_days=600, seed=seed)) for seed in range(4)]


def test_generated_markets_measure_the_planted_ic_persistence_and_volatility(markets):
    rows = [sm.measure_market(market) for market in markets]
    for row in rows:
        assert abs(row["realised IC"] - 0.05) < 3 * row["IC standard error"]
        assert row["IC standard error"] == pytest.approx(1 / math.sqrt(30 * 599))
        assert abs(row["lag-1 autocorrelation"] - 0.9) < 0.02
        assert abs(row["measured half-life"] - sm.half_life(0.9)) < 1.0
        assert row["daily volatility"] == pytest.approx(row["expected volatility"], rel=0.03)
        assert row["share near the clip"] < 0.001
    # over the seeds the mean realised IC is closer still
    assert abs(np.mean([row["realised IC"] for row in rows]) - 0.05) < 1.5 * rows[0]["IC standard error"]


def test_the_control_market_measures_no_ic_and_momentum_has_no_signal_column():
    none = sm.measure_market(ft.make_synthetic(ft.SyntheticSpec(family="none", ic=0.3, num_stocks=20, num_days=400)))
    assert none["planted IC"] == 0.0 and abs(none["realised IC"]) < 3 * none["IC standard error"]
    momentum = sm.measure_market(ft.make_synthetic(ft.SyntheticSpec(family="momentum", ic=0.2, num_stocks=20, num_days=400)))
    assert math.isnan(momentum["lag-1 autocorrelation"]) and abs(momentum["realised IC"] - 0.2) < 4 * momentum["IC standard error"]


def test_frictionless_long_short_matches_the_ideal_and_beats_the_top_half(markets):
    long_short, top = [], []
    for market in markets:
        irs = sm.frictionless_irs(market)
        long_short.append(irs["long-short"])
        top.append(irs["top half"])
    ideal = sm.ideal_ir(markets[0].spec)
    # four markets of 600 days: each ratio has a standard error of about sqrt(252/600) ≈ 0.65
    assert abs(np.mean(long_short) - ideal) < 1.0
    assert np.mean(top) < np.mean(long_short)
    # a market with no edge: no ratio to speak of
    flat = sm.frictionless_irs(ft.make_synthetic(ft.SyntheticSpec(ic=0.0, num_stocks=30, num_days=600)))
    assert abs(flat["long-short"]) < 2.0


def test_return_facts_see_no_tails_limits_or_suspensions_in_a_generated_market(markets):
    facts = sm.return_facts(markets[0].market.full)
    assert facts["share closed at a limit"] == 0.0 and facts["share suspended"] == 0.0
    assert abs(facts["excess kurtosis"]) < 0.3 and abs(facts["squared-return autocorrelation"]) < 0.05
    real = sm.return_facts(ft.load_market("sample").full)
    assert real["excess kurtosis"] > 1.0 and real["share closed at a limit"] > 0 and real["share suspended"] > 0


def test_free_env_config_has_no_cost_and_keeps_the_rest():
    base = ft.EnvConfig(initial_cash=500_000.0)
    free = sm.free_env_config(base)
    assert free.slippage == 0.0 and free.impact == 0.0 and free.initial_cash == 500_000.0
    rates = free.fees.day_rates(["2019-06-03"], ["600000.SH", "000001.SZ"])
    assert all(float(np.abs(np.asarray(value)).max()) == 0.0 for value in rates.values())
    assert free.fees.commission_rate == 0.0 and free.fees.min_commission == 0.0


def _record(cases):
    return {"cases": cases}


def _case(ic, stocks, seed, excess, rule="simple", days=200):
    return {"family": "factor", "ic": ic, "stocks": stocks, "seed": seed, "days": days, "buy_and_hold_sharpe": 0.1,
            "informed_oracle": {"rule": rule, "test_excess": excess, "test_sharpe": 1.0, "test_turnover": 0.2}}


def test_recorded_oracles_count_each_market_once_and_its_losses():
    record = _record([_case(0.05, 30, 0, 0.2), _case(0.05, 30, 0, 0.2), _case(0.05, 30, 1, -0.1),
                      _case(0.03, 10, 0, 0.05)])
    table = sm.recorded_oracles(record)
    row = table.loc[(0.05, 30)]
    assert row["markets"] == 2 and row["lost"] == 1 and row["test excess (mean)"] == pytest.approx(0.05)
    assert (row["lowest"], row["highest"]) == (-0.1, 0.2)
    assert table.loc[(0.03, 10), "markets"] == 1


def test_oracle_rerun_reproduces_the_rule_and_costs_lower_its_ratio():
    record = _record([_case(0.10, 10, 3, 0.0, rule="top_k(k=3, band=3)", days=250)])
    rerun = sm.oracle_rerun(record, 0.10, 10, seed=3)
    assert rerun["rule"] == "top_k(k=3, band=3)" and rerun["test days"] == 49
    assert rerun["fees, no costs"] == 0.0 and rerun["fees, full costs"] > 0
    assert rerun["test excess, full costs"] < rerun["test excess, no costs"]
    assert rerun["fundamental law"] == pytest.approx(sm.fundamental_law_ir(0.10, 10))
    with pytest.raises(ValueError, match="no market"):
        sm.oracle_rerun(record, 0.05, 10, seed=3)


def test_the_realised_ic_figure_draws_one_point_and_bar_per_market_against_the_planted_line():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    specs = [ft.SyntheticSpec(family="factor", ic=0.05, num_stocks=5, num_days=120, seed=seed) for seed in range(3)]
    measured = sm.measured_markets(specs)
    fig, ax = plt.subplots()
    sm.plot_realised_ic(measured, ax)
    points = [line for line in ax.get_lines() if line.get_marker() == "o"]
    assert len(points) == 1 and np.allclose(points[0].get_ydata(), measured["realised IC"])
    bars = ax.containers[0].lines[2][0].get_segments()  # the error bars: one vertical segment per market
    assert len(bars) == 3
    for (low, high), ic, se in zip(([s[0][1], s[1][1]] for s in bars), measured["realised IC"], measured["IC standard error"]):
        assert low == pytest.approx(ic - 2 * se) and high == pytest.approx(ic + 2 * se)
    planted = [line for line in ax.get_lines() if line.get_label().startswith("planted IC")]
    assert len(planted) == 1 and set(planted[0].get_ydata()) == {0.05}
    assert [t.get_text() for t in ax.get_xticklabels()] == ["0", "1", "2"]
    assert "IC" in ax.get_ylabel() and "seed" in ax.get_xlabel()
    plt.close(fig)
    with pytest.raises(ValueError, match="one planted IC"):
        sm.plot_realised_ic(sm.measured_markets([specs[0], ft.SyntheticSpec(ic=0.10, num_stocks=5, num_days=120)]), ax)
