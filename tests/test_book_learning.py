"""The readings of the chapters on learning (`finrl_tutorial.book.learning`: chapter 1's second page,
chapters 2 and 7) say what their records say.

Each sentence is checked against the number computed from the committed record (or from a small
hand-made one where a branch needs it): the captures against the informed oracle chosen on
validation and against the rule chosen on four years, with the markets and their spread; verdicts
that are ties only where the record's interval lies inside the margin; every multiplier naming its
baseline; and no sentence speaking of how the project is made. No timing here.
"""
from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from finrl_tutorial.agents import PPOConfig
from finrl_tutorial.bench.sweep import verdict
from finrl_tutorial.book import learning, read_records, teaching

DEFAULT = PPOConfig().total_steps


def _text(markdown) -> str:
    """The text of a `Markdown` (or the string itself outside IPython)."""
    return getattr(markdown, "data", markdown)


def _numbers(text: str) -> list[str]:
    return re.findall(r"[-+]?\d[\d,]*\.?\d*", text)


@pytest.fixture(scope="module")
def learn():
    return read_records("bench_learn.json")[0]


@pytest.fixture(scope="module")
def realistic():
    return read_records("bench_learn_realistic.json")[0]


@pytest.fixture(scope="module")
def walkforward():
    return read_records("bench_walkforward.json")[0]


@pytest.fixture(scope="module")
def sweep():
    return read_records("bench_sweep.json")[0]


@pytest.fixture(scope="module")
def factor():
    return read_records("bench_factor.json")[0]


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

def test_the_bridge_reads_the_five_seed_report():
    main_job = read_records("main_job_5seeds_report.json")[0]
    text = _text(learning.bridge_text(main_job))
    versus = main_job["sharpe_vs_buy_and_hold"]
    assert f"**{versus['difference']:+.2f}** [{versus['low']:+.2f}, {versus['high']:+.2f}]: {versus['verdict']}" in text
    seeds = [row["sharpe_ratio"] for row in main_job["agent_per_seed"].values()]
    untrained = main_job["baselines"]["untrained_agent"]["sharpe_ratio"]
    assert f"{sum(s <= untrained for s in seeds)} of the {len(seeds)} trained seeds" in text
    # an inconclusive interval whose end lies just beyond the margin says so: it is no tie
    assert versus["verdict"] == "inconclusive" and "beyond the tie margin" in text
    # the interval counts the days, not the spread between seeds: the seeds' own differences stand beside it
    hold = main_job["baselines"]["equal_weight_buy_and_hold"]["sharpe_ratio"]
    own = [s - hold for s in seeds]
    assert "not the spread between seeds" in text and f"run from {min(own):+.2f} to {max(own):+.2f}" in text
    assert f"{sum(d < 0 for d in own)} of the {len(seeds)} seeds ended below buy-and-hold." in text  # all 5 here
    assert all(d < 0 for d in own)
    assert abs(sum(own) / len(own) - versus["difference"]) < 1e-6  # their mean is the interval's statistic
    _clean(text)
    # the verdict comes from the bounds, not the stored string: an interval inside the margin is a tie
    inside = dict(main_job, sharpe_vs_buy_and_hold=dict(versus, low=-0.2, high=0.1, verdict="inconclusive"))
    assert "[-0.20, +0.10]: tie (the whole interval lies within the tie margin" in _text(learning.bridge_text(inside))


def test_the_planted_summary_and_its_sentence_agree_with_the_record(learn):
    summary = learning.planted_summary(learn, DEFAULT)
    rows = [r for r in learn["summary"] if r["select"] == "best" and r["learner"] in ("ppo", "a2c")
            and r["env_steps"] == r["run_steps"] == DEFAULT]
    assert len(summary) == len(rows) and set(summary["learner"]) == {"ppo", "a2c"}
    text = _text(learning.planted_summary_text(summary))
    planted = summary[summary["family"] != "none"]
    low, high = planted["captured (pooled)"].min(), planted["captured (pooled)"].max()
    assert f"**{low:.2f} to {high:.2f} times** the signal rule's excess" in text
    undefined = sum(sum(v is None for v in r["captures"]) for r in rows if r["family"] != "none")
    markets = sum(r["seeds"] for r in rows if r["family"] != "none")
    assert f"On {undefined} of the {markets} planted-edge runs" in text
    _clean(text)


