"""Chapter 4's readings (`finrl_tutorial.book.workers`) say what their records say.

Every table, figure and folded block is checked against the numbers computed from the recorded
``bench scale`` records (or from a small hand-made input where a branch needs one): the number in a
line is the one the record gives and the baseline of every ``N×`` is named. The chapter's own
sentences are checked by its hidden cells. No timing: nothing here trains.
"""
from __future__ import annotations

import copy
import re
from types import SimpleNamespace

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from finrl_tutorial.book import scale, workers  # noqa: E402
from finrl_tutorial.book.teaching import reader_command  # noqa: E402
from finrl_tutorial.training.workers import DEFAULT_LEARNER_THREADS  # noqa: E402


@pytest.fixture(scope="module")
def record(quiet):
    return quiet


@pytest.fixture(scope="module")
def loaded_records(loaded):
    return loaded


@pytest.fixture(scope="module")
def table(record):
    return scale.speedups(record, layouts=["trainer", "workers"])


@pytest.fixture(scope="module")
def phases(record):
    return scale.phase_table(record, layouts=("trainer", "workers"))


@pytest.fixture(scope="module")
def models(record):
    return {threads: scale.fit_cost_model(record, "workers", learner_threads=threads) for threads in (2, 1)}


def _result(steps: int, rate: float, episodes=(1, 2)):
    """A stand-in for a `TrainResult`: what `live_table` reads of one."""
    return SimpleNamespace(env_steps=steps, samples_per_s=rate, log=pd.DataFrame({"train/episodes": list(episodes)}))


def _runs(rates: dict):
    return {key: _result(32_768, rate) for key, rate in rates.items()}


LIVE_RATES = {(0, 1): 4000.0, (0, 2): 5000.0, (1, 1): 3800.0, (2, 1): 4500.0, (2, 2): 5250.0}


# --- the collapsed block -----------------------------------------------------------------------

def test_method_note_lists_its_lines_in_a_closed_block():
    block = workers.method_note(["**Rounds.** run `bench scale`"], "How this was measured")
    page = block._repr_markdown_()
    assert page.startswith('<details class="how-measured">') and "open" not in page.split(">")[0]
    assert "\n- **Rounds.** run `bench scale`\n" in page
    assert str(block) == "How this was measured\n\n- **Rounds.** run `bench scale`"


def test_plot_start_windows_draws_one_bar_per_worker_and_names_the_split_years():
    dates = pd.bdate_range("2015-01-05", periods=30)
    layouts = {1: [(0, 29)], 2: [(0, 15), (15, 29)]}
    fig, ax = plt.subplots()
    workers.plot_start_windows(layouts, dates, ax)
    assert len(ax.patches) == 3
    assert [t.get_text() for t in ax.get_yticklabels()] == ["1 worker", "2 workers"]
    assert ax.get_title().endswith("(train split, 2015)")
    plt.close(fig)
    fig, ax = plt.subplots()
    workers.plot_start_windows({1: [(0, 29)]}, pd.bdate_range("2015-12-18", periods=30), ax)
    assert ax.get_title().endswith("(train split, 2015–2016)")
    plt.close(fig)


def test_live_table_sets_every_run_against_the_fastest_in_process_trainer():
    live = workers.live_table(_runs(LIVE_RATES), {key: 0.5 for key in LIVE_RATES})
    assert list(live.index) == ["in-process trainer, 1 thread", "in-process trainer, 2 threads",
                                "1 worker, update on 1 thread", "2 workers, update on 1 thread",
                                "2 workers, update on 2 threads"]
    assert list(live["workers"]) == [0, 0, 1, 2, 2] and list(live["update threads"]) == [1, 2, 1, 1, 2]
    assert workers.fastest_trainer(live) == "in-process trainer, 2 threads"
    assert live["÷ fastest in-process trainer"].tolist() == pytest.approx([r / 5000.0 for r in LIVE_RATES.values()])
    assert (live["episodes finished"] == 3).all() and (live["env-steps"] == 32_768).all()
    assert "load average" not in workers.live_view(live).data.columns  # method detail: into the block
    # the fastest trainer is the baseline even when the trainer on one thread is the faster one
    swapped = workers.live_table(_runs(LIVE_RATES | {(0, 1): 6000.0}))
    assert workers.fastest_trainer(swapped) == "in-process trainer, 1 thread"
    assert swapped["load average"].isna().all()
    with pytest.raises(ValueError):
        workers.fastest_trainer(live[live["workers"] > 0])


