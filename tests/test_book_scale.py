"""The scale-out chapters' record and the defaults chosen from it (chapters 4, 5, 6 and 8).

The chapters read the quiet ``bench scale`` record; the pool's default learner threads must be the
faster choice measured there and never the slowest process layout; commands shown to a reader
carry no temporary output path; the threaded cost model reproduces the points it is fitted to.
"""
from __future__ import annotations

import re
import shlex

import pytest
from hypothesis import given
from hypothesis import strategies as st

from finrl_tutorial.book import read_records, reader_command, scale
from finrl_tutorial.errors import InputError
from finrl_tutorial.training.workers import DEFAULT_LEARNER_THREADS


def _loads(records):
    return [run["loadavg"][0] for r in records for run in r.get("runs", [r]) if run.get("loadavg")]


def test_the_chapters_read_the_quiet_record_and_the_loaded_one_is_loaded(quiet, loaded):
    cores = quiet[0]["cpu_count"]
    assert max(_loads(quiet)) < cores  # speed can be read from it: no run waited for a core
    assert min(_loads(loaded)) > 2 * cores  # what load does, not speed
    assert {shlex.split(r["command"])[4] for r in quiet + loaded} == {"scale"}


def test_the_default_learner_threads_are_the_faster_choice_of_the_quiet_record(quiet):
    reading = scale.learner_threads_reading(quiet)
    assert reading["faster"] == DEFAULT_LEARNER_THREADS
    other = 1 if DEFAULT_LEARNER_THREADS == 2 else 2
    ratios = reading["rounds"] if DEFAULT_LEARNER_THREADS == 2 else [1 / r for r in reading["rounds"]]
    assert min(ratios) > 1, f"{DEFAULT_LEARNER_THREADS} threads must beat {other} in every round"


def test_the_committed_speed_verdicts_are_recomputed_from_the_rounds_and_none_is_a_tie(quiet, loaded):
    """The words chapters 4, 5 and 8 print: no recorded round range lies within the ±5 % margin,
    so a crossing of 1 is inconclusive there, never a tie."""
    for records in (quiet, loaded):
        table = scale.speedups(records)
        repeated = table[(table["repeats"] > 1) & (table["verdict"] != "baseline")]
        for label, row in repeated.iterrows():
            assert row["verdict"] == scale.speed_verdict([row["rounds min"], row["rounds max"]]), label
        assert "tie" not in set(table["verdict"])
    quiet_table = scale.speedups(quiet)
    assert quiet_table.loc["ddp ×2 (128 envs)", "verdict"] == "faster"
    assert set(quiet_table.loc[[label for label in quiet_table.index if label.startswith("workers ×2")],
                               "verdict"]) == {"inconclusive"}
    assert scale.speedups(loaded).loc["ddp ×2 (128 envs)", "verdict"] == "inconclusive"
    # two records without paired rounds (the ddp env rate of three rounds over the single vec run): no verdict
    pairs = scale.speedups(quiet, key="env_steps_per_s", baseline="vec 128", layouts=["ddp"])
    assert pairs.loc["ddp ×2 (128 envs)", "verdict"] == "one ratio"


@pytest.mark.parametrize("name", [scale.SCALE_RECORD, scale.LOADED_SCALE_RECORD])
def test_a_one_thread_update_was_never_the_slowest_process_layout(name):
    """The safe choice named for a busy machine (``learner_threads=1``) holds in both records."""
    table = scale.speedups(read_records(name))
    layouts = table[table["layout"] != "trainer"]
    one_thread = next(label for label in layouts.index if "×2" in label and "on 1 thread" in label)
    assert layouts.loc[one_thread, "median"] > layouts["median"].min()


def test_the_default_layout_is_not_the_slowest_process_layout_of_the_quiet_record(quiet):
    table = scale.speedups(quiet)
    layouts = table[table["layout"] != "trainer"]
    suffix = f"on {DEFAULT_LEARNER_THREADS} thread" + ("s" if DEFAULT_LEARNER_THREADS > 1 else "")
    default = next(label for label in layouts.index if "×2" in label and suffix in label)
    assert layouts.loc[default, "median"] > layouts["median"].min()
    other = default.replace(suffix, "on 1 thread" if DEFAULT_LEARNER_THREADS > 1 else "on 2 threads")
    assert layouts.loc[default, "median"] > layouts.loc[other, "median"]  # the faster of the two thread counts


