"""Chapter 6's readings (`finrl_tutorial.book.batched`): each table states the numbers computed
from what it is given (hand-made rates and rounds, and the stored records), names the baseline
of every ratio, and follows the verdict of the rounds; the method notes fold away. No timing:
`process_rounds` runs here on stand-ins for its two measurements."""
from __future__ import annotations

import re

import matplotlib
import pandas as pd
import pytest

from finrl_tutorial.book import batched, fit_per_call, read_records, scale
from finrl_tutorial.book.report import code_spans

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

CALL, ACCOUNT = 1e-3, 3e-6  # seconds of one batched call: t(n) = CALL + ACCOUNT n
SIZES = [1, 2, 4, 16, 256, 4096]


def _rate(vmap_share: float = 0.8) -> pd.Series:
    """A hand-made ``rate`` as the chapter builds it: env-steps/s indexed by (env, num_envs)."""
    values = {("single", 1): 700.0, ("subproc", 2): 800.0, ("subproc", 4): 900.0}
    for n in SIZES:
        values[("vec", n)] = n / (CALL + ACCOUNT * n)
        values[("vmap", n)] = vmap_share * values[("vec", n)]
    rate = pd.Series(values)
    rate.index.names = ["env", "num_envs"]
    return rate


def _rounds(two: list[float], one: list[float], one_all: list[float], num_envs: int = 1024) -> pd.DataFrame:
    """Hand-made rounds shaped as `process_rounds` returns them."""
    labels = {"one": f"1 process × {2 * num_envs:,}, 1 thread", "one_all": f"1 process × {2 * num_envs:,}, 2 threads",
              "two": f"2 processes × {num_envs:,} (sum)"}
    table = pd.DataFrame({labels["one"]: one, labels["one_all"]: one_all, labels["two"]: two,
                          "load average": [1.5] * len(two)}).rename_axis("round")
    table[batched.RATIO] = table[labels["two"]] / table[[labels["one"], labels["one_all"]]].max(axis=1)
    table.attrs.update(labels, num_envs=num_envs, cores=2, seconds=0.5, records=[],
                       command=f"python -m finrl_tutorial bench env --env vec --num-envs {num_envs}")
    return table


@pytest.fixture(scope="module")
def recorded():
    return batched.recorded_reading(read_records(scale.SCALE_RECORD), read_records(scale.LOADED_SCALE_RECORD))


@pytest.fixture(scope="module")
def gpu():
    return batched.gpu_reading(read_records(batched.GPU_RECORD))


def _text(markdown) -> str:
    if hasattr(markdown, "_repr_markdown_"):  # a folded method note
        return markdown._repr_markdown_()
    return getattr(markdown, "data", markdown)


# --- 6.3 ---------------------------------------------------------------------------------------------

def test_the_fit_table_states_the_fitted_call_and_its_break_even_size():
    rate = _rate()
    per_call = fit_per_call(SIZES, [rate["vec"][n] for n in SIZES])
    assert per_call["call_seconds"] == pytest.approx(CALL) and per_call["account_seconds"] == pytest.approx(ACCOUNT)
    column = batched.per_call_table(per_call)["this run"]
    assert list(column) == ["1,000", "3.00", f"{CALL / ACCOUNT:,.0f}"]
    assert "break-even size c / a (accounts)" in column.index


def test_the_throughput_figure_draws_every_layout_and_the_fit():
    rate = _rate()
    per_call = fit_per_call(SIZES, [rate["vec"][n] for n in SIZES])
    fig, ax = plt.subplots()
    batched.plot_throughput(rate, per_call, ax, stocks=15)
    labels = [line.get_label() for line in ax.get_lines()]
    two_digits = float(f"{1 / per_call['account_seconds']:.2g}")  # a fitted ceiling, to two digits
    ceiling = f"the fit's ceiling 1 / a ≈ {two_digits:,.0f} env-steps/s"
    assert labels == ["vec (one process)", "vmap (one process)", "fit: n / (c + a n)", ceiling, "single gymnasium env",
                      "subproc VecEnv (one process per account)"]
    fit_line = ax.get_lines()[2]  # drawn past the largest size measured, so its bend towards the ceiling shows
    assert max(fit_line.get_xdata()) > max(SIZES) and fit_line.get_linestyle() != "-"
    assert "15 stocks" in ax.get_title() and ax.get_xscale() == "log"
    plt.close(fig)


