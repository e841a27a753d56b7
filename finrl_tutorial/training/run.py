"""One run, resolved once at its top: the `Run` that `train` and `run_experiment` receive.

Everything a run needs to know about *where* and *how* it runs is settled here, once, before any
work: the learner context (this process, DataParallel, or one DDP rank), the device (checked to
exist), the memory a rollout needs, the run folder (claimed: its lock taken by the main rank for
the whole run), the checkpoint it resumes (loaded and checked against the run's settings, the
data's fingerprint and its own integrity) and the shard of episode start days of this rank.
Nothing below re-checks what the `Run` holds: `train` builds its collector from it, and the
bookkeeping writes into its folder.
"""
from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import numbers
import os
import warnings
from dataclasses import dataclass
from pathlib import Path

import torch

from ..agents import EnvCollector, LearnerContext, PPOConfig, SingleProcessContext, ppo
from ..data.clean import PreparedMarket
from ..data.market import MarketData
from ..envs import EnvConfig, VecStockTradingEnv, shard_start_windows
from ..errors import InputError, RunFolderError, check_int, require_device
from . import runs
from .checkpoint import CheckpointError, config_to_dict, load_checkpoint
from .workers import WorkerPool


EVAL_EVERY = 5
"""Validate (and checkpoint) every this many iterations, unless told otherwise (train, the main job, the CLI)."""


def data_fingerprint(market: PreparedMarket) -> str:
    """A short hash of what the agent trains and is judged on (every split's dates, tickers,
    features and arrays): a resumed run must see the same data, not only the same file name."""
    digest = hashlib.sha256()
    for name in sorted(market.splits):
        split = market.splits[name]
        digest.update(json.dumps([name, [str(d) for d in split.dates], list(split.tickers),
                                  list(split.feature_names)]).encode())
        for item in dataclasses.fields(MarketData):
            value = getattr(split, item.name)
            if isinstance(value, torch.Tensor):
                digest.update(item.name.encode() + value.detach().cpu().contiguous().numpy().tobytes())
    return digest.hexdigest()[:16]


def _available_bytes(device: torch.device) -> int | None:
    if device.type == "cuda":
        return int(torch.cuda.mem_get_info(device)[0])
    try:
        import psutil  # optional, not a dependency of the package (else: sysconf below)
        return int(psutil.virtual_memory().available)
    except ImportError:
        try:
            return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (AttributeError, ValueError, OSError):
            return None


def check_memory(config: PPOConfig, market: MarketData, device: torch.device) -> None:
    """Refuse a rollout that cannot fit (a huge ``num_envs``) before allocating it, in one line."""
    stocks, features = market.num_stocks, market.num_features
    obs_dim = 1 + stocks * (features + 3)
    # rollout buffer (float32) + the env's accounts and per-step temporaries (float32, ~16 [N, S] arrays)
    needed = 4 * (config.horizon_len * config.num_envs * (obs_dim + stocks + 5)
                  + config.num_envs * (4 * obs_dim + 16 * stocks))
    available = _available_bytes(device)
    if available is not None and needed > 0.8 * available:
        raise InputError(f"num_envs={config.num_envs} x horizon_len={config.horizon_len} needs about "
                         f"{needed / 2**30:,.1f} GiB on {device}, and {available / 2**30:,.1f} GiB is free: "
                         "lower --num-envs or --horizon-len")


def same_settings(saved: dict, current: dict, what: str, path, ignore=("device",)) -> None:
    """A resumed run must continue with the settings it was started with (else it is not the same run)."""
    normal = lambda d: json.loads(json.dumps(d, default=str))  # noqa: E731  tuples vs lists
    saved, current = normal(saved), normal(current)
    changed = [f"{k} {saved.get(k)!r} -> {current.get(k)!r}" for k in sorted(set(saved) | set(current))
               if k not in ignore and saved.get(k) != current.get(k)]
    if changed:
        raise RunFolderError(f"cannot resume {path} with other {what}: {'; '.join(changed[:4])}; "
                             "resume with the original options, or start a new run")


