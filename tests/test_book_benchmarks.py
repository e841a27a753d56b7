"""Chapter 8's readings (`finrl_tutorial.book.benchmarks`) follow their records.

Each test reads a stored record (or a small one built here, where a branch needs it) and checks
that the chapter's table or reading says what the record says (the chapter's hidden cells check its
Markdown against these readings), every ratio names its baseline, a ratio inside the tie margin is not called
faster, and no GPU figure is claimed for this package without a GPU record. No timing here.
"""
from __future__ import annotations

import copy

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from finrl_tutorial.book import benchmarks, demo, read_records, record_names, scale, teaching  # noqa: E402
from finrl_tutorial.book.report import rollout_share_table  # noqa: E402
from finrl_tutorial.metrics import TIE_MARGIN, stored_verdict  # noqa: E402


@pytest.fixture(scope="module")
def env():
    return pd.DataFrame(read_records("bench_env.jsonl"))


@pytest.fixture(scope="module")
def train():
    return pd.DataFrame(read_records("bench_train.jsonl"))



@pytest.fixture(scope="module")
def speed(quiet):
    return scale.speedups(quiet, layouts=["trainer", "workers", "ddp"])


@pytest.fixture(scope="module")
def anchors():
    return read_records("anchors_elegantrl_h200.jsonl")


@pytest.fixture(scope="module")
def peer_records():
    return read_records("bench_peers.jsonl")


@pytest.fixture(scope="module")
def comparisons(peer_records):
    return benchmarks.peer_verdicts(peer_records)


@pytest.fixture(scope="module")
def full_run():
    return read_records(demo.MAIN_JOB_RECORD)[0]


# --- the collapsed method block and the ratio format --------------------------------------------------

def test_method_note_lists_its_lines_in_a_closed_block():
    note = benchmarks.how_measured(["`bench_x.jsonl` on 2 cores", "round *i* by round *i*"], title="T")
    page = note._repr_markdown_()
    assert page.startswith('<details class="how-measured">') and "<details open" not in page
    assert "\n- `bench_x.jsonl` on 2 cores\n- round *i* by round *i*\n" in page
    assert str(note).splitlines() == ["T", "", "- `bench_x.jsonl` on 2 cores", "- round *i* by round *i*"]


def test_times_prints_one_decimal_from_ten_and_two_below():
    assert benchmarks.times(284.496) == "284.5×" and benchmarks.times(2.4652) == "2.47×"
    assert benchmarks.times(1234.5) == "1,234.5×"


# --- 8.1 where and when --------------------------------------------------------------------------------

def test_sources_table_names_every_record_with_its_device_and_only_the_anchor_is_a_gpu_figure():
    table = benchmarks.sources_table()
    assert set(table.index) == {"bench_env.jsonl", "bench_train.jsonl", scale.SCALE_RECORD, benchmarks.REPEAT_RECORD,
                                "anchors_elegantrl_h200.jsonl", "main_job_5seeds_report.json",
                                "main_job_pathwise_5seeds_report.json", "bench_peers.jsonl",
                                "bench_peers_small_network.jsonl", "bench_learn_small_network.json",
                                "bench_learn_small_network_confirm100.json"}
    for name, row in table.iterrows():
        records = read_records(name)
        machine = records[-1].get("machine") or records[-1]
        if row["device"].startswith("GPU"):
            assert name == "anchors_elegantrl_h200.jsonl" and machine["gpu"] in row["device"]
        else:
            assert row["device"].startswith(f"CPU: {machine['cpu_count']} cores")
        assert row["records"] == len(records)


def test_sources_table_marks_no_gpu_figure_where_no_record_ran_on_a_gpu():
    table = benchmarks.sources_table({"bench_env.jsonl": "8.2 env", "bench_peers.jsonl": "8.8 peers"})
    assert not table["device"].str.startswith("GPU").any() and list(table["section"]) == ["8.2 env", "8.8 peers"]


def test_learners_table_names_the_learner_of_every_record_from_its_config_or_its_date():
    table = benchmarks.learners_table()
    assert set(table.index) == set(record_names("*.json*"))
    # a stored config decides: the 2026-12-04 report ran lambda 0.95 without baselines, the pathwise report with both
    assert table.loc["main_job_5seeds_report.json", "learner"] == "plain"
    assert table.loc["main_job_pathwise_5seeds_report.json", "learner"] == "default"
    # without one, the date: before the default learner's first day, plain
    assert table.loc["bench_learn_realistic.json", "learner"] == "plain"
    assert table.loc["bench_learn_pathwise.json", "learner"] == "default"
    assert table.loc["bench_env.jsonl", "learner"].startswith("none")
    set_plain = {"bench_learn_plain_unseen100.json"}  # the plain learner's fields set with --set on a later package
    for name, row in table.iterrows():
        if not row["learner"].startswith("none") and "config" not in read_records(name)[0] and name not in set_plain:
            assert row["learner"].startswith("plain") == (row["measured"].split(" .. ")[-1] < teaching.DEFAULT_LEARNER_FROM)
    assert all(table.loc[name, "learner"].startswith("plain") for name in set_plain)
    # a record of bench learn --set runs names the fields its cases changed, after the learner they changed
    assert table.loc["bench_learn_ablation.json", "learner"] == "default, with gae_lambda, market_baseline, pathwise changed (--set)"
    assert table.loc["bench_learn_small_update.json", "learner"] == "plain, with hidden_sizes, repeat_times changed (--set)"


