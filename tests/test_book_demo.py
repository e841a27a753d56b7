"""Chapter 1's readings (`finrl_tutorial.book.demo`): each table, figure and box says what its inputs say.

The stored records (``demo.MAIN_JOB_RECORD``, ``bench_sweep.json``) and the embedded sample
are read as the chapter reads them; small hand-made inputs cover the branches the records do not
reach. No training, no timing.
"""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import torch
from matplotlib.figure import Figure

import finrl_tutorial as ft
from finrl_tutorial.book import demo
from finrl_tutorial.metrics import stored_verdict

EX_TIC, EX_DAY = "600276.SH", "2018-05-30"


@pytest.fixture(scope="module")
def prepared():
    return ft.load_market()


@pytest.fixture(scope="module")
def report():
    return ft.book.read_records(demo.MAIN_JOB_RECORD)[0]



def test_the_chapter_reaches_the_module_as_ft_book_demo():
    assert ft.book.demo is demo
    assert all(callable(getattr(demo, name)) for name in demo.__all__ if not name.isupper())
    assert demo.MAIN_JOB_RECORD in ft.book.record_names("main_job_*_report.json")  # the record chapters 1 and 8 read


# --------------------------------------------------------------------------- data

def test_source_summary_states_what_the_provider_returned():
    facts = {"trading_days": 118, "date_range": ["2023-01-03", "2023-06-30"], "tickers": ["600000.SH", "600519.SH"],
             "corporate_actions": [{"tic": "600000.SH"}]}
    live = SimpleNamespace(summary=lambda: facts, benchmark=pd.Series([1.0]))
    line = demo.source_summary("baostock", live)
    assert line == ("baostock: 118 trading days (2023-01-03 .. 2023-06-30) of 600000.SH, 600519.SH; "
                    "1 corporate action; with the CSI 300")
    live = SimpleNamespace(summary=lambda: facts | {"corporate_actions": []}, benchmark=None)
    assert demo.source_summary("akshare", live).endswith("0 corporate actions; without the CSI 300")


def test_longest_stretch_finds_the_longest_run_and_the_first_of_equals():
    days = pd.date_range("2020-01-01", periods=9)
    flags = pd.Series([0, 1, 1, 0, 1, 1, 1, 0, 1], index=days).astype(bool)
    assert demo.longest_stretch(flags) == (days[4].date(), days[6].date(), 3)
    tie = pd.Series([1, 1, 0, 1, 1], index=days[:5]).astype(bool)
    assert demo.longest_stretch(tie) == (days[0].date(), days[1].date(), 2)
    assert demo.longest_stretch(pd.Series(False, index=days)) == (None, None, 0)


def test_longest_suspension_of_the_sample_is_the_one_the_chapter_quotes(prepared):
    full = prepared.full
    dates = pd.DatetimeIndex(full.dates)
    suspended = pd.Series(prepared.summary()["suspended_by_ticker"]).sort_values(ascending=False)
    worst = suspended.index[0]
    halted = pd.Series(~full.tradable[:, full.tickers.index(worst)].numpy(), index=dates)
    first, last, length = demo.longest_stretch(halted)
    assert (worst, length, str(first)) == ("600309.SH", 119, "2017-12-05")
    inside = halted.loc[str(first):str(last)]
    assert inside.all() and len(inside) == length  # a run of untradable days, every one of them


def test_plot_suspensions_draws_one_row_per_stock_and_marks_each_split(prepared):
    ax = Figure().subplots()
    demo.plot_suspensions(ax, prepared.full, prepared.splits)
    assert [label.get_text() for label in ax.get_yticklabels()] == prepared.full.tickers
    assert sorted(text.get_text().strip() for text in ax.texts) == sorted(prepared.splits)


# --------------------------------------------------------------------------- an ex-rights day

