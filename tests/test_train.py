"""The trainer (files, seeds, resume, NaN stop), atomic checkpoints, the experiment report and the
backtest runner, on the embedded sse15 sample with tiny budgets."""
import ast
import inspect
import json
import math
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from finrl_tutorial.agents import ActorCritic, make_config
from finrl_tutorial.atomic import write_json
from finrl_tutorial.backtest import runner
from finrl_tutorial.envs import EnvConfig, VecStockTradingEnv
from finrl_tutorial.metrics import SUMMARY_KEYS
from finrl_tutorial.training import (LOG_COLUMNS, TrainingError, agent_from_checkpoint, atomic_save, load_checkpoint,
                                  train)
from finrl_tutorial.agents import ppo as ppo_module  # the loop (learn) and its pieces, patched below
from finrl_tutorial.training import WorkerPool
from finrl_tutorial.training.experiment import run_experiment

from finrl_tutorial.training import trainer as trainer_module  # noqa: E402

torch.set_num_threads(1)
pytestmark = pytest.mark.filterwarnings("ignore:The inplace keyword in DataFrame.set_index")

# 8 envs × 16 steps = 128 samples per iteration; 6 iterations
TINY = dict(num_envs=8, horizon_len=16, batch_size=64, repeat_times=2, total_steps=768)
NOT_DETERMINISTIC = ("wall_seconds", "samples_per_s")  # clocks


def tiny_config(**overrides):
    return make_config("ppo", **(TINY | overrides))


def _temp_files(folder: Path):
    return [p for p in folder.rglob("*") if p.name.endswith(".tmp")]


def _state_dicts_equal(a, b) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


# --- train(): files ---------------------------------------------------------------------------------

