"""Rollout workers: N processes, each stepping its own batched env on its own shard of the data.

One learner process (the trainer) owns the networks and the optimiser. `WorkerPool` starts
``num_workers`` processes (``torch.multiprocessing``, *spawn* context, so it works the same on
Linux, macOS, Windows and inside CUDA programs). Each worker builds one `VecStockTradingEnv`
with its share of ``config.num_envs`` and keeps it alive for the whole run, so episodes run
across iterations exactly as in the one-process trainer.

Data sharding. The tickers cannot be split (the policy's input and output sizes depend on
them), so the *episode start days* are: the training days on which an episode may start are cut
into ``num_workers`` contiguous, disjoint windows, and each worker's episodes start only inside
its window (`VecStockTradingEnv(start_window=...)`). Which window goes to which worker is a
permutation fixed by a stable hash (``zlib.crc32``, never Python's salted ``hash()``), so the
assignment is the same in every run and on every machine; see `shard_start_windows`. The same
function gives each DDP rank its window (`finrl_tutorial.training.distributed`).

One iteration (`WorkerPool.collect`):

1. the learner copies its weights into a policy held in *shared memory* (no pickling);
2. it sends each worker a short ``collect`` message over a pipe;
3. each worker runs `collect_rollout` with the shared policy and writes its
   ``[horizon_len, envs_of_this_worker, ...]`` block straight into its slice of one shared
   ``[horizon_len, num_envs, ...]`` rollout: the blocks are concatenated along the env
   dimension without a copy;
4. each worker answers with its episode statistics; the learner sums them.

The pool is synchronous (every sample is on-policy, as PPO needs), so the workers sit idle while
the learner updates. The learner may borrow their cores for the update: it runs the gradient
steps with ``learner_threads`` torch threads and goes back to its own thread count for the rest of
the loop (`WorkerPool.update_threads`). The default (`default_learner_threads`) is chosen when
the pool starts, by measurement: two threads while the machine's load average is below its cores
(one on a one-core machine), else one. On a quiet 2-core machine
(``book/data/bench_scale_quiet.jsonl``, 2026-12-02 02:22-02:27 UTC, load average 0.8-1.4) two
workers made 1.21x the samples/s with the update on two threads that they made with it on one
(faster in every round, 1.13-1.31x; the update 0.91 s against 1.16 s), and one thread was the
slower of the two. A second thread pays only where a second core is free during the update: on a
machine with more runnable processes than cores (``book/data/bench_scale.jsonl``, load average
13-25 on 2 cores) the two threads wait for each other at every operation and the same layout ran
at 0.09x the samples/s of one thread, so there the pool takes one (book chapter 4.5).

Failures never hang the learner: it waits on the pipes *and* on the processes' sentinels with
a timeout, so a worker that raises (its traceback is sent back), is killed, or goes silent ends
the run with a `WorkerError` naming the worker and its exit code or exception.
"""
from __future__ import annotations

import contextlib
import dataclasses
import multiprocessing.connection
import os
import signal
import time
import traceback
import zlib

import torch
import torch.multiprocessing as mp

from ..agents import ActorCritic, PPOConfig, Rollout, collect_rollout
from ..agents.collect import check_saved_account
from ..data.market import MarketData
from ..envs import EnvConfig, VecStockTradingEnv, shard_start_windows
from ..envs.core import observation_size
from ..errors import InputError, TrainingError

_ROLLOUT_FIELDS = tuple(f.name for f in dataclasses.fields(Rollout) if f.name != "stats")  # the tensors


DEFAULT_LEARNER_THREADS = 2
"""The learner's torch threads during the update on a machine with a core to spare (at most the
cores this process may use; `default_learner_threads` decides): the faster of 1 and 2 with two
workers in the quiet ``bench scale`` record, ``book/data/bench_scale_quiet.jsonl`` (1.21x the
samples/s of one thread; book chapter 4.5). Measured with two workers on two cores; with more
workers the update stays on two threads (more were not measured)."""