def test_commands_note_shows_each_record_command_as_a_reader_runs_it():
    note = str(benchmarks.commands_note(["bench_peers.jsonl", "anchors_elegantrl_h200.jsonl"]))
    assert "/tmp/" not in note and "--out runs/peers.jsonl" in note
    # another program's GPU record runs no command of ours: it is cited by the provenance its first line holds
    assert "not recorded" not in note
    assert ("`anchors_elegantrl_h200.jsonl`: measured on 2026-11-30, on NVIDIA H200 (one GPU), torch CUDA build; "
            "ElegantRL commit `7c64395f`. What it measured, as its first line (`meta`) records: ElegantRL") in note
    assert "Method: 50-200 timed steps after warm-up, `torch.cuda.synchronize()` before reading the clock" in note


def test_commands_note_shows_every_command_of_a_chain_and_names_the_merge():
    note = str(benchmarks.commands_note(["bench_learn_small_network_confirm100.json", "bench_sweep.json"]))
    confirm = next(line for line in note.splitlines() if "confirm100" in line)
    assert confirm.count("`python -m finrl_tutorial bench learn") == 4  # markets 600 and 601-604, both networks
    assert "--seeds 4 --first-seed 601" in confirm and confirm.count("--set hidden_sizes=32,") == 2
    sweep = next(line for line in note.splitlines() if "bench_sweep.json" in line)
    assert "--merge" not in sweep.replace("with `--merge`", "") and "then merged" in sweep


def test_commands_note_gives_a_plain_learner_record_the_command_that_makes_it_today():
    note = str(benchmarks.commands_note(["main_job_5seeds_report.json", "main_job_pathwise_5seeds_report.json"]))
    plain, default = (line for line in note.splitlines() if line.startswith("- `main_job"))
    # both records ran the same recorded command; only the plain learner's needs its settings back
    assert plain.endswith("--gae-lambda 0.95 --no-market-baseline --no-pathwise`")
    assert default.endswith("--out runs/main5`") and "--no-pathwise" not in default


def test_record_provenance_reads_the_meta_line_and_is_empty_without_one(anchors):
    line = benchmarks.record_provenance(anchors)
    meta = anchors[0]["meta"]
    assert meta["date"] in line and meta["device"] in line and "`7c64395f`" in line
    assert benchmarks.record_provenance(read_records("bench_env.jsonl")) == ""
    assert benchmarks.record_provenance([]) == ""


# --- 8.2 env throughput --------------------------------------------------------------------------------

def test_env_readings_compare_the_batched_env_and_the_subprocess_vecenv_at_the_same_accounts(env, quiet):
    pair = benchmarks.batched_vs_subprocess(env)
    assert list(pair.index) == [4]  # the only size both ran
    rates = env.set_index(["env", "num_envs"])["env_steps_per_s"]
    assert pair.loc[4, "batched ÷ subprocess"] == pytest.approx(rates["vec"][4] / rates["subproc"][4])
    two = scale.speedups(quiet, key="env_steps_per_s", baseline="subproc ×2", layouts=["vec"]).loc["vec 2", "speed-up"]
    assert benchmarks.quiet_two_accounts(quiet) == pytest.approx(two)


def test_call_seconds_time_the_batched_call_from_the_vec_column(env):
    rates = env[env["env"] == "vec"].set_index("num_envs")["env_steps_per_s"]
    calls = benchmarks.call_seconds(env)
    assert calls[4] == pytest.approx(4 / rates[4]) and calls[1] == pytest.approx(1 / rates[1])
    assert 0.8 < calls[4] / calls[1] < 1.25  # 8.2's "about as long": the table's vec column, not the vmap one


def test_batched_vs_subprocess_keeps_every_shared_size():
    frame = pd.DataFrame({"env": ["vec", "vec", "subproc", "subproc"], "num_envs": [2, 8, 2, 8],
                          "env_steps_per_s": [400.0, 1600.0, 200.0, 200.0]})
    assert list(benchmarks.batched_vs_subprocess(frame)["batched ÷ subprocess"]) == [2.0, 8.0]


