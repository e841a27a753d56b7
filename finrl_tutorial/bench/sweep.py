"""Hyperparameter sweep: what do ``batch_size``, ``horizon_len`` and ``repeat_times`` change?

``python -m finrl_tutorial bench sweep`` changes one knob at a time around the package defaults
(`PPOConfig`): ``batch_size`` ×¼ and ×4, ``horizon_len`` ×½ and ×2, ``repeat_times`` ×½ and ×4.
Every variant trains for the **same number of env-steps** (``--total-steps`` rounded down to a
multiple of every variant's rollout times ``--evaluations``, so no run stops short) and is
validated the **same number of times, at the same spacing in env-steps**: after its first
iteration and then every ``g = total / evaluations`` env-steps (the trainer validates after
iterations 0, k, 2k, … and after the last, so the grid is ``rollout, rollout + g, …, total``: two
variants' validations are at most one rollout apart, the last ones at the same count; each
evaluation's env-step count is recorded). Seed k seeds the
learner (weights, env start days, minibatch order) and, on the synthetic market, builds market k,
so variant and base are compared seed by seed on the same markets.

Two markets (``--markets``): the embedded sse15 sample with its own splits (``sample``), and a
synthetic market with a planted factor edge (``synthetic``, as ``bench learn`` builds it), where
the signal rule's validation Sharpe is a second reference and the signal rule's excess return captured is
recorded (`finrl_tutorial.bench.learn.capture`). The buy-and-hold validation Sharpe is the
reference line on both.

``--experiment factor`` is chapter 7's question instead: the chapter's file (6 sample stocks,
2016-2019) trained with and without its user factor, `log_volume_ratio`.

Writes one JSON record (``--out``, atomically, rewritten after every finished run so an
interrupted sweep keeps what it measured; ``--resume`` skips the runs already in it) and its figure
(`plot_sweep`) beside it as PNG; prints one JSON line per run, then one per summary row.
``--merge A.json B.json --out C.json`` joins parts of one sweep run in separate processes (same
settings; the parts' commands are kept in ``merged_from``), leaving out any variant that lacks a
seed on a market.

What the selection is worth (`overfitting`, the record's ``overfitting`` entry, per market): the
sweep chooses among every checkpoint it validates — variants × seeds × (``--evaluations`` + 1)
validations, all on the same validation days. The performance matrix is that of those
checkpoints: one column per checkpoint, one row per validation day (its daily return), or, in a
record made before the daily returns were kept, only each checkpoint's validation Sharpe. From
it: the deflated Sharpe ratio of the best checkpoint (`finrl_tutorial.metrics.deflated_sharpe_ratio`),
counting every checkpoint as a trial and, as the other end of the bracket, one trial per run
(checkpoints of one run are correlated), and the probability of backtest overfitting of "take the
best checkpoint" by CSCV (`finrl_tutorial.metrics.probability_of_backtest_overfitting`) when the
daily returns are there. ``--summarize RECORD --out RECORD`` recomputes the summary and the
overfitting entry of a record without training (its runs, date and machine are kept).
"""
from __future__ import annotations

import datetime
import json
import math
import shlex
import statistics
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from matplotlib.figure import Figure

from ..agents import PPOConfig, make_config
from ..atomic import save_figure, write_json
from ..backtest.oracle import excess_return, oracle_record
from ..backtest.runner import agent_policy, buy_and_hold_baseline, run_policy
from ..data import load_market, load_sample
from ..data.synthetic import SyntheticSpec, make_synthetic
from ..envs import EnvConfig
from ..errors import InputError
from ..metrics import daily_returns, selection_overfitting
from ..provenance import machine
from ..training import initial_agent
from .common import (check_same_settings, checked_overrides, config_changes, explicit_command, recorded_config,
                     train_and_follow)
from .learn import DEFAULT_STRENGTHS, capture

KNOBS = ("batch_size", "horizon_len", "repeat_times")
"""The knobs the sweep changes, one at a time."""

MARKETS = ("sample", "synthetic")

FACTOR_TICKERS = ("600000.SH", "600030.SH", "600036.SH", "600276.SH", "600519.SH", "600570.SH")
"""Chapter 7's file: these sample stocks, 2016-01-01 .. 2019-12-31."""
FACTOR_DATES = ("2016-01-01", "2019-12-31")
FACTOR_NAME = "log_volume_ratio"


