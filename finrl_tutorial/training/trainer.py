"""`train`: the PPO loop (`finrl_tutorial.agents.learn`) plus validation, logging and checkpoints.

Files in ``out_dir`` (all optional): ``log.csv`` (one row per iteration, fixed columns),
``checkpoints/last.pt`` (to resume), ``checkpoints/best.pt`` (best validation Sharpe),
``learning_curve.png``.
"""
from __future__ import annotations

import contextlib
import csv
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pandas as pd
import torch
from tqdm import tqdm  # the plain bar: tqdm.auto needs ipywidgets in notebooks

from ..agents import ActorCritic, PPOConfig, Rollout, learn, make_optimizer
from ..atomic import append_open, atomic_open, atomic_save
from ..backtest.runner import agent_policy, run_policy
from ..data.clean import PreparedMarket
from ..data.market import MarketData
from ..envs import EnvConfig, observation_size
from ..errors import RunFolderError, TrainingError
from ..plots import plot_learning_curve
from .checkpoint import config_to_dict, load_checkpoint, load_weights
from .run import EVAL_EVERY, Run, given_or_open

LOG_COLUMNS = (
    "iteration", "env_steps", "wall_seconds", "samples_per_s", "learning_rate",
    "train/episodes", "train/final_wealth", "train/reward_mean",
    "loss/policy", "loss/value", "loss/entropy", "loss/approx_kl", "loss/clip_fraction", "loss/pathwise",
    "loss/minibatches",
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
            try:
                old = pd.read_csv(path)
                self.rows = old[old["iteration"] < keep_below_iteration].to_dict("records")
            except (pd.errors.EmptyDataError, pd.errors.ParserError, KeyError, TypeError, UnicodeDecodeError) \
                    as error:
                raise RunFolderError(f"cannot resume: {path} is damaged ({type(error).__name__}: {error}); "
                                     "start the run again with --overwrite") from None
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


class Bookkeeping:
    """What `train` does around the loop: it restores a resumed run, logs every iteration,
    validates every ``eval_every`` iterations (keeping the best weights), writes the checkpoints
    into the run's folder and builds the result. Only the main rank validates and writes files.
    The `Run` it is given was resolved (folder claimed, checkpoint checked) before."""

    def __init__(self, market: PreparedMarket, config: PPOConfig, env_config: EnvConfig, run: Run, *,
                 progress: bool, on_evaluation):
        self.market, self.config, self.env_config, self.run = market, config, env_config, run
        context = run.context
        self.device, self.is_main, self.world_size = torch.device(context.device), context.is_main, context.world_size
        self.rank, self.gather = context.rank, context.gather
        self.iterations = config.iterations_for(context.world_size)
        self.progress, self.on_evaluation = progress, on_evaluation
        self.resume, self.saved, self.checkpoints = run.resume_from, run.saved, run.checkpoints
        self.run_dir = run.folder
        self.checkpoint_dir = self.run_dir / "checkpoints" if self.run_dir else None
        self.iteration = self.start_iteration = self.env_steps = 0  # self.iteration: the next one to run
        self.best_sharpe, self.best_weights, self.spent = -math.inf, None, 0.0
        self.last_saved = self.resume  # the last good checkpoint, for errors
        self._exit = contextlib.ExitStack()

    def __enter__(self) -> "Bookkeeping":
        return self

    def __exit__(self, *exc) -> None:
        self._exit.close()

    def start(self, agent: ActorCritic, optimizer, minibatch_order: torch.Generator, collector) -> int:
        """Take the loop's state (restored from ``resume`` if given); returns the first iteration to run."""
        self.agent, self.optimizer, self.minibatch_order, self.collector = agent, optimizer, minibatch_order, collector
        if self.saved is not None:
            state = self.saved
            load_weights(agent, state["model"], self.resume)
            optimizer.load_state_dict(state["optimizer"])
            self.iteration = self.start_iteration = state["iteration"]
            self.env_steps, self.best_sharpe, self.spent = state["env_steps"], state["best_valid_sharpe"], \
                state["wall_seconds"]
            best_path = self.resume.with_name("best.pt")
            if best_path.exists():
                self.best_weights = load_checkpoint(best_path, device=self.device)["model"]
            ranks = state.get("ranks", [state])  # this rank's random states and envs (as many as ranks: checked)
            torch.set_rng_state(ranks[self.rank]["rng_torch"].cpu())
            minibatch_order.set_state(ranks[self.rank]["rng_minibatch"].cpu())
            collector.load_state_dict(ranks[self.rank])  # the episodes go on where they were
        self.log = CsvLog(self.run_dir / "log.csv" if self.run_dir else None,
                          keep_below_iteration=self.start_iteration if self.saved is not None else None)
        self.bar = self._exit.enter_context(tqdm(
            desc=self.config.algo.upper(), disable=not (self.progress and self.is_main),
            initial=self.start_iteration, total=self.iterations))
        self.started = time.perf_counter()
        return self.start_iteration

    def _wall(self) -> float:
        return self.spent + time.perf_counter() - self.started

    def _rank_states(self) -> list | None:
        """What differs by rank (random states, envs), every rank's on the main rank; every rank
        calls this at each checkpoint (only when checkpoints are written)."""
        if not self.checkpoints:
            return None
        return self.gather({"rng_torch": torch.get_rng_state(), "rng_minibatch": self.minibatch_order.get_state()}
                           | self.collector.state_dict())  # the envs: accounts, random states, observations

    def _checkpoint(self, iteration: int, ranks: list, selected_by: str = "validation sharpe") -> dict:
        market, info = self.market.train, self.market.train.info
        pipeline = {  # what turns bars into this agent's inputs: a backtest on any window reuses it
            "feature_stats": {"names": list(market.feature_names), "mean": list(info["feature_mean"]),
                              "std": list(info["feature_std"])} if "feature_mean" in info else None,
            "indicators": info.get("indicators"), "user_factors": info.get("user_factors"),
            "split_dates": {k: list(v) for k, v in getattr(self.market, "split_dates", {}).items()},
            "source": market.source, "eval_every": self.run.eval_every, "data_fingerprint": self.run.fingerprint,
        }
        return pipeline | {"selected_by": selected_by} | {
            "model": self.agent.state_dict(), "optimizer": self.optimizer.state_dict(),
            "config": config_to_dict(self.config), "env_config": config_to_dict(self.env_config),
            "obs_dim": observation_size(market.num_stocks, market.num_features), "action_dim": market.num_stocks,
            "iteration": iteration, "env_steps": self.env_steps, "best_valid_sharpe": self.best_sharpe,
            "wall_seconds": self._wall(), "tickers": list(market.tickers), "feature_names": list(market.feature_names),
        } | ranks[0] | ({"ranks": ranks} if len(ranks) > 1 else {})

    def _validate(self, iteration: int, ranks: list | None) -> dict:
        """Validate the current weights; keep them if they are the best so far; write the checkpoints."""
        metrics = evaluate(self.agent, self.market.valid, self.env_config, device=self.device)
        better = metrics["sharpe_ratio"] > self.best_sharpe
        if better:
            self.best_sharpe = metrics["sharpe_ratio"]
            self.best_weights = {k: v.detach().clone() for k, v in self.agent.state_dict().items()}
        state = self._checkpoint(iteration + 1, ranks) if self.checkpoint_dir else None
        if better and state is not None:
            atomic_save(state, self.checkpoint_dir / "best.pt")
        if self.on_evaluation is not None:
            self.on_evaluation({"iteration": iteration, "env_steps": self.env_steps, "metrics": metrics,
                                "agent": self.agent, "is_best": metrics["sharpe_ratio"] >= self.best_sharpe})
        if state is not None:
            self.last_saved = atomic_save(state, self.checkpoint_dir / "last.pt")
        return {f"valid/{k}": metrics[k] for k in ("sharpe_ratio", "cumulative_return", "max_drawdown")}

    def after_iteration(self, iteration: int, rollout: Rollout, losses: dict) -> None:
        """`learn`'s ``on_iteration``: count, log, and validate on schedule."""
        self.iteration = iteration + 1
        self.env_steps += rollout.rewards.numel() * self.world_size
        episodes, wall = float(rollout.stats["episodes"]), self._wall()
        row = {
            "iteration": iteration, "env_steps": self.env_steps, "wall_seconds": wall,
            "samples_per_s": self.env_steps / max(wall, 1e-9), "learning_rate": self.optimizer.param_groups[0]["lr"],
            "train/episodes": episodes, "train/reward_mean": float(rollout.rewards.mean()),
            "train/final_wealth": (float(rollout.stats["final_wealth_sum"]) / episodes / self.env_config.initial_cash
                                   if episodes else math.nan),
            **losses,
        }
        every = self.run.eval_every
        due = bool(every) and (iteration % every == 0 or iteration == self.iterations - 1)
        ranks = self._rank_states() if due else None
        if self.is_main and due:
            row |= self._validate(iteration, ranks)
        if self.is_main:
            self.log.append(row)
            if "valid/sharpe_ratio" in row:
                self.bar.set_postfix(valid_sharpe=row["valid/sharpe_ratio"], best=self.best_sharpe, refresh=False)
        self.bar.update()

    def stopped(self, error: Exception) -> str:
        """The one-line message of a run that cannot go on: what failed, where, and what was kept."""
        kept = self.last_saved or ("none written yet" if self.checkpoint_dir else "no checkpoint (no out_dir)")
        return f"{error}; stopped at iteration {self.iteration}, last good checkpoint: {kept}"

    def result(self) -> TrainResult:
        """The final files (without validation: the final weights as best.pt and last.pt) and the result."""
        ranks = self._rank_states() if not self.run.eval_every and self.start_iteration < self.iterations else None
        if self.checkpoint_dir and ranks is not None:
            state = self._checkpoint(self.iterations, ranks, selected_by="final weights (no validation)")
            atomic_save(state, self.checkpoint_dir / "best.pt")
            atomic_save(state, self.checkpoint_dir / "last.pt")
        wall_seconds = self._wall()
        frame = self.log.frame()
        if self.best_weights is not None:
            self.agent.load_state_dict(self.best_weights)
        if self.run_dir is not None and frame["valid/sharpe_ratio"].notna().any():
            plot_learning_curve(frame, path=self.run_dir / "learning_curve.png")  # its default columns
        self.agent.eval()
        return TrainResult(self.agent, frame, self.env_steps, wall_seconds, self.best_sharpe, self.run_dir,
                           world_size=self.world_size, workers=self.collector.num_workers)


def train(market: PreparedMarket, config: PPOConfig, env_config: EnvConfig | None = None, *,
          out_dir: str | Path | None = None, eval_every: int = EVAL_EVERY, progress: bool = True,
          resume: str | Path | None = None, distributed=None, workers: int = 0, worker_pool=None,
          overwrite: bool = False, on_evaluation: Callable[[dict], None] | None = None,
          run: Run | None = None, learner_threads: int | None = None) -> TrainResult:
    """Train ``config.algo`` on ``market.train``; select the best checkpoint on ``market.valid``.

    The loop is `finrl_tutorial.agents.learn`; this adds the run's files and validation
    (`Bookkeeping`). Where and how it runs is one `Run` (`finrl_tutorial.training.run`), resolved
    once at the top from ``out_dir``, ``resume``, ``overwrite``, ``distributed``, ``workers`` and
    ``eval_every`` — or given ready as ``run`` (as `run_experiment` does for each seed), with none of those.
    ``resume``: a ``last.pt`` to continue from (same curve as an uninterrupted run on CPU, with or
    without workers); it must have been written with the same configs on the same data.
    ``out_dir`` may not hold another run unless ``resume`` or ``overwrite`` (see
    `finrl_tutorial.training.runs`); it is locked while training. ``eval_every``: validate (and
    checkpoint) every K iterations and after the last; 0 never validates, and the final weights
    are saved as ``best.pt`` and ``last.pt`` at the end. The scale-out paths plug in: ``distributed``
    is the `LearnerContext` (`DataParallelContext`, `DistributedContext`; default this process),
    ``workers=N`` collects with N rollout processes on this rank's shard (the update on
    ``learner_threads`` threads, default `WorkerPool`'s; ``worker_pool``: a
    `Collector` of your own instead, left open), book chapters 4 and 5. ``on_evaluation`` is
    called after each validation with ``{"iteration", "env_steps", "metrics", "agent",
    "is_best"}`` (the learning benchmark follows every candidate with it).
    """
    env_config = env_config or EnvConfig()
    with given_or_open(run, market, config, env_config, out_dir=out_dir, resume=resume is not None,
                       overwrite=overwrite, distributed=distributed, workers=workers, resume_from=resume,
                       eval_every=eval_every, learner_threads=learner_threads) as run:
        context = run.context
        seed = config.seed + 1000 * context.rank  # each rank its own env starts and noise, same initial weights
        with run.collector(market.train, config, env_config, seed, given=worker_pool) as collector, \
                Bookkeeping(market, config, env_config, run, progress=progress,
                            on_evaluation=on_evaluation) as book:
            agent = initial_agent(market.train, config, env_config).to(context.device)
            torch.manual_seed(seed)
            optimizer = make_optimizer(agent, config)
            minibatch_order = torch.Generator().manual_seed(seed)
            collector.reset(seed=seed)
            start = book.start(agent, optimizer, minibatch_order, collector)  # a resumed run's state, if any
            try:
                learn(collector, agent, config, optimizer=optimizer, on_iteration=book.after_iteration,
                      context=context, start_iteration=start, minibatch_order=minibatch_order)
            except FloatingPointError as error:  # non-finite loss or weights: stop, and say what was kept
                raise TrainingError(book.stopped(error)) from None
            return book.result()
