"""The overfitting statistics of `finrl_tutorial.metrics`: PBO by CSCV and the deflated Sharpe ratio,
on cases whose answer is known (pure noise, one real edge, hand-built matrices) and on invariants."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from finrl_tutorial import metrics as M

DAILY_SD = 0.01


def noise(rng, days: int, trials: int) -> np.ndarray:
    return rng.normal(0.0, DAILY_SD, size=(days, trials))


def sharpes(returns: np.ndarray) -> list[float]:
    return [M.return_moments(returns[:, k])["sharpe"] for k in range(returns.shape[1])]


# --------------------------------------------------------------------------- PBO, known cases


def test_pbo_of_pure_noise_is_about_one_half():
    """No trial has an edge: the in-sample best is a random draw out of sample, at or below the
    median half of the time (mean over 20 independent families; one family's PBO varies a lot)."""
    rng = np.random.default_rng(1)
    values = [M.probability_of_backtest_overfitting(noise(rng, 400, 20), slices=8)["pbo"] for _ in range(20)]
    assert 0.38 < np.mean(values) < 0.62


def test_pbo_of_a_family_with_one_real_edge_is_about_zero():
    """One trial earns a daily Sharpe of 0.3 (4.8 a year) among 19 noise trials: it is chosen in
    sample and stays above the median out of sample."""
    rng = np.random.default_rng(2)
    values = []
    for _ in range(10):
        returns = noise(rng, 400, 20)
        returns[:, 7] += 0.3 * DAILY_SD
        values.append(M.probability_of_backtest_overfitting(returns, slices=8)["pbo"])
    assert np.mean(values) < 0.05


def test_pbo_of_hand_built_matrices():
    """Two trials, two slices: each half's winner is the other half's loser (PBO 1), or one trial
    wins both halves (PBO 0); the rank and the logit follow."""
    first, second = np.tile([0.02, 0.0], 5), np.tile([-0.01, 0.0], 5)  # a good half, a bad half
    flip = np.column_stack([np.concatenate([first, second]), np.concatenate([second, first])])
    result = M.probability_of_backtest_overfitting(flip, slices=2)
    assert result["combinations"] == 2 and result["pbo"] == 1.0
    assert result["logits"] == pytest.approx([math.log(0.5)] * 2)  # rank 1 of 2: omega = 1/3
    assert result["probability_of_loss"] == 1.0 and result["degradation"] <= 0
    steady = np.column_stack([np.concatenate([first, first]), np.concatenate([second, second])])
    result = M.probability_of_backtest_overfitting(steady, slices=2)
    assert result["pbo"] == 0.0 and result["logits"] == pytest.approx([math.log(2.0)] * 2)


def test_pbo_uses_whole_slices_and_refuses_bad_input():
    rng = np.random.default_rng(3)
    result = M.probability_of_backtest_overfitting(noise(rng, 103, 5), slices=4)
    assert result["periods"] == 100 and result["combinations"] == 6 and result["trials"] == 5
    for bad, slices in ((noise(rng, 100, 1), 4), (noise(rng, 100, 3), 3), (noise(rng, 7, 3), 4),
                        (np.full((40, 3), np.nan), 4)):
        with pytest.raises(ValueError):
            M.probability_of_backtest_overfitting(bad, slices=slices)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), days=st.integers(16, 120), trials=st.integers(2, 12),
       slices=st.sampled_from([2, 4, 6, 8]), data=st.data())
def test_pbo_is_a_probability_and_ignores_column_order_and_scale(seed, days, trials, slices, data):
    """PBO lies in [0, 1] and does not change when the trials are listed in another order or when
    a trial's returns are scaled by a positive number (its Sharpe ratio does not change)."""
    rng = np.random.default_rng(seed)
    returns = noise(rng, days, trials) + rng.normal(0, 0.002, trials)
    if days // slices < 2:
        return
    base = M.probability_of_backtest_overfitting(returns, slices=slices)
    assert 0.0 <= base["pbo"] <= 1.0 and 0.0 <= base["probability_of_loss"] <= 1.0
    order = data.draw(st.permutations(range(trials)))
    scale = rng.uniform(0.5, 3.0, trials)
    moved = M.probability_of_backtest_overfitting(returns[:, order] * scale[order], slices=slices)
    assert moved["pbo"] == base["pbo"]
    assert moved["logits"] == pytest.approx(base["logits"])


# --------------------------------------------------------------------------- deflated Sharpe


def test_the_best_of_many_noise_strategies_is_not_significant_once_deflated():
    """The best of 100 pure-noise strategies over a year looks significant to the plain PSR, and
    is not after deflation (over 10 families: the plain test errs nearly always, the DSR rarely)."""
    rng = np.random.default_rng(4)
    plain, deflated = [], []
    for _ in range(10):
        returns = noise(rng, 250, 100)
        trial = sharpes(returns)
        result = M.deflated_sharpe_ratio(returns[:, int(np.argmax(trial))], trial)
        plain.append(result["probabilistic_sharpe"] >= 0.95)
        deflated.append(result["significant"])
        assert result["trials"] == 100 and result["expected_max_sharpe"] > 1.5
    assert sum(plain) >= 9 and sum(deflated) <= 2