def test_train_writes_log_checkpoints_and_curve(sse15, tmp_path):
    result = train(sse15, tiny_config(), out_dir=tmp_path, eval_every=2, progress=False)

    log = pd.read_csv(tmp_path / "log.csv")
    assert list(log.columns) == list(LOG_COLUMNS)
    assert log["iteration"].tolist() == list(range(6))
    assert log["env_steps"].tolist() == [128 * (i + 1) for i in range(6)]
    evaluated = log["valid/sharpe_ratio"].notna().tolist()
    assert evaluated == [True, False, True, False, True, True]  # every 2nd iteration and the last
    assert log["loss/minibatches"].eq(2 * 2).all()
    assert log["learning_rate"].is_monotonic_decreasing and log["learning_rate"].iloc[0] == pytest.approx(3e-4)
    assert list(result.log.columns) == list(LOG_COLUMNS) and len(result.log) == 6
    assert result.env_steps == 768

    checkpoints = tmp_path / "checkpoints"
    for name in ("best.pt", "last.pt"):
        state = torch.load(checkpoints / name, map_location="cpu", weights_only=True)
        for key in ("model", "optimizer", "config", "env_config", "obs_dim", "action_dim", "iteration",
                    "env_steps", "tickers", "feature_names", "rng_torch", "rng_minibatch", "obs"):
            assert key in state, (name, key)
        assert state["tickers"] == list(sse15.train.tickers)
        assert state["feature_names"] == list(sse15.train.feature_names)
    last = load_checkpoint(checkpoints / "last.pt")
    assert last["iteration"] == 6 and last["env_steps"] == 768
    best = load_checkpoint(checkpoints / "best.pt")
    assert best["best_valid_sharpe"] == pytest.approx(result.best_valid_sharpe)
    assert result.best_valid_sharpe == pytest.approx(log["valid/sharpe_ratio"].max())
    # the returned agent holds the best checkpoint's weights
    agent, config, env_config = agent_from_checkpoint(best)
    assert _state_dicts_equal(agent.state_dict(), result.agent.state_dict())
    assert config.num_envs == 8 and env_config == EnvConfig()

    assert _temp_files(tmp_path) == []
    curve = tmp_path / "learning_curve.png"
    assert curve.stat().st_size > 1000 and curve.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_train_without_out_dir_writes_nothing(sse15, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = train(sse15, tiny_config(total_steps=256), eval_every=1, progress=False)
    assert result.run_dir is None and list(tmp_path.iterdir()) == []
    assert len(result.log) == 2


# --- seeds --------------------------------------------------------------------------------------------

def test_same_seed_same_run_other_seed_other_run(sse15):
    def run(seed):
        return train(sse15, tiny_config(total_steps=384, seed=seed), eval_every=2, progress=False)

    a, b, c = run(0), run(0), run(1)
    columns = [c for c in LOG_COLUMNS if c not in NOT_DETERMINISTIC]
    pd.testing.assert_frame_equal(a.log[columns], b.log[columns])
    assert _state_dicts_equal(a.agent.state_dict(), b.agent.state_dict())
    assert not _state_dicts_equal(a.agent.state_dict(), c.agent.state_dict())
    losses = ["loss/policy", "loss/value", "train/reward_mean"]
    assert not np.allclose(a.log[losses].to_numpy(), c.log[losses].to_numpy())


# --- resume -------------------------------------------------------------------------------------------

class _Crash(Exception):
    pass


def test_resume_continues_the_same_curve(sse15, tmp_path, monkeypatch):
    """A run killed in iteration 4 (its last checkpoint is from iteration 2's evaluation) and
    resumed from that last.pt ends with the same log rows and weights as an uninterrupted run."""
    config = tiny_config()  # same total_steps: the LR schedule is the same
    full = train(sse15, config, out_dir=tmp_path / "full", eval_every=2, progress=False)

    real_collect = ppo_module.collect_rollout
    calls = [0]

    def crashing_collect(*args, **kwargs):
        calls[0] += 1
        if calls[0] == 5:  # iteration 4
            raise _Crash
        return real_collect(*args, **kwargs)

    monkeypatch.setattr(ppo_module, "collect_rollout", crashing_collect)
    run_dir = tmp_path / "interrupted"
    with pytest.raises(_Crash):
        train(sse15, config, out_dir=run_dir, eval_every=2, progress=False)
    monkeypatch.setattr(ppo_module, "collect_rollout", real_collect)
    assert pd.read_csv(run_dir / "log.csv")["iteration"].tolist() == [0, 1, 2, 3]
    assert load_checkpoint(run_dir / "checkpoints" / "last.pt")["iteration"] == 3  # row 3 is redone

    resumed = train(sse15, config, out_dir=run_dir, eval_every=2, progress=False,
                    resume=run_dir / "checkpoints" / "last.pt")
    a = pd.read_csv(tmp_path / "full" / "log.csv")
    b = pd.read_csv(run_dir / "log.csv")
    assert b["iteration"].tolist() == list(range(6))
    columns = [c for c in LOG_COLUMNS if c not in NOT_DETERMINISTIC]
    pd.testing.assert_frame_equal(a[columns], b[columns], rtol=0, atol=1e-6)
    pd.testing.assert_frame_equal(full.log[columns].astype(float), resumed.log[columns].astype(float),
                                  rtol=0, atol=1e-6)
    assert resumed.env_steps == full.env_steps
    assert resumed.best_valid_sharpe == pytest.approx(full.best_valid_sharpe)
    assert _state_dicts_equal(full.agent.state_dict(), resumed.agent.state_dict())
    last_full = load_checkpoint(tmp_path / "full" / "checkpoints" / "last.pt")
    last_resumed = load_checkpoint(run_dir / "checkpoints" / "last.pt")
    assert _state_dicts_equal(last_full["model"], last_resumed["model"])
    assert _temp_files(tmp_path) == []


@pytest.mark.whole_machine
def test_resume_with_rollout_workers_restores_their_envs(sse15, tmp_path):
    """With a worker pool, last.pt holds every worker's accounts, random states and observations:
    a run cut after iteration 3 and resumed by a *new* pool (fresh processes) ends with the same
    log and weights as an uninterrupted one. A checkpoint of another layout is refused in one line."""
    config = tiny_config()

    def pool():
        return WorkerPool(sse15.train, config, EnvConfig(), num_workers=2, seed=config.seed, learner_threads=1)

    with pool() as workers:
        full = train(sse15, config, out_dir=tmp_path / "full", eval_every=2, progress=False, worker_pool=workers)
    run_dir = tmp_path / "cut"
    with pool() as workers:
        real_collect, calls = workers.collect, [0]

        def crashing_collect(*args, **kwargs):
            calls[0] += 1
            if calls[0] == 5:  # iteration 4: last.pt is from iteration 2's evaluation
                raise _Crash
            return real_collect(*args, **kwargs)

        workers.collect = crashing_collect
        with pytest.raises(_Crash):
            train(sse15, config, out_dir=run_dir, eval_every=2, progress=False, worker_pool=workers)
    last = run_dir / "checkpoints" / "last.pt"
    state = load_checkpoint(last)
    assert state["iteration"] == 3 and len(state["workers"]) == 2
    assert [tuple(w["obs"].shape) for w in state["workers"]] == [(4, state["obs_dim"])] * 2
    assert "env_account" not in state  # no in-process env in this run

    with pytest.raises(ValueError, match="no state of an in-process env .*2 rollout workers") as caught:
        train(sse15, config, out_dir=run_dir, eval_every=2, progress=False, resume=last)  # without the pool
    assert "\n" not in str(caught.value)
    assert pd.read_csv(run_dir / "log.csv")["iteration"].tolist() == [0, 1, 2, 3]  # the refusal changed nothing

    with pool() as workers:
        resumed = train(sse15, config, out_dir=run_dir, eval_every=2, progress=False, worker_pool=workers,
                        resume=last)
    columns = [c for c in LOG_COLUMNS if c not in NOT_DETERMINISTIC]
    pd.testing.assert_frame_equal(full.log[columns].astype(float), resumed.log[columns].astype(float),
                                  rtol=0, atol=1e-6)
    assert pd.read_csv(run_dir / "log.csv")["iteration"].tolist() == list(range(6))
    assert _state_dicts_equal(full.agent.state_dict(), resumed.agent.state_dict())
    assert resumed.workers == 2


@pytest.mark.whole_machine
def test_an_in_process_checkpoint_is_refused_by_a_worker_pool(sse15, tmp_path):
    config = tiny_config(total_steps=256)
    train(sse15, config, out_dir=tmp_path, eval_every=1, progress=False)
    with WorkerPool(sse15.train, config, EnvConfig(), num_workers=2, seed=0) as workers:
        with pytest.raises(ValueError, match="no rollout workers' env state") as caught:
            train(sse15, config, out_dir=tmp_path, eval_every=1, progress=False, worker_pool=workers,
                  resume=tmp_path / "checkpoints" / "last.pt")
        state = load_checkpoint(tmp_path / "checkpoints" / "last.pt") | {"workers": [
            {"obs": torch.zeros(3, 1)}, {"obs": torch.zeros(5, 1)}]}
        with pytest.raises(ValueError, match=r"2 rollout workers with \[3, 5\] envs, this pool has 2 with \[4, 4\]"):
            workers.load_state_dict(state)
    assert "\n" not in str(caught.value)


# --- train() is the loop plus bookkeeping -------------------------------------------------------------

def test_train_is_short_and_never_branches_on_the_scale_out_mode():
    """The scale-out paths plug in as a Collector and a LearnerContext: train() holds no `if` at
    all (the optional parts live in `Bookkeeping`, the loop in `agents.learn`)."""
    source = inspect.getsource(trainer_module.train)
    assert len(source.splitlines()) < 60
    tree = ast.parse(textwrap.dedent(source))
    branches = [node for node in ast.walk(tree) if isinstance(node, (ast.If, ast.IfExp, ast.While, ast.Match))]
    assert branches == [], [ast.unparse(node)[:80] for node in branches]
    calls = {node.func.id for node in ast.walk(tree) if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)}
    assert "learn" in calls  # the one loop


