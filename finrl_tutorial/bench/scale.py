"""Scale-out benchmark: env-steps/s and whole-loop samples/s of every layout, in one run.

``python -m finrl_tutorial bench scale`` measures, on the sample market widened to ``--stocks``:

==========  ==================================================================================
layout      what runs
==========  ==================================================================================
single      one `StockTradingEnv` (gymnasium API, one account) in this process
subproc     ``gymnasium.vector.AsyncVectorEnv`` over P `StockTradingEnv` processes (P in
            ``--processes``)
vec         one `VecStockTradingEnv` with N sub-envs (N in ``--num-envs``, default powers of 4
            up to ``--max-num-envs``); whole-loop samples/s (rollout + PPO update) for
            N <= ``--loop-max-envs``
vmap        the same env batched by ``torch.func.vmap``
ddp         P processes, each with a batched env of ``--layout-envs`` sub-envs: env-steps/s of
            all P measured concurrently and summed; samples/s of a real DDP training run (gloo
            on CPU, NCCL on CUDA) through the trainer, all ranks' steps counted
workers     one learner and P `WorkerPool` rollout processes, each with a batched env of
            ``--layout-envs`` sub-envs (as in the ddp layout): samples/s of a training run
            through the trainer (its update on P threads, the workers' idle cores), and
            env-steps/s of the pool's rollouts alone; for P > 1 also as ``workers_1thread``,
            the same pool with the update kept on one thread
trainer     the in-process trainer (no pool) with one batched env of ``--layout-envs``
            sub-envs, measured by the same function as the workers layout: its baseline
==========  ==================================================================================

One JSON record per measurement (``layout``, ``processes``, ``num_envs`` — all sub-envs of all
processes —, ``env_steps_per_s`` and/or ``samples_per_s``, `finrl_tutorial.bench.machine` both
flat and under ``machine``, ``loadavg``: `os.getloadavg` when the record was made, so a reader
sees how busy a shared machine was, and ``command``: the command line that reproduces the run);
all of them also go to ``--out``/``scale.json`` with two bar charts, ``env_steps.png`` and
``samples.png``. The ddp and workers layouts are measured ``--repeats`` times, the process
counts interleaved, and report the median (the single runs under ``runs``, each with its
``loadavg``): on a shared machine
one run of a process layout can be off by tens of percent. The default sweep took about four
minutes on two quiet CPU cores (2026-11-30) and far longer on a busy one (load average 10); add ``--max-num-envs 262144`` on a GPU. Samples/s leave out one warm-up
iteration, and no layout counts process start-up. The ddp layout's env-steps/s assumes the processes really run in
parallel: on a machine with fewer free cores than ``--processes`` it cannot scale.
"""
from __future__ import annotations

import functools
import os
import socket
import statistics
import time
from pathlib import Path

import torch
import torch.multiprocessing as mp

from ..agents import ActorCritic, make_config
from ..atomic import write_json
from ..data import load_market
from ..data.clean import PreparedMarket
from ..errors import InputError
from ..plots import plot_bars
from ..provenance import machine
from ..training.distributed import DistributedContext
from ..training.trainer import train
from ..training.workers import WorkerPool
from .common import explicit_command, market_with_stocks
from .env import measure_env
from .train import measure_loop

LAYOUTS = ("single", "subproc", "vec", "vmap", "ddp", "workers", "trainer")


def scale_label(record: dict | pd.Series) -> str:
    """A short name for one ``bench scale`` record: ``vec 1,024``, ``subproc ×2``, ``ddp ×2 (512 envs)``,
    ``in-process trainer (256 envs)``."""
    layout = record["layout"]
    if layout in ("vec", "vmap"):
        return f"{layout} {int(record['num_envs']):,}"
    if layout == "single":
        return "single"
    if layout == "subproc":
        return f"subproc ×{int(record['processes'])}"
    if layout == "trainer":
        return f"in-process trainer ({int(record['num_envs']):,} envs)"
    return f"{layout} ×{int(record['processes'])} ({int(record['num_envs']):,} envs)"