def test_plot_ex_day_title_states_the_drop_of_the_close():
    days = pd.date_range("2018-05-28", periods=4)
    held = pd.DataFrame({"close": [100.0, 95.42, 74.52, 75.0], "wealth": [1.0e6, 1.0e6, 1.03e6, 1.04e6]}, index=days)
    ax = Figure().subplots()
    demo.plot_ex_day(ax, held, "2018-05-30", EX_TIC)
    assert f"falls {100 * (1 - 74.52 / 95.42):.0f} %" in ax.get_title() and "falls 22 %" in ax.get_title()
    first, second = ax.get_lines()[:2]
    assert np.allclose(first.get_ydata(), held["close"] / 100.0)
    assert np.allclose(second.get_ydata(), held["wealth"] / 1.0e6)


def test_ex_day_sizing_gives_back_the_last_close_and_the_table_shows_it(prepared):
    full = prepared.full
    detected = pd.DataFrame(full.info["detected_actions"])
    sizing = demo.ex_day_sizing(full, detected, EX_TIC, EX_DAY)
    # the action and the reference give back the last close: no wealth appears or vanishes
    assert (1 + sizing["bonus"]) * sizing["reference"] + sizing["dividend"] == pytest.approx(sizing["previous_close"])
    low, high = sizing["feasible_reference"]
    assert low <= sizing["reference"] <= high
    assert sizing["cash_range"][0] <= sizing["dividend"] <= sizing["cash_range"][1]
    assert sizing["cash_at_reference"][3] == pytest.approx(sizing["dividend"])  # 3 per 10 is the estimate
    rows = demo.sizing_table(sizing, EX_DAY)["value"].droplevel(0)
    assert rows[f"market move on {EX_DAY} (median of the other stocks)"] == f"{sizing['market_move']:+.2%}"
    assert rows["ordinary days: a stock's own move against that median, std"] == f"{sizing['residuals'].std():.1%}"
    assert rows["the day's low"] == f"{float(sizing['evidence']['low']):.2f}"
    assert rows["reference the day's prices allow"] == f"{low:.2f} .. {high:.2f}"
    assert rows["shares after the action, for every 10 held"] == f"{10 * (1 + sizing['bonus']):.0f}"
    assert rows["cash dividend a share"] == f"¥{sizing['dividend']:.3f}"
    assert rows["reference"] == f"{sizing['reference']:.2f}"
    assert rows["close over the reference"] == f"{sizing['close'] / sizing['reference'] - 1:+.2%}"
    # the cleaning's label is about the bonus shares; the cash part gets its own, against a day's noise
    assert rows["confidence in the bonus shares (the cleaning's label)"] == str(sizing["evidence"]["confidence"]) == "high"
    share = sizing["dividend"] / sizing["previous_close"]
    assert share < sizing["residuals"].std()  # Hengrui's ¥1.53 is 1.6 % of the last close, a day's noise 2.0 %
    assert rows["the cash part against no cash, as a share of the last close"] == f"{share:.1%}: {demo.CANNOT_TELL}"
    assert not any(value == "high" and "cash" in name for name, value in rows.items())


def test_a_cash_part_within_a_days_noise_is_labelled_cannot_tell_never_high():
    noise = 0.02  # a stock's own move on ordinary days, std
    assert demo.cash_label(1.534, 95.42, noise) == demo.CANNOT_TELL == "within a day's noise: cannot tell"
    assert demo.cash_label(0.0, 95.42, noise) == demo.CANNOT_TELL
    assert demo.cash_label(2.0, 100.0, noise) == demo.CANNOT_TELL  # exactly one day's noise: still cannot tell
    assert demo.cash_label(2.5, 100.0, noise) == demo.BEYOND_NOISE == "beyond a day's noise"
    detected = pd.DataFrame({"cash_dividend": [0.389, 1.534], "previous_close": [17.89, 95.42]}, index=[5, 9])
    labels = demo.cash_labels(detected, noise)
    assert labels.to_dict() == {5: demo.BEYOND_NOISE, 9: demo.CANNOT_TELL} and labels.name == "cash part"


