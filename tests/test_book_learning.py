"""The readings of the chapters on learning (`finrl_tutorial.book.learning`: chapter 1's second page,
chapters 2 and 7) read what their records hold.

The chapters' sentences are Markdown, checked number by number in hidden cells; here the readings
behind them are checked against the stored records (or small hand-made ones where a branch needs
it): tables, intervals, budgets, ends near a margin, the folded method blocks (no platform string,
no word from outside the project, every multiplier with its baseline) and the boxes. No timing here.
"""
from __future__ import annotations

import re

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from finrl_tutorial.agents import PPOConfig  # noqa: E402
from finrl_tutorial.bench.sweep import verdict  # noqa: E402
from finrl_tutorial.book import learning, read_records, teaching  # noqa: E402

DEFAULT = PPOConfig().total_steps







# --------------------------------------------------------------------------- words every reading shares

try:  # the book's own rules for prose: words from outside the project, multipliers without a baseline
    from test_book import _OUTSIDE, _unreferenced_multipliers
except ImportError:  # pragma: no cover - the book's tests need PyYAML (jupyter-book); without them, a minimal rule
    _OUTSIDE = re.compile(r"(?<![\w-])(?:sessions?|helpers?|briefs?|lent|tasks?|tickets?)(?![\w-])", re.I)

    def _unreferenced_multipliers(sentence):
        return [m for m in re.findall(r"\d[\d.,]*×", sentence)
                if not re.search(r"relative to|than|of|as (?:much|far)|the base", sentence)]


def _clean(text: str) -> None:
    assert not _OUTSIDE.search(text), _OUTSIDE.search(text).group(0)
    for sentence in re.split(r"(?<=[.!?])\s+(?=[A-Z*(])", re.sub(r"\s+", " ", text.replace("**", ""))):
        assert not _unreferenced_multipliers(sentence), sentence


def test_the_method_block_is_folded_with_its_paragraphs_then_its_tables():
    note = learning.how_measured("a & c", tables=[pd.DataFrame({"x": [1]})])
    page = note._repr_markdown_()
    assert page.startswith('<details class="how-measured">') and "How this was measured" in page
    assert page.index("a & c") < page.index("<table") and page.endswith("</details>")
    assert str(note).splitlines()[0] == "How this was measured" and "a & c" in str(note)


# --------------------------------------------------------------------------- chapter 1: the planted edge

def test_the_planted_edge_table_reads_the_capture_and_the_interval():
    table = learning.planted_edge_table(98_304, 0.734, {"difference": 0.81, "low": 0.2, "high": 1.4, "verdict": "beats"})
    assert table.loc["this run"].tolist() == ["98,304", "73%", "+0.81 [+0.20, +1.40]", "beats"]


def test_the_planted_summary_agrees_with_the_record(learn):
    summary = learning.planted_summary(learn, DEFAULT)
    rows = [r for r in learn["summary"] if r["select"] == "best" and r["learner"] in ("ppo", "a2c")
            and r["env_steps"] == r["run_steps"] == DEFAULT]
    assert len(summary) == len(rows) and set(summary["learner"]) == {"ppo", "a2c"}
    planted = summary[summary["family"] != "none"]
    undefined = sum(sum(v is None for v in r["captures"]) for r in rows if r["family"] != "none")
    assert int(planted["no capture"].sum()) == undefined
    assert int(planted["markets (seeds)"].sum()) == sum(r["seeds"] for r in rows if r["family"] != "none")


def test_the_learn_method_block_says_where_the_markets_built_now_differ(learn):
    seed = next(c["seed"] for c in learn["cases"] if c["family"] == "factor" and c["algo"] == "ppo")
    case = next(c for c in learn["cases"] if c["family"] == "factor" and c["algo"] == "ppo" and c["seed"] == seed)
    same = {seed: {"record": (case["buy_and_hold_sharpe"], case["oracle_sharpe"]),
                   "now": (case["buy_and_hold_sharpe"], case["oracle_sharpe"])}}
    assert "the package as installed builds" not in str(learning.learn_method(learn, DEFAULT, same))
    moved = {seed: {"record": same[seed]["record"], "now": (case["buy_and_hold_sharpe"], case["oracle_sharpe"] + 0.1)}}
    note = str(learning.learn_method(learn, DEFAULT, moved))
    assert f"On the record's factor markets of seed {seed}, the test Sharpe" in note and "its comparisons hold" in note
    assert note.index("the package as installed builds") < note.index("To make its parts again")
    _clean(note)
    assert "The record bench_learn.json, made on" in note and "--out runs/bench_learn_ppo" in note
    named = str(learning.learn_method(learn, DEFAULT, record_name="x.json"))
    assert "The record x.json, made on" in named and "--out runs/x_ppo" in named


def test_ppo_and_a2c_are_paired_on_test_excess_over_every_planted_market_both_ran(learn):
    paired = learning.paired_excess(learn, "ppo", "a2c", DEFAULT)
    keys = {algo: {(c["family"], c["ic"], c.get("stocks", 10), c["seed"]) for c in learn["cases"]
                   if c["algo"] == algo and c["family"] != "none" and teaching._run_length(c, "best") == DEFAULT}
            for algo in ("ppo", "a2c")}
    assert len(paired) == len(keys["ppo"] & keys["a2c"]) and "none" not in set(paired["family"])
    assert np.allclose(paired["difference"], paired["ppo"] - paired["a2c"])
    test = learning.paired_test(paired["difference"])
    assert test["n"] == len(paired) and test["low"] < test["mean"] < test["high"]
    assert 0 <= test["p (Wilcoxon)"] <= 1 and test["positive"] == int((paired["difference"] > 0).sum())
    # a rank test: one huge difference weighs no more than the largest rank
    tail = learning.paired_test([0.1, 0.2, -0.1, 0.3, 0.15, 50.0])
    assert tail["p (Wilcoxon)"] == learning.paired_test([0.1, 0.2, -0.1, 0.3, 0.15, 0.4])["p (Wilcoxon)"]


def test_sb3_is_paired_with_our_ppo_on_the_very_market_its_case_records(learn):
    sb3_cases = [c for c in learn["cases"] if c.get("sb3") and c["family"] != "none"]
    steps = sb3_cases[0]["sb3"]["env_steps"]
    paired = learning.paired_excess(learn, "ppo", "sb3_ppo", steps, "last")
    assert len(paired) == len(sb3_cases) > 0
    for case in sb3_cases:  # each row holds the SB3 excess stored in that market's own case
        row = paired[(paired["family"] == case["family"]) & (paired["market"] == case["seed"])].iloc[0]
        assert row["sb3_ppo"] == case["sb3"]["test_excess"]
        assert row["ppo"] == case["curve"]["last"][str(steps)]["test_excess"]
    assert learning.paired_excess(learn, "ppo", "sb3_ppo", steps + 1, "last").empty


def test_the_control_markets_read_each_records_noise_markets_at_one_budget(learn, learn_default):
    table = learning.control_markets({"plain": learn, "default": learn_default}, DEFAULT)
    for label, record in (("plain", learn), ("default", learn_default)):
        cases = [c for c in record["cases"] if c["family"] == "none" and teaching._run_length(c, "best") == DEFAULT]
        rows = table.xs(label, level="learner")
        assert len(rows) == len(cases) > 0
        for case in cases:
            row = rows.loc[(case["algo"], case["seed"])]
            chosen = case["curve"]["best"][str(DEFAULT)]
            assert row["agent excess"] == chosen["test_excess"] and row["chosen checkpoint"] == chosen["env_steps"]
            assert row["untrained excess"] == case["candidates"][0]["test_excess"] and case["candidates"][0]["env_steps"] == 0
            assert row["moved off the first"] == (row["chosen checkpoint"] != row["first checkpoint"] > 0)
    assert np.allclose(table["agent − untrained"], table["agent excess"] - table["untrained excess"])
    # a checkpoint kept at the first update trades as little as the untrained network: the rows that did not move
    still = table[~table["moved off the first"]]
    assert (abs(still["agent turnover"] - still["untrained turnover"]) < 0.02).all()
    assert len(learning.control_markets({"default": learn_default}, DEFAULT, learners=("a2c",))) == 3
    with pytest.raises(ValueError, match="no control-market run of 1 env-steps"):
        learning.control_markets({"plain": learn}, 1)
    page = learning.style_control_markets(table.assign(**{"agent excess": 0.01})).to_html()
    assert "+1.0%" in page and "first checkpoint" not in page and "chosen checkpoint" in page


