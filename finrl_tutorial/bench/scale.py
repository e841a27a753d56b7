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
            env-steps/s of the pool's rollouts alone; for P > 1 twice: the update on one
            thread (``learner_threads`` 1) and on P threads (the workers' cores, idle meanwhile)
trainer     the in-process trainer (no pool) with one batched env of ``--layout-envs`` × P
            sub-envs (P in ``--processes``: as many sub-envs as each process layout holds),
            measured by the same function as the workers layout: the single-process baseline;
            for P > 1 twice, the whole loop on one thread and on P (the cores the P-process
            layouts use), so the baseline is the faster of the two; with
            ``--trainer-batch-sizes``, at each of those minibatch sizes (P ranks of minibatches
            of B take the optimiser steps of one process with minibatches of P × B: the ddp
            layout's like-with-like control)
==========  ==================================================================================

The ddp, workers and trainer layouts also time the *phases* of each training iteration on the
learner's (rank 0's) clock: ``phases`` holds the median seconds per iteration of

==========  ==================================================================================
rollout     stepping the envs: in this process (trainer, ddp) or, for the workers layout, from
            sending the weights to the last worker's block arriving (so it includes waiting for
            the slowest worker: the learner's clock cannot tell the two apart)
transfer    workers: copying the learner's weights into the shared-memory policy (timed on its
            own after the run; the rollouts are written into shared memory, no copy back)
update      GAE and the minibatch gradient steps, without the time inside the all-reduce
all_reduce  ddp: averaging the gradients over the ranks (a DDP communication hook times a
            synchronous all-reduce of every bucket) and the ``target_kl`` averages, if any
waiting     ddp: a barrier before each all-reduce: the time this rank waits for the slower one
==========  ==================================================================================