def test_the_sweep_method_folds_away_and_names_the_machine_of_the_records():
    records = [{"cpu_count": 2, "threads": 1}]
    text = _text(batched.sweep_method(records, 0.5))
    assert text.startswith('<details class="how-measured">\n<summary><strong>How this was measured</strong></summary>')
    assert text.rstrip().endswith("</details>") and "2 CPU cores" in text and "0.5 s" in text
    assert "on 1 torch\nthread," in text and "on 2 torch\nthreads," in _text(batched.sweep_method(
        [{"cpu_count": 2, "threads": 2}], 0.5))


# --- 6.4 ---------------------------------------------------------------------------------------------

def test_like_with_like_compares_only_sizes_all_three_layouts_ran():
    table = batched.same_accounts_table(_rate())
    assert list(table.index) == ["2 accounts", "4 accounts"]
    assert table.loc["2 accounts", "subproc VecEnv"] == 800.0
    assert table.loc["4 accounts", "batched env (vec)"] == pytest.approx(4 / (CALL + 4 * ACCOUNT))


def test_the_same_accounts_table_sets_the_single_env_beside_the_batched_one_at_one_account():
    rate = _rate().copy()
    rate[("subproc", 1)] = 600.0
    table = batched.same_accounts_table(rate.sort_index())
    assert list(table.columns)[0] == "single env" and table.loc["1 account", "single env"] == 700.0
    assert table["single env"].drop("1 account").isna().all()  # one account only
    column = batched.batching_table(rate.sort_index())["this run"]
    assert column["1 account: batched env ÷ single env"] == f"{rate[('vec', 1)] / 700.0:.2f}×"


def test_the_call_costs_split_the_vmap_envs_lag_into_fixed_and_per_account_parts():
    records = [{"layout": kind, "threads": 1, "num_envs": n,
                "env_steps_per_s": n / ((2.5 if kind == "vmap" else 1.0) * CALL + (1.1 if kind == "vmap" else 1.0) * ACCOUNT * n)}
               for kind in ("vec", "vmap") for n in SIZES + [65_536]]
    records.append({"layout": "vec", "threads": 2, "num_envs": 8, "env_steps_per_s": 1.0})  # not one thread: ignored
    costs = batched.call_costs(records)
    assert costs.loc["batched env (vec)", "c (ms)"] == pytest.approx(1.0) and costs.loc["batched env (vec)", "a (µs)"] == pytest.approx(3.0)
    assert costs.loc["vmap env", "c ÷ batched env's"] == pytest.approx(2.5)
    assert costs.loc["vmap env", "a ÷ batched env's"] == pytest.approx(1.1)
    with pytest.raises(batched.InputError, match="fewer than two"):
        batched.call_costs([r for r in records if r["layout"] == "vec"])


def test_the_like_with_like_table_states_the_ratios_of_the_rates_and_their_baselines():
    rate = _rate()
    reading = batched.same_accounts_reading(rate)
    same_2, same_4 = rate["vec"][2] / 800.0, rate["vec"][4] / 900.0
    assert reading["same"] == pytest.approx({2: same_2, 4: same_4})
    call_ratio = (CALL + 4096 * ACCOUNT) / (CALL + 2 * ACCOUNT)
    assert reading["call ratio"] == pytest.approx(call_ratio)
    assert reading["gain"] == pytest.approx(2048 / call_ratio)  # 2,048× the accounts in call_ratio× the time
    column = batched.batching_table(rate)["this run"]
    assert column["2 accounts: batched env ÷ subprocess VecEnv"] == f"{same_2:.2f}×"
    assert column["4 accounts: batched env ÷ subprocess VecEnv"] == f"{same_4:.2f}×"
    assert column["one call of 4,096 accounts ÷ one call of 2"] == f"{call_ratio:.0f}×"
    assert column["batched env at 4,096 accounts ÷ at 2 (env-steps/s)"] == f"{2048 / call_ratio:,.0f}×"
    vmap = "vmap env ÷ batched env (env-steps/s), over the sizes both ran"
    assert column[vmap] == "0.80×"  # one number: every size at the same share
    slower_at_2 = rate.copy()
    slower_at_2[("vmap", 2)] = 0.7 * rate[("vec", 2)]
    assert batched.batching_table(slower_at_2)["this run"][vmap] == "0.70–0.80×"
    assert all("÷" in name for name in column.index)


