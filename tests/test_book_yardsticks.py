"""The readings chapters 1 and 2 show their yardsticks with (`finrl_tutorial.book.teaching`):
walk-forward years, realistic learning against the informed oracle, the sweep's deflated Sharpe,
PBO on a live example and the reader's version of a record's command. Each reads a record (or a
small one built here) and must follow it: a changed record changes the table or the sentence."""
from __future__ import annotations


import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from finrl_tutorial.book import read_records, teaching
from finrl_tutorial.metrics import difference_verdict


def _interval(difference, low, high, verdict=None):
    """A stored interval; ``verdict``: the string a record stores (default: the current rule's)."""
    return {"difference": difference, "low": low, "high": high, "level": 0.95,
            "verdict": verdict or difference_verdict(low, high)}


def _spread(value):
    return {"mean": value, "std": 0.0, "min": value, "max": value, "values": [value]}


def _walkforward(intervals_by_year: dict[int, tuple], pooled: tuple) -> dict:
    years = []
    for year, (agent, untrained) in intervals_by_year.items():
        metrics = {"sharpe_ratio": _spread(1.0), "cumulative_return": _spread(0.1)}
        years.append({"year": year, "seeds": [0], "splits": {"train": ["2015-01-05", f"{year - 2}-12-31"],
                                                              "valid": [f"{year - 1}-01-04", f"{year - 1}-12-30"],
                                                              "test": [f"{year}-01-03", f"{year}-12-29"]},
                      "agent": metrics, "untrained_agent": metrics, "equal_weight_buy_and_hold": metrics,
                      "intervals": {"agent_vs_equal_weight": _interval(*agent),
                                    "untrained_vs_equal_weight": _interval(*untrained)}})
    return {"total_steps": 8192, "summary": {"years": years, "pooled": {
        "days": 480, "intervals": {"agent_vs_equal_weight": _interval(*pooled[0]),
                                   "untrained_vs_equal_weight": _interval(*pooled[1])}}},
        "runs": [{"year": 2017, "seed": 0, "validations": [{"env_steps": 4096, "valid_sharpe": 0.1},
                                                            {"env_steps": 8192, "valid_sharpe": 0.3}]},
                 {"year": 2018, "seed": 0, "validations": [{"env_steps": 4096, "valid_sharpe": 0.5},
                                                            {"env_steps": 8192, "valid_sharpe": 0.2}]}]}


def test_walkforward_table_follows_the_record_year_by_year():
    record = _walkforward({2017: ((0.1, -0.2, 0.4), (0.0, -0.3, 0.3)), 2018: ((0.5, 0.1, 0.9), (0.0, -0.3, 0.3))},
                          ((0.3, 0.05, 0.6), (0.0, -0.2, 0.2)))
    table = teaching.walkforward_table(record)
    assert list(table.index) == ["2017", "2018", "pooled (480 days)"]
    assert list(table["agent verdict"]) == ["inconclusive", "beats", "beats"]  # [-0.2, 0.4] leaves ±0.25
    assert table.loc["2018", "agent − buy-and-hold [95 %]"] == "+0.50 [+0.10, +0.90]"
    assert table.loc["2018", "trained on"] == "2015-2016" and table.loc["2018", "validated on"] == "2017"
    assert table.loc["2017", "trained on"] == "2015"  # one year, said once
    assert teaching.walkforward_verdicts(record) == {"2017": "inconclusive", "2018": "beats", "pooled": "beats"}
    assert teaching.walkforward_verdicts(record, margin=0.5)["2017"] == "tie"  # inside ±0.5
    assert list(teaching.walkforward_table(record, margin=0.5)["agent verdict"]) == ["tie", "beats", "beats"]
    checkpoints = teaching.walkforward_checkpoints(record)
    assert checkpoints["runs"] == 2 and checkpoints["at_first_validation"] == 1
    assert checkpoints["chosen"] == {(2017, 0): 8192, (2018, 0): 4096}


