"""The main job: train K seeds, choose checkpoints on validation, backtest on the untouched test
split against baselines, and write ``report.json`` with figures."""
from __future__ import annotations

import json
import math
import statistics
import warnings
from dataclasses import replace
from pathlib import Path

import pandas as pd

from ..agents import PPOConfig
from ..atomic import copy_file, write_json
from ..backtest.runner import TABLE_COLUMNS, agent_policy, backtest
from ..data.clean import PreparedMarket, check_split_lengths
from ..envs import EnvConfig
from ..errors import RunFolderError, check_int
from ..metrics import TIE_MARGIN, check_margin, sharpe_difference_ci
from ..plots import plot_band, plot_equity, plot_weights
from ..provenance import machine
from .checkpoint import config_to_dict
from .run import EVAL_EVERY, Run, check_fingerprint, given_or_open, same_settings
from .trainer import initial_agent, train


def _mean_std(per_seed: list[dict]) -> tuple[dict, dict]:
    keys = per_seed[0].keys()
    mean = {k: statistics.fmean(m[k] for m in per_seed) for k in keys}
    std = {k: (statistics.stdev(m[k] for m in per_seed) if len(per_seed) > 1 else 0.0) for k in keys}
    return mean, std


MIN_SPLIT_DAYS = 20
"""Fewest trading days a split may have in the main job (a Sharpe ratio of three returns means nothing)."""


def _chosen_env_steps(result) -> int | None:
    """The env-steps at which ``result``'s kept checkpoint was validated: the first row of its log with
    the best validation Sharpe (the trainer keeps a checkpoint only when it is strictly better); None
    where no validation ran."""
    valid = result.log["valid/sharpe_ratio"].dropna()  # every log has the column (`LOG_COLUMNS`)
    if valid.empty or not math.isfinite(result.best_valid_sharpe):
        return None
    return int(result.log.loc[valid.idxmax(), "env_steps"])


def run_experiment(market: PreparedMarket, config: PPOConfig, env_config: EnvConfig | None = None, *,
                   out_dir: str | Path = "runs/default", seeds: int = 1, eval_every: int = EVAL_EVERY,
                   progress: bool = True, workers: int = 0, distributed=None, resume: bool = False,
                   overwrite: bool = False, min_split_days: int = MIN_SPLIT_DAYS, worker_pool_factory=None,
                   run: Run | None = None, learner_threads: int | None = None,
                   tie_margin: float = TIE_MARGIN) -> dict:
    """Train ``seeds`` runs (seed, seed+1, …) and backtest each on ``market.test``.

    Writes to ``out_dir``: ``report.json`` (with the bootstrap interval of the agent's Sharpe
    minus buy-and-hold's, ``sharpe_vs_buy_and_hold``, the days resampled; with several seeds also
    ``sharpe_vs_buy_and_hold_seeds_and_days``, the seeds resampled as well), ``config.json``, ``learning_curve.png``,
    ``equity.png``, ``weights.png``, ``checkpoints/best.pt`` (the seed with the best *validation* Sharpe — the
    test split never chooses anything), and one ``seed_<k>/`` folder per seed when ``seeds > 1``.
    ``out_dir`` may not hold another run: ``resume=True`` continues it (each seed from its
    ``last.pt``, bit-exact on CPU; the settings and the data must be the same), ``overwrite=True``
    replaces it. Where and how it runs (``distributed``, ``workers``, the claimed folder) is one
    `Run`, resolved here once (or given as ``run``; ``learner_threads``: the update's threads beside
    ``workers``) and handed to every seed's `train`; the folder
    is locked for the whole experiment. ``worker_pool_factory(seed)``: a `Collector` of your own
    per seed instead of ``workers`` (closed after its seed). Every split needs ``min_split_days``
    trading days. ``tie_margin``: the equivalence margin (annualised Sharpe) under which the
    interval against buy-and-hold is called a tie (`finrl_tutorial.metrics.TIE_MARGIN`).
    """
    check_int("run_experiment", "seeds", seeds, minimum=1)
    tie_margin = check_margin(tie_margin)
    check_split_lengths(market, min_split_days)
    env_config = env_config or EnvConfig()
    with given_or_open(run, market, config, env_config, out_dir=out_dir, resume=resume, overwrite=overwrite,
                       distributed=distributed, workers=workers, eval_every=eval_every,
                       learner_threads=learner_threads) as run:
        return _run_experiment(market, config, env_config, run, Path(out_dir), seeds, progress,
                               worker_pool_factory, resume, tie_margin)