# --- 6.5 ---------------------------------------------------------------------------------------------

def test_process_rounds_divides_the_two_processes_by_the_faster_single_setup_of_each_round(monkeypatch):
    class Market:
        num_stocks = 15

    one = iter([100.0, 50.0, 100.0, 140.0])  # round 1: 1 thread faster; round 2: all threads faster
    from finrl_tutorial.bench import processes

    monkeypatch.setattr(processes, "env_processes", lambda count, n, seconds, stocks: [
        {"num_envs": n, "env_steps_per_s": 60.0}] * count)
    monkeypatch.setattr(processes, "one_process", lambda market, n, seconds, threads: next(one))
    monkeypatch.setattr(processes.os, "cpu_count", lambda: 2)
    rounds = batched.process_rounds(Market(), 8, rounds=2, seconds=0.1)
    assert list(rounds[batched.RATIO]) == pytest.approx([120 / 100, 120 / 140])
    assert rounds.attrs["num_envs"] == 8 and rounds.attrs["cores"] == 2 and len(rounds.attrs["records"]) == 2
    assert list(rounds.columns[:3]) == ["1 process × 16, 1 thread", "1 process × 16, 2 threads", "2 processes × 8 (sum)"]
    assert "--num-envs 8" in rounds.attrs["command"]


def test_a_committed_process_record_reads_like_the_live_rounds_with_holm_over_its_sizes():
    def record(n, two, one, one_all):
        return {"bench": "processes", "num_envs": n, "accounts": 2 * n, "cores": 2, "seconds": 2.0,
                "rounds": [{"two_processes": t, "two_process_rates": [t / 2, t / 2], "one_process_one_thread": o,
                            "one_process_all_threads": a, "loadavg": [1.0, 1.0, 1.0]}
                           for t, o, a in zip(two, one, one_all)]}

    records = [record(1024, [180, 170, 175], [100, 100, 100], [90, 110, 95]),
               record(8192, [90, 120, 100], [100, 100, 100], [80, 80, 80])]
    frame = batched.rounds_frame(records[0])
    assert list(frame[batched.RATIO]) == pytest.approx([1.8, 170 / 110, 1.75])  # the faster single setup per round
    reading = batched.process_record_reading(records, fit={"call_seconds": 1e-3, "account_seconds": 1e-6})
    assert list(reading.index) == ["2 processes × 1,024", "2 processes × 8,192"]
    assert list(reading["verdict"]) == ["faster", "inconclusive"]
    assert reading.loc["2 processes × 8,192", "÷ 1 process on 1 thread, min"] == pytest.approx(0.9)
    assert (reading["p (Holm)"] >= 0).all() and reading.loc["2 processes × 1,024", "p (Holm)"] < 0.05
    assert reading.loc["2 processes × 1,024", "projected"] == pytest.approx((1e-3 + 2048e-6) / (1e-3 + 1024e-6))
    assert len(frame.attrs["records"]) == 3 and frame.attrs["records"][0][0] == {"num_envs": 1024, "env_steps_per_s": 90}


@pytest.mark.parametrize("two, verdict", [([1.2e5, 1.3e5, 1.1e5], "faster"), ([0.5e5, 0.6e5, 0.7e5], "slower"),
                                          ([0.98e5, 1.02e5, 1.0e5], "tie"), ([0.8e5, 1.2e5, 1.0e5], "inconclusive")])