def test_a_live_table_warns_under_itself_when_the_machine_was_oversubscribed():
    quiet = workers.live_table(_runs(LIVE_RATES), {key: 1.5 for key in LIVE_RATES})
    assert "caption" not in workers.live_view(quiet, cores=2).to_html()
    busy = workers.live_table(_runs(LIVE_RATES), {key: 1.5 for key in LIVE_RATES} | {(2, 2): 6.25})
    page = workers.live_view(busy, cores=2).to_html()
    assert "<caption>Oversubscribed: the load average reached 6.2 on 2 cores" in page
    assert "caption" not in workers.live_view(busy).to_html()  # no cores given: no claim about them
    assert workers.oversubscribed_note(2.0, 2) == "" and workers.oversubscribed_note(float("nan"), 2) == ""


def test_live_method_names_the_budget_and_the_load_range():
    live = workers.live_table(_runs(LIVE_RATES), {(0, 1): 0.4, (0, 2): 1.6, (1, 1): 0.9, (2, 1): 1.0, (2, 2): 1.2})
    text = str(workers.live_method(live, cores=2, total_steps=32_768))
    assert "32,768 env-steps" in text and "0.4–1.6 over the runs above, on 2 cores" in text and "`eval_every=0`" in text
    assert "below the cores" in text and "shared the machine" not in text
    busy = workers.live_table(_runs(LIVE_RATES), {key: 2.5 for key in LIVE_RATES})
    text = str(workers.live_method(busy, cores=2, total_steps=32_768))
    assert "2.5 over the runs above, on 2 cores" in text and "above the cores, so the runs shared the machine" in text


# --- 4.4: the stored record -------------------------------------------------------------------

def test_phase_view_and_plot_show_the_records_phases(phases):
    shown = workers.phase_view(phases).data
    assert list(shown.columns) == ["rollout", "transfer", "update", "total", "samples / s"]
    assert shown["update"].equals(phases["update"]) and shown["samples / s"].equals(phases["samples / s (measured)"])
    fig, ax = plt.subplots()
    workers.plot_phases(phases, ax, cores=2)
    assert len(ax.patches) == 3 * len(phases) and "2 CPU cores" in ax.get_title()
    plt.close(fig)


def test_worker_labels_need_every_worker_row(table):
    with pytest.raises(ValueError):
        workers.worker_labels(table[~table.index.str.contains("on 1 thread")])


def test_record_method_holds_the_records_provenance_rounds_loads_and_noise_floor(record, phases, table):
    text = str(workers.record_method(record, scale.SCALE_RECORD, phases))
    first = record[0]
    assert f"`{scale.SCALE_RECORD}`" in text and f"`{reader_command(first['command'])}`" in text
    assert f"{first['cpu_count']} CPU cores" in text and first["date"][:10] in text
    assert f"{int(table['repeats'].max())} rounds" in text
    assert f"±{100 * scale.SPEED_TIE_MARGIN:g} %" in text
    loads = [run["loadavg"][0] for r in record if r["layout"] in ("trainer", "workers") for run in r["runs"]]
    assert (f"{min(loads):.1f}–{max(loads):.1f} over the runs of the in-process trainer and the workers, "
            f"on {first['cpu_count']} cores") in text
    assert workers.load_range(record, ("trainer", "workers")) in text
    assert "a quiet machine" in text and "busy machine" not in text
    same = scale.same_work_seconds(record, "workers")
    assert f"took {same['trainer']:.2f} s in the in-process trainer and {same['workers']:.2f} s in one worker" in text
    one_worker = workers.worker_labels(table)[0]
    worker_update = phases.loc[one_worker, "update"]
    trainer_update = phases.loc[f"in-process trainer ({same['envs']} envs)", "update"]
    larger = max(worker_update, trainer_update) / min(worker_update, trainer_update) - 1
    assert f"{worker_update:.2f} s and {trainer_update:.2f} s per iteration, the larger {larger:.0%} above the smaller" in text
    # a busy record says so
    busy = copy.deepcopy(record)
    for r in busy:
        for run in r.get("runs") or [r]:
            if run.get("loadavg"):
                run["loadavg"] = [9.0, 9.0, 9.0]
    assert "busy machine's figures" in str(workers.record_method(busy, "busy.jsonl", phases))


# --- 4.5: one learner thread or two --------------------------------------------------------------