def test_the_committed_walkforward_verdicts_are_recomputed_from_their_bounds():
    walkforward = read_records("bench_walkforward.json")[0]
    verdicts = teaching.walkforward_verdicts(walkforward)
    stored = walkforward["summary"]["years"]
    assert verdicts == {**{str(row["year"]): difference_verdict(row["intervals"]["agent_vs_equal_weight"]["low"],
                                                                row["intervals"]["agent_vs_equal_weight"]["high"])
                           for row in stored},
                        "pooled": difference_verdict(**{k: walkforward["summary"]["pooled"]["intervals"]
                                                        ["agent_vs_equal_weight"][k] for k in ("low", "high")})}



def test_stored_tie_strings_are_not_trusted():
    # a record written under the old rule stores "tie" for an interval far wider than the margin
    record = _walkforward({2017: ((0.0, -0.9, 0.9, "tie"), (0.0, -0.1, 0.1, "tie"))},
                          ((0.0, -0.9, 0.9, "tie"), (0.0, -0.1, 0.1, "tie")))
    assert teaching.walkforward_verdicts(record) == {"2017": "inconclusive", "pooled": "inconclusive"}
    assert teaching.walkforward_verdicts(record, "untrained_vs_equal_weight") == {"2017": "tie", "pooled": "tie"}
    table = teaching.walkforward_table(record)
    assert set(table["agent verdict"]) == {"inconclusive"} and set(table["untrained verdict"]) == {"tie"}


def test_realistic_cells_read_the_full_budget_of_the_default_run_length():
    row = {"summary": True, "family": "factor", "ic": 0.05, "stocks": 30, "learner": "ppo", "select": "best",
           "env_steps": 300_000, "run_steps": 300_000, "seeds": 2, "capture_pooled": 1.1,
           "informed_capture_pooled": 0.85, "informed_captures": [0.8, 0.9], "informed_capture_min": 0.8,
           "informed_capture_max": 0.9, "beats_buy_and_hold": 2, "test_excess_mean": 0.2,
           "informed_excess_mean": 0.25, "oracle_excess_mean": 0.18, "train_seconds": 120.0}
    early = dict(row, env_steps=100_000, informed_capture_pooled=0.1, train_seconds=40.0)
    table = teaching.realistic_learning_table({"summary": [row, early]})
    assert len(table) == 1  # the full budget only
    assert table["informed oracle captured (pooled)"].iloc[0] == 0.85 and table["beats buy-and-hold"].iloc[0] == "2 of 2"
    assert not any("target" in column for column in table.columns)
    # a cell run at two lengths: the default length by default, the other one on request
    longer = dict(row, env_steps=900_000, run_steps=900_000, informed_capture_pooled=0.95)
    longer_early = dict(longer, env_steps=300_000, informed_capture_pooled=0.3)
    record = {"summary": [row, early, longer, longer_early]}
    assert teaching.realistic_learning_table(record)["env-steps"].tolist() == [300_000]
    assert teaching.realistic_learning_table(record, run_steps=900_000)["informed oracle captured (pooled)"].tolist() == [0.95]
    budgets = teaching.budget_table(record, 0.05, 30)
    assert list(budgets.index) == [(300_000, 100_000), (300_000, 300_000), (900_000, 300_000), (900_000, 900_000)]
    assert budgets.loc[(900_000, 300_000), "informed oracle captured (pooled)"] == 0.3
    with pytest.raises(ValueError, match="no ppo cell"):
        teaching.budget_table(record, 0.03, 30)


def test_overfitting_table_reads_the_sweep_record():
    sweep = read_records("bench_sweep.json")[0]
    table = teaching.overfitting_table(sweep)
    assert len(table) == len(sweep["overfitting"])
    for entry, (_, row) in zip(sweep["overfitting"], table.iterrows()):
        assert row["deflated Sharpe"] == entry["deflated"]["deflated_sharpe"]
        assert row["trials (checkpoints)"] == entry["trials"]
        assert 0 <= row["deflated Sharpe"] <= 1
    from finrl_tutorial.book import learning

    # on the page the deflated Sharpe ratios, read against 0.95, keep three decimals; the Sharpe ratios two
    shown = learning.style_overfitting(table).to_html()
    assert f"{table['deflated Sharpe'].iloc[0]:.3f}" in shown and f"{table['chosen valid Sharpe'].iloc[0]:.2f}" in shown
    assert f"{table['chosen valid Sharpe'].iloc[0]:.3f}" not in shown