def test_the_rounds_table_follows_the_verdict_of_every_round(two, verdict):
    rounds = _rounds(two, one=[1e5] * 3, one_all=[0.5e5, 0.2e5, 0.9e5])
    reading = batched.rounds_reading(rounds)
    assert reading["verdict"] == verdict == scale.speed_verdict([t / 1e5 for t in two])
    assert reading["low"] == pytest.approx(min(two) / 1e5) and reading["high"] == pytest.approx(max(two) / 1e5)
    styled = batched.rounds_table(rounds)
    table = styled.data
    assert list(table.index) == [1, 2, 3]
    assert list(table[batched.RATIO]) == pytest.approx([t / 1e5 for t in two])
    assert list(table["1 process: 2 threads ÷ 1 thread"]) == pytest.approx([0.5, 0.2, 0.9])
    assert styled.caption.endswith(f"verdict over the rounds (±5 % tie margin): {verdict}")
    fast = batched.rounds_table(rounds, fast=True).caption  # fast mode's short rounds decide nothing
    assert "no verdict: these rounds are fast mode's short measurements" in fast and verdict not in fast.split(";")[-1]


def test_the_rounds_method_lists_every_round_with_its_load_and_names_the_records(recorded):
    rounds = _rounds([1.2e5, 1.3e5], one=[1e5, 1e5], one_all=[0.5e5, 0.6e5])
    text = _text(batched.rounds_method(rounds, recorded))
    assert text.startswith('<details class="how-measured">\n<summary><strong>How this was measured</strong></summary>')
    table_rows = [line for line in text.splitlines() if re.match(r"\| \d ", line)]
    assert [row.split(" | ")[-2] for row in table_rows] == ["1.20", "1.30"]  # each round's ratio
    assert scale.SCALE_RECORD in text and scale.LOADED_SCALE_RECORD in text and rounds.attrs["command"] in text


def test_the_rounds_figure_draws_one_bar_per_layout():
    rounds = _rounds([1.2e5, 1.3e5, 1.1e5], one=[1e5] * 3, one_all=[0.5e5] * 3)
    fig, ax = plt.subplots()
    batched.plot_rounds(rounds, ax)
    assert len(ax.patches) == 3 and "median of 3 rounds" in ax.get_xlabel() and "2,048 accounts" in ax.get_xlabel()
    plt.close(fig)


def test_the_committed_comparisons_are_the_rows_of_speedups(recorded):
    quiet = read_records(scale.SCALE_RECORD)
    rate = {r["num_envs"]: r["env_steps_per_s"] for r in quiet if r["layout"] == "vec"}
    subproc_2 = next(r for r in quiet if r["layout"] == "subproc" and r["processes"] == 2)["env_steps_per_s"]
    ddp_2 = next(r for r in quiet if r["layout"] == "ddp" and r["processes"] == 2)
    assert recorded["two accounts"]["speed-up"] == pytest.approx(rate[2] / subproc_2)
    assert recorded["two processes"]["speed-up"] == pytest.approx(ddp_2["env_steps_per_s"] / rate[ddp_2["num_envs"]])
    assert recorded["two processes"]["baseline"] == f"vec {ddp_2['num_envs']:,}"  # all the accounts, one process
    assert recorded["accounts"] == ddp_2["num_envs"] and recorded["per process"] == ddp_2["envs_per_process"]
    assert recorded["best"] == f"vec {max(rate, key=rate.get):,}"
    assert recorded["best gain"] == pytest.approx(max(rate.values()) / rate[2])
    assert recorded["own cores"] is True  # the quiet record's load stayed within its cores


def test_the_committed_record_holds_one_ratio_for_each_comparison(recorded):
    assert recorded["two processes"]["verdict"] == recorded["loaded"]["verdict"] == "one ratio"
    assert batched.recorded_answer(recorded) == "one ratio, no verdict"


def _record(layout, processes, num_envs, rate, runs=None, **extra):
    record = {"layout": layout, "processes": processes, "num_envs": num_envs, "env_steps_per_s": rate,
              "loadavg": [0.5, 0.5, 0.5], "cpu_count": 2, "date": "2030-01-01T00:00:00+00:00", **extra}
    if runs:
        record["runs"] = [{"env_steps_per_s": value, "loadavg": [0.5, 0.5, 0.5]} for value in runs]
    return record


