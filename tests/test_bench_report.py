"""The readings of chapters 4-8 (finrl_tutorial.book.report) on small hand-made records with known answers."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, strategies as st

from finrl_tutorial.bench import command_line, scale_label
from finrl_tutorial.errors import InputError
from finrl_tutorial.book import (
    loop_cost_lines,
    peer_table,
    provenance,
    read_records,
    rollout_share_table,
)
from finrl_tutorial.book.report import code_spans, short_platform
from finrl_tutorial.book.scale import (
    CostModel,
    fit_cost_model,
    learner_threads_reading,
    measured_points,
    model_check,
    phase_table,
    project,
    fit_per_call,
    same_work_seconds,
    speed_verdict,
    speedup_text,
    speedups,
)

MACHINE = {"cpu_count": 2, "platform": "Linux-x", "torch": "2.13.0+cpu", "threads": 1}


def test_provenance_reads_flat_and_nested_machine_fields():
    flat = [MACHINE | {"date": "2026-12-01T10:00:00+00:00"}, MACHINE | {"date": "2026-12-01T10:30:00+00:00"}]
    assert provenance(flat) == {"records": 2, "measured": "2026-12-01 10:00 .. 10:30 UTC", "CPU cores": "2",
                                "torch threads": "1", "torch": "2.13.0+cpu", "GPU": "none", "platform": "Linux"}
    nested = [{"machine": MACHINE | {"date": "2026-12-01T09:00:00+00:00", "gpu": "H200"}}]
    facts = provenance(nested)
    assert facts["GPU"] == "H200" and facts["measured"].startswith("2026-12-01 09:00")
    assert provenance(read_records("bench_train.jsonl"))["platform"] == "Linux x86-64"  # no kernel build


def test_a_platform_string_is_shortened_to_its_system_and_architecture():
    assert short_platform("Linux-6.18.44-fc-v1147-x86_64-with-glibc2.36") == "Linux x86-64"
    assert short_platform("macOS-14.2-arm64-arm-64bit") == "macOS ARM64"
    assert short_platform("not recorded") == "not recorded"


def test_code_in_a_sentence_is_set_in_backticks():
    text = "50 timed steps, torch.cuda.synchronize() before the clock; rate = n*steps/seconds (envs/env.py)"
    assert code_spans(text) == ("50 timed steps, `torch.cuda.synchronize()` before the clock; "
                                "`rate = n*steps/seconds` (`envs/env.py`)")
    assert code_spans("no code here, 1-2 processes") == "no code here, 1-2 processes"


def test_loop_cost_is_the_update_share_of_the_loop_time():
    train = [{"algo": "ppo", "num_envs": 64, "rollout_env_steps_per_s": 10.0, "samples_per_s": 5.0},
             {"algo": "ppo", "num_envs": 1024, "rollout_env_steps_per_s": 100.0, "samples_per_s": 25.0}]
    # per sample: rollout 1/100 s, loop 1/25 s, so the update is 3/4 of the time
    assert loop_cost_lines(train) == [
        "PPO with 1,024 envs: rollout 100/s, whole loop 25/s: the update takes 75% of the time"]


def test_the_rollout_share_of_the_bare_env_is_read_within_one_row_only():
    rows = [{"layout": "vec", "num_envs": 256, "env_steps_per_s": 400.0, "rollout_env_steps_per_s": 100.0,
             "samples_per_s": 25.0},
            {"layout": "vec", "num_envs": 4096, "env_steps_per_s": 900.0},  # the bare env alone: not a row
            {"layout": "trainer", "num_envs": 64, "samples_per_s": 5.0}]
    table = rollout_share_table(rows)
    assert list(table.index) == [256]
    assert table.loc[256, "rollout ÷ bare env"] == pytest.approx(0.25)
    assert table.loc[256, "update's share of the loop"] == pytest.approx(0.75)
    with pytest.raises(InputError, match="measured the bare env"):
        rollout_share_table([{"layout": "vec", "num_envs": 4, "env_steps_per_s": 1.0}])
    with pytest.raises(InputError, match="no vec row"):
        rollout_share_table(rows[2:] + [{"layout": "trainer", "env_steps_per_s": 1.0, "rollout_env_steps_per_s": 1.0}])


def _scale(layout, processes, num_envs, **rates):
    return {"layout": layout, "processes": processes, "num_envs": num_envs, **rates}


def _phases(rollout, update, transfer=0.0, all_reduce=0.0, waiting=0.0):
    return {"rollout": rollout, "transfer": transfer, "update": update, "all_reduce": all_reduce, "waiting": waiting}


def _timed(layout, processes, phases, threads=None, runs=None, samples=100):
    """A process-layout record whose samples/s is what its phases imply (``samples`` per process)."""
    rate = processes * samples / sum(phases.values())
    record = _scale(layout, processes, 10 * processes, samples_per_s=rate, phases=phases,
                    samples_per_iteration=processes * samples, envs_per_process=10)
    if threads is not None:
        record["learner_threads"] = threads
    if runs is not None:
        record["runs"] = [{"samples_per_s": value, "loadavg": [load, 0, 0]} for value, load in runs]
    return record


def test_scale_labels_name_layout_processes_envs_and_threads():
    records = [_scale("subproc", 2, 2), _scale("vec", 1, 1024), _scale("ddp", 2, 512),
               _scale("trainer", 1, 256), _scale("workers", 2, 128, learner_threads=1),
               _scale("workers", 2, 128, learner_threads=2), _scale("workers", 1, 64, learner_threads=1),
               _scale("trainer", 1, 128, learner_threads=2)]
    assert [scale_label(r) for r in records] == [
        "subproc ×2", "vec 1,024", "ddp ×2 (512 envs)", "in-process trainer (256 envs)",
        "workers ×2 (128 envs, update on 1 thread)", "workers ×2 (128 envs, update on 2 threads)",
        "workers ×1 (64 envs)", "in-process trainer (128 envs, 2 threads)"]


def test_speedups_are_against_the_fastest_in_process_trainer_round_by_round():
    records = [
        _scale("trainer", 1, 64, samples_per_s=100.0, runs=[{"samples_per_s": 100.0, "loadavg": [3, 0, 0]},
                                                          {"samples_per_s": 80.0, "loadavg": [5, 0, 0]}]),
        _scale("trainer", 1, 128, samples_per_s=120.0, runs=[{"samples_per_s": 120.0, "loadavg": [4, 0, 0]},
                                                           {"samples_per_s": 100.0, "loadavg": [6, 0, 0]}]),
        _scale("ddp", 2, 128, samples_per_s=90.0, runs=[{"samples_per_s": 60.0, "loadavg": [8, 0, 0]},
                                                      {"samples_per_s": 90.0, "loadavg": [9, 0, 0]}]),
        _scale("vec", 1, 64, env_steps_per_s=1e6),  # no samples/s: not a row
    ]
    table = speedups(records)
    assert list(table.index) == ["in-process trainer (64 envs)", "in-process trainer (128 envs)", "ddp ×2 (128 envs)"]
    assert set(table["baseline"]) == {"in-process trainer (128 envs)"}  # the fastest, not the first
    ddp = table.loc["ddp ×2 (128 envs)"]
    assert ddp["speed-up"] == pytest.approx(90 / 120)
    assert (ddp["rounds min"], ddp["rounds max"]) == pytest.approx((0.5, 0.9))  # 60/120 and 90/100
    assert (ddp["load min"], ddp["load max"]) == (8, 9) and ddp["repeats"] == 2
    assert speedup_text(table, "ddp ×2 (128 envs)") == (
        "0.75× the samples/s of the in-process trainer (128 envs) (round by round against it: 0.50–0.90×): "
        "slower in every round")
    assert list(table["verdict"]) == ["slower", "baseline", "slower"]  # every round below 1
    # another baseline by its label; only some layouts
    other = speedups(records, baseline="in-process trainer (64 envs)", layouts=["ddp"])
    assert list(other.index) == ["in-process trainer (64 envs)", "ddp ×2 (128 envs)"]
    assert other.loc["ddp ×2 (128 envs)", "speed-up"] == pytest.approx(0.9)
    # 60/100 and 90/80: on both sides of 1 and past the ±5 % margin: inconclusive, not a tie
    assert other.loc["ddp ×2 (128 envs)", "verdict"] == "inconclusive"
    assert speedup_text(other, "ddp ×2 (128 envs)").endswith(
        ": inconclusive (not every round lies on one side of 1, nor every round within the tie margin of ±5 % "
        "around 1)")
    # a margin wide enough makes the same rounds a tie; no margin makes none
    assert speedups(records, baseline="in-process trainer (64 envs)", margin=0.5).loc[
        "ddp ×2 (128 envs)", "verdict"] == "tie"
    assert speedups(records, baseline="in-process trainer (64 envs)", margin=None).loc[
        "ddp ×2 (128 envs)", "verdict"] == "inconclusive"
    with pytest.raises(ValueError, match="trainer"):
        speedups(records[2:])
    with pytest.raises(ValueError, match="no configuration labelled"):
        speedups(records, baseline="vec 64")


@given(ratios=st.lists(st.floats(0.01, 100), min_size=2, max_size=6), margin=st.floats(0, 0.5))
def test_a_speed_ratio_is_a_tie_only_inside_its_margin(ratios, margin):
    verdict = speed_verdict(ratios, margin)
    if min(ratios) > 1 or max(ratios) < 1:  # every round on one side of 1
        assert verdict == ("faster" if min(ratios) > 1 else "slower")
    elif all(abs(r - 1) <= margin for r in ratios):
        assert verdict == "tie"
    else:
        assert verdict == "inconclusive"
    # no margin: nothing is a tie; one ratio: no verdict at all
    assert speed_verdict(ratios, None) == ("inconclusive" if verdict == "tie" else verdict)
    assert speed_verdict(ratios[:1], margin) == "one ratio"


def test_a_speed_margin_outside_0_to_1_is_refused():
    for margin in (-0.1, 1.0, float("nan"), "wide", True):
        with pytest.raises(ValueError, match="speed tie margin"):
            speed_verdict([0.9, 1.1], margin)


WORKERS = [_timed("workers", 1, _phases(rollout=3.0, update=1.0, transfer=0.01)),
           _timed("workers", 2, _phases(rollout=3.5, update=2.0, transfer=0.01), threads=1),
           _timed("workers", 2, _phases(rollout=3.5, update=4.0, transfer=0.01), threads=2)]
DDP = [_timed("ddp", 1, _phases(rollout=3.0, update=0.9, all_reduce=0.1)),
       _timed("ddp", 2, _phases(rollout=3.2, update=1.0, all_reduce=0.3, waiting=0.5))]


def test_the_cost_model_is_fitted_from_the_phases_of_one_and_two_processes():
    workers = fit_cost_model(WORKERS, "workers")
    assert (workers.rollout, workers.update) == pytest.approx((3.01, 1.0))
    assert workers.overhead == pytest.approx(0.5)  # 3.51 + 2.0 - (3.01 + 2 × 1.0)
    assert workers.serial_fraction == pytest.approx(1.0 / 4.01)
    threaded = fit_cost_model(WORKERS, "workers", learner_threads=2)
    assert threaded.thread_speedup == pytest.approx(0.5)  # the update took twice as long on 2 threads
    ddp = fit_cost_model(DDP, "ddp")
    assert (ddp.rollout, ddp.update, ddp.serial_fraction) == pytest.approx((3.0, 1.0, 0.0))
    assert ddp.overhead == pytest.approx(5.0 - 4.0) and ddp.overhead_fraction == pytest.approx(0.25)
    # both points are reproduced: the check is the wall clock against the phases, zero here
    for model, records in ((workers, WORKERS), (threaded, WORKERS), (ddp, DDP)):
        check = model_check(records, model)
        assert list(check["processes"]) == [1.0, 2.0] and check["error"].abs().max() < 1e-9
    with pytest.raises(ValueError, match="workers and ddp"):
        fit_cost_model(DDP, "trainer")
    with pytest.raises(ValueError, match="ddp layout with 2"):
        fit_cost_model(DDP[:1], "ddp")


def test_the_projection_follows_the_model_and_names_the_baseline():
    model = CostModel("ddp", rollout=3.0, update=1.0, overhead=0.4, samples_per_process=100)
    table = project(model, (1, 2, 4), baseline=50.0)
    assert table.loc[4, "samples / s"] == pytest.approx(400 / (4 + 3 * 0.4))
    assert table.loc[1, "speed-up"] == pytest.approx(0.5)
    workers = CostModel("workers", rollout=3.0, update=1.0, overhead=0.0, samples_per_process=100)
    # Amdahl with weak scaling: P workers, the update of all P blocks on one thread
    assert workers.samples_per_s(8) == pytest.approx(800 / (3 + 8))
    with pytest.raises(ValueError, match="processes"):
        model.iteration_seconds(0)


@given(rollout=st.floats(0.01, 10), update=st.floats(0.01, 10), overhead=st.floats(0, 5),
       processes=st.integers(1, 64))
def test_the_models_speed_up_never_exceeds_the_process_count(rollout, update, overhead, processes):
    for layout in ("workers", "ddp"):
        model = CostModel(layout, rollout, update, overhead, samples_per_process=10)
        assert model.samples_per_s(processes) <= processes * model.samples_per_s(1) * (1 + 1e-9)
        # DDP splits the update, workers do not: DDP is never slower at the same overhead
    assert (CostModel("ddp", rollout, update, overhead, 10).samples_per_s(processes)
            >= CostModel("workers", rollout, update, overhead, 10).samples_per_s(processes) * (1 - 1e-9))


def test_the_same_work_in_two_processes_is_compared_by_its_rollout_phase():
    records = [_timed("trainer", 1, _phases(rollout=4.0, update=1.0)) | {"num_envs": 10}] + WORKERS
    reading = same_work_seconds(records, "workers")
    assert reading == {"trainer": 4.0, "workers": 3.0, "ratio": 4.0 / 3.0, "envs": 10}
    with pytest.raises(ValueError, match="10 envs"):
        same_work_seconds(WORKERS, "workers")


def test_phase_table_and_learner_threads_reading():
    records = [r | {"runs": [{"samples_per_s": r["samples_per_s"], "loadavg": [7.0, 0, 0]}]} for r in WORKERS]
    table = phase_table(records + DDP)
    assert table.loc["ddp ×2 (20 envs)", "waiting"] == 0.5 and table.loc["ddp ×2 (20 envs)", "total"] == 5.0
    assert table.loc["ddp ×2 (20 envs)", "samples / s (phases)"] == pytest.approx(40.0)
    reading = learner_threads_reading(records)
    assert reading["faster"] == 1 and reading["ratio"] == pytest.approx(5.51 / 7.51)
    assert reading["loads"] == [7.0, 7.0]
    points = measured_points(speedups([_timed("trainer", 1, _phases(2.0, 2.0))] + records), "workers", threads=1)
    assert sorted(points) == [1, 2] and points[2][0] == pytest.approx(200 / 5.51 / 25)


@given(call=st.floats(1e-6, 1e-2), account=st.floats(1e-9, 1e-5))
def test_the_per_call_fit_recovers_a_linear_cost(call, account):
    sizes = [1, 4, 64, 1024, 16384]
    fit = fit_per_call(sizes, [n / (call + n * account) for n in sizes])
    assert fit["call_seconds"] == pytest.approx(call, rel=1e-6, abs=1e-12)
    assert fit["account_seconds"] == pytest.approx(account, rel=1e-6)
    assert fit["break_even_accounts"] == pytest.approx(call / account, rel=1e-5)


def test_the_per_call_fit_gives_the_slopes_standard_error():
    sizes = [1, 64, 1024, 4096, 16384]
    exact = fit_per_call(sizes, [n / (2e-3 + n * 1e-7) for n in sizes])
    assert exact["account_seconds_se"] == pytest.approx(0, abs=1e-15)  # on the line: no scatter
    # a known case: the seconds 7.1, 6.9, 8.1, 11.9, 9.1 ms (the H200 record's shape); the textbook formula
    seconds = [7.1e-3, 6.9e-3, 8.1e-3, 11.9e-3, 9.1e-3]
    fit = fit_per_call(sizes, [n / t for n, t in zip(sizes, seconds)])
    x, y = np.array(sizes, float), np.array(seconds)
    slope, intercept = np.polyfit(x, y, 1)
    se = np.sqrt(((y - intercept - slope * x) ** 2).sum() / 3 / ((x - x.mean()) ** 2).sum())
    assert fit["account_seconds"] == pytest.approx(slope) and fit["account_seconds_se"] == pytest.approx(se)
    assert fit["account_seconds"] < 2 * fit["account_seconds_se"]  # a slope within its error of 0
    assert math.isnan(fit_per_call([1, 2], [1.0, 1.5])["account_seconds_se"])  # two points: no scatter to read


def test_the_per_call_fit_needs_two_sizes():
    with pytest.raises(ValueError, match="two different sizes"):
        fit_per_call([4, 4], [10.0, 11.0])


def test_peer_table_lists_every_measurement_with_its_rounds():
    records = [
        {"measurement": "summary", "ratios": {"ours/peer": 4.0},
         "targets": {"ours_vs_peer": {"target": 100.0, "best": "ours", "ratio": 4.0, "met": False}}, "skipped": {}},
        {"label": "ours", "library": "finrl_tutorial", "env_steps_per_s": 40.0, "runs": [40.0, 60.0],
         "spread": 0.5, "repeats": 2},
        {"label": "peer", "library": "finrl", "env_steps_per_s": 10.0, "runs": [10.0, 20.0], "spread": 1.0,
         "repeats": 2, "imported": "package"},
    ]
    table = peer_table(records)
    assert list(table["what"]) == ["ours", "peer"] and list(table["max"]) == [60.0, 20.0]


def test_command_line_names_the_package_module():
    assert command_line(["/x/finrl_tutorial/__main__.py", "bench", "env", "--env", "vec"]) == \
        "python -m finrl_tutorial bench env --env vec"
    assert command_line(["finrl-tutorial", "bench", "scale", "--out", "a b"]) == "finrl-tutorial bench scale --out 'a b'"


def test_bench_run_puts_the_command_into_every_record_and_keeps_one_a_bench_wrote(monkeypatch):
    import argparse

    import finrl_tutorial.bench as bench
    from finrl_tutorial.bench import env as env_bench

    written = []

    def fake_run(args):  # like bench gpu/scale: yield the records, then write the same dicts to --out
        records = [{"bench": "env", "x": 1}, {"bench": "env", "command": "its own"}]
        for record in records:
            yield record
        written.extend(dict(r) for r in records)

    monkeypatch.setattr(env_bench, "run", fake_run)
    monkeypatch.setattr("sys.argv", ["/site/finrl_tutorial/__main__.py", "bench", "env", "--num-envs", "4"])
    yielded = list(bench.run(argparse.Namespace(bench="env", threads=1)))
    assert [r["command"] for r in yielded] == ["python -m finrl_tutorial bench env --num-envs 4", "its own"]
    assert [r["command"] for r in written] == [r["command"] for r in yielded]  # the file gets it too


def test_a_peers_file_with_two_runs_is_refused_rather_than_mixed():
    from finrl_tutorial.book import peer_summary
    from finrl_tutorial.errors import InputError

    summary = {"measurement": "summary", "ratios": {}, "targets": {}}
    assert peer_summary([summary]) is summary
    with pytest.raises(InputError, match="one run"):
        peer_summary([summary, dict(summary)])