def test_rates_across_records_keep_only_the_sizes_both_hold_and_only_the_named_kind():
    env = pd.DataFrame({"env": ["vec", "vec", "vmap"], "num_envs": [1, 4, 1], "env_steps_per_s": [100.0, 400.0, 50.0]})
    scale_records = [{"layout": "vec", "num_envs": 1, "env_steps_per_s": 50.0},
                     {"layout": "vec", "num_envs": 16, "env_steps_per_s": 900.0},
                     {"layout": "vmap", "num_envs": 4, "env_steps_per_s": 10.0}]
    table = benchmarks.rates_across_records(env, scale_records)
    assert list(table.index) == [1] and table.loc[1, "bench scale ÷ bench env"] == pytest.approx(0.5)


def test_env_note_names_both_records_and_their_dates(env, quiet):
    note = str(benchmarks.env_note(env.to_dict("records"), quiet))
    assert "`bench_env.jsonl`, 2026-12-01" in note and f"`{scale.SCALE_RECORD}` (2026-12-02)" in note


def test_plot_env_throughput_draws_one_line_per_kind_and_names_the_cpu(env):
    fig, ax = plt.subplots()
    benchmarks.plot_env_throughput(env, ax)
    assert {line.get_label() for line in ax.get_lines()} == set(env["env"])
    assert "CPU" in ax.get_title() and f"{env['cpu_count'].iloc[0]} cores" in ax.get_title()
    plt.close(fig)


# --- 8.3 the training loop -----------------------------------------------------------------------------

def test_loop_rows_keep_the_unpaired_rows_at_fifteen_stocks(train):
    loop = benchmarks.loop_rows(train)
    assert set(loop["stocks"]) == {15} and loop["note"].isna().all()
    assert len(train.drop(loop.index)) == int(((train["stocks"] != 15) | train["note"].notna()).sum())
    table = benchmarks.loop_table(loop)
    assert table.loc[1024, ("samples_per_s", "ppo")] == pytest.approx(
        loop[(loop["algo"] == "ppo") & (loop["num_envs"] == 1024)]["samples_per_s"].iloc[0])


def test_loop_cost_reading_carries_the_shares_computed_from_the_records(train, quiet):
    loop = benchmarks.loop_rows(train)
    shares = rollout_share_table(quiet)
    largest = int(shares.index.max())
    reading = benchmarks.loop_cost_reading(quiet)
    assert reading["largest"] == largest
    assert reading["update_share"] == pytest.approx(shares.loc[largest, "update's share of the loop"])
    assert reading["rollout_share"] == pytest.approx(shares.loc[largest, "rollout ÷ bare env"])
    assert reading["rollout_share"] < 0.5
    top = loop[loop["num_envs"] == loop["num_envs"].max()].set_index("algo")
    for algo, row in top.iterrows():
        share = 1 - row["samples_per_s"] / row["rollout_env_steps_per_s"]
        assert benchmarks.update_shares(loop)[algo] == pytest.approx(share)
    # the rows read time the current agent: made after the pairs that time the network's change
    assert benchmarks.loop_rows_current(train, loop) and not benchmarks.loop_rows_predate(train, loop)


def test_loop_rows_are_dated_against_the_pairs_either_way(train):
    loop = benchmarks.loop_rows(train)
    earlier = train.copy()
    earlier.loc[loop.index, "date"] = "2026-11-30T00:00:00+00:00"  # as if measured before the pairs
    assert benchmarks.loop_rows_predate(earlier, loop.assign(date=earlier.loc[loop.index, "date"]))
    assert not benchmarks.loop_rows_current(earlier, loop.assign(date=earlier.loc[loop.index, "date"]))
    alone = train.loc[loop.index]  # nothing left out: neither
    assert not benchmarks.loop_rows_predate(alone, loop) and not benchmarks.loop_rows_current(alone, loop)


def test_the_loop_figure_draws_both_algorithms_and_dates_its_two_records(train, env):
    loop = benchmarks.loop_rows(train)
    fig, ax = plt.subplots()
    benchmarks.plot_loop(loop, env, ax)
    labels = [line.get_label() for line in ax.get_lines()]
    assert labels[:4] == ["PPO: whole loop", "PPO: rollout only", "A2C: whole loop", "A2C: rollout only"]
    assert labels[4] == "env alone (8.2, 2026-12-01)" and "(15 stocks, 2026-12-04)" in ax.get_title()
    plt.close(fig)


