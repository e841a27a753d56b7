"""The verdict vocabulary: "beats" / "loses" when an interval excludes 0, "tie" only when the whole
interval lies inside the equivalence margin, else "inconclusive"; the readers of stored records
recompute it from the stored bounds rather than trust the stored string; the CLI takes the margin."""
from __future__ import annotations

import inspect
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from finrl_tutorial import cli, sharpe_difference_ci
from finrl_tutorial.backtest.oracle import InformedRule, informed_rules
from finrl_tutorial.bench import learn
from finrl_tutorial.book import read_records, sweep, teaching
from finrl_tutorial.metrics import TIE_MARGIN, check_margin, difference_verdict, stored_verdict, verdict_reason

bounds = st.floats(-5, 5, allow_nan=False)
margins = st.floats(0, 3, allow_nan=False)


@given(bounds, bounds, margins)
def test_the_verdict_rule_has_four_outcomes_each_with_its_meaning(a, b, margin):
    low, high = min(a, b), max(a, b)
    verdict = difference_verdict(low, high, margin)
    assert verdict in ("beats", "loses", "tie", "inconclusive")
    assert (verdict == "beats") == (low > 0)
    assert (verdict == "loses") == (high < 0)
    if verdict == "tie":  # the whole interval inside the margin, and 0 in it
        assert -margin <= low <= 0 <= high <= margin
    if verdict == "inconclusive":  # it holds 0, and leaves the margin on at least one side
        assert low <= 0 <= high and (low < -margin or high > margin)
    if low <= 0 <= high and -margin <= low and high <= margin:
        assert verdict == "tie"
    # no margin: nothing is a tie, the rest unchanged
    assert difference_verdict(low, high, None) == ("inconclusive" if verdict == "tie" else verdict)
    assert verdict_reason(verdict, margin)


@given(bounds, bounds, margins, margins)
def test_a_wider_margin_only_turns_inconclusive_into_tie(a, b, small, extra):
    low, high = min(a, b), max(a, b)
    narrow, wide = difference_verdict(low, high, small), difference_verdict(low, high, small + extra)
    assert narrow == wide or (narrow, wide) == ("inconclusive", "tie")


@pytest.mark.parametrize("bad", [-0.01, math.nan, math.inf, -math.inf, "a lot", None, True])
def test_a_bad_margin_is_a_clear_value_error(bad):
    with pytest.raises(ValueError, match="tie margin must be"):
        check_margin(bad)
    if bad is not None:  # None is "no margin" to the verdict
        with pytest.raises(ValueError, match="tie margin must be"):
            difference_verdict(-0.1, 0.1, bad)


def _curves(noise: float, days: int = 300):
    rng = np.random.default_rng(1)
    index = pd.bdate_range("2019-01-02", periods=days)
    market = rng.normal(0.0, 0.01, days)
    hold = pd.Series(1e6 * np.cumprod(1 + market), index)
    other = pd.Series(1e6 * np.cumprod(1 + market + rng.normal(0, noise, days)), index)
    return other, hold


def test_sharpe_difference_ci_states_its_margin_and_validates_it():
    other, hold = _curves(0.004)
    result = sharpe_difference_ci(other, hold, resamples=500)
    assert result["margin"] == TIE_MARGIN == 0.25
    assert result["verdict"] == difference_verdict(result["low"], result["high"], 0.25)
    assert result["low"] < 0 < result["high"]
    loose = sharpe_difference_ci(other, hold, resamples=500, margin=10.0)
    strict = sharpe_difference_ci(other, hold, resamples=500, margin=0.0)
    assert (loose["verdict"], strict["verdict"], loose["margin"]) == ("tie", "inconclusive", 10.0)
    assert (loose["low"], loose["high"]) == (strict["low"], strict["high"])  # the margin only names the interval
    for bad in (-1.0, math.nan, math.inf):
        with pytest.raises(ValueError, match="tie margin"):
            sharpe_difference_ci(other, hold, resamples=500, margin=bad)


def test_resampling_the_seeds_widens_the_interval_by_their_spread_and_only_then():
    """The two-level bootstrap (seeds and days) equals the days-only one with one curve or identical
    curves, is wider when the seeds disagree, and keeps the observed difference."""
    index = pd.bdate_range("2019-01-02", periods=250)
    rng = np.random.default_rng(3)
    market = rng.normal(0.0005, 0.01, len(index))
    hold = pd.Series(1e6 * np.cumprod(1 + market), index)
    seeds = [pd.Series(1e6 * np.cumprod(1 + market + drift + rng.normal(0, 0.002, len(index))), index)
             for drift in (-0.0015, -0.0005, 0.0005, 0.0015)]
    days = sharpe_difference_ci(seeds, hold, resamples=2000)
    both = sharpe_difference_ci(seeds, hold, resamples=2000, resample_seeds=True)
    assert (days["resampled"], both["resampled"]) == ("days", "seeds and days")
    assert both["difference"] == days["difference"]
    assert both["high"] - both["low"] > 1.5 * (days["high"] - days["low"])  # the seeds' spread counts now
    for same in ([seeds[0]], [seeds[0]] * 3):
        plain = sharpe_difference_ci(same, hold, resamples=1000)
        nested = sharpe_difference_ci(same, hold, resamples=1000, resample_seeds=True)
        assert (nested["low"], nested["high"]) == pytest.approx((plain["low"], plain["high"]), abs=1e-12)