def test_ppo_against_a2c_names_its_pairs_and_reads_its_interval(learn):
    pair = (("ppo", DEFAULT, "best"), ("a2c", DEFAULT, "best"))
    paired, gaps = teaching.paired_captures(learn, *pair), teaching.capture_gaps(learn, *pair)
    interval = teaching.t_interval(paired["difference"])
    text = _text(learning.learner_pair_text(interval, paired, gaps))
    assert f"on the {interval['n']} markets both ran" in text
    assert f"{interval['mean']:+.2f} [{interval['low']:+.2f}, {interval['high']:+.2f}]" in text
    assert interval["low"] < 0 < interval["high"] and "do not separate the two" in text
    assert f"{len(gaps)} pairs both ran have no capture" in text
    # an interval that excludes 0 is not read as "do not separate"
    apart = dict(interval, low=0.1, high=0.5)
    assert "do not separate" not in _text(learning.learner_pair_text(apart, paired, gaps.iloc[:1]))


def test_the_signal_rule_sentence_follows_the_verdicts_of_its_table(learn):
    table = teaching.signal_rule_comparison(learn, run_steps=DEFAULT)
    text = _text(learning.signal_rule_text(table))
    pooled = table.xs("all families", level="family")
    for learner, row in pooled.iterrows():
        assert f"{learner.upper()} beats the signal rule by {row['mean difference']:+.1%} per market " \
               f"({row['markets']} markets)" in text
    per_family = table.drop(index="all families", level="family")
    excluded = int(((per_family["low"] > 0) | (per_family["high"] < 0)).sum())
    assert f"excludes 0 in {excluded} of {len(per_family)} cells" in text
    assert f"({per_family['markets'].min()} to {per_family['markets'].max()} markets)" in text
    assert "no verdict survives Holm's correction" in text
    called = table.copy()
    called.loc[per_family.index[0], "verdict"] = "beats"
    assert "1 of the 8 verdicts survive" in _text(learning.signal_rule_text(called))


def test_the_walkforward_sentence_reads_the_widths_and_the_checkpoints(walkforward):
    reading = learning.walkforward_reading(walkforward)
    years = walkforward["summary"]["years"]
    widths = [row["intervals"]["agent_vs_equal_weight"]["high"] - row["intervals"]["agent_vs_equal_weight"]["low"]
              for row in years]
    text = _text(learning.walkforward_text(reading))
    assert f"{min(widths):.2f} to {max(widths):.2f} Sharpe units" in text
    pooled = walkforward["summary"]["pooled"]
    ci = pooled["intervals"]["agent_vs_equal_weight"]
    assert f"pooled over {pooled['days']} days it narrows to {ci['high'] - ci['low']:.2f}" in text
    chosen = teaching.walkforward_checkpoints(walkforward)
    assert f"in {chosen['at_first_validation']} of the {chosen['runs']} runs" in text
    method = str(learning.walkforward_method(walkforward, reading, {"2019": 0.48}, 0.494, ("2019-01-02", "2020-01-03")))
    assert "--out runs/bench_walkforward.json" in method and "2019 +48.0%" in method and "+49.4%" in method
    assert not re.search(r"/tmp/", method)
    ran = sorted({run["env_steps"] for run in walkforward["runs"]})
    assert f"{walkforward['total_steps']:,} env-steps asked for per run ({ran[0]:,} run: a run stops at the last " \
           "whole iteration)" in method and ran == [299_008]
    # what the intervals count, beside the seeds' own spread (the widest year, and pooled)
    seeds = reading["seed_differences"]
    spread = {year: max(v) - min(v) for year, v in seeds.items() if year != "pooled"}
    widest = max(spread, key=spread.get)
    assert "counts the noise of the days, not the spread between seeds" in text
    assert f"up to {spread[widest]:.2f} Sharpe units within one year ({widest})" in text
    assert f"pooled from {min(seeds['pooled']):+.2f} to {max(seeds['pooled']):+.2f}" in text
    _clean(text)
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