def test_committed_rounds_get_their_verdict_instead_of_one_ratio():
    records = [_record("subproc", 2, 2, 100.0), _record("vec", 1, 2, 300.0),
               _record("vec", 1, 8, 1000.0, runs=[1000.0, 1000.0, 1000.0]),
               _record("ddp", 2, 8, 1200.0, runs=[1100.0, 1200.0, 1300.0], envs_per_process=4)]
    reading = batched.recorded_reading(records, records)
    assert reading["two processes"]["verdict"] == "faster" and batched.recorded_answer(reading) == "faster"
    assert reading["two processes"]["rounds min"] == pytest.approx(1.1)
    # the record's own fit of its one-thread sweep, t(n) = c + a n, which chapter 6 reads the break-even size from
    assert reading["fit"] == pytest.approx(fit_per_call([2, 8], [300.0, 1000.0]), nan_ok=True)
    result = batched.answer(_rate(), _rounds([0.9e5] * 3, [1e5] * 3, [0.5e5] * 3), reading,
                            fit_per_call(SIZES, [_rate()["vec"][n] for n in SIZES]))
    assert result["paid"] == ["the quiet record", "the loaded record"]


# --- 6.6 ---------------------------------------------------------------------------------------------

def test_the_gpu_reading_fits_each_curve_of_the_h200_record(gpu):
    elegant = gpu["elegant"]
    assert list(elegant.index) == sorted(elegant.index) and len(elegant) >= 2
    assert gpu["elegant fit"] == pytest.approx(fit_per_call(elegant.index, elegant.to_numpy()))
    assert set(gpu["rule-free fits"]) == {False, True}
    assert gpu["rule-free fits"][True]["call_seconds"] < gpu["rule-free fits"][False]["call_seconds"]
    assert "H200" in gpu["meta"]["device"] and set(gpu["rows"]["stocks"]) == {15}
    calls = gpu["elegant per call"]
    assert calls.to_dict() == pytest.approx({n: n / rate for n, rate in elegant.items()})
    line = fit_per_call(elegant.index, elegant.to_numpy())
    assert gpu["elegant off the line"] == pytest.approx(max(
        abs(t - line["call_seconds"] - line["account_seconds"] * n) for n, t in calls.items()))
    assert not batched.call_grows(calls) and batched.call_grows(pd.Series([1e-3, 3e-3], index=[1, 4096]))


def test_the_gpu_method_folds_away_and_names_the_record(gpu):
    method = _text(batched.gpu_method(gpu))
    assert method.startswith('<details class="how-measured">') and batched.GPU_RECORD in method
    assert gpu["meta"]["date"] in method and code_spans(gpu["meta"]["method"]) in method
    assert "`torch.cuda.synchronize()`" in method


def test_the_two_devices_figure_draws_each_device_in_its_own_panel(gpu):
    fig, axes = plt.subplots(1, 2)
    batched.plot_gpu_beside_cpu(gpu, _rate(), axes)
    gpu_labels = [line.get_label() for line in axes[0].get_lines()]
    cpu_labels = [line.get_label() for line in axes[1].get_lines()]
    assert len(gpu_labels) == len(batched.GPU_CURVES) and all(label.startswith("GPU (H200)") for label in gpu_labels)
    assert len(cpu_labels) == 1 and cpu_labels[0].startswith("CPU (this machine")
    assert "H200" in axes[0].get_title() and "ElegantRL" in axes[0].get_title()
    assert "CPU" in axes[1].get_title() and "VecStockTradingEnv" in axes[1].get_title()
    assert "no ratio across them" in fig._suptitle.get_text()
    plt.close(fig)


# --- the answer --------------------------------------------------------------------------------------