def default_variants(base: PPOConfig | None = None) -> dict[str, dict]:
    """``{"base": {}, "batch_size=256": {"batch_size": 256}, …}`` around ``base`` (the defaults).

    Ordered so that every knob has one variant before any has two: a sweep cut short for time
    (see ``--variants``) still covers the three knobs."""
    base = base or PPOConfig()
    scales = [("batch_size", 0.25), ("horizon_len", 2), ("repeat_times", 4),
              ("batch_size", 4), ("horizon_len", 0.5), ("repeat_times", 0.5)]
    variants = {"base": {}}
    for knob, scale in scales:
        value = max(1, int(round(getattr(base, knob) * scale)))
        variants[f"{knob}={value}"] = {knob: value}
    return variants


def knob_of(variant: str) -> str | None:
    """``"batch_size=256"`` → ``"batch_size"``; ``"base"`` (and the factor variants) → None."""
    knob = variant.partition("=")[0]
    return knob if knob in KNOBS else None


def common_budget(total_steps: int, variants: dict[str, dict], evaluations: int, base: dict | None = None) -> int:
    """The largest env-step count <= ``total_steps`` that every variant's rollout, times
    ``evaluations``, divides: every variant trains exactly as long and is validated on the same
    grid (`eval_every_for`). Refuses a budget below two such steps (see `eval_every_for`).
    ``base``: config fields set in every variant (e.g. ``num_envs``)."""
    rollouts = [make_config("ppo", **((base or {}) | change)).rollout_size for change in variants.values()]
    step = math.lcm(*rollouts) * evaluations
    if total_steps < 2 * step:
        raise InputError(f"--total-steps {total_steps:,} is below {2 * step:,}, twice the common rollout multiple "
                         f"of the variants times --evaluations {evaluations}: give a larger budget or fewer "
                         "evaluations")
    return total_steps // step * step


def eval_every_for(config: PPOConfig, evaluations: int) -> int:
    """Iterations between validations so that a run of ``config`` is validated after iteration 0,
    then every ``total / evaluations`` env-steps (the trainer also validates after the last), so
    ``evaluations + 1`` times. Needs at least 2 iterations per part: with 1 the last validation
    would be one of the grid's and the run would be validated once less than the others."""
    if config.iterations % evaluations or config.iterations < 2 * evaluations:
        raise InputError(f"{config.iterations} iterations of {config.rollout_size:,} env-steps cannot be cut into "
                         f"{evaluations} equal parts of 2 or more iterations: choose --evaluations dividing every "
                         "variant's iterations, at most half of the fewest, or a larger --total-steps")
    return config.iterations // evaluations


def log_volume_ratio(bars: pd.DataFrame, window: int = 20, min_periods: int = 5) -> pd.Series:
    """Chapter 7's factor: log(volume / the stock's mean volume over the ``window`` previous days),
    from past and current rows only (NaN for the first days of each stock)."""
    past = bars.groupby("tic")["volume"].transform(lambda v: v.shift(1).rolling(window, min_periods=min_periods).mean())
    return np.log(bars["volume"] / past)


def factor_bars() -> pd.DataFrame:
    """The bar table of chapter 7: `FACTOR_TICKERS` over `FACTOR_DATES`, with the `log_volume_ratio` column."""

    bars = load_sample()
    bars = bars[bars["tic"].isin(FACTOR_TICKERS)]
    bars = bars[(bars["date"] >= FACTOR_DATES[0]) & (bars["date"] <= FACTOR_DATES[1])].copy()
    bars[FACTOR_NAME] = log_volume_ratio(bars)
    return bars


FACTOR_VARIANTS = {"with_factor": {}, "without_factor": {}}
"""The factor experiment's variants: the same PPO defaults, on the file with and without the factor."""


def build_market(market: str, seed: int, variant: str = "base"):
    """``(prepared market, synthetic or None, description)`` of one market name and seed (for the
    ``factor_file`` market, ``variant`` says whether the factor column stays)."""

    if market == "sample":
        return load_market("sample"), None, "sse15 sample, its own train/valid/test splits"
    if market == "synthetic":
        spec = SyntheticSpec(family="factor", ic=DEFAULT_STRENGTHS["factor"], seed=seed, num_stocks=10, num_days=1250)
        synthetic = make_synthetic(spec)
        return synthetic.market, synthetic, (f"synthetic factor market, ic {spec.ic}, {spec.num_stocks} stocks, "
                                             f"{spec.num_days} days (60/20/20 splits), market seed = seed")
    if market == "factor_file":
        bars = factor_bars()
        if variant == "without_factor":
            bars = bars.drop(columns=[FACTOR_NAME])
        return (load_market(bars), None,
                f"chapter 7's file: {len(FACTOR_TICKERS)} sample stocks {FACTOR_DATES[0]}..{FACTOR_DATES[1]}, "
                f"60/20/20 splits, with_factor: with its {FACTOR_NAME} column, without_factor: the column dropped")
    raise InputError(f"unknown market {market!r}")


