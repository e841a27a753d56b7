"""The training loop around the batched env: rollout → GAE + update → log → evaluate → checkpoint.

Files in ``out_dir`` (all optional): ``log.csv`` (one row per iteration, fixed columns),
``checkpoints/last.pt`` (to resume), ``checkpoints/best.pt`` (best validation Sharpe),
``learning_curve.png``.
"""
from __future__ import annotations

import contextlib
import csv
import json
import math
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pandas as pd
import torch
from tqdm import tqdm  # the plain bar: tqdm.auto needs ipywidgets in notebooks

from ..agents import ActorCritic, PPOConfig, Rollout, collect_rollout, make_optimizer, policy_loss_for, update
from ..atomic import append_open, atomic_open, atomic_save
from ..backtest.runner import agent_policy, run_policy
from ..data.clean import PreparedMarket
from ..data.market import MarketData
from ..envs import Account, EnvConfig, VecStockTradingEnv, observation_size, shard_start_windows
from ..errors import InputError, RunFolderError, TrainingError, check_int, require_device
from ..plots import plot_learning_curve
from . import runs
from .checkpoint import config_to_dict, load_checkpoint, load_weights

LOG_COLUMNS = (
    "iteration", "env_steps", "wall_seconds", "samples_per_s", "learning_rate",
    "train/episodes", "train/final_wealth", "train/reward_mean",
    "loss/policy", "loss/value", "loss/entropy", "loss/approx_kl", "loss/clip_fraction", "loss/minibatches",
    "valid/sharpe_ratio", "valid/cumulative_return", "valid/max_drawdown",
)
"""Columns of ``log.csv``, in order; a value not measured in an iteration is empty (NaN)."""


@dataclass
class TrainResult:
    agent: ActorCritic
    """The trained agent (the best validation checkpoint's weights when evaluation ran)."""
    log: pd.DataFrame
    """One row per iteration, columns ``LOG_COLUMNS``."""
    env_steps: int
    wall_seconds: float
    best_valid_sharpe: float
    run_dir: Path | None
    world_size: int = 1
    workers: int = 0

    @property
    def samples_per_s(self) -> float:
        return self.env_steps / max(self.wall_seconds, 1e-9)


def evaluate(agent: ActorCritic, market, env_config: EnvConfig, device="cpu") -> dict:
    """Deterministic policy over a whole split (validation during training): its metrics."""
    return run_policy(agent_policy(agent), market, env_config, device=device).metrics()


class CsvLog:
    """Append-only CSV with fixed columns, flushed every row (a crash keeps what was logged)."""

    def __init__(self, path: Path | None, keep_below_iteration: int | None = None):
        self.path = path
        self.rows: list[dict] = []
        if path is None:
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        if keep_below_iteration is not None and path.exists():  # resume: keep the curve so far
            old = pd.read_csv(path)
            self.rows = old[old["iteration"] < keep_below_iteration].to_dict("records")
        with atomic_open(path, newline="") as stream:
            writer = csv.DictWriter(stream, LOG_COLUMNS)
            writer.writeheader()
            writer.writerows(self.rows)

    def append(self, row: dict) -> None:
        row = {key: row.get(key, math.nan) for key in LOG_COLUMNS}
        self.rows.append(row)
        if self.path is not None:
            with append_open(self.path, newline="") as stream:
                csv.DictWriter(stream, LOG_COLUMNS).writerow(row)

    def frame(self) -> pd.DataFrame:
        return pd.DataFrame(self.rows, columns=list(LOG_COLUMNS))


def initial_agent(market: MarketData, config: PPOConfig, env_config: EnvConfig) -> ActorCritic:
    """The agent `train` starts from for ``config.seed`` (also the backtests' untrained baseline)."""
    torch.manual_seed(config.seed)
    return ActorCritic.from_config(observation_size(market.num_stocks, market.num_features), market.num_stocks,
                                   config, env_config.action_mode)


