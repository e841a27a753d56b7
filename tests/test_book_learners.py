"""Chapter 5's tables, figures and folded blocks (`finrl_tutorial.book.learners`): every number they
show is the one computed from the record, every speed-up names the fastest in-process trainer as its
baseline, and each conditional line appears exactly when the record says so (hand-made records for
the branches the recorded ones do not reach). The chapter's own sentences are checked by its
hidden cells."""
from __future__ import annotations

import copy

import matplotlib
import pandas as pd
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import finrl_tutorial as ft  # noqa: E402
from finrl_tutorial.book import learners, scale  # noqa: E402
from finrl_tutorial.book.teaching import reader_command  # noqa: E402
from finrl_tutorial.errors import InputError  # noqa: E402

@pytest.fixture(scope="module")
def table(quiet):
    return scale.speedups(quiet, layouts=["trainer", "ddp"])


@pytest.fixture(scope="module")
def phases(quiet):
    return scale.phase_table(quiet, layouts=("trainer", "ddp"))


def _text(markdown) -> str:
    if hasattr(markdown, "_repr_markdown_"):  # a folded method note
        return markdown._repr_markdown_()
    return markdown.data if hasattr(markdown, "data") else str(markdown)


def _modified(records: list[dict], label: str, **changes) -> list[dict]:
    """A deep copy of ``records`` with the record labelled ``label`` changed (a field, or its runs)."""
    records = copy.deepcopy(records)
    for record in records:
        if record.get("layout") in learners.LAYOUTS and scale.scale_label(record) == label:
            for key, value in changes.items():
                if key == "scale":  # every rate of the record (median and rounds) times a factor
                    record["samples_per_s"] *= value
                    for run in record.get("runs", []):
                        run["samples_per_s"] *= value
                else:
                    record[key] = value
    return records


# --- labels and optimiser steps ---------------------------------------------------------------------

def test_the_labels_are_the_fastest_trainer_and_the_ddp_rows_of_one_and_two_ranks(table):
    baseline, one, two = learners.ddp_labels(table)
    trainers = table[table["layout"] == "trainer"]
    assert baseline == trainers["median"].astype(float).idxmax()
    assert table.loc[one, ["layout", "processes"]].tolist() == ["ddp", 1]
    assert table.loc[two, ["layout", "processes"]].tolist() == ["ddp", 2]
    with pytest.raises(InputError, match="no ddp layout with 2 rank"):
        learners.ddp_labels(table[table["processes"] == 1])


def test_two_ranks_take_fewer_larger_steps_on_the_same_samples(quiet, table):
    baseline, one, two = learners.ddp_labels(table)
    (steps, size), (base_steps, base_size) = learners.optimiser_steps(quiet, two), learners.optimiser_steps(quiet, baseline)
    defaults = ft.make_config("ppo")
    assert size == 2 * defaults.batch_size and base_size == defaults.batch_size  # the all-reduce averages 2 minibatches
    assert steps * size == base_steps * base_size  # the same samples, each used as often
    assert steps < base_steps
    one_steps = learners.optimiser_steps(quiet, one)
    assert one_steps == (defaults.repeat_times * ft.make_config("ppo", num_envs=64).num_minibatches, defaults.batch_size)
    with pytest.raises(InputError, match="no trainer or ddp record"):
        learners.optimiser_steps(quiet, "ddp ×8 (512 envs)")


# --- section 5.5: the table, the figure and its sentences ---------------------------------------------

def test_the_phase_table_keeps_the_timed_phases_and_their_total(phases):
    shown = learners.phase_seconds(phases)
    assert list(shown.columns) == ["rollout", "update", "all-reduce", "waiting", "total", "samples / iteration"]
    assert "transfer" not in shown  # no configuration here spent time in it
    assert (shown["total"] == phases["total"].astype(float).round(3)).all()
    assert (shown["samples / iteration"] == phases["samples"].astype(int)).all()


def test_the_phase_figure_stacks_every_timed_phase_of_every_configuration(phases, table):
    fig, (phase_ax, speed_ax) = plt.subplots(1, 2)
    learners.plot_phases(phases, phase_ax)
    scale.plot_speedups(table, speed_ax, "title")
    assert len(phase_ax.patches) == 4 * len(phases)  # rollout, update, all-reduce, waiting per row
    assert [t.get_text() for t in phase_ax.get_legend().get_texts()] == ["rollout", "update", "all-reduce", "waiting"]
    plt.close(fig)


