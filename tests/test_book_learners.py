"""Chapter 5's readings (`finrl_tutorial.book.learners`): every number a sentence states is the one
computed from the record, every speed-up names the fastest in-process trainer as its baseline, and
each conditional sentence appears exactly when the record says so (hand-made records for the
branches the committed ones do not reach)."""
from __future__ import annotations

import copy
import re

import matplotlib
import pandas as pd
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import finrl_tutorial as ft  # noqa: E402
from finrl_tutorial.book import learners, read_records, scale  # noqa: E402
from finrl_tutorial.book.teaching import reader_command  # noqa: E402
from finrl_tutorial.errors import InputError  # noqa: E402

#: A number right before "×" (as tests/test_book.py reads a multiplier).
MULTIPLIER = re.compile(r"(?<![\w.,])\d[\d,]*(?:\.\d+)?\s?×")


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


def _bullets(text: str) -> list[str]:
    """The bullets of a Markdown list, each with its continuation lines."""
    bullets = []
    for line in text.splitlines():
        if line.startswith("* "):
            bullets.append(line[2:])
        elif line.startswith("  ") and bullets:
            bullets[-1] += " " + line.strip()
    return bullets


def _unnamed_multipliers(text: str) -> list[str]:
    """Multipliers of ``text`` whose sentence names no baseline (the book's rule, as in test_book)."""
    from test_book import _unreferenced_multipliers
    sentences = re.split(r"(?<=[.!?])\s+(?=[A-Z*(])", re.sub(r"[*`]", "", text.replace("\n", " ")))
    return [number for sentence in sentences for number in _unreferenced_multipliers(sentence)]


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


def test_the_reading_states_the_record_s_numbers_against_the_fastest_trainer(quiet, table, phases):
    baseline, one, two = learners.ddp_labels(table)
    text = _text(learners.ddp_reading(quiet))
    bullets = _bullets(text)
    headline = bullets[0]
    (steps, size), (base_steps, base_size) = learners.optimiser_steps(quiet, two), learners.optimiser_steps(quiet, baseline)
    assert (steps, size) != (base_steps, base_size)
    # not like with like first, then the step difference, then the ratio, then what would make it like with like
    assert headline.startswith("**Not like with like.** Per iteration, two ranks take")
    steps_at = headline.index(f"{steps} optimiser steps of {size:,} samples")
    assert f"takes {base_steps} steps of {base_size:,}" in headline
    ratio_at = headline.index(f"{table.loc[two, 'speed-up']:.2f}× the samples/s of the fastest {baseline}")
    assert steps_at < ratio_at < headline.index(f"`batch_size={size}`")
    assert table.loc[two, "verdict"] == "faster" and "faster in every round" in headline
    assert "The record has none, so part of the ratio may come from the larger steps" in headline
    assert "speed-up" not in headline.lower() and "best" not in text
    where = next(b for b in bullets if b.startswith("**Where the time goes:**"))
    pair = phases.loc[two]
    for value in (pair["total"], pair["all_reduce"], pair["waiting"]):
        assert f"{value:.2f} s" in where
    single = next(b for b in bullets if b.startswith("**One rank**"))
    assert f"{table.loc[one, 'speed-up']:.2f}× the samples/s of the same baseline" in single
    assert f"{table.loc['in-process trainer (64 envs)', 'speed-up']:.2f}× it" in single
    ratio = abs(table.loc[one, "speed-up"] / table.loc["in-process trainer (64 envs)", "speed-up"] - 1)
    assert ("costs little" in single) == (ratio < 0.05)
    against_one = next(b for b in bullets if b.startswith("**Against one rank**"))
    assert f"{table.loc[two, 'median'] / table.loc[one, 'median']:.2f}× its samples/s" in against_one
    assert "not the comparison to read" in against_one
    assert bullets.index(against_one) > bullets.index(headline)  # the headline is against the fastest trainer
    assert not _unnamed_multipliers(text)


def test_without_a_slower_single_rank_there_is_no_against_one_rank_bullet(quiet, table):
    _, one, _ = learners.ddp_labels(table)
    faster_one = _modified(quiet, one, scale=2.0)  # one rank now beats the baseline in every round
    text = _text(learners.ddp_reading(faster_one))
    assert "Against one rank" not in text
    assert f"{scale.speedups(faster_one, layouts=['trainer', 'ddp']).loc[one, 'speed-up']:.2f}×" in text


def test_a_single_rank_far_from_its_same_envs_trainer_does_not_cost_little(quiet, table):
    _, one, _ = learners.ddp_labels(table)
    text = _text(learners.ddp_reading(_modified(quiet, one, scale=0.8)))
    assert "costs little" not in text and "**One rank**" in text