def test_the_two_loop_records_are_set_side_by_side_at_the_sizes_both_hold(train, quiet):
    loop = benchmarks.loop_rows(train)
    side = benchmarks.loop_records_side_by_side(loop, quiet)
    shares = rollout_share_table(quiet)
    assert list(side.index) == [16, 64, 256]  # PPO's bench train sizes that the scale record's loop rows hold
    ppo = loop[loop["algo"] == "ppo"].set_index("num_envs")
    for n in side.index:
        assert side.loc[n, "bench train: samples / s"] == ppo.loc[n, "samples_per_s"]
        assert side.loc[n, "bench train: update's share"] == pytest.approx(
            1 - ppo.loc[n, "samples_per_s"] / ppo.loc[n, "rollout_env_steps_per_s"])
        assert side.loc[n, "bench scale: update's share"] == shares.loc[n, "update's share of the loop"]
    # two runs: the shares agree within a few points while the rates do not
    assert (abs(side["bench train: update's share"] - side["bench scale: update's share"]) < 0.05).all()


def test_repeat_reading_gives_each_benchs_runs_and_their_spread_around_the_median():
    records = read_records(benchmarks.REPEAT_RECORD)
    reading = benchmarks.repeat_reading(records)
    every = [r["samples_per_s"] for r in records]
    assert sorted(reading["runs"]) == ["scale", "train"] and sum(map(len, reading["runs"].values())) == len(every)
    assert reading["median"] == pytest.approx(pd.Series(every).median())
    assert reading["low"] == pytest.approx(min(every) / reading["median"] - 1)
    assert reading["low"] <= 0 <= reading["high"]
    assert reading["outside"] == sum(abs(v / reading["median"] - 1) > scale.SPEED_TIE_MARGIN for v in every)
    assert reading["num_envs"] == [64] and reading["stocks"] == [15] and len(reading["platforms"]) == 1


def test_repeat_reading_counts_a_run_outside_the_margin_and_refuses_an_empty_record():
    rows = [{"bench": "train", "samples_per_s": v, "num_envs": 64, "stocks": 15, "date": "2026-12-04T00:00:00+00:00",
             "platform": "Linux-x"} for v in (100.0, 101.0, 110.0)]
    reading = benchmarks.repeat_reading(rows)
    assert reading["median"] == 101.0 and reading["outside"] == 1 and reading["platforms"] == ["Linux-x"]
    with pytest.raises(ValueError):
        benchmarks.repeat_reading([{"bench": "train"}])


def test_platforms_read_the_raw_string_at_the_top_or_in_machine(quiet):
    assert benchmarks.platforms([{"platform": "a"}, {"machine": {"platform": "b"}}, {}]) == ["a", "b"]
    assert all("fc-v" in p for p in benchmarks.platforms(quiet))


def test_clamped_overheads_name_only_the_models_whose_fitted_overhead_is_negative(quiet):
    models = benchmarks.cost_models(quiet)
    clamped = benchmarks.clamped_overheads(models)
    assert set(clamped) == {name for name, model in models.items() if model.overhead < 0}
    for name, overhead in clamped.items():
        assert overhead == models[name].overhead < 0 and models[name].projectable().overhead == 0


def test_the_loop_and_the_trainer_at_the_same_envs_are_two_measurements(quiet):
    both = benchmarks.loop_vs_trainer(quiet)
    vec = next(r for r in quiet if r["layout"] == "vec" and r["num_envs"] == 64)
    trainer = next(r for r in quiet if r["layout"] == "trainer" and r["num_envs"] == 64 and r["learner_threads"] == 1)
    assert both["loop"] == vec["samples_per_s"] and both["trainer"] == trainer["samples_per_s"]
    assert both["trainer rollout"] == pytest.approx(trainer["samples_per_iteration"] / trainer["phases"]["rollout"])
    assert both["trainer phases"] == pytest.approx(trainer["samples_per_iteration"] / sum(trainer["phases"].values()))


def test_loop_note_explains_the_rows_left_out_with_their_load(train, quiet):
    loop = benchmarks.loop_rows(train)
    note = str(benchmarks.loop_note(train, loop, quiet))
    left_out = train.drop(loop.index)
    assert f"Left out: {len(left_out)} rows at 30, 100 and 300 stocks" in note
    loads = pd.concat([left_out["loadavg_before"], left_out["loadavg_after"]]).str[0]
    assert f"Load average {loads.min():.1f}–{loads.max():.1f} on 2 cores, over those {len(left_out)} runs" in note
    read_loads = pd.concat([loop["loadavg_before"], loop["loadavg_after"]]).str[0]
    assert f"{len(loop)} rows of `bench_train.jsonl` at 15 stocks (2026-12-04)" in note
    assert f"load average {read_loads.min():.1f}–{read_loads.max():.1f} on 2 cores, before and after each" in note
    assert (read_loads.min(), read_loads.max()) == (0.21, 0.71)  # a quiet machine: well within its 2 cores
    # which rows are the current agent's: the read rows and the scale record both follow the change the pairs time
    assert ("These rows ran on 2026-12-04 with the stockwise network as the installed package has it. The left-out rows "
            "below (2026-12-01) timed an older version and this one back to back; these rows match their second run.") in note
    assert "today's" not in note
    assert "before the change" not in note and "latest change" not in note
    assert f"`{scale.SCALE_RECORD}` (2026-12-02, after that change)" in note
    reading = benchmarks.loop_cost_reading(quiet)
    assert f"over its {len(reading['loads'])} loop runs (1 to 256 envs)" in note
    assert "versions of the package" not in note and "Linux" not in note
    assert "as changed on" not in note and "the change that" not in note


# --- 8.4 scale-out -------------------------------------------------------------------------------------

def test_scale_table_reads_speedups_and_names_the_baseline(speed, quiet):
    table = benchmarks.scale_table(speed, quiet)
    base = speed["baseline"].iloc[0]
    assert base == "in-process trainer (128 envs, 2 threads)"  # the fastest single-process configuration
    assert table.loc[base, "verdict"] == "the baseline" and table.loc[base, "× baseline"] == 1
    for label, row in speed.drop(index=base).iterrows():
        assert table.loc[label, "× baseline"] == pytest.approx(row["speed-up"])
        assert table.loc[label, "rounds"] == f"{row['rounds min']:.2f}–{row['rounds max']:.2f}×"
        assert table.loc[label, "verdict"].split()[0] == row["verdict"]
    assert table.loc["ddp ×2 (128 envs)", "optimiser steps × minibatch"] == "16 × 2,048"
    family = benchmarks.scale_family(speed, quiet)  # the Holm column: every verdict tested together
    assert list(family.index) == [label for label in speed.index if label != base]
    assert pd.isna(table.loc[base, "p (Holm)"])
    assert table.drop(index=base)["p (Holm)"].tolist() == pytest.approx(family.loc[table.index.drop(base), "p (Holm)"].tolist())
    assert (table.drop(index=base)["p (Holm)"] > 0.05).all()  # 3 rounds: none significant after Holm
    assert table.loc[base, "optimiser steps × minibatch"] == "32 × 1,024"


def test_only_ddp_with_two_ranks_runs_another_update(speed, quiet):
    different = [label for label in speed.index if benchmarks.other_update(speed, quiet, label)]
    assert different == ["ddp ×2 (128 envs)"]
    assert "16 optimiser steps of 2,048" in benchmarks.other_update(speed, quiet, different[0])


def test_optimiser_steps_of_two_ranks_are_fewer_and_larger_on_the_same_samples(speed, quiet):
    base = benchmarks.optimiser_steps(speed, quiet, speed["baseline"].iloc[0])
    ddp = benchmarks.optimiser_steps(speed, quiet, "ddp ×2 (128 envs)")
    assert ddp[0] < base[0] and ddp[0] * ddp[1] == base[0] * base[1]
    assert benchmarks.other_update(speed, quiet, "workers ×2 (128 envs, update on 2 threads)") == ""


def test_projection_table_is_the_cost_models_projection(speed, quiet):
    models = benchmarks.cost_models(quiet)
    table = benchmarks.projection_table(models, speed)
    base = float(speed.loc[speed["baseline"].iloc[0], "median"])
    assert benchmarks.PROJECTED_UP_TO == 8  # as chapters 4 and 5: a two-point fit is drawn no further
    for name, model in models.items():
        assert table.loc[name, "projected at 8: × the fastest in-process trainer"] == pytest.approx(
            scale.project(model, (8,), baseline=base).loc[8, "speed-up"])
        assert table.loc[name, "serial fraction"] == pytest.approx(model.serial_fraction)
    assert set(table.columns) < set(benchmarks.PROJECTION_FORMATS)


def test_projection_table_also_reads_like_with_like_against_a_trainer_with_as_many_envs(speed, quiet):
    models = benchmarks.cost_models(quiet)
    trainer = scale.fit_trainer_model(quiet)
    table = benchmarks.projection_table(models, speed, trainer=trainer)
    assert set(benchmarks.PROJECTION_FORMATS) == set(table.columns)
    same = "projected at 8: × one in-process trainer with as many envs"
    for name, model in models.items():
        assert table.loc[name, same] == pytest.approx(scale.project(model, (8,), baseline=trainer).loc[8, "speed-up"])
        # a trainer with 8 processes' envs is faster than the fastest one measured: a smaller speed-up
        assert table.loc[name, same] < table.loc[name, "projected at 8: × the fastest in-process trainer"]