def test_the_measurement_note_is_a_dropdown_with_the_record_s_method(quiet, table):
    text = _text(learners.measurement_note(quiet, scale.SCALE_RECORD))
    assert text.startswith('<details class="how-measured">\n<summary><strong>How this was measured</strong></summary>') and text.endswith("</details>")
    assert f"`{scale.SCALE_RECORD}`" in text and quiet[0]["date"][:10] in text
    assert f"{int(table['repeats'].max())} times in interleaved rounds" in text
    low, high, cores = table["load min"].min(), table["load max"].max(), quiet[0]["cpu_count"]
    assert f"{low:.1f}–{high:.1f} over the runs of the in-process trainer and DDP, on {cores} cores" in text
    assert "a quiet machine" in text  # high < cores
    assert f"`{reader_command(quiet[0]['command'])}`" in text  # the command, as code
    assert "Two ranks (other optimiser steps, so not like with like: see above) ran" in text
    same = scale.same_work_seconds(quiet, "ddp")
    assert f"{same['trainer']:.2f} s in the in-process trainer and {same['ddp']:.2f} s in one DDP rank" in text
    assert "not parallelism" not in text  # the same work took about as long in both processes
    _, one, two = learners.ddp_labels(table)
    assert scale.speedup_text(table, two) in text and scale.speedup_text(table, one) in text


def test_a_busy_record_says_so_in_the_measurement_note(quiet, table):
    busy = copy.deepcopy(quiet)
    for record in busy:
        for run in record.get("runs", []):
            run["loadavg"] = [9.0, 9.0, 9.0]
    slow_rank = _modified(quiet, "ddp ×1 (64 envs)", phases=dict(
        next(r for r in quiet if r.get("layout") == "ddp" and r["processes"] == 1)["phases"], rollout=1.0))
    assert "busy machine's figures" in _text(learners.measurement_note(busy, "x.jsonl"))
    assert "not parallelism" in _text(learners.measurement_note(slow_rank, "x.jsonl"))


# --- section 5.6: the cost model --------------------------------------------------------------------

def test_the_check_table_shows_model_check_s_numbers(quiet):
    model = scale.fit_cost_model(quiet, "ddp")
    check = scale.model_check(quiet, model)
    shown = learners.check_table(check)
    assert list(shown.index) == list(check.index)
    for label, row in check.iterrows():
        assert shown.loc[label, "measured samples / s"] == f"{row['measured samples / s']:,.0f}"
        assert shown.loc[label, "error"] == f"{row['error']:+.0%}"


def test_the_faster_device_what_if_shortens_the_work_and_keeps_the_overhead(quiet):
    model = scale.fit_cost_model(quiet, "ddp")
    faster = learners.faster_device(model)
    assert faster.overhead == model.overhead and learners.FASTER_DEVICE == 10
    assert faster.rollout == pytest.approx(model.rollout / 10) and faster.update == pytest.approx(model.update / 10)
    assert faster.overhead_fraction > model.overhead_fraction


def test_the_faster_device_what_if_keeps_only_the_all_reduce(quiet):
    model = scale.fit_cost_model(quiet, "ddp")
    fixed = learners.added_all_reduce(quiet)
    phases = {row["processes"]: row["phases"] for row in quiet if row["layout"] == "ddp" and "phases" in row}
    assert fixed == pytest.approx(phases[2]["all_reduce"] - phases[1]["all_reduce"]) and 0 < fixed < model.overhead
    faster = learners.faster_device(model, fixed_overhead=fixed)
    assert faster.overhead == pytest.approx(fixed + (model.overhead - fixed) / 10)
    # between the work alone shortened and everything shortened
    assert model.overhead_fraction < faster.overhead_fraction < learners.faster_device(model).overhead_fraction
    with pytest.raises(ValueError, match="one and two DDP ranks"):
        learners.added_all_reduce([row for row in quiet if row["layout"] != "ddp"])