def check_fingerprint(saved: str | None, current: str, path) -> None:
    """The data of a resumed run must be the data it was started on (same contents, not only the
    same source name); a run written before fingerprints existed is resumed with a warning."""
    if saved is None:
        warnings.warn(f"{path} holds no data fingerprint (written by an older version): the data cannot be "
                      "checked against the one the run started on", stacklevel=3)
    elif saved != current:
        raise RunFolderError(f"cannot resume {path}: the data differs from the data the run started on "
                             f"(fingerprint {saved} -> {current}); resume with the original data, or start a "
                             "new run")


_RESUME_FIELDS = {"iteration": int, "env_steps": int, "best_valid_sharpe": numbers.Real,
                  "wall_seconds": numbers.Real, "optimizer": dict, "config": dict, "env_config": dict}


def resume_state(path: Path, config: PPOConfig, env_config: EnvConfig, fingerprint: str, world_size: int,
                 device) -> dict:
    """The checkpoint ``path`` loaded and checked, once, at the top of a resumed run: readable and
    whole (the fields a resume reads, of their types and in range), written with the same configs,
    on the same data and by as many ranks. Anything else is refused in one line."""
    if not path.is_file():
        raise RunFolderError(f"cannot resume: {path} is missing (a run writes it with every validation); "
                             "start the run again with --overwrite, or choose another --out")
    state = load_checkpoint(path, device=device)
    for name, kind in _RESUME_FIELDS.items():
        value = state.get(name)
        if not isinstance(value, kind) or isinstance(value, bool):
            raise CheckpointError(f"{path} is damaged: {name} is {value!r}, not a {kind.__name__}; start the run "
                                  "again with --overwrite")
    if not 0 <= state["iteration"] <= config.iterations_for(world_size) or state["env_steps"] < 0:
        raise CheckpointError(f"{path} is damaged: iteration {state['iteration']} is outside this run's "
                              f"0..{config.iterations_for(world_size)}; start the run again with --overwrite")
    same_settings(state["config"], config_to_dict(config), "agent settings", path)
    same_settings(state["env_config"], config_to_dict(env_config), "env settings", path)
    check_fingerprint(state.get("data_fingerprint"), fingerprint, path)
    ranks = state.get("ranks", [state])
    if len(ranks) != world_size:
        raise RunFolderError(f"cannot resume {path} on {world_size} rank(s): it was written by {len(ranks)}; "
                             "resume with the number of processes it was started with")
    for rank in ranks:
        if not all(isinstance(rank.get(key), torch.Tensor) for key in ("rng_torch", "rng_minibatch")):
            raise CheckpointError(f"{path} is damaged: its random states are missing or not tensors; start the "
                                  "run again with --overwrite")
    return state


@dataclass
class Run:
    """Where and how one training run runs, settled at its top (see `open_run`)."""

    context: LearnerContext
    """Where the update runs: rank, world size, device, and whether this rank is the main one."""
    fingerprint: str
    """The data's fingerprint (`data_fingerprint`), written into every checkpoint."""
    start_window: tuple[int, int]
    """This rank's window of episode start days on the training split (its shard)."""
    workers: int = 0
    """Rollout worker processes (0: one batched env in this process)."""
    learner_threads: int | None = None
    """Torch threads of the update while the workers are idle (None: `WorkerPool`'s default)."""
    eval_every: int = EVAL_EVERY
    """Validate (and checkpoint) every this many iterations and after the last; 0: never."""
    folder: Path | None = None
    """Where this rank writes (claimed by the main rank); None: no files (other ranks, no out_dir)."""
    checkpoints: bool = False
    """Whether checkpoints are written (known to every rank: all of them take part in one)."""
    resume_from: Path | None = None
    """The ``last.pt`` this run continues, or None."""
    saved: dict | None = None
    """That checkpoint, loaded and checked (`resume_state`)."""

    @contextlib.contextmanager
    def collector(self, market: MarketData, config: PPOConfig, env_config: EnvConfig, seed: int, given=None):
        """The run's `Collector` for one training run: ``given`` (a caller's own, left open), or
        ``workers`` rollout processes, or one batched env here; its episodes start in this rank's
        window. A collector built here is closed when the block ends."""
        if given is not None:
            yield given
            return
        if self.workers:
            built = WorkerPool(market, config, env_config, num_workers=self.workers, seed=seed,
                               start_window=self.start_window, learner_threads=self.learner_threads)
        else:  # actions come from the agent: a NaN there is a NaN in its weights, which `update` reports
            built = EnvCollector(VecStockTradingEnv(market, config.num_envs, env_config, device=self.context.device,
                                                    seed=seed, start_window=self.start_window, check_actions=False),
                                 ppo.collect_rollout)
        try:
            yield built
        finally:
            built.close()

    def part(self, folder: Path, config: PPOConfig, env_config: EnvConfig, resume: bool) -> "Run":
        """One seed's run inside an experiment's run: the same context and lock, its own folder
        (a sub-folder of the claimed one) and, when resuming, its own checked ``last.pt``."""
        last = folder / "checkpoints" / "last.pt"
        saved = resume_state(last, config, env_config, self.fingerprint, self.context.world_size,
                             self.context.device) if resume else None
        return dataclasses.replace(self, folder=folder if self.folder is not None else None,
                                   resume_from=last if resume else None, saved=saved)


