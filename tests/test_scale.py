"""Scale-out: worker shards, the rollout worker pool (it trains, it fails loudly), the learners
(DDP's update equals one process's, DataParallel's fallback, torchrun on CPU) and ``bench scale``.

Speed is measured by ``python -m finrl_tutorial bench scale``, never here.
"""
import importlib
import json
import os
import shlex
import signal
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from finrl_tutorial.agents import ActorCritic, make_config
from finrl_tutorial.backtest.runner import agent_policy, random_baseline, run_policy
from finrl_tutorial.data import load_market, prepare_market
from finrl_tutorial.envs import EnvConfig, shard_start_windows
from finrl_tutorial.envs.core import start_day_range
from finrl_tutorial.errors import InputError
from finrl_tutorial.training import ddp_equivalence, equivalence
from finrl_tutorial.training.distributed import DataParallelContext, DistributedContext
from finrl_tutorial.training.experiment import run_experiment
from finrl_tutorial.training import load_checkpoint
from finrl_tutorial.training.trainer import train
from finrl_tutorial.training.workers import WorkerError, WorkerPool, split_envs

HERE = Path(__file__).resolve().parent  # the tests folder: ddp_resume_worker.py lives here

ROOT = Path(__file__).resolve().parents[1]
# stockstats (a dependency) calls set_index(inplace=True), deprecated in pandas 3.1: not our concern here
pytestmark = pytest.mark.filterwarnings("ignore:The inplace keyword in DataFrame.set_index")
EDGE_ENV = EnvConfig(action_mode="weights", episode_days=40)


def _edge_bars(days: int = 120) -> pd.DataFrame:
    """Two stocks: 600000.SH opens at yesterday's close and closes 1 % higher every day; 600036.SH
    never moves. Holding the first is an obvious, always-on edge (volume high enough that the
    participation cap at the open, 10 % of the auction's 1/48 of the day, never binds)."""
    dates = pd.bdate_range("2021-01-04", periods=days).strftime("%Y-%m-%d")
    rising = 10.0 * 1.01 ** np.arange(days + 1)
    rows = []
    for tic, open_, close in (("600000.SH", rising[:-1], rising[1:]),
                              ("600036.SH", np.full(days, 20.0), np.full(days, 20.0))):
        open_, close = np.round(open_, 2), np.round(close, 2)
        rows.append(pd.DataFrame({"date": dates, "tic": tic, "open": open_, "close": close,
                                  "high": np.maximum(open_, close) + 0.01, "low": np.minimum(open_, close) - 0.01,
                                  # liquid enough that the opening auction's volume cap never binds
                                  "volume": 1e8}))
    return pd.concat(rows, ignore_index=True)


@pytest.fixture(scope="module")
def edge_market():
    market = prepare_market(_edge_bars(), indicators=("rsi_30",))
    assert market.train.tickers == ["600000.SH", "600036.SH"]
    return market


def _tiny_config(**overrides):
    return make_config("ppo", **({"num_envs": 16, "horizon_len": 32, "batch_size": 256, "total_steps": 4096,
                                  "learning_rate": 3e-3, "seed": 0} | overrides))


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _subprocess_env() -> dict:
    env = dict(os.environ, FINRL_TUTORIAL_FAST="1", OMP_NUM_THREADS="1", MPLBACKEND="Agg")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    return env


# --- shards ------------------------------------------------------------------------------------

@pytest.mark.parametrize("num_days,num_shards", [(10, 1), (10, 3), (72, 2), (733, 4), (733, 7), (20, 19)])
def test_shards_are_disjoint_and_cover_the_start_days(num_days, num_shards):
    windows = shard_start_windows(num_days, num_shards)
    assert len(windows) == num_shards
    days = [set(range(lo, hi)) for lo, hi in windows]
    assert all(days)  # every shard can start episodes
    assert sum(len(d) for d in days) == len(set().union(*days))  # disjoint
    assert set().union(*days) == set(range(*start_day_range(num_days)))  # covering every start day
    sizes = [len(d) for d in days]
    assert max(sizes) - min(sizes) <= 1  # balanced


