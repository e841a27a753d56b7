"""Learning benchmark: does the learner capture an edge that is there?

``python -m finrl_tutorial bench learn`` trains on synthetic markets with a planted edge
(`finrl_tutorial.data.synthetic`): every signal family at its strengths (information coefficient,
``--ic``), every universe size (``--stocks``), K seeds each — seed k builds market k *and* seeds
the learner, so no two runs share a market. The yardstick is the **fraction of an oracle's excess
return over buy-and-hold captured** on the untouched test split, with full costs:

    capture = (R_agent − R_buy&hold) / (R_oracle − R_buy&hold),   R = cumulative test return,

against two yardsticks side by side: the *signal rule* (the market's own rule, equal weight in
every stock whose expected return is >= 0: a baseline that knows the sign, not a ceiling; a
learner can beat it; the records' plain ``oracle_*`` and ``capture*`` fields are against it) and the *informed* oracle, the best on validation of a
family of rules that know the truth and trade with full costs (top-k with a holding band,
mean-variance with a turnover penalty; `finrl_tutorial.backtest.oracle.informed_oracle`): a
ceiling in practice, so its capture is expected to stay below 1. Beside it, the same family chosen
on the training and validation splits together (``informed_oracle_train_valid``; the rules fit
nothing to returns, so four years choose among them with less noise than one).

The learning curve is read off one run per case: every validation of the trainer is a candidate
checkpoint; at a budget of B env steps the checkpoint reported is the one with the best
*validation* Sharpe among the candidates seen by then (``select="best"``) or the latest one
(``select="last"``). The test split chooses nothing. (The learning rate anneals over the whole
run, so a point at B < the largest budget is not the same as a run of budget B.) Budget 0 is the
untrained policy. Each candidate also carries the paired block-bootstrap interval of its test
Sharpe minus buy-and-hold's (`finrl_tutorial.metrics.sharpe_difference_ci`) and the training
seconds it took to reach it; the summary counts the markets where the agent beats buy-and-hold by
that interval, names the smallest ic at which it does in every market of a size
(`smallest_beating_ic`) and gives the informed capture per minute of training. ``--sb3-steps``
adds stable-baselines3's PPO with its defaults on the single `StockTradingEnv`, same market and
seed, when it is installed.

Writes ``learn.json`` (every case, every candidate, and the summary; rewritten after every case)
and ``learn.png`` to ``--out``, and one JSON line per case (then one per summary row) on stdout.
``--merge`` joins records (and gives a case from an older record the informed oracles it lacks).
"""
from __future__ import annotations

