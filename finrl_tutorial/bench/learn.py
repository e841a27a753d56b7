"""Learning benchmark: does the learner capture an edge that is there?

``python -m finrl_tutorial bench learn`` trains on synthetic markets with a planted edge
(`finrl_tutorial.data.synthetic`): every signal family at its strength (information coefficient),
K seeds each — seed k builds market k *and* seeds the learner, so no two runs share a market.
The yardstick is the **fraction of the oracle's excess return captured** on the untouched test
split, with full costs:

    capture = (R_agent − R_buy&hold) / (R_oracle − R_buy&hold),   R = cumulative test return.

The learning curve is read off one run per case: every validation of the trainer is a candidate
checkpoint; at a budget of B env steps the checkpoint reported is the one with the best
*validation* Sharpe among the candidates seen by then (``select="best"``) or the latest one
(``select="last"``). The test split chooses nothing. (The learning rate anneals over the whole
run, so a point at B < the largest budget is not the same as a run of budget B.) Budget 0 is the
untrained policy. ``--sb3-steps`` adds stable-baselines3's PPO with its defaults on the single
`StockTradingEnv`, same market and seed, when it is installed.

Writes ``learn.json`` (every case, every candidate, and the summary) and ``learn.png`` to
``--out``, and one JSON line per case (then one per summary row) on stdout.
"""
from __future__ import annotations

import json
import math
import statistics
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import torch
from matplotlib.figure import Figure

from ..agents import make_config
from ..atomic import save_figure, write_json
from ..backtest.oracle import excess_return, oracle_record
from ..backtest.runner import agent_policy, buy_and_hold_baseline, run_policy
from ..data.synthetic import SIGNAL_FAMILIES, SyntheticSpec, make_synthetic
from ..envs import EnvConfig
from ..errors import InputError
from ..provenance import machine
from ..training.trainer import initial_agent, train
from .peers import PeerMissing, sb3_ppo_train

DEFAULT_STRENGTHS = {"factor": 0.10, "cross_section": 0.10, "momentum": 0.17, "reversal": 0.18, "none": 0.0}
"""Information coefficient per family at which the oracle's test Sharpe is about 1 with the default
costs (10 stocks, 1,250 days, 250-day test split, 8 market seeds, measured 2026-12-01: factor 0.85
at 0.09 and 1.27 at 0.11, cross_section 0.84 / 1.28 at the same, momentum 0.83 at 0.16 and 1.25 at
0.18, reversal 0.76 at 0.16 and 1.09 at 0.18); ``none`` has no edge at any ic."""

SELECTIONS = ("best", "last")


def add_arguments(kinds) -> None:
    parser = kinds.add_parser("learn", help="fraction of a planted edge the learner captures, on synthetic markets")
    parser.add_argument("--families", nargs="+", choices=SIGNAL_FAMILIES, default=list(SIGNAL_FAMILIES))
    parser.add_argument("--ic", type=float, nargs="+", default=None,
                        help="signal strengths (default: each family's DEFAULT_STRENGTHS entry)")
    parser.add_argument("--seeds", type=int, default=5, help="markets (and learner seeds) per family and strength")
    parser.add_argument("--algos", nargs="+", choices=("ppo", "a2c"), default=["ppo"])
    parser.add_argument("--budgets", type=int, nargs="+", default=[50_000, 100_000, 200_000, 300_000],
                        help="env steps at which the curve is read (the run lasts the largest)")
    parser.add_argument("--stocks", type=int, default=10)
    parser.add_argument("--days", type=int, default=1250, help="trading days per market (60/20/20 splits)")
    parser.add_argument("--eval-steps", type=int, default=20_480,
                        help="env steps between validations (candidate checkpoints), whatever the rollout size")
    parser.add_argument("--sb3-steps", type=int, default=0,
                        help="also train stable-baselines3's PPO for this many env steps (0: no)")
    parser.add_argument("--set", nargs="+", default=[], metavar="FIELD=VALUE",
                        help="override config fields of every learner, e.g. --set gamma=0.9 init_log_std=0")
    parser.add_argument("--jobs", type=int, default=1, help="cases run in parallel processes")
    parser.add_argument("--merge", nargs="+", default=None, metavar="LEARN_JSON",
                        help="train nothing: merge the cases of earlier learn.json files into one summary")
    parser.add_argument("--out", default="runs/bench_learn", help="folder for learn.json and learn.png")
    parser.add_argument("--threads", type=int, default=1)


def read_curve(candidates: list[dict], budget: int, select: str) -> dict | None:
    """The candidate reported at ``budget``: best validation Sharpe so far, or the latest."""
    seen = [c for c in candidates if c["env_steps"] <= budget]
    if not seen:
        return None
    return max(seen, key=lambda c: c["valid_sharpe"]) if select == "best" else seen[-1]