def test_threads_table_says_what_the_two_records_say(record, loaded_records):
    quiet = scale.learner_threads_reading(record)
    loaded = scale.learner_threads_reading(loaded_records)
    shown = workers.threads_table(quiet, loaded).data
    assert shown.loc["quiet machine", "2 threads ÷ 1 thread"] == pytest.approx(quiet["ratio"])
    assert shown.loc["same machine, heavy load", "update s, 2 threads"] == pytest.approx(loaded["update seconds"][2])
    column = "load average over the runs of two workers"
    assert shown.loc["quiet machine", column] == f"{min(quiet['loads']):.1f}–{max(quiet['loads']):.1f}"
    # the same runs, the same function as every other load range of the chapter
    assert f"{shown.loc['quiet machine', column]} over the runs of two workers" == workers.load_range(record, ("workers",), 2)
    assert f"{shown.loc['same machine, heavy load', column]} over the runs of two workers" == \
        workers.load_range(loaded_records, ("workers",), 2)


def test_loaded_method_names_the_loaded_record_and_its_loads(loaded_records):
    text = str(workers.loaded_method(loaded_records, scale.LOADED_SCALE_RECORD))
    loads = [run["loadavg"][0] for r in loaded_records if r["layout"] in ("trainer", "workers") for run in r["runs"]]
    assert f"`{scale.LOADED_SCALE_RECORD}`" in text
    assert f"{min(loads):.1f}–{max(loads):.1f} over the runs of the in-process trainer and the workers, on 2 cores" in text


# --- 4.6: the cost model ---------------------------------------------------------------------------

def test_model_checks_hold_both_models_points_and_the_default_is_labelled(record, models):
    check = workers.model_checks(record, models)
    assert len(check) == 4
    assert set(check.index.get_level_values(0)) == {workers.model_label(2), workers.model_label(1)}
    assert workers.model_label(DEFAULT_LEARNER_THREADS).endswith("(default)")
    assert "processes" not in workers.check_view(check).data.columns


def test_fit_table_gives_the_models_numbers(models):
    model = models[2]
    fitted = workers.fit_table(model)["fitted on the record"]
    assert fitted["r"] == f"{model.rollout:.2f} s per iteration" and fitted["u"] == f"{model.update:.2f} s per iteration"
    assert fitted["s = u / (r + u)"] == f"{model.serial_fraction:.0%}" and fitted["t"] == f"{model.thread_speedup:.2f}"
    assert fitted["o"].startswith(f"{model.overhead:+.3f} s per iteration")
    # the quiet record's default model fits a negative overhead: the table says the projection uses 0
    assert model.overhead < 0 and fitted["o"].endswith("; the projection uses 0")
    assert not workers.fit_table(models[1])["fitted on the record"]["o"].endswith("uses 0")


def test_projection_inputs_pair_each_model_with_its_measured_points(table, models):
    labelled, measured = workers.projection_inputs(models, table)
    assert list(labelled) == [workers.model_label(2), workers.model_label(1)]
    for threads, label in ((2, workers.model_label(2)), (1, workers.model_label(1))):
        assert measured[label] == scale.measured_points(table, "workers", threads=threads)
        assert set(measured[label]) == {1, 2}


def test_projection_inputs_against_the_trainer_with_as_many_envs(quiet, table, models):
    trainer = scale.fit_trainer_model(quiet)
    _, measured = workers.projection_inputs(models, table, trainer)
    for label, points in measured.items():  # at 2 workers (128 envs) the baseline is the measured one
        assert points[2] == pytest.approx(workers.projection_inputs(models, table)[1][label][2])


# --- the chapter's box -----------------------------------------------------------------------------

def test_chapter_box_names_its_records_and_quotes_the_shared_sentences(record, loaded_records, table, models):
    live = workers.live_table(_runs(LIVE_RATES))
    loaded = scale.learner_threads_reading(loaded_records)
    box = workers.chapter_box(live, record, models[2], loaded_records, scale.SCALE_RECORD, scale.LOADED_SCALE_RECORD)
    rows = {name: value for _, name, value in box.rows}
    _, one_thread, two_threads = workers.worker_labels(table)
    assert rows[f"{scale.SCALE_RECORD} ({record[0]['date'][:10]}), two workers, update on 1 thread"] == \
        scale.speedup_text(table, one_thread)
    assert rows[f"{scale.SCALE_RECORD}, two workers, update on 2 threads (the default)"] == \
        scale.speedup_text(table, two_threads)
    assert rows["2 workers, update on 2 threads"] == \
        f"{LIVE_RATES[2, 2] / 5000.0:.2f}× the samples/s of the in-process trainer, 2 threads"
    assert rows[f"{scale.SCALE_RECORD}, serial fraction of one worker's iteration"] == f"{models[2].serial_fraction:.0%}"
    assert rows[f"{scale.SCALE_RECORD}, load average while measuring"] == workers.load_range(record, ("trainer", "workers"))
    loaded_row = next(name for name in rows if name.startswith(scale.LOADED_SCALE_RECORD))
    assert workers.load_range(loaded_records, ("workers",), 2) in loaded_row
    assert rows[loaded_row] == f"{loaded['ratio']:.2f}× the samples/s of one thread"


