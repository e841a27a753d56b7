"""Chapter 6's readings (`finrl_tutorial.book.batched`): each sentence states the numbers computed
from what it is given (hand-made rates and rounds, and the committed records), names the baseline
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
def committed():
    return batched.committed_reading(read_records(scale.SCALE_RECORD), read_records(scale.LOADED_SCALE_RECORD))


@pytest.fixture(scope="module")
def gpu():
    return batched.gpu_reading(read_records(batched.GPU_RECORD))


def _text(markdown) -> str:
    if hasattr(markdown, "_repr_markdown_"):  # a folded method note
        return markdown._repr_markdown_()
    return getattr(markdown, "data", markdown)


# --- 6.3 ---------------------------------------------------------------------------------------------

def test_the_fit_sentence_states_the_fitted_call_and_its_break_even_size():
    rate = _rate()
    per_call = fit_per_call(SIZES, [rate["vec"][n] for n in SIZES])
    assert per_call["call_seconds"] == pytest.approx(CALL) and per_call["account_seconds"] == pytest.approx(ACCOUNT)
    text = _text(batched.per_call_text(per_call))
    assert "about 1,000 µs" in text and "3.00 µs per account" in text
    assert f"below about {CALL / ACCOUNT:,.0f} accounts" in text


def test_the_throughput_figure_draws_every_layout_and_the_fit():
    rate = _rate()
    per_call = fit_per_call(SIZES, [rate["vec"][n] for n in SIZES])
    fig, ax = plt.subplots()
    batched.plot_throughput(rate, per_call, ax, stocks=15)
    labels = [line.get_label() for line in ax.get_lines()]
    assert labels == ["vec (one process)", "vmap (one process)", "fit: n / (c + a n)", "single gymnasium env",
                      "subproc VecEnv (one process per account)"]
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


def test_the_like_with_like_sentences_state_the_ratios_of_the_rates_and_their_baselines():
    rate = _rate()
    reading = batched.same_accounts_reading(rate)
    same_2, same_4 = rate["vec"][2] / 800.0, rate["vec"][4] / 900.0
    assert reading["same"] == pytest.approx({2: same_2, 4: same_4})
    call_ratio = (CALL + 4096 * ACCOUNT) / (CALL + 2 * ACCOUNT)
    assert reading["call ratio"] == pytest.approx(call_ratio)
    assert reading["gain"] == pytest.approx(2048 / call_ratio)  # 2,048× the accounts in call_ratio× the time
    text = _text(batched.same_accounts_text(rate))
    assert f"at 2 and 4 accounts, the batched env ran {same_2:.1f}× and {same_4:.1f}× the env-steps/s of the subprocess VecEnv" in text
    assert f"took {call_ratio:.0f}× as long as a call with 2" in text
    assert f"rose to {2048 / call_ratio:,.0f}× its own rate at 2 accounts" in text
    assert "at 0.80× the env-steps/s of the batched env" in text  # one number: every size at the same share
    slower_at_2 = rate.copy()
    slower_at_2[("vmap", 2)] = 0.7 * rate[("vec", 2)]
    assert "at 0.70–0.80× the env-steps/s of the batched env" in _text(batched.same_accounts_text(slower_at_2))


# --- 6.5 ---------------------------------------------------------------------------------------------

def test_process_rounds_divides_the_two_processes_by_the_faster_single_setup_of_each_round(monkeypatch):
    class Market:
        num_stocks = 15

    one = iter([100.0, 50.0, 100.0, 140.0])  # round 1: 1 thread faster; round 2: all threads faster
    monkeypatch.setattr(batched, "_env_processes", lambda count, n, seconds, stocks: [
        {"num_envs": n, "env_steps_per_s": 60.0}] * count)
    monkeypatch.setattr(batched, "_one_process", lambda market, n, seconds, threads: next(one))
    monkeypatch.setattr(batched.os, "cpu_count", lambda: 2)
    rounds = batched.process_rounds(Market(), 8, rounds=2, seconds=0.1)
    assert list(rounds[batched.RATIO]) == pytest.approx([120 / 100, 120 / 140])
    assert rounds.attrs["num_envs"] == 8 and rounds.attrs["cores"] == 2 and len(rounds.attrs["records"]) == 2
    assert list(rounds.columns[:3]) == ["1 process × 16, 1 thread", "1 process × 16, 2 threads", "2 processes × 8 (sum)"]
    assert "--num-envs 8" in rounds.attrs["command"]


@pytest.mark.parametrize("two, verdict", [([1.2e5, 1.3e5, 1.1e5], "faster"), ([0.5e5, 0.6e5, 0.7e5], "slower"),
                                          ([0.98e5, 1.02e5, 1.0e5], "tie"), ([0.8e5, 1.2e5, 1.0e5], "inconclusive")])
def test_the_rounds_sentence_follows_the_verdict_of_every_round(two, verdict):
    rounds = _rounds(two, one=[1e5] * 3, one_all=[0.5e5, 0.2e5, 0.9e5])
    reading = batched.rounds_reading(rounds)
    assert reading["verdict"] == verdict == scale.speed_verdict([t / 1e5 for t in two])
    assert reading["low"] == pytest.approx(min(two) / 1e5) and reading["high"] == pytest.approx(max(two) / 1e5)
    text = _text(batched.rounds_text(rounds))
    assert f"ran {min(two) / 1e5:.2f}–{max(two) / 1e5:.2f}× the env-steps/s of the faster single-process setup" in text
    assert scale.speed_verdict_words(verdict) in text
    assert "One process on 2 threads ran 0.20–0.90× the env-steps/s of the same process on 1 thread" in text


def test_the_rounds_method_lists_every_round_with_its_load_and_names_the_records(committed):
    rounds = _rounds([1.2e5, 1.3e5], one=[1e5, 1e5], one_all=[0.5e5, 0.6e5])
    text = _text(batched.rounds_method(rounds, committed))
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


def test_the_committed_comparisons_are_the_rows_of_speedups(committed):
    quiet = read_records(scale.SCALE_RECORD)
    rate = {r["num_envs"]: r["env_steps_per_s"] for r in quiet if r["layout"] == "vec"}
    subproc_2 = next(r for r in quiet if r["layout"] == "subproc" and r["processes"] == 2)["env_steps_per_s"]
    ddp_2 = next(r for r in quiet if r["layout"] == "ddp" and r["processes"] == 2)
    assert committed["two accounts"]["speed-up"] == pytest.approx(rate[2] / subproc_2)
    assert committed["two processes"]["speed-up"] == pytest.approx(ddp_2["env_steps_per_s"] / rate[ddp_2["num_envs"]])
    assert committed["two processes"]["baseline"] == f"vec {ddp_2['num_envs']:,}"  # all the accounts, one process
    assert committed["accounts"] == ddp_2["num_envs"] and committed["per process"] == ddp_2["envs_per_process"]
    assert committed["best"] == f"vec {max(rate, key=rate.get):,}"
    assert committed["best gain"] == pytest.approx(max(rate.values()) / rate[2])
    assert committed["own cores"] is True  # the quiet record's load stayed within its cores


def test_the_committed_sentences_state_the_records_ratios_and_call_one_ratio_no_verdict(committed):
    rate = _rate()
    text = _text(batched.committed_text(committed, rate))
    pair = committed["two processes"]
    assert f"ran {committed['two accounts']['speed-up']:.1f}× the env-steps/s of the subprocess VecEnv" in text
    assert f"and {rate['vec'][2] / 800.0:.1f}× of it in this run" in text
    assert (f"two processes of {committed['per process']:,} ran {pair['speed-up']:.2f}× the env-steps/s of one "
            f"process with all {committed['accounts']:,} accounts on one thread") in text
    assert pair["verdict"] == "one ratio" and "one ratio, not a verdict" in text
    assert f"({committed['best']}) ran {committed['best gain']:,.0f}×" in text


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
    reading = batched.committed_reading(records, records)
    assert reading["two processes"]["verdict"] == "faster"
    text = _text(batched.committed_text(reading, _rate()))
    assert "round by round 1.10–1.30×: faster." in text and "one ratio" not in text
    answer = _text(batched.answer_text(batched.answer(_rate(), _rounds([0.9e5] * 3, [1e5] * 3, [0.5e5] * 3), reading,
                                                       fit_per_call(SIZES, [_rate()["vec"][n] for n in SIZES]))))
    assert "(verdicts from their rounds: faster, faster)" in answer and "neither is a verdict" not in answer
    assert "only the quiet committed record and the loaded committed record show" in answer


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


def test_the_gpu_sentences_follow_a_call_that_grows_with_its_accounts(gpu):
    sizes = [1, 64, 1024, 4096, 16384]
    grows = dict(gpu, elegant=pd.Series([n / (1e-3 + 1e-6 * n) for n in sizes], index=sizes))
    grows = dict(grows, **{key: value for key, value in batched.gpu_reading(read_records(batched.GPU_RECORD)).items()
                           if key not in ("elegant", "elegant fit", "elegant per call", "elegant off the line")})
    calls = pd.Series([1e-3 + 1e-6 * n for n in sizes], index=sizes)
    grows.update({"elegant fit": fit_per_call(sizes, [n / t for n, t in calls.items()]), "elegant per call": calls,
                  "elegant off the line": 0.0})
    text = _text(batched.gpu_text(grows, {"call_seconds": CALL, "account_seconds": ACCOUNT,
                                          "break_even_accounts": CALL / ACCOUNT}))
    assert "the time of a call grows with the accounts" in text and "does not grow" not in text
    assert "beyond the largest size measured" not in text and "at most 0.0 ms off that line" in text


def test_the_gpu_sentences_compare_each_curve_with_itself_and_state_the_fits(gpu):
    per_call = {"call_seconds": CALL, "account_seconds": ACCOUNT, "break_even_accounts": CALL / ACCOUNT}
    text = _text(batched.gpu_text(gpu, per_call))
    fit, free, calls = gpu["elegant fit"], gpu["rule-free fits"], gpu["elegant per call"]
    assert f"about {1e3 * fit['call_seconds']:.1f} ms fixed" in text
    assert f"equal at about {fit['break_even_accounts']:,.0f} accounts" in text
    assert f"breaks even at about {CALL / ACCOUNT:,.0f} accounts" in text
    # the per-call times themselves, and what they show: no growth with the accounts, a rough per-account cost
    assert all(f"{1e3 * t:.1f} ms at {int(n):,}" in text for n, t in calls.items())
    assert "7.1 ms at 1, 6.9 ms at 64, 8.1 ms at 1,024, 11.9 ms at 4,096 and 9.1 ms at 16,384 accounts" in text
    assert "does not grow with the accounts: it stays between 6.9 and 11.9 ms" in text
    assert f"up to {1e3 * gpu['elegant off the line']:.1f} ms off that line" in text and "only roughly" in text
    assert "beyond the largest size measured" in text
    assert "stronger on a GPU" not in text
    assert f"{1e3 * free[False]['call_seconds']:.2f} ms fixed eager" in text
    assert f"{1e3 * free[True]['call_seconds']:.2f} ms as one CUDA graph" in text
    assert "×" not in text  # no ratio across the devices, nor between curves
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

def test_the_answer_states_the_measured_ratios_the_verdict_and_the_projection(committed):
    rate = _rate()
    per_call = fit_per_call(SIZES, [rate["vec"][n] for n in SIZES])
    rounds = _rounds([0.8e5, 1.2e5, 1.0e5], one=[1e5] * 3, one_all=[0.5e5] * 3)
    result = batched.answer(rate, rounds, committed, per_call)
    assert result["paid"] == []  # inconclusive here, and neither committed ratio above 1
    projected = (CALL + 2048 * ACCOUNT) / (CALL + 1024 * ACCOUNT)
    assert result["projected"] == pytest.approx(projected)
    text = _text(batched.answer_text(result))
    assert f"the batched env already ran {rate['vec'][2] / 800.0:.1f}× the env-steps/s of the subprocess VecEnv" in text
    assert "ran 0.80–1.20× the env-steps/s of the faster single process with all 2,048 accounts" in text
    assert scale.speed_verdict_words("inconclusive") in text
    assert f"{committed['two processes']['speed-up']:.2f}× the env-steps/s of one process" in text
    assert f"under heavy load {committed['loaded']['speed-up']:.2f}× of the same baseline" in text
    assert "neither is a verdict" in text and "none of these measurements on 2 cores" in text
    assert "not even the one where each process had a core of its own" in text
    assert "**Projection, not measurement:**" in text and f"{projected:.2f}×" in text
    assert "Not measured for this package's env" in text


def test_the_answer_names_the_measurement_that_shows_a_second_process_paying(committed):
    rate = _rate()
    per_call = fit_per_call(SIZES, [rate["vec"][n] for n in SIZES])
    result = batched.answer(rate, _rounds([1.2e5, 1.3e5, 1.1e5], one=[1e5] * 3, one_all=[0.5e5] * 3), committed, per_call)
    assert result["paid"] == ["this run"]
    text = _text(batched.answer_text(result))
    assert "only this run shows a second batched process paying" in text and "faster in every round" in text


def test_the_answer_names_the_cores_of_each_machine_when_they_differ(committed):
    rate = _rate()
    per_call = fit_per_call(SIZES, [rate["vec"][n] for n in SIZES])
    rounds = _rounds([0.8e5, 0.9e5, 0.7e5], one=[1e5] * 3, one_all=[0.5e5] * 3)
    rounds.attrs["cores"] = 16
    text = _text(batched.answer_text(batched.answer(rate, rounds, committed, per_call)))
    assert f"none of these measurements on 16 and {committed['cores']} cores" in text


def test_the_box_names_the_baseline_of_every_ratio_and_its_record(committed, gpu):
    rate = _rate()
    per_call = fit_per_call(SIZES, [rate["vec"][n] for n in SIZES])
    result = batched.answer(rate, _rounds([0.8e5, 1.2e5, 1.0e5], [1e5] * 3, [0.5e5] * 3), committed, per_call)
    box = batched.box_contents(result, gpu)
    assert set(box) == {"this_run", "committed", "shows", "does_not_show"}
    for name, value in {**box["this_run"], **box["committed"]}.items():
        assert "×" not in value or "÷" in name, f"{name}: a ratio without its baseline"
    assert sum(scale.SCALE_RECORD in name for name in box["committed"]) == 2
    assert any(batched.GPU_RECORD in name for name in box["committed"])
    assert box["this_run"]["2 processes × 1,024 ÷ faster 1 process × 2,048 (1 or 2 threads)"] == \
        "rounds 0.80–1.20×: inconclusive"


def test_fast_or_loaded_rounds_leave_the_answer_to_the_committed_record(committed, gpu):
    rate = _rate()
    per_call = fit_per_call(SIZES, [rate["vec"][n] for n in SIZES])
    rounds = _rounds([0.5e5, 0.6e5, 0.7e5], one=[1e5] * 3, one_all=[0.5e5] * 3)
    for fast, load, why in ((True, 1.5, "fast mode"), (False, 3.4, "load average up to 3.4 on 2 cores")):
        rounds["load average"] = load
        result = batched.answer(rate, rounds, committed, per_call, fast=fast)
        assert not result["live"] and why in result["why not"]
        assert result["committed answer"] == "inconclusive"  # the quiet record holds one ratio
        text = _text(batched.answer_text(result))
        assert "The committed record answers it" in text and "the answer is inconclusive" in text
        assert "slower in every round" not in text and "show how the rounds are read, not the answer" in text
        assert "mechanics" not in text  # the box of 6.7 says it once
        assert "not the answer" in batched.box_contents(result, gpu)["this_run"][
            "2 processes × 1,024 ÷ faster 1 process × 2,048 (1 or 2 threads)"]
        rounds_words = _text(batched.rounds_text(rounds, fast=fast))
        assert rounds_words.count("mechanics") == 1 and why in rounds_words
    rounds["load average"] = 1.5
    live = batched.answer(rate, rounds, committed, per_call)
    assert live["live"] and "slower in every round" in _text(batched.answer_text(live))
    assert "mechanics" not in _text(batched.rounds_text(rounds))


# --- the book's rules on every sentence ------------------------------------------------------------

def _all_texts(committed, gpu) -> list[str]:
    rate = _rate()
    per_call = fit_per_call(SIZES, [rate["vec"][n] for n in SIZES])
    texts = [batched.per_call_text(per_call), batched.same_accounts_text(rate), batched.committed_text(committed, rate),
             batched.gpu_text(gpu, per_call), batched.gpu_method(gpu), batched.sweep_method([{"cpu_count": 2, "threads": 1}], 2)]
    for two in ([0.8e5, 1.2e5, 1.0e5], [1.2e5, 1.3e5, 1.1e5], [0.5e5, 0.6e5, 0.7e5], [0.98e5, 1.02e5, 1.0e5]):
        rounds = _rounds(two, one=[1e5] * 3, one_all=[0.5e5, 0.2e5, 0.9e5])
        texts += [batched.rounds_text(rounds), batched.rounds_method(rounds, committed),
                  batched.answer_text(batched.answer(rate, rounds, committed, per_call)),
                  batched.rounds_text(rounds, fast=True),
                  batched.answer_text(batched.answer(rate, rounds, committed, per_call, fast=True))]
    return [_text(text) for text in texts]


def test_every_multiplier_names_its_baseline_and_no_word_comes_from_outside_the_book(committed, gpu):
    from test_book import _OUTSIDE, _unreferenced_multipliers  # the rules the built book is checked with

    for text in _all_texts(committed, gpu):
        prose = re.sub(r"`[^`]*`|\$[^$]*\$", "", text)  # inline code and math are not prose
        prose = "\n".join(line for line in prose.splitlines() if not line.startswith("|"))  # a table's header names it
        for sentence in re.split(r"(?<=[.!?])\s+(?=[A-Z*(•])", re.sub(r"\s+", " ", prose)):
            assert not _unreferenced_multipliers(sentence), sentence
        assert not _OUTSIDE.search(prose), _OUTSIDE.search(prose).group(0)