def test_the_pooled_tie_is_read_in_return_a_year_beside_the_seeds_below_buy_and_hold(walkforward):
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
    near = learning.near_margin(reading["intervals"], verdicts, 0.25)
    text = _text(learning.walkforward_verdict_text(walkforward, reading, verdicts, 0.25, near))
    in_return = 0.25 * reading["pooled_hold_volatility"]
    assert verdicts["pooled"] == "tie" and "a tie" in text
    assert f"not distinguishable at about ±{100 * in_return:.0f} % of return a year" in text
    assert "3 of the 3 seeds ended below buy-and-hold, pooled" in text
    assert "a rising one (2017), a falling one (2018) and a rising one (2019)" in text
    assert "Every interval contains 0." in text
    _clean(text)
    # not a tie: no margin in return is claimed
    other = dict(verdicts, pooled="inconclusive")
    assert "not distinguishable" not in _text(learning.walkforward_verdict_text(walkforward, reading, other, 0.25))


def test_ends_near_the_margin_say_in_one_sentence_a_year_whether_the_verdict_turns_on_them():
    intervals = {"A": {"low": -0.255, "high": 0.20}, "B": {"low": -0.247, "high": 0.31},
                 "C": {"low": -0.10, "high": 0.10}}
    verdicts = {"A": "inconclusive", "B": "inconclusive", "C": "tie"}
    near = learning.near_margin(intervals, verdicts, 0.25)
    assert [(n["name"], n["end"], n["beyond"], n["turns"]) for n in near] == [("A", "lower", True, True),
                                                                             ("B", "lower", False, False)]
    sentences = learning.fragile_sentences(near, verdicts)
    assert sentences == ["A's verdict (inconclusive) is fragile: it turns on an end within 0.01 of the margin.",
                         "B's verdict (inconclusive) does not turn on its end near the margin."]
    details = learning.margin_details(near, 0.25)
    assert len(details) == 3 and "-0.255, lies just beyond" in details[1] and "+0.310, lies beyond it" in details[2]
    assert learning.margin_details([], 0.25) == []
    # the box marks only the verdict that turns on such an end
    box = str(learning.edge_box(
        1_000, 0.5, {"difference": 0.1, "low": 0.05, "high": 0.2, "verdict": "beats"}, 0.4,
        pd.DataFrame({"captured (pooled)": [1.2, 1.5]}), {"mean": 0.0, "low": -0.1, "high": 0.1, "n": 6},
        pd.DataFrame({"mean difference": [0.01, 0.02], "low": [0.0, 0.01], "high": [0.02, 0.03],
                      "markets": [9, 9], "verdict": ["beats", "inconclusive"]},
                     index=pd.MultiIndex.from_tuples([("ppo", "all families"), ("ppo", "factor")],
                                                     names=["learner", "family"])),
        {name: dict(ci, difference=0.0) for name, ci in intervals.items()}, verdicts, near, 0.25,
        pd.DataFrame(columns=["informed oracle captured (pooled)", "markets"],
                     index=pd.MultiIndex.from_tuples([], names=["ic", "stocks", "learner"])),
        pd.DataFrame(), seeds_below=(3, 3)))
    assert box.count("fragile") == 1 and "A +0.00 [-0.26, +0.20] inconclusive (fragile" in box
    assert "pooled, 3 of 3 seeds below buy-and-hold" in box


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
def test_the_budget_sentence_says_what_its_cell_records(realistic, ic, stocks):
    table = learning.budget_table(realistic, ic, stocks)
    reading = learning.budget_reading(table, DEFAULT)
    oracles = teaching.informed_oracle_table(realistic)
    text = _text(learning.budget_text(reading, realistic, oracles, ic, stocks))
    end, short = reading["end"], reading["short"]
    assert reading["longest"] == 900_000 and short.name == DEFAULT
    row = next(r for r in realistic["summary"] if r["select"] == "best" and r["ic"] == ic and r["stocks"] == stocks
               and r["run_steps"] == r["env_steps"] == 900_000)
    # both oracles, pooled, with the markets and the spread over the markets that have a capture
    assert f"**{row['informed_capture_pooled']:.2f}** of the informed oracle's excess return, pooled over the " \
           f"{row['seeds']} markets" in text
    assert f"{row['informed_train_valid_capture_pooled']:.2f} of the rule chosen on four years" in text
    defined = [v for v in row["informed_captures"] if v is not None]
    assert f"{min(defined):.2f} to {max(defined):.2f}" in text
    assert ("market by market" in text) == (len(defined) == row["seeds"])
    beats = row["beats_buy_and_hold"]
    assert ("on no market" in text) == (beats == 0) and ("on all 5 markets" in text) == (beats == row["seeds"])
    assert f"earned {short['informed oracle captured (pooled)']:.2f} of the informed oracle's excess" in text
    # what the longer run's mean excess did: rose at every check, or rose to a peak and then fell
    excess = reading["long_run"]["agent excess"]
    peak = excess.idxmax()
    if peak == excess.index[-1]:
        assert "rose at every check" in text and excess.is_monotonic_increasing
    else:
        assert f"rose to {excess[peak]:+.1%} at {peak:,} env-steps, then fell to {excess.iloc[-1]:+.1%}" in text
        assert "rose at every check" not in text
    # a ceiling only on the markets where the agent's excess stayed below the oracle's
    cell = oracles.loc[(ic, stocks)]
    agent = learning.agent_excess_per_market(realistic, ic, stocks, 900_000)
    for column, name in (("informed test excess", "the informed oracle"), ("its test excess", "The rule chosen on four years")):
        assert learning.ceiling_text(agent, cell[column], name) in text
        above = [m for m in cell.index if agent[m] > cell.loc[m, column]]
        assert ("here it is a ceiling" in learning.ceiling_text(agent, cell[column], name)) == \
               (not above and bool((cell[column] > 0).all()))
    _clean(text)