def test_pbo_example_tells_noise_from_an_edge():
    result = teaching.pbo_example(seed=0)
    assert 0.2 < result["noise"]["pbo"] < 0.8  # noise: the in-sample best is a coin toss out of sample
    assert result["one edge"]["pbo"] < 0.2 and result["one edge"]["best_trial"] == 0
    assert result["noise"]["deflated_sharpe"] < 0.95  # the best of 20 noise series is not significant
    assert result["noise"]["best_sharpe"] > 0  # although its raw Sharpe looks positive


_option = st.from_regex(r"--[a-z][a-z-]{0,8}", fullmatch=True)
_value = st.from_regex(r"[a-z0-9_./]{1,12}", fullmatch=True)


@settings(max_examples=60, deadline=None)
@given(options=st.lists(st.tuples(_option, _value), max_size=6), out=_value, junk=_value)
def test_reader_command_has_one_out_and_no_dropped_options(options, out, junk):
    words = ["python", "-m", "finrl_tutorial", "bench", "learn"]
    for option, value in options:
        words += [option, value]
    command = " ".join(words + ["--out", f"/tmp/{junk}", "--merge", "a.json", "b.json", "--resume"])
    clean = teaching.reader_command(command + " && python -m finrl_tutorial bench learn --out /tmp/x", out)
    parts = clean.split()
    assert parts.count("--out") == 1 and parts[-2:] == ["--out", out]
    assert "--merge" not in parts and "--resume" not in parts and "&&" not in parts and "/tmp/" not in clean
    kept = [(o, v) for o, v in options if o not in ("--merge", "--resume", "--variants", "--out")]
    for option, value in kept:
        assert f"{option} {value}" in clean


def test_sweep_caption_for_a_reader_shows_one_runnable_command():
    from finrl_tutorial.book import sweep_caption

    record = read_records("bench_sweep.json")[0]
    caption = sweep_caption(record, "bench_sweep.json", reader_out="runs/bench_sweep.json")
    command = caption.splitlines()[-1].split(": ", 1)[1]
    assert command.startswith("python -m finrl_tutorial bench sweep") and command.endswith("--out runs/bench_sweep.json")
    assert "/tmp/" not in caption and "--merge" not in caption and "--variants" not in caption
    assert f"({len(record['runs'])} runs, with the plain learner it ran)" in caption  # a 2026-12-01 record
    assert "--set gae_lambda=0.95 market_baseline=false pathwise=false --out" in command
    assert sweep_caption(record, "bench_sweep.json").count("  part (") == len(record["merged_from"])  # unchanged without


def test_sweep_caption_explains_why_the_record_holds_fewer_steps_than_the_command_asked():
    from finrl_tutorial.book import sweep_caption

    record = read_records("bench_factor.json")[0]
    caption = sweep_caption(record, "bench_factor.json", reader_out="runs/bench_factor.json")
    assert "--total-steps 300000" in caption and record["total_steps"] == 294_912
    assert "294,912 env-steps per run (the command's --total-steps 300,000 rounded down" in caption
    assert f"{record['evaluations'] + 1} validations each (one after the first iteration" in caption
    exact = dict(record, total_steps=300_000)
    assert "rounded down" not in sweep_caption(exact, "bench_factor.json")  # said only where the two differ


def test_paired_by_family_corrects_over_every_row_the_pooled_ones_included():
    learn = read_records("bench_learn.json")[0]
    pair = (("ppo", 300_000, "best"), ("a2c", 300_000, "best"))
    table = teaching.paired_by_family(learn, {"ppo − a2c": pair})
    pooled = table.xs("all families", level="family").iloc[0]
    pairs = teaching.paired_captures(learn, *pair)
    assert pooled["pairs"] == len(pairs) and abs(pooled["mean difference"] - pairs["difference"].mean()) < 1e-12
    per_family = table.drop(index="all families", level="family")
    assert set(per_family.index.get_level_values("family")) == set(pairs["family"])
    assert (table["p (Holm)"] >= table["p (t)"].fillna(1.0)).all()
    # the pooled row is adjusted as one of all the rows: Holm's factor for the smallest p is the row count
    smallest = table["p (t)"].idxmin()
    assert table.loc[smallest, "p (Holm)"] == pytest.approx(min(1.0, len(table) * table.loc[smallest, "p (t)"]))
    assert (table["verdict"] != "inconclusive").sum() == (table["p (Holm)"] < 0.05).sum()