def test_shard_assignment_is_a_stable_hash_permutation():
    # crc32-ranked, so the same on every run, machine and PYTHONHASHSEED: pinned here.
    assert shard_start_windows(101, 4) == [(25, 50), (0, 25), (50, 75), (75, 100)]
    assert shard_start_windows(101, 4) == shard_start_windows(101, 4)
    assert shard_start_windows(101, 2, window=(20, 60)) == [(40, 60), (20, 40)]
    with pytest.raises(ValueError, match="cannot be split"):
        shard_start_windows(5, 5)


def test_envs_are_split_over_workers():
    assert split_envs(8, 2) == [4, 4]
    assert split_envs(10, 4) == [3, 3, 2, 2]
    with pytest.raises(ValueError, match="num_envs"):
        split_envs(2, 3)


# --- the worker pool -------------------------------------------------------------------------------

def test_two_workers_train_and_learn_the_obvious_edge(edge_market):
    config = _tiny_config()
    with WorkerPool(edge_market.train, config, EDGE_ENV, num_workers=2, seed=0) as pool:
        assert (pool.num_envs, pool.num_workers, pool.env_counts) == (16, 2, [8, 8])
        assert pool.windows == shard_start_windows(edge_market.train.num_days, 2)
        result = train(edge_market, config, EDGE_ENV, eval_every=0, progress=False, worker_pool=pool)
    assert not any(process.is_alive() for process in pool._processes)
    assert result.workers == 2 and result.world_size == 1
    assert result.env_steps == 4096 and len(result.log) == 8
    assert result.log["train/episodes"].sum() > 0
    assert result.log["train/reward_mean"].iloc[-1] > result.log["train/reward_mean"].iloc[0]

    seen = []
    policy = agent_policy(result.agent)
    agent = run_policy(lambda obs: (seen.append(obs), policy(obs))[1], edge_market.test, EDGE_ENV)
    per_stock = 3 + edge_market.test.num_features  # obs: cash share, then per stock its weight first
    weights = torch.cat(seen)[1:]  # after the first fill
    rising_weight, flat_weight = weights[:, 1].mean().item(), weights[:, 1 + per_stock].mean().item()
    assert rising_weight > 0.8 and flat_weight < 0.1, (rising_weight, flat_weight)
    final = agent.wealth.iloc[-1] / EDGE_ENV.initial_cash
    random_final = random_baseline(edge_market.test, EDGE_ENV).wealth.iloc[-1] / EDGE_ENV.initial_cash
    rising_final = 1.01 ** (edge_market.test.num_days - 2)  # all in from the first fill
    assert final > max(random_final, 1.0) + 0.1 and final > 0.9 * rising_final, (final, random_final)


def test_the_learner_updates_on_the_workers_idle_cores(edge_market, monkeypatch):
    """While the workers wait for the next collect, the update runs on ``learner_threads`` torch
    threads; the rollout and everything else keep the learner's own thread count."""
    loop = importlib.import_module("finrl_tutorial.agents.ppo")  # learn(), the loop train() runs

    threads_in_update, real_update = [], loop.update

    def spy(*args, **kwargs):
        threads_in_update.append(torch.get_num_threads())
        return real_update(*args, **kwargs)

    monkeypatch.setattr(loop, "update", spy)
    config = _tiny_config(total_steps=1024)
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with WorkerPool(edge_market.train, config, EDGE_ENV, num_workers=2, seed=0, learner_threads=2) as pool:
            assert pool.learner_threads == 2
            train(edge_market, config, EDGE_ENV, eval_every=0, progress=False, worker_pool=pool)
            assert torch.get_num_threads() == 1  # restored after every update
        train(edge_market, config, EDGE_ENV, eval_every=0, progress=False)  # no pool: own threads
    finally:
        torch.set_num_threads(before)
    assert threads_in_update == [2, 2, 1, 1]