def test_the_weak_cell_reads_its_peak_and_no_oracle_as_a_ceiling_where_the_agent_was_above(realistic):
    table = learning.budget_table(realistic, 0.03, 30)
    text = _text(learning.budget_text(learning.budget_reading(table, DEFAULT), realistic,
                                      teaching.informed_oracle_table(realistic), 0.03, 30))
    excess = table.loc[900_000]["agent excess"]
    assert excess.idxmax() != excess.index[-1] and "then fell to" in text  # the record: rose, then fell
    assert "here it is a ceiling" not in text and "so it is a ceiling only on" in text


def test_ceiling_text_names_the_markets_where_the_agent_was_above():
    oracle = pd.Series({0: 0.3, 1: 0.1, 2: -0.1})
    text = learning.ceiling_text(pd.Series({0: 0.1, 1: 0.2, 2: 0.0}), oracle, "The oracle")
    assert text == ("The oracle lost to buy-and-hold on 1 of the 3 markets. The agent was above it on markets 1 "
                    "and 2, so it is a ceiling only on market 0.")
    below = learning.ceiling_text(pd.Series({0: 0.1, 1: 0.0}), pd.Series({0: 0.3, 1: 0.1}), "The oracle")
    assert below == "The oracle gained on every market. The agent stayed below it on each market: here it is a ceiling."
    nowhere = learning.ceiling_text(pd.Series({0: 0.5}), pd.Series({0: 0.3}), "The oracle")
    assert nowhere.endswith("above it on market 0, so it is a ceiling on no market.")


def test_the_ic_scale_comes_from_the_market_model_and_the_costs():
    from finrl_tutorial import EnvConfig, SyntheticSpec

    text = _text(learning.ic_scale_text((0.05, 0.03), EnvConfig()))
    spec = SyntheticSpec()
    assert f"standard deviation of {spec.noise_volatility:.2%}" in text
    for ic in (0.05, 0.03):
        assert f"{SyntheticSpec(ic=ic).loading:.2%} at IC {ic:g}" in text
    # 2016 rates: commission both sides, stamp duty on the sale, transfer fee both sides, slippage both sides
    config = EnvConfig()
    round_trip = 2 * config.fees.commission_rate + 0.001 + 2 * 0.00002 + 2 * config.slippage
    assert f"about {round_trip:.2%} of the value traded" in text
    assert f"about {round_trip / SyntheticSpec(ic=0.05).loading:.1f} days at IC 0.05" in text
    assert "Grinold" not in text
    _clean(text)