def test_the_samples_detected_cash_parts_are_mostly_within_a_days_noise(prepared):
    full = prepared.full
    detected = pd.DataFrame(full.info["detected_actions"])
    noise = float(demo.own_moves(full).std())
    labels = demo.cash_labels(detected, noise)
    beyond = detected[labels == demo.BEYOND_NOISE]
    assert list(zip(beyond["tic"], beyond["date"])) == [("600000.SH", "2016-06-23")]
    assert (labels == demo.CANNOT_TELL).sum() == len(detected) - 1


def test_own_moves_leave_out_action_days_and_centre_on_the_market(prepared):
    residuals = demo.own_moves(prepared.full)
    assert np.isfinite(residuals).all() and len(residuals) > 10_000
    assert abs(np.median(residuals)) < 0.002  # against the median of the others: centred near 0
    assert np.abs(residuals).max() < 0.25  # no ex-rights drop (an action day) among them


# --------------------------------------------------------------------------- training

def test_budget_table_compares_with_one_seed_of_the_committed_run(report):
    result = SimpleNamespace(env_steps=16_384, wall_seconds=42.4, best_valid_sharpe=-0.512)
    table = demo.budget_table(result, report)
    per_seed = report["env_steps"] / len(report["seeds"])
    this, full = table.iloc[0], table.iloc[1]
    assert this["env-steps"] == "16,384" and this["share of the full-size budget"] == f"{16_384 / per_seed:.1%}"
    assert this["kept checkpoint's validation Sharpe"] == "-0.51" and this["wall time"] == "42 s"
    assert full["env-steps"] == f"{per_seed:,.0f}" and full["share of the full-size budget"] == "100%"
    valid = list(report["valid_sharpe_per_seed"].values())
    seeds = len(report["seeds"])
    # a range over the seeds is labelled as one, and the row says it is per seed (not "one of the seeds")
    assert full["kept checkpoint's validation Sharpe"] == f"{min(valid):.2f} .. {max(valid):.2f} (the {seeds} seeds' range)"
    assert full["wall time"] == f"{report['wall_seconds'] / seeds:.0f} s (mean of the {seeds} seeds)"
    assert table.index[1] == f"recorded full-size run, per seed ({seeds} seeds)" and "one of" not in table.index[1]


def _log(entropy) -> pd.DataFrame:
    steps = np.arange(1, len(entropy) + 1) * 1024
    valid = [np.nan, -0.55, np.nan, -0.60, np.nan, -0.52][:len(entropy)]
    return pd.DataFrame({"iteration": range(len(entropy)), "env_steps": steps, "train/final_wealth": 1.0,
                         "valid/sharpe_ratio": valid, "loss/entropy": entropy})


def test_mark_learning_curve_titles_state_the_log_and_a_flat_entropy_looks_flat():
    log = _log([21.0, 21.01, 21.0, 21.02, 21.01, 21.0])
    fig = ft.plot_learning_curve(log)
    marks = demo.mark_learning_curve(fig, log, hold_valid_sharpe=-0.45)
    assert marks["entropy_moved"] == "barely moved" and marks["best_valid"] == -0.52
    titles = {ax.get_title().split(":")[0]: ax for ax in fig.axes}
    assert titles["valid/sharpe_ratio"].get_title() == ("valid/sharpe_ratio: 3 validations, best -0.52 "
                                                        "(at 6,144 env-steps)")
    assert titles["loss/entropy"].get_ylim() == pytest.approx((21.0 * 0.99, 21.0 * 1.01))
    assert "it barely moved" in titles["loss/entropy"].get_title()
    labels = [line.get_label() for line in titles["valid/sharpe_ratio"].get_lines()]
    assert "buy-and-hold on the validation year (-0.45)" in labels and "first validation (-0.55)" in labels