def test_the_projection_figure_draws_the_fit_the_points_and_the_what_if(quiet, table):
    model = scale.fit_cost_model(quiet, "ddp")
    fig, ax = plt.subplots()
    learners.plot_ddp_projection(model, table, ax)
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "DDP ranks (fitted): measured (whole runs: median, range of the rounds)" in labels
    assert "DDP ranks (fitted): model (fitted to the timed phases)" in labels
    assert any(label.startswith(learners.WHAT_IF.format(factor=10)) for label in labels)
    assert "fastest in-process trainer" in ax.get_title().replace("\n", " ")
    plt.close(fig)


def test_the_like_with_like_projection_figure_names_its_baseline(quiet, table):
    model, trainer = scale.fit_cost_model(quiet, "ddp"), scale.fit_trainer_model(quiet)
    fig, ax = plt.subplots()
    learners.plot_ddp_projection(model, table, ax, trainer=trainer)
    assert "with as many envs" in ax.get_title().replace("\n", " ") and "with as many envs" in ax.get_ylabel()
    plt.close(fig)


# --- the measured box -----------------------------------------------------------------------------

def test_the_committed_rows_name_their_record_and_repeat_its_readings(quiet, table, phases):
    rows = learners.recorded_rows(quiet, scale.SCALE_RECORD)
    assert all(key.startswith(scale.SCALE_RECORD) for key in rows)
    baseline, one, two = learners.ddp_labels(table)
    values = list(rows.values())
    assert values[0] == scale.speedup_text(table, two) and values[2] == scale.speedup_text(table, one)
    assert list(rows)[0].endswith("DDP two ranks, not like with like (next row)")
    assert baseline in values[1]
    pair = phases.loc[two]
    assert values[3] == f"{pair['all_reduce'] + pair['waiting']:.2f} s of {pair['total']:.2f} s"


# --- section 5.3 ----------------------------------------------------------------------------------

def test_rank_0_s_log_is_drawn_with_its_yardsticks():
    log = pd.DataFrame({"env_steps": [100, 200, 300], "valid/sharpe_ratio": [0.1, None, 0.3],
                        "loss/entropy": [2.0, 1.99, 1.98]})
    assert learners.entropy_change(log).round(6).tolist() == [0.0, -0.5, -1.0]
    fig, (sharpe_ax, entropy_ax) = plt.subplots(1, 2)
    learners.plot_rank0_validation(log, 0.5, sharpe_ax)
    learners.plot_entropy_change(log, entropy_ax)
    assert len(sharpe_ax.lines[0].get_xdata()) == 2  # the iterations that validated
    assert [t.get_text() for t in sharpe_ax.get_legend().get_texts()] == ["buy-and-hold (0.50)"]
    low, high = entropy_ax.get_ylim()
    assert low == -high and high >= 1.2  # at least ±1 %, and 1.2 × the largest change
    assert "2.000" in entropy_ax.get_title()
    plt.close(fig)


def test_speed_family_holds_the_chapters_three_verdicts_with_their_baselines(quiet, loaded, table):
    family = learners.speed_family(quiet, loaded)
    baseline, one, two = learners.ddp_labels(table)
    assert list(family.index[:2]) == [f"{one} ÷ {baseline}", f"{two} ÷ {baseline}"]
    assert family.index[2].startswith("under load: ") and len(family) == 3
    assert "×" in learners.family_view(family).to_html()


def test_the_measurement_note_calls_three_round_verdicts_exploratory(quiet):
    assert "exploratory" in _text(learners.measurement_note(quiet, scale.SCALE_RECORD))


def test_the_what_if_gets_its_own_panel_with_its_own_baseline(quiet, table):
    model, trainer = scale.fit_cost_model(quiet, "ddp"), scale.fit_trainer_model(quiet)
    fig, (ax, what_if_ax) = plt.subplots(1, 2)
    learners.plot_ddp_projection(model, table, ax, trainer=trainer, what_if_ax=what_if_ax)
    main = [t.get_text() for t in ax.get_legend().get_texts()]
    other = [t.get_text() for t in what_if_ax.get_legend().get_texts()]
    assert not any(label.startswith(learners.WHAT_IF.format(factor=10)) for label in main)  # one baseline per panel
    assert "what-if" not in ax.get_ylabel() and "with as many envs" in ax.get_ylabel()
    assert any(label.startswith(learners.WHAT_IF.format(factor=10)) for label in other)
    assert "1.0: its own single rank" in other and "its own" in what_if_ax.get_ylabel()
    assert "projection only" in what_if_ax.get_title().replace("\n", " ")
    plt.close(fig)
