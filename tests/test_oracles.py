"""The informed oracles: rules that know a synthetic market's expected returns, through the env
with full costs, chosen on validation. They must be a ceiling in practice (each earns at least the
signal rule on a strong market), and the test split must choose nothing."""
from dataclasses import replace
from functools import lru_cache

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from finrl_tutorial.backtest.oracle import (InformedRule, MeanVariancePolicy, TopKPolicy, excess_return,
                                            final_wealth, informed_oracle, informed_record, informed_rules,
                                            oracle_record, top_k_sizes, training_covariance)
from finrl_tutorial.backtest.runner import buy_and_hold_baseline
from finrl_tutorial.data import SyntheticSpec, make_synthetic

pytestmark = pytest.mark.filterwarnings("ignore:The inplace keyword in DataFrame.set_index")


@lru_cache(maxsize=None)
def _strong():
    """A strong, persistent factor edge on 10 stocks (the oracle's test Sharpe is well above 1)."""
    torch.set_num_threads(1)
    synthetic = make_synthetic(SyntheticSpec(family="factor", ic=0.2, num_stocks=10, num_days=500, seed=0))
    return synthetic, informed_oracle(synthetic)


def _rule(name: str, stocks: int) -> InformedRule:
    return next(rule for rule in informed_rules(stocks) if rule.name == name)


def test_each_informed_rule_earns_at_least_the_signal_rule_on_a_strong_market():
    synthetic, chosen = _strong()
    test = synthetic.market.test
    hold = buy_and_hold_baseline(test)
    simple = excess_return(oracle_record(synthetic, "test"), hold)
    assert simple > 0.05  # a market with an excess to capture
    assert set(chosen.best_of_kind) == {"top_k", "mean_variance", "simple"}
    for kind in ("top_k", "mean_variance"):
        rule = _rule(chosen.best_of_kind[kind], 10)  # each kind at its own best parameters on validation
        assert chosen.sharpes[rule.name] >= chosen.sharpes["simple"], kind
        earned = excess_return(informed_record(synthetic, rule, "test"), hold)
        assert earned >= simple, f"{rule.name} earned {earned:.3f} on test, the signal rule {simple:.3f}"
    assert chosen.criterion == "sharpe" and chosen.sharpes[chosen.rule.name] == max(chosen.sharpes.values())
    assert chosen.valid_excess == chosen.scores[chosen.rule.name]


def test_the_informed_oracle_is_chosen_on_validation_only():
    synthetic, chosen = _strong()
    # the same market with the truth turned upside down on the test split (bars and the rest unchanged)
    truth = synthetic.expected_return.copy()
    test_days = truth.index >= synthetic.market.test.dates[0]
    truth.loc[test_days] = -truth.loc[test_days]
    flipped = replace(synthetic, expected_return=truth)
    again = informed_oracle(flipped)
    assert again.rule == chosen.rule and again.scores == chosen.scores and again.sharpes == chosen.sharpes
    # ... although the flip matters on test: a choice that looked at it would have changed
    hold = buy_and_hold_baseline(synthetic.market.test)
    assert (excess_return(informed_record(flipped, chosen.rule, "test"), hold)
            < excess_return(informed_record(synthetic, chosen.rule, "test"), hold) - 0.1)


def test_the_longer_window_chooses_on_training_and_validation_and_never_on_test():
    synthetic, chosen = _strong()
    rules = [_rule("top_k(k=2, band=1)", 10), _rule("top_k(k=5, band=0)", 10), InformedRule("simple")]
    longer = informed_oracle(synthetic, rules=rules, window="train+valid")
    assert longer.window == "train+valid" and chosen.window == "valid"
    # its score is the excess compounded over both splits, each run as its own episode
    for rule in rules:
        grown = [informed_record(synthetic, rule, split).wealth for split in ("train", "valid")]
        held = [buy_and_hold_baseline(synthetic.market.splits[split]).wealth for split in ("train", "valid")]
        expected = (np.prod([w.iloc[-1] / w.iloc[0] for w in grown])
                    - np.prod([w.iloc[-1] / w.iloc[0] for w in held]))
        assert longer.scores[rule.name] == pytest.approx(expected, rel=1e-9)
    truth = synthetic.expected_return.copy()
    truth.loc[truth.index >= synthetic.market.test.dates[0]] *= -1
    again = informed_oracle(replace(synthetic, expected_return=truth), rules=rules, window="train+valid")
    assert again.rule == longer.rule and again.sharpes == longer.sharpes
    with pytest.raises(ValueError, match="selection window"):
        informed_oracle(synthetic, rules=rules, window="test")