def _settings(market, run: Run, config, env_config, seed_list) -> dict:
    """What makes a run this run (``config.json``; a resume must match it). The data block is the
    report's too."""
    summary = market.summary()
    return {"config": config_to_dict(config), "env_config": config_to_dict(env_config),
            "data": {"source": summary["source"], "tickers": summary["tickers"],
                     "train": list(market.split_dates["train"]), "valid": list(market.split_dates["valid"]),
                     "test": list(market.split_dates["test"]), "fingerprint": run.fingerprint},
            "seeds": seed_list, "eval_every": run.eval_every}


def _check_resumable(saved_path: Path, settings: dict, out_dir: Path) -> None:
    """``config.json`` of the run being resumed says the same as this run's settings."""
    if not saved_path.is_file():
        raise RunFolderError(f"nothing to resume in {out_dir} (no config.json): start it without --resume")
    try:
        before = json.loads(saved_path.read_text(encoding="utf-8"))
        if not isinstance(before, dict):
            raise TypeError(f"a JSON {type(before).__name__}, not an object")
    except (json.JSONDecodeError, UnicodeDecodeError, TypeError) as error:
        raise RunFolderError(f"cannot resume: {saved_path} is damaged ({error}); start the run again with "
                             "--overwrite") from None
    data = dict(before.get("data") or {})
    check_fingerprint(data.pop("fingerprint", None), settings["data"]["fingerprint"], saved_path)
    before = before | {"data": data | {"fingerprint": settings["data"]["fingerprint"]}}
    ignore = {"config": ("device",), "env_config": (), "data": (), "seeds": (), "eval_every": ()}
    for key in settings:
        old, new = before.get(key), settings[key]
        if isinstance(old, dict) and isinstance(new, dict):
            same_settings(old, new, f"{key.replace('_', ' ')} settings", out_dir, ignore=ignore[key])
        elif json.loads(json.dumps(old)) != json.loads(json.dumps(new)):
            raise RunFolderError(f"cannot resume {out_dir} with other {key}: {old!r} -> {new!r}")


def _seed_resumes(seed_dir: Path) -> bool:
    """Whether a resumed experiment continues this seed from its ``last.pt`` (False: start it).
    A seed with a ``best.pt`` but no ``last.pt`` lost its checkpoint: refused, never restarted
    silently; one stopped before its first checkpoint restarts from iteration 0, with a warning."""
    checkpoints = seed_dir / "checkpoints"
    if (checkpoints / "last.pt").is_file():
        return True
    if (checkpoints / "best.pt").exists():
        raise RunFolderError(f"cannot resume: {checkpoints / 'last.pt'} is missing (best.pt is there, so it was "
                             "written and then lost); start the run again with --overwrite")
    if (seed_dir / "log.csv").is_file():
        warnings.warn(f"{seed_dir} stopped before its first checkpoint: it restarts from iteration 0",
                      stacklevel=3)
    return False