def test_the_realistic_sentences_count_the_markets(realistic):
    no_capture = teaching.undefined_captures(realistic)
    text = _text(learning.no_capture_text(no_capture))
    for (ic, stocks, _), row in no_capture.iterrows():
        assert f"IC {ic:g} × {stocks}: {row['informed: no capture']} of {row['markets']}" in text
    oracles = teaching.informed_oracle_table(realistic)
    text = _text(learning.oracle_range_text(oracles))
    assert f"lost to buy-and-hold on {int((oracles['informed test excess'] < 0).sum())} of them" in text
    provenance = learning.realistic_provenance(realistic)
    assert provenance["markets"].sum() == len(realistic["cases"])
    method = learning.realistic_method(realistic, provenance)
    assert "beside other processes" in str(method) and "<table" in method._repr_markdown_()


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
    text = _text(learning.cost_text(reading))
    assert "1.50 times as long as the fastest's" in text and "above 1.50 or below 0.67" in text
    assert "into 4 gradient steps at the base's batch_size=1024, into 16 at 256 and into 1 at 4096" in text
    assert "batch_size=256 cost 1.20 times as much as the base's, inside the timing noise" in text
    assert f"batch_size=256 cost {1.2 / 0.9:.2f} times as much per sample as batch_size=4096, inside" in text
    assert "beyond" not in text.split("\n\n")[1]
    wide = _text(learning.cost_text(learning.cost_reading(_timed(update | {"batch_size=256": 3.0}, rollout))))
    assert "batch_size=256 cost 3.00 times as much as the base's, beyond the timing noise" in wide
    assert f"{3.0 / 0.9:.2f} times as much per sample as batch_size=4096, beyond the timing noise." in wide
    _clean(text)


def test_a_ratio_counts_as_beyond_the_noise_only_as_the_page_shows_both():
    """A ratio of 1.08 against a noise that rounds to 1.07 is beyond it; against one shown as 1.08 it is not."""
    assert learning._beyond_noise(1.0812, 1.0749) and not learning._beyond_noise(1.0812, 1.0801)
    assert learning._beyond_noise(0.90, 1.1) and not learning._beyond_noise(0.91, 1.1)  # 1 / 1.1 shows as 0.91


def test_the_reading_names_the_baseline_of_every_multiplier_and_only_costs_beyond_the_noise(sweep):
    update = {"base": 1.0, "batch_size=256": 1.2, "repeat_times=16": 4.0, "batch_size=4096": 0.9,
              "repeat_times=2": 0.6, "horizon_len=128": 1.0}
    cost = learning.cost_reading(_timed(update, {name: 1.0 for name in update} | {"horizon_len=128": 2.0}))
    tests = teaching.sweep_comparisons(sweep)
    overfit = teaching.overfitting_table(sweep)
    text = _text(learning.reading_text(cost, 17.4, tests, 0.1, overfit.loc["sample"], overfit.drop(index="sample"),
                                       sweep))
    assert ("relative to the base on this machine: batch_size=256 1.20×, repeat_times=16 4.00×, "
            "batch_size=4096 0.90×, repeat_times=2 0.60×, horizon_len=128 1.00×.") in text
    assert ("Of the 5 variants, 1 lies beyond the timing noise of 2.2 (two timings of the same work differ by a "
            "factor of 2.00, so beyond means above 2.00 or below 0.50): repeat_times=16.") in text
    assert "Only" not in text
    many = learning.cost_reading(_timed(update, {name: 1.0 for name in update} | {"horizon_len=128": 1.1}))
    many = _text(learning.reading_text(many, 17.4, tests, 0.1, overfit.loc["sample"], overfit.drop(index="sample"),
                                       sweep)).splitlines()[-1]
    assert "Of the 5 variants, 4 lie beyond the timing noise" in many
    assert ": batch_size=256, repeat_times=16, batch_size=4096 and repeat_times=2." in many
    assert "In the live sweep, repeat_times=16 moved the policy 17.4× as far per iteration as the base did" in text
    kl = {(r["market"], r["variant"]): r["approx_kl_mean"] for r in sweep["summary"]}
    sample, synthetic = (kl[(m, "repeat_times=16")] / kl[(m, "base")] for m in ("sample", "synthetic"))
    assert (f"* **Drift.** In the full-size record, repeat_times=16 moved the policy {sample:.1f}× as far per "
            f"iteration as the base did on the sample, and {synthetic:.1f}× as far on the synthetic markets") in text
    assert f"Seed noise alone would flag about {0.1 * len(tests):.1f} of them" in text and "chance gives" not in text
    assert "* **This run.** Update cost" in text and "mechanics" not in text
    fast = _text(learning.reading_text(cost, 17.4, tests, 0.1, overfit.loc["sample"], overfit.drop(index="sample"),
                                       sweep, fast=True))
    live = fast.splitlines()[-1]  # this run's own numbers: labelled as mechanics, nothing in bold
    assert live.startswith("* This run's mechanics (fast mode") and "**" not in live and "17.4×" in live
    assert fast.index("**Drift.**") < fast.index("This run's mechanics")
    _clean(fast)
    flagged = tests[~tests["non-overlap verdict"].isin(learning.NO_CALL)]
    assert f"flags {len(flagged)} of the {len(tests)} comparisons" in text and "none remains" in text
    assert f"deflated Sharpe of {overfit.loc['sample', 'deflated Sharpe']:.2f}" in text
    assert "* **Quality on synthetic** (final validation Sharpe, 3 seeds): outside the seed spread: " \
           "batch_size=4096 (lower)" in text
    _clean(text)


