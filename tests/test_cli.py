"""The command line: ``python -m finrl_tutorial data|train|backtest|bench`` (mostly in-process through
``cli.main``; one real subprocess checks the exit code and stderr of a bad input)."""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from finrl_tutorial import cli
from finrl_tutorial.training import load_checkpoint

torch.set_num_threads(1)
pytestmark = pytest.mark.filterwarnings("ignore:The inplace keyword in DataFrame.set_index")
ROOT = Path(__file__).resolve().parents[1]


def run_cli(capsys, *argv):
    code = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_line_error(code, err, *needles):
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("error: ") and "Traceback" not in err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


# --- data -------------------------------------------------------------------------------------------

def test_data_summarises_the_sample_and_saves_a_csv(capsys, tmp_path):
    out_csv = tmp_path / "clean" / "sse15.csv"
    code, out, err = run_cli(capsys, "data", "--out", out_csv)
    assert code == 0, err
    assert "source:        sample:sse15" in out
    assert "tickers (15):" in out and "600519.SH" in out
    assert "trading days:  1221  (2015-01-05 .. 2020-01-03)" in out
    assert "suspended stock-days: 355" in out and "600050.SH 95" in out
    assert "corporate actions: 14" in out
    # detected ex-days are sized on whole bonus shares per 10 plus cash, from the open net of the market's
    # opening move: 600000.SH 2017-05-25 was 10转3派2 (the exchange's reference 11.75)
    assert "600276.SH 2015-06-15  holdings x1.3000 + ¥0.1090/share  (detected from the prices)" in out
    assert "600000.SH 2017-05-25  holdings x1.3000 + ¥0.1950/share  (detected from the prices)" in out
    assert "train 2015-01-05..2017-12-29 (732 days)" in out
    saved = pd.read_csv(out_csv)
    assert len(saved) == 1221 * 15
    assert {"date", "tic", "open", "close", "volume", "tradable", "split_ratio", "dividend", "feature_macd",
            "feature_return_1d"} <= \
        set(saved.columns)
    assert saved["tic"].nunique() == 15


def test_data_with_tickers_and_dates(capsys):
    code, out, err = run_cli(capsys, "data", "--tickers", "600000.SH,600519", "--start", "2019-01-01")
    assert code == 0, err
    assert "tickers (2):  600000.SH 600519.SH" in out
    assert "(2019-01-02 .. 2020-01-03)" in out


# --- bad inputs: exit 2, one line naming the problem -----------------------------------------------

@pytest.fixture
def bars_csv(sse15_bars, tmp_path):
    """Write a CSV of three sample stocks, 2018-2019, optionally changed by ``edit(frame)``."""
    def write(name="bars.csv", edit=None):
        frame = sse15_bars[sse15_bars["tic"].isin(["600000.SH", "600036.SH", "600519.SH"])]
        frame = frame[pd.to_datetime(frame["date"]) >= "2018-01-01"].reset_index(drop=True)
        if edit is not None:
            frame = edit(frame.copy())
        path = tmp_path / name
        frame.to_csv(path, index=False)
        return path
    return write


def test_csv_missing_a_column(capsys, bars_csv):
    path = bars_csv(edit=lambda f: f.drop(columns=["volume"]))
    assert_one_line_error(*run_cli(capsys, "data", "--source", path)[::2], "missing required column", "volume")


def test_tushare_without_token(capsys, monkeypatch):
    monkeypatch.delenv("TUSHARE_TOKEN", raising=False)
    code, _, err = run_cli(capsys, "data", "--source", "tushare", "--tickers", "600000.SH", "--start", "2020-01-01",
                           "--end", "2020-03-01")
    assert_one_line_error(code, err, "TUSHARE_TOKEN")


@pytest.mark.parametrize("argv,needles", [
    (["data", "--tickers", "601398.SH"], ["601398.SH", "not in the data"]),
    (["data", "--tickers", "FOO"], ["FOO"]),
    (["data", "--source", "{tmp}/nowhere/bars.csv"], ["not found", "bars.csv"]),
    (["backtest", "--checkpoint", "{tmp}/missing.pt"], ["missing.pt"]),
    (["data", "--source", "quandl"], ["unknown data source", "quandl"]),
])
def test_bad_input_exits_2_with_one_line(capsys, tmp_path, argv, needles):
    argv = [a.format(tmp=tmp_path) for a in argv]
    code, out, err = run_cli(capsys, *argv)
    assert_one_line_error(code, err, *needles)


@pytest.mark.parametrize("content", [b"definitely not a checkpoint", b"PK\x03\x04truncated zip", None])
def test_corrupt_checkpoint(capsys, tmp_path, content):
    path = tmp_path / "broken.pt"
    if content is None:  # a readable torch file that is not a training checkpoint
        torch.save({"model": {}, "config": {}}, path)
    else:
        path.write_bytes(content)
    code, _, err = run_cli(capsys, "backtest", "--checkpoint", path)
    assert_one_line_error(code, err, "broken.pt", "checkpoint")


def test_ddp_and_data_parallel_together_are_refused(capsys, tmp_path):
    code, out, err = run_cli(capsys, "train", "--ddp", "--data-parallel", "--out", tmp_path / "run")
    assert_one_line_error(code, err, "--ddp", "--data-parallel")
    assert not (tmp_path / "run").exists()  # refused before anything was touched