def run_one(market_name: str, variant: str, change: dict, seed: int, total_steps: int, evaluations: int,
            threads: int = 1, base: dict | None = None) -> dict:
    """Train one (market, variant, seed) and return its record: the validation curve, the
    training-reward curve, final and best validation Sharpe, the references and the wall time.
    ``base``: config fields under the variant's ``change`` (default: none, the package defaults)."""
    torch.set_num_threads(threads)
    env_config = EnvConfig()
    prepared, synthetic, _ = build_market(market_name, seed, variant)
    config = make_config("ppo", **((base or {}) | change | {"seed": seed, "total_steps": total_steps}))
    every = eval_every_for(config, evaluations)
    hold_valid = buy_and_hold_baseline(prepared.valid, env_config)
    record = {"market": market_name, "variant": variant, "seed": seed, "change": change,
              "config": {k: getattr(config, k) for k in ("num_envs", *KNOBS, "total_steps")},
              "rollout_size": config.rollout_size, "iterations": config.iterations, "eval_every": every,
              "buy_and_hold_valid_sharpe": hold_valid.metrics()["sharpe_ratio"],
              "valid_days": prepared.valid.num_days}
    final: dict = {}

    def follow(event: dict) -> None:
        policy_valid = run_policy(agent_policy(event["agent"]), prepared.valid, env_config)
        if event["iteration"] == config.iterations - 1:
            final["policy_valid"] = policy_valid
        # the checkpoint's column of the performance matrix (`overfitting`)
        return {"valid_returns": [round(float(r), RETURN_DECIMALS) for r in daily_returns(policy_valid.wealth)]}

    untrained = initial_agent(prepared.train, config, env_config)
    record["untrained_valid_sharpe"] = run_policy(agent_policy(untrained), prepared.valid,
                                                  env_config).metrics()["sharpe_ratio"]
    run = train_and_follow(prepared, config, env_config, eval_every=every, on_candidate=follow)
    result, evaluations_seen = run.result, run.evaluations
    record["wall_seconds"] = run.wall_seconds
    log = result.log
    record["env_steps"] = result.env_steps
    record["evaluations"] = evaluations_seen
    record["training"] = {"env_steps": log["env_steps"].astype(int).tolist(),
                          "reward_mean": log["train/reward_mean"].tolist(),
                          "approx_kl": log["loss/approx_kl"].tolist(),
                          "clip_fraction": log["loss/clip_fraction"].tolist()}
    record["approx_kl_mean"] = float(log["loss/approx_kl"].mean())
    record["clip_fraction_mean"] = float(log["loss/clip_fraction"].mean())
    record["gradient_steps_per_iteration"] = int(log["loss/minibatches"].iloc[0])
    record["final_valid_sharpe"] = evaluations_seen[-1]["valid_sharpe"]
    record["best_valid_sharpe"] = max(e["valid_sharpe"] for e in evaluations_seen)
    if synthetic is not None:
        oracle_valid = oracle_record(synthetic, "valid", env_config)
        hold_test = buy_and_hold_baseline(prepared.test, env_config)
        oracle_test = oracle_record(synthetic, "test", env_config)
        best_test = run_policy(agent_policy(result.agent), prepared.test, env_config)
        valid_excess = excess_return(final["policy_valid"], hold_valid)
        oracle_valid_excess = excess_return(oracle_valid, hold_valid)
        test_excess = excess_return(best_test, hold_test)
        oracle_test_excess = excess_return(oracle_test, hold_test)
        record |= {"oracle_valid_sharpe": oracle_valid.metrics()["sharpe_ratio"],
                   "final_valid_excess": valid_excess, "oracle_valid_excess": oracle_valid_excess,
                   "final_valid_capture": _finite(capture(valid_excess, oracle_valid_excess)),
                   "best_test_excess": test_excess, "oracle_test_excess": oracle_test_excess,
                   "best_test_capture": _finite(capture(test_excess, oracle_test_excess))}
    return record