def test_mark_learning_curve_says_when_the_entropy_fell():
    log = _log([21.0, 20.0, 19.0, 18.0, 17.0, 16.0])
    marks = demo.mark_learning_curve(ft.plot_learning_curve(log), log, hold_valid_sharpe=0.0)
    assert marks["entropy_moved"] == "fell" and marks["entropy_change"] == pytest.approx(16 / 21 - 1)


def test_mark_learning_curve_frames_each_panel_around_its_yardstick_with_a_minimum_span():
    # a validation dip of 0.08 and a wealth wiggle of 0.02: neither may fill its panel
    log = _log([21.0, 21.01, 21.0, 21.02, 21.01, 21.0])
    log["train/final_wealth"] = [0.99, 1.01, 0.99, 1.0, 1.01, 0.99]
    fig = ft.plot_learning_curve(log)
    demo.mark_learning_curve(fig, log, hold_valid_sharpe=-0.57)
    panels = {ax.get_title().split(":")[0]: ax for ax in fig.axes}
    sharpe = panels["valid/sharpe_ratio"]
    assert sharpe.get_ylim() == pytest.approx((-0.57 - demo.SHARPE_MIN_HALF_SPAN, -0.57 + demo.SHARPE_MIN_HALF_SPAN))
    band = [patch for patch in sharpe.patches if "one year's noise" in patch.get_label()]
    assert len(band) == 1 and band[0].get_label().startswith("±0.15 around it")
    assert (band[0].get_y(), band[0].get_y() + band[0].get_height()) == pytest.approx((-0.57 - demo.SHARPE_YEAR_NOISE, -0.57 + demo.SHARPE_YEAR_NOISE))
    assert panels["train/final_wealth"].get_ylim() == pytest.approx((1 - demo.WEALTH_MIN_HALF_SPAN, 1 + demo.WEALTH_MIN_HALF_SPAN))
    # every panel draws its yardstick, and its legend sits outside the axes
    for column, yardstick in (("train/final_wealth", 1.0), ("valid/sharpe_ratio", -0.57), ("loss/entropy", 21.0)):
        ax = panels[column]
        assert any(line.get_linestyle() == "--" and line.get_ydata()[0] == pytest.approx(yardstick) for line in ax.get_lines())
        assert ax.get_legend().get_bbox_to_anchor().x0 > ax.get_window_extent().x1 - 1
    assert panels["loss/entropy"].get_ylabel() == "±1 % of the start"


def test_mark_learning_curve_widens_a_panel_to_show_every_point():
    log = _log([21.0, 20.0, 19.0, 18.0, 17.0, 16.0])
    log["train/final_wealth"] = [0.5, 0.9, 1.0, 1.1, 1.0, 0.9]
    log["valid/sharpe_ratio"] = [np.nan, 0.1, np.nan, -1.2, np.nan, -0.5]
    fig = ft.plot_learning_curve(log)
    demo.mark_learning_curve(fig, log, hold_valid_sharpe=-0.57)
    panels = {ax.get_title().split(":")[0]: ax for ax in fig.axes}
    for column, values, yardstick, half in (("train/final_wealth", log["train/final_wealth"], 1.0, demo.WEALTH_MIN_HALF_SPAN),
                                            ("valid/sharpe_ratio", log["valid/sharpe_ratio"].dropna(), -0.57,
                                             demo.SHARPE_MIN_HALF_SPAN),
                                            ("loss/entropy", log["loss/entropy"], 21.0, 0.21)):
        low, high = panels[column].get_ylim()
        assert low < values.min() and high > values.max()  # every point inside, with a margin
        assert low <= yardstick - half and high >= yardstick + half  # and never narrower than the yardstick's span
    assert panels["loss/entropy"].get_ylabel() == ""  # not the ±1 % axis


# --------------------------------------------------------------------------- the backtest