def test_learner_threads_default_to_the_measured_choice_for_the_load_within_the_cores(edge_market, monkeypatch):
    from finrl_tutorial.training.workers import DEFAULT_LEARNER_THREADS, available_cores, torch_threads

    for load, expected in ((0.0, min(DEFAULT_LEARNER_THREADS, available_cores())), (available_cores() + 12.6, 1)):
        monkeypatch.setattr("os.getloadavg", lambda load=load: (load, load, load))
        with WorkerPool(edge_market.train, _tiny_config(), EDGE_ENV, num_workers=2, seed=0) as pool:
            assert pool.learner_threads == expected, load
    with pytest.raises(ValueError, match="learner_threads"):
        WorkerPool(edge_market.train, _tiny_config(), EDGE_ENV, num_workers=2, learner_threads=0)
    before = torch.get_num_threads()
    with pytest.raises(KeyError):
        with torch_threads(before + 1):
            assert torch.get_num_threads() == before + 1
            raise KeyError("an error inside the block")
    assert torch.get_num_threads() == before  # restored on the way out of an error too


def test_the_report_records_workers_and_throughput(edge_market, tmp_path):
    pools = []

    def factory(seed):  # what `python -m finrl_tutorial train --workers 2` passes to run_experiment
        pools.append(WorkerPool(edge_market.train, _tiny_config(seed=seed), EDGE_ENV, num_workers=2, seed=seed))
        return pools[-1]

    report = run_experiment(edge_market, _tiny_config(total_steps=1024), EDGE_ENV, out_dir=tmp_path, eval_every=0,
                            progress=False, worker_pool_factory=factory)
    saved = json.loads((tmp_path / "report.json").read_text())
    assert saved["workers"] == report["workers"] == 2 and saved["world_size"] == 1
    assert saved["env_steps"] == 1024 and saved["samples_per_s"] > 0
    assert len(pools) == 1 and not any(p.is_alive() for p in pools[0]._processes)  # closed after the seed


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs POSIX signals")
def test_a_killed_worker_ends_the_run_with_a_clear_error(edge_market):
    config = _tiny_config()
    pool = WorkerPool(edge_market.train, config, EDGE_ENV, num_workers=2, seed=0, timeout_s=60)
    try:
        os.kill(pool.pids[1], signal.SIGKILL)
        with pytest.raises(WorkerError, match=r"worker 1 \(pid \d+\) died with exit code -9 \(killed by SIGKILL\)"):
            train(edge_market, config, EDGE_ENV, eval_every=0, progress=False, worker_pool=pool)
        assert not any(process.is_alive() for process in pool._processes)  # the others were stopped too
    finally:
        pool.close()


def test_an_exception_in_a_worker_is_reported_with_its_traceback(edge_market):
    config = _tiny_config()
    with WorkerPool(edge_market.train, config, EDGE_ENV, num_workers=2, seed=0, timeout_s=60) as pool:
        pool._send(0, ("crash", "boom in the env"))
        agent = ActorCritic.from_config(pool.observation_dim, pool.action_dim, config, pool.action_mode)
        with pytest.raises(WorkerError, match=r"(?s)worker 0 \(pid \d+\) raised during collect \(exit code 1\)"
                                              r".*RuntimeError: boom in the env"):
            pool.collect(agent, config.horizon_len)
        with pytest.raises(WorkerError, match="closed"):
            pool.collect(agent, config.horizon_len)


def test_worker_pool_rejects_more_workers_than_envs(edge_market):
    with pytest.raises(ValueError, match="num_envs"):
        WorkerPool(edge_market.train, _tiny_config(num_envs=2), EDGE_ENV, num_workers=3)


# --- learners ------------------------------------------------------------------------------------

