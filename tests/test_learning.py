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
                            make_synthetic, oracle_capture, oracle_record, run_policy, sharpe_difference_ci, train)

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
    oracle = oracle_record(synthetic, "test", env_config)
    captured = oracle_capture(agent, oracle, hold)
    assert captured >= 0.5, f"captured {captured:.2f} of the oracle's excess return"
    # the Sharpe too, by a clear margin; its interval over 149 test days is wide for a portfolio
    # concentrated in a few stocks (market 101: +1.89 [-0.11, +3.88]), so "beats" is not required
    interval = sharpe_difference_ci(agent.wealth, hold.wealth)
    assert interval["difference"] > 1.0 and interval["verdict"] in ("beats", "inconclusive"), interval


@pytest.mark.slow
def test_no_edge_is_found_where_there_is_none():
    spec = SyntheticSpec(family="none", num_stocks=10, num_days=750, seed=7)
    _, agent, hold, _ = _train_and_test(spec, seed=0)
    assert sharpe_difference_ci(agent.wealth, hold.wealth)["verdict"] != "beats"


# --- the pieces: stockwise network, portfolio head, baselines, interval, benchmark bookkeeping -----

import math  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from finrl_tutorial import (ActorCritic, constant_action_baseline, equal_shares_baseline,  # noqa: E402
                            plot_weights)
from finrl_tutorial import errors  # noqa: E402
from finrl_tutorial.bench import learn  # noqa: E402


def test_the_stockwise_network_is_permutation_equivariant():
    torch.manual_seed(0)
    stocks, per_stock = 5, 4
    agent = ActorCritic(1 + stocks * per_stock, stocks, (16, 16), init_log_std=-0.5, network="stockwise", portfolio=True)
    obs = torch.randn(3, 1 + stocks * per_stock)
    order = torch.tensor([3, 0, 4, 1, 2])
    blocks = obs[:, 1:].reshape(3, stocks, per_stock)
    permuted = torch.cat([obs[:, :1], blocks[:, order].reshape(3, -1)], -1)
    with torch.no_grad():
        torch.testing.assert_close(agent.mean(permuted), agent.mean(obs)[:, order])
        torch.testing.assert_close(agent.value(permuted), agent.value(obs))


def test_the_portfolio_head_trades_softmax_weights_with_cash_at_score_zero():
    agent = ActorCritic(1 + 3 * 2, 3, (8,), init_log_std=-0.5, network="stockwise", portfolio=True)
    scores = torch.tensor([[0.0, 0.0, 0.0], [math.log(2.0), -50.0, 0.0]])
    weights = agent.env_action(scores)
    torch.testing.assert_close(weights[0], torch.full((3,), 0.25))  # cash and 3 stocks alike
    torch.testing.assert_close(weights[1], torch.tensor([0.5, 0.0, 0.25]), atol=1e-12, rtol=0)
    assert bool((weights.sum(-1) < 1).all())
    flat = ActorCritic(7, 3, (8,), init_log_std=-0.5, network="mlp", portfolio=False)
    assert flat.env_action(scores) is scores  # no head: the env gets the sample as it is
    with pytest.raises(ValueError, match="not 1 \\+ 3 stocks"):
        ActorCritic(8, 3, (8,), init_log_std=-0.5, network="stockwise", portfolio=False)


def test_equal_shares_and_constant_action_baselines(sse15):
    test = sse15.test
    shares = equal_shares_baseline(test)
    # shares held after the first fill (day 1): the same count of every stock that could be bought
    held = (shares.weights.iloc[1] * shares.wealth.iloc[1] / test.close[1].numpy()).round()
    bought = held[held > 0]
    assert len(bought) >= test.num_stocks - 2 and (bought == bought.iloc[0]).all(), held.to_dict()
    constant = constant_action_baseline(test, EnvConfig())
    weights = constant.weights.iloc[1:]
    # invested from the first fill (a suspended stock or the volume cap can delay a part of it) ...
    assert (weights.sum(axis=1) > 0.9).all()
    # ... and held at 1/S each once every stock has traded
    assert (weights.iloc[-20:].sub(1 / test.num_stocks).abs() < 0.02).all().all()
    assert constant.traded_value.iloc[2:].gt(0).any()  # rebalanced, with full costs
    fig = plot_weights(constant.weights)
    assert fig.axes[0].get_ylim() == (0.0, 1.0)