def test_the_chosen_checkpoint_table_agrees_with_the_count(walkforward):
    """Each cell is the run's best validation; the first-validation cells are the count 1.10 states."""
    table = learning.walkforward_chosen_table(walkforward)
    chosen = teaching.walkforward_checkpoints(walkforward)
    assert table.size == chosen["runs"] == len(walkforward["runs"])
    first = f"{chosen['first_validation_env_steps']:,} (1st of "
    assert int(table.map(lambda cell: cell.startswith(first)).sum().sum()) == chosen["at_first_validation"]
    for (year, seed), steps in chosen["chosen"].items():
        assert table.loc[f"test {year}", f"seed {seed}"].startswith(f"{steps:,} (")


def test_the_deflation_against_buy_and_hold_shifts_only_the_null(sweep):
    """Under the null 0 the table gives the record's own DSR; under buy-and-hold's, SR0 moves by
    buy-and-hold's Sharpe exactly, and the DSR moves the other way."""
    table = learning.deflation_against_hold(sweep)
    assert len(table) == len(sweep["overfitting"])
    for entry, (_, row) in zip(sweep["overfitting"], table.iterrows()):
        hold = entry["buy_and_hold_valid_sharpe"]
        assert row["null 0: DSR"] == pytest.approx(entry["deflated"]["deflated_sharpe"])
        assert row["null 0: SR0"] == pytest.approx(entry["deflated"]["expected_max_sharpe"])
        assert row["chosen valid Sharpe"] == pytest.approx(entry["selected"]["valid_sharpe"])
        assert row["null buy-and-hold: SR0"] == pytest.approx(row["null 0: SR0"] + hold)
        assert (row["null buy-and-hold: DSR"] > row["null 0: DSR"]) == (hold < 0)
        assert row["null buy-and-hold: DSR, one trial per run"] >= row["null buy-and-hold: DSR"]


def test_the_deflated_sharpe_within_one_budget_reads_the_final_checkpoints(sweep):
    table = learning.fixed_budget_deflation(sweep)
    assert len(table) == len(sweep["overfitting"])
    for entry, (_, row) in zip(sweep["overfitting"], table.iterrows()):
        assert row["all checkpoints: DSR"] == entry["deflated"]["deflated_sharpe"]
        assert row["all checkpoints: trials"] == entry["trials"] and row["final checkpoints: trials"] == entry["runs"]
        seed = entry.get("market_seed")
        final = [r["evaluations"][-1]["valid_sharpe"] for r in sweep["runs"]
                 if r["market"] == entry["market"] and (seed is None or r["seed"] == seed)]
        assert row["final checkpoints: chosen"] == max(final)
        assert row["final checkpoints: V"] == pytest.approx(np.var(final, ddof=1))


def test_the_same_rule_chosen_by_both_windows_is_run_again_on_its_rebuilt_market():
    from finrl_tutorial.backtest import oracle
    from finrl_tutorial.envs import EnvConfig

    rule = next(r for r in oracle.informed_rules(10) if r.kind == "top_k")
    markets = [{"ic": 0.10, "stocks": 10, "seed": 0, "informed_rule": rule.name, "informed_test_excess": 0.1,
                "train_valid_rule": rule.name, "train_valid_test_excess": 0.2},
               {"ic": 0.10, "stocks": 10, "seed": 1, "informed_rule": rule.name, "informed_test_excess": 0.1,
                "train_valid_rule": "simple", "train_valid_test_excess": 0.2}]
    table = learning.same_rule_rerun({"oracles": {"markets": markets}, "cases": [{"days": 600}]}, EnvConfig())
    assert list(table.index) == [(0.10, 10, 0)] and table["kind"].tolist() == ["top_k"]
    assert table[["one-year column", "four-year column"]].values.tolist() == [[0.1, 0.2]]
    assert np.isfinite(table["now"]).all()


def test_the_walkforward_reading_and_its_method_block(walkforward):
    reading = learning.walkforward_reading(walkforward)
    years = walkforward["summary"]["years"]
    widths = [row["intervals"]["agent_vs_equal_weight"]["high"] - row["intervals"]["agent_vs_equal_weight"]["low"]
              for row in years]
    assert sorted(reading["widths"].values()) == pytest.approx(sorted(widths))
    pooled = walkforward["summary"]["pooled"]
    assert reading["pooled_days"] == pooled["days"] and reading["pooled"] == pooled["intervals"]["agent_vs_equal_weight"]
    assert reading["chosen"] == teaching.walkforward_checkpoints(walkforward)
    method = str(learning.walkforward_method(walkforward, reading, {"2019": 0.48}, 0.494, ("2019-01-02", "2020-01-03")))
    assert "--out runs/bench_walkforward.json" in method and "2019 +48.0%" in method and "+49.4%" in method
    assert not re.search(r"/tmp/", method)
    _clean(method)
    ran = sorted({run["env_steps"] for run in walkforward["runs"]})
    assert f"{walkforward['total_steps']:,} env-steps asked for per run ({ran[0]:,} run: a run stops at the last " \
           "whole iteration)" in method and ran == [299_008]
    # verdict fine print goes into the folded block, one paragraph after the record's
    folded = learning.walkforward_method(walkforward, reading, fine_print=["One claim.", "Another."])
    page = folded._repr_markdown_()
    assert "One claim. Another." in page and page.index("The record bench_walkforward") < page.index("One claim.")


def test_the_seeds_own_differences_average_to_each_interval_and_sit_beside_it(walkforward):
    reading = learning.walkforward_reading(walkforward)
    seeds = reading["seed_differences"]
    assert list(seeds) == list(reading["intervals"])
    for year, values in seeds.items():
        assert len(values) == len(walkforward["seeds"])
        assert abs(np.mean(values) - reading["intervals"][year]["difference"]) < 1e-9
    table = learning.with_seed_spread(teaching.walkforward_table(walkforward), reading)
    columns = list(table.columns)
    assert columns[columns.index("agent − buy-and-hold [95 %]") + 1] == "seeds' own differences"
    for (label, row), values in zip(table.iterrows(), seeds.values()):
        assert row["seeds' own differences"] == f"{min(values):+.2f} to {max(values):+.2f}", label