def test_chapter_box_warns_beside_live_ratios_from_an_oversubscribed_machine(record, loaded_records, models):
    runs = _runs(LIVE_RATES)
    for loads, warned in (({key: 4.0 for key in runs}, True), ({key: 1.2 for key in runs}, False)):
        live = workers.live_table(runs, loads)
        box = workers.chapter_box(live, record, models[2], loaded_records, scale.SCALE_RECORD,
                                  scale.LOADED_SCALE_RECORD, cores=2)
        rows = {name: value for _, name, value in box.rows}
        assert rows["2 workers, update on 2 threads"].endswith(
            " (oversubscribed: load 4.0 on 2 cores, not meaningful)") == warned


def test_load_range_names_the_runs_it_covers(record, loaded_records):
    loads = workers.run_loads(record, ("trainer", "workers"))
    assert loads == [run["loadavg"][0] for r in record if r["layout"] in ("trainer", "workers") for run in r["runs"]]
    assert workers.load_range(record, ("trainer", "workers")) == \
        f"{min(loads):.1f}–{max(loads):.1f} over the runs of the in-process trainer and the workers"
    everything = workers.run_loads(record)
    assert len(everything) > len(loads) and workers.load_range(record).endswith(" over every run of the record")
    pair = workers.run_loads(loaded_records, ("ddp",), 2)
    assert pair == [run["loadavg"][0] for r in loaded_records if r["layout"] == "ddp" and r["processes"] == 2
                    for run in r["runs"]]
    assert workers.load_range(loaded_records, ("ddp",), 2).endswith(" over the runs of two DDP ranks")
    assert workers.load_scope(("trainer", "workers", "ddp")) == \
        "over the runs of the in-process trainer, the workers and DDP"
    with pytest.raises(ValueError):
        workers.load_range(record, ("nothing",))


def test_window_text_prints_half_open_windows():
    assert workers.window_text([(365, 731), (0, 365)]) == "worker 0: days [365, 731), worker 1: days [0, 365)"


# --- the words ---------------------------------------------------------------------------------------

OUTSIDE = re.compile(r"(?<![\w-])(?:sessions?|helpers?|briefs?|lent|tasks?|tickets?|issues?)(?![\w-])", re.I)


def test_no_folded_block_speaks_of_how_the_project_is_made(record, loaded_records, phases, models):
    live = workers.live_table(_runs(LIVE_RATES), {key: 3.0 for key in LIVE_RATES})
    texts = [str(workers.live_method(live, 2, 32_768)), str(workers.record_method(record, scale.SCALE_RECORD, phases)),
             str(workers.loaded_method(loaded_records, scale.LOADED_SCALE_RECORD)),
             workers.fit_table(models[2]).to_string()]
    for text in texts:
        assert not OUTSIDE.search(text), OUTSIDE.search(text).group(0)


def test_speed_family_holds_every_verdict_of_the_chapter_with_its_baseline(record, table):
    family = workers.speed_family(record)
    baseline = table["baseline"].iloc[0]
    assert len(family) == 4 and workers.THREADS_COMPARISON in family.index
    assert all(name.endswith(f"÷ {baseline}") for name in family.index if name != workers.THREADS_COMPARISON)
    assert "×" in workers.family_view(family).to_html()


def test_ratio_table_names_every_ratio_with_its_baseline(record, table, models):
    model, baseline = models[2], table["baseline"].iloc[0]
    fastest = float(table.loc[baseline, "median"])
    trainer = scale.fit_trainer_model(record)
    ratios = workers.ratio_table(model, fastest, baseline, trainer, envs_per_worker=64)
    assert len(ratios) == 7 and list(ratios.columns) == ["samples/s of", "against", "ratio"]
    bound = model.thread_speedup / model.serial_fraction
    assert ratios.loc[0, "ratio"] == pytest.approx(bound) and ratios.loc[0, "against"] == "one worker"
    assert ratios.loc[2, "ratio"] == pytest.approx(bound * model.samples_per_s(1) / fastest)
    same_envs = scale.project(model, (4, 8), baseline=trainer)
    assert list(ratios.loc[3:4, "ratio"]) == pytest.approx(list(same_envs["speed-up"]))
    assert ratios.loc[4, "against"].startswith("in-process trainer (512 envs")
    assert set(ratios.loc[5:6, "against"]) == {baseline}
    assert "1.83×" in workers.ratio_view(ratios).to_html()