def add_arguments(kinds) -> None:
    parser = kinds.add_parser("scale", help="env-steps/s and samples/s of single | subproc | vec | vmap | ddp | "
                                            "workers | trainer layouts, with a JSON file and plots")
    parser.add_argument("--layouts", nargs="+", choices=LAYOUTS, default=list(LAYOUTS))
    parser.add_argument("--processes", type=int, nargs="+", default=[1, 2],
                        help="process counts of the subproc, ddp and workers layouts")
    parser.add_argument("--num-envs", type=int, nargs="+", default=None,
                        help="sub-envs of the vec/vmap sweep (default: 1, 4, 16, … up to --max-num-envs)")
    parser.add_argument("--max-num-envs", type=int, default=65536, help="largest batched env of the default sweep")
    parser.add_argument("--loop-max-envs", type=int, default=1024,
                        help="measure whole-loop samples/s of the vec layout up to this many sub-envs")
    parser.add_argument("--layout-envs", type=int, default=256,
                        help="sub-envs per process of the ddp and workers layouts")
    parser.add_argument("--loop-iterations", type=int, default=3,
                        help="measured training iterations per samples/s figure (after one warm-up iteration)")
    parser.add_argument("--repeats", type=int, default=3,
                        help="runs of each configuration of the ddp, workers and trainer layouts (median "
                             "reported, every run kept)")
    parser.add_argument("--seconds", type=float, default=1.0, help="time per env-steps/s measurement")
    parser.add_argument("--stocks", type=int, default=30, help="columns (the sample's 15 stocks repeated)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--out", default="runs/bench_scale", help="folder for scale.json and the plots")
    parser.add_argument("--threads", type=int, default=1)


def default_sweep(max_num_envs: int) -> list[int]:
    """1, 4, 16, … up to ``max_num_envs`` (which is always included)."""
    sizes, n = [], 1
    while n < max_num_envs:
        sizes.append(n)
        n *= 4
    return sizes + [max_num_envs]


def loadavg() -> list[float] | None:
    """The 1-, 5- and 15-minute load averages (None where the OS has none, e.g. Windows)."""
    try:
        return [round(value, 2) for value in os.getloadavg()]
    except (AttributeError, OSError):
        return None


def _make_record(layout: str, processes: int, num_envs: int, stocks: int, device, command: str = "",
                 **values) -> dict:
    here = machine()
    return {"bench": "scale", "layout": layout, "processes": processes, "num_envs": num_envs, "stocks": stocks,
            "device": str(device), **values, "loadavg": loadavg(), "command": command, **here, "machine": here}


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _loop_config(num_envs: int, device, iterations: int, processes: int = 1, seed: int = 0):
    """PPO's default config with ``num_envs`` envs per process, for ``iterations`` iterations."""
    config = make_config("ppo", num_envs=num_envs, device=str(device), seed=seed)
    config.total_steps = iterations * config.rollout_size * processes
    return config


def _train_samples_per_s(prepared: PreparedMarket, config, **kwargs) -> float:
    """samples/s of the trainer itself on ``prepared.train`` (no evaluation, no files), all ranks'
    env steps counted, after its first iteration (which warms up allocators, like `measure_loop`'s
    warm-up)."""
    result = train(prepared, config, eval_every=0, progress=False, **kwargs)
    log = result.log
    if len(log) < 2:
        return result.samples_per_s
    return float((log["env_steps"].iloc[-1] - log["env_steps"].iloc[0])
                 / (log["wall_seconds"].iloc[-1] - log["wall_seconds"].iloc[0]))


def _pool_env_steps_per_s(pool, config, rollouts: int) -> float:
    """env-steps/s of the worker pool's rollouts alone (weights out, all workers collect, blocks
    back), with a fresh policy, after one warm-up rollout."""
    agent = ActorCritic.from_config(pool.observation_dim, pool.action_dim, config, pool.action_mode)
    pool.collect(agent)
    started = time.perf_counter()
    for _ in range(rollouts):
        pool.collect(agent)
    return rollouts * config.rollout_size / (time.perf_counter() - started)


def _ddp_rank(rank: int, world_size: int, port: int, prepared: PreparedMarket, num_envs: int, device: str,
              seconds: float, iterations: int, barrier, results) -> None:
    """One process of the ddp layout: concurrent env-steps/s, then a DDP training run."""
    torch.set_num_threads(1)
    os.environ.update(RANK=str(rank), WORLD_SIZE=str(world_size), LOCAL_RANK=str(rank),
                      MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    local = f"cuda:{rank}" if torch.device(device).type == "cuda" else "cpu"
    barrier.wait()
    record = measure_env("vec", prepared.train, num_envs, local, seconds)
    results.put(("env", rank, record["env_steps_per_s"]))
    context = DistributedContext.from_env(device=device, timeout_s=300)
    try:
        config = _loop_config(num_envs, local, iterations + 1, world_size)
        samples = _train_samples_per_s(prepared, config, distributed=context)
    finally:
        context.close()
    results.put(("loop", rank, samples))


def _run_ranks(world_size: int, *args, timeout_s: float = 900.0) -> list[tuple]:
    """Start ``world_size`` spawned `_ddp_rank` processes; their results, or an error naming a dead one."""
    context = mp.get_context("spawn")
    barrier, results = context.Barrier(world_size), context.Queue()
    port = _free_port()
    processes = [context.Process(target=_ddp_rank, args=(rank, world_size, port, *args, barrier, results),
                                 daemon=True) for rank in range(world_size)]
    for process in processes:
        process.start()
    answers, deadline = [], time.monotonic() + timeout_s
    try:
        while len(answers) < 2 * world_size:
            try:
                answers.append(results.get(timeout=1.0))
                continue
            except Exception:  # queue.Empty: check the processes and the clock
                pass
            failed = [(k, p.exitcode) for k, p in enumerate(processes) if p.exitcode not in (None, 0)]
            if failed:
                raise RuntimeError(f"bench scale: ddp rank {failed[0][0]} died with exit code {failed[0][1]}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"bench scale: ddp layout with {world_size} processes timed out")
    finally:
        for process in processes:
            process.join(timeout=30)
            if process.is_alive():
                process.kill()
                process.join()
    return answers


def measure_layouts(args, prepared: PreparedMarket):
    """Yield one record per measurement of the chosen layouts, on ``prepared.train``."""
    market = prepared.train
    device, stocks = torch.device(args.device), market.num_stocks
    sweep = args.num_envs or default_sweep(args.max_num_envs)
    layouts = args.layouts
    _record = functools.partial(_make_record, command=explicit_command(args, add_arguments))
    if "single" in layouts:
        record = measure_env("single", market, 1, "cpu", args.seconds)
        yield _record("single", 1, 1, stocks, "cpu", env_steps_per_s=record["env_steps_per_s"])
    if "subproc" in layouts:
        for processes in args.processes:
            record = measure_env("subproc", market, processes, "cpu", args.seconds)
            yield _record("subproc", processes, processes, stocks, "cpu", env_steps_per_s=record["env_steps_per_s"])
    for layout in ("vec", "vmap"):
        if layout not in layouts:
            continue
        for num_envs in sweep:
            values = {"env_steps_per_s": measure_env(layout, market, num_envs, device, args.seconds)["env_steps_per_s"]}
            if layout == "vec" and num_envs <= args.loop_max_envs:
                loop = measure_loop(market, _loop_config(num_envs, device, 1), iterations=args.loop_iterations)
                values |= {"samples_per_s": loop["samples_per_s"],
                           "rollout_env_steps_per_s": loop["rollout_env_steps_per_s"]}
            yield _record(layout, 1, num_envs, stocks, device, **values)
    if "ddp" in layouts:
        configurations = [("ddp", p, functools.partial(_ddp_once, args, prepared, p)) for p in args.processes]
        yield from _repeated(configurations, args.repeats, _record, stocks, device)
    configurations = []
    if "trainer" in layouts:
        configurations.append(("trainer", 1, functools.partial(_trainer_once, args, prepared)))
    if "workers" in layouts:
        for p in args.processes:
            configurations.append(("workers", p, functools.partial(_workers_once, args, prepared, p)))
            if p > 1:  # the same pool without the borrowed threads: what they add
                configurations.append(("workers_1thread", p,
                                       functools.partial(_workers_once, args, prepared, p, learner_threads=1)))
    if configurations:
        yield from _repeated(configurations, args.repeats, _record, stocks, device)


def _repeated(configurations, repeats: int, record, stocks: int, device):
    """Measure each ``(layout, processes, measure)`` configuration ``repeats`` times, interleaved
    (A, B, C, A, B, C, …, so that a slow spell of a shared machine hits every configuration
    alike); one record per configuration with the median of every rate and the single runs,
    each with its load average, under ``runs``."""
    runs = {(layout, processes): [] for layout, processes, _ in configurations}
    for _ in range(repeats):
        for layout, processes, measure in configurations:
            runs[layout, processes].append(measure() | {"loadavg": loadavg()})
    for (layout, processes), measured in runs.items():
        rates = {key: statistics.median(run[key] for run in measured)
                 for key in measured[0] if key.endswith("_per_s")}
        fixed = {key: value for key, value in measured[0].items() if not key.endswith("_per_s") and key != "loadavg"}
        yield record(layout, processes, fixed.pop("num_envs"), stocks, device, **rates, **fixed,
                     repeats=len(measured),
                     runs=[{k: v for k, v in run.items() if k in rates or k == "loadavg"} for run in measured])


def _ddp_once(args, prepared: PreparedMarket, processes: int) -> dict:
    answers = _run_ranks(processes, prepared, args.layout_envs, args.device, args.seconds, args.loop_iterations)
    return {"num_envs": processes * args.layout_envs, "envs_per_process": args.layout_envs,
            "env_steps_per_s": sum(value for kind, _, value in answers if kind == "env"),
            "samples_per_s": next(value for kind, rank, value in answers if kind == "loop" and rank == 0)}


def _trainer_once(args, prepared: PreparedMarket) -> dict:
    config = _loop_config(args.layout_envs, torch.device(args.device), args.loop_iterations + 1)
    return {"num_envs": config.num_envs, "envs_per_process": args.layout_envs, "learner_threads": 1,
            "samples_per_s": _train_samples_per_s(prepared, config)}


def _workers_once(args, prepared: PreparedMarket, processes: int, learner_threads: int | None = None) -> dict:
    # like the ddp layout: every process its own batched env of --layout-envs sub-envs
    config = _loop_config(args.layout_envs * processes, torch.device(args.device), args.loop_iterations + 1)
    with WorkerPool(prepared.train, config, num_workers=processes, seed=config.seed,
                    learner_threads=learner_threads) as pool:
        samples = _train_samples_per_s(prepared, config, worker_pool=pool)
        collected = _pool_env_steps_per_s(pool, config, args.loop_iterations)
    return {"num_envs": config.num_envs, "envs_per_process": args.layout_envs, "learner_threads": pool.learner_threads,
            "samples_per_s": samples, "rollout_env_steps_per_s": collected}


def write_outputs(records: list[dict], out: str | Path) -> Path:
    """``scale.json`` and the two bar charts under ``out``."""
    out = Path(out)
    write_json({"records": records}, out / "scale.json")
    for key, name, label in (("env_steps_per_s", "env_steps.png", "env steps / s"),
                             ("samples_per_s", "samples.png", "training samples / s (rollout + update)")):
        values = {scale_label(r): r[key] for r in records if r.get(key, 0) > 0}
        if values:
            plot_bars(values, path=out / name, ylabel=label, log=True)
    return out


def run(args):
    if any(p < 1 for p in args.processes):
        raise InputError(f"--processes must be >= 1, got {args.processes}")
    if args.repeats < 1:
        raise InputError(f"--repeats must be >= 1, got {args.repeats}")
    prepared = market_with_stocks(load_market(), args.stocks)
    records = []
    for record in measure_layouts(args, prepared):
        records.append(record)
        yield record
    write_outputs(records, args.out)