def _account_state(env: VecStockTradingEnv) -> dict:
    return {name: tensor.cpu() for name, tensor in env.account._asdict().items()}


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


def check_memory(config: PPOConfig, market, device: torch.device) -> None:
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


def _same_settings(saved: dict, current: dict, what: str, path, ignore=("device",)) -> None:
    """A resumed run must continue with the settings it was started with (else it is not the same run)."""
    normal = lambda d: json.loads(json.dumps(d, default=str))  # noqa: E731  tuples vs lists
    saved, current = normal(saved), normal(current)
    changed = [f"{k} {saved.get(k)!r} -> {current.get(k)!r}" for k in sorted(set(saved) | set(current))
               if k not in ignore and saved.get(k) != current.get(k)]
    if changed:
        raise RunFolderError(f"cannot resume {path} with other {what}: {'; '.join(changed[:4])}; "
                             "resume with the original options, or start a new run")


def train(market: PreparedMarket, config: PPOConfig, env_config: EnvConfig | None = None, *,
          out_dir: str | Path | None = None, eval_every: int = 5, progress: bool = True,
          resume: str | Path | None = None, distributed=None, worker_pool=None,
          overwrite: bool = False, on_evaluation: Callable[[dict], None] | None = None) -> TrainResult:
    """Train ``config.algo`` on ``market.train``; select the best checkpoint on ``market.valid``.

    ``resume``: a ``last.pt`` to continue from (same curve as an uninterrupted run on CPU); it
    must have been written with the same configs. ``out_dir`` may not hold another run unless
    ``resume`` or ``overwrite`` (see `finrl_tutorial.training.runs`); it is locked while training.
    ``eval_every``: validate (and checkpoint) every K iterations and after the last; 0 never
    validates, and the final weights are saved as ``best.pt`` and ``last.pt`` at the end.
    ``distributed`` (a `finrl_tutorial.training.distributed.DistributedContext`) and ``worker_pool``
    (a `finrl_tutorial.training.workers.WorkerPool`) switch on the scale-out paths (book chapters 4 and 5);
    without them this is one process with one batched env. ``on_evaluation`` is called after each
    validation with ``{"iteration", "env_steps", "metrics", "agent", "is_best"}`` (the learning
    benchmark uses it to follow every candidate checkpoint).
    """
    check_int("train", "eval_every", eval_every, minimum=0)
    is_main = (distributed.rank if distributed else 0) == 0
    if out_dir is None or not is_main:
        return _train(market, config, env_config, out_dir=None, eval_every=eval_every, progress=progress,
                      resume=resume, distributed=distributed, worker_pool=worker_pool, on_evaluation=on_evaluation)
    with runs.claim(out_dir, resume=resume is not None, overwrite=overwrite):
        return _train(market, config, env_config, out_dir=out_dir, eval_every=eval_every, progress=progress,
                      resume=resume, distributed=distributed, worker_pool=worker_pool, on_evaluation=on_evaluation)