def local_context(config: PPOConfig) -> SingleProcessContext:
    """The default learner context: this process, on ``config.device`` (checked to exist)."""
    return SingleProcessContext(require_device(config.device))


@contextlib.contextmanager
def open_run(market: PreparedMarket, config: PPOConfig, env_config: EnvConfig, *, out_dir=None,
             resume: bool = False, overwrite: bool = False, distributed: LearnerContext | None = None,
             workers: int = 0, resume_from=None, eval_every: int = EVAL_EVERY,
             learner_threads: int | None = None):
    """Resolve a `Run` once: the context (``distributed``, default this process on
    ``config.device``, checked to exist), the memory check of an in-process rollout, this rank's
    shard of the start days, and the run folder ``out_dir`` claimed by the main rank (refused if
    it holds another run unless ``resume`` or ``overwrite``; locked until the block ends).
    ``resume_from``: a ``last.pt`` to continue (`train`'s ``resume``), loaded and checked here.
    ``eval_every``: the validation schedule (checked here, read by the bookkeeping).
    ``learner_threads``: the update's threads beside ``workers`` rollout processes."""
    check_int("train", "workers", workers, minimum=0)
    check_int("train", "eval_every", eval_every, minimum=0)
    if learner_threads is not None:
        check_int("train", "learner_threads", learner_threads, minimum=1)
        if not workers:
            raise InputError("learner_threads is the update's threads beside rollout workers: give workers >= 1 "
                             "(without workers the update runs on the process's own threads, --threads)")
    context = distributed or local_context(config)
    if not workers:
        check_memory(config, market.train, context.device)
    window = shard_start_windows(market.train.num_days, context.world_size)[context.rank]
    run = Run(context, data_fingerprint(market), window, workers=workers, learner_threads=learner_threads,
              eval_every=eval_every, checkpoints=out_dir is not None)
    with contextlib.ExitStack() as stack:
        if out_dir is not None and context.is_main:
            run.folder = stack.enter_context(runs.claim(out_dir, resume=resume, overwrite=overwrite))
        if resume_from is not None:
            run.resume_from = Path(resume_from)  # every rank reads it: each continues its own part
            run.saved = resume_state(run.resume_from, config, env_config, run.fingerprint, context.world_size,
                                     context.device)
        yield run


def given_or_open(run: Run | None, market, config, env_config, **options):
    """``run`` as it is (already resolved by the caller: none of ``options`` may be given with it),
    or a new one from ``options`` (`open_run`)."""
    if run is None:
        return open_run(market, config, env_config, **options)
    defaults = {"out_dir": None, "resume": False, "overwrite": False, "distributed": None, "workers": 0,
                "resume_from": None, "eval_every": EVAL_EVERY, "learner_threads": None}
    clashing = [name for name, value in options.items() if value != defaults[name]]
    if clashing:
        raise InputError(f"run= is already resolved: pass {', '.join(clashing)} to open_run, not beside run=")
    return contextlib.nullcontext(run)