def default_learner_threads(cores: int | None = None, load: float | None = None) -> int:
    """The update's threads when `WorkerPool` is given none, chosen when the pool starts:
    `DEFAULT_LEARNER_THREADS` (at most ``cores``) while the 1-minute load average ``load`` is below
    ``cores``, else one. The two ``bench scale`` records fix the two ends: at load averages of
    1.2-1.4 on 2 cores two threads were the faster (``bench_scale_quiet.jsonl``), at 14.6-22.9 one
    thread was, two running at 0.09x its samples/s (``bench_scale.jsonl``: the threads wait for a core
    at every operation). The threshold between them is a choice, not a measurement. ``cores``
    defaults to `available_cores`, ``load`` to ``os.getloadavg()`` (where the OS has none, the
    machine counts as quiet)."""
    cores = available_cores() if cores is None else cores
    if load is None:
        try:
            load = os.getloadavg()[0]
        except (AttributeError, OSError):  # Windows
            load = 0.0
    return max(1, min(DEFAULT_LEARNER_THREADS, cores)) if load < cores else 1


class WorkerError(TrainingError):
    """A rollout worker died, raised, or stopped answering; the message names it and why."""


def split_envs(num_envs: int, num_workers: int) -> list[int]:
    """Sub-envs per worker: ``num_envs // num_workers`` each, the remainder to the first workers."""
    if num_workers < 1:
        raise InputError(f"num_workers must be >= 1, got {num_workers}")
    if num_envs < num_workers:
        raise InputError(f"num_envs ({num_envs}) must be >= num_workers ({num_workers}): every worker "
                         "needs at least one env")
    base, extra = divmod(num_envs, num_workers)
    return [base + (1 if k < extra else 0) for k in range(num_workers)]