RETURN_DECIMALS = 6
"""Daily validation returns are kept to 1e-6 (0.01 basis point): far below what moves a Sharpe ratio."""


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _spread(values: list[float]) -> dict:
    return {"mean": statistics.fmean(values), "std": statistics.stdev(values) if len(values) > 1 else 0.0,
            "min": min(values), "max": max(values), "values": values}


MIN_SEEDS_FOR_VERDICT = 3
"""Fewer seeds than this on either side: no verdict (one seed above another is one draw)."""


def verdict(variant: list[float], base: list[float]) -> str:
    """``higher`` / ``lower`` when every seed of the variant lies above / below every seed of the
    base (the seed ranges do not overlap), else ``inconclusive``: with 3 seeds a difference inside
    the seed spread is not an effect, and overlapping ranges are no evidence that the two are equal
    either (the rule has no equivalence margin, so it never calls a tie; records written before
    this stored ``tie`` there, and `finrl_tutorial.book.sweep` recomputes the verdict from the
    values). ``too few seeds`` below `MIN_SEEDS_FOR_VERDICT` on either side."""
    if min(len(variant), len(base)) < MIN_SEEDS_FOR_VERDICT:
        return "too few seeds"
    if min(variant) > max(base):
        return "higher"
    if max(variant) < min(base):
        return "lower"
    return "inconclusive"


def summarize(runs: list[dict], base_name: str = "base") -> list[dict]:
    """Per market and variant: final and best validation Sharpe over seeds (mean, std, min, max),
    the wall time, and the verdict against ``base_name`` on the same market."""
    groups: dict[tuple, list[dict]] = {}
    for run in runs:
        groups.setdefault((run["market"], run["variant"]), []).append(run)
    rows = []
    for (market, variant), group in groups.items():
        group = sorted(group, key=lambda r: r["seed"])
        row = {"summary": True, "market": market, "variant": variant, "knob": knob_of(variant),
               "seeds": [r["seed"] for r in group],
               "final_valid_sharpe": _spread([r["final_valid_sharpe"] for r in group]),
               "best_valid_sharpe": _spread([r["best_valid_sharpe"] for r in group]),
               "wall_seconds": _spread([r["wall_seconds"] for r in group]),
               "approx_kl_mean": statistics.fmean(r["approx_kl_mean"] for r in group),
               "clip_fraction_mean": statistics.fmean(r["clip_fraction_mean"] for r in group),
               "buy_and_hold_valid_sharpe": statistics.fmean(r["buy_and_hold_valid_sharpe"] for r in group)}
        if "oracle_valid_sharpe" in group[0]:
            row["oracle_valid_sharpe"] = statistics.fmean(r["oracle_valid_sharpe"] for r in group)
            row["final_valid_excess"] = _spread([r["final_valid_excess"] for r in group])
            row["best_test_excess"] = _spread([r["best_test_excess"] for r in group])
            oracle_valid = statistics.fmean(r["oracle_valid_excess"] for r in group)
            oracle_test = statistics.fmean(r["oracle_test_excess"] for r in group)
            row["final_valid_capture_pooled"] = _finite(capture(row["final_valid_excess"]["mean"], oracle_valid))
            row["best_test_capture_pooled"] = _finite(capture(row["best_test_excess"]["mean"], oracle_test))
        base = groups.get((market, base_name))
        if base is not None and variant != base_name:
            for measure in ("final_valid_sharpe", "best_valid_sharpe"):
                row[f"{measure}_vs_base"] = verdict([r[measure] for r in group], [r[measure] for r in base])
        rows.append(row)
    return rows


def _valid_days(market: str, runs: list[dict]) -> int:
    """Trading days of the market's validation split: recorded by `run_one`, else (older
    records) read off the market itself."""
    recorded = {r["valid_days"] for r in runs if "valid_days" in r}
    if recorded:
        return recorded.pop()
    return build_market(market, runs[0]["seed"], runs[0]["variant"])[0].valid.num_days


SEEDED_MARKETS = ("synthetic",)
"""Markets that seed k builds anew (market k): their runs of different seeds are on different days."""