def test_stored_verdicts_are_recomputed_from_their_bounds():
    old = {"low": -0.4, "high": 0.3, "verdict": "tie"}  # the rule before the margin
    assert stored_verdict(old) == "inconclusive"
    assert stored_verdict(old, 0.5) == "tie"
    assert stored_verdict(dict(old, margin=0.5)) == "tie"  # the record's own margin
    assert stored_verdict({"low": 0.1, "high": 0.3, "verdict": "tie"}) == "beats"


def test_the_committed_records_are_read_with_the_current_rule():
    walkforward = read_records("bench_walkforward.json")[0]
    table = teaching.walkforward_table(walkforward)
    rows = walkforward["summary"]["years"] + [walkforward["summary"]["pooled"]]
    for row, (_, line) in zip(rows, table.iterrows()):
        interval = row["intervals"]["agent_vs_equal_weight"]
        assert line["agent verdict"] == difference_verdict(interval["low"], interval["high"])
    # the sweep's non-overlap verdicts: recomputed, never the stored "tie"
    record = read_records("bench_sweep.json")[0]
    summary = sweep.summary_table(record)
    assert "tie" not in set(summary["final vs base"]) | set(summary["best vs base"])
    comparisons = teaching.sweep_comparisons(record)
    assert "tie" not in set(comparisons["non-overlap verdict"]) | set(comparisons["holm_verdict"])
    assert not any("a tie" in sentence for sentence in sweep.describe(record))
    pairs = teaching.paired_by_family(read_records("bench_learn.json")[0],
                                      {"ppo − a2c": (("ppo", 300_000, "best"), ("a2c", 300_000, "best"))})
    assert set(pairs["verdict"]) <= {"first ahead", "second ahead", "inconclusive"}


def test_the_learning_summary_recomputes_each_markets_verdict():
    point = {"env_steps": 8192, "test_excess": 0.1, "test_sharpe": 1.0, "train_seconds": 30.0, "valid_sharpe": 0.5,
             "test_verdict": "tie", "test_sharpe_difference_low": -0.6, "test_sharpe_difference_high": 0.4}
    case = {"family": "factor", "ic": 0.05, "stocks": 30, "seed": 0, "algo": "ppo", "total_steps": 8192,
            "oracle_excess": 0.1, "wall_seconds": 40.0,
            "candidates": [point | {"env_steps": 0, "train_seconds": 0.0}, point],
            "curve": {select: {"0": point, "8192": point} for select in learn.SELECTIONS}}
    rows = learn.summarize([case])
    assert {verdict for row in rows for verdict in row["test_verdicts"]} == {"inconclusive"}


def test_the_signal_rule_keeps_its_stored_name_and_takes_an_alias():
    assert InformedRule("signal") == InformedRule("simple") and InformedRule("signal").name == "simple"
    assert informed_rules(3)[-1] == InformedRule("signal")
    realistic = read_records("bench_learn_realistic.json")[0]
    table = teaching.realistic_learning_table(realistic)
    assert {"signal rule captured (pooled)", "signal rule excess"} <= set(table.columns)
    assert not any("simple oracle" in column for column in table.columns)
    assert "signal rule test excess" in teaching.informed_oracle_table(realistic).columns


@pytest.mark.parametrize("value", ["-0.1", "nan", "inf", "wide"])
def test_train_refuses_a_bad_tie_margin_in_one_line(capsys, value):
    with pytest.raises(SystemExit) as stop:
        cli.main(["train", f"--tie-margin={value}"])
    err = capsys.readouterr().err.strip().splitlines()
    assert stop.value.code == 2 and len(err) == 1, err
    assert err[0].startswith("error: ") and "--tie-margin" in err[0] and "finite number >= 0" in err[0]


def test_train_passes_its_tie_margin_to_the_job(monkeypatch):
    seen = {}

    def fake_run_experiment(*args, **kwargs):
        seen.update(kwargs)
        return {}

    fake_run_experiment.__signature__ = inspect.signature(cli.run_experiment)  # the parser reads its defaults
    monkeypatch.setattr(cli, "run_experiment", fake_run_experiment)
    monkeypatch.setattr(cli, "_load", lambda args: None)
    monkeypatch.setattr(cli, "_run_folder", lambda args: None)
    assert cli.main(["train", "--tie-margin", "0.1", "--no-progress"]) == 0
    assert seen["tie_margin"] == 0.1
    assert cli.build_parser().parse_args(["train"]).tie_margin == TIE_MARGIN


def test_an_inconclusive_reason_names_the_end_beyond_the_margin_to_three_decimals():
    # -0.2528 prints as -0.25 at two decimals: the reason says which side of the margin it lies on
    assert verdict_reason("inconclusive", 0.25, -0.2528, 0.064) == (
        "the interval contains 0, and its lower end -0.253 lies beyond the tie margin ±0.25")
    assert "upper end +0.300" in verdict_reason("inconclusive", 0.25, -0.1, 0.3)
    assert verdict_reason("inconclusive", None, -0.1, 0.3).endswith("no equivalence margin")