def test_scale_note_holds_the_rounds_and_the_loads(speed, quiet):
    note = str(benchmarks.scale_note(speed, quiet))
    assert f"Load average {speed['load min'].min():.1f}–{speed['load max'].max():.1f} on 2 cores" in note
    assert f"{int(speed['repeats'].max())} interleaved rounds" in note and "/tmp" not in note
    assert f"over the {int(speed['repeats'].max())} rounds of all {len(speed)} configurations of the table" in note
    assert speed["load max"].max() < quiet[0]["cpu_count"] and "below the number of cores" in note  # what the note claims


def test_the_cost_model_figure_stops_at_eight_processes(speed, quiet):
    fig, ax = plt.subplots()
    benchmarks.plot_cost_models(benchmarks.cost_models(quiet), speed, ax)
    assert max(max(line.get_xdata(), default=0) for line in ax.get_lines()) == 8
    assert "projected to 8" in ax.get_title()
    plt.close(fig)
    fig, ax = plt.subplots()
    benchmarks.plot_cost_models(benchmarks.cost_models(quiet), speed, ax, trainer=scale.fit_trainer_model(quiet))
    assert "against one in-process trainer with as many envs" in ax.get_title().replace("\n", " ")
    plt.close(fig)


def test_measured_over_model_reads_the_figures_points_against_its_lines(speed, quiet):
    models, trainer = benchmarks.cost_models(quiet), scale.fit_trainer_model(quiet)
    gaps = benchmarks.measured_over_model(models, speed, trainer)
    assert set(gaps) == {(name, p) for name in models for p in (1, 2)}
    # the same ratio by hand for DDP at 2 ranks: the measured median speed-up over the model's
    ddp = models[benchmarks.DDP_MODEL]
    point = scale.measured_points(speed, "ddp", baseline=trainer, samples_per_process=ddp.samples_per_process)[2][0]
    line = ddp.projectable().samples_per_s(2) / trainer.samples_per_s(2 * ddp.samples_per_process)
    assert gaps[benchmarks.DDP_MODEL, 2] == point / line
    assert all(0.9 < gap < 1.0 for gap in gaps.values())  # the runs lie a little below the phases' model


# --- 8.5 GPU -------------------------------------------------------------------------------------------

def test_anchor_cites_the_record_with_date_device_commit_and_method(anchors):
    cited = benchmarks.anchor(anchors)
    row = next(r for r in anchors if r.get("bench") == "elegantrl_StockTradingVecEnv" and r.get("num_envs") == 4096)
    assert cited["env_steps_per_s"] == row["env_steps_per_s"]
    assert (cited["date"], cited["commit"], cited["gpu"]) == ("2026-11-30", "7c64395f", "NVIDIA H200")
    assert cited["method"] == anchors[0]["meta"]["method"]
    note = str(benchmarks.gpu_note(anchors))
    assert "`torch.cuda.synchronize()`" in note and "`elegantrl/envs/StockTradingEnv.py`" in note
    assert ("Source: a measurement of ElegantRL on one NVIDIA H200 (2026-11-30, ElegantRL commit `7c64395f`, the method "
            "above), stored as `anchors_elegantrl_h200.jsonl`.") in note
    assert "elegantrl_h200_2026-11-30" not in note  # one file name: the stored record's


def test_graph_replay_checks_read_the_gpu_records():
    assert benchmarks.graph_replay_checks(pd.DataFrame()) == {}
    gpu = pd.DataFrame([{"bench": "gpu", "ok": True, "file": "a.json"}, {"bench": "env", "ok": None, "file": "a.json"}])
    assert benchmarks.graph_replay_checks(gpu) == {"a.json": True}


def test_plot_gpu_throughput_draws_gpu_measurements_only(anchors):
    fig, ax = plt.subplots()
    benchmarks.plot_gpu_throughput(anchors, pd.DataFrame(), ax)
    labels = [line.get_label() for line in ax.get_lines()]
    assert "ElegantRL's StockTradingVecEnv" in labels and not any("this package" in label for label in labels)
    assert "NVIDIA H200" in ax.get_title() and "this package's env has no GPU record" in ax.get_title()
    plt.close(fig)


# --- 8.6 and 8.7 results over seeds ---------------------------------------------------------------------

def test_full_run_readings_follow_the_report(full_run):
    versus = full_run["sharpe_vs_buy_and_hold"]
    assert stored_verdict(versus, versus.get("margin", TIE_MARGIN)) == "tie"
    untrained = benchmarks.untrained_reading(full_run)
    assert untrained["at_or_below"] == sum(s <= untrained["untrained"] + 1e-9 for s in untrained["seeds"]) == 5
    # every baseline within one seed-std: equal-shares buy-and-hold (2.33 against 2.32 ± 0.02), not equal-weight (2.38)
    agent, std = full_run["agent"]["sharpe_ratio"], full_run["agent_std"]["sharpe_ratio"]
    inside = {name: row["sharpe_ratio"] for name, row in full_run["baselines"].items()
              if abs(row["sharpe_ratio"] - agent) <= std}
    assert benchmarks.within_one_std(full_run) == inside and set(inside) == {"equal_shares_buy_and_hold"}
    assert "random" not in inside