def test_with_extra_dividend_pays_on_top_of_the_detected_cash_and_leaves_the_market_alone(prepared):
    market = prepared.test
    before = market.dividend.clone()
    paid = demo.with_extra_dividend(market, 120, 0.02)
    assert torch.equal(market.dividend, before)  # a new market; the old one is untouched
    assert torch.allclose(paid.dividend[120], before[120] + 0.02 * market.close[119])
    others = torch.ones(market.num_days, dtype=torch.bool)
    others[120] = False
    assert torch.equal(paid.dividend[others], before[others]) and torch.equal(paid.close, market.close)


def _table(agent=1.20, untrained=1.19, hold_fees=1000.0, random_fees=250_000.0) -> pd.DataFrame:
    return pd.DataFrame({"sharpe_ratio": [agent, untrained, 1.3, -0.4], "cumulative_return": [0.3, 0.3, 0.45, -0.1],
                         "total_fees": [900.0, 800.0, hold_fees, random_fees]},
                        index=["agent", "untrained_agent", "equal_weight_buy_and_hold", "random"])


def test_seeds_below_hold_counts_the_seeds_under_buy_and_hold(report):
    hold = report["baselines"]["equal_weight_buy_and_hold"]["sharpe_ratio"]
    below = sum(row["sharpe_ratio"] < hold for row in report["agent_per_seed"].values())
    assert demo.seeds_below_hold(report) == (below, len(report["seeds"])) == (5, 5)
    lifted = {**report, "baselines": {**report["baselines"], "equal_weight_buy_and_hold": {"sharpe_ratio": -9.0}}}
    assert demo.seeds_below_hold(lifted) == (0, 5)


def test_committed_table_rows_are_the_agent_and_every_baseline(report):
    table = demo.recorded_table(report)
    assert list(table.index) == ["agent (mean of seeds)", *report["baselines"]]
    assert table.loc["equal_weight_buy_and_hold", "sharpe_ratio"] == round(
        report["baselines"]["equal_weight_buy_and_hold"]["sharpe_ratio"], 3)
    seeds = demo.recorded_table(report, per_seed=True)
    assert list(seeds.index) == ["agent (mean of seeds)", *(f"agent, seed {s}" for s in report["agent_per_seed"]),
                                 *report["baselines"]]
    assert seeds.loc["agent, seed 1", "turnover"] == round(report["agent_per_seed"]["1"]["turnover"], 3)


def test_validation_curves_follow_the_sweep(sweep):
    curves = demo.validation_curves(sweep)
    runs = [run for run in sweep["runs"] if run["market"] == "sample" and run["variant"] == sweep["base_variant"]]
    assert list(curves.index) == [run["seed"] for run in runs] and len(curves) == 3
    assert all(len(run["evaluations"]) == 13 for run in runs)  # "three seeds ... thirteen times each"
    assert curves["last validation"].tolist() == [run["evaluations"][-1]["valid_sharpe"] for run in runs]
    assert curves["first validation"].tolist() == [run["evaluations"][0]["valid_sharpe"] for run in runs]
    for seed, row in curves.iterrows():  # where each seed scored best, as "k of n" and in env-steps
        sharpes = [e["valid_sharpe"] for e in runs[list(curves.index).index(seed)]["evaluations"]]
        best = int(np.argmax(sharpes))
        assert row["best at validation"] == f"{best + 1} of {len(sharpes)}"
    assert curves["last validation"].mean() < curves["first validation"].mean()  # what the chapter says


def test_the_sweeps_untrained_network_beat_every_checkpoint_of_seeds_0_and_2(sweep):
    """The record's ``untrained_valid_sharpe`` is the network before any update; its first evaluation
    is the checkpoint after the first update (iteration 0, one rollout of env-steps)."""
    curves = demo.validation_curves(sweep)
    runs = [run for run in sweep["runs"] if run["market"] == "sample" and run["variant"] == sweep["base_variant"]]
    assert all(run["evaluations"][0]["iteration"] == 0 and run["evaluations"][0]["env_steps"] == run["rollout_size"]
               for run in runs)
    assert curves["untrained"].tolist() == [run["untrained_valid_sharpe"] for run in runs]
    beaten = [run["seed"] for run in runs
              if max(e["valid_sharpe"] for e in run["evaluations"]) < run["untrained_valid_sharpe"]]
    assert beaten == [0, 2]  # "for seeds 0 and 2 no checkpoint beat the untrained network on validation"