def test_the_curve_sentences_count_the_validations_the_rule_separates(sweep):
    text = _text(learning.curve_text(sweep))
    runs = [r for r in sweep["runs"] if r["market"] == "synthetic"]
    base = [r for r in runs if r["variant"] == "base"]
    wide = [r for r in runs if r["variant"] == "batch_size=4096"]
    apart = [e["env_steps"] for i, e in enumerate(wide[0]["evaluations"])
             if verdict([r["evaluations"][i]["valid_sharpe"] for r in wide],
                        [r["evaluations"][i]["valid_sharpe"] for r in base]) == "lower"]
    assert f"**batch_size=4096** lay below every seed of the base at {len(apart)} of " \
           f"{len(wide[0]['evaluations'])} validations (between {apart[0]:,} and {apart[-1]:,} env-steps)" in text
    assert text.count("* On ") == 2
    _clean(text)


def test_the_record_sentences_and_the_comparisons_agree_with_the_sweep(sweep):
    effects = learning.sweep_effects(sweep)
    assert set(effects["called"].values()) == {"lower"} and len(effects["called"]) == 2
    text = _text(learning.record_text(sweep, effects, VARIANTS | {"horizon_len=32": {}, "repeat_times=16": {}}))
    assert f"Of {len(effects['effects'])} comparisons" in text and "2 lie outside the seed spread" in text
    synthetic_base = next(r for r in sweep["summary"] if r["market"] == "synthetic" and r["variant"] == "base")
    assert f"the signal rule's {synthetic_base['oracle_valid_sharpe']:.2f} lies below every seed" in text
    tests = teaching.sweep_comparisons(sweep)
    chance = teaching.chance_of_no_overlap(3)
    text = _text(learning.comparisons_text(tests, chance))
    assert f"about **{chance * len(tests):.1f}** of the {len(tests)}" in text and "none survives" in text
    assert f"smallest adjusted p-value {tests['p (Holm)'].min():.2f}" in text
    method = str(learning.sweep_method(sweep, "bench_sweep.json", "runs/bench_sweep.json", live_hold=-0.57))
    recorded = next(r["buy_and_hold_valid_sharpe"] for r in sweep["summary"] if r["market"] == "sample")
    assert ("-0.57 on chapter 1's prices" in method) == (abs(recorded + 0.57) >= 0.005)
    assert "--out runs/bench_sweep.json`" in method and "): `python -m finrl_tutorial bench sweep" in method
    assert sweep["machine"]["platform"] not in method and "2 CPUs" in method
    if abs(recorded + 0.57) >= 0.005:  # said once, as a fact about the record, with what it means
        assert method.count("earlier sizing of detected ex-days") == 1
        assert "the comparisons among them share it" in method


def test_the_selection_and_pbo_sentences_read_their_tables(sweep):
    overfit = teaching.overfitting_table(sweep)
    text = _text(learning.overfitting_text(overfit))
    sample = overfit.loc["sample"]
    assert f"best of {sample['trials (checkpoints)']} checkpoints" in text
    assert f"its deflated Sharpe is **{sample['deflated Sharpe']:.2f}**" in text
    per_run = overfit.drop(index="sample")["deflated, one trial per run"]
    assert (f"it is {per_run.min():.2f} to {per_run.max():.2f} there: at or above 0.95 on "
            f"{int((per_run >= 0.95).sum())} of the {len(per_run)} synthetic markets") in text
    examples = [teaching.pbo_example(seed=seed, days=250) for seed in range(3)]
    rows = learning.pbo_rows(examples)
    text = _text(learning.pbo_text(rows))
    noise = rows[rows["family"] == "noise"]
    assert f"PBO averages **{noise['PBO'].mean():.2f}** for pure noise" in text and "over 3 draws each" in text