# --- a NaN stops the run ------------------------------------------------------------------------------

def _poison_update_at(monkeypatch, call: int):
    """From the ``call``-th update on, the learning rate is inf: the weights become non-finite."""
    real_update = ppo_module.update
    calls = [0]

    def update(agent, optimizer, *args, **kwargs):
        calls[0] += 1
        if calls[0] >= call:
            optimizer.param_groups[0]["lr"] = math.inf
        return real_update(agent, optimizer, *args, **kwargs)

    monkeypatch.setattr(ppo_module, "update", update)


@pytest.mark.parametrize("batch_size,repeat_times", [(64, 2), (128, 1)])  # NaN mid-update / after the last step
def test_nan_stops_training_and_keeps_the_last_good_checkpoint(sse15, tmp_path, monkeypatch, batch_size,
                                                               repeat_times):
    _poison_update_at(monkeypatch, 4)
    config = tiny_config(batch_size=batch_size, repeat_times=repeat_times, anneal_lr=False)
    with pytest.raises(TrainingError) as caught:
        train(sse15, config, out_dir=tmp_path, eval_every=1, progress=False)
    message = str(caught.value)
    last = tmp_path / "checkpoints" / "last.pt"
    assert str(last) in message and "non-finite" in message and "iteration 3" in message
    assert "\n" not in message
    state = load_checkpoint(last)
    assert state["iteration"] == 3
    assert all(torch.isfinite(v).all() for v in state["model"].values())
    agent, _, _ = agent_from_checkpoint(state)
    assert all(torch.isfinite(p).all() for p in agent.parameters())
    assert pd.read_csv(tmp_path / "log.csv")["iteration"].tolist() == [0, 1, 2]
    assert _temp_files(tmp_path) == []