def test_ddp_update_on_two_halves_equals_one_process_on_the_whole_batch(tmp_path):
    """Two gloo ranks, each with half of a fixed rollout (split along the env dimension), end
    with the weights one process gets from the whole rollout, to 1e-6.

    The math is then identical, not just close: with one minibatch per rank (the whole local
    rollout) and one epoch, each rank's loss is a mean over its half, and DDP averages the two
    gradients, which is the gradient of the mean over the whole batch (equal halves); GAE runs
    per env, so splitting envs does not change it. Per-minibatch advantage standardisation is
    off because it would use each half's own mean and std; several minibatches would draw
    different samples per rank. The optimiser steps (Adam, gradient clipping) then see the same
    gradient on every rank. Three updates in a row check that Adam's state stays in step too.
    The check lives in the package (`finrl_tutorial.training.ddp_equivalence`): chapter 5 runs it too.
    """
    result = ddp_equivalence(tmp_path)  # two spawned gloo ranks, then one process on the whole rollout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rank0.pt", "rank1.pt"]
    reference, reference_losses, initial = result.whole, result.whole_losses, result.initial
    assert max((reference[k] - initial[k]).abs().max().item() for k in reference) > 1e-3  # it did learn
    ranks = result.ranks
    for rank in ranks:
        for name, value in reference.items():
            torch.testing.assert_close(rank["state"][name], value, rtol=0, atol=1e-6)
        assert [losses["loss/minibatches"] for losses in rank["losses"]] == [1] * equivalence.UPDATES
    differences = result.differences()
    assert max(d["rank 0 vs rank 1"] for d in differences.values()) == 0.0
    assert max(d["rank 0 vs one process"] for d in differences.values()) < 1e-6
    # each rank logs its local losses; their mean is the whole batch's loss
    for key in ("loss/policy", "loss/value", "loss/entropy"):
        mean = (ranks[0]["losses"][0][key] + ranks[1]["losses"][0][key]) / 2
        assert mean == pytest.approx(reference_losses[0][key], abs=1e-5)


def test_with_per_minibatch_standardisation_the_ranks_drift_from_one_process(tmp_path):
    """The setting the equivalence switches off, switched on: each rank standardises its half's
    advantages by that half's own mean and spread, so DDP still keeps the ranks identical, but they no
    longer compute one process's update: the difference is far above float rounding."""
    plain, standardised = ddp_equivalence(tmp_path / "off"), ddp_equivalence(tmp_path / "on", normalize_advantages=True)
    drift = max(d["rank 0 vs one process"] for d in standardised.differences().values())
    assert max(d["rank 0 vs rank 1"] for d in standardised.differences().values()) == 0.0
    assert drift > 1e3 * max(d["rank 0 vs one process"] for d in plain.differences().values()) and drift > 1e-5
    assert equivalence.equivalence_config(True).normalize_advantages and not equivalence.equivalence_config().normalize_advantages