def overfitting(runs: list[dict], slices: int = 16) -> list[dict]:
    """What choosing the best checkpoint is worth, once per market (see the module docstring): the
    trials are every validated checkpoint of every variant (and, on a market all seeds share,
    every seed) on the same validation days; the chosen one has the highest validation Sharpe. A
    synthetic market is built anew by each seed, so each of its seeds is its own entry
    (``market_seed``). ``deflated`` counts every checkpoint as a trial, ``deflated_one_trial_per_run``
    one per run (the two ends of the effective number of independent trials: checkpoints of one
    run are correlated); ``pbo`` is by CSCV with ``slices`` blocks of validation days, None (with
    ``pbo_missing`` saying why) when the record has no daily returns. The chosen checkpoint's
    skewness and kurtosis are measured from its daily returns, or assumed normal (``moments``)."""
    groups: dict[tuple, list[dict]] = {}
    for run in runs:
        key = (run["market"], run["seed"] if run["market"] in SEEDED_MARKETS else None)
        groups.setdefault(key, []).append(run)
    out = []
    for (market, market_seed), mine in groups.items():
        candidates = [(r, e) for r in mine for e in r["evaluations"]]
        sharpes = [e["valid_sharpe"] for _, e in candidates]
        days = _valid_days(market, mine) - 1  # daily returns of the validation split
        have_returns = all("valid_returns" in e for _, e in candidates)
        matrix = np.array([e["valid_returns"] for _, e in candidates]).T if have_returns else None
        chosen = int(np.argmax(sharpes))
        result = selection_overfitting(sharpes, days, returns=matrix, slices=slices)
        per_run = selection_overfitting(sharpes, days, trials=len(mine),
                                        selected_returns=None if matrix is None else matrix[:, chosen])
        best_run, best = candidates[chosen]
        variants, seeds = len({r["variant"] for r in mine}), len({r["seed"] for r in mine})
        entry = {"market": market, "market_seed": market_seed,
                 "performance_matrix": (f"{len(candidates)} checkpoints ({variants} variants x {seeds} seed"
                                        f"{'s' if seeds > 1 else ''} x their validations) x {days} daily "
                                        "validation returns" + ("" if have_returns else ": this record keeps only "
                                                                "each checkpoint's validation Sharpe")),
                 "trials": len(candidates), "runs": len(mine), "days": days,
                 "selected": {"variant": best_run["variant"], "seed": best_run["seed"],
                              "iteration": best.get("iteration"), "env_steps": best["env_steps"],
                              "valid_sharpe": best["valid_sharpe"]},
                 "buy_and_hold_valid_sharpe": statistics.fmean(r["buy_and_hold_valid_sharpe"] for r in mine),
                 "moments": result["moments"], "deflated": result["deflated"],
                 "deflated_one_trial_per_run": per_run["deflated"], "pbo": result["pbo"]}
        if matrix is None:
            entry["pbo_missing"] = ("the runs of this record store each checkpoint's validation Sharpe but not its "
                                    "daily validation returns, which CSCV needs (`bench sweep` run again stores them)")
        out.append(entry)
    return out


def plot_sweep(record: dict, path=None, title: str | None = None):
    """Learning curves of a sweep record: validation Sharpe against env-steps (0: the untrained
    policy), mean over seeds with
    a min-max band, one panel per knob (the base in every panel) and one row per market, with the
    buy-and-hold (and, on the synthetic market, the oracle) validation Sharpe as reference lines.
    A factor record (no knobs) gets one panel per market. Saved as PNG at ``path`` when given;
    ``title`` goes before the default title (which names the seeds)."""
    runs = record["runs"]
    markets = list(dict.fromkeys(r["market"] for r in runs))
    knobs = [k for k in KNOBS if any(knob_of(r["variant"]) == k for r in runs)]
    panels = knobs or [None]  # a factor record: every variant on one panel per market
    base_name = record.get("base_variant", "base")
    fig = Figure(figsize=(max(8.0, 4.4 * len(panels)), 3.3 * len(markets) + 0.3), layout="constrained")
    axes = fig.subplots(len(markets), len(panels), sharex=True, sharey="row", squeeze=False)
    for i, market in enumerate(markets):
        mine = [r for r in runs if r["market"] == market]
        for j, knob in enumerate(panels):
            ax = axes[i, j]
            names = list(dict.fromkeys(r["variant"] for r in mine))
            shown = [n for n in names if knob is None or n == base_name or knob_of(n) == knob]
            for k, name in enumerate(shown):
                group = [r for r in mine if r["variant"] == name]
                # the untrained policy at env-step 0, then every validation
                curves = np.array([[r["untrained_valid_sharpe"]] + [e["valid_sharpe"] for e in r["evaluations"]]
                                   for r in group])
                steps = np.array([[0] + [e["env_steps"] for e in r["evaluations"]] for r in group]).mean(axis=0)
                color = "black" if name == base_name else f"C{k}"
                ax.plot(steps, curves.mean(axis=0), color=color, marker=".", linewidth=1.4,
                        label=f"{name} ({len(group)} seed{'s' if len(group) != 1 else ''})")
                ax.fill_between(steps, curves.min(axis=0), curves.max(axis=0), color=color, alpha=0.15)
            hold = statistics.fmean(r["buy_and_hold_valid_sharpe"] for r in mine)
            ax.axhline(hold, color="grey", linestyle=":", linewidth=1.2, label=f"buy-and-hold ({hold:.2f})")
            oracle = [r["oracle_valid_sharpe"] for r in mine if "oracle_valid_sharpe" in r]
            if oracle:
                ax.axhline(statistics.fmean(oracle), color="grey", linestyle="--", linewidth=1.2,
                           label=f"signal rule ({statistics.fmean(oracle):.2f})")
            ax.set_title(f"{market}: {knob}" if knob else market, fontsize="medium")
            ax.grid(alpha=0.3)
            ax.legend(fontsize="x-small", loc="best")
            if i == len(markets) - 1:
                ax.set_xlabel("env-steps")
            if j == 0:
                ax.set_ylabel("validation Sharpe")
    seeds = sorted({r["seed"] for r in runs})
    spread = f"mean over seeds {seeds}, band = lowest..highest seed" if len(seeds) > 1 else f"one seed ({seeds[0]})"
    heading = f"{record.get('experiment', 'knobs')} sweep, {record['total_steps']:,} env-steps per run: {spread}"
    fig.suptitle(f"{title}: {heading}" if title else heading, fontsize="medium")
    if path is not None:
        save_figure(fig, path)
    return fig