and ``samples_per_iteration`` (all processes' env steps in one iteration), so a cost model
(`finrl_tutorial.book.scale`) can be fitted to the layouts a machine can run.

One JSON record per measurement (``layout``, ``processes``, ``num_envs`` — all sub-envs of all
processes —, ``env_steps_per_s`` and/or ``samples_per_s``, `finrl_tutorial.bench.machine` both
flat and under ``machine``, ``loadavg``: `os.getloadavg` when the record was made, so a reader
sees how busy a shared machine was, and ``command``: the command line that reproduces the run);
all of them also go to ``--out``/``scale.json`` with two bar charts, ``env_steps.png`` and
``samples.png``. The ddp and workers layouts are measured ``--repeats`` times, the process
counts interleaved, and report the median (the single runs under ``runs``, each with its
``loadavg``): on a shared machine
one run of a process layout can be off by tens of percent. The default sweep took about four
minutes on two quiet CPU cores (2026-11-30); the stored record (64 envs per process, 3 rounds)
took 47 minutes on two cores at load average 10-25 (2026-12-01). Add ``--max-num-envs 262144`` on
a GPU. Samples/s leave out one warm-up
iteration, and no layout counts process start-up. The ddp layout's env-steps/s assumes the processes really run in
parallel: on a machine with fewer free cores than ``--processes`` it cannot scale.
"""
from __future__ import annotations

import contextlib
import functools
import os
import socket
import statistics
import time
from pathlib import Path

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel

from ..agents import ActorCritic, EnvCollector, SingleProcessContext, collect_rollout, make_config
from ..atomic import write_json
from ..data import load_market
from ..data.clean import PreparedMarket
from ..errors import InputError
from ..plots import plot_bars
from ..provenance import loadavg, machine
from ..training.distributed import DistributedContext
from ..envs import EnvConfig, VecStockTradingEnv, shard_start_windows
from ..training.trainer import train
from ..training.workers import WorkerPool, torch_threads
from .common import explicit_command, market_with_stocks
from .env import measure_env
from .train import measure_loop

LAYOUTS = ("single", "subproc", "vec", "vmap", "ddp", "workers", "trainer")
PHASES = ("rollout", "transfer", "update", "all_reduce", "waiting")
"""The phases of one training iteration that the ddp, workers and trainer layouts time."""


def scale_label(record) -> str:
    """A short name for one ``bench scale`` record: ``vec 1,024``, ``subproc ×2``, ``ddp ×2 (512 envs)``,
    ``in-process trainer (256 envs)``, ``in-process trainer (128 envs, 2 threads, minibatches of 2,048)``,
    ``workers ×2 (128 envs, update on 1 thread)``."""
    layout = record["layout"]
    if layout in ("vec", "vmap"):
        return f"{layout} {int(record['num_envs']):,}"
    if layout == "single":
        return "single"
    if layout == "subproc":
        return f"subproc ×{int(record['processes'])}"
    if layout == "trainer":
        threads = int(record.get("learner_threads") or 1)
        label = f"in-process trainer ({int(record['num_envs']):,} envs" + (f", {threads} threads" if threads > 1 else "")
        if not default_minibatches(record):
            label += f", minibatches of {int(record['batch_size']):,}"
        return label + ")"
    label = f"{layout} ×{int(record['processes'])} ({int(record['num_envs']):,} envs"
    if layout == "workers" and record.get("learner_threads") and int(record["processes"]) > 1:
        threads = int(record["learner_threads"])
        label += f", update on {threads} thread{'s' if threads > 1 else ''}"
    return label + ")"

def default_minibatches(record) -> bool:
    """Whether a ``bench scale`` record's update took PPO's default minibatches (records made before
    ``--trainer-batch-sizes`` existed name none: they did)."""
    return not record.get("batch_size") or int(record["batch_size"]) == make_config("ppo").batch_size


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
    parser.add_argument("--trainer-batch-sizes", type=int, nargs="+", default=None,
                        help="minibatch sizes of the trainer layout (default: PPO's default only); two ranks of "
                             "minibatches of B take the optimiser steps of one trainer with 2B")
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


def _make_record(layout: str, processes: int, num_envs: int, stocks: int, device, command: str = "",
                 **values) -> dict:
    here = machine()
    return {"bench": "scale", "layout": layout, "processes": processes, "num_envs": num_envs, "stocks": stocks,
            "device": str(device), **values, "loadavg": loadavg(), "command": command, **here, "machine": here}


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _loop_config(num_envs: int, device, iterations: int, processes: int = 1, seed: int = 0,
                 batch_size: int | None = None):
    """PPO's default config with ``num_envs`` envs per process, for ``iterations`` iterations (and
    minibatches of ``batch_size``, if given)."""
    sizes = {} if batch_size is None else {"batch_size": batch_size}
    config = make_config("ppo", num_envs=num_envs, device=str(device), seed=seed, **sizes)
    config.total_steps = iterations * config.rollout_size * processes
    return config


class PhaseClock:
    """Seconds spent in each of `PHASES`, iteration by iteration, on this process's clock."""

    def __init__(self):
        self.iterations: list[dict[str, float]] = []

    def start_iteration(self) -> None:
        self.iterations.append(dict.fromkeys(PHASES, 0.0))

    def add(self, phase: str, seconds: float) -> None:
        if self.iterations:
            self.iterations[-1][phase] += seconds

    @contextlib.contextmanager
    def phase(self, name: str):
        started = time.perf_counter()
        try:
            yield
        finally:
            self.add(name, time.perf_counter() - started)

    def medians(self, skip: int = 1) -> dict[str, float]:
        """Median seconds per iteration of every phase, leaving out the first ``skip`` (warm-up)
        iterations; ``update`` without the all-reduce and waiting that happen inside it."""
        kept = self.iterations[skip:] or self.iterations
        rows = [row | {"update": max(row["update"] - row["all_reduce"] - row["waiting"], 0.0)} for row in kept]
        return {name: statistics.median(row[name] for row in rows) for name in PHASES}


class _TimedCollector:
    """Any `Collector` (the in-process env, a `WorkerPool`), its rollouts and updates timed."""

    def __init__(self, inner, clock: PhaseClock):
        self.inner, self.clock, self.num_workers = inner, clock, inner.num_workers

    def collect(self, agent, horizon_len=None):
        self.clock.start_iteration()
        with self.clock.phase("rollout"):
            return self.inner.collect(agent, horizon_len)

    @contextlib.contextmanager
    def update_threads(self):
        with self.clock.phase("update"), self.inner.update_threads():
            yield

    def reset(self, seed=None):
        return self.inner.reset(seed)

    def state_dict(self):
        return self.inner.state_dict()

    def load_state_dict(self, state):
        self.inner.load_state_dict(state)

    def close(self):
        self.inner.close()