@pytest.mark.whole_machine
def test_a_ddp_run_resumes_with_every_ranks_envs(tmp_path):
    """Rank 0's checkpoint holds every rank's envs and random states: a two-rank run cut in
    iteration 4 and resumed from its last.pt ends with the log and weights of an uninterrupted
    one. Resuming it with another number of ranks is refused in one line."""
    def run(run_dir: Path, mode: str) -> None:
        completed = subprocess.run([sys.executable, str(HERE / "ddp_resume_worker.py"), str(run_dir), mode],
                                   env=_subprocess_env(), capture_output=True, text=True, timeout=300)
        assert completed.returncode == 0, completed.stderr[-3000:]

    full, cut = tmp_path / "full", tmp_path / "cut"
    run(full, "full")
    run(cut, "cut")
    last = cut / "checkpoints" / "last.pt"
    state = load_checkpoint(last)
    assert state["iteration"] == 3 and len(state["ranks"]) == 2
    assert not torch.equal(state["ranks"][0]["env_account"]["day"], state["ranks"][1]["env_account"]["day"])
    assert torch.equal(state["obs"], state["ranks"][0]["obs"])  # rank 0's at the top, as in one process

    sys.path.insert(0, str(HERE))
    try:
        from ddp_resume_worker import CONFIG, EVAL_EVERY
    finally:
        sys.path.remove(str(HERE))
    with pytest.raises(ValueError, match=r"on 1 rank\(s\): it was written by 2") as caught:
        train(load_market(), make_config("ppo", **CONFIG), out_dir=cut, eval_every=EVAL_EVERY, progress=False,
              resume=last)
    assert "\n" not in str(caught.value)

    run(cut, "resume")
    columns = [c for c in pd.read_csv(full / "log.csv").columns if c not in ("wall_seconds", "samples_per_s")]
    pd.testing.assert_frame_equal(pd.read_csv(full / "log.csv")[columns], pd.read_csv(cut / "log.csv")[columns],
                                  rtol=0, atol=1e-6)
    a, b = torch.load(full / "weights.pt"), torch.load(cut / "weights.pt")
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_ddp_and_data_parallel_together_are_refused(capsys):
    from finrl_tutorial.cli import main

    assert main(["train", "--ddp", "--data-parallel", "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert "--ddp and --data-parallel exclude each other" in err and "\n" not in err


def test_ddp_context_outside_torchrun_says_how_to_launch(monkeypatch):
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ValueError, match="torchrun --nproc_per_node"):
        DistributedContext.from_env()


def test_data_parallel_falls_back_to_the_plain_module_on_cpu(edge_market):
    context = DataParallelContext(device="cpu")
    assert (context.rank, context.world_size, context.device) == (0, 1, torch.device("cpu"))
    agent = ActorCritic(4, 2, (128, 128), init_log_std=-0.5, network="mlp", portfolio=False)
    assert context.wrap(agent) is agent and context.all_reduce_mean(3.0) == 3.0
    result = train(edge_market, _tiny_config(total_steps=1024), EDGE_ENV, eval_every=0, progress=False,
                   distributed=context)
    assert result.world_size == 1 and result.env_steps == 1024
    context.close()


class _OtherRank:
    """A stand-in for rank 1 of 2 (no process group): the trainer's view of a non-main rank."""
    rank, world_size, device, is_main = 1, 2, torch.device("cpu"), False

    def wrap(self, agent):
        return agent

    def all_reduce_mean(self, x):
        return x

    def gather(self, obj):  # what a non-main rank gets back
        return None


def test_a_non_main_rank_writes_no_files(edge_market, tmp_path):
    out = tmp_path / "run"
    report = run_experiment(edge_market, _tiny_config(total_steps=2048), EDGE_ENV, out_dir=out, eval_every=1,
                            progress=False, distributed=_OtherRank())
    assert report == {}
    assert not out.exists() and list(tmp_path.iterdir()) == []


def _train_command(out: Path) -> list[str]:
    return ["-m", "finrl_tutorial", "train", "--ddp", "--total-steps", "4096", "--num-envs", "8", "--no-progress",
            "--eval-every", "2", "--out", str(out)]


def _check_ddp_report(out: Path) -> None:
    report = json.loads((out / "report.json").read_text())
    assert report["world_size"] == 2 and report["workers"] == 0
    assert report["env_steps"] == 4096 and report["samples_per_s"] > 0  # total_steps counts all ranks
    log = pd.read_csv(out / "log.csv")
    assert len(log) == 4 and log["env_steps"].iloc[-1] == 4096  # 4096 / (8 envs × 64 steps × 2 ranks)
    assert (out / "checkpoints" / "best.pt").exists()


@pytest.mark.whole_machine
def test_torchrun_two_processes_on_cpu(tmp_path):
    out = tmp_path / "ddp"
    completed = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
                                *_train_command(out)], cwd=tmp_path, env=_subprocess_env(),
                               capture_output=True, text=True, timeout=240)
    assert completed.returncode == 0, completed.stderr[-3000:]
    _check_ddp_report(out)