def _run_experiment(market, config, env_config, run: Run, out_dir: Path, seeds, progress,
                    worker_pool_factory, resume, tie_margin) -> dict:
    is_main = run.context.is_main
    seed_list = [config.seed + k for k in range(seeds)]
    settings = _settings(market, run, config, env_config, seed_list)
    seed_dirs = [out_dir if seeds == 1 else out_dir / f"seed_{seed}" for seed in seed_list]
    if is_main and resume:
        _check_resumable(out_dir / "config.json", settings, out_dir)
    elif is_main:  # written first: a run stopped half-way still says what it was
        write_json(settings, out_dir / "config.json")
    # every seed's run, its checkpoint checked now: a damaged seed 3 is found before seeds 1 and 2 train
    parts = [run.part(seed_dir, replace(config, seed=seed), env_config, resume and _seed_resumes(seed_dir))
             for seed, seed_dir in zip(seed_list, seed_dirs)]
    results, backtests = [], []
    for seed, part in zip(seed_list, parts):
        pool = worker_pool_factory(seed) if worker_pool_factory else None
        try:
            result = train(market, replace(config, seed=seed), env_config, progress=progress, worker_pool=pool,
                           run=part)
        finally:
            if pool is not None:
                pool.close()
        results.append(result)
        if is_main:
            untrained = initial_agent(market.train, replace(config, seed=seed), env_config).eval()
            backtests.append(backtest(agent_policy(result.agent), market.test, env_config, benchmark=market.benchmark,
                                      random_seed=seed, others={"untrained_agent": agent_policy(untrained)}))
    if not is_main:
        return {}

    agent_metrics = [bt.metrics["agent"] for bt in backtests]
    mean, std = _mean_std(agent_metrics)
    baselines = {name: metrics for name, metrics in backtests[0].metrics.items()
                 if name not in ("agent", "untrained_agent")}
    # the untrained policy differs by seed: its mean over the seeds, like the agent's
    baselines = {"untrained_agent": _mean_std([bt.metrics["untrained_agent"] for bt in backtests])[0]} | baselines
    reference = backtests[0].records["equal_weight_buy_and_hold"].wealth
    agent_curves = [bt.records["agent"].wealth for bt in backtests]
    versus = sharpe_difference_ci(agent_curves, reference, margin=tie_margin)
    # with several seeds, the same difference with the seeds resampled too: their spread counts
    versus_seeds = (sharpe_difference_ci(agent_curves, reference, margin=tie_margin, resample_seeds=True)
                    if seeds > 1 else None)
    best = max(range(seeds), key=lambda i: results[i].best_valid_sharpe)
    if seeds > 1:
        source = out_dir / f"seed_{seed_list[best]}" / "checkpoints" / "best.pt"
        if source.exists():
            copy_file(source, out_dir / "checkpoints" / "best.pt")
        curves = {"valid Sharpe": pd.DataFrame({s: r.log.set_index("env_steps")["valid/sharpe_ratio"].dropna()
                                                for s, r in zip(seed_list, results)})}
        plot_band(curves, x="env_steps", path=out_dir / "learning_curve.png", ylabel="validation Sharpe")

    curves = {f"agent (seed {s})": bt.records["agent"].wealth for s, bt in zip(seed_list, backtests)}
    curves |= {name: record.wealth for name, record in backtests[0].records.items()
               if name not in ("agent", "untrained_agent")}
    plot_weights(backtests[best].records["agent"].weights, path=out_dir / "weights.png",
                 title=f"What the agent holds on the test split (seed {seed_list[best]}, best on validation)")
    plot_equity(curves, path=out_dir / "equity.png", title=f"Test split {market.test.first_date}..{market.test.last_date}")

    env_steps = sum(r.env_steps for r in results)
    wall = sum(r.wall_seconds for r in results)
    report = {
        "config": settings["config"],
        "env_config": settings["env_config"],
        "data": settings["data"],
        "agent": mean,
        "agent_std": std,
        "agent_per_seed": {str(s): m for s, m in zip(seed_list, agent_metrics)},
        # None where no validation ran (eval_every=0): best_valid_sharpe is then -inf, not JSON
        "valid_sharpe_per_seed": {str(s): r.best_valid_sharpe if math.isfinite(r.best_valid_sharpe) else None
                                  for s, r in zip(seed_list, results)},
        # the env-steps of the checkpoint validation kept (the first best; None without validation): how far
        # from its initialisation each seed's tested agent is
        "chosen_env_steps_per_seed": {str(s): _chosen_env_steps(r) for s, r in zip(seed_list, results)},
        "baselines": baselines,
        # mean over seeds of Sharpe(agent) − Sharpe(equal-weight buy-and-hold), paired block bootstrap
        "sharpe_vs_buy_and_hold": versus,
        "sharpe_vs_buy_and_hold_seeds_and_days": versus_seeds,
        "seeds": seed_list,
        "best_seed": seed_list[best],
        "env_steps": env_steps,
        "wall_seconds": wall,
        "samples_per_s": env_steps / max(wall, 1e-9),
        "workers": results[0].workers,
        "world_size": results[0].world_size,
        "machine": machine(),
    }
    write_json(report, out_dir / "report.json")
    write_json(settings, out_dir / "config.json")
    return report


def results_table(report: dict) -> pd.DataFrame:
    """Agent (mean over seeds, with ± std) and baselines side by side, for printing."""
    rows = {f"agent ({len(report['seeds'])} seed{'s' if len(report['seeds']) > 1 else ''})": report["agent"]}
    if len(report["seeds"]) > 1:
        rows["agent ± std"] = report["agent_std"]
    rows |= report["baselines"]
    return pd.DataFrame(rows).T[TABLE_COLUMNS]