def _train(market, config: PPOConfig, env_config: EnvConfig | None, *, out_dir, eval_every: int, progress: bool,
           resume, distributed, worker_pool, on_evaluation=None) -> TrainResult:
    env_config = env_config or EnvConfig()
    rank = distributed.rank if distributed else 0
    is_main = rank == 0
    run_dir = Path(out_dir) if (out_dir is not None and is_main) else None
    checkpoint_dir = run_dir / "checkpoints" if run_dir else None
    device = torch.device(distributed.device) if distributed else require_device(config.device)
    if resume is not None:  # checked before anything is built: a wrong file is one line, not a shape error
        state = load_checkpoint(resume, device=device)
        _same_settings(state["config"], config_to_dict(config), "agent settings", resume)
        _same_settings(state["env_config"], config_to_dict(env_config), "env settings", resume)
    if worker_pool is None:
        check_memory(config, market.train, device)

    seed = config.seed + 1000 * rank  # each rank its own env starts and noise, same initial weights
    world_size = distributed.world_size if distributed else 1
    if worker_pool is not None:
        env = worker_pool
    else:
        start_window = None
        if world_size > 1:  # each rank its own disjoint window of episode start days
            start_window = shard_start_windows(market.train.num_days, world_size)[rank]
        # actions come from the agent: a NaN there is a NaN in its weights, which `update` reports
        env = VecStockTradingEnv(market.train, config.num_envs, env_config, device=device, seed=seed,
                                 start_window=start_window, check_actions=False)
    agent = initial_agent(market.train, config, env_config).to(device)
    torch.manual_seed(seed)
    learner = distributed.wrap(agent) if distributed else agent
    optimizer = make_optimizer(agent, config)
    minibatch_order = torch.Generator().manual_seed(seed)
    rollout = Rollout.empty(config.horizon_len, env.num_envs, env.observation_dim, env.action_dim, device)
    policy_loss = policy_loss_for(config)
    all_reduce_mean = distributed.all_reduce_mean if distributed else (lambda x: x)

    start_iteration, env_steps, best_sharpe, spent = 0, 0, -math.inf, 0.0
    best_weights = None
    last_saved = Path(resume) if resume is not None else None  # the last good checkpoint, for errors
    obs, _ = env.reset(seed=seed)
    if resume is not None:
        load_weights(agent, state["model"], resume)
        optimizer.load_state_dict(state["optimizer"])
        start_iteration, env_steps = state["iteration"], state["env_steps"]
        best_sharpe, spent = state["best_valid_sharpe"], state["wall_seconds"]
        best_path = Path(resume).with_name("best.pt")
        if best_path.exists():
            best_weights = load_checkpoint(best_path, device=device)["model"]
        torch.set_rng_state(state["rng_torch"])
        minibatch_order.set_state(state["rng_minibatch"])
        if worker_pool is None:
            env.rng_state.copy_(state["rng_env"].to(device))
            env.account = Account(**{k: v.to(device) for k, v in state["env_account"].items()})
            obs = state["obs"].to(device)
    log = CsvLog(run_dir / "log.csv" if run_dir else None,
                 keep_below_iteration=start_iteration if resume is not None else None)

    info = market.train.info
    pipeline = {  # what turns bars into this agent's inputs: a backtest on any window reuses it
        "feature_stats": {"names": list(market.train.feature_names), "mean": list(info["feature_mean"]),
                          "std": list(info["feature_std"])} if "feature_mean" in info else None,
        "indicators": info.get("indicators"), "user_factors": info.get("user_factors"),
        "split_dates": {k: list(v) for k, v in getattr(market, "split_dates", {}).items()},
        "source": market.train.source, "eval_every": eval_every,
    }

    def checkpoint(iteration: int, selected_by: str = "validation sharpe") -> dict:
        state = pipeline | {"selected_by": selected_by} | {
            "model": agent.state_dict(), "optimizer": optimizer.state_dict(), "config": config_to_dict(config),
            "env_config": config_to_dict(env_config), "obs_dim": env.observation_dim, "action_dim": env.action_dim,
            "iteration": iteration, "env_steps": env_steps, "best_valid_sharpe": best_sharpe,
            "wall_seconds": spent + time.perf_counter() - started, "tickers": list(market.train.tickers),
            "feature_names": list(market.train.feature_names), "rng_torch": torch.get_rng_state(),
            "rng_minibatch": minibatch_order.get_state(), "obs": obs.cpu(),
        }
        if worker_pool is None:
            state |= {"rng_env": env.rng_state.cpu(), "env_account": _account_state(env)}
        return state

    # total_steps counts the env steps of all ranks together
    iterations = max(1, config.total_steps // (config.rollout_size * world_size))
    started = time.perf_counter()
    bar = tqdm(range(start_iteration, iterations), desc=config.algo.upper(), disable=not (progress and is_main),
               initial=start_iteration, total=iterations)
    for iteration in bar:
        if config.anneal_lr:
            optimizer.param_groups[0]["lr"] = config.learning_rate * (1.0 - iteration / iterations)
        if worker_pool is not None:
            rollout = worker_pool.collect(agent, config.horizon_len)
        else:
            agent.eval()
            obs = collect_rollout(env, agent, rollout, obs)
        agent.train()
        try:  # with workers, the update borrows their cores: they are idle until the next collect
            with worker_pool.update_threads() if worker_pool is not None else contextlib.nullcontext():
                losses = update(learner, optimizer, rollout, config, policy_loss, minibatch_order, all_reduce_mean)
        except FloatingPointError as error:
            kept = last_saved or ("none written yet" if checkpoint_dir else "no checkpoint (no out_dir)")
            raise TrainingError(f"{error}; stopped at iteration {iteration}, last good checkpoint: {kept}") from None
        env_steps += rollout.rewards.numel() * world_size
        episodes = float(rollout.stats["episodes"])
        wall = spent + time.perf_counter() - started
        row = {
            "iteration": iteration, "env_steps": env_steps, "wall_seconds": wall,
            "samples_per_s": env_steps / max(wall, 1e-9), "learning_rate": optimizer.param_groups[0]["lr"],
            "train/episodes": episodes, "train/reward_mean": float(rollout.rewards.mean()),
            "train/final_wealth": (float(rollout.stats["final_wealth_sum"]) / episodes / env_config.initial_cash
                                   if episodes else math.nan),
            **losses,
        }
        last = iteration == iterations - 1
        if is_main and (eval_every and (iteration % eval_every == 0 or last)):
            metrics = evaluate(agent, market.valid, env_config, device=device)
            row |= {f"valid/{k}": metrics[k] for k in ("sharpe_ratio", "cumulative_return", "max_drawdown")}
            if metrics["sharpe_ratio"] > best_sharpe:
                best_sharpe = metrics["sharpe_ratio"]
                best_weights = {k: v.detach().clone() for k, v in agent.state_dict().items()}
                if checkpoint_dir:
                    atomic_save(checkpoint(iteration + 1), checkpoint_dir / "best.pt")
            if on_evaluation is not None:
                on_evaluation({"iteration": iteration, "env_steps": env_steps, "metrics": metrics, "agent": agent,
                               "is_best": metrics["sharpe_ratio"] >= best_sharpe})
            if checkpoint_dir:
                last_saved = atomic_save(checkpoint(iteration + 1), checkpoint_dir / "last.pt")
        if is_main:
            log.append(row)
            if "valid/sharpe_ratio" in row:
                bar.set_postfix(valid_sharpe=row["valid/sharpe_ratio"], best=best_sharpe, refresh=False)
    if checkpoint_dir and not eval_every and start_iteration < iterations:
        # no validation ever chose weights: keep the final ones, as best.pt (for backtest) and last.pt (resume)
        atomic_save(checkpoint(iterations, selected_by="final weights (no validation)"), checkpoint_dir / "best.pt")
        atomic_save(checkpoint(iterations, selected_by="final weights (no validation)"), checkpoint_dir / "last.pt")
    wall_seconds = spent + time.perf_counter() - started

    frame = log.frame()
    if best_weights is not None:
        agent.load_state_dict(best_weights)
    if run_dir is not None and frame["valid/sharpe_ratio"].notna().any():
        plot_learning_curve(frame, x="env_steps", y=("train/final_wealth", "valid/sharpe_ratio", "loss/entropy"),
                            path=run_dir / "learning_curve.png")
    agent.eval()
    return TrainResult(agent, frame, env_steps, wall_seconds, best_sharpe, run_dir,
                       world_size=world_size,
                       workers=worker_pool.num_workers if worker_pool is not None else 0)