def test_the_sharpe_interval_separates_an_edge_from_noise():
    rng = np.random.default_rng(0)
    days = pd.bdate_range("2019-01-02", periods=500)
    market = rng.normal(0.0, 0.01, 500)
    hold = pd.Series(1e6 * np.cumprod(1 + market), days)
    edge = pd.Series(1e6 * np.cumprod(1 + market + 0.002 + rng.normal(0, 0.003, 500)), days)
    noise = pd.Series(1e6 * np.cumprod(1 + market + rng.normal(0, 0.003, 500)), days)
    assert sharpe_difference_ci(edge, hold)["verdict"] == "beats"
    assert sharpe_difference_ci(hold, edge)["verdict"] == "loses"
    wide = sharpe_difference_ci([noise, noise], hold)  # contains 0, but reaches past ±0.25
    assert wide["verdict"] == "inconclusive" and wide["low"] < 0 < wide["high"] and wide["curves"] == 2
    assert wide["low"] < -wide["margin"] or wide["high"] > wide["margin"]
    assert wide["margin"] == 0.25 and sharpe_difference_ci([noise, noise], hold, margin=1.0)["verdict"] == "tie"
    close = pd.Series(1e6 * np.cumprod(1 + market + rng.normal(0, 0.0003, 500)), days)
    tie = sharpe_difference_ci(close, hold)  # the same portfolio but for a little noise: inside the margin
    assert tie["verdict"] == "tie" and -0.25 <= tie["low"] < tie["difference"] < tie["high"] <= 0.25
    with pytest.raises(ValueError, match="same days"):
        sharpe_difference_ci(edge.iloc[1:], hold)


def test_the_curve_reads_the_best_validation_so_far_or_the_latest():
    candidates = [{"env_steps": 100, "valid_sharpe": 0.5, "test_excess": 0.1},
                  {"env_steps": 200, "valid_sharpe": 0.2, "test_excess": 0.3},
                  {"env_steps": 300, "valid_sharpe": 0.9, "test_excess": -0.1}]
    assert learn.read_curve(candidates, 250, "best")["test_excess"] == 0.1
    assert learn.read_curve(candidates, 250, "last")["test_excess"] == 0.3
    assert learn.read_curve(candidates, 300, "best")["test_excess"] == -0.1
    assert learn.read_curve(candidates, 50, "best") is None
    assert math.isnan(learn.capture(0.1, 0.0)) and learn.capture(0.1, 0.2) == 0.5
    assert learn.parse_overrides(["gamma=0.9", "network=mlp", "repeat_times=2", "anneal_lr=false"]) == {
        "gamma": 0.9, "network": "mlp", "repeat_times": 2, "anneal_lr": False}
    assert learn.parse_overrides(["hidden_sizes=32,32"]) == {"hidden_sizes": (32, 32)}  # a list as a tuple
    assert learn.parse_overrides(["hidden_sizes=32,"]) == {"hidden_sizes": (32,)}  # a tuple of one
    for empty in ("hidden_sizes=,", "hidden_sizes=32,,16"):
        with pytest.raises(errors.InputError, match="empty item"):
            learn.parse_overrides([empty])