def test_distance_from_untrained_is_zero_for_the_untrained_network_itself():
    torch.manual_seed(0)
    untrained, moved = torch.nn.Linear(3, 2), torch.nn.Linear(3, 2)
    weights = pd.DataFrame({"a": [0.5, 0.5], "b": [0.5, 0.5]})
    other = pd.DataFrame({"a": [1.0, 1.0], "b": [0.0, 0.0]})
    table = demo.distance_from_untrained(untrained, weights, {"same": (0, 0, untrained, weights),
                                                              "moved": (7, 1024, moved, other)})
    assert table.loc["same", "weights' distance from untrained"] == 0
    assert table.loc["same", "test-year portfolio held differently"] == 0
    assert table.loc["moved", "test-year portfolio held differently"] == pytest.approx(0.5)
    assert (table.loc["moved", "iteration"], table.loc["moved", "env-steps"]) == (7, 1024)


def test_planted_learning_follows_the_record():
    learn = ft.book.read_records("bench_learn.json")[0]
    table = demo.planted_learning(learn)
    rows = sorted((r for r in learn["summary"] if r["family"] == "factor" and r["learner"] == "ppo"
                   and r["select"] == "best" and r["run_steps"] == 300_000), key=lambda r: r["env_steps"])
    assert list(table.index) == [r["env_steps"] for r in rows] == [0, 50_000, 100_000, 200_000, 300_000]
    assert table["agent's test excess"].tolist() == [r["test_excess_mean"] for r in rows]
    assert table["signal rule's excess captured"].tolist() == [r["capture_pooled"] for r in rows]
    assert table["signal rule's test excess"].nunique() == 1  # one signal rule for all budgets
    assert table["agent's test excess"].iloc[0] < 0 < table["agent's test excess"].iloc[-1]  # it learns
    # the informed oracle beside the signal rule: one rule per market, chosen on validation, at every budget
    assert table["informed oracle's test excess"].tolist() == [r["informed_excess_mean"] for r in rows]
    assert table["informed oracle's test excess"].nunique() == 1
    assert table["informed oracle's excess captured"].tolist() == [r["informed_capture_pooled"] for r in rows]
    older = {**learn, "summary": [{k: v for k, v in r.items() if not k.startswith("informed")} for r in learn["summary"]]}
    assert "informed oracle's test excess" not in demo.planted_learning(older)  # a record without it


def test_how_measured_states_once_which_package_the_sweep_ran_when_its_data_differ(report, sweep):
    runs = [run for run in sweep["runs"] if run["market"] == "sample" and run["variant"] == sweep["base_variant"]]
    sweep_hold = runs[0]["buy_and_hold_valid_sharpe"]
    text = str(demo.how_measured(report, sweep, page_hold_valid=-0.57))
    date = sweep["machine"]["date"][:10]
    assert text.count(f"It ran the package of {date}, whose ex-day sizing (1.4)") == 1
    assert f"a validation Sharpe of {sweep_hold:.2f} where this page's gives -0.57" in text
    assert "not in the mechanics" in text
    assert "made before" not in text and "predate" not in text  # provenance as a fact, not a story
    same = str(demo.how_measured(report, sweep, page_hold_valid=sweep_hold))
    assert "It ran the package" not in same and "It ran the package" not in str(demo.how_measured(report, sweep))