def available_cores() -> int:
    """CPU cores this process may run on (its affinity mask where the OS has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


@contextlib.contextmanager
def torch_threads(count: int):
    """Run the block with ``count`` torch intra-op threads, then restore the previous count."""
    previous = torch.get_num_threads()
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


def worker_seed(seed: int, index: int) -> int:
    """The env/sampling seed of worker ``index`` for a run seeded ``seed`` (stable, distinct)."""
    return zlib.crc32(f"{seed}/worker-{index}".encode()) & 0x7FFFFFFF


def _worker_main(index: int, market: MarketData, env_config: EnvConfig, num_envs: int,
                 start_window: tuple[int, int], seed: int, policy: ActorCritic, buffers: dict,
                 obs_buffer: torch.Tensor, conn) -> None:
    """The body of one worker process: build the env once, then serve reset/collect requests."""
    torch.set_num_threads(1)
    os.environ["TQDM_DISABLE"] = "1"  # no progress bars from workers
    try:
        env = VecStockTradingEnv(market, num_envs, env_config, device="cpu", seed=seed, start_window=start_window,
                                 check_actions=False)  # the agent's actions: NaN weights surface in the update
        torch.manual_seed(seed)
        obs, _ = env.reset(seed=seed)
        obs_buffer.copy_(obs)
        conn.send(("ready", env.observation_dim, env.action_dim))
        while True:
            message = conn.recv()
            if message[0] == "collect":
                horizon_len = message[1]
                rollout = Rollout(**{name: buffers[name][:horizon_len] for name in _ROLLOUT_FIELDS})
                obs = collect_rollout(env, policy, rollout, obs)
                obs_buffer.copy_(obs)
                conn.send(("done", float(rollout.stats["episodes"]), float(rollout.stats["final_wealth_sum"])))
            elif message[0] == "reset":
                torch.manual_seed(message[1])
                obs, _ = env.reset(seed=message[1])
                obs_buffer.copy_(obs)
                conn.send(("done",))
            elif message[0] == "state":  # numpy arrays: they pickle by value through the pipe
                conn.send(("state", {"obs": obs.numpy().copy(), "rng_env": env.rng_state.numpy().copy(),
                                     "rng_torch": torch.get_rng_state().numpy().copy(),
                                     "env_account": {k: v.numpy().copy() for k, v in env.account._asdict().items()}}))
            elif message[0] == "load":
                state = message[1]
                env.rng_state.copy_(torch.from_numpy(state["rng_env"]))
                for name, tensor in env.account._asdict().items():
                    tensor.copy_(torch.from_numpy(state["env_account"][name]))
                torch.set_rng_state(torch.from_numpy(state["rng_torch"]))
                obs = torch.from_numpy(state["obs"]).to(obs.dtype)
                obs_buffer.copy_(obs)
                conn.send(("done",))
            elif message[0] == "crash":  # for tests: fail the way a bug would
                raise RuntimeError(message[1])
            elif message[0] == "close":
                conn.close()
                os._exit(0)  # nothing to clean up: skip the interpreter's slow teardown of torch
    except (EOFError, BrokenPipeError, KeyboardInterrupt):  # the learner has gone: just leave
        return
    except BaseException:
        try:
            conn.send(("error", traceback.format_exc()))
        except (OSError, ValueError):
            pass
        raise SystemExit(1) from None


def _describe_exit(code: int | None) -> str:
    if code is None:
        return "is still running"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"died with exit code {code} (killed by {name})"
    return f"died with exit code {code}"


class WorkerPool:
    """``num_workers`` rollout processes, each with a live `VecStockTradingEnv` on its data shard.

    A `finrl_tutorial.agents.Collector`, like the in-process `finrl_tutorial.agents.EnvCollector`:
    ``reset(seed)``, ``collect(agent, horizon_len)``, ``update_threads()``, ``state_dict()`` /
    ``load_state_dict()`` (every worker's accounts, env and torch random states and observations,
    so a resumed run continues the same episodes) and ``close()``; also ``num_envs`` (all
    workers together), ``observation_dim``, ``action_dim`` and ``num_workers``. The envs run on
    the CPU whatever ``config.device`` is; the rollout is moved to the agent's device. Use as a
    context manager or call `close` (it is safe to call twice).

    ``timeout_s`` bounds every wait for the workers (start-up, one reset, one rollout): past it
    the run ends with a `WorkerError` instead of hanging.

    ``learner_threads``: torch threads of the learner's update while the workers are idle
    (default: `default_learner_threads`, two on a machine whose load average is below its cores,
    else one); the trainer enters `update_threads` around each update.
    """

    def __init__(self, market: MarketData, config: PPOConfig, env_config: EnvConfig | None = None,
                 num_workers: int = 2, seed: int | None = None, *, timeout_s: float = 600.0,
                 start_window: tuple[int, int] | None = None, learner_threads: int | None = None):
        env_config = env_config or EnvConfig()
        if learner_threads is not None and learner_threads < 1:
            raise InputError(f"learner_threads must be >= 1, got {learner_threads}")
        self.num_workers = num_workers
        self.learner_threads = learner_threads or default_learner_threads()
        self.env_counts = split_envs(config.num_envs, num_workers)
        self.num_envs = config.num_envs
        self.horizon_len = config.horizon_len
        self.seed = config.seed if seed is None else seed
        self.timeout_s = timeout_s
        self.windows = shard_start_windows(market.num_days, num_workers, start_window)
        self.observation_dim = observation_size(market.num_stocks, market.num_features)
        self.action_dim = market.num_stocks
        self.action_mode = env_config.action_mode
        self._closed = False
        self._processes: list = []
        self._conns: list = []

        market = market.to("cpu", torch.float32)
        # The policy the workers act with, in shared memory: the learner copies its weights in.
        self._policy = ActorCritic.from_config(self.observation_dim, self.action_dim, config,
                                               env_config.action_mode).share_memory()
        shapes = {"obs": (self.observation_dim,), "actions": (self.action_dim,), "reward_per_weight": (self.action_dim,)}
        self._buffers = {name: torch.zeros(self.horizon_len, self.num_envs, *shapes.get(name, ())).share_memory_()
                         for name in _ROLLOUT_FIELDS}
        self._obs = torch.zeros(self.num_envs, self.observation_dim).share_memory_()
        self._slices = []
        first = 0
        for count in self.env_counts:
            self._slices.append(slice(first, first + count))
            first += count

        context = mp.get_context("spawn")
        try:
            for index, (count, part) in enumerate(zip(self.env_counts, self._slices)):
                ours, theirs = context.Pipe(duplex=True)
                views = {name: buffer[:, part] for name, buffer in self._buffers.items()}
                process = context.Process(
                    target=_worker_main, name=f"finrl-worker-{index}", daemon=True,
                    args=(index, market, env_config, count, self.windows[index], worker_seed(self.seed, index),
                          self._policy, views, self._obs[part], theirs))
                process.start()
                theirs.close()  # only the worker holds its end: a dead worker reads as EOF here
                self._processes.append(process)
                self._conns.append(ours)
            self._gather("start-up")
        except BaseException:
            self.close()
            raise

    # -- plumbing -------------------------------------------------------------------------------

    @property
    def pids(self) -> list[int]:
        return [process.pid for process in self._processes]

    def _fail(self, message: str):
        self.close()
        raise WorkerError(message)

    def _check_open(self) -> None:
        if self._closed:
            raise WorkerError("the worker pool is closed (after an error, or by close())")

    def _raised(self, index: int, during: str, text: str):
        process = self._processes[index]
        process.join(timeout=5.0)
        self._fail(f"worker {index} (pid {process.pid}) raised during {during} "
                   f"(exit code {process.exitcode}):\n{text.rstrip()}")

    def _dead(self, index: int, during: str):
        process, conn = self._processes[index], self._conns[index]
        try:  # a worker that raised sent its traceback before it exited: report that
            while conn.poll():
                reply = conn.recv()
                if reply[0] == "error":
                    self._raised(index, during, reply[1])
        except (EOFError, OSError):
            pass
        process.join(timeout=1.0)
        self._fail(f"worker {index} (pid {process.pid}) {_describe_exit(process.exitcode)} during {during}; "
                   "the run stops")

    def _send(self, index: int, message) -> None:
        self._check_open()
        if not self._processes[index].is_alive():
            self._dead(index, message[0])
        try:
            self._conns[index].send(message)
        except (BrokenPipeError, EOFError, OSError):
            self._dead(index, message[0])

    def _gather(self, during: str) -> list[tuple]:
        """Wait for one answer from every worker, watching the pipes, the processes and the clock."""
        self._check_open()
        replies: dict[int, tuple] = {}
        deadline = time.monotonic() + self.timeout_s
        while len(replies) < self.num_workers:
            pending = [k for k in range(self.num_workers) if k not in replies]
            remaining = deadline - time.monotonic()
            handles = [self._conns[k] for k in pending] + [self._processes[k].sentinel for k in pending]
            ready = multiprocessing.connection.wait(handles, timeout=max(remaining, 0.0))
            if not ready:
                self._fail(f"worker {pending[0]} (pid {self._processes[pending[0]].pid}) sent nothing for "
                           f"{self.timeout_s:.0f} s during {during}; the run stops (raise timeout_s if it is slow)")
            for k in pending:  # read messages first: a worker that failed sends its traceback, then exits
                conn = self._conns[k]
                if conn in ready or conn.poll():
                    try:
                        reply = conn.recv()
                    except (EOFError, OSError):
                        self._dead(k, during)
                    if reply[0] == "error":
                        self._raised(k, during, reply[1])
                    replies[k] = reply
                elif self._processes[k].sentinel in ready:
                    self._dead(k, during)
        return [replies[k] for k in range(self.num_workers)]

    # -- the interface the trainer uses ---------------------------------------------------------

    def reset(self, seed: int | None = None):
        """Restart every worker's episodes (worker k seeded from ``seed`` and k). Returns the
        current observations ``[num_envs, obs_dim]`` (a copy) and an empty info dict."""
        if seed is not None:
            self.seed = seed
        for k in range(self.num_workers):
            self._send(k, ("reset", worker_seed(self.seed, k)))
        self._gather("reset")
        return self._obs.clone(), {}

    def collect(self, agent: ActorCritic, horizon_len: int | None = None) -> Rollout:
        """One rollout of ``horizon_len`` steps from every worker with ``agent``'s current weights.

        Returns a `Rollout` over all ``num_envs`` envs (worker k's envs are the k-th block of
        the env dimension), ``stats`` summed over workers. On the CPU it is a view of the shared
        buffers: the next `collect` overwrites it.
        """
        horizon_len = horizon_len or self.horizon_len
        if not 1 <= horizon_len <= self.horizon_len:
            raise InputError(f"horizon_len must be in [1, {self.horizon_len}] (the pool's config), got {horizon_len}")
        with torch.no_grad():
            self._policy.load_state_dict(agent.state_dict())
        for k in range(self.num_workers):
            self._send(k, ("collect", horizon_len))
        replies = self._gather("collect")
        device = next(agent.parameters()).device
        tensors = {name: self._buffers[name][:horizon_len].to(device) for name in _ROLLOUT_FIELDS}
        episodes = sum(reply[1] for reply in replies)
        final_wealth = sum(reply[2] for reply in replies)
        stats = {"episodes": torch.tensor(episodes, device=device),
                 "final_wealth_sum": torch.tensor(final_wealth, device=device)}
        return Rollout(**tensors, stats=stats)

    def state_dict(self) -> dict:
        """Every worker's env state (accounts, env and torch random states, observations), for a
        checkpoint: ``{"obs": [num_envs, obs_dim], "workers": [one dict per worker]}``."""
        for k in range(self.num_workers):
            self._send(k, ("state",))
        states = [reply[1] for reply in self._gather("state")]
        workers = [{"obs": torch.from_numpy(s["obs"]), "rng_env": torch.from_numpy(s["rng_env"]),
                    "rng_torch": torch.from_numpy(s["rng_torch"]),
                    "env_account": {k: torch.from_numpy(v) for k, v in s["env_account"].items()}} for s in states]
        return {"obs": torch.cat([w["obs"] for w in workers]), "workers": workers}

    def load_state_dict(self, state: dict) -> None:
        """Continue every worker's episodes from a `state_dict` (of a pool with as many workers
        and envs per worker); anything else is refused in one line."""
        workers = state.get("workers")
        if workers is None:
            raise InputError("the checkpoint holds no rollout workers' env state (it was written without workers, "
                             "or by an older version): resume with the --workers it was started with")
        counts = [int(w["obs"].shape[0]) for w in workers]
        if counts != self.env_counts:
            raise InputError(f"the checkpoint was written by {len(workers)} rollout workers with {counts} envs, "
                             f"this pool has {self.num_workers} with {self.env_counts}: resume with the --workers "
                             "and --num-envs it was started with")
        for worker in workers:
            check_saved_account(worker["env_account"])
        for k, worker in enumerate(workers):
            self._send(k, ("load", {"obs": worker["obs"].cpu().numpy(), "rng_env": worker["rng_env"].cpu().numpy(),
                                    "rng_torch": worker["rng_torch"].cpu().numpy(),
                                    "env_account": {n: v.cpu().numpy() for n, v in worker["env_account"].items()}}))
        self._gather("load")

    def update_threads(self):
        """Context manager for the learner's update: ``learner_threads`` torch threads (the
        workers wait for the next ``collect`` meanwhile, so their cores are free)."""
        return torch_threads(self.learner_threads)

    def close(self) -> None:
        """Stop the workers (politely, then by force) and release the pipes. Idempotent."""
        if self._closed:
            return
        self._closed = True
        for process, conn in zip(self._processes, self._conns):
            if process.is_alive():
                try:
                    conn.send(("close",))
                except (OSError, ValueError):
                    pass
        deadline = time.monotonic() + 5.0
        for process in self._processes:
            process.join(timeout=max(deadline - time.monotonic(), 0.1))
            if process.is_alive():
                process.terminate()
                process.join(timeout=2.0)
            if process.is_alive():
                process.kill()
                process.join(timeout=2.0)
        for conn in self._conns:
            conn.close()

    def __enter__(self) -> "WorkerPool":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass
