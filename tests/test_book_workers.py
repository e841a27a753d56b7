"""Chapter 4's readings (`finrl_tutorial.book.workers`) say what their records say.

Every sentence is checked against the number computed from the committed ``bench scale`` records
(or from a small hand-made input where a branch needs one): the number in the sentence is the one
the record gives, the baseline of every ``N×`` is named, a verdict's words follow the rounds, and
the projection is marked as one, with its assumptions. No timing: nothing here trains.
"""
from __future__ import annotations

import copy
import dataclasses
import re
from types import SimpleNamespace

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from finrl_tutorial.book import read_records, scale, workers  # noqa: E402
from finrl_tutorial.book.teaching import reader_command  # noqa: E402
from finrl_tutorial.training.workers import DEFAULT_LEARNER_THREADS  # noqa: E402


def _text(shown) -> str:
    """The text of what a reading returns: an IPython Markdown's ``data``, or the text itself."""
    return getattr(shown, "data", shown)


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


def test_live_reading_states_the_default_layouts_ratio_with_its_baseline_and_warns_only_when_busy():
    quiet = workers.live_table(_runs(LIVE_RATES), {key: 1.0 for key in LIVE_RATES})
    text = _text(workers.live_reading(quiet, cores=2, fast=True))
    default = workers.default_live_row(quiet, cores=2)
    assert default == f"2 workers, update on {DEFAULT_LEARNER_THREADS} thread" + ("s" if DEFAULT_LEARNER_THREADS > 1 else "")
    ratio = LIVE_RATES[2, DEFAULT_LEARNER_THREADS] / 5000.0
    assert (f"({default}) made {ratio:.2f}× the samples/s of the fastest in-process trainer "
            "(here the in-process trainer, 2 threads)") in text
    assert "**" not in text  # no bold verdict on a live (fast-mode) number
    assert "fast mode's small budget" in text and "the mechanics, not a finding" in text and "busy" not in text
    full = _text(workers.live_reading(quiet, cores=2, fast=False))
    assert "fast mode" not in full and "baseline. One short run is one noisy draw, not a finding." in full
    busy = workers.live_table(_runs(LIVE_RATES), {key: 3.5 for key in LIVE_RATES})
    assert "The machine was busy" in _text(workers.live_reading(busy, cores=2, fast=True))
    # one core: the pool's default falls back to one thread
    assert workers.default_live_row(quiet, cores=1) == "2 workers, update on 1 thread"


def test_live_method_names_the_budget_and_the_load_range():
    live = workers.live_table(_runs(LIVE_RATES), {(0, 1): 0.4, (0, 2): 1.6, (1, 1): 0.9, (2, 1): 1.0, (2, 2): 1.2})
    text = str(workers.live_method(live, cores=2, total_steps=32_768))
    assert "32,768 env-steps" in text and "0.4–1.6 over the runs above, on 2 cores" in text and "`eval_every=0`" in text
    assert "below the cores" in text and "shared the machine" not in text
    busy = workers.live_table(_runs(LIVE_RATES), {key: 2.5 for key in LIVE_RATES})
    text = str(workers.live_method(busy, cores=2, total_steps=32_768))
    assert "2.5 over the runs above, on 2 cores" in text and "above the cores, so the runs shared the machine" in text


# --- 4.4: the committed record -------------------------------------------------------------------

def test_phase_view_and_plot_show_the_records_phases(phases):
    shown = workers.phase_view(phases).data
    assert list(shown.columns) == ["rollout", "transfer", "update", "total", "samples / s"]
    assert shown["update"].equals(phases["update"]) and shown["samples / s"].equals(phases["samples / s (measured)"])
    fig, ax = plt.subplots()
    workers.plot_phases(phases, ax, cores=2)
    assert len(ax.patches) == 3 * len(phases) and "2 CPU cores" in ax.get_title()
    plt.close(fig)


def test_speedup_reading_quotes_the_shared_sentences_names_the_baseline_and_sums_up_the_verdicts(table):
    text = _text(workers.speedup_reading(table))
    one_worker, one_thread, two_threads = workers.worker_labels(table)
    baseline = table["baseline"].iloc[0]
    assert f"the fastest in-process trainer, the **{baseline}**" in text
    for label in (one_worker, one_thread, two_threads):
        assert scale.speedup_text(table, label) in text  # its number, baseline and verdict, from the record
    default = two_threads if DEFAULT_LEARNER_THREADS == 2 else one_thread
    assert text.count("(the pool's default)") == 1
    assert ("**Two workers, update on two threads (the pool's default):**" in text) == (default == two_threads)
    # the committed verdicts: both two-worker layouts inconclusive, so no claim of a speed-up
    assert {table.loc[one_thread, "verdict"], table.loc[two_threads, "verdict"]} == {"inconclusive"}
    assert "no two-worker layout beat the fastest in-process trainer in every round" in text
    assert "the rounds cannot tell two workers from one process" in text
    # every multiplier of the reading is followed by what it is a multiple of
    for match in re.finditer(r"\d\.\d\d×", text):
        after = text[match.end():match.end() + 40]
        assert after.startswith((" the samples/s of", "; ", ")")), after


def test_speedup_reading_follows_other_verdicts(table):
    _, one_thread, two_threads = workers.worker_labels(table)
    faster = table.copy()
    faster.loc[[one_thread, two_threads], "verdict"] = "faster"
    assert "both two-worker layouts were faster than the fastest in-process trainer in every round" in \
        _text(workers.speedup_reading(faster))
    slower = table.copy()
    slower.loc[[one_thread, two_threads], "verdict"] = "slower"
    assert "both two-worker layouts were slower" in _text(workers.speedup_reading(slower))
    mixed = table.copy()
    mixed.loc[one_thread, "verdict"] = "slower"
    text = _text(workers.speedup_reading(mixed))
    assert "no two-worker layout beat" in text and "cannot tell" not in text


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
    assert f"{worker_update:.2f} s and {trainer_update:.2f} s per iteration, " \
           f"{abs(worker_update / trainer_update - 1):.0%} apart" in text
    # a busy record says so
    busy = copy.deepcopy(record)
    for r in busy:
        for run in r.get("runs") or [r]:
            if run.get("loadavg"):
                run["loadavg"] = [9.0, 9.0, 9.0]
    assert "busy machine's figures" in str(workers.record_method(busy, "busy.jsonl", phases))


# --- 4.5: one learner thread or two --------------------------------------------------------------

def test_threads_table_and_reading_say_what_the_two_records_say(record, loaded_records, table):
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
    text = _text(workers.threads_reading(quiet, loaded, table))
    verdict = scale.speed_verdict_words(scale.speed_verdict(quiet["rounds"]))
    assert f"made {quiet['ratio']:.2f}× the samples/s of the same layout on one thread ({verdict})" in text
    assert verdict == "faster in every round"
    assert f"{quiet['update seconds'][1] / quiet['update seconds'][2]:.2f}× as fast as on one thread" in text
    assert f"Under heavy load the order reversed: two threads made {loaded['ratio']:.2f}× the samples/s" in text
    assert f"**{DEFAULT_LEARNER_THREADS} learner threads**" in text
    # the default's rank, from the table: here the highest median, its rounds inconclusive
    default = workers.worker_labels(table)[2]
    assert table["median"].astype(float).idxmax() == default
    assert "highest median samples/s of the layouts in 4.4, but its rounds do not tell it apart" in text


def test_threads_reading_follows_a_record_where_the_order_holds_and_the_default_ranks_lower(record, table):
    quiet = scale.learner_threads_reading(record)
    held = dict(quiet, ratio=1.1)
    lower = table.copy()
    lower.loc[lower.index[0], "median"] = 10 * float(lower["median"].max())  # a trainer far ahead
    text = _text(workers.threads_reading(quiet, held, lower))
    assert "Under heavy load the order held" in text and "It was not the slowest layout measured" in text
    slowest = table.copy()
    default = workers.worker_labels(table)[2]
    slowest.loc[default, "median"] = 1.0
    assert "slowest worker layout measured" in _text(workers.threads_reading(quiet, held, slowest))


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