def test_the_answer_holds_the_measured_ratios_the_verdict_and_the_projection(recorded):
    rate = _rate()
    per_call = fit_per_call(SIZES, [rate["vec"][n] for n in SIZES])
    rounds = _rounds([0.8e5, 1.2e5, 1.0e5], one=[1e5] * 3, one_all=[0.5e5] * 3)
    result = batched.answer(rate, rounds, recorded, per_call)
    assert result["paid"] == []  # inconclusive here, and neither recorded ratio above 1
    assert result["same"] == pytest.approx(rate["vec"][2] / 800.0) and result["accounts"] == 2
    assert result["rounds"]["verdict"] == "inconclusive" and result["recorded answer"] == "one ratio, no verdict"
    projected = (CALL + 2048 * ACCOUNT) / (CALL + 1024 * ACCOUNT)
    assert result["projected"] == pytest.approx(projected) and 1 < projected < 2


def test_the_answer_names_the_measurement_that_shows_a_second_process_paying(recorded):
    rate = _rate()
    per_call = fit_per_call(SIZES, [rate["vec"][n] for n in SIZES])
    result = batched.answer(rate, _rounds([1.2e5, 1.3e5, 1.1e5], one=[1e5] * 3, one_all=[0.5e5] * 3), recorded, per_call)
    assert result["paid"] == ["this run"] and result["rounds"]["verdict"] == "faster"


def test_the_box_names_the_baseline_of_every_ratio_and_its_record(recorded, gpu):
    rate = _rate()
    per_call = fit_per_call(SIZES, [rate["vec"][n] for n in SIZES])
    result = batched.answer(rate, _rounds([0.8e5, 1.2e5, 1.0e5], [1e5] * 3, [0.5e5] * 3), recorded, per_call)
    box = batched.box_contents(result, gpu)
    assert set(box) == {"this_run", "recorded", "shows", "does_not_show"}
    for name, value in {**box["this_run"], **box["recorded"]}.items():
        assert "×" not in value or "÷" in name, f"{name}: a ratio without its baseline"
    assert sum(scale.SCALE_RECORD in name for name in box["recorded"]) == 3  # two ratios and the projection
    assert any(batched.GPU_RECORD in name for name in box["recorded"])
    assert box["this_run"]["2 processes × 1,024 ÷ faster 1 process × 2,048 (1 or 2 threads)"] == \
        "rounds 0.80–1.20×: inconclusive"
    same = box["this_run"]["batched env ÷ subprocess VecEnv, same accounts (one process per account)"]
    assert same == ", ".join(f"{r:.2f}× at {n:,}" for n, r in result["same sizes"].items()) + " (one ratio each, no rounds)"
    assert " at 4" in same
    two = next(name for name in box["recorded"] if name.endswith("2 accounts: batched env ÷ subprocess VecEnv"))
    assert box["recorded"][two] == f"{recorded['two accounts']['speed-up']:.1f}× (one ratio, no rounds)"
    assert recorded["two accounts"]["repeats"] == 1  # the record holds no rounds of the same-accounts comparison
    quiet_two = next(name for name in box["recorded"] if name.endswith("(1 thread)"))
    assert box["recorded"][quiet_two].endswith("× (one ratio, no verdict)")  # one ratio: no verdict of rounds
    projection = "projection, not a measurement (6.1's model, a free core each): 2 processes × 1,024 ÷ 1 process × 2,048"
    low, high = 0.8e5 / 1e5 / result["projected"], 1.2e5 / 1e5 / result["projected"]
    assert box["this_run"][projection] == (f"{result['projected']:.2f}×; the rounds measured {low:.2f}–{high:.2f} of it: "
                                         "the projection fails in these rounds (their load is in the folded block)")
    assert result["measured ÷ projected"] == pytest.approx((low, high))
    record = next(name for name in box["recorded"] if "projection (its own fit" in name)
    assert box["recorded"][record] == (f"{recorded['projected']:.2f}×; measured "
                                        f"{recorded['two processes']['speed-up'] / recorded['projected']:.2f} of it")
    ratios = list(result["same sizes"].values())  # this run's own; the record's stay in the summary
    faster = sum(r > 1 + batched.SPEED_TIE_MARGIN for r in ratios)
    assert "by this run on this CPU" in box["shows"]
    assert (("every comparison made" in box["shows"]) == (faster == len(ratios))
            and (faster == len(ratios) or f"{faster} of the {len(ratios)} comparisons made" in box["shows"]))