def run_case(family: str, ic: float, seed: int, algo: str, budgets: list[int], *, stocks: int = 10,
             days: int = 1250, eval_steps: int = 20_480, sb3_steps: int = 0, threads: int = 1,
             overrides: dict | None = None, env_config: EnvConfig | None = None) -> dict:
    """Train one case and read its test capture at every budget (see the module docstring)."""
    torch.set_num_threads(threads)
    env_config = env_config or EnvConfig()
    synthetic = make_synthetic(SyntheticSpec(family=family, ic=ic, seed=seed, num_stocks=stocks, num_days=days))
    market, test = synthetic.market, synthetic.market.test
    baseline = buy_and_hold_baseline(test, env_config)
    oracle = oracle_record(synthetic, "test", env_config)
    oracle_excess = excess_return(oracle, baseline)

    def test_result(policy) -> dict:
        record = run_policy(policy, test, env_config)
        metrics = record.metrics()
        return {"test_excess": excess_return(record, baseline), "test_sharpe": metrics["sharpe_ratio"],
                "test_turnover": metrics["turnover"]}

    config = make_config(algo, seed=seed, total_steps=max(budgets), **(overrides or {}))
    untrained = initial_agent(market.train, config, env_config)
    candidates = [{"env_steps": 0, "valid_sharpe": None, **test_result(agent_policy(untrained))}]

    def follow(event: dict) -> None:
        candidates.append({"env_steps": event["env_steps"], "valid_sharpe": event["metrics"]["sharpe_ratio"],
                           **test_result(agent_policy(event["agent"]))})

    started = time.perf_counter()
    eval_every = max(1, eval_steps // config.rollout_size)
    train(market, config, env_config, eval_every=eval_every, progress=False, on_evaluation=follow)
    wall = time.perf_counter() - started
    curve = {select: {str(b): read_curve(candidates[1:], b, select) for b in budgets} for select in SELECTIONS}
    for select in SELECTIONS:
        curve[select]["0"] = candidates[0]
    case = {"family": family, "ic": ic, "seed": seed, "algo": algo, "stocks": stocks, "days": days,
            "total_steps": config.total_steps,
            "oracle_excess": oracle_excess, "oracle_sharpe": oracle.metrics()["sharpe_ratio"],
            "buy_and_hold_sharpe": baseline.metrics()["sharpe_ratio"], "wall_seconds": wall,
            "config": {"algo": algo, **(overrides or {})}, "candidates": candidates, "curve": curve}
    if sb3_steps:
        case["sb3"] = _sb3_case(market, env_config, sb3_steps, seed, test_result)
    return case


def _sb3_case(market, env_config, steps: int, seed: int, test_result) -> dict:
    """stable-baselines3's PPO on the same market (or one ``skipped`` line when it is not installed)."""
    try:
        policy, seconds = sb3_ppo_train(market, env_config, steps, seed)
    except PeerMissing as error:
        return {"skipped": str(error)}
    return {"env_steps": steps, "wall_seconds": seconds, **test_result(policy)}


def capture(excess: float, oracle_excess: float) -> float:
    """Fraction of the oracle's excess captured; NaN where the oracle has no excess to capture."""
    return excess / oracle_excess if oracle_excess > 1e-9 else math.nan


def summarize(cases: list[dict]) -> list[dict]:
    """Per family, strength, learner, selection and budget: mean and spread of the capture over
    seeds, and the pooled capture (mean excess / mean oracle excess, steadier when an oracle's
    excess is small)."""
    rows = []
    groups: dict[tuple, list[dict]] = {}
    for case in cases:  # runs of another length are another learner: their curves differ
        run_steps = case.get("total_steps", max(int(budget) for budget in case["curve"]["best"]))
        groups.setdefault((case["family"], case["ic"], case["algo"], run_steps), []).append(case)
    for (family, ic, algo, run_steps), group in groups.items():
        oracle = [c["oracle_excess"] for c in group]
        for select in SELECTIONS:
            for budget in sorted(group[0]["curve"][select], key=int):
                excess = [c["curve"][select][budget]["test_excess"] for c in group]
                rows.append(_summary_row(family, ic, algo, select, int(budget), excess, oracle,
                                         [c["curve"][select][budget]["test_sharpe"] for c in group],
                                         run_steps=run_steps,
                                         wall=statistics.fmean(c["wall_seconds"] for c in group)))
        sb3 = [c["sb3"] for c in group if "sb3" in c and "test_excess" in c["sb3"]]
        if sb3 and len(sb3) == len(group):
            rows.append(_summary_row(family, ic, "sb3_ppo", "last", sb3[0]["env_steps"],
                                     [s["test_excess"] for s in sb3], oracle, [s["test_sharpe"] for s in sb3],
                                     run_steps=sb3[0]["env_steps"],
                                     wall=statistics.fmean(s["wall_seconds"] for s in sb3)))
    return rows


def _summary_row(family, ic, learner, select, budget, excess, oracle, sharpe, *, run_steps, wall) -> dict:
    fractions = [capture(e, o) for e, o in zip(excess, oracle)]
    finite = [f for f in fractions if math.isfinite(f)]
    mean_oracle = statistics.fmean(oracle)
    row = {"summary": True, "family": family, "ic": ic, "learner": learner, "select": select, "env_steps": budget,
           "run_steps": run_steps,
           "seeds": len(excess), "capture_mean": statistics.fmean(finite) if finite else None,
           "capture_std": statistics.stdev(finite) if len(finite) > 1 else None,
           "capture_pooled": statistics.fmean(excess) / mean_oracle if mean_oracle > 1e-9 else None,
           "captures": [f if math.isfinite(f) else None for f in fractions], "test_excess_mean": statistics.fmean(excess),
           "oracle_excess_mean": mean_oracle, "test_sharpe_mean": statistics.fmean(sharpe),
           "wall_seconds": wall}
    return row


def plot_capture(rows: list[dict], path, select: str = "best"):
    """Pooled capture (mean excess / mean oracle excess over the markets) vs env steps, one line
    per family and learner, with the oracle (1) and buy-and-hold (0) marked; the control market,
    with no excess to capture, is left out."""
    curves: dict[str, dict[int, float]] = {}
    for row in rows:
        if row["select"] != select or row["learner"] == "sb3_ppo" or row["capture_pooled"] is None:
            continue
        label = f"{row['learner']} {row['family']} (ic {row['ic']:g}, {row['seeds']} markets, {row['run_steps']:,}-step runs)"
        curves.setdefault(label, {})[row["env_steps"]] = row["capture_pooled"]
    fig = Figure(figsize=(9, 4.8), layout="constrained")
    ax = fig.subplots()
    for label, points in sorted(curves.items()):
        steps = sorted(points)
        ax.plot(steps, [points[s] for s in steps], marker=".", linestyle="-" if label.startswith("ppo") else "--",
                label=label)
    ax.axhline(1.0, color="black", linewidth=0.8, linestyle=":", label="the oracle")
    ax.axhline(0.0, color="grey", linewidth=0.8, label="buy-and-hold")
    ax.set_xlabel("env steps")
    ax.set_ylabel("oracle's excess return captured (test, pooled)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize="x-small", loc="upper left")
    if path is not None:
        save_figure(fig, path)
    return fig


def parse_overrides(pairs: list[str]) -> dict:
    """``["gamma=0.9", "network=mlp"]`` → ``{"gamma": 0.9, "network": "mlp"}`` (numbers where they parse)."""
    overrides = {}
    for pair in pairs:
        field, sep, text = pair.partition("=")
        if not sep or not field:
            raise InputError(f"--set takes FIELD=VALUE, got {pair!r}")
        for kind in (int, float):
            try:
                overrides[field] = kind(text)
                break
            except ValueError:
                continue
        else:
            overrides[field] = {"true": True, "false": False}.get(text.lower(), text)
    return overrides


def cases_of(args) -> list[tuple]:
    strengths = {family: (args.ic if args.ic is not None else [DEFAULT_STRENGTHS[family]]) for family in args.families}
    return [(family, ic, seed, algo) for family in args.families for ic in strengths[family]
            for algo in args.algos for seed in range(args.seeds)]


def write_report(cases: list[dict], out, runs: list[dict]) -> list[dict]:
    """``learn.json`` (cases, summary, the runs that made them) and ``learn.png`` under ``out``."""
    rows = summarize(cases)
    out = Path(out)
    write_json({"machine": machine(), "runs": runs, "arguments": runs[-1]["arguments"], "summary": rows,
                "cases": cases}, out / "learn.json")
    if any(r["capture_pooled"] is not None for r in rows):
        plot_capture(rows, out / "learn.png")
    return rows


def merge(paths: list[str], out) -> list[dict]:
    """One report from several: the cases of every file, the summary recomputed over all of them."""
    cases, runs = [], []
    for path in paths:
        try:
            report = json.loads(Path(path).read_text())
            cases += report["cases"]
            runs += report.get("runs", [{"machine": report["machine"], "arguments": report["arguments"]}])
        except (OSError, ValueError, KeyError) as error:
            raise InputError(f"{path} is not a bench learn record: {error}") from None
    return write_report(cases, out, runs)


def run(args):
    if args.merge:
        yield from merge(args.merge, args.out)
        return
    if args.seeds < 1 or args.jobs < 1 or min(args.budgets) < 1:
        raise InputError("--seeds, --jobs and every --budgets value must be >= 1")
    overrides = parse_overrides(args.set)
    try:  # an unknown field or a bad value fails here, before any run
        make_config("ppo", **overrides)
    except TypeError as error:
        raise InputError(f"--set: {error}") from None
    options = {"stocks": args.stocks, "days": args.days, "eval_steps": args.eval_steps,
               "sb3_steps": args.sb3_steps, "threads": args.threads, "overrides": overrides}
    cases = []
    todo = cases_of(args)
    with ProcessPoolExecutor(args.jobs) as pool:
        futures = [pool.submit(run_case, family, ic, seed, algo, sorted(args.budgets), **options)
                   for family, ic, seed, algo in todo]
        for future in futures:
            case = future.result()
            cases.append(case)
            yield {key: value for key, value in case.items() if key not in ("candidates",)} | machine()
    arguments = {k: v for k, v in vars(args).items() if k not in ("func", "merge")}
    yield from write_report(cases, args.out, [{"machine": machine(), "arguments": arguments}])