def test_the_two_level_intervals_resample_the_seeds_of_the_records_curves(walkforward):
    from finrl_tutorial.metrics import difference_verdict

    reading = learning.walkforward_reading(walkforward)
    two = learning.walkforward_two_level(walkforward)
    assert list(two) == list(reading["intervals"])
    for year, ci in two.items():
        days_only = reading["intervals"][year]
        assert ci["resampled"] == "seeds and days" and ci["curves"] == days_only["curves"] == len(walkforward["seeds"])
        assert ci["difference"] == pytest.approx(days_only["difference"], abs=1e-9) and ci["days"] == days_only["days"]
    # the seeds disagree most in 2019 (the seeds' own differences): that interval widens most
    grew = {k: (two[k]["high"] - two[k]["low"]) - (c["high"] - c["low"]) for k, c in reading["intervals"].items()}
    assert max(grew, key=grew.get) == "2019" and grew["2019"] > 0.1
    table = learning.with_two_level(learning.with_seed_spread(teaching.walkforward_table(walkforward), reading), two)
    columns = list(table.columns)
    assert columns[columns.index("agent verdict") + 1] == learning.TWO_LEVEL_COLUMN
    near = 0
    for (label, row), ci in zip(table.iterrows(), two.values()):
        # an end within 0.01 of the margin is printed to three decimals: the printed ends explain the verdict
        close = min(abs(abs(ci["low"]) - ci["margin"]), abs(abs(ci["high"]) - ci["margin"])) < 0.01
        near += close
        digits = 3 if close else 2
        expected = (f"[{ci['low']:+.{digits}f}, {ci['high']:+.{digits}f}] "
                    f"{difference_verdict(ci['low'], ci['high'], ci['margin'])}")
        assert row[learning.TWO_LEVEL_COLUMN] == expected, label
    assert near  # the record has such ends (2017 and pooled near -0.25)


def test_the_pooled_buy_and_hold_volatility_and_the_seeds_below_it(walkforward):
    from finrl_tutorial.bench.walkforward import chain
    from finrl_tutorial.metrics import annual_volatility

    reading = learning.walkforward_reading(walkforward)
    verdicts = teaching.walkforward_verdicts(walkforward)
    # the pooled buy-and-hold: the same curve in every seed's run, its test years chained
    for seed in walkforward["seeds"]:
        runs = sorted((run for run in walkforward["runs"] if run["seed"] == seed), key=lambda run: run["year"])
        curve = chain([pd.Series(run["test_wealth"]["equal_weight_buy_and_hold"],
                                 index=pd.DatetimeIndex(run["test_dates"])) for run in runs])
        assert annual_volatility(curve) == pytest.approx(reading["pooled_hold_volatility"])
    pooled = reading["seed_differences"]["pooled"]
    assert reading["seeds_below"] == sum(d < 0 for d in pooled) == len(pooled) == 3
    assert verdicts["pooled"] == "tie"


def test_ends_near_the_margin_say_whether_the_verdict_turns_on_them():
    intervals = {"A": {"low": -0.255, "high": 0.20}, "B": {"low": -0.247, "high": 0.31},
                 "C": {"low": -0.10, "high": 0.10}}
    verdicts = {"A": "inconclusive", "B": "inconclusive", "C": "tie"}
    near = learning.near_margin(intervals, verdicts, 0.25)
    assert [(n["name"], n["end"], n["beyond"], n["turns"]) for n in near] == [("A", "lower", True, True),
                                                                             ("B", "lower", False, False)]
    details = learning.margin_details(near, 0.25)
    assert len(details) == 3 and "-0.255, lies just beyond" in details[1] and "+0.310, lies beyond it" in details[2]
    assert learning.margin_details([], 0.25) == []
    # the box marks only the verdict that turns on such an end
    box = str(learning.edge_box(
        1_000, 0.5, {"difference": 0.1, "low": 0.05, "high": 0.2, "verdict": "beats"}, 0.4,
        pd.DataFrame({"signal-rule capture (pooled)": [1.2, 1.5]}), {"mean": 0.0, "low": -0.1, "high": 0.1, "n": 6},
        pd.DataFrame({"mean difference": [0.01, 0.02], "low": [0.0, 0.01], "high": [0.02, 0.03],
                      "markets": [9, 9], "verdict": ["beats", "inconclusive"]},
                     index=pd.MultiIndex.from_tuples([("ppo", "all families"), ("ppo", "factor")],
                                                     names=["learner", "family"])),
        {name: dict(ci, difference=0.0) for name, ci in intervals.items()}, verdicts, near, 0.25,
        pd.DataFrame(columns=["informed oracle captured (pooled)", "markets"],
                     index=pd.MultiIndex.from_tuples([], names=["ic", "stocks", "learner"])),
        pd.DataFrame(), seeds_below=(3, 3), walk_learner="default learner (x.json)"))
    assert "walk-forward, agent vs buy-and-hold, default learner (x.json)" in box and "plain learner (bench_walkforward" not in box
    assert box.count("fragile") == 1 and "A +0.00 [-0.26, +0.20] inconclusive (fragile" in box
    assert "pooled, 3 of 3 seeds below buy-and-hold" in box
    # the seeds-and-days intervals print as the walk-forward table's column does: three decimals at the margin
    two = {"2017": {"low": -0.2549, "high": 0.23}, "pooled": {"low": -0.2480, "high": 0.05}}
    box = str(learning.edge_box(
        1_000, 0.5, {"difference": 0.1, "low": 0.05, "high": 0.2, "verdict": "beats"}, 0.4,
        pd.DataFrame({"signal-rule capture (pooled)": [1.2, 1.5]}), {"mean": 0.0, "low": -0.1, "high": 0.1, "n": 6},
        pd.DataFrame({"mean difference": [0.01], "low": [0.0], "high": [0.02], "markets": [9], "verdict": ["beats"]},
                     index=pd.MultiIndex.from_tuples([("ppo", "all families")], names=["learner", "family"])),
        {}, {}, [], 0.25,
        pd.DataFrame(columns=["informed oracle captured (pooled)", "markets"],
                     index=pd.MultiIndex.from_tuples([], names=["ic", "stocks", "learner"])),
        pd.DataFrame(), two_level=two))
    assert "2017 [-0.255, +0.230] inconclusive, pooled [-0.248, +0.050] tie" in box


def test_a_planted_record_reads_as_two_rows_named_by_its_learner(learn):
    planted = learning.planted_summary(learn, DEFAULT)
    planted = planted[planted["family"] != "none"]
    ppo_vs_a2c = learning.paired_test(learning.paired_excess(learn, "ppo", "a2c", DEFAULT)["difference"])
    versus_rule = teaching.signal_rule_comparison(learn, run_steps=DEFAULT)
    rows = learning.planted_rows("some learner (x.json)", planted, ppo_vs_a2c, versus_rule)
    assert list(rows) == ["planted edges, PPO and A2C, some learner (x.json)",
                          "agent excess minus the signal rule's, per market, all signal families, some learner (x.json)"]
    first, second = rows.values()
    captures = planted["signal-rule capture (pooled)"]
    assert first.startswith(f"signal-rule capture (pooled) {captures.min():.2f}–{captures.max():.2f}; ")
    assert f"({ppo_vs_a2c['n']} markets, Wilcoxon p = " in first
    families = versus_rule.drop(index="all families", level="family")
    counts = families["verdict"].value_counts()
    assert all(f"{verdict} {n} of {len(families)}" in second for verdict, n in counts.items())
    assert second.count("markets: ") == len(versus_rule.xs("all families", level="family"))


# --------------------------------------------------------------------------- chapter 1.11: realistic strength, run longer

def test_the_budget_table_adds_the_four_year_rule_from_the_record(realistic):
    table = learning.budget_table(realistic, 0.05, 100)
    for row in realistic["summary"]:
        if row["select"] == "best" and row["ic"] == 0.05 and row["stocks"] == 100 and row["env_steps"] > 0:
            line = table.loc[(row["run_steps"], row["env_steps"])]
            assert line["chosen on 4 years: captured (pooled)"] == row["informed_train_valid_capture_pooled"]
            assert line["informed oracle captured (pooled)"] == row["informed_capture_pooled"]
    assert list(table.columns[:3]) == ["markets", "informed oracle captured (pooled)",
                                       "chosen on 4 years: captured (pooled)"]


