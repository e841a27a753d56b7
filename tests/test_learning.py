"""Does the learner find an edge that is there, and no edge where there is none?

A short seeded run on a synthetic market with a strong planted signal must capture at least half
of the oracle's excess return over buy-and-hold on the untouched test split; on the control
market (no signal) the agent must show no significant edge over buy-and-hold. The full-size
version of this check, over every signal family and several seeds, is ``bench learn``.
"""
from __future__ import annotations

import pytest
import torch

from finrl_tutorial import (EnvConfig, SyntheticSpec, agent_policy, buy_and_hold_baseline, make_config,
                            make_synthetic, oracle_capture, run_policy, sharpe_difference_ci, train)

BUDGET = dict(total_steps=98_304, num_envs=64, horizon_len=64)
"""Default settings but the budget: 24 iterations, well under a minute on one core."""


def _train_and_test(spec: SyntheticSpec, seed: int):
    torch.set_num_threads(1)
    synthetic = make_synthetic(spec)
    env_config = EnvConfig()
    result = train(synthetic.market, make_config("ppo", seed=seed, **BUDGET), env_config, eval_every=4,
                   progress=False)
    test = synthetic.market.test
    agent = run_policy(agent_policy(result.agent), test, env_config)
    return synthetic, agent, buy_and_hold_baseline(test, env_config), env_config


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1])
def test_a_short_run_captures_most_of_a_strong_planted_edge(seed):
    spec = SyntheticSpec(family="factor", ic=0.2, num_stocks=10, num_days=750, seed=100 + seed)
    synthetic, agent, hold, env_config = _train_and_test(spec, seed)
    oracle = synthetic.oracle_record("test", env_config)
    captured = oracle_capture(agent, oracle, hold)
    assert captured >= 0.5, f"captured {captured:.2f} of the oracle's excess return"
    assert sharpe_difference_ci(agent.wealth, hold.wealth)["verdict"] == "beats"


@pytest.mark.slow
def test_no_edge_is_found_where_there_is_none():
    spec = SyntheticSpec(family="none", num_stocks=10, num_days=750, seed=7)
    _, agent, hold, _ = _train_and_test(spec, seed=0)
    assert sharpe_difference_ci(agent.wealth, hold.wealth)["verdict"] != "beats"