def test_the_threaded_cost_model_reproduces_its_points_and_models_one_worker_on_one_thread(quiet):
    model = scale.fit_cost_model(quiet, "workers", learner_threads=2)
    one = next(r for r in quiet if r["layout"] == "workers" and r["processes"] == 1)
    two = next(r for r in quiet if r["layout"] == "workers" and r["processes"] == 2 and r["learner_threads"] == 2)
    assert model.iteration_seconds(1) == pytest.approx(sum(scale._phase_seconds(one)))
    assert model.iteration_seconds(2) == pytest.approx(sum(scale._phase_seconds(two)))
    assert model.thread_speedup > 1  # the update of two workers ran faster on two threads
    check = scale.model_check(quiet, model)
    assert sorted(check["processes"]) == [1.0, 2.0] and check["error"].abs().max() < 0.25


_NAME = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789_-.", min_size=1, max_size=12).filter(
    lambda n: n not in (".", ".."))


def _no_revision_mark(name):
    return not re.search(r"(_new|_old|[a-z][2-9])$", name.partition(".")[0])


@given(folders=st.lists(_NAME, min_size=1, max_size=3), name=_NAME.filter(_no_revision_mark), relative=st.booleans())
def test_reader_command_moves_only_a_temporary_output_under_runs(folders, name, relative):
    path = "/".join([*folders, name]) if relative else "/" + "/".join(["tmp", *folders, name])
    command = f"python -m finrl_tutorial bench scale --repeats 3 --out {path} --threads 1"
    shown = shlex.split(reader_command(command))
    assert shown[:7] == shlex.split(command)[:7] and shown[-2:] == ["--threads", "1"]
    assert shown[shown.index("--out") + 1] == (path if relative else f"runs/{name}")
    assert reader_command(reader_command(command)) == reader_command(command)


@pytest.mark.parametrize("scratch, shown", [("/tmp/speed/peers_new.jsonl", "runs/peers.jsonl"),
                                             ("/tmp/a/scale_quiet2", "runs/scale_quiet"),
                                             ("/tmp/a/learn_ic005_s30", "runs/learn_ic005_s30"),
                                             ("runs/keep2", "runs/keep2")])
def test_reader_command_drops_a_scratch_names_revision_mark(scratch, shown):
    command = reader_command(f"python -m finrl_tutorial bench peers --out {scratch} --threads 1")
    assert shlex.split(command)[shlex.split(command).index("--out") + 1] == shown


def test_reader_command_leaves_a_command_without_out_alone():
    command = "python -m finrl_tutorial bench train --num-envs 16 64 --stocks 15"
    assert reader_command(command) == command