def add_arguments(kinds) -> None:
    parser = kinds.add_parser("sweep", help="one-at-a-time sweep of batch_size, horizon_len, repeat_times "
                                            "(or chapter 7's factor), same env-steps and validations per variant")
    parser.add_argument("--experiment", choices=("knobs", "factor"), default="knobs",
                        help="knobs: the PPO knobs on --markets; factor: chapter 7's file with and without its factor")
    parser.add_argument("--markets", nargs="+", choices=MARKETS, default=list(MARKETS))
    parser.add_argument("--variants", nargs="+", default=None,
                        help="a subset of the knob variants by name, run in this order (default: all; base is "
                             "always run, first)")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--total-steps", type=int, default=PPOConfig().total_steps,
                        help="env-steps per run, rounded down to a multiple of every variant's rollout")
    parser.add_argument("--evaluations", type=int, default=12,
                        help="validations after the first iteration, equally spaced in env-steps")
    parser.add_argument("--jobs", type=int, default=1, help="runs in parallel processes")
    parser.add_argument("--out", default="runs/bench_sweep/sweep.json", help="the JSON record (PNG beside it)")
    parser.add_argument("--resume", action="store_true", help="keep the runs already in --out, run the rest")
    parser.add_argument("--merge", nargs="+", default=None, metavar="SWEEP_JSON",
                        help="train nothing: merge the runs of sweep records made with the same settings into --out")
    parser.add_argument("--summarize", default=None, metavar="SWEEP_JSON",
                        help="train nothing: recompute the summary and the overfitting figures (PBO, deflated "
                             "Sharpe) of a sweep record into --out (which may be the same file)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--set", nargs="+", default=[], metavar="FIELD=VALUE",
                        help="override PPOConfig fields of every run (the base and each variant), e.g. --set "
                             "gae_lambda=0.95 market_baseline=false pathwise=false (the plain learner)")


def plan(experiment: str = "knobs", markets=MARKETS, variant_names=None, seeds: int = 3,
         total_steps: int = PPOConfig().total_steps, evaluations: int = 12, base: dict | None = None,
         jobs: int = 1, threads: int = 1) -> tuple[dict[str, dict], list[str], int]:
    """``(variants, markets, total env-steps)`` of a sweep; bad settings end here, in one line."""
    for name, value in (("seeds", seeds), ("evaluations", evaluations), ("jobs", jobs), ("threads", threads),
                        ("total_steps", total_steps)):
        if value < 1:
            raise InputError(f"--{name.replace('_', '-')} must be >= 1, got {value}")
    if experiment == "factor":
        variants, markets = dict(FACTOR_VARIANTS), ["factor_file"]
    elif experiment == "knobs":
        variants, markets = default_variants(), list(dict.fromkeys(markets))
        unknown_markets = sorted(set(markets) - set(MARKETS))
        if unknown_markets:
            raise InputError(f"unknown market(s) {', '.join(unknown_markets)}: choose from {', '.join(MARKETS)}")
        if variant_names:
            unknown = sorted(set(variant_names) - set(variants))
            if unknown:
                raise InputError(f"unknown variant(s) {', '.join(unknown)}: choose from {', '.join(variants)}")
            # in the order given (the sweep runs them in that order: cheapest first, when time is short)
            variants = {"base": {}} | {name: variants[name] for name in variant_names}
    else:
        raise InputError(f"unknown experiment {experiment!r}: knobs or factor")
    try:
        make_config("ppo", **(base or {}))
    except TypeError as error:
        raise InputError(f"base config: {error}") from None
    total = common_budget(total_steps, variants, evaluations, base)
    for change in variants.values():
        eval_every_for(make_config("ppo", **((base or {}) | change), total_steps=total), evaluations)
    return variants, markets, total