def test_bench_learn_runs_end_to_end_and_refuses_bad_options(tmp_path):
    command = [sys.executable, "-m", "finrl_tutorial", "bench", "learn", "--families", "factor", "none",
               "--seeds", "1", "--budgets", "4096", "8192", "--days", "200", "--eval-steps", "4096",
               "--out", str(tmp_path / "out")]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    report = __import__("json").loads((tmp_path / "out" / "learn.json").read_text())
    assert {c["family"] for c in report["cases"]} == {"factor", "none"}
    budgets = {r["env_steps"] for r in report["summary"] if r["family"] == "factor"}
    assert budgets == {0, 4096, 8192}
    assert "date" in report["machine"] and (tmp_path / "out" / "learn.png").exists()
    factor = next(c for c in report["cases"] if c["family"] == "factor")
    informed = factor["informed_oracle"]
    assert informed["valid_sharpe"] == max(informed["valid_sharpes"].values()) >= informed["valid_sharpes"]["simple"]
    assert {"test_verdict", "train_seconds"} <= set(factor["candidates"][-1])
    assert report["runs"][0]["command"].startswith("python -m finrl_tutorial bench learn")
    bad = subprocess.run([*command[:5], "--set", "no_such_field=1"], capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "no_such_field" in bad.stderr


def _learn_args(*argv):
    import argparse
    kinds = argparse.ArgumentParser().add_subparsers()
    learn.add_arguments(kinds)
    return kinds.choices["learn"].parse_args(list(argv))


@pytest.mark.parametrize("argv, message", [
    (["--budgets", "1000"], "below one ppo rollout of 4,096"),
    (["--set", "seed=3"], "bench learn sets these itself"),
    (["--set", "total_steps=9"], "bench learn sets these itself"),
    (["--set", "gamma=2"], "--set"),
    (["--stocks", "1"], "num_stocks"),
    (["--ic", "0.7"], "ic must be in"),
    (["--first-seed", "-1"], "--first-seed must be >= 0"),
])
def test_bench_learn_refuses_what_it_cannot_run_in_one_line(argv, message):
    from finrl_tutorial.errors import InputError
    with pytest.raises(InputError, match=message) as error:
        learn.check_arguments(_learn_args(*argv))
    assert "\n" not in str(error.value)
    assert learn.check_arguments(_learn_args("--set", "gamma=0.5")) == {"gamma": 0.5}


def test_bench_learn_first_seed_picks_markets_no_record_has_used():
    default = {seed for *_, seed, _ in learn.cases_of(_learn_args("--families", "factor", "--seeds", "3"))}
    later = {seed for *_, seed, _ in learn.cases_of(_learn_args("--families", "factor", "--seeds", "3", "--first-seed", "100"))}
    assert default == {0, 1, 2} and later == {100, 101, 102}


def _case(ic, stocks, seed, excess, verdict, informed=0.2, oracle=0.1):
    point = {"env_steps": 8192, "test_excess": excess, "test_sharpe": 1.0, "test_verdict": verdict,
             "train_seconds": 30.0, "valid_sharpe": 0.5}
    return {"family": "factor", "ic": ic, "stocks": stocks, "seed": seed, "algo": "ppo", "total_steps": 8192,
            "oracle_excess": oracle, "wall_seconds": 40.0, "informed_oracle": {"test_excess": informed},
            "candidates": [point | {"env_steps": 0, "train_seconds": 0.0}, point],
            "curve": {select: {"0": point, "8192": point} for select in learn.SELECTIONS}}


def test_the_summary_sets_both_oracles_side_by_side_and_finds_the_smallest_beating_ic():
    cases = [_case(0.03, 30, 0, 0.1, "tie"), _case(0.03, 30, 1, 0.05, "beats"),
             _case(0.05, 30, 0, 0.1, "beats"), _case(0.05, 30, 1, 0.1, "beats", informed=0.1),
             _case(0.05, 100, 0, 0.1, "tie")]
    rows = learn.summarize(cases)
    row = next(r for r in rows if r["ic"] == 0.05 and r["stocks"] == 30 and r["select"] == "best"
               and r["env_steps"] == 8192)
    assert row["capture_pooled"] == pytest.approx(1.0)  # 0.1 / 0.1
    assert row["informed_capture_pooled"] == pytest.approx(0.1 / 0.15)
    assert row["informed_captures"] == pytest.approx([0.5, 1.0])
    assert row["beats_buy_and_hold"] == 2 and row["train_seconds"] == 30.0
    assert row["informed_capture_per_minute"] == pytest.approx(row["informed_capture_pooled"] * 2)
    smallest = learn.smallest_beating_ic(rows)
    assert smallest[30]["all"] == 0.05 and smallest[30]["majority"] == 0.05  # 1 of 2 at 0.03 is no majority
    assert smallest[100]["all"] is None and smallest[100]["tried"] == [{"ic": 0.05, "beats": 0, "markets": 1}]
    assert len(learn.plot_capture(rows, None).axes) == 2
    assert "informed_train_valid_capture_pooled" not in row  # these cases have no oracle chosen on the longer window


def test_cases_run_with_set_overrides_are_summarised_apart_and_left_out_of_the_smallest_ic():
    default = [_case(0.05, 30, seed, 0.1, "beats") | {"config": {"algo": "ppo"}} for seed in (0, 1)]
    ablated = [_case(0.05, 30, seed, 0.02, "tie") | {"config": {"algo": "ppo", "pathwise": False}} for seed in (0, 1)]
    rows = [r for r in learn.summarize(default + ablated) if r["select"] == "best" and r["env_steps"] == 8192]
    assert len(rows) == 2  # one row per learner, not one row of four mixed markets
    plain, changed = sorted(rows, key=lambda r: bool(r.get("overrides")))
    assert "overrides" not in plain and plain["seeds"] == 2 and plain["test_excess_mean"] == pytest.approx(0.1)
    assert changed["overrides"] == {"pathwise": False} and changed["test_excess_mean"] == pytest.approx(0.02)
    assert learn.smallest_beating_ic(rows)[30]["tried"] == [{"ic": 0.05, "beats": 2, "markets": 2}]  # the default's
    labels = [t.get_text() for t in learn.plot_capture(rows, None).legends[0].get_texts()]
    assert any("pathwise=False" in label for label in labels)


def test_the_summary_reads_the_oracle_chosen_on_training_and_validation_beside_the_other():
    cases = [_case(0.05, 30, seed, 0.1, "tie") | {"informed_oracle_train_valid": {"test_excess": long}}
             for seed, long in ((0, 0.3), (1, 0.1))]
    row = next(r for r in learn.summarize(cases) if r["select"] == "best" and r["env_steps"] == 8192)
    assert row["informed_capture_pooled"] == pytest.approx(0.5)  # 0.1 / 0.2, the validation-chosen oracle
    assert row["informed_train_valid_excess_mean"] == pytest.approx(0.2)
    assert row["informed_train_valid_capture_pooled"] == pytest.approx(0.5)
    cases[1]["informed_oracle_train_valid"]["test_excess"] = -0.2  # mean 0.05: the agent's 0.1 is twice it
    row = next(r for r in learn.summarize(cases) if r["select"] == "best" and r["env_steps"] == 8192)
    assert row["informed_train_valid_capture_pooled"] == pytest.approx(2.0)


def test_the_capture_figure_keeps_a_fixed_axis_and_marks_each_point_beyond_it_with_its_value():
    wide = [_case(0.05, 30, 0, 0.1, "tie", informed=0.02, oracle=0.01), _case(0.05, 30, 1, 0.7, "beats", informed=0.01, oracle=0.01)]
    rows = learn.summarize(wide)  # pooled, at 0 and 8,192 steps: 0.4 / 0.015 = 26.7 of the informed oracle, 40 of the signal rule
    fig = learn.plot_capture(rows, None)
    for ax, prefix in zip(fig.axes, ("informed_", "")):
        assert ax.get_ylim() == learn.CAPTURE_AXIS[prefix]  # the data do not move the axis
        low, high = ax.get_ylim()
        assert low < 0 < 1 < high and {0.0, 1.0} <= {line.get_ydata()[0] for line in ax.get_lines() if len(line.get_ydata()) == 2}
        assert "2 points beyond the axis" in ax.get_title()
        edge = [line for line in ax.get_lines() if line.get_marker() == "^"]
        assert len(edge) == 2 and all(line.get_ydata()[0] == high for line in edge)  # triangles at the top edge
        drawn = [line for line in ax.get_lines() if line.get_marker() == "o"]
        assert all(not (line.get_ydata() > high).any() for line in drawn)  # no line runs off the axis
    values = [text.get_text() for text in fig.axes[0].texts]
    pooled = next(r for r in rows if r["select"] == "best" and r["env_steps"] == 8192)["informed_capture_pooled"]
    assert values == [f"{pooled:.1f}"] * 2 == ["26.7"] * 2
    assert not any(ax.collections for ax in fig.axes)  # no min-max band
    legend = fig.legends[0]
    assert not any(ax.get_legend() for ax in fig.axes)  # one legend, outside the panels
    assert legend.get_window_extent().y1 <= min(ax.get_window_extent().y0 for ax in fig.axes)
    narrow = learn.plot_capture(learn.summarize([_case(0.05, 30, 0, 0.1, "tie")]), None).axes[0]
    assert "beyond the axis" not in narrow.get_title() and not narrow.texts
    assert narrow.get_ylim() == learn.CAPTURE_AXIS["informed_"]


def test_the_capture_figure_names_a_cell_no_panel_can_draw_in_its_legend():
    rows = learn.summarize([_case(0.05, 30, 0, 0.1, "tie"), _case(0.02, 30, 0, 0.0, "tie", informed=-0.1, oracle=-0.1)])
    texts = [t.get_text() for t in learn.plot_capture(rows, None).legends[0].get_texts()]
    missing = [text for text in texts if "ic 0.02" in text]
    assert len(missing) == 1 and "not drawn, the informed oracle and the signal rule made no pooled excess" in missing[0]
    assert texts[-2:] == ["the panel's oracle (1)", "buy-and-hold (0)"]