def test_bench_gpu_without_cuda(capsys, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    code, out, err = run_cli(capsys, "bench", "gpu", "--seconds", "0.1")
    assert_one_line_error(code, err, "CUDA")
    assert out == ""


def test_bad_input_in_a_real_process(bars_csv, tmp_path):
    path = bars_csv(edit=lambda f: f.drop(columns=["close"]))
    env = {k: v for k, v in os.environ.items() if k != "TUSHARE_TOKEN"} | {"FINRL_TUTORIAL_FAST": "1",
                                                                           "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "finrl_tutorial", "data", "--source", str(path)], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=120)
    assert_one_line_error(done.returncode, done.stderr, "close")
    assert done.stdout == ""


# --- train, then backtest the checkpoint -------------------------------------------------------------

def test_train_then_backtest(capsys, tmp_path):
    run = tmp_path / "runs" / "ppo"
    code, out, err = run_cli(capsys, "train", "--total-steps", 2048, "--num-envs", 8, "--no-progress", "--out", run)
    assert code == 0, err
    for name in ("report.json", "config.json", "learning_curve.png", "equity.png", "checkpoints/best.pt"):
        assert (run / name).is_file(), name
    report = json.loads((run / "report.json").read_text())
    assert report["env_steps"] == 2048 and report["config"]["num_envs"] == 8 and report["seeds"] == [0]
    assert "equal_weight_buy_and_hold" in out and "agent (1 seed)" in out and "Test split 2019-01-02..2020-01-03" in out

    code, out, err = run_cli(capsys, "backtest", "--checkpoint", run / "checkpoints" / "best.pt",
                             "--out", tmp_path / "bt")
    assert code == 0, err
    result = json.loads((tmp_path / "bt" / "backtest.json").read_text())
    assert result["split"] == "test"
    assert set(result["metrics"]) == {"agent", "equal_weight_buy_and_hold", "equal_shares_buy_and_hold", "constant_action", "random"}
    # the same checkpoint on the same split: the backtest reproduces the report's agent row
    assert result["metrics"]["agent"]["final_wealth"] == pytest.approx(report["agent"]["final_wealth"])
    assert (tmp_path / "bt" / "equity.png").stat().st_size > 1000
    assert "test split 2019-01-02..2020-01-03" in out


def test_train_on_own_csv_with_a_factor(capsys, bars_csv, tmp_path):
    def add_factor(frame):
        frame["my_factor"] = np.random.default_rng(0).normal(size=len(frame))
        return frame
    path = bars_csv("my.csv", edit=add_factor)
    run = tmp_path / "own"
    code, out, err = run_cli(capsys, "train", "--data", path, "--total-steps", 512, "--num-envs", 8,
                             "--horizon-len", 16, "--eval-every", 2, "--episode-days", 60, "--no-progress", "--out", run)
    assert code == 0, err
    state = load_checkpoint(run / "checkpoints" / "best.pt")
    assert state["feature_names"][-1] == "my_factor" and "return_1d" in state["feature_names"]
    assert state["tickers"] == ["600000.SH", "600036.SH", "600519.SH"]
    report = json.loads((run / "report.json").read_text())
    assert report["data"]["source"] == str(path) and report["data"]["tickers"] == state["tickers"]

    code, _, err = run_cli(capsys, "backtest", "--data", path, "--checkpoint", run / "checkpoints" / "best.pt",
                           "--split", "valid")
    assert code == 0, err
    # the checkpoint does not fit the sample (no my_factor there): one line, exit 2, naming the feature
    code, _, err = run_cli(capsys, "backtest", "--checkpoint", run / "checkpoints" / "best.pt")
    assert_one_line_error(code, err, "features", "missing my_factor")


# --- bench ---------------------------------------------------------------------------------------------

def test_bench_env_prints_json_lines(capsys):
    code, out, err = run_cli(capsys, "bench", "env", "--env", "vec", "--num-envs", 4, "--seconds", 0.2)
    assert code == 0, err
    records = [json.loads(line) for line in out.strip().splitlines()]
    assert len(records) == 1
    record = records[0]
    assert {"env", "num_envs", "stocks", "device", "env_steps_per_s"} <= set(record)
    assert record["env"] == "vec" and record["num_envs"] == 4 and record["stocks"] == 30
    assert record["device"] == "cpu" and record["env_steps_per_s"] > 0


def test_bench_train_rows_carry_the_load_around_each_size(capsys):
    code, out, err = run_cli(capsys, "bench", "train", "--num-envs", 4, 8, "--stocks", 3, "--iterations", 1,
                             "--horizon-len", 4)
    assert code == 0, err
    records = [json.loads(line) for line in out.strip().splitlines()]
    assert [r["num_envs"] for r in records] == [4, 8]
    for record in records:
        assert record["bench"] == "train" and record["stocks"] == 3 and record["samples_per_s"] > 0
        # a shared machine's load, read before and after the size was timed (1, 5 and 15 minutes)
        assert len(record["loadavg_before"]) == len(record["loadavg_after"]) == 3
        assert all(value >= 0 for value in record["loadavg_before"] + record["loadavg_after"])