def test_full_run_readings_move_with_the_report(full_run):
    better = copy.deepcopy(full_run)
    better["agent"]["sharpe_ratio"] = 3.0
    better["agent_std"]["sharpe_ratio"] = 0.01
    per_seed = better["agent_per_seed"]
    for row in per_seed.values() if isinstance(per_seed, dict) else per_seed:
        row["sharpe_ratio"] = 3.0
    assert benchmarks.untrained_reading(better)["at_or_below"] == 0 and benchmarks.within_one_std(better) == {}


def test_full_run_note_holds_the_machine_and_the_command(full_run):
    note = str(benchmarks.full_run_note(demo.MAIN_JOB_RECORD, full_run))
    assert f"{full_run['env_steps']:,} env-steps in {full_run['wall_seconds']:,.0f} s on 2 CPU cores" in note
    assert f"`{full_run['command']}`." in note and "plain learner" not in note
    # the plain learner's record of the same command is made again with the plain learner's flags
    plain = read_records("main_job_5seeds_report.json")[0]
    plain_note = str(benchmarks.full_run_note("main_job_5seeds_report.json", plain))
    assert f"`{teaching.reader_command(plain['command'], plain=True)}` makes it again" in plain_note
    assert "--no-market-baseline --no-pathwise" in plain_note


def test_seed_table_gives_the_gap_in_standard_errors_and_the_bootstrap_verdict(full_run):
    rows = benchmarks.seed_table(full_run).data["this run"]
    mean, std = full_run["agent"]["sharpe_ratio"], full_run["agent_std"]["sharpe_ratio"]
    hold = full_run["baselines"]["equal_weight_buy_and_hold"]["sharpe_ratio"]
    error = std / len(full_run["seeds"]) ** 0.5
    assert rows["agent test Sharpe, mean ± std over seeds"] == f"{mean:.2f} ± {std:.2f} (5 seeds)"
    assert rows["gap, agent − buy-and-hold"] == f"{mean - hold:+.2f}"
    assert rows["gap in standard errors (signed)"] == f"{(mean - hold) / error:+.1f}"
    assert rows["standard error of the mean over seeds (std ÷ √K)"] == f"{error:.3f}"
    assert rows["verdict"] == "tie" and rows["bootstrap Sharpe difference, 95 % interval"] == "-0.06 [-0.23, +0.11]"
    flat = copy.deepcopy(full_run)
    flat["agent_std"]["sharpe_ratio"] = 0.0
    assert benchmarks.seed_table(flat).data["this run"]["gap in standard errors (signed)"] == benchmarks.NO_SEED_GAP
    flat["agent_std"]["sharpe_ratio"] = 0.004  # prints as 0.00: no gap in such standard errors either
    assert benchmarks.seed_table(flat).data["this run"]["gap in standard errors (signed)"] == benchmarks.NO_SEED_GAP


# --- 8.8 peers -----------------------------------------------------------------------------------------

def test_peer_verdicts_follow_the_books_one_rule(comparisons):
    # glossary "Tie": faster when every round's ratio lies above 1, even where the median is within the margin
    row = comparisons.loc["our PPO (1,024) ÷ our PPO (64)"]
    assert row["verdict"] == "faster" and abs(row["ratio of medians"] - 1) <= scale.SPEED_TIE_MARGIN
    assert row["round by round: min"] > 1
    assert "reading" not in comparisons and not hasattr(benchmarks, "peer_reading")
    faster = comparisons[comparisons["verdict"] == "faster"]
    assert (faster["round by round: min"] > 1).all()


def test_the_peer_ratios_are_also_tested_as_one_family_with_holm(comparisons):
    family = benchmarks.peer_family(comparisons)
    assert list(family.index) == list(comparisons.index) and {"p (Holm)", "Holm verdict"} <= set(family.columns)
    assert all(len(rounds) == 5 for rounds in family["rounds"])
    assert (family["p (Holm)"] >= 0).all() and (family["p (Holm)"] <= 1).all()
    # Holm's adjusted p-values are never below the unadjusted ones
    raw = scale.holm_speed_tests(dict(zip(comparisons.index, comparisons["rounds"])))["p (t)"]
    assert (family["p (Holm)"] >= raw - 1e-12).all()
    ours = family[family["numerator"] == "our_ppo_1024"].iloc[0]
    assert ours["verdict"] == "faster" and ours["Holm verdict"] == "inconclusive"  # every round above 1, yet not shown