def test_the_box_says_how_many_same_accounts_comparisons_the_batched_env_won():
    assert batched._faster_count([1.5, 3.3, 2.7]) == "every comparison made"
    assert batched._faster_count([0.9, 3.3, 2.7]) == "2 of the 3 comparisons made"
    # a ratio within the tie margin of 1 is not counted as faster, and the box says how many were that close
    assert batched._faster_count([1.04, 3.3, 2.7]) == "2 of the 3 comparisons made, within ±5% of the other in 1"
    assert batched._faster_count([0.9, 0.97, 1.02, 2.7]) == "1 of the 4 comparisons made, within ±5% of the other in 2"


def test_the_projection_is_checked_against_the_rounds():
    for (low, high), said in {(0.45, 0.5): "the rounds measured 0.45–0.50 of it: the projection fails in these rounds (their load is in the folded block)",
                              (0.97, 1.02): "the rounds measured 0.97–1.02 of it: the projection holds in these rounds",
                              (0.8, 1.1): "the rounds measured 0.80–1.10 of it"}.items():
        assert batched.projection_check({"measured ÷ projected": (low, high)}) == said


def test_the_committed_projection_is_the_model_fitted_to_the_records_own_sweep(recorded):
    # the same fit as 6.4's table of call costs (one thread, up to 16,384 accounts), so the page has one c and one a
    costs = batched.call_costs(read_records(scale.SCALE_RECORD)).loc["batched env (vec)"]
    c, a, n = costs["c (ms)"] / 1e3, costs["a (µs)"] / 1e6, recorded["per process"]
    assert recorded["projected"] == pytest.approx((c + 2 * n * a) / (c + n * a))
    assert recorded["two processes"]["speed-up"] < recorded["projected"]  # the projection fails on the record


def test_fast_or_loaded_rounds_leave_the_answer_to_the_committed_record(recorded, gpu):
    rate = _rate()
    per_call = fit_per_call(SIZES, [rate["vec"][n] for n in SIZES])
    rounds = _rounds([0.5e5, 0.6e5, 0.7e5], one=[1e5] * 3, one_all=[0.5e5] * 3)
    for fast, load, why in ((True, 1.5, "fast mode"), (False, 3.4, "load average up to 3.4 on 2 cores")):
        rounds["load average"] = load
        result = batched.answer(rate, rounds, recorded, per_call, fast=fast)
        assert not result["live"] and why in result["why not"] and result["paid"] == []
        assert result["recorded answer"] == "one ratio, no verdict"  # the quiet record holds one ratio
        assert batched.box_contents(result, gpu)["this_run"][
            "2 processes × 1,024 ÷ faster 1 process × 2,048 (1 or 2 threads)"] == \
            f"rounds 0.50–0.70×: slower; these rounds {result['why not']}"
    rounds["load average"] = 1.5
    live = batched.answer(rate, rounds, recorded, per_call)
    assert live["live"] and live["rounds"]["verdict"] == "slower"
    assert batched.box_contents(live, gpu)["this_run"][
        "2 processes × 1,024 ÷ faster 1 process × 2,048 (1 or 2 threads)"] == "rounds 0.50–0.70×: slower"


# --- the book's rules on every method note---------------------------------------------------------

def _all_texts(recorded, gpu) -> list[str]:
    texts = [batched.gpu_method(gpu), batched.sweep_method([{"cpu_count": 2, "threads": 1}], 2)]
    for two in ([0.8e5, 1.2e5, 1.0e5], [1.2e5, 1.3e5, 1.1e5], [0.5e5, 0.6e5, 0.7e5], [0.98e5, 1.02e5, 1.0e5]):
        rounds = _rounds(two, one=[1e5] * 3, one_all=[0.5e5, 0.2e5, 0.9e5])
        texts.append(batched.rounds_method(rounds, recorded))
    return [_text(text) for text in texts]