@pytest.mark.parametrize("ic,stocks", [(0.05, 100), (0.03, 30)])
def test_the_budget_reading_picks_the_rows_its_text_reads(realistic, ic, stocks):
    table = learning.budget_table(realistic, ic, stocks)
    reading = learning.budget_reading(table, DEFAULT)
    assert reading["longest"] == 900_000 and reading["short"].name == DEFAULT
    assert reading["end"].equals(table.loc[900_000].iloc[-1]) and reading["short"].equals(table.loc[DEFAULT].iloc[-1])
    assert reading["at_default"].equals(table.loc[900_000].loc[DEFAULT])
    row = next(r for r in realistic["summary"] if r["select"] == "best" and r["ic"] == ic and r["stocks"] == stocks
               and r["run_steps"] == r["env_steps"] == 900_000)
    assert reading["end"]["informed oracle captured (pooled)"] == row["informed_capture_pooled"]
    assert reading["end"]["chosen on 4 years: captured (pooled)"] == row["informed_train_valid_capture_pooled"]


def test_the_ic_scale_comes_from_the_market_model_and_the_costs():
    from finrl_tutorial import EnvConfig, SyntheticSpec

    scale = learning.ic_scale((0.05, 0.03), EnvConfig())
    spec = SyntheticSpec()
    assert scale["noise"] == spec.noise_volatility
    for ic in (0.05, 0.03):
        assert scale["moves"][ic] == pytest.approx(SyntheticSpec(ic=ic).loading)
    # 2016 rates: commission both sides, stamp duty on the sale, transfer fee both sides, slippage both sides
    config = EnvConfig()
    round_trip = 2 * config.fees.commission_rate + 0.001 + 2 * 0.00002 + 2 * config.slippage
    assert scale["round_trip"] == pytest.approx(round_trip)
    assert scale["days"][0.05] == pytest.approx(round_trip / SyntheticSpec(ic=0.05).loading)


def test_the_realistic_provenance_counts_the_markets(realistic):
    provenance = learning.realistic_provenance(realistic)
    assert provenance["markets"].sum() == len(realistic["cases"])
    # two runs of one cell on other markets (seeds 100 on): each row counts its own run's markets only
    fresh = [{**case, "seed": case["seed"] + 100} for case in realistic["cases"]]
    rerun = [{**run, "command": run["command"] + " --first-seed 100", "arguments": {**run["arguments"], "first_seed": 100}}
             for run in realistic["runs"]]
    both = {**realistic, "cases": realistic["cases"] + fresh, "runs": realistic["runs"] + rerun}
    counted = learning.realistic_provenance(both)
    assert counted["markets"].sum() == len(both["cases"]) and (counted["markets"] == 5).all()
    method = learning.realistic_method(realistic, provenance)
    assert "beside other processes" in str(method) and "<table" in method._repr_markdown_()
    # the note says which cells the record holds, apart from the full grid its command line names
    cells = {(case["ic"], case["stocks"]) for case in realistic["cases"]}
    assert f"The record holds {len(cells)} cells" in str(method) and f"of which the record holds these {len(cells)} cells" in str(method)
    assert all(f"IC {ic:g} × {stocks} stocks" in str(method) for ic, stocks in cells)


# --------------------------------------------------------------------------- chapter 2: the knobs

def _timed(update: dict[str, float], rollout: dict[str, float]) -> pd.DataFrame:
    return pd.DataFrame([{"variant": name, "round": r, "rollout": rollout[name], "update": update[name] * (1 + r / 100)}
                         for r in range(2) for name in update])


VARIANTS = {"base": {}, "batch_size=256": {"batch_size": 256}, "repeat_times=16": {"repeat_times": 16},
            "batch_size=4096": {"batch_size": 4096}, "repeat_times=2": {"repeat_times": 2},
            "horizon_len=128": {"horizon_len": 128}}


def test_the_update_cost_table_reads_the_ratios_and_the_timing_noise():
    update = {"base": 1.0, "batch_size=256": 1.2, "repeat_times=16": 4.0, "batch_size=4096": 0.9,
              "repeat_times=2": 0.5, "horizon_len=128": 1.0}
    rollout = {name: 1.0 for name in update} | {"batch_size=256": 1.5}  # the same work: noise 1.5
    reading = learning.cost_reading(_timed(update, rollout))
    assert reading["noise"] == pytest.approx(1.5)
    table = learning.update_cost_table(reading, VARIANTS)
    steps = table["grad steps per sample ÷ base"]
    assert steps["repeat_times=16"] == 4 and steps["batch_size=256"] == 4 and steps["batch_size=4096"] == 0.25
    assert steps["repeat_times=2"] == 0.5 and steps["horizon_len=128"] == 1
    assert table.loc["repeat_times=16", "update cost ÷ base"] == pytest.approx(4.0)
    assert table["beyond the timing noise"].to_dict() == {"batch_size=256": "no", "repeat_times=16": "yes",
                                                          "batch_size=4096": "no", "repeat_times=2": "yes",
                                                          "horizon_len=128": "no"}
    trainer_base = pd.Series({"rollout": 1.0, "update": 3.0})
    timing = learning.timing_table(reading, trainer_base, "trainer.json")
    assert timing["this machine"].tolist() == ["50%", "1.50", "1.50 / 0.67"]
    assert timing["trainer record (chapter 8.4)"].tolist() == ["75%", "not timed", "not timed"]


def test_a_ratio_counts_as_beyond_the_noise_only_as_the_page_shows_both():
    """A ratio of 1.08 against a noise that rounds to 1.07 is beyond it; against one shown as 1.08 it is not."""
    assert learning._beyond_noise(1.0812, 1.0749) and not learning._beyond_noise(1.0812, 1.0801)
    assert learning._beyond_noise(0.90, 1.1) and not learning._beyond_noise(0.91, 1.1)  # 1 / 1.1 shows as 0.91


def test_the_curve_separations_count_the_validations_the_rule_separates(sweep):
    apart = learning.curve_separations(sweep)
    runs = [r for r in sweep["runs"] if r["market"] == "synthetic"]
    base = [r for r in runs if r["variant"] == "base"]
    wide = [r for r in runs if r["variant"] == "batch_size=4096"]
    below = [e["env_steps"] for i, e in enumerate(wide[0]["evaluations"])
             if verdict([r["evaluations"][i]["valid_sharpe"] for r in wide],
                        [r["evaluations"][i]["valid_sharpe"] for r in base]) == "lower"]
    row = apart.loc[("synthetic", "batch_size=4096")]
    assert (row["below"], row["above"], row["first"], row["last"]) == (len(below), 0, below[0], below[-1])
    assert row["validations"] == len(wide[0]["evaluations"])
    assert "base" not in apart.index.get_level_values("variant") and len(apart) == 12
    never = apart[(apart["above"] + apart["below"]) == 0]
    assert (never["first"] == 0).all() and (never["last"] == 0).all()