def test_peer_verdicts_compare_two_libraries_only_at_the_same_accounts(peer_records, comparisons):
    by_label = {r["label"]: r for r in peer_records if "label" in r}
    for label, row in comparisons.iterrows():
        sides = by_label[row["numerator"]], by_label[row["baseline"]]
        if sides[0]["library"] != sides[1]["library"]:
            assert row["compares"] == "same accounts", label
        assert " ÷ " in label, label


def test_peers_note_names_the_command_and_the_installed_versions(peer_records):
    note = str(benchmarks.peers_note(peer_records, __import__("finrl_tutorial").book.peer_table(peer_records)))
    assert "--out runs/peers.jsonl" in note and "/tmp" not in note and "stockstats 0.6.10" in note


def test_plot_peers_draws_both_panels(peer_records, comparisons):
    fig = plt.figure(figsize=(10, 8), layout="constrained")
    benchmarks.plot_peers(peer_records, comparisons, fig)
    axes = [ax for sub in fig.subfigs for ax in sub.axes]
    assert len(axes) == 2 and len(axes[1].patches) == int(comparisons["compares"].isin(
        ["same accounts", "batching, ours"]).sum())
    assert "on a CPU" in fig._suptitle.get_text()
    plt.close(fig)


# --- the box ---------------------------------------------------------------------------------------------

def test_chapter_box_names_each_record_its_device_and_its_baseline(full_run, peer_records, anchors):
    from finrl_tutorial import make_config

    records = {"env": read_records("bench_env.jsonl"), "scale": read_records(scale.SCALE_RECORD)}
    box = benchmarks.chapter_box(full_run, make_config("ppo"), 5, records, full_run, peer_records, anchors)
    recorded = {name: value for group, name, value in box.rows if group.startswith("full size")}
    assert not any("best" in name for name in recorded)  # a layout is named, never called the best
    ddp = recorded[f"ddp ×2 (128 envs) ÷ fastest in-process trainer, CPU ({scale.SCALE_RECORD})"]
    assert ddp.startswith("1.29×, faster in every round (adjusted p 0.46, Holm over 7 comparisons); not like with "
                          "like: 16 optimiser steps of 2,048 samples against the baseline's 32 of 1,024")
    workers = recorded[f"workers ×2 (128 envs, update on 2 threads) ÷ fastest in-process trainer, CPU "
                        f"({scale.SCALE_RECORD})"]
    assert workers == "1.06×, inconclusive (adjusted p 0.65, Holm over 7 comparisons)"
    gpu = next(name for name in recorded if "H200" in name)
    assert "another program on another device" in gpu and "7c64395f" in gpu
    assert all("CPU" in name for name in recorded if "bench_" in name)
    verdict = stored_verdict(full_run["sharpe_vs_buy_and_hold"], full_run["sharpe_vs_buy_and_hold"]["margin"])
    assert recorded[f"the full-size run, 5 seeds ({demo.MAIN_JOB_RECORD})"].endswith(verdict)


def test_the_box_says_why_fast_modes_seeds_do_not_spread(full_run):
    seeds = {"0": {"sharpe_ratio": 2.355}, "1": {"sharpe_ratio": 2.3607}, "2": {"sharpe_ratio": 2.3636}}
    report = {"agent": {"sharpe_ratio": 2.3598}, "agent_std": {"sharpe_ratio": 0.0043}, "agent_per_seed": seeds,
              "baselines": {"untrained_agent": {"sharpe_ratio": 2.361}}}
    assert benchmarks.seed_spread(report) == "2.36 ± 0.00"  # a full run keeps the number alone
    assert benchmarks.seed_spread(report, fast=True) == (
        "2.36 ± 0.00: the spread is 0 because fast mode trains too little to move the agent; every seed ends "
        "within 0.01 of the untrained agent's 2.36")
    full = f"{full_run['agent']['sharpe_ratio']:.2f} ± {full_run['agent_std']['sharpe_ratio']:.2f}"
    assert benchmarks.seed_spread(full_run, fast=True) == full  # a spread that does not round to 0 needs no note


def test_record_learner_reads_the_plain_learner_set_on_a_later_package():
    from finrl_tutorial.book import benchmarks as book_benchmarks

    assert book_benchmarks.record_learner("bench_learn_plain_unseen100.json").startswith("plain")
    assert book_benchmarks.record_learner("bench_learn.json") == "plain"  # by its date
    assert book_benchmarks.record_learner("bench_learn_confirm100.json") == "default"
    # one change off per group is not the plain learner: the fields it changed are named
    assert book_benchmarks.record_learner("bench_learn_ablation.json").startswith("default, with ")