def test_the_batched_run_is_the_single_run_of_each_rule():
    synthetic, _ = _strong()
    rules = [_rule("top_k(k=2, band=1)", 10), _rule("mean_variance(risk_aversion=4, turnover_cost=0.001)", 10),
             InformedRule("simple")]
    batched = final_wealth(synthetic, rules, "valid")
    single = [informed_record(synthetic, rule, "valid").wealth.iloc[-1] for rule in rules]
    np.testing.assert_allclose(batched, single, rtol=1e-12)


def test_top_k_sizes_and_the_family():
    assert top_k_sizes(1) == [1] and top_k_sizes(10) == [1, 2, 3, 5, 8, 10]
    assert top_k_sizes(300)[-1] == 300 and len(top_k_sizes(300)) < 16
    names = [rule.name for rule in informed_rules(10)]
    assert len(names) == len(set(names)) and names[-1] == "simple"
    assert all(rule.k + rule.band <= 10 for rule in informed_rules(10) if rule.kind == "top_k")


def test_top_k_trades_only_when_a_rank_leaves_the_band():
    # 4 stocks; stock 0 is first, then slides to 2nd, 3rd (inside a band of 1 beyond k=2), then last
    expected = np.array([[4, 3, 2, 1], [3, 4, 2, 1], [2, 4, 3, 1], [1, 4, 3, 2.0]])
    policy = TopKPolicy(expected, k=2, band=1)
    held = np.zeros(4)
    targets = []
    for _ in range(len(expected)):
        obs = torch.tensor(np.concatenate([[1 - held.sum()], np.stack([held, np.zeros(4)], 1).ravel()]))[None]
        target = policy(obs)[0].numpy()
        targets.append(target)
        held = target * np.array([1.0, 1.1, 0.9, 1.0])  # prices move: the held weights drift
        held /= max(1.0, held.sum())
    np.testing.assert_allclose(targets[0], [0.5, 0.5, 0, 0])  # the top 2, equal weight
    # day 2: stock 0 is 3rd, inside k + band: kept as it is (its drifted weight, no rebalancing)
    assert targets[2][0] > 0 and targets[2][2] == 0
    # day 3: stock 0 is 4th, beyond the band: sold, and the new entrant (3rd best, stock 2) gets its money
    assert targets[3][0] == 0 and targets[3][2] > 0 and targets[3][3] == 0
    assert targets[3].sum() == pytest.approx(1.0)


@settings(max_examples=30, deadline=None)
@given(arrays(np.float64, (6, 5), elements=st.floats(-0.01, 0.01)), st.integers(1, 5), st.integers(0, 4))
def test_top_k_targets_are_a_long_only_portfolio_of_k_stocks(expected, k, band):
    policy = TopKPolicy(expected, k=k, band=band)
    held = np.zeros(5)
    for _ in range(len(expected)):
        obs = torch.tensor(np.concatenate([[1 - held.sum()], np.stack([held, np.zeros(5)], 1).ravel()]))[None]
        held = policy(obs)[0].numpy()
        assert (held >= 0).all() and held.sum() <= 1 + 1e-12
        assert (held > 0).sum() == k and policy.members.sum() == k


def test_mean_variance_matches_the_closed_form_and_a_high_turnover_cost_freezes_it():
    variances = np.array([4e-4, 1e-3, 5e-4])
    expected = np.array([[1e-3, 5e-4, -2e-4]])
    policy = MeanVariancePolicy(expected, np.diag(variances), risk_aversion=10.0, turnover_cost=0.0)
    weights = policy.target(expected[0], np.zeros(3))
    # budget not binding (0.25 + 0.05 < 1): w = max(0, μ / (λ σ²)), a short position is cash
    np.testing.assert_allclose(weights, [0.25, 0.05, 0.0], atol=1e-4)
    frozen = MeanVariancePolicy(expected, np.diag(variances), risk_aversion=10.0, turnover_cost=0.01)
    held = np.array([0.1, 0.3, 0.2])
    np.testing.assert_allclose(frozen.target(expected[0], held), held, atol=1e-6)


def test_the_covariance_comes_from_the_training_split_only():
    synthetic, _ = _strong()
    covariance = training_covariance(synthetic)
    close = synthetic.market.train.close.numpy()
    np.testing.assert_allclose(covariance - 1e-8 * np.eye(10), np.cov(close[1:] / close[:-1] - 1, rowvar=False))
    assert covariance.shape == (10, 10) and np.all(np.linalg.eigvalsh(covariance) > 0)