def test_differences_by_family_tests_paired_excess_and_corrects_over_both_comparisons():
    from finrl_tutorial.book import learning, teaching_ppo

    learn = read_records("bench_learn.json")[0]
    steps = teaching_ppo.sb3_steps(learn)
    pairs = {"ppo − a2c": learning.paired_excess(learn, "ppo", "a2c", 300_000, "best"),
             "ours − sb3": learning.paired_excess(learn, "ppo", "sb3_ppo", steps, "last")}
    table = teaching.differences_by_family(pairs)
    for name, frame in pairs.items():
        pooled = table.loc[(name, "all families")]
        test = learning.paired_test(frame["difference"])
        assert pooled["pairs"] == len(frame) == test["n"] and pooled["mean difference"] == pytest.approx(test["mean"])
        assert (pooled["low"], pooled["high"]) == pytest.approx((test["low"], test["high"]))
        assert pooled["p (t)"] == pytest.approx(test["p (t)"])
        assert set(table.loc[name].index) == set(frame["family"]) | {"all families"}
    # one Holm family over the rows of both comparisons: each adjusted p is at least len(table) x the smallest raw p
    assert table["p (Holm)"].min() == pytest.approx(min(1.0, len(table) * table["p (t)"].min()))
    assert (table["verdict"] != "inconclusive").sum() == (table["p (Holm)"] < 0.05).sum()
    # the capture version is the same table built on paired captures
    pair = (("ppo", 300_000, "best"), ("a2c", 300_000, "best"))
    import pandas as pd

    pd.testing.assert_frame_equal(teaching.paired_by_family(learn, {"x": pair}),
                                  teaching.differences_by_family({"x": teaching.paired_captures(learn, *pair)}))


def test_an_uncorrected_pooled_interval_that_excludes_zero_is_not_a_verdict():
    """Three families of 4 markets, each a little ahead: the pooled 95 % interval excludes 0
    (p 0.028), but adjusted as one of the table's four verdicts it is not below 0.05."""
    summary = []
    for family, differences in {"a": [0.4, -0.2, 0.5, 0.2], "b": [0.3, -0.2, 0.6, 0.1],
                                "c": [0.5, -0.2, 0.2, 0.3]}.items():
        summary.append({"learner": "x", "run_steps": 10, "env_steps": 10, "select": "best", "family": family,
                        "captures": [1.0 + d for d in differences]})
        summary.append({"learner": "y", "run_steps": 10, "env_steps": 10, "select": "best", "family": family,
                        "captures": [1.0] * 4})
    table = teaching.paired_by_family({"summary": summary}, {"x − y": (("x", 10, "best"), ("y", 10, "best"))})
    pooled = table.loc[("x − y", "all families")]
    assert pooled["low"] > 0 and pooled["p (t)"] < 0.05
    assert pooled["p (Holm)"] == pytest.approx(4 * pooled["p (t)"]) and pooled["verdict"] == "inconclusive"
    assert (table["verdict"] == "inconclusive").all()


def _learn_case(algo, family, seed, agent_excess, rule_excess, run_steps=300_000):
    point = {"env_steps": run_steps, "valid_sharpe": 1.0, "test_excess": agent_excess, "test_sharpe": 1.0}
    return {"family": family, "ic": 0.1, "seed": seed, "algo": algo, "stocks": 10, "oracle_excess": rule_excess,
            "curve": {"best": {"0": dict(point, env_steps=0, test_excess=0.0), str(run_steps): point}}}