import json
import math
import statistics
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import torch
import matplotlib
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from ..agents import make_config
from ..atomic import save_figure, write_json
from ..backtest.oracle import excess_return, informed_oracle, oracle_record
from ..backtest.runner import agent_policy, buy_and_hold_baseline, run_policy
from ..data.synthetic import SIGNAL_FAMILIES, SyntheticSpec, make_synthetic
from ..envs import EnvConfig
from ..errors import InputError
from ..provenance import machine
from ..metrics import difference_verdict, sharpe_difference_ci
from ..training.trainer import initial_agent
from .common import checked_overrides, explicit_command, parse_overrides, train_and_follow  # noqa: F401 (parse_overrides: bench.learn.parse_overrides)
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
    parser.add_argument("--first-seed", type=int, default=0,
                        help="seed of the first market: markets FIRST .. FIRST+SEEDS-1 (e.g. 100 for markets "
                             "no record has used)")
    parser.add_argument("--algos", nargs="+", choices=("ppo", "a2c"), default=["ppo"])
    parser.add_argument("--budgets", type=int, nargs="+", default=[50_000, 100_000, 200_000, 300_000],
                        help="env steps at which the curve is read (the run lasts the largest)")
    parser.add_argument("--stocks", type=int, nargs="+", default=[10], help="universe sizes (stocks per market)")
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
    informed = informed_case(synthetic, env_config)
    informed_long = informed_case(synthetic, env_config, window="train+valid")

    def test_result(policy) -> dict:
        record = run_policy(policy, test, env_config)
        metrics = record.metrics()
        interval = sharpe_difference_ci(record.wealth, baseline.wealth)
        return {"test_excess": excess_return(record, baseline), "test_sharpe": metrics["sharpe_ratio"],
                "test_turnover": metrics["turnover"], "test_sharpe_difference": interval["difference"],
                "test_sharpe_difference_low": interval["low"], "test_sharpe_difference_high": interval["high"],
                "test_verdict": interval["verdict"]}

    config = make_config(algo, seed=seed, total_steps=max(budgets), **(overrides or {}))
    untrained = initial_agent(market.train, config, env_config)
    candidates = [{"env_steps": 0, "valid_sharpe": None, "train_seconds": 0.0, **test_result(agent_policy(untrained))}]
    eval_every = max(1, eval_steps // config.rollout_size)
    run = train_and_follow(market, config, env_config, eval_every=eval_every,
                           on_candidate=lambda event: test_result(agent_policy(event["agent"])))
    candidates += run.evaluations
    curve = {select: {str(b): read_curve(candidates[1:], b, select) for b in budgets} for select in SELECTIONS}
    for select in SELECTIONS:
        curve[select]["0"] = candidates[0]
    case = {"family": family, "ic": ic, "seed": seed, "algo": algo, "stocks": stocks, "days": days,
            "total_steps": config.total_steps,
            "oracle_excess": oracle_excess, "oracle_sharpe": oracle.metrics()["sharpe_ratio"],
            "informed_oracle": informed, "informed_oracle_train_valid": informed_long,
            "buy_and_hold_sharpe": baseline.metrics()["sharpe_ratio"], "wall_seconds": run.wall_seconds,
            "train_seconds": run.train_seconds,
            "config": {"algo": algo, **(overrides or {})}, "candidates": candidates, "curve": curve}
    if sb3_steps:
        case["sb3"] = _sb3_case(market, env_config, sb3_steps, seed, test_result)
    return case


def informed_case(synthetic, env_config: EnvConfig | None = None, window: str = "valid") -> dict:
    """The informed oracle of one market (`finrl_tutorial.backtest.oracle.informed_oracle`): the rule
    chosen on ``window`` (the validation split, or the training and validation splits), its excess
    there and on test, and every rule's score there (the ``valid_*`` fields hold the window's)."""
    env_config = env_config or EnvConfig()
    started = time.perf_counter()
    chosen = informed_oracle(synthetic, env_config, window=window)
    test = synthetic.market.test
    record = chosen.record(synthetic, "test", env_config)
    baseline = buy_and_hold_baseline(test, env_config)
    return {"rule": chosen.rule.name, "kind": chosen.rule.kind, "criterion": chosen.criterion, "window": window,
            "valid_excess": chosen.valid_excess, "valid_sharpe": chosen.sharpes[chosen.rule.name],
            "test_excess": excess_return(record, baseline), "test_sharpe": record.metrics()["sharpe_ratio"],
            "test_turnover": record.metrics()["turnover"], "best_of_kind": chosen.best_of_kind,
            "valid_scores": chosen.scores, "valid_sharpes": chosen.sharpes, "seconds": time.perf_counter() - started}


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
    """Per family, strength, universe, learner (a case run with ``--set`` overrides is a learner of its
    own: its row names them in ``overrides``), selection and budget: the capture of the signal rule's and
    of the informed oracle's excess (mean and spread over markets, and pooled: mean excess / mean
    oracle excess, steadier when an oracle's excess is small), how many markets the agent beats
    buy-and-hold in by the Sharpe interval, the training time to reach the budget and the
    informed capture per minute of it."""
    rows = []
    groups: dict[tuple, list[dict]] = {}
    for case in cases:  # runs of another length, or with other --set overrides, are another learner
        run_steps = case.get("total_steps", max(int(budget) for budget in case["curve"]["best"]))
        overrides = tuple(sorted((key, json.dumps(value)) for key, value in case.get("config", {}).items()
                                 if key != "algo"))
        groups.setdefault((case["family"], case["ic"], case.get("stocks", 10), case["algo"], run_steps, overrides),
                          []).append(case)
    for (family, ic, stocks, algo, run_steps, overrides), group in groups.items():
        changed = {key: json.loads(value) for key, value in overrides}
        oracle = [c["oracle_excess"] for c in group]
        informed, informed_long = ([c[key]["test_excess"] for c in group] if all(key in c for c in group) else None
                                   for key in ("informed_oracle", "informed_oracle_train_valid"))
        for select in SELECTIONS:
            for budget in sorted(group[0]["curve"][select], key=int):
                points = [c["curve"][select][budget] for c in group]
                seconds = [_seconds_to(c, int(budget)) for c in group]
                rows.append(_summary_row(family, ic, stocks, algo, select, int(budget), points, oracle, informed,
                                         informed_long, run_steps=run_steps,
                                         wall=statistics.fmean(c["wall_seconds"] for c in group),
                                         seconds=statistics.fmean(seconds) if None not in seconds else None)
                            | ({"overrides": changed} if changed else {}))
        sb3 = [c["sb3"] for c in group if "sb3" in c and "test_excess" in c["sb3"]]
        if sb3 and len(sb3) == len(group) and not changed:
            seconds = statistics.fmean(s["wall_seconds"] for s in sb3)
            rows.append(_summary_row(family, ic, stocks, "sb3_ppo", "last", sb3[0]["env_steps"], sb3, oracle, informed,
                                     informed_long, run_steps=sb3[0]["env_steps"], wall=seconds, seconds=seconds))
    return rows


def _seconds_to(case: dict, budget: int) -> float | None:
    """Training seconds until the last validation at or below ``budget`` (None in older records)."""
    seen = [c.get("train_seconds") for c in case["candidates"] if c["env_steps"] <= budget]
    return None if None in seen else max(seen)


def _spread_of(fractions: list[float]) -> dict:
    finite = [f for f in fractions if math.isfinite(f)]
    return {"mean": statistics.fmean(finite) if finite else None,
            "std": statistics.stdev(finite) if len(finite) > 1 else None,
            "min": min(finite) if finite else None, "max": max(finite) if finite else None,
            "values": [f if math.isfinite(f) else None for f in fractions]}


def _summary_row(family, ic, stocks, learner, select, budget, points, oracle, informed, informed_long=None, *,
                 run_steps, wall, seconds) -> dict:
    excess = [p["test_excess"] for p in points]
    simple = _spread_of([capture(e, o) for e, o in zip(excess, oracle)])
    mean_oracle = statistics.fmean(oracle)
    row = {"summary": True, "family": family, "ic": ic, "stocks": stocks, "learner": learner, "select": select,
           "env_steps": budget, "run_steps": run_steps, "seeds": len(excess),
           "capture_mean": simple["mean"], "capture_std": simple["std"],
           "capture_pooled": statistics.fmean(excess) / mean_oracle if mean_oracle > 1e-9 else None,
           "captures": simple["values"], "test_excess_mean": statistics.fmean(excess),
           "oracle_excess_mean": mean_oracle, "test_sharpe_mean": statistics.fmean(p["test_sharpe"] for p in points),
           "wall_seconds": wall, "train_seconds": seconds}
    if informed is not None:
        spread = _spread_of([capture(e, o) for e, o in zip(excess, informed)])
        mean_informed = statistics.fmean(informed)
        pooled = statistics.fmean(excess) / mean_informed if mean_informed > 1e-9 else None
        row |= {"informed_excess_mean": mean_informed, "informed_capture_pooled": pooled,
                "informed_capture_mean": spread["mean"], "informed_capture_std": spread["std"],
                "informed_capture_min": spread["min"], "informed_capture_max": spread["max"],
                "informed_captures": spread["values"],
                "informed_capture_per_minute": (pooled / (seconds / 60) if pooled is not None and seconds
                                                else None)}
    if informed_long is not None:  # the informed oracle chosen on the training and validation splits
        mean_long = statistics.fmean(informed_long)
        row |= {"informed_train_valid_excess_mean": mean_long,
                "informed_train_valid_capture_pooled": (statistics.fmean(excess) / mean_long
                                                        if mean_long > 1e-9 else None)}
    # recomputed from the interval where the point holds it (older points called every interval holding 0 a tie)
    verdicts = [difference_verdict(p["test_sharpe_difference_low"], p["test_sharpe_difference_high"])
                if "test_sharpe_difference_low" in p and "test_sharpe_difference_high" in p else p.get("test_verdict")
                for p in points]
    if None not in verdicts:
        row["beats_buy_and_hold"] = verdicts.count("beats")
        row["test_verdicts"] = verdicts
    return row


def smallest_beating_ic(rows: list[dict], select: str = "best", learner: str = "ppo",
                        family: str = "factor") -> dict[int, dict]:
    """Per universe size: the smallest ic at which the agent (at the largest budget) beats
    buy-and-hold by the Sharpe interval in *every* market of the cell (``all``) and in a majority
    (``majority``); None where no ic tried does; with the ics tried."""
    last: dict[tuple, dict] = {}
    for row in rows:
        if row["select"] != select or row["learner"] != learner or row["family"] != family \
                or "beats_buy_and_hold" not in row or row.get("overrides"):
            continue
        key = (row["stocks"], row["ic"])
        if key not in last or row["env_steps"] > last[key]["env_steps"]:
            last[key] = row
    out: dict[int, dict] = {}
    for (stocks, ic), row in sorted(last.items()):
        entry = out.setdefault(stocks, {"all": None, "majority": None, "tried": []})
        entry["tried"].append({"ic": ic, "beats": row["beats_buy_and_hold"], "markets": row["seeds"]})
        if entry["all"] is None and row["beats_buy_and_hold"] == row["seeds"]:
            entry["all"] = ic
        if entry["majority"] is None and 2 * row["beats_buy_and_hold"] > row["seeds"]:
            entry["majority"] = ic
    return out


CAPTURE_AXIS = {"informed_": (-0.5, 1.5), "": (-0.5, 3.0)}
"""`plot_capture`'s fixed y range per panel (by the summary's field prefix: the informed oracle, the
signal rule). Each holds buy-and-hold (0) and the panel's oracle (1); the signal rule's reaches 3
because an agent often earns twice that rule's excess. A pooled point beyond it is drawn at the edge
as a triangle with its value, never by widening the axis: a ratio over a near-zero oracle excess
(e.g. 32.9) would flatten every other line."""


def _mark_clipped(ax, points: list[tuple[float, float, str]], low: float, high: float) -> int:
    """Each ``(x, value, colour)`` outside ``[low, high]`` as a triangle at the edge it crosses, with
    its value beside it (toward the middle of the x axis; stacked where several share an x and an
    edge). How many were marked."""
    stacked: dict[tuple, int] = {}
    left, right = ax.get_xlim()
    for x, value, colour in points:
        if low <= value <= high:
            continue
        top = value > high
        order = stacked[(x, top)] = stacked.get((x, top), -1) + 1
        inward = 1 if x < (left + right) / 2 else -1
        ax.plot([x], [high if top else low], marker="^" if top else "v", color=colour, markersize=8,
                linestyle="none", clip_on=False, zorder=5)
        ax.annotate(f"{value:.1f}" if abs(value) >= 10 else f"{value:.2f}", (x, high if top else low),
                    xytext=(7 * inward, (-9 - 10 * order) if top else (9 + 10 * order)), textcoords="offset points",
                    fontsize="x-small", color=colour, ha="left" if inward > 0 else "right", va="center",
                    annotation_clip=False)
    return sum(stacked[key] + 1 for key in stacked)


def plot_capture(rows: list[dict], path, select: str = "best"):
    """Capture against the informed oracle (left) and the signal rule (right) vs env steps, one
    line per cell (family, ic, stocks) and learner: the pooled capture (ratio of the markets' mean
    excesses), on a fixed y range per panel (`CAPTURE_AXIS`) with buy-and-hold (0) and the oracle (1)
    marked; a point beyond the range is a triangle at the edge with its value. Single markets are
    not drawn: they spread far beyond any range that shows the pooled lines. One legend below both
    panels (a cell keeps its colour in both), naming any cell a panel cannot draw. The control
    market, with no excess to capture, is left out."""
    def label_of(row: dict) -> str:
        changed = "".join(f" {key}={value}" for key, value in row.get("overrides", {}).items())
        return (f"{row['learner']}{changed} {row['family']} ic {row['ic']:g}, {row.get('stocks', 10)} stocks "
                f"({row['seeds']} markets, {row['run_steps']:,} steps)")

    # one colour per cell in both panels, even where a panel has no point for it
    labels = sorted({label_of(row) for row in rows if row["select"] == select and row["learner"] != "sb3_ppo"})
    palette = matplotlib.rcParams["axes.prop_cycle"].by_key()["color"]
    colours = {label: palette[i % len(palette)] for i, label in enumerate(labels)}
    fig = Figure(figsize=(12, 4.4 + 0.2 * math.ceil((len(labels) + 2) / 2)), layout="constrained")
    axes = fig.subplots(1, 2, sharey=False)
    not_drawn: dict[str, list[str]] = {}
    for ax, (prefix, title) in zip(axes, [("informed_", "informed oracle"), ("", "signal rule")]):
        low, high = CAPTURE_AXIS[prefix]
        curves: dict[str, dict[int, float]] = {}
        for row in rows:
            pooled = row.get(f"{prefix}capture_pooled")
            if row["select"] != select or row["learner"] == "sb3_ppo" or pooled is None:
                continue
            curves.setdefault(label_of(row), {})[row["env_steps"]] = pooled
        clipped = []
        for label, points in sorted(curves.items()):
            steps = sorted(points)
            inside = [points[s] if low <= points[s] <= high else math.nan for s in steps]  # broken where it leaves
            ax.plot(steps, inside, marker="o", markersize=3.5, color=colours[label],
                    linestyle="-" if label.startswith("ppo") else "--")
            clipped += [(s, points[s], colours[label]) for s in steps]
        for label in labels:
            if label not in curves:  # say which cells this panel cannot draw, rather than drop them silently
                not_drawn.setdefault(label, []).append(title)
        ax.axhline(1.0, color="black", linewidth=0.8, linestyle=":")
        ax.axhline(0.0, color="grey", linewidth=0.8)
        ax.set_ylim(low, high)
        beyond = _mark_clipped(ax, clipped, low, high)
        ax.set_xlabel("env steps")
        ax.set_ylabel(f"{title}'s excess return captured (test)")
        ax.set_title(f"against the {title}: 1 = all of its excess, 0 = buy-and-hold's"
                     + (f"\n{beyond} point{'s' if beyond > 1 else ''} beyond the axis: ▲/▼ at the edge, with the value"
                        if beyond else ""), fontsize="small")
        ax.grid(alpha=0.3)
    handles = [Line2D([], [], color=colours[label], marker="o", markersize=3.5,
                      linestyle="-" if label.startswith("ppo") else "--") for label in labels]
    names = [label + (f": not drawn, the {' and the '.join(not_drawn[label])} made no pooled excess there (no capture)"
                      if label in not_drawn else "") for label in labels]
    handles += [Line2D([], [], color="black", linewidth=0.8, linestyle=":"),
                Line2D([], [], color="grey", linewidth=0.8)]
    names += ["the panel's oracle (1)", "buy-and-hold (0)"]
    fig.legend(handles, names, loc="outside lower center", ncols=2, fontsize="x-small", frameon=False)
    if path is not None:
        save_figure(fig, path)
    return fig


def cases_of(args) -> list[tuple]:
    strengths = {family: (args.ic if args.ic is not None else [DEFAULT_STRENGTHS[family]]) for family in args.families}
    return [(family, ic, stocks, seed, algo) for family in args.families for stocks in args.stocks
            for ic in strengths[family] for algo in args.algos
            for seed in range(args.first_seed, args.first_seed + args.seeds)]


SET_BY_THE_BENCHMARK = ("seed", "total_steps")
"""Config fields ``bench learn`` sets itself (the seed of each market, the largest budget): ``--set`` refuses them."""


def check_arguments(args) -> dict:
    """The ``--set`` overrides, after every check that can fail before a run starts (one line each)."""
    if args.seeds < 1 or args.jobs < 1 or min(args.budgets) < 1:
        raise InputError("--seeds, --jobs and every --budgets value must be >= 1")
    if args.first_seed < 0:
        raise InputError(f"--first-seed must be >= 0, got {args.first_seed}")
    overrides, configs = checked_overrides(args.set, args.algos, SET_BY_THE_BENCHMARK,
                                           "bench learn sets these itself (the seed is the market's, "
                                           "total_steps the largest --budgets): use --seeds and --budgets")
    for algo, config in configs.items():
        if min(args.budgets) < config.rollout_size:
            raise InputError(f"--budgets {min(args.budgets):,} is below one {algo} rollout of {config.rollout_size:,} "
                             f"env steps (num_envs {config.num_envs} × horizon_len {config.horizon_len}): give "
                             "budgets of at least one rollout")
    for stocks in args.stocks:
        for ic in args.ic or [0.1]:
            try:
                SyntheticSpec(num_stocks=stocks, num_days=args.days, ic=ic)
            except ValueError as error:
                raise InputError(f"--stocks/--days/--ic: {error}") from None
    return overrides


def write_report(cases: list[dict], out, runs: list[dict]) -> list[dict]:
    """``learn.json`` (cases, summary, the smallest ic that beats buy-and-hold per universe, the runs
    that made them) and ``learn.png`` under ``out``."""
    rows = summarize(cases)
    out = Path(out)
    write_json({"machine": machine(), "runs": runs, "arguments": runs[-1]["arguments"], "summary": rows,
                "smallest_beating_ic": {str(k): v for k, v in smallest_beating_ic(rows).items()},
                "cases": cases}, out / "learn.json")
    if any(r["capture_pooled"] is not None for r in rows):
        plot_capture(rows, out / "learn.png")
    return rows


def _rebuilt_informed_case(key: tuple, window: str) -> dict:
    torch.set_num_threads(1)
    spec = SyntheticSpec(family=key[0], ic=key[1], seed=key[2], num_stocks=key[3], num_days=key[4])
    return informed_case(make_synthetic(spec), window=window)


def merge(paths: list[str], out, jobs: int = 1) -> list[dict]:
    """One report from several: the cases of every file, the summary recomputed over all of them.
    A case from an older record without an informed oracle gets it (chosen on its market's
    validation split, or on its training and validation splits, as in `run_case`; the market is
    rebuilt from its spec; ``jobs`` processes)."""
    cases, runs = [], []
    for path in paths:
        try:
            report = json.loads(Path(path).read_text())
            cases += report["cases"]
            runs += report.get("runs", [{"machine": report["machine"], "arguments": report["arguments"]}])
        except (OSError, ValueError, KeyError) as error:
            raise InputError(f"{path} is not a bench learn record: {error}") from None
    missing = {}  # (field, market key) -> the future of its oracle: older records lack one or both
    with ProcessPoolExecutor(jobs) as pool:
        for case in cases:
            key = (case["family"], case["ic"], case["seed"], case.get("stocks", 10), case["days"])
            for field, window in (("informed_oracle", "valid"), ("informed_oracle_train_valid", "train+valid")):
                if field not in case and (field, key) not in missing:
                    missing[field, key] = pool.submit(_rebuilt_informed_case, key, window)
        for case in cases:
            key = (case["family"], case["ic"], case["seed"], case.get("stocks", 10), case["days"])
            for field in ("informed_oracle", "informed_oracle_train_valid"):
                if field not in case:
                    case[field] = missing[field, key].result()
    return write_report(cases, out, runs)


def run(args):
    if args.merge:
        yield from merge(args.merge, args.out, args.jobs)
        return
    overrides = check_arguments(args)
    options = {"days": args.days, "eval_steps": args.eval_steps,
               "sb3_steps": args.sb3_steps, "threads": args.threads, "overrides": overrides}
    cases = []
    todo = cases_of(args)
    arguments = {k: v for k, v in vars(args).items() if k not in ("func", "merge")}
    runs = [{"machine": machine(), "arguments": arguments, "command": explicit_command(args, add_arguments)}]
    with ProcessPoolExecutor(args.jobs) as pool:
        futures = [pool.submit(run_case, family, ic, seed, algo, sorted(args.budgets), stocks=stocks, **options)
                   for family, ic, stocks, seed, algo in todo]
        for future in futures:
            case = future.result()
            cases.append(case)
            write_report(cases, args.out, runs)  # after every case: a run stopped early keeps what it measured
            yield {key: value for key, value in case.items() if key not in ("candidates",)} | machine()
    yield from write_report(cases, args.out, runs)