def test_a_real_edge_with_enough_days_stays_significant_after_deflation():
    """A daily Sharpe of 0.2 (3.2 a year) over eight years, chosen among 99 noise strategies."""
    rng = np.random.default_rng(5)
    returns = noise(rng, 2000, 100)
    returns[:, 0] += 0.2 * DAILY_SD
    trial = sharpes(returns)
    assert int(np.argmax(trial)) == 0
    result = M.deflated_sharpe_ratio(returns[:, 0], trial)
    assert result["significant"] and result["deflated_sharpe"] > 0.99
    # the same edge over 60 days is not enough
    short = returns[:60]
    assert not M.deflated_sharpe_ratio(short[:, 0], sharpes(short))["significant"]


def test_expected_max_sharpe_matches_simulation():
    """The paper's approximation of E[max of N standard normals] within 3 % of a simulation."""
    rng = np.random.default_rng(6)
    for trials in (10, 100, 1000):
        simulated = rng.standard_normal((2000, trials)).max(axis=1).mean()
        assert M.expected_max_sharpe(trials, 1.0) == pytest.approx(simulated, rel=0.03)
    assert M.expected_max_sharpe(1, 4.0, mean=0.3) == 0.3
    assert M.expected_max_sharpe(50, 4.0, mean=0.3) == pytest.approx(0.3 + 2 * M.expected_max_sharpe(50, 1.0))


def test_probabilistic_sharpe_by_hand():
    """Daily Sharpe 0.1 over 101 returns, normal: z = 0.1 √100 / √(1 + 0.5 · 0.01)."""
    annual = 0.1 * math.sqrt(M.PERIODS_PER_YEAR)
    expected = 0.5 * (1 + math.erf(1.0 / math.sqrt(1.005) / math.sqrt(2)))
    assert M.probabilistic_sharpe_ratio(annual, 101) == pytest.approx(expected)
    assert M.probabilistic_sharpe_ratio(annual, 101, benchmark=annual) == pytest.approx(0.5)
    # negative skew and fat tails widen the Sharpe ratio's error: less confidence
    assert M.probabilistic_sharpe_ratio(annual, 101, skewness=-1.0, kurtosis=8.0) < expected


def test_return_moments_match_scipy():
    stats = pytest.importorskip("scipy.stats")
    r = np.random.default_rng(7).standard_t(4, size=500) * 0.01
    moments = M.return_moments(r)
    assert moments["skewness"] == pytest.approx(stats.skew(r))
    assert moments["kurtosis"] == pytest.approx(stats.kurtosis(r, fisher=False))
    assert moments["days"] == 500
    assert M.return_moments(np.zeros(10)) == {"sharpe": 0.0, "days": 10, "skewness": 0.0, "kurtosis": 3.0}


@settings(max_examples=40, deadline=None)
@given(sharpe=st.floats(-3, 5), days=st.integers(20, 2000), spread=st.floats(0.01, 4),
       fewer=st.integers(1, 199), skew=st.floats(-1, 1), excess=st.floats(0, 6))
def test_deflated_sharpe_falls_as_trials_grow(sharpe, days, spread, fewer, skew, excess):
    """The DSR is a probability, and more trials (a higher bar) never raise it."""
    trial = np.linspace(-spread, spread, 200)
    moments = {"sharpe": sharpe, "days": days, "skewness": skew, "kurtosis": 3.0 + excess}
    many = M.deflated_sharpe_ratio(moments, trial)
    few = M.deflated_sharpe_ratio(moments, trial, trials=fewer)
    assert 0.0 <= many["deflated_sharpe"] <= few["deflated_sharpe"] <= 1.0
    assert many["expected_max_sharpe"] >= few["expected_max_sharpe"]
    assert M.probabilistic_sharpe_ratio(sharpe + 0.5, days) >= M.probabilistic_sharpe_ratio(sharpe, days)


def test_the_null_sharpe_shifts_the_bar_by_itself():
    """A null of no skill over a benchmark (unskilled trials centre on its Sharpe) moves SR0 by the
    benchmark's Sharpe; a benchmark below 0 lowers the bar and raises the DSR; 0 is the paper's null."""
    trial = np.linspace(-1.0, 1.0, 50)
    moments = {"sharpe": 0.4, "days": 250, "skewness": 0.0, "kurtosis": 3.0}
    paper = M.deflated_sharpe_ratio(moments, trial)
    assert M.deflated_sharpe_ratio(moments, trial, null_sharpe=0.0) == paper
    below = M.deflated_sharpe_ratio(moments, trial, null_sharpe=-0.6)
    assert below["expected_max_sharpe"] == pytest.approx(paper["expected_max_sharpe"] - 0.6)
    assert below["deflated_sharpe"] > paper["deflated_sharpe"]
    assert below["deflated_sharpe"] == pytest.approx(
        M.probabilistic_sharpe_ratio(0.4, 250, M.expected_max_sharpe(50, float(np.var(trial, ddof=1)), mean=-0.6)))
    assert M.deflated_sharpe_ratio(moments, trial, null_sharpe=0.6)["deflated_sharpe"] < paper["deflated_sharpe"]
    with pytest.raises(ValueError):
        M.deflated_sharpe_ratio(moments, trial, null_sharpe=float("nan"))