def _timed_all_reduce_hook(clock: PhaseClock):
    """A DDP communication hook: a barrier (timed as ``waiting``), then a synchronous all-reduce
    of the bucket (``all_reduce``), then the mean, as DDP's default hook computes it."""
    def hook(_state, bucket):
        tensor = bucket.buffer()
        started = time.perf_counter()
        dist.barrier()
        arrived = time.perf_counter()
        dist.all_reduce(tensor)
        clock.add("waiting", arrived - started)
        clock.add("all_reduce", time.perf_counter() - arrived)
        future = torch.futures.Future()
        future.set_result(tensor.div_(dist.get_world_size()))
        return future
    return hook


class _TimedContext:
    """A `LearnerContext` whose DDP all-reduces are timed (`_timed_all_reduce_hook`)."""

    def __init__(self, inner, clock: PhaseClock):
        self.inner, self.clock = inner, clock
        self.rank, self.world_size, self.device = inner.rank, inner.world_size, inner.device
        self.is_main = inner.is_main

    def wrap(self, agent):
        module = self.inner.wrap(agent)
        if isinstance(module, DistributedDataParallel):
            module.register_comm_hook(None, _timed_all_reduce_hook(self.clock))
        return module

    def all_reduce_mean(self, x):
        with self.clock.phase("all_reduce"):
            return self.inner.all_reduce_mean(x)

    def gather(self, obj):
        return self.inner.gather(obj)

    def close(self):
        self.inner.close()


def _timed_train(prepared: PreparedMarket, config, collector, context) -> dict:
    """Train on ``prepared.train`` (no evaluation, no files) with ``collector`` and ``context``,
    timing every phase. Returns samples/s of the trainer itself, all ranks' env steps counted,
    after its first iteration (which warms up allocators, like `measure_loop`'s warm-up), the
    median phase seconds per iteration and the samples per iteration."""
    clock = PhaseClock()
    timed_collector, timed_context = _TimedCollector(collector, clock), _TimedContext(context, clock)
    result = train(prepared, config, eval_every=0, progress=False, distributed=timed_context,
                   worker_pool=timed_collector)
    log = result.log
    if len(log) < 2:
        samples = result.samples_per_s
    else:
        samples = float((log["env_steps"].iloc[-1] - log["env_steps"].iloc[0])
                        / (log["wall_seconds"].iloc[-1] - log["wall_seconds"].iloc[0]))
    return {"samples_per_s": samples, "phases": clock.medians(),
            "samples_per_iteration": config.rollout_size * context.world_size}


def _batched_collector(market, config, context, seed: int) -> EnvCollector:
    """The trainer's own in-process collector: one batched env on this rank's window of start days."""
    window = shard_start_windows(market.num_days, context.world_size)[context.rank]
    env = VecStockTradingEnv(market, config.num_envs, EnvConfig(), device=context.device, seed=seed,
                             start_window=window, check_actions=False)  # actions come from the agent
    return EnvCollector(env, collect_rollout)


def _weights_out_seconds(pool, config, repeats: int = 20) -> float:
    """Median seconds to copy a learner's weights into a shared-memory policy like the pool's."""
    agent = ActorCritic.from_config(pool.observation_dim, pool.action_dim, config, pool.action_mode)
    shared = ActorCritic.from_config(pool.observation_dim, pool.action_dim, config, pool.action_mode).share_memory()
    seconds = []
    for _ in range(repeats):
        started = time.perf_counter()
        with torch.no_grad():
            shared.load_state_dict(agent.state_dict())
        seconds.append(time.perf_counter() - started)
    return statistics.median(seconds)


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
        collector = _batched_collector(prepared.train, config, context, config.seed + 1000 * rank)
        measured = _timed_train(prepared, config, collector, context)
    finally:
        context.close()
    results.put(("loop", rank, measured))


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
    # every configuration of the process layouts in one interleaved loop: a slow spell of a shared
    # machine hits the baseline (the in-process trainer) and the layouts compared with it alike
    configurations = []  # (layout, processes, measure)
    if "trainer" in layouts:
        for p in args.processes:  # as many sub-envs as the p-process layouts hold, on 1 thread or on p
            for threads in sorted({1, p}):  # (the p-process layouts use p cores: so may the baseline)
                for batch_size in args.trainer_batch_sizes or [None]:
                    configurations.append(("trainer", 1, functools.partial(
                        _trainer_once, args, prepared, p * args.layout_envs, threads, batch_size)))
    if "ddp" in layouts:
        configurations += [("ddp", p, functools.partial(_ddp_once, args, prepared, p)) for p in args.processes]
    if "workers" in layouts:
        for p in args.processes:
            for threads in sorted({1, p}):  # the learner's update on one thread, or on the workers' p cores
                configurations.append(("workers", p, functools.partial(_workers_once, args, prepared, p,
                                                                       learner_threads=threads)))
    if configurations:
        yield from _repeated(configurations, args.repeats, _record, stocks, device)