def test_every_multiplier_names_its_baseline_and_no_word_comes_from_outside_the_book(recorded, gpu):
    from test_book import _OUTSIDE, _unreferenced_multipliers  # the rules the built book is checked with

    for text in _all_texts(recorded, gpu):
        prose = re.sub(r"`[^`]*`|\$[^$]*\$", "", text)  # inline code and math are not prose
        prose = "\n".join(line for line in prose.splitlines() if not line.startswith("|"))  # a table's header names it
        for sentence in re.split(r"(?<=[.!?])\s+(?=[A-Z*(•])", re.sub(r"\s+", " ", prose)):
            assert not _unreferenced_multipliers(sentence), sentence
        assert not _OUTSIDE.search(prose), _OUTSIDE.search(prose).group(0)


def test_size_and_sharing_split_the_like_with_like_ratio_into_two_factors_whose_product_it_is():
    rounds = [{"two_processes": 180.0, "one_subprocess": 100.0, "one_subprocess_share": 100.0},  # size 2.0, sharing 0.9
              {"two_processes": 240.0, "one_subprocess": 80.0, "one_subprocess_share": 120.0}]  # size 3.0, sharing 1.0
    row = batched.size_and_sharing([{"num_envs": 8192, "rounds": rounds}]).loc["2 processes × 8,192"]
    assert row[f"{batched.SIZE_EFFECT}, median"] == pytest.approx(2.5) and (row["size min"], row["size max"]) == (2.0, 3.0)
    assert row[f"{batched.SHARING}, median"] == pytest.approx(0.95) and row["sharing min"] == pytest.approx(0.9)
    one = {"num_envs": 8192, "cores": 2, "seconds": 2.0,  # one round: the factors multiply back to the like-with-like ratio
           "rounds": [rounds[1] | {"two_process_rates": [120.0, 120.0], "one_process_one_thread": 80.0, "loadavg": [1.0] * 3}]}
    split = batched.size_and_sharing([one]).iloc[0]
    assert split[f"{batched.SIZE_EFFECT}, median"] * split[f"{batched.SHARING}, median"] == pytest.approx(
        batched.same_method_reading([one]).iloc[0][f"{batched.SAME_METHOD}, median"])
    assert row["1 process × N alone, env-steps/s"] == pytest.approx(110.0) and row["rounds"] == 2
    with pytest.raises(batched.InputError, match="one_subprocess_share"):  # a record made before the share was timed
        batched.size_and_sharing([{"num_envs": 8192, "rounds": [{"two_processes": 1.0, "one_subprocess": 1.0}]}])


def test_same_method_reading_sets_two_processes_against_one_timed_alike():
    def record(n, pairs):
        return {"num_envs": n, "cores": 2, "seconds": 2.0,
                "rounds": [{"two_processes": two, "two_process_rates": [two / 2, two / 2], "one_subprocess": one,
                            "one_process_one_thread": one, "loadavg": [1.0 + k / 10, 1.0, 1.0]}
                           for k, (two, one) in enumerate(pairs)]}
    table = batched.same_method_reading([record(1024, [(150.0, 100.0), (130.0, 100.0), (140.0, 100.0)]),
                                         record(8192, [(105.0, 100.0), (90.0, 100.0), (100.0, 100.0)])])
    faster, mixed = table.loc["2 processes × 1,024"], table.loc["2 processes × 8,192"]
    assert faster[f"{batched.SAME_METHOD}, median"] == pytest.approx(1.4) and (faster["min"], faster["max"]) == (1.3, 1.5)
    assert faster["verdict"] == "faster" and mixed["verdict"] == "inconclusive" and faster["accounts in all"] == 2048
    assert faster["p (Holm)"] <= mixed["p (Holm)"] and faster["load average"] == "1.00–1.20"
    older = record(1024, [(150.0, 100.0)])
    del older["rounds"][0]["one_subprocess"]  # a record made before the control was timed
    with pytest.raises(batched.InputError, match="one_subprocess"):
        batched.same_method_reading([older])