def _peer(measurement: str, label: str, library: str, runs: list[float], num_envs: int | None = None, **extra):
    record = {"bench": "peers", "measurement": measurement, "label": label, "library": library, "runs": runs,
              "env_steps_per_s": sorted(runs)[len(runs) // 2], **extra}
    return record | ({"num_envs": num_envs} if num_envs is not None else {})


def test_peer_comparisons_set_two_libraries_side_by_side_only_at_the_same_accounts():
    records = read_records("bench_peers.jsonl")
    table = scale.peer_comparisons(records)
    by_label = {r["label"]: r for r in records if "label" in r}
    for label, row in table.iterrows():
        numerator, baseline = by_label[row["numerator"]], by_label[row["baseline"]]
        if numerator["library"] != baseline["library"]:
            assert row["compares"] == "same accounts", label
            assert numerator.get("num_envs", 1) == baseline.get("num_envs", 1), label
        assert label.count(" ÷ ") == 1  # every ratio names its baseline
    # the record's cross-count ratio (the batched env at 4,096 accounts over FinRL's one) is not among them
    assert not ((table["numerator"] == "our_env_vec_4096") & (table["baseline"] == "finrl_env")).any()
    single = table[(table["numerator"] == "our_env_single") & (table["baseline"] == "finrl_env")].iloc[0]
    assert single["ratio of medians"] == pytest.approx(
        by_label["our_env_single"]["env_steps_per_s"] / by_label["finrl_env"]["env_steps_per_s"])


def test_peer_comparisons_read_round_by_round_ratios_and_call_a_wide_crossing_inconclusive():
    records = [_peer("our_env", "our_env_single", "finrl_tutorial", [10.0, 10.0, 10.0], 1),
               _peer("finrl_env", "finrl_env", "finrl", [5.0, 8.0, 12.0], 1),
               _peer("our_env", "our_env_vec_64", "finrl_tutorial", [100.0, 200.0, 300.0], 64)]
    table = scale.peer_comparisons(records)
    one = table[table["baseline"] == "finrl_env"].iloc[0]
    # rounds 2.0, 1.25, 0.83: on both sides of 1 and far past the ±5 % margin
    assert (one["round by round: min"], one["max"], one["verdict"]) == (pytest.approx(10 / 12), 2.0, "inconclusive")
    # rounds within ±5 % of 1 on both sides: a tie inside the stated margin
    close = [records[0], _peer("finrl_env", "finrl_env", "finrl", [9.8, 10.3, 10.1], 1)]
    assert scale.peer_comparisons(close)["verdict"].iloc[0] == "tie"
    assert scale.peer_comparisons(close, margin=None)["verdict"].iloc[0] == "inconclusive"
    batching = table[table["compares"] == "batching, ours"].iloc[0]
    assert (batching["ratio of medians"], batching["verdict"]) == (20.0, "faster")


def test_peer_comparisons_refuse_a_record_with_nothing_alike():
    records = [_peer("finrl_env", "finrl_env", "finrl", [5.0], 1),
               _peer("elegantrl_env", "elegantrl_env_64", "elegantrl", [50.0], 64)]
    with pytest.raises(InputError, match="like with like"):
        scale.peer_comparisons(records)
    with pytest.raises(InputError, match="different numbers of rounds"):
        scale.peer_comparisons([_peer("our_env", "our_env_single", "finrl_tutorial", [1.0, 2.0], 1),
                                _peer("finrl_env", "finrl_env", "finrl", [1.0], 1)])


def test_peer_ppo_layouts_give_the_gradient_steps_per_sample_of_each_loop():
    layouts = scale.peer_ppo_layouts(read_records("bench_peers.jsonl"))
    sb3 = layouts.loc["SB3's PPO on FinRL's env (1)"]
    assert sb3["gradient steps / 1,000 samples"] == pytest.approx(1000 * 10 * (2048 // 64) / 2048)
    ours = layouts.loc["our PPO (64)"]
    assert (ours["accounts"], ours["samples / iteration"]) == (64, 64 * 64)
    assert ours["gradient steps / 1,000 samples"] == pytest.approx(1000 * 4 * 4 / 4096)
    # a loop timed with `bench peers --set` gets a row of its own, named by what it changed
    changed = dict(read_records("bench_peers.jsonl")[-1]) | {
        "measurement": "our_ppo", "label": "our_ppo_64_set", "num_envs": 64, "horizon_len": 64, "batch_size": 1024,
        "repeat_times": 2, "samples_per_s": 9000.0, "runs": [9000.0], "overrides": {"hidden_sizes": [32], "repeat_times": 2}}
    both = scale.peer_ppo_layouts([*read_records("bench_peers.jsonl"), changed])
    assert both.loc["our PPO, hidden_sizes=32, repeat_times=2 (64)", "passes"] == 2 and "our PPO (64)" in both.index


def test_a_negative_fitted_overhead_is_projected_as_zero():
    from finrl_tutorial.book.scale import CostModel, project
    noisy = CostModel("ddp", rollout=1.0, update=1.0, overhead=-0.1, samples_per_process=1000)
    clean = CostModel("ddp", rollout=1.0, update=1.0, overhead=0.0, samples_per_process=1000)
    assert noisy.projectable().overhead == 0.0 and noisy.overhead == -0.1  # the fit itself is kept
    # without the floor, 16 ranks would beat perfect scaling (16 x one rank): impossible
    assert noisy.samples_per_s(16) > 16 * noisy.samples_per_s(1)
    assert project(noisy, (16,))["samples / s"].iloc[0] == project(clean, (16,))["samples / s"].iloc[0]
    assert project(noisy, (16,))["samples / s"].iloc[0] <= 16 * clean.samples_per_s(1)


def test_clamped_terms_name_what_a_projection_sets_to_zero_with_the_fitted_value():
    from finrl_tutorial.book.scale import CostModel, clamp_sentence, clamped_terms
    noisy = CostModel("workers", rollout=1.0, update=1.0, overhead=-0.0055, samples_per_process=1000)
    assert clamped_terms(noisy) == {"overhead": -0.0055}
    assert clamp_sentence(noisy, "worker") == ("The fit gives \u22125.5 ms per added worker, within noise of 0; "
                                               "the projection uses 0.")
    positive = CostModel("ddp", rollout=1.0, update=1.0, overhead=0.05, samples_per_process=1000)
    assert clamped_terms(positive) == {} and clamp_sentence(positive, "rank") == ""
    # the quiet record: the default workers model (two learner threads) is clamped, DDP's is not
    records = read_records(scale.SCALE_RECORD)
    workers = scale.fit_cost_model(records, "workers", learner_threads=DEFAULT_LEARNER_THREADS)
    assert set(clamped_terms(workers)) == {"overhead"} and clamped_terms(workers)["overhead"] < 0
    assert clamped_terms(scale.fit_cost_model(records, "ddp")) == {}


# --- many verdicts from few rounds: Holm's correction -------------------------------------------------

def test_chance_every_round_is_two_of_the_equally_likely_patterns():
    assert scale.chance_every_round(3) == 0.25 and scale.chance_every_round(1) == 1.0
    with pytest.raises(InputError):
        scale.chance_every_round(0)


def test_round_ratios_are_the_rounds_speedups_reads(quiet):
    table = scale.speedups(quiet, layouts=["trainer", "ddp"])
    for label in table.index[table["layout"] == "ddp"]:
        ratios = scale.round_ratios(quiet, label)
        assert (min(ratios), max(ratios)) == pytest.approx((table.loc[label, "rounds min"], table.loc[label, "rounds max"]))
        assert scale.speed_verdict(ratios) == table.loc[label, "verdict"]
    with pytest.raises(InputError, match="no configuration"):
        scale.round_ratios(quiet, "no such layout")


def test_holm_speed_tests_adjust_over_the_whole_family():
    clear, noisy = [1.50, 1.52, 1.51], [0.9, 1.3, 1.1]
    alone = scale.holm_speed_tests({"clear": clear})
    assert alone.loc["clear", "Holm verdict"] == "faster" and alone.loc["clear", "rounds verdict"] == "faster"
    family = scale.holm_speed_tests({"clear": clear, "noisy": noisy, "slow": [0.5, 0.52, 0.51]})
    assert family.loc["noisy", "Holm verdict"] == "inconclusive" and family.loc["slow", "Holm verdict"] == "slower"
    assert (family["p (Holm)"] >= family["p (t)"]).all()  # the adjustment never lowers a p-value
    assert family.loc["clear", "geometric mean"] == pytest.approx((1.50 * 1.52 * 1.51) ** (1 / 3))
    same = scale.holm_speed_tests({"identical rounds": [1.2, 1.2, 1.2], "one round": [2.0]})
    assert (same["p (t)"] == 1.0).all() and set(same["Holm verdict"]) == {"inconclusive"}


def test_no_every_round_verdict_of_the_quiet_record_survives_holm(quiet, loaded):
    """Chapters 4 and 5 call their round verdicts exploratory: none is significant after Holm."""
    from finrl_tutorial.book import learners, workers
    for family in (workers.speed_family(quiet), learners.speed_family(quiet, loaded)):
        assert set(family["rounds"]) == {3} and set(family["Holm verdict"]) == {"inconclusive"}
        assert family["rounds verdict"].isin(["faster", "slower"]).any()  # ... though some rounds all agree


def test_the_trainer_model_runs_through_its_one_thread_phases_and_reads_its_anchor(quiet):
    trainer = scale.fit_trainer_model(quiet)
    anchor = scale.fastest_single_process(quiet)
    assert trainer.label == "in-process trainer (128 envs, 2 threads)" == scale.scale_label(anchor)
    assert trainer.samples_per_s(anchor["samples_per_iteration"]) == pytest.approx(anchor["samples_per_s"])
    ones = [r for r in quiet if r["layout"] == "trainer" and r["learner_threads"] == 1]
    for r in ones:  # the line goes through both one-thread points
        seconds = r["phases"]["rollout"] + r["phases"]["update"]
        assert trainer.fixed + trainer.per_sample * r["samples_per_iteration"] == pytest.approx(seconds)
    # a trainer with more envs is faster: the like-with-like baseline grows with the processes
    rates = [trainer.samples_per_s(4096 * p) for p in (1, 2, 4, 8)]
    assert rates == sorted(rates) and rates[0] < rates[-1]


def test_a_like_with_like_projection_reads_the_trainer_at_the_processes_samples(quiet):
    trainer = scale.fit_trainer_model(quiet)
    model = scale.fit_cost_model(quiet, "ddp")
    fixed = scale.project(model, (2, 4, 8), baseline=trainer.anchor_rate)
    same = scale.project(model, (2, 4, 8), baseline=trainer)
    assert list(same["samples / iteration"]) == [2 * 4096, 4 * 4096, 8 * 4096]
    assert same.loc[2, "speed-up"] == pytest.approx(fixed.loc[2, "speed-up"])  # measured at 128 envs
    assert (same.loc[[4, 8], "speed-up"] < fixed.loc[[4, 8], "speed-up"]).all()
    table = scale.speedups(quiet, layouts=["trainer", "ddp"])
    points = scale.measured_points(table, "ddp", baseline=trainer, samples_per_process=model.samples_per_process)
    assert points[2] == pytest.approx(scale.measured_points(table, "ddp")[2])


def test_the_trainer_model_needs_two_sizes_of_the_one_thread_trainer(quiet):
    only = [r for r in quiet if not (r["layout"] == "trainer" and r["num_envs"] == 64)]
    with pytest.raises(InputError, match="two sizes"):
        scale.fit_trainer_model(only)


def test_projection_by_round_refits_on_each_round_and_agrees_with_the_medians_when_the_rounds_do():
    records = read_records(scale.SCALE_RECORD)
    spread = scale.projection_by_round(records, "workers", learner_threads=2)
    assert list(spread.index) == [1, 2, 3] and list(spread.columns) == [4, 8]
    assert spread[4].max() - spread[4].min() > 0.1  # three rounds' phases give three different fits
    first = scale.round_records(records, 0)
    kept = [r for r in records if r.get("runs") and "phases" in r["runs"][0]]
    assert kept and all(a["phases"] == r["runs"][0]["phases"] for a, r in zip(first, records) if r in kept)
    # rounds that all measured the medians refit to the medians' own projection
    same = [r | {"runs": [{"phases": r["phases"], "samples_per_s": r["samples_per_s"]}] * 3} if r.get("runs") else r
            for r in records]
    overall = scale.project(scale.fit_cost_model(records, "ddp"), (4, 8), baseline=scale.fit_trainer_model(records))
    again = scale.projection_by_round(same, "ddp")
    assert again.loc[2, 8] == pytest.approx(overall.loc[8, "speed-up"]) and again.loc[3, 4] == pytest.approx(overall.loc[4, "speed-up"])
    with pytest.raises(InputError, match="keep no rounds"):
        scale.projection_by_round([{k: v for k, v in r.items() if k != "runs"} for r in records], "ddp")