def test_the_sweep_effects_and_the_method_block_agree_with_the_sweep(sweep):
    effects = learning.sweep_effects(sweep)
    assert set(effects["called"].values()) == {"lower"} and len(effects["called"]) == 2
    method = str(learning.sweep_method(sweep, "bench_sweep.json", "runs/bench_sweep.json", live_hold=-0.57))
    recorded = next(r["buy_and_hold_valid_sharpe"] for r in sweep["summary"] if r["market"] == "sample")
    assert ("-0.57 on chapter 1's prices" in method) == (abs(recorded + 0.57) >= 0.005)
    assert "--out runs/bench_sweep.json`" in method and "): `python -m finrl_tutorial bench sweep" in method
    assert sweep["machine"]["platform"] not in method and "2 CPUs" in method
    if abs(recorded + 0.57) >= 0.005:  # said once, as a fact about the record, with what it means
        assert method.count("sizing of detected ex-days") == 1 and "predates" not in method
        assert "the comparisons among them share it" in method
        assert f"made on {sweep['date'][:10]} with the package of that day" in method
    # the synthetic markets: a note only where a seed's buy-and-hold differs from what the package builds now
    stored = {r["seed"]: r["buy_and_hold_valid_sharpe"] for r in sweep["runs"]
              if r["market"] == "synthetic" and r["variant"] == "base"}
    same = str(learning.sweep_method(sweep, "bench_sweep.json", "runs/bench_sweep.json", live_synthetic_holds=stored))
    assert "the package as installed builds these markets" not in same
    moved = {**stored, 1: stored[1] + 0.2}
    note = str(learning.sweep_method(sweep, "bench_sweep.json", "runs/bench_sweep.json", live_synthetic_holds=moved))
    assert "On its synthetic market of seed 1, buy-and-hold's" in note
    assert (f"{stored[1]:.3f} (seed 1) in the record, made with the package of {sweep['date'][:10]}; the package as installed "
            f"builds these markets with {stored[1] + 0.2:.3f}.") in note
    both = {**stored, 1: stored[1] + 0.2, 2: stored[2] + 0.1}
    assert "On its synthetic markets of seeds 1 and 2," in str(
        learning.sweep_method(sweep, "bench_sweep.json", "runs/bench_sweep.json", live_synthetic_holds=both))
    _clean(note)


def test_the_pbo_rows_hold_one_row_per_draw_and_family():
    examples = [teaching.pbo_example(seed=seed, days=250) for seed in range(3)]
    rows = learning.pbo_rows(examples)
    assert len(rows) == 6 and rows["family"].value_counts().to_dict() == {"noise": 3, "one edge": 3}
    assert rows["PBO"].between(0, 1).all() and "best of 20 by luck (expected)" in rows.columns


def test_the_kl_ratios_are_each_variant_over_the_base(sweep):
    runs = pd.DataFrame({"variant": ["base", "repeat_times=16"], "seed": [0, 0], "approx KL": [0.01, 0.05],
                         "clip fraction": [0.1, 0.3]}).set_index(["variant", "seed"])
    full_kl, live_kl = learning.kl_tables(sweep, runs)
    ratios = learning.kl_ratio_table(full_kl, live_kl, list(VARIANTS))
    assert ratios.loc["repeat_times=16", "live run"] == pytest.approx(5.0)
    sample = {r["variant"]: r["approx_kl_mean"] for r in sweep["summary"] if r["market"] == "sample"}
    assert ratios.loc["batch_size=256", "sample (full size)"] == pytest.approx(sample["batch_size=256"] / sample["base"])
    assert np.isnan(ratios.loc["batch_size=256", "live run"])


def test_the_cost_block_names_no_platform_string():
    import platform

    from finrl_tutorial.book import scale

    quiet = read_records(scale.SCALE_RECORD)
    trainer_base = learning.trainer_base_cost(quiet)
    per_10k = pd.DataFrame({"rollout": [1.0], "update": [1.0]}, index=["base"])
    method = str(learning.cost_method(0.5, 0.7, quiet, per_10k, trainer_base, 2, scale.SCALE_RECORD))
    row = next(r for r in quiet if r["layout"] == "trainer" and r["num_envs"] == 64)
    assert platform.platform() not in method and row["platform"] not in method
    assert f"torch {row['torch']}" in method and "load average 0.5 before the rounds" in method
    # the record's seconds against this run's: a gap inside 5 % is not called slower or faster
    assert "The record's absolute times are within 5 % of this run's" in learning._absolute_times(2.22, 2.21)
    assert "9 % slower than this run's" in learning._absolute_times(2.4, 2.2) and "faster" in learning._absolute_times(2.0, 2.2)


# --------------------------------------------------------------------------- chapter 7: your own data

def test_the_factor_reading_comes_from_the_record(factor):
    reading = learning.factor_reading(factor)
    assert reading["runs"] == len(factor["runs"]) and reading["below"] == reading["runs"]  # every run lost
    untrained = np.mean([r["untrained_valid_sharpe"] for r in factor["runs"] if r["variant"] == "with_factor"])
    assert reading["untrained"]["with_factor"] == pytest.approx(untrained)
    record = dict(factor, runs=[dict(run) for run in factor["runs"]])
    record["runs"][0]["final_valid_sharpe"] = record["runs"][0]["untrained_valid_sharpe"] + 0.1
    assert learning.factor_reading(record)["below"] == reading["runs"] - 1


def test_the_factor_tests_table_and_box_read_the_paired_tests(factor):
    tests = teaching.sweep_comparisons(factor)
    table = learning.factor_tests_table(tests, factor)
    assert list(table.index) == ["final validation Sharpe", "best validation Sharpe"]
    assert table["p (paired t)"].tolist() == tests["p (paired t)"].tolist()
    assert table.index.name == "with_factor − without_factor"
    method = str(learning.factor_method(factor))
    assert "--out runs/bench_factor.json`" in method and "/tmp/" not in method
    assert factor["machine"]["platform"] not in method


def test_broken_tables_break_one_thing_each():
    good = pd.DataFrame({"date": pd.date_range("2020-01-01", periods=12).strftime("%Y-%m-%d"), "tic": "600000.SH",
                         "open": 10.0, "high": 11.0, "low": 9.0, "close": 10.5, "volume": 1000.0})
    cases = learning.broken_tables(good)
    assert "volume" not in cases["a required column is missing"]
    assert cases["a date that is not a date"].loc[3, "date"] == "2016-13-45"
    assert cases["text in a price column"].loc[5, "close"] == "n/a"
    assert np.isnan(cases["a missing price"].loc[7, "open"]) and cases["a zero price"].loc[8, "low"] == 0
    assert cases["high below low"].loc[9, "high"] < cases["high below low"].loc[9, "low"]
    unit = cases["an optional column in the wrong unit"]
    assert (unit["amount"] / unit["volume"] == unit["close"] / 1000).all() and "amount" not in good
    assert len(cases["the same day twice"]) == 13 and set(cases["a stock with one bar"]["tic"]) == {"600000.SH",
                                                                                                  "600999.SH"}
    for name, frame in cases.items():  # the good table itself is untouched
        assert good.loc[9, "high"] == 11.0 and "volume" in good, name


# --------------------------------------------------------------------------- two learners on the same cells


def test_learner_comparison_sets_two_records_side_by_side_per_group_of_markets(realistic):
    table = learning.learner_comparison(realistic, realistic)
    pd.testing.assert_frame_equal(table.xs("plain", level="learner"), table.xs("default", level="learner"))
    assert "training seconds (mean)" not in table  # the records ran beside other work: no speed figure
    assert set(table.index.get_level_values("markets")) == {"0-4"}
    row = table.loc[(0.05, 30, "0-4", "plain")]
    summary = next(r for r in realistic["summary"] if r["ic"] == 0.05 and r["stocks"] == 30 and r["select"] == "best"
                   and r["env_steps"] == r["run_steps"] == 300_000 and r["learner"] == "ppo")
    assert row["agent excess (mean)"] == pytest.approx(summary["test_excess_mean"])
    assert row["chosen on 4 years: captured (pooled)"] == pytest.approx(summary["informed_train_valid_capture_pooled"])
    assert row["beats buy-and-hold"] == f"{summary['beats_buy_and_hold']} of 5"
    # markets from 100 on form a group of their own, not pooled with markets 0-4
    fresh = {**realistic, "cases": [{**c, "seed": c["seed"] + 100} for c in realistic["cases"]]}
    both = learning.learner_comparison(realistic, {**realistic, "cases": realistic["cases"] + fresh["cases"]})
    assert set(both.xs("default", level="learner").index.get_level_values("markets")) == {"0-4", "100-104"}