def test_selection_overfitting_joins_both():
    rng = np.random.default_rng(8)
    returns = noise(rng, 240, 12)
    trial = sharpes(returns)
    both = M.selection_overfitting(trial, 240, returns=returns, slices=8)
    assert both["moments"] == "measured" and both["pbo"]["combinations"] == 70
    assert both["deflated"] == M.deflated_sharpe_ratio(returns[:, int(np.argmax(trial))], trial)
    normal = M.selection_overfitting(trial, 240)
    assert normal["moments"] == "assumed normal" and normal["pbo"] is None
    assert normal["deflated"]["sharpe"] == max(trial) and normal["deflated"]["kurtosis"] == 3.0
    with pytest.raises(ValueError):
        M.selection_overfitting(trial, 200, returns=returns)


# --------------------------------------------------------------------------- the sweep's selection


def fake_sweep_runs(rng, returns: bool = True, days: int = 120) -> list[dict]:
    """Sweep run records: 2 variants x 3 seeds x 4 validations on the sample (one market for all
    seeds) and on synthetic markets (one per seed); one checkpoint has a real edge."""
    runs = []
    for market in ("sample", "synthetic"):
        for variant in ("base", "batch_size=256"):
            for seed in range(3):
                evaluations = []
                for k in range(4):
                    r = rng.normal(0.0, DAILY_SD, days - 1)
                    if (market, variant, seed, k) == ("sample", "batch_size=256", 1, 2):
                        r += 0.4 * DAILY_SD
                    evaluations.append({"iteration": k, "env_steps": 100 * (k + 1),
                                        "valid_sharpe": M.return_moments(r)["sharpe"]}
                                       | ({"valid_returns": r.tolist()} if returns else {}))
                runs.append({"market": market, "variant": variant, "seed": seed, "valid_days": days,
                             "buy_and_hold_valid_sharpe": 0.0, "evaluations": evaluations})
    return runs


def test_the_sweep_reports_its_selection_per_market():
    from finrl_tutorial.bench.sweep import overfitting

    entries = overfitting(fake_sweep_runs(np.random.default_rng(9)), slices=4)
    assert [(e["market"], e["market_seed"]) for e in entries] == [("sample", None), ("synthetic", 0),
                                                                  ("synthetic", 1), ("synthetic", 2)]
    sample = entries[0]
    assert sample["trials"] == 24 and sample["runs"] == 6 and sample["days"] == 119
    assert sample["selected"] == {"variant": "batch_size=256", "seed": 1, "iteration": 2, "env_steps": 300,
                                  "valid_sharpe": sample["deflated"]["sharpe"]}
    assert sample["moments"] == "measured" and sample["pbo"]["combinations"] == 6 and sample["pbo"]["pbo"] < 0.2
    assert sample["deflated_one_trial_per_run"]["trials"] == 6
    assert sample["deflated_one_trial_per_run"]["deflated_sharpe"] >= sample["deflated"]["deflated_sharpe"]
    assert all(e["trials"] == 8 for e in entries[1:])
    old = overfitting(fake_sweep_runs(np.random.default_rng(9), returns=False), slices=4)[0]
    assert old["pbo"] is None and "pbo_missing" in old and old["moments"] == "assumed normal"
    assert old["deflated"]["sharpe"] == sample["deflated"]["sharpe"]


def test_summarize_recomputes_a_sweep_record_without_training(tmp_path):
    from finrl_tutorial.cli import main

    runs = fake_sweep_runs(np.random.default_rng(10))
    for run in runs:
        run |= {"final_valid_sharpe": run["evaluations"][-1]["valid_sharpe"], "wall_seconds": 1.0,
                "best_valid_sharpe": max(e["valid_sharpe"] for e in run["evaluations"]), "approx_kl_mean": 0.0,
                "clip_fraction_mean": 0.0}
    path = tmp_path / "sweep.json"
    path.write_text(json.dumps({"bench": "sweep", "base_variant": "base", "date": "2026-12-01T12:00:00+00:00",
                                "machine": {"cpu_count": 2}, "command": "the sweep", "runs": runs, "summary": []}))
    assert main(["bench", "sweep", "--summarize", str(path), "--out", str(path)]) == 0
    record = json.loads(path.read_text())
    assert record["runs"] == runs and record["date"] == "2026-12-01T12:00:00+00:00" and record["command"] == "the sweep"
    assert len(record["summary"]) == 4 and len(record["overfitting"]) == 4
    assert record["summarized"]["command"].startswith("python -m finrl_tutorial bench sweep --summarize")