def write_record(path: Path | None, header: dict, runs: list[dict]) -> dict:
    """The record of ``runs`` (sorted, with the summary); written atomically to ``path`` when given."""

    runs = sorted(runs, key=lambda r: (r["market"], r["variant"] != header["base_variant"], r["variant"], r["seed"]))
    record = header | {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                       "machine": machine(), "runs": runs, "summary": summarize(runs, header["base_variant"]),
                       "overfitting": overfitting(runs)}
    if path is not None:
        write_json(record, path)
    return record


def resummarize(path, out, command: str | None = None) -> dict:
    """A sweep record with its ``summary`` and ``overfitting`` recomputed from its runs, written to
    ``out`` (which may be ``path``): nothing is trained; the runs, the date, the machine and the
    command that measured them are kept, and ``summarized`` says when and by which command."""
    try:
        record = json.loads(Path(path).read_text())
        runs = record["runs"]
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise InputError(f"{path} is not a sweep record: {error}") from None
    record["summary"] = summarize(runs, record.get("base_variant", "base"))
    record["overfitting"] = overfitting(runs)
    record["summarized"] = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                            "command": command, "machine": machine()}
    write_json(record, out)
    return record


def base_variant(experiment: str) -> str:
    """The variant every other is compared with: the defaults, or the file without the factor."""
    return "without_factor" if experiment == "factor" else "base"


def iter_sweep(experiment: str = "knobs", *, markets=MARKETS, variant_names=None, seeds: int = 3,
               total_steps: int = PPOConfig().total_steps, evaluations: int = 12, base: dict | None = None,
               jobs: int = 1, threads: int = 1, out=None, resume: bool = False, command: str | None = None):
    """Run a sweep, yielding each finished run's record, then the whole record (``{"record": …}``).
    ``out``: the JSON file, rewritten atomically after every run; ``resume`` keeps its runs.
    ``jobs`` > 1 runs in that many processes; 1 runs here, in this process."""
    variants, markets, total = plan(experiment, markets, variant_names, seeds, total_steps, evaluations, base,
                                    jobs, threads)
    out = Path(out) if out is not None else None
    done: list[dict] = []
    base_config = recorded_config(PPOConfig(**(base or {})))
    if resume and out is not None and out.exists():
        try:
            previous = json.loads(out.read_text())
            done = previous["runs"]
        except (OSError, ValueError, KeyError, TypeError) as error:
            raise InputError(f"--resume: {out} is not a sweep record: {error}") from None
        changed = sorted(config_changes(previous.get("base_config", {}), base_config))
        if changed:
            raise InputError(f"--resume: {out} was made with another base config ({', '.join(changed)}): "
                             "use the --set it was made with, or another --out")
        # only the runs this sweep would make (a narrower --variants drops the others)
        done = [r for r in done if r["market"] in markets and r["variant"] in variants and r["seed"] < seeds
                and r["env_steps"] == total and len(r["evaluations"]) == evaluations + 1]
    header = {"bench": "sweep", "experiment": experiment, "command": command, "seeds": list(range(seeds)),
              "total_steps": total, "evaluations": evaluations, "base_config": base_config,
              "variants": variants, "base_variant": base_variant(experiment),
              "markets": {m: build_market(m, 0)[2] for m in markets}}
    have = {(r["market"], r["variant"], r["seed"]) for r in done}
    # variant by variant (every market, all seeds): a sweep stopped early has whole variants
    todo = [(m, v, s) for v in variants for m in markets for s in range(seeds) if (m, v, s) not in have]
    runs = list(done)
    arguments = [(m, v, variants[v], s, total, evaluations, threads, base) for m, v, s in todo]
    if jobs == 1:
        results = (run_one(*a) for a in arguments)
        pool = None
    else:
        pool = ProcessPoolExecutor(jobs)
        results = (future.result() for future in [pool.submit(run_one, *a) for a in arguments])
    try:
        for result in results:
            runs.append(result)
            write_record(out, header, runs)
            yield result
    finally:
        if pool is not None:
            pool.shutdown(cancel_futures=True)
    record = write_record(out, header, runs)
    if out is not None:
        plot_sweep(record, out.with_suffix(".png"))
    yield {"record": record}