def test_the_kl_ratios_are_each_variant_over_the_base(sweep):
    runs = pd.DataFrame({"variant": ["base", "repeat_times=16"], "seed": [0, 0], "approx KL": [0.01, 0.05],
                         "clip fraction": [0.1, 0.3]}).set_index(["variant", "seed"])
    full_kl, live_kl = learning.kl_tables(sweep, runs)
    ratios = learning.kl_ratio_table(full_kl, live_kl, list(VARIANTS))
    assert ratios.loc["repeat_times=16", "live run"] == pytest.approx(5.0)
    sample = {r["variant"]: r["approx_kl_mean"] for r in sweep["summary"] if r["market"] == "sample"}
    assert ratios.loc["batch_size=256", "sample (full size)"] == pytest.approx(sample["batch_size=256"] / sample["base"])
    assert np.isnan(ratios.loc["batch_size=256", "live run"])


def test_the_cost_block_and_the_update_share_name_no_platform_string_and_bold_no_timing():
    import platform

    from finrl_tutorial.book import scale

    quiet = read_records(scale.SCALE_RECORD)
    quiet_base = learning.quiet_base_cost(quiet)
    per_10k = pd.DataFrame({"rollout": [1.0], "update": [1.0]}, index=["base"])
    method = str(learning.cost_method(0.5, 0.7, quiet, per_10k, quiet_base, 2, scale.SCALE_RECORD))
    row = next(r for r in quiet if r["layout"] == "trainer" and r["num_envs"] == 64)
    assert platform.platform() not in method and row["platform"] not in method
    assert f"torch {row['torch']}" in method and "load average 0.5 before the rounds" in method
    share = _text(learning.update_share_text(per_10k, quiet_base))
    assert share.startswith("The update takes 50% of the base's time on this machine") and "**" not in share


# --------------------------------------------------------------------------- chapter 7: your own data

def test_the_factor_reading_and_its_sentences_come_from_the_record(factor):
    reading = learning.factor_reading(factor)
    assert reading["runs"] == len(factor["runs"]) and reading["below"] == reading["runs"]  # every run lost
    sentences = learning.factor_sentences(factor, reading)
    assert len(sentences) == 4
    rows = reading["rows"]
    final = rows["with_factor"]["final_valid_sharpe"]
    assert f"with_factor {final['mean']:.2f}, without_factor {rows['without_factor']['final_valid_sharpe']['mean']:.2f}" \
           in sentences[0] and sentences[0].endswith("inconclusive.")
    untrained = np.mean([r["untrained_valid_sharpe"] for r in factor["runs"] if r["variant"] == "with_factor"])
    assert f"by {final['mean'] - untrained:+.2f} from the untrained policy's {untrained:.2f}" in next(
        sentence for sentence in sentences if sentence.startswith("with_factor:"))
    for sentence in sentences:
        assert len(_numbers(sentence)) <= 4, sentence
    text = _text(learning.factor_text(factor, reading))
    assert text.startswith(f"**Training hurt both variants.** All {reading['runs']} runs")
    _clean(text)


def test_the_factor_headline_does_not_say_training_hurt_when_one_run_gained(factor):
    record = dict(factor, runs=[dict(run) for run in factor["runs"]])
    record["runs"][0]["final_valid_sharpe"] = record["runs"][0]["untrained_valid_sharpe"] + 0.1
    reading = learning.factor_reading(record)
    text = _text(learning.factor_text(record, reading))
    assert "hurt both" not in text and text.startswith(f"{reading['runs'] - 1} of {reading['runs']} runs")


def test_the_factor_tests_table_and_box_read_the_paired_tests(factor):
    tests = teaching.sweep_comparisons(factor)
    table = learning.factor_tests_table(tests, factor)
    assert list(table.index) == ["final validation Sharpe", "best validation Sharpe"]
    assert table["p (paired t)"].tolist() == tests["p (paired t)"].tolist()
    assert table.index.name == "with_factor − without_factor"
    text = _text(learning.factor_tests_text(tests, teaching.chance_of_no_overlap(3), 3))
    assert "10% of the time with 3 seeds" in text and f"p = {tests['p (Holm)'].min():.2f} at best" in text
    assert ("no difference is shown" in text) == (tests["p (Holm)"].min() >= 0.05)
    shown = tests.assign(**{"p (Holm)": [0.01, 0.5]})
    assert "below the 5 % level" in _text(learning.factor_tests_text(shown, 0.1, 3))
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