def test_nan_before_any_checkpoint_says_so(sse15, tmp_path, monkeypatch):
    _poison_update_at(monkeypatch, 1)
    with pytest.raises(TrainingError, match="none written yet"):
        train(sse15, tiny_config(), out_dir=tmp_path, eval_every=1, progress=False)
    assert not (tmp_path / "checkpoints" / "last.pt").exists()


# --- atomic_save ----------------------------------------------------------------------------------------

def test_atomic_save_failure_keeps_the_previous_file(tmp_path, monkeypatch):
    path = tmp_path / "ckpt" / "last.pt"
    atomic_save({"model": {"w": torch.ones(3)}, "step": 1}, path)
    assert torch.load(path, weights_only=True)["step"] == 1
    real_save = torch.save

    def broken_save(obj, stream, *args, **kwargs):
        stream.write(b"PK\x03\x04 half a checkpoint")
        raise OSError("disk full")

    monkeypatch.setattr(torch, "save", broken_save)
    with pytest.raises(OSError, match="disk full"):
        atomic_save({"model": {"w": torch.zeros(3)}, "step": 2}, path)
    monkeypatch.setattr(torch, "save", real_save)
    state = torch.load(path, weights_only=True)
    assert state["step"] == 1 and torch.equal(state["model"]["w"], torch.ones(3))
    assert sorted(p.name for p in path.parent.iterdir()) == ["last.pt"]

    atomic_save({"model": {"w": torch.zeros(3)}, "step": 2}, path)  # and a good save replaces it
    assert torch.load(path, weights_only=True)["step"] == 2
    assert sorted(p.name for p in path.parent.iterdir()) == ["last.pt"]


def test_load_checkpoint_errors_are_one_line(tmp_path):
    with pytest.raises(FileNotFoundError, match="no checkpoint"):
        load_checkpoint(tmp_path / "missing.pt")
    garbage = tmp_path / "garbage.pt"
    garbage.write_bytes(b"this is not a checkpoint")
    with pytest.raises(ValueError, match="not a readable finrl_tutorial checkpoint") as caught:
        load_checkpoint(garbage)
    assert "\n" not in str(caught.value)
    other = tmp_path / "other.pt"
    torch.save({"weights": torch.ones(2)}, other)
    with pytest.raises(ValueError, match="no model/config"):
        load_checkpoint(other)
    partial = tmp_path / "partial.pt"
    torch.save({"model": {}, "config": {}}, partial)
    with pytest.raises(ValueError, match="env_config"):
        load_checkpoint(partial)


def test_write_json_refuses_nan_and_leaves_no_temp_file(tmp_path):
    path = tmp_path / "report.json"
    write_json({"a": 1.0}, path)
    with pytest.raises(ValueError):
        write_json({"a": float("nan")}, path)
    assert json.loads(path.read_text()) == {"a": 1.0}
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"]


# --- run_experiment --------------------------------------------------------------------------------------