def test_learner_differences_pair_only_the_same_markets(realistic):
    same = learning.learner_differences(realistic, realistic)
    assert len(same) == 15 and (same["difference"] == 0).all()
    moved = {**realistic, "cases": [{**c, "seed": 100} if c["seed"] == 0 else c for c in realistic["cases"]]}
    paired = learning.learner_differences(realistic, moved)
    assert len(paired) == 12 and 0 not in set(paired["market"])


def test_learner_differences_keep_families_apart_and_leave_the_control_out(learn, learn_default):
    # the planted-edge records hold several families at one ic and seed: a family is part of the market
    paired = learning.learner_differences(learn, learn_default)
    planted = {(c["family"], c["seed"]) for c in learn_default["cases"]
               if c["algo"] == "ppo" and c["family"] != "none" and c["total_steps"] == DEFAULT}
    assert set(zip(paired["family"], paired["market"])) == planted and len(paired) == len(planted) == 20
    a2c = learning.learner_differences(learn, learn_default, algo="a2c")
    assert len(a2c) == 12 and np.allclose(a2c["difference"], a2c["default"] - a2c["plain"])


def test_run_length_differences_pair_each_market_with_itself_at_two_lengths(realistic):
    lengths = {c["total_steps"] for c in realistic["cases"]}
    assert {300_000, 900_000} <= lengths  # the plain learner's record holds both lengths of two cells
    paired = learning.run_length_differences(realistic["cases"], 300_000, 900_000)
    both = {(c["ic"], c["stocks"], c["seed"]) for c in realistic["cases"] if c["total_steps"] == 900_000}
    assert set(zip(paired["ic"], paired["stocks"], paired["market"])) == both and len(paired) == 10
    assert np.allclose(paired["difference"], paired["longer"] - paired["shorter"])
    case = next(c for c in realistic["cases"] if (c["ic"], c["stocks"], c["seed"], c["total_steps"]) == (0.03, 30, 2, 900_000))
    row = paired[(paired["ic"] == 0.03) & (paired["market"] == 2)].iloc[0]
    assert row["longer"] == case["curve"]["best"]["900000"]["test_excess"]
    # a market run at one length only is left out
    fewer = [c for c in realistic["cases"] if not (c["seed"] == 0 and c["total_steps"] == 900_000)]
    assert len(learning.run_length_differences(fewer, 300_000, 900_000)) == 8


def test_the_ablation_table_pairs_each_ablated_learner_with_the_default_on_its_markets(realistic):
    cells = [c for c in realistic["cases"] if c["ic"] == 0.05 and c["stocks"] == 100 and c["seed"] < 3]
    ablated = []
    for field, value, shift in (("pathwise", False, 0.05), ("gae_lambda", 0.95, -0.01)):
        for case in cells:
            curve = {select: {budget: {**point, "test_excess": point["test_excess"] - shift}
                              for budget, point in points.items()} for select, points in case["curve"].items()}
            ablated.append({**case, "config": {"algo": "ppo", field: value}, "curve": curve})
    table = learning.ablation_table(realistic, {"cases": ablated})
    assert list(table.index) == ["default learner", learning.ABLATION_LABELS["pathwise"],
                                 learning.ABLATION_LABELS["gae_lambda"]]
    assert (table["markets"] == "0-2").all()  # only the markets the ablation ran, for the default too (a run as a range)
    without = table.loc[learning.ABLATION_LABELS["pathwise"]]
    assert without["default − this (mean)"] == pytest.approx(0.05) and without["default ahead on"] == "3 of 3"
    assert without["low"] == pytest.approx(0.05) == pytest.approx(without["high"])  # equal differences: no spread
    behind = table.loc[learning.ABLATION_LABELS["gae_lambda"]]
    assert behind["default − this (mean)"] == pytest.approx(-0.01) and behind["default ahead on"] == "0 of 3"
    default = table.loc["default learner"]
    assert default["agent excess (mean)"] - without["agent excess (mean)"] == pytest.approx(0.05)
    assert pd.isna(default["default − this (mean)"])
    assert "—" not in learning.style_ablation(table).to_html()


def test_the_ablation_table_tests_each_change_and_corrects_for_the_rows(realistic):
    cells = [c for c in realistic["cases"] if c["ic"] == 0.05 and c["stocks"] == 100 and c["total_steps"] == 300_000]
    ablated = []
    for field, value, shifts in (("pathwise", False, (0.10, 0.12, 0.08, 0.11, 0.09)), ("gae_lambda", 0.95, (0.02, -0.03, 0.01, -0.02, 0.01))):
        for case, shift in zip(cells, shifts):
            curve = {select: {budget: {**point, "test_excess": point["test_excess"] - shift}
                              for budget, point in points.items()} for select, points in case["curve"].items()}
            ablated.append({**case, "config": {"algo": "ppo", field: value}, "curve": curve})
    table = learning.ablation_table(realistic, {"cases": ablated})
    clear, unclear = (table.loc[learning.ABLATION_LABELS[k]] for k in ("pathwise", "gae_lambda"))
    expected = [learning.paired_test(list(s))["p (t)"] for s in ((0.10, 0.12, 0.08, 0.11, 0.09), (0.02, -0.03, 0.01, -0.02, 0.01))]
    assert [clear["p (t)"], unclear["p (t)"]] == pytest.approx(expected)
    assert clear["p (t)"] < 0.001 and unclear["p (t)"] > 0.5
    # Holm over the two ablated rows: the smaller p doubled, the larger kept (never below the smaller's)
    assert clear["p (Holm)"] == pytest.approx(2 * clear["p (t)"]) and unclear["p (Holm)"] == pytest.approx(unclear["p (t)"])
    assert pd.isna(table.loc["default learner", "p (Holm)"])
    html = learning.style_ablation(table).to_html()
    assert "95 % interval" in html and f"[{100 * clear['low']:+.1f}, {100 * clear['high']:+.1f}]" in html
    assert "default − this (mean, points)" in html  # a difference of two returns is in percentage points


# --------------------------------------------------------------------------- which learner a record ran


def test_a_plain_record_is_rerun_with_the_plain_learners_settings():
    walk = read_records("bench_walkforward.json")[0]
    assert teaching.ran_plain_learner(walk) and not teaching.ran_plain_learner(read_records("bench_walkforward_pathwise.json")[0])
    # a stored config decides over the date
    assert not teaching.ran_plain_learner({"date": "2020-01-01", "config": {"pathwise": True, "market_baseline": True}})
    assert teaching.ran_plain_learner({"date": "2030-01-01", "config": {"pathwise": False, "market_baseline": False}})
    command = teaching.reader_command(walk["command"], "runs/wf.json", plain=True)
    assert command.endswith("--set gae_lambda=0.95 market_baseline=false pathwise=false --out runs/wf.json")
    assert teaching.reader_command(walk["command"], "runs/wf.json") == command.replace(
        " --set gae_lambda=0.95 market_baseline=false pathwise=false", "")
    a2c = teaching.reader_command("python -m finrl_tutorial bench learn --algos a2c --seeds 3", plain=True)
    assert a2c.endswith("--set market_baseline=false pathwise=false")  # A2C keeps its own lambda in both learners
    train = teaching.reader_command("python -m finrl_tutorial train --seeds 5", plain=True)
    assert train.endswith("--gae-lambda 0.95 --no-market-baseline --no-pathwise")
    assert teaching.reader_command("python -m finrl_tutorial bench scale", plain=True) == "python -m finrl_tutorial bench scale"
    # the page's block says it
    method = str(learning.walkforward_method(walk, learning.walkforward_reading(walk), {}, 0.0, ("2019-01-02", "2020-01-03")))
    assert "--set gae_lambda=0.95 market_baseline=false pathwise=false" in method