def test_signal_rule_comparison_pairs_markets_and_corrects_over_every_verdict():
    cases = ([_learn_case("ppo", "factor", s, 0.5 + 0.01 * s, 0.2) for s in range(5)]  # +0.30 on every market
             + [_learn_case("ppo", "momentum", s, 0.2 + d, 0.2) for s, d in enumerate([0.3, -0.3, 0.1, -0.1, 0.05])]
             + [_learn_case("ppo", "none", s, 0.0, -0.02) for s in range(5)]  # control: no signal family
             + [_learn_case("ppo", "factor", s, 9.0, 0.2, run_steps=100_000) for s in range(3)])  # another length
    table = teaching.signal_rule_comparison({"cases": cases}, learners=("ppo",), run_steps=300_000)
    assert list(table.index) == [("ppo", "factor"), ("ppo", "momentum"), ("ppo", "all families")]
    factor = table.loc[("ppo", "factor")]
    assert factor["markets"] == 5 and factor["mean difference"] == pytest.approx(0.32)
    assert factor["signal rule excess"] == pytest.approx(0.2) and factor["verdict"] == "beats"
    assert table.loc[("ppo", "momentum"), "verdict"] == "inconclusive"
    assert table.loc[("ppo", "all families"), "markets"] == 10
    assert (table["p (Holm)"] >= table["p (t)"]).all()
    assert table["p (Holm)"].tolist() == teaching.holm(table["p (t)"].tolist()).tolist()
    # the same markets with the agent below the rule: "loses", never "beats"
    worse = [dict(c, oracle_excess=c["oracle_excess"] + 1.0) for c in cases]
    flipped = teaching.signal_rule_comparison({"cases": worse}, learners=("ppo",), run_steps=300_000)
    assert flipped.loc[("ppo", "factor"), "verdict"] == "loses"
    with pytest.raises(ValueError, match="no a2c run"):
        teaching.signal_rule_comparison({"cases": cases}, learners=("a2c",))


def test_capture_gaps_name_the_pairs_both_ran_without_a_capture():
    def row(learner, family, captures):
        return {"learner": learner, "run_steps": 100, "env_steps": 100, "select": "best", "family": family,
                "captures": captures}

    record = {"summary": [row("ppo", "factor", [1.0, 2.0, None, 4.0]), row("a2c", "factor", [0.5, 1.0, 3.0]),
                          row("ppo", "none", [None, None]), row("a2c", "none", [None, None])],
              "cases": [_learn_case("ppo", "factor", 2, 0.1, -0.03, 100)]}
    pair = (("ppo", 100, "best"), ("a2c", 100, "best"))
    gaps = teaching.capture_gaps(record, *pair)
    assert list(zip(gaps["family"], gaps["market"])) == [("factor", 2), ("none", 0), ("none", 1)]
    assert gaps["signal rule excess"].iloc[0] == -0.03 and gaps["signal rule excess"].iloc[1:].isna().all()
    assert len(teaching.paired_captures(record, *pair)) + len(gaps) == 3 + 2  # every pair both ran is one or the other
    text = teaching.capture_gaps_text(gaps)
    assert text.startswith("3 pairs both ran are left out") and "factor market 2 (-3.0%)" in text
    assert "none markets 0, 1" in text and teaching.capture_gaps_text(gaps.iloc[:0]) == ""


def test_undefined_captures_count_the_markets_the_per_market_column_leaves_out():
    row = {"summary": True, "family": "factor", "ic": 0.05, "stocks": 30, "learner": "ppo", "select": "best",
           "env_steps": 300_000, "run_steps": 300_000, "seeds": 3, "captures": [1.0, None, None],
           "informed_captures": [0.8, None, 0.9]}
    counts = teaching.undefined_captures({"summary": [row, dict(row, env_steps=100_000, informed_captures=[None] * 3)]})
    assert counts.loc[(0.05, 30, "ppo")].tolist() == [3, 1, 2]


def test_a_difference_of_two_returns_is_written_in_points():
    from finrl_tutorial.book import teaching

    # 28.3 % minus 0 % is 28.3 percentage points; the sign is always shown, rounding to one decimal
    assert [teaching.points(x) for x in (0.283, -0.011, 0.0, 0.00049)] == ["+28.3", "-1.1", "+0.0", "+0.0"]
    assert teaching.points_text({"mean": 0.283, "low": 0.122, "high": 0.445}) == "+28.3 points [+12.2, +44.5]"
    assert teaching.points_text({"mean difference": -0.011, "low": -0.049, "high": 0.026},
                                mean="mean difference") == "-1.1 points [-4.9, +2.6]"