def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def test_run_experiment_with_two_seeds_writes_the_report(sse15, tmp_path):
    config = tiny_config(total_steps=256, seed=3)
    report = run_experiment(sse15, config, out_dir=tmp_path, seeds=2, eval_every=1, progress=False)
    on_disk = json.loads((tmp_path / "report.json").read_text())
    assert on_disk == json.loads(json.dumps(report))

    assert on_disk["config"]["num_envs"] == 8 and on_disk["config"]["seed"] == 3
    assert on_disk["config"]["algo"] == "ppo"
    data = on_disk["data"]
    assert data["source"] == "sample:sse15" and data["tickers"] == list(sse15.full.tickers)
    assert data["train"] == ["2015-01-05", "2017-12-29"]
    assert data["valid"] == ["2018-01-02", "2018-12-28"]
    assert data["test"] == ["2019-01-02", "2020-01-03"]
    for block in (on_disk["agent"], on_disk["agent_std"], on_disk["baselines"]["equal_weight_buy_and_hold"],
                  on_disk["baselines"]["random"], *on_disk["agent_per_seed"].values()):
        assert set(block) == set(SUMMARY_KEYS) | {"final_wealth", "days"}
        assert all(_is_number(v) for v in block.values()), block
    assert on_disk["baselines"]["equal_weight_buy_and_hold"]["days"] == sse15.test.num_days - 1
    assert on_disk["seeds"] == [3, 4] and on_disk["best_seed"] in (3, 4)
    assert list(on_disk["agent_per_seed"]) == ["3", "4"]
    assert on_disk["env_steps"] == 2 * 256
    assert on_disk["wall_seconds"] > 0 and on_disk["samples_per_s"] > 0
    assert on_disk["workers"] == 0 and on_disk["world_size"] == 1
    per_seed = on_disk["agent_per_seed"]
    assert on_disk["agent"]["sharpe_ratio"] == pytest.approx(
        (per_seed["3"]["sharpe_ratio"] + per_seed["4"]["sharpe_ratio"]) / 2)
    days, both = on_disk["sharpe_vs_buy_and_hold"], on_disk["sharpe_vs_buy_and_hold_seeds_and_days"]
    assert (days["resampled"], both["resampled"], both["curves"]) == ("days", "seeds and days", 2)
    assert both["difference"] == days["difference"]  # the same statistic; only its interval counts the seeds

    saved = json.loads((tmp_path / "config.json").read_text())
    assert saved["config"] == on_disk["config"] and saved["seeds"] == [3, 4] and saved["data"] == data
    for name in ("equity.png", "learning_curve.png"):
        assert (tmp_path / name).stat().st_size > 1000
    for seed in ("3", "4"):  # the kept checkpoint's env-steps: the first row of the seed's log with its best Sharpe
        log = pd.read_csv(tmp_path / f"seed_{seed}" / "log.csv")
        valid = log.dropna(subset=["valid/sharpe_ratio"])
        assert on_disk["chosen_env_steps_per_seed"][seed] == int(valid.loc[valid["valid/sharpe_ratio"].idxmax(), "env_steps"])
        assert valid["valid/sharpe_ratio"].max() == pytest.approx(on_disk["valid_sharpe_per_seed"][seed])
    best = on_disk["best_seed"]
    assert (tmp_path / "checkpoints" / "best.pt").read_bytes() == \
        (tmp_path / f"seed_{best}" / "checkpoints" / "best.pt").read_bytes()
    assert (tmp_path / "seed_3" / "log.csv").exists() and (tmp_path / "seed_4" / "log.csv").exists()
    assert _temp_files(tmp_path) == []


def test_run_experiment_without_validation_still_writes_a_report(sse15, tmp_path):
    report = run_experiment(sse15, tiny_config(total_steps=128), out_dir=tmp_path, seeds=1, eval_every=0,
                            progress=False)
    assert report["valid_sharpe_per_seed"] == {"0": None}  # no validation ran: not -inf in JSON
    assert report["chosen_env_steps_per_seed"] == {"0": None}
    assert json.loads((tmp_path / "report.json").read_text())["seeds"] == [0]
    assert _temp_files(tmp_path) == []


# --- backtest ---------------------------------------------------------------------------------------------

class _RecordingEnv(VecStockTradingEnv):
    """Remembers the accounts after each step (to look at the baselines' fills)."""

    accounts = []

    def step(self, action):
        out = super().step(action)
        _RecordingEnv.accounts.append((self.account.holdings.clone(), out[4]["traded_value"].clone()))
        return out