def _repeated(configurations, repeats: int, record, stocks: int, device):
    """Measure each ``(layout, processes, measure)`` configuration ``repeats`` times, interleaved
    (A, B, C, A, B, C, …, so that a slow spell of a shared machine hits every configuration
    alike); one record per configuration with the median of every rate and of every phase, and
    the single runs, each with its load average and round, under ``runs``."""
    runs = [[] for _ in configurations]
    for round_ in range(repeats):
        for measured, (_, _, measure) in zip(runs, configurations):
            measured.append(measure() | {"loadavg": loadavg(), "round": round_})
    for measured, (layout, processes, _) in zip(runs, configurations):
        rates = {key: statistics.median(run[key] for run in measured)
                 for key in measured[0] if key.endswith("_per_s")}
        varying = set(rates) | {"loadavg", "round", "phases"}
        fixed = {key: value for key, value in measured[0].items() if key not in varying}
        if "phases" in measured[0]:
            fixed["phases"] = {name: statistics.median(run["phases"][name] for run in measured)
                               for name in measured[0]["phases"]}
        yield record(layout, processes, fixed.pop("num_envs"), stocks, device, **rates, **fixed,
                     repeats=len(measured),
                     runs=[{k: v for k, v in run.items() if k in varying} for run in measured])


def _ddp_once(args, prepared: PreparedMarket, processes: int) -> dict:
    answers = _run_ranks(processes, prepared, args.layout_envs, args.device, args.seconds, args.loop_iterations)
    main = next(value for kind, rank, value in answers if kind == "loop" and rank == 0)
    return {"num_envs": processes * args.layout_envs, "envs_per_process": args.layout_envs,
            "env_steps_per_s": sum(value for kind, _, value in answers if kind == "env"), **main}


def _trainer_once(args, prepared: PreparedMarket, num_envs: int, threads: int = 1,
                  batch_size: int | None = None) -> dict:
    config = _loop_config(num_envs, torch.device(args.device), args.loop_iterations + 1, batch_size=batch_size)
    context = SingleProcessContext(config.device)
    collector = _batched_collector(prepared.train, config, context, config.seed)
    with torch_threads(threads):  # the whole loop, rollout and update, on ``threads`` torch threads
        measured = _timed_train(prepared, config, collector, context)
    return {"num_envs": config.num_envs, "envs_per_process": num_envs, "learner_threads": threads,
            "batch_size": config.batch_size, **measured}


def _workers_once(args, prepared: PreparedMarket, processes: int, learner_threads: int | None = None) -> dict:
    # like the ddp layout: every process its own batched env of --layout-envs sub-envs
    config = _loop_config(args.layout_envs * processes, torch.device(args.device), args.loop_iterations + 1)
    with WorkerPool(prepared.train, config, num_workers=processes, seed=config.seed,
                    learner_threads=learner_threads) as pool:
        measured = _timed_train(prepared, config, pool, SingleProcessContext(config.device))
        collected = _pool_env_steps_per_s(pool, config, args.loop_iterations)
        transfer = _weights_out_seconds(pool, config)
    phases = measured["phases"]  # the learner's clock counted the weights' copy in the rollout
    phases |= {"transfer": transfer, "rollout": max(phases["rollout"] - transfer, 0.0)}
    return {"num_envs": config.num_envs, "envs_per_process": args.layout_envs, "learner_threads": pool.learner_threads,
            "rollout_env_steps_per_s": collected, **measured}


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
    if any(size < 1 for size in args.trainer_batch_sizes or []):
        raise InputError(f"--trainer-batch-sizes must be >= 1, got {args.trainer_batch_sizes}")
    prepared = market_with_stocks(load_market(), args.stocks)
    records = []
    for record in measure_layouts(args, prepared):
        records.append(record)
        yield record
    write_outputs(records, args.out)