@pytest.mark.whole_machine
def test_torchrun_two_nodes_on_one_machine(tmp_path):
    """Multi-node is the same command with --nnodes/--node_rank: two local "nodes" of one process."""
    out, port = tmp_path / "nodes", _free_port()
    nodes = [subprocess.Popen([sys.executable, "-m", "torch.distributed.run", "--nnodes=2", f"--node_rank={rank}",
                               "--nproc_per_node=1", "--master_addr=127.0.0.1", f"--master_port={port}",
                               *_train_command(out)], cwd=tmp_path, env=_subprocess_env(),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for rank in (0, 1)]
    outputs = []
    try:
        for node in nodes:
            outputs.append(node.communicate(timeout=240))
    finally:
        for node in nodes:
            if node.poll() is None:
                node.kill()
                node.communicate()
    for node, (_, stderr) in zip(nodes, outputs):
        assert node.returncode == 0, stderr[-3000:]
    _check_ddp_report(out)


# --- bench scale ---------------------------------------------------------------------------------

def test_bench_scale_writes_records_json_and_plots(tmp_path):
    from finrl_tutorial import bench
    from finrl_tutorial.cli import build_parser

    argv = ["bench", "scale", "--layouts", "single", "vec", "vmap", "workers", "trainer", "--processes", "1",
            "--num-envs", "1", "8", "--loop-max-envs", "8", "--layout-envs", "8", "--loop-iterations", "1",
            "--seconds", "0.05", "--repeats", "2", "--stocks", "3", "--out", str(tmp_path)]
    args = build_parser().parse_args(argv)
    records = list(bench.run(args))
    assert [(r["layout"], r["processes"], r["num_envs"]) for r in records] == [
        ("single", 1, 1), ("vec", 1, 1), ("vec", 1, 8), ("vmap", 1, 1), ("vmap", 1, 8), ("trainer", 1, 8),
        ("workers", 1, 8)]
    for record in records:
        assert record["stocks"] == 3 and "cpu_count" in record and "date" in record
        assert record["machine"]["cpu_count"] == record["cpu_count"] and len(record["loadavg"]) == 3
        assert record.get("env_steps_per_s", 1) > 0 and record.get("samples_per_s", 1) > 0
        # the command reproduces the run: it parses back to the same arguments
        command = shlex.split(record["command"])
        assert command[:3] == ["python", "-m", "finrl_tutorial"]
        assert vars(build_parser().parse_args(command[3:])) == vars(args)
    assert all("samples_per_s" in r for r in records if r["layout"] in ("vec", "workers", "trainer"))
    trainer, workers = records[-2:]
    assert workers["rollout_env_steps_per_s"] > 0 and workers["learner_threads"] == 1
    for record in (trainer, workers):  # the median of two interleaved runs, each with its load
        assert record["repeats"] == len(record["runs"]) == 2 and all(len(run["loadavg"]) == 3 for run in record["runs"])
        assert [run["round"] for run in record["runs"]] == [0, 1]
        assert record["samples_per_s"] == pytest.approx(np.median([run["samples_per_s"] for run in record["runs"]]))
        # the phases of an iteration: all timed, the rollout and update non-zero, a median per phase
        assert set(record["phases"]) == set(bench.scale.PHASES) and record["samples_per_iteration"] == 8 * 64
        assert record["phases"]["rollout"] > 0 and record["phases"]["update"] > 0
        assert record["phases"]["all_reduce"] == record["phases"]["waiting"] == 0.0  # one process: none
        assert record["phases"]["update"] == pytest.approx(
            np.median([run["phases"]["update"] for run in record["runs"]]))
    assert workers["phases"]["transfer"] > 0 and trainer["phases"]["transfer"] == 0.0
    saved = json.loads((tmp_path / "scale.json").read_text())
    assert len(saved["records"]) == len(records)
    assert (tmp_path / "env_steps.png").stat().st_size > 0 and (tmp_path / "samples.png").stat().st_size > 0


def test_bench_scale_times_the_trainer_at_each_minibatch_size_and_keeps_the_default_as_baseline(tmp_path):
    from finrl_tutorial import bench
    from finrl_tutorial.book import scale as book_scale
    from finrl_tutorial.cli import build_parser

    argv = ["bench", "scale", "--layouts", "trainer", "--processes", "1", "--layout-envs", "8",
            "--trainer-batch-sizes", "1024", "256", "--loop-iterations", "1", "--repeats", "2", "--stocks", "3",
            "--out", str(tmp_path)]
    records = list(bench.run(build_parser().parse_args(argv)))
    assert [r["batch_size"] for r in records] == [1024, 256] and all(r["num_envs"] == 8 for r in records)
    # 8 envs x 64 steps = 512 samples: minibatches of 1,024 are capped at the rollout, 256 take two steps
    assert bench.scale.scale_label(records[0]) == "in-process trainer (8 envs)"
    assert bench.scale.scale_label(records[1]) == "in-process trainer (8 envs, minibatches of 256)"
    assert bench.scale.default_minibatches(records[0]) and not bench.scale.default_minibatches(records[1])
    assert bench.scale.default_minibatches({"layout": "trainer"})  # records made before the option
    faster_control = [records[0], records[1] | {"samples_per_s": 10 * records[0]["samples_per_s"]}]
    assert book_scale.fastest_single_process(faster_control) is faster_control[0]  # a control is never the baseline
    with pytest.raises(InputError, match="trainer-batch-sizes"):
        list(bench.run(build_parser().parse_args(argv[:-2] + ["--trainer-batch-sizes", "0", "--out", str(tmp_path)])))


def test_bench_processes_times_two_processes_and_one_in_each_round():
    from finrl_tutorial import bench
    from finrl_tutorial.cli import build_parser

    argv = ["bench", "processes", "--num-envs", "2", "--rounds", "2", "--seconds", "0.05", "--stocks", "3"]
    record, = list(bench.run(build_parser().parse_args(argv)))
    assert (record["bench"], record["num_envs"], record["accounts"], record["stocks"]) == ("processes", 2, 4, 3)
    assert len(record["rounds"]) == 2 and "date" in record and "cpu_count" in record
    for row in record["rounds"]:
        assert len(row["two_process_rates"]) == 2 and row["two_processes"] == pytest.approx(sum(row["two_process_rates"]))
        assert row["one_process_one_thread"] > 0 and len(row["loadavg"]) == 3
        assert row["one_subprocess"] > 0  # one command with all 4 accounts, timed as each of the two
        assert row["one_subprocess_share"] > 0  # one command with one process's 2 accounts, alone
    assert record["command"]  # bench.run names the command that made it


def test_like_with_like_finds_the_trainer_that_takes_the_ranks_optimiser_steps():
    from finrl_tutorial.book import learners, read_records
    from finrl_tutorial.book import scale as book_scale

    control = learners.like_with_like(read_records(book_scale.DDP_CONTROL_RECORD))
    assert list(control["optimiser steps"]) == ["16 × 2,048 ÷ 16 × 2,048", "16 × 2,048 ÷ 32 × 1,024",
                                                "16 × 2,048 ÷ 32 × 1,024"]
    assert control.index[0] == ("ddp ×2 (128 envs) ÷ in-process trainer (128 envs, 2 threads, minibatches of 2,048)")
    assert (control["p (Holm)"] >= control["p (t)"]).all() and set(control["rounds"]) == {5}
    with pytest.raises(InputError, match="takes ddp ×2"):  # the quiet record has no such trainer
        learners.like_with_like(read_records(book_scale.SCALE_RECORD))


@pytest.mark.parametrize("cores, load, threads", [
    (2, 1.4, 2),    # the quiet record's loads (1.2-1.4 on 2 cores): two threads were the faster
    (2, 14.6, 1),   # the loaded record's (14.6-22.9): one thread was, two ran at 0.09x its rate
    (2, 2.0, 1),    # a load equal to the cores leaves no core to spare
    (1, 0.0, 1),    # one core: one thread, however quiet
    (16, 3.0, 2),   # more cores than measured: still the measured two
])
def test_default_learner_threads_follow_the_load_at_start_up(cores, load, threads):
    from finrl_tutorial.training.workers import default_learner_threads

    assert default_learner_threads(cores=cores, load=load) == threads