def test_buy_and_hold_spends_equal_money_per_stock_on_the_first_fill(sse15, monkeypatch):
    test = sse15.test
    _RecordingEnv.accounts = []
    monkeypatch.setattr(runner, "VecStockTradingEnv", _RecordingEnv)
    record = runner.buy_and_hold_baseline(test, EnvConfig())
    holdings = _RecordingEnv.accounts[0][0][0]
    budget = EnvConfig().initial_cash / test.num_stocks
    fill_price = test.open[1]  # decided at day 0's close, filled at day 1's open
    value = holdings * fill_price
    tradable = test.tradable[1]
    assert not tradable.all(), "the sample has a stock suspended on the test split's first fill"
    assert (holdings[~tradable] == 0).all()  # a suspended stock stays in cash
    # wanted: budget / close[0] shares, rounded down to lots
    wanted_value = budget * fill_price / test.close[0]
    inside = tradable
    assert (value[inside] <= wanted_value[inside] + 1e-6).all()
    assert (value[inside] > wanted_value[inside] - 100 * fill_price[inside]).all()
    cheap = inside & (100 * fill_price < 0.05 * budget)  # where one lot is small, the spend is ~budget
    assert cheap.sum() >= 10
    assert float((value[cheap] - budget).abs().max()) < 0.05 * budget
    # then no trade ever again; fees only on the first fill
    assert record.traded_value.iloc[1] > 0.9 * budget * int(tradable.sum())
    assert (record.traded_value.iloc[2:] == 0).all()
    assert record.fees.iloc[1] > 0 and (record.fees.iloc[2:] == 0).all()
    assert record.metrics()["total_fees"] > 0
    assert record.wealth.iloc[0] == EnvConfig().initial_cash


def test_backtest_rows_agent_baselines_and_index(sse15):
    torch.manual_seed(0)
    env = VecStockTradingEnv(sse15.test, 1)
    flat = make_config("ppo", network="mlp", portfolio_head=False, hidden_sizes=(128, 128), init_log_std=-0.5)
    agent = ActorCritic.from_config(env.observation_dim, env.action_dim, flat, "weights")
    with torch.no_grad():  # a policy that buys: the agent row must show trading and fees
        agent.actor_mean[-1].bias.fill_(0.5)
    test = sse15.test
    dates = pd.DatetimeIndex(test.dates)
    benchmark = pd.Series(np.linspace(3000.0, 3600.0, len(dates)), index=dates)
    result = runner.backtest(runner.agent_policy(agent), test, EnvConfig(), benchmark=benchmark, random_seed=1)
    assert list(result.records) == ["agent", "equal_weight_buy_and_hold", "equal_shares_buy_and_hold", "constant_action",
                                   "random", "csi300"]
    table = result.table()
    assert list(table.index) == ["agent", "equal_weight_buy_and_hold", "equal_shares_buy_and_hold", "constant_action",
                                 "random", "csi300"]
    metrics = result.metrics
    for name, record in result.records.items():
        assert len(record.wealth) == test.num_days and record.wealth.iloc[0] == 1_000_000.0
        assert all(_is_number(v) for v in metrics[name].values())
    assert metrics["agent"]["total_fees"] > 0 and metrics["agent"]["turnover"] > 0
    assert metrics["random"]["total_fees"] > metrics["equal_weight_buy_and_hold"]["total_fees"] > 0
    assert metrics["csi300"]["total_fees"] == 0 and metrics["csi300"]["cumulative_return"] == pytest.approx(0.2)
    # seeded: the same random row again, another seed another row
    again = runner.backtest(None, test, EnvConfig(), random_seed=1)
    other = runner.backtest(None, test, EnvConfig(), random_seed=2)
    assert list(again.records) == ["equal_weight_buy_and_hold", "equal_shares_buy_and_hold", "constant_action", "random"]
    pd.testing.assert_series_equal(again.records["random"].wealth, result.records["random"].wealth)
    assert not again.records["random"].wealth.equals(other.records["random"].wealth)
    assert list(runner.backtest(None, test, EnvConfig(), random_seed=None).records) == [
        "equal_weight_buy_and_hold", "equal_shares_buy_and_hold", "constant_action"]
    # an index that does not cover the split is left out
    short = benchmark.iloc[10:]
    assert "csi300" not in runner.backtest(None, test, EnvConfig(), benchmark=short, random_seed=None).records


def test_run_policy_of_a_cash_policy_keeps_the_cash(sse15):
    record = runner.run_policy(lambda obs: -torch.ones(1, sse15.test.num_stocks, dtype=obs.dtype), sse15.test)
    assert (record.wealth == 1_000_000.0).all() and record.fees.sum() == 0
    assert record.metrics()["days"] == sse15.test.num_days - 1