def run_sweep(experiment: str = "knobs", **options) -> dict:
    """The record of a sweep (see `iter_sweep` for the options), for a notebook."""
    for item in iter_sweep(experiment, **options):
        if "record" in item:
            return item["record"]
    raise AssertionError("iter_sweep ends with the record")


SAME_SETTINGS = ("experiment", "total_steps", "evaluations", "base_config", "base_variant")
"""Header fields two sweep records must share to be merged (else their runs are not comparable)."""


def merge_records(paths: list, out, command: str | None = None) -> dict:
    """One record from several sweep records of the same settings (`SAME_SETTINGS`), e.g. parts of
    one sweep run in parallel processes: the union of their runs (a run present twice, the same
    market, variant and seed, is kept once, from the first file), the summary recomputed. A variant
    that lacks a seed on a market is left out (listed under ``incomplete_variants_left_out``). The
    inputs' commands, dates and machines are kept under ``merged_from``."""
    records = []
    for path in paths:
        try:
            records.append(json.loads(Path(path).read_text()))
            records[-1]["runs"]
        except (OSError, ValueError, KeyError, TypeError) as error:
            raise InputError(f"{path} is not a sweep record: {error}") from None
    check_same_settings(paths, records, SAME_SETTINGS, "sweep")
    first = records[0]
    runs, seen = [], set()
    for record in records:
        for run in record["runs"]:
            key = (run["market"], run["variant"], run["seed"])
            if key not in seen:
                seen.add(key)
                runs.append(run)
    markets = {}
    for record in records:
        markets |= record["markets"]
    seeds = sorted({run["seed"] for run in runs})
    # a variant without every seed on every market (a part stopped early) is left out, and named
    have = {(run["market"], run["variant"], run["seed"]) for run in runs}
    names = list(dict.fromkeys(run["variant"] for run in runs))
    incomplete = [v for v in names if any((m, v, s) not in have for m in markets for s in seeds)]
    runs = [run for run in runs if run["variant"] not in incomplete]
    variants = {}
    for record in records:
        variants |= {name: change for name, change in record["variants"].items()
                     if name in {run["variant"] for run in runs}}
    header = {key: first[key] for key in ("bench", *SAME_SETTINGS)} | {
        "command": command, "seeds": seeds, "variants": variants, "markets": markets,
        "incomplete_variants_left_out": incomplete,
        "merged_from": [{"command": r.get("command"), "date": r.get("date"), "machine": r.get("machine"),
                         "runs": len(r["runs"])} for r in records]}
    record = write_record(Path(out), header, runs)
    plot_sweep(record, Path(out).with_suffix(".png"))
    return record


def run(args):
    if args.summarize:
        record = resummarize(args.summarize, args.out, shlex.join(["python", "-m", "finrl_tutorial", "bench", "sweep",
                                                                   "--summarize", str(args.summarize),
                                                                   "--out", str(args.out)]))
        yield from record["summary"]
        yield from ({"overfitting": True} | entry for entry in record["overfitting"])
        return
    if args.merge:
        yield from merge_records(args.merge, args.out, explicit_command(args, add_arguments))["summary"]
        return
    fixed = ("seed", "total_steps", "algo") + (KNOBS if args.experiment == "knobs" else ())
    overrides, _ = checked_overrides(args.set, ["ppo"], fixed, "the sweep sets these itself (its seeds, budget and "
                                     "variants)")
    options = {"base": overrides or None, "markets": args.markets, "variant_names": args.variants, "seeds": args.seeds,
               "total_steps": args.total_steps, "evaluations": args.evaluations, "jobs": args.jobs,
               "threads": args.threads, "out": args.out, "resume": args.resume, "command": explicit_command(args, add_arguments)}
    for item in iter_sweep(args.experiment, **options):
        if "record" in item:
            yield from item["record"]["summary"]
        else:
            yield {k: v for k, v in item.items() if k not in ("evaluations", "training")} | {"bench": "sweep"}
