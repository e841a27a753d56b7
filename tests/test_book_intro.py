"""The intro's table states one finding per chapter; each number it quotes is recomputed here from the
stored record the chapter reads, so the intro cannot drift from the chapters."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

import finrl_tutorial as ft
from finrl_tutorial.book import batched, benchmarks, learners, learning, read_records, scale, teaching, workers

INTRO = (Path(__file__).resolve().parents[1] / "book" / "intro.md").read_text(encoding="utf-8")


def _row(chapter: str) -> str:
    """The row of ``chapter`` (e.g. ``"04_workers"``) in the intro's table of what the records found (the
    last of the intro's two tables by chapter: the first says what each chapter teaches), its links
    read as their text (a glossary link changes no finding)."""
    row = [line for line in INTRO.splitlines() if line.startswith(f"| {{doc}}`{chapter}`")][-1]
    return re.sub(r"\[([^\]]+)\]\([^)\s]+\)", r"\1", row)


def test_the_intro_has_a_table_of_what_each_chapter_teaches_and_one_of_what_its_records_found():
    teaches = INTRO[INTRO.index("## What you will learn"):INTRO.index("## What the records found")]
    found = INTRO[INTRO.index("## What the records found"):]
    for chapter in ("01_ashare_demo", "01_finding_an_edge", "01_what_the_changes_are_worth", "02_hyperparameters", "03_single_file_ppo", "04_workers",
                    "05_learners", "06_vecenv_vs_vmap", "07_your_own_data", "08_benchmarks"):
        row = next(line for line in teaches.splitlines() if line.startswith(f"| {{doc}}`{chapter}`"))
        assert len(row) < 600, chapter  # a few lines a reader takes in at a glance; the numbers are in the second table
        assert f"| {{doc}}`{chapter}`" in found
    sweep = read_records("bench_sweep.json")[0]  # chapter 2's row
    sample = teaching.overfitting_table(sweep).loc["sample"]
    against_hold = learning.deflation_against_hold(sweep).loc["sample"]
    said = (f"The best of the sample's {sample['trials (checkpoints)']} checkpoints has a deflated Sharpe of "
            f"{sample['deflated Sharpe']:.2f} ({against_hold['null buy-and-hold: DSR']:.2f} with buy-and-hold's Sharpe")
    assert said in _row("02_hyperparameters"), said


@pytest.fixture(scope="module")
def quiet():
    return read_records(scale.SCALE_RECORD)


def test_the_workers_row_reads_the_quiet_record(quiet):
    row = _row("04_workers")
    model = scale.fit_cost_model(quiet, "workers", learner_threads=2)
    one_thread = scale.fit_cost_model(quiet, "workers", learner_threads=1)
    said = (f"the update is {model.serial_fraction:.0%} of one worker's iteration",
            f"never pass {1 / one_thread.serial_fraction:.2f}× one worker's samples/s",
            f"({model.thread_speedup / model.serial_fraction:.2f}× with the update on two threads)")
    assert all(part in row for part in said), said
    table = scale.speedups(quiet, layouts=["trainer", "workers"])
    assert "faster" not in set(table.loc[table["layout"] == "workers", "verdict"])  # "no worker layout was faster ..."
    trainer = scale.fit_trainer_model(quiet)
    projected = scale.project(model, (4, 8), baseline=trainer)["speed-up"]
    assert {f"{value:.2f}" for value in projected} == {"1.11"} and "projects 1.11× for 4 and for 8 workers" in row
    by_round = scale.projection_by_round(quiet, "workers", learner_threads=2)
    assert f"({by_round.min().min():.2f}–{by_round.max().max():.2f}× when refitted on each of the three rounds alone" in row


def test_the_learners_row_reads_the_quiet_record(quiet):
    row = _row("05_learners")
    table = scale.speedups(quiet, layouts=["trainer", "ddp"])
    _, _, two = learners.ddp_labels(table)
    assert table.loc[two, "verdict"] == "faster" and f"{table.loc[two, 'speed-up']:.2f}× the fastest in-process" in row
    family = learners.speed_family(quiet, read_records(scale.LOADED_SCALE_RECORD))
    assert (family["Holm verdict"] == "inconclusive").all() and "not significantly after Holm's correction" in row
    steps = learners.optimiser_steps(quiet, two), learners.optimiser_steps(quiet, table["baseline"].iloc[0])
    assert steps[0][0] < steps[1][0] and steps[0][1] > steps[1][1] and "fewer, larger optimiser steps" in row
    control = learners.like_with_like(read_records(scale.DDP_CONTROL_RECORD))  # the same optimiser steps
    assert control["optimiser steps"].iloc[0] == "16 × 2,048 ÷ 16 × 2,048"
    assert control["rounds verdict"].iloc[0] == "inconclusive" and control["Holm verdict"].iloc[0] == "inconclusive"
    assert f"two ranks made {control['geometric mean'].iloc[0]:.2f}× its samples/s, with rounds on both sides of 1" in row


def test_the_vecenv_row_reads_the_quiet_and_loaded_records(quiet):
    row = _row("06_vecenv_vs_vmap")
    recorded = batched.recorded_reading(quiet, read_records(scale.LOADED_SCALE_RECORD))
    costs = batched.call_costs(quiet)
    vmap_fixed = costs.loc["vmap env", "c ÷ batched env's"]
    said = (f"the batched env ran {recorded['two accounts']['speed-up']:.1f}× the subprocess",
            f"made {recorded['two processes']['speed-up']:.2f}× the env-steps/s of one process",
            f"at {vmap_fixed:.2f}× the batched env's fixed cost")
    assert all(part in row for part in said), said
    above = batched.process_record_reading(read_records(batched.PROCESSES_RECORD))  # the rounds record of 6.5
    medians = [f"{above.loc[f'2 processes × {n:,}', '÷ faster 1 process, median']:.2f}× at {n:,} accounts each"
               for n in (1024, 8192)]
    assert set(above["verdict"]) == {"faster"} and set(above["rounds"]) == {5}
    assert f"in five rounds on a quiet machine, {medians[0]} and {medians[1].replace(' accounts each', '')}, faster in every round" in row


def test_the_own_data_row_reads_the_factor_record():
    row = _row("07_your_own_data")
    record = read_records("bench_factor_default.json")[0]  # the default learner's
    reading = learning.factor_reading(record)
    assert reading["below"] == reading["runs"] == 6 and "all 6 runs" in row
    tests = teaching.sweep_comparisons(record)
    assert f"paired p = {tests['p (Holm)'].min():.2f} at best" in row
    assert "the test split is left unread" in row


def test_the_benchmarks_row_reads_the_peer_record_and_the_full_run():
    row = _row("08_benchmarks")
    comparisons = benchmarks.peer_verdicts(read_records("bench_peers.jsonl"))
    finrl = comparisons.loc[comparisons["numerator"] == "our_env_single", "ratio of medians"].iloc[0]
    elegant = comparisons[comparisons["numerator"].str.startswith("our_env_vec")
                          & comparisons["baseline"].str.startswith("elegantrl")]["ratio of medians"]
    assert f"our single env ran {benchmarks.times(finrl)} FinRL's" in row
    assert f"our batched env {benchmarks.times(elegant.min())}–{benchmarks.times(elegant.max())} ElegantRL's" in row
    full = read_records(ft.book.demo.MAIN_JOB_RECORD)[0]
    untrained = benchmarks.untrained_reading(full)["untrained"]
    hold = full["baselines"]["equal_weight_buy_and_hold"]["sharpe_ratio"]
    agent = full["agent"]["sharpe_ratio"]
    assert agent < untrained and agent < hold
    said = (f"(test Sharpe {agent:.2f} ± {full['agent_std']['sharpe_ratio']:.2f} over {len(full['seeds'])} seeds)",
            f"below the untrained agent ({untrained:.2f}) and buy-and-hold ({hold:.2f})")
    assert all(part in row for part in said), said


def test_every_chapter_row_of_the_intro_states_a_finding():
    for chapter in ("02_hyperparameters", "04_workers", "05_learners", "06_vecenv_vs_vmap", "07_your_own_data",
                    "08_benchmarks"):
        assert any(ch.isdigit() for ch in _row(chapter).split("|")[2]), chapter  # a number, not only a topic
    assert ft.book.workers is workers


def test_the_learning_rows_read_the_pathwise_records():
    demo, ppo = _row("01_finding_an_edge"), _row("03_single_file_ppo")
    realistic, pathwise = read_records("bench_learn_realistic.json")[0], read_records("bench_learn_pathwise.json")[0]
    table = learning.learner_comparison(realistic, pathwise)
    unseen = table.loc[(0.05, 100, "100-104", "default")]
    said = ("on five markets no choice of its defaults had seen",
            f"beat buy-and-hold on all 5 markets and earned {unseen['informed oracle captured (pooled)']:.2f} of the excess "
            "of the informed oracle (the best, on validation, of rules that know the true "
            "expected returns)")
    assert unseen["beats buy-and-hold"] == "5 of 5"
    assert all(part in demo for part in said), said
    # the second group of unseen markets, fixed in advance (seeds 300-304, chapter 1.11)
    confirm = read_records("bench_learn_confirm100.json")[0]
    fresh = learning.pooled_capture_interval(confirm["cases"], 300_000)
    beaten = learning.budget_table(confirm, 0.05, 100).loc[(300_000, 300_000), "beats buy-and-hold"]
    assert (f"on five more markets fixed in advance, {fresh['pooled']:.2f} (95 % interval over the markets "
            f"[{fresh['low']:.2f}, {fresh['high']:.2f}]), again beating buy-and-hold on all 5") in demo and beaten == "5 of 5"
    s300 = learning.learner_comparison(realistic, {"cases": read_records("bench_learn_s300.json")[0]["cases"]},
                                       cells=((0.05, 300),)).loc[(0.05, 300, "0-4", "default")]
    assert "over 300 stocks (five markets) the default budget found nothing" in demo
    assert s300["beats buy-and-hold"] == "0 of 5" and s300["informed oracle captured (pooled)"] < 0.05
    # default minus plain on the same five unseen markets (chapter 1.12)
    plain_unseen = read_records("bench_learn_plain_unseen100.json")[0]
    gain = learning.paired_test(learning.learner_differences(plain_unseen, pathwise)["difference"])
    changes = _row("01_what_the_changes_are_worth")
    assert (f"the default learner earned {100 * gain['mean']:+.1f} percentage points more test excess (return over "
            f"buy-and-hold in the test year) than the older plain learner "
            f"[{100 * gain['low']:+.1f}, {100 * gain['high']:+.1f}], "
            f"ahead on all {gain['n']}") in changes
    assert gain["positive"] == gain["n"] == 5
    ablation = learning.ablation_table(pathwise, read_records("bench_learn_ablation.json")[0])
    assert ablation["default − this (mean)"].idxmax() == learning.ABLATION_LABELS["gae_lambda"]  # "GAE's λ the most"
    assert (ablation["default ahead on"].dropna() == "3 of 3").all() and (ablation["p (Holm)"].dropna() > 0.05).all()
    unseen = learning.ablation_table(pathwise, read_records("bench_learn_ablation_unseen100.json")[0])
    lam, pathwise_off, baseline_off = (unseen.loc[learning.ABLATION_LABELS[k]] for k in ("gae_lambda", "pathwise", "market_baseline"))
    said = (f"GAE's λ back at 0.95 cost {100 * lam['default − this (mean)']:.1f} points of test excess "
            f"[{100 * lam['low']:+.1f}, {100 * lam['high']:+.1f}] and the pathwise part "
            f"{100 * pathwise_off['default − this (mean)']:.1f} [{100 * pathwise_off['low']:+.1f}, {100 * pathwise_off['high']:+.1f}], "
            "each on all 5 and each significant after Holm's correction (taken away alone, each costs more than half the "
            "gain, a hint that the changes interact); the market baseline's cost could not be told from 0")
    assert said in changes, said
    assert lam["default ahead on"] == pathwise_off["default ahead on"] == "5 of 5" and max(lam["p (Holm)"], pathwise_off["p (Holm)"]) < 0.05
    assert baseline_off["low"] < 0 < baseline_off["high"]
    assert "on a one-day problem, to 0.11 of the score function's variance" in ppo  # chapter 3.0 checks the 0.11 live


def test_the_short_findings_read_the_learning_records():
    short = INTRO[INTRO.index("**In short**"):INTRO.index("One finding per chapter")]
    realistic, pathwise = read_records("bench_learn_realistic.json")[0], read_records("bench_learn_pathwise.json")[0]
    table = learning.learner_comparison(realistic, pathwise)
    groups = [table.loc[(0.05, 100, markets, "default")] for markets in ("0-4", "100-104")]
    assert all(group["beats buy-and-hold"] == "5 of 5" for group in groups)
    confirm = learning.pooled_capture_interval(read_records("bench_learn_confirm100.json")[0]["cases"], 300_000)
    captures = [group["informed oracle captured (pooled)"] for group in groups] + [confirm["pooled"]]
    assert "On all 15 such markets tried the agent beat buy-and-hold (10 of them were never\n  used to choose its defaults)" in short
    assert f"({min(captures):.2f} to\n  {max(captures):.2f} of the best such rule's excess, by group of five)" in short
    planted = ft.book.demo.planted_learning(read_records("bench_learn_default.json")[0], family="factor")
    informed = planted.loc[300_000, "informed oracle's excess captured"]  # 1.9's record at the default budget
    assert f"it earned {informed:.2f} times the\n  best such rule's excess" in short
    factor = [c for c in read_records("bench_learn_default.json")[0]["cases"] if c["family"] == "factor"]
    around = learning.pooled_capture_interval(factor, 300_000)  # the interval the sentence gives it
    assert f"95 % bootstrap interval over them [{around['low']:.2f}, {around['high']:.2f}])" in short


def test_the_ppo_row_and_the_control_sentence_read_the_default_learners_planted_record():
    ppo, demo = _row("03_single_file_ppo"), _row("01_finding_an_edge")
    default = read_records("bench_learn_default.json")[0]

    def interval(record, a, b, steps, select):
        test = learning.paired_test(learning.paired_excess(record, a, b, steps, select)["difference"])
        return f"{100 * test['mean']:+.1f} points [{100 * test['low']:+.1f}, {100 * test['high']:+.1f}]", test

    _, test = interval(default, "ppo", "sb3_ppo", 100_000, "last")
    a2c_default, a2c_test = interval(default, "ppo", "a2c", 300_000, "best")
    assert test["positive"] == test["n"] == 6 and "ours earned more on all six markets" in ppo
    assert "at its library defaults" in ppo and "a comparison of two whole setups" in ppo
    assert f"PPO against A2C on the same markets: {a2c_default.replace('-', '−')} in test excess, inconclusive" in ppo
    assert a2c_test["low"] < 0 < a2c_test["high"]
    control = learning.control_markets({"default": default}, 300_000, learners=("ppo",))
    moved = int(control["moved off the first"].sum())
    assert f"On markets with no edge it fitted the noise of the validation year on {moved} of {len(control)}" in demo


def test_the_demo_row_reads_the_default_learners_walk_forward():
    row, first_page = _row("01_finding_an_edge"), _row("01_ashare_demo")
    record = read_records("bench_walkforward_pathwise.json")[0]
    verdicts = teaching.walkforward_verdicts(record)
    assert verdicts == {"2017": "loses", "2018": "inconclusive", "2019": "tie", "pooled": "inconclusive"}
    assert "(2019 a tie; 2017 a loss, carried by one of its three seeds; pooled inconclusive)" in row
    assert "{doc}`synthetic_markets`" in INTRO  # the reference page behind the planted edges
    two_level = learning.walkforward_two_level(record)["2017"]  # "(inconclusive with the seeds resampled too)"
    assert two_level["low"] < 0 < two_level["high"] and two_level["high"] - two_level["low"] > 0.5
    plain = teaching.walkforward_verdicts(read_records("bench_walkforward.json")[0])
    assert "loses" not in plain.values() and "beats" not in plain.values() and "beats" not in verdicts.values()
    assert "finds no year in which the agent beats buy-and-hold" in row  # neither learner's walk-forward
    differences = learning.walkforward_reading(record)["seed_differences"]["2017"]  # "carried by one of its three seeds"
    assert [seed for seed, difference in enumerate(differences) if difference < -0.25] == [2] and len(differences) == 3
    assert all(abs(difference) < 0.25 for seed, difference in enumerate(differences) if seed != 2)
    assert "the five trained seeds end below their untrained networks' mean" in first_page and "ties buy-and-hold's" in first_page
    five = read_records(ft.book.demo.MAIN_JOB_RECORD)[0]  # "the five trained seeds end below the untrained network and tie"
    own = ft.book.demo.against_own_untrained(five, ft.load_market())  # each seed against its own untrained network
    paired = learning.paired_test(own["trained − untrained"])
    assert paired["positive"] == 0 and (f"(each below its own, by {-paired['mean']:.3f} Sharpe on average "
                                        f"[{paired['low']:+.3f}, {paired['high']:+.3f}] over the seeds)").replace("-", "−") in first_page
    assert ft.metrics.stored_verdict(five["sharpe_vs_buy_and_hold"]) == "tie"
    assert all(seed["sharpe_ratio"] < five["baselines"]["untrained_agent"]["sharpe_ratio"]
               for seed in five["agent_per_seed"].values())
    assert benchmarks.record_learner("bench_walkforward_pathwise.json") == "default"


def test_the_opening_says_where_the_speed_figures_were_measured():
    text = (Path(__file__).resolve().parents[1] / "book" / "intro.md").read_text()
    assert "All speed figures were measured on a CPU with two cores" in text
    # the sentence "holds no GPU measurement of the package" stands only while no GPU record is stored
    assert "The book holds no GPU measurement of\nthe package" in text and not ft.book.record_names("gpu*.json")
    scale_record = read_records(scale.SCALE_RECORD)
    assert {row["cpu_count"] for row in scale_record} == {2}