def test_a_record_with_the_larger_steps_measured_drops_the_may_come_sentence(quiet, table):
    baseline, _, two = learners.ddp_labels(table)
    size = learners.optimiser_steps(quiet, two)[1]
    text = _text(learners.ddp_reading(_modified(quiet, "in-process trainer (64 envs)", batch_size=size)))
    assert text.startswith("* **Not like with like.**") and f"`batch_size={size}`" in text
    assert "part of the ratio may come" not in text


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


def test_the_projection_is_marked_as_one_and_states_the_model_s_numbers(quiet, table):
    model = scale.fit_cost_model(quiet, "ddp")
    baseline = learners.ddp_labels(table)[0]
    text = _text(learners.projection_reading(model, table))
    projection = scale.project(model, (4, 8), baseline=float(table.loc[baseline, "median"]))
    assert "**Projection, not measurement:**" in text and f"the fastest {baseline}" in text
    for p, row in projection.iterrows():
        assert f"{p} ranks {row['speed-up']:.2f}×" in text
    assert f"$o$ = {model.overhead:+.2f} s" in text and f"$h$ = {model.overhead_fraction:+.0%}" in text
    faster = learners.faster_device(model)
    assert faster.overhead == model.overhead and faster.rollout == pytest.approx(model.rollout / 10)
    assert f"rises to {faster.overhead_fraction:+.0%}" in text and "10 times shorter" in text
    assert "the model projects that a fast device needs larger per-rank batches" in text
    assert "That is why" not in text  # a what-if of the model, not a measurement
    assert f"{model.samples_per_process // ft.make_config('ppo').horizon_len} envs per rank" in text
    assert not _unnamed_multipliers(text)


def test_a_non_positive_overhead_has_no_what_if_sentence(quiet, table):
    model = scale.fit_cost_model(quiet, "ddp")
    free = type(model)(model.layout, model.rollout, model.update, -0.01, model.samples_per_process)
    text = _text(learners.projection_reading(free, table))
    assert "What-if" not in text and "**Projection, not measurement:**" in text


def test_the_projection_figure_draws_the_fit_the_points_and_the_what_if(quiet, table):
    model = scale.fit_cost_model(quiet, "ddp")
    fig, ax = plt.subplots()
    learners.plot_ddp_projection(model, table, ax)
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "DDP ranks (fitted): measured" in labels
    assert any(label.startswith(learners.WHAT_IF.format(factor=10)) for label in labels)
    assert "fastest in-process trainer" in ax.get_title()
    plt.close(fig)


# --- section 5.7 and the measured box ---------------------------------------------------------------

def test_the_loaded_reading_states_its_record_s_speed_up_verdict_and_load(loaded):
    table = scale.speedups(loaded, layouts=["trainer", "ddp"])
    baseline, _, two = learners.ddp_labels(table)
    text = _text(learners.loaded_reading(loaded))
    row = table.loc[two]
    assert text.startswith("* **Under heavy load**") and row["load min"] > 2 * loaded[0]["cpu_count"]
    assert f"{row['speed-up']:.2f}× the samples/s of the fastest {baseline} there" in text
    assert row["verdict"] == "inconclusive" and "inconclusive" in text
    assert (f"{row['load min']:.1f}–{row['load max']:.1f} over the runs of two DDP ranks, "
            f"on {loaded[0]['cpu_count']} cores") in text
    assert not _unnamed_multipliers(text)


def test_a_lightly_loaded_record_is_not_called_heavy(quiet):
    text = _text(learners.loaded_reading(quiet))
    assert text.startswith("* **Under load**") and "faster in every round" in text


def test_the_committed_rows_name_their_record_and_repeat_its_readings(quiet, table, phases):
    rows = learners.committed_rows(quiet, scale.SCALE_RECORD)
    assert all(key.startswith(scale.SCALE_RECORD) for key in rows)
    baseline, one, two = learners.ddp_labels(table)
    values = list(rows.values())
    assert values[0] == scale.speedup_text(table, two) and values[2] == scale.speedup_text(table, one)
    assert list(rows)[0].endswith("DDP two ranks, not like with like (next row)")
    assert baseline in values[1]
    pair = phases.loc[two]
    assert values[3] == f"{pair['all_reduce'] + pair['waiting']:.2f} s of {pair['total']:.2f} s"


# --- sections 5.2 and 5.3 ---------------------------------------------------------------------------

def test_the_data_parallel_plan_cuts_the_minibatch_in_halves_and_names_the_records():
    agent = ft.ActorCritic.from_config(181, 15, ft.make_config("ppo"), ft.EnvConfig().action_mode)
    megabytes = sum(p.numel() * p.element_size() for p in agent.parameters()) / 1e6
    text = _text(learners.data_parallel_plan(agent, 1024, 0))
    assert "this machine has 0" in text and "halves of 512" in text and f"({megabytes:.2f} MB)" in text
    assert "No GPU record is committed" in text
    odd = _text(learners.data_parallel_plan(agent, 1025, 1, ["gpu_a.json"]))
    assert "halves of 513" in odd and "Committed GPU records: gpu_a.json." in odd


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