def test_fit_table_and_reading_give_the_models_numbers(models):
    model = models[2]
    fitted = workers.fit_table(model)["fitted on the record"]
    assert fitted["r"] == f"{model.rollout:.2f} s per iteration" and fitted["u"] == f"{model.update:.2f} s per iteration"
    assert fitted["s = u / (r + u)"] == f"{model.serial_fraction:.0%}" and fitted["t"] == f"{model.thread_speedup:.2f}"
    assert fitted["o"].startswith(f"{model.overhead:+.3f} s per iteration")
    text = _text(workers.fit_reading(model))
    assert f"The update is {model.serial_fraction:.0%} of one worker's iteration" in text
    assert f"$t/s$ = {model.thread_speedup / model.serial_fraction:.1f}× the samples/s of one worker" in text
    assert ("below 0" in text) == (model.overhead < 0)
    positive = dataclasses.replace(model, overhead=0.01)
    assert "below 0" not in _text(workers.fit_reading(positive))
    assert "below 0" in _text(workers.fit_reading(dataclasses.replace(model, overhead=-0.01)))


def test_projection_reading_is_marked_as_a_projection_with_its_assumptions(record, table, models):
    model = models[2]
    baseline = table["baseline"].iloc[0]
    base_rate = float(table.loc[baseline, "median"])
    projection = scale.project(model, (1, 2, 4, 8), baseline=base_rate)
    text = _text(workers.projection_reading(model, projection, baseline, record))
    assert text.startswith("**Projection, not measurement.**")
    assert (f"Relative to the {baseline}, the model projects {projection.loc[4, 'speed-up']:.2f}× its samples/s "
            f"with 4 workers and {projection.loc[8, 'speed-up']:.2f}× with 8.") in text
    three = scale.project(model, (1, 2, 4, 8, 16), baseline=base_rate)
    assert (f"{three.loc[4, 'speed-up']:.2f}× its samples/s with 4 workers, {three.loc[8, 'speed-up']:.2f}× with 8 "
            f"and {three.loc[16, 'speed-up']:.2f}× with 16.") in \
        _text(workers.projection_reading(model, three, baseline, record))
    assert "2 workers" in text.split("Nothing past ")[1][:20] and "has 2 cores" in text
    assert "one free core per worker" in text and f"{model.thread_speedup:.2f}× as fast as on one" in text
    assert f"$o$ = {max(0.0, model.overhead):.3f} s" in text
    assert ("negative value taken as 0" in text) == (model.overhead < 0)
    assert f"the same 64 envs per worker ({model.samples_per_process:,} samples" in text
    assert f"the baseline as measured, the {baseline}" in text
    with pytest.raises(ValueError):
        workers.projection_reading(model, projection.loc[[1, 2]], baseline, record)


def test_projection_inputs_pair_each_model_with_its_measured_points(table, models):
    labelled, measured = workers.projection_inputs(models, table)
    assert list(labelled) == [workers.model_label(2), workers.model_label(1)]
    for threads, label in ((2, workers.model_label(2)), (1, workers.model_label(1))):
        assert measured[label] == scale.measured_points(table, "workers", threads=threads)
        assert set(measured[label]) == {1, 2}


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


def test_no_reading_speaks_of_how_the_project_is_made(record, loaded_records, table, phases, models):
    quiet, loaded = scale.learner_threads_reading(record), scale.learner_threads_reading(loaded_records)
    live = workers.live_table(_runs(LIVE_RATES), {key: 3.0 for key in LIVE_RATES})
    model = models[2]
    projection = scale.project(model, (1, 2, 4, 8), baseline=1000.0)
    texts = [_text(workers.live_reading(live, cores=2, fast=True)), str(workers.live_method(live, 2, 32_768)),
             _text(workers.speedup_reading(table)), str(workers.record_method(record, scale.SCALE_RECORD, phases)),
             _text(workers.threads_reading(quiet, loaded, table)),
             str(workers.loaded_method(loaded_records, scale.LOADED_SCALE_RECORD)),
             _text(workers.fit_reading(model)), _text(workers.projection_reading(model, projection, "x", record))]
    for text in texts:
        assert not OUTSIDE.search(text), OUTSIDE.search(text).group(0)