def test_the_default_learners_rows_read_its_three_records():
    realistic, pathwise = read_records("bench_learn_realistic.json")[0], read_records("bench_learn_pathwise.json")[0]
    walk, job = read_records("bench_walkforward_pathwise.json")[0], read_records("main_job_pathwise_5seeds_report.json")[0]
    comparison = learning.learner_comparison(realistic, pathwise, cells=((0.05, 30), (0.05, 100)))
    paired = learning.paired_test(learning.learner_differences(realistic, pathwise)["difference"])
    rows = learning.default_learner_rows(job, comparison, paired)
    assert len(rows) == 3 and all("default" in name for name in rows)
    assert rows["default learner, the sample's test split, five seeds (main_job_pathwise_5seeds_report.json)"].endswith("tie")
    walked = learning.walkforward_row("walk", learning.walkforward_reading(walk)["intervals"], teaching.walkforward_verdicts(walk))
    assert walked["walk"].startswith("2017 -0.54 [-1.11, -0.04] loses,") and walked["walk"].endswith("inconclusive")
    # with the two-level intervals, a verdict that does not survive the seeds' resampling says so beside it
    walked = learning.walkforward_row("walk", learning.walkforward_reading(walk)["intervals"], teaching.walkforward_verdicts(walk),
                                      margin=0.25, two_level=learning.walkforward_two_level(walk))
    assert walked["walk"].startswith("2017 -0.54 [-1.11, -0.04] loses (with the seeds resampled too: inconclusive), 2018")
    assert walked["walk"].count("resampled") == 1  # 2018, 2019 and pooled keep their verdicts
    captured = rows["default learner, informed-oracle capture, pooled (bench_learn_pathwise.json)"]
    assert "IC 0.05 × 100 (markets 100-104): 0.51, beats buy-and-hold on 5 of 5" in captured
    assert "IC 0.03" not in captured  # only the cells asked for
    assert rows["default minus plain learner, test excess, the markets both ran"].startswith("+9.7 points [+2.8, +16.6] (15 markets")


def test_the_signal_rule_table_shows_each_interval_as_one_column(learn):
    table = teaching.signal_rule_comparison(learn, run_steps=DEFAULT)
    shown = learning.style_signal_rule(table).data
    assert "low" not in shown and "high" not in shown and list(shown.index) == list(table.index)
    assert list(shown.columns).index("95 % interval") == list(shown.columns).index("mean difference (points)") + 1
    first = table.iloc[0]
    assert shown["95 % interval"].iloc[0] == f"[{100 * first['low']:+.1f}, {100 * first['high']:+.1f}]"


def test_the_pooled_capture_interval_resamples_markets():
    def case(seed, agent, oracle):
        return {"seed": seed, "algo": "ppo", "total_steps": 300_000, "curve": {"best": {"300000": {"test_excess": agent}}},
                "informed_oracle": {"test_excess": oracle}}

    same = learning.pooled_capture_interval([case(s, 0.1, 0.2) for s in range(5)], 300_000)
    assert same["pooled"] == pytest.approx(0.5) and same["low"] == pytest.approx(0.5) == pytest.approx(same["high"])
    spread = learning.pooled_capture_interval([case(s, 0.05 * s, 0.2) for s in range(5)], 300_000)
    assert spread["low"] < spread["pooled"] < spread["high"] and spread["pooled"] == pytest.approx(0.5) and spread["markets"] == 5
    assert learning.pooled_capture_interval([case(s, 0.05 * s, 0.2) for s in range(5)], 300_000) == spread  # seeded
    # an oracle that lost on most markets leaves most draws without a capture: no interval
    lost = learning.pooled_capture_interval([case(s, 0.1, -0.3 if s < 3 else 0.2) for s in range(5)], 300_000)
    assert lost["low"] is None and lost["high"] is None and lost["pooled"] is None and lost["undefined_share"] > 0.5
    with pytest.raises(ValueError, match="no ppo runs"):
        learning.pooled_capture_interval([case(0, 0.1, 0.2)], 600_000)


def test_the_pooled_capture_interval_agrees_with_the_records_summary():
    pathwise = read_records("bench_learn_pathwise.json")[0]
    unseen = [c for c in pathwise["cases"] if c["stocks"] == 100 and c["seed"] >= 100]
    interval = learning.pooled_capture_interval(unseen, 300_000)
    from finrl_tutorial.bench.learn import summarize

    row = next(r for r in summarize(unseen) if r["select"] == "best" and r["env_steps"] == 300_000)
    assert interval["pooled"] == pytest.approx(row["informed_capture_pooled"])
    assert interval["low"] < interval["pooled"] < interval["high"]


# --------------------------------------------------------------------------- chapter 1, third page: the changes

def test_ablation_tests_read_each_change_as_the_table_does(realistic):
    pathwise, ablation = read_records("bench_learn_pathwise.json")[0], read_records("bench_learn_ablation.json")[0]
    tests = learning.ablation_tests(pathwise, ablation)
    table = learning.ablation_table(pathwise, ablation)
    assert set(tests) == set(table.index) - {"default learner"}
    for label, test in tests.items():
        assert test["mean"] == pytest.approx(table.loc[label, "default − this (mean)"])
        assert test["p (t)"] == pytest.approx(table.loc[label, "p (t)"]) and test["n"] == 3


def test_difference_rows_and_the_changes_box_name_every_comparison():
    tests = {"a": {"mean": 0.1, "low": 0.05, "high": 0.15, "n": 5, "positive": 5, "p (t)": 0.0004},
             "b": {"mean": 0.01, "low": -0.02, "high": 0.04, "n": 3, "positive": 2, "p (t)": 0.41}}
    rows = learning.difference_rows(tests)
    assert rows["a"] == "+10.0 points [+5.0, +15.0] (5 markets, ahead on 5, p (t) < 0.001)"
    assert rows["b"].endswith("(3 markets, ahead on 2, p (t) = 0.410)")
    box = str(learning.changes_box(pd.Series({10: 0.23, 100: 0.06}), tests, {"plain row": "x"}))
    assert "23% of 10, 6% of 100" in box and "plain row" in box and "+10.0 points [+5.0, +15.0]" in box


def test_plot_differences_fills_only_rows_that_survive_holm_over_the_figure():
    # "clear" survives Holm over three rows (0.0004 x 3); "uncorrected" has an interval that excludes 0
    # and p 0.03, which Holm raises to 0.06; "around zero" holds 0
    tests = {"clear": {"mean": 0.1, "low": 0.05, "high": 0.15, "n": 5, "positive": 5, "p (t)": 0.0004},
             "uncorrected": {"mean": 0.05, "low": 0.01, "high": 0.09, "n": 5, "positive": 4, "p (t)": 0.03},
             "around zero": {"mean": 0.01, "low": -0.02, "high": 0.04, "n": 3, "positive": 2, "p (t)": 0.41}}
    fig, ax = plt.subplots()
    adjusted = learning.plot_differences(tests, ax)
    assert [f"{v:.4f}" for v in adjusted] == ["0.0012", "0.0600", "0.4100"]
    labels = [tick.get_text() for tick in ax.get_yticklabels()]
    ticks = dict(zip(labels, ax.get_yticks()))
    assert ticks == {"clear\n(5 markets, ahead on 5, Holm p 0.001)": 2,  # first on top
                     "uncorrected\n(5 markets, ahead on 4, Holm p 0.060)": 1,
                     "around zero\n(3 markets, ahead on 2, Holm p 0.410)": 0}
    markers = {(line.get_color(), line.get_markerfacecolor(), tuple(line.get_ydata()))
               for line in ax.get_lines() if line.get_marker() == "o"}
    assert markers == {("tab:blue", "tab:blue", (2,)), ("tab:blue", "white", (1,)), ("tab:grey", "tab:grey", (0,))}
    assert len(ax.get_legend().get_texts()) == 3
    plt.close(fig)