def test_how_measured_is_folded_and_names_each_record_with_its_command(report, sweep):
    folded = demo.how_measured(report, sweep)
    page = folded._repr_markdown_()
    assert page.startswith('<details class="how-measured">') and "How this was measured" in page
    assert " open" not in page.split(">")[0]  # closed until clicked
    assert f"`{demo.MAIN_JOB_RECORD}`" in page and "`bench_sweep.json`" in page
    text = str(folded)
    assert report["command"] in text and report["machine"]["date"][:10] in text
    assert f"{report['sharpe_vs_buy_and_hold']['resamples']:,} resamples" in text
    # the budget asked for and the env-steps run, reconciled once: a run stops at the last whole iteration
    config = report["config"]
    rollout = config["num_envs"] * config["horizon_len"]
    per_seed = report["env_steps"] / len(report["seeds"])
    assert per_seed == (config["total_steps"] // rollout) * rollout
    assert "A run stops at the last whole iteration." in text
    assert f"So a seed ran {per_seed / rollout:.0f} iterations: {per_seed:,.0f} of the {config['total_steps']:,} asked for." in text
    # the machine's load is method detail: it sits in the folded block, in its own item
    if report.get("command_note"):
        assert "**The record's note, with the machine's load**" in page
    runs = [run for run in sweep["runs"] if run["market"] == "sample" and run["variant"] == sweep["base_variant"]]
    assert f"each validated {len(runs[0]['evaluations'])} times over {sweep['total_steps']:,} env-steps" in text


def test_chapter_box_names_its_records_and_recomputes_the_committed_verdict(report, sweep):
    versus = {"difference": 0.01, "low": -0.4, "high": 0.5, "verdict": "inconclusive"}
    moved = pd.DataFrame({"test-year portfolio held differently": [0.012]}, index=["chosen checkpoint"])
    missing = pd.Series([0.031, 0.042])
    box = demo.chapter_box(16_384, _table(), versus, missing, moved, report, sweep, page_hold_valid=-0.48, fast=True)
    text = str(box)
    assert demo.MAIN_JOB_RECORD in text and "bench_sweep.json" in text
    assert (f"vs {report['baselines']['equal_weight_buy_and_hold']['sharpe_ratio']:.2f}: "
            f"{stored_verdict(report['sharpe_vs_buy_and_hold'])}; 5 of 5 seeds below buy-and-hold") in text
    assert (f"{report['agent']['sharpe_ratio']:.2f} ± {report['agent_std']['sharpe_ratio']:.2f} (mean ± std over the "
            "5 seeds, not an interval)") in text  # the ± is labelled, so it is not read as an interval
    assert "+3.1% / +4.2% of return" in text and "1.2%" in text and "agent after 16,384 env-steps" in text
    assert f"{len(report['data']['tickers'])} survivors" in text and "fast mode" in text
    assert "[-0.40, +0.50]: inconclusive" in text and "mechanics" not in text  # the rows are labelled once, not each
    full = str(demo.chapter_box(16_384, _table(), versus, missing, moved, report, sweep, page_hold_valid=-0.48,
                                fast=False))
    assert "fast mode" not in full and "[-0.40, +0.50]: inconclusive" in full
    assert "package of" not in full and "see How this was measured" in full  # the sweep's package: said once, folded
    assert "5 of its 5 seeds end at or below the untrained network's test Sharpe" in full  # the record's own count
    assert "stay close" not in full


def test_each_seed_is_set_against_its_own_rebuilt_untrained_network(prepared):
    report = ft.book.read_records(demo.MAIN_JOB_RECORD)[0]
    own = demo.against_own_untrained(report, prepared)
    assert list(own.index) == report["seeds"]
    assert own["its untrained network"].mean() == pytest.approx(report["baselines"]["untrained_agent"]["sharpe_ratio"],
                                                                abs=1e-9)  # the report's networks, rebuilt
    assert list(own["trained"]) == [report["agent_per_seed"][str(s)]["sharpe_ratio"] for s in report["seeds"]]
    assert own["trained − untrained"].equals(own["trained"] - own["its untrained network"])
    other = report | {"baselines": report["baselines"] | {"untrained_agent": {"sharpe_ratio": 1.0}}}
    with pytest.raises(ValueError, match="not the networks the report started from"):
        demo.against_own_untrained(other, prepared)