def test_the_edge_box_names_its_planted_learner_and_can_leave_the_realistic_row_out(learn):
    planted = learning.planted_summary(learn, DEFAULT)
    planted = planted[planted["family"] != "none"]
    ppo_vs_a2c = learning.paired_test(learning.paired_excess(learn, "ppo", "a2c", DEFAULT)["difference"])
    versus_rule = teaching.signal_rule_comparison(learn, run_steps=DEFAULT)
    box = str(learning.edge_box(1_000, 0.5, {"difference": 0.1, "low": 0.05, "high": 0.2, "verdict": "beats"}, 0.4,
                                planted, ppo_vs_a2c, versus_rule, {}, {}, [], 0.25, None, None,
                                planted_label="some learner (x.json)"))
    assert "planted edges, PPO and A2C, some learner (x.json)" in box and "realistic strength" not in box
    called = int((versus_rule.drop(index="all families", level="family")["verdict"] != "inconclusive").sum())
    assert ("no single family does after Holm" in box) == (called == 0)


def test_the_provenance_of_an_ablation_counts_each_override_s_markets():
    ablation = read_records("bench_learn_ablation.json")[0]
    table = learning.realistic_provenance(ablation)
    assert sorted(table["--set"]) == ["gae_lambda=0.95", "market_baseline=false", "pathwise=false"]
    assert (table["markets"] == 3).all()  # three markets per override, not the record's nine runs
    assert "--set" not in learning.realistic_provenance(read_records("bench_learn_realistic.json")[0])


def test_same_markets_finds_a_market_built_differently():
    case = {"family": "factor", "ic": 0.05, "stocks": 30, "seed": 0, "buy_and_hold_sharpe": 0.4, "oracle_sharpe": 1.1}
    other = dict(case, seed=1)
    assert learning.same_markets({"cases": [case, other]}, {"cases": [case]}) == {"shared": 1, "differing": []}
    moved = dict(case, buy_and_hold_sharpe=0.41)
    assert learning.same_markets({"cases": [case]}, {"cases": [moved]})["differing"] == [
        (("factor", 0.05, 30, 0), (0.4, 1.1), (0.41, 1.1))]
    # the recorded pairs the chapter reads ran the same markets
    for plain, default in (("bench_learn.json", "bench_learn_default.json"),
                           ("bench_learn_realistic.json", "bench_learn_pathwise.json")):
        assert learning.same_markets(read_records(plain)[0], read_records(default)[0])["differing"] == []


def test_realistic_rows_and_the_plain_records_box_name_every_cell_and_longer_run():
    cells = pd.DataFrame([{"ic": 0.05, "stocks": 100, "learner": "ppo", "markets": 5, "env-steps": 300_000,
                           "informed oracle captured (pooled)": 0.014, "beats buy-and-hold": "0 of 5"}]
                         ).set_index(["ic", "stocks", "learner"])
    longer = {(0.05, 100): {"longest": 900_000, "end": pd.Series({"informed oracle captured (pooled)": 0.356,
                                                                 "beats buy-and-hold": "5 of 5"})}}
    rows = learning.realistic_rows("plain (x.json)", cells, longer)
    assert rows == {
        "IC 0.05 × 100 stocks, 5 markets, 300,000 env-steps, plain (x.json)":
            "informed-oracle capture (pooled) 0.01; beats buy-and-hold on 0 of 5",
        "IC 0.05 × 100 stocks, run to 900,000 env-steps, plain (x.json)":
            "informed-oracle capture (pooled) 0.36; beats buy-and-hold on 5 of 5"}
    box = str(learning.plain_records_box(rows))
    assert "run to 900,000 env-steps" in box and "0.36" in box and "What this page read" in box


def _network_case(stocks, seed, steps, excess, seconds, overrides=None):
    """A `bench learn` case as `network_comparison` reads it: its market, length, config and test excess."""
    return {"family": "factor", "ic": 0.05, "stocks": stocks, "seed": seed, "algo": "ppo", "total_steps": steps,
            "train_seconds": seconds, "config": {"algo": "ppo", **(overrides or {})},
            "curve": {"best": {str(steps): {"test_excess": excess}}}}


def test_a_cheaper_network_is_read_against_the_default_on_its_own_markets():
    small = {"hidden_sizes": [32]}
    cases = [_network_case(30, seed, 300_000, 0.20 + 0.01 * seed, 100.0) for seed in range(4)]
    cases += [_network_case(30, seed, 300_000, 0.10 + 0.01 * seed + 0.002 * (-1) ** seed, 40.0, small)
              for seed in range(4)]
    cases += [_network_case(30, seed, 900_000, 0.20 + 0.01 * seed + 0.003 * (-1) ** seed, 110.0, small)
              for seed in range(3)]  # no run of market 3 at this length
    cases += [_network_case(30, 9, 300_000, 0.5, 10.0, {"hidden_sizes": [16]})]  # another candidate: not read
    per_step = learning.network_comparison({"cases": cases}, small)
    assert list(per_step["rows"]["market"]) == [0, 1, 2, 3] and per_step["test"]["n"] == 4
    assert per_step["test"]["mean"] == pytest.approx(-0.10) and per_step["test"]["high"] < 0
    assert per_step["verdict"] == "falls behind" and per_step["time_ratio"] == pytest.approx(0.4)
    same_time = learning.network_comparison({"cases": cases}, small, candidate_steps=900_000)
    assert list(same_time["rows"]["market"]) == [0, 1, 2]  # only the markets both lengths ran
    assert same_time["verdict"] == "keeps up" and same_time["time_ratio"] == pytest.approx(1.1)
    assert learning.non_inferiority({"low": -0.08, "high": 0.02}, margin=0.05) == "inconclusive"
    with pytest.raises(ValueError, match="fewer than two markets"):
        learning.network_comparison({"cases": cases}, {"hidden_sizes": [8]})
    table = learning.network_table({"cases": cases}, small, [(300_000, 300_000), (300_000, 900_000)])
    assert list(table.index) == ["300,000 vs 300,000 env-steps", "900,000 vs 300,000 env-steps"]
    assert list(table["verdict"]) == ["falls behind", "keeps up"] and list(table["ahead"]) == ["0 of 4", "2 of 3"]


def test_plot_kl_draws_every_bar_on_a_log_scale_and_marks_a_zero_it_cannot_draw():
    import matplotlib.pyplot as plt

    from finrl_tutorial.book.learning import plot_kl

    full_kl = pd.DataFrame({"market": ["sample", "sample"], "variant": ["base", "repeat_times=2"],
                            "approx KL": [1e-4, 1e-5], "clip fraction": [1e-3, 0.0]}).set_index(["market", "variant"])
    live_kl = pd.DataFrame({"approx KL": [4e-4], "clip fraction": [0.0]}, index=pd.Index(["base"], name="variant"))
    fig, axes = plt.subplots(1, 2)
    plot_kl(axes, full_kl, live_kl, ["base", "repeat_times=2"], {"config": {"gae_lambda": 0.95}})
    assert all(ax.get_xscale() == "log" for ax in axes) and len(axes[0].patches) == 3
    assert [t.get_text() for t in axes[1].texts] == [" 0", " 0"] and not axes[0].texts  # the two zero clip fractions
    assert [t.get_text() for t in axes[0].get_yticklabels()] == ["base (live)", "base (sample)", "repeat_times=2 (sample)"]
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert legend[0] == "live runs (default learner)" and legend[1].startswith("sample: record")
    plt.close(fig)
