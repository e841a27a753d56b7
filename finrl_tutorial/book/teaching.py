"""Small readings the first chapters teach with: like-with-like comparisons of stored records,
their intervals and a multiple-comparison correction, and how far a trained agent moved from the
untrained one.

Each function reads numbers a chapter has in hand (a record, two agents, two weight tables) and
returns a table or a number; none trains or measures anything itself.
"""
from __future__ import annotations

import math
import re
import shlex
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
import torch

__all__ = ["t_interval", "holm", "chance_of_no_overlap", "paired_captures", "sweep_comparisons",
           "parameter_distance", "portfolio_distance", "walkforward_table", "walkforward_checkpoints",
           "walkforward_verdicts", "realistic_learning_table", "budget_table", "informed_oracle_table",  "overfitting_table", "pbo_example", "reader_command", "paired_by_family", "differences_by_family",
           "signal_rule_comparison", "capture_gaps", "capture_gaps_text",
           "undefined_captures"]


def t_interval(values: Sequence[float], level: float = 0.95) -> dict:
    """Mean of ``values`` with its Student-t interval (``n - 1`` degrees of freedom): the interval a
    mean of a few independent draws (markets, seeds) supports. ``n < 2`` gives no interval (NaN)."""
    from scipy import stats  # here, not at the top: `import finrl_tutorial` stays quick for the CLI

    x = np.asarray([v for v in values if v is not None and math.isfinite(v)], dtype=float)
    n = len(x)
    mean = float(x.mean()) if n else math.nan
    if n < 2:
        return {"mean": mean, "low": math.nan, "high": math.nan, "n": n, "level": level}
    half = float(stats.t.ppf(0.5 + level / 2, n - 1) * x.std(ddof=1) / math.sqrt(n))
    return {"mean": mean, "low": mean - half, "high": mean + half, "n": n, "level": level}


def holm(p_values: Mapping[str, float] | Sequence[float]) -> pd.Series:
    """Holm's step-down adjustment of a family of p-values (Holm 1979): the k-th smallest is
    multiplied by ``m - k + 1`` and the results are made non-decreasing, capped at 1. A comparison
    whose adjusted p-value is below the level keeps the family-wise error rate at that level, over
    all ``m`` comparisons together. Returns the adjusted values in the input's order."""
    p = pd.Series(p_values, dtype=float)
    m = len(p)
    ranked = p.sort_values()
    adjusted = (ranked * (m - np.arange(m))).cummax().clip(upper=1.0)
    return adjusted.reindex(p.index)


def chance_of_no_overlap(seeds: int) -> float:
    """Probability that ``seeds`` draws of a variant all lie above, or all below, ``seeds`` draws of
    the base when both come from the same distribution (no effect at all): 2 of the C(2n, n) equally
    likely orderings. For 3 seeds each, 2 / 20 = 10 % per comparison."""
    return 2 / math.comb(2 * seeds, seeds)


def _captures(learn: dict, learner: str, run_steps: int, select: str) -> dict[str, list]:
    rows = [row for row in learn["summary"] if row["learner"] == learner and row["run_steps"] == run_steps
            and row["env_steps"] == run_steps and row["select"] == select]
    return {row["family"]: row["captures"] for row in rows}


def paired_captures(learn: dict, a: tuple[str, int, str], b: tuple[str, int, str]) -> pd.DataFrame:
    """Oracle capture of two learners on the markets **both** ran, market by market, from a
    ``bench learn`` record. ``a`` and ``b`` are ``(learner, run_steps, select)``, e.g.
    ``("ppo", 300_000, "best")``. A summary row's ``captures`` are listed by market seed, so market
    ``i`` of one learner is the very market ``i`` of the other. Markets where either capture is
    undefined (the oracle found no excess there) are left out. Columns: family, market, a, b,
    difference (a - b)."""
    first, second = _captures(learn, *a), _captures(learn, *b)
    rows = []
    for family in [f for f in first if f in second]:
        for market, (x, y) in enumerate(zip(first[family], second[family])):  # zip: the common markets
            if x is not None and y is not None:
                rows.append({"family": family, "market": market, a[0]: x, b[0]: y, "difference": x - y})
    return pd.DataFrame(rows, columns=["family", "market", a[0], b[0], "difference"])


def sweep_comparisons(record: dict, measures: Sequence[str] = ("final_valid_sharpe", "best_valid_sharpe"),
                      level: float = 0.05) -> pd.DataFrame:
    """Every variant of a ``bench sweep`` record against the base, per market and measure, paired by
    seed (the same seed is the same initial network and, on a synthetic market, the same market):
    the mean paired difference, the non-overlap verdict (`finrl_tutorial.bench.sweep.verdict`,
    recomputed from the seeds' values: older records stored "tie" where the ranges overlap), the
    paired t-test's p-value and its Holm adjustment over **all** the comparisons of the table.
    ``holm_verdict`` is "higher" or "lower" only where the adjusted p-value is below ``level``, else
    "inconclusive" (a p-value above the level is no evidence of equality: these differences have no
    equivalence margin, so nothing here is called a tie)."""
    from scipy import stats  # here, not at the top: `import finrl_tutorial` stays quick for the CLI

    from ..bench.sweep import verdict

    values = {(run["market"], run["variant"], run["seed"], measure): run[measure]
              for run in record["runs"] for measure in measures}
    base = record.get("base_variant", "base")
    rows = []
    for row in record["summary"]:
        if row["variant"] == base:
            continue
        for measure in measures:
            seeds = [s for s in row["seeds"] if (row["market"], base, s, measure) in values]
            variant = np.array([values[(row["market"], row["variant"], s, measure)] for s in seeds])
            reference = np.array([values[(row["market"], base, s, measure)] for s in seeds])
            difference = variant - reference
            p = float(stats.ttest_rel(variant, reference).pvalue) if len(seeds) > 1 and difference.std() > 0 \
                else 1.0
            base_values = [value for (market, variant_name, _, m), value in values.items()
                           if market == row["market"] and variant_name == base and m == measure]
            non_overlap = (verdict([values[(row["market"], row["variant"], s, measure)] for s in row["seeds"]],
                                   base_values) if f"{measure}_vs_base" in row else "n/a")
            rows.append({"market": row["market"], "variant": row["variant"], "measure": measure,
                         "seeds": len(seeds), "mean difference": float(difference.mean()),
                         "non-overlap verdict": non_overlap, "p (paired t)": p})
    table = pd.DataFrame(rows)
    table["p (Holm)"] = holm(table["p (paired t)"].tolist()).to_numpy()
    table["holm_verdict"] = np.where(table["p (Holm)"] < level,
                                     np.where(table["mean difference"] > 0, "higher", "lower"), "inconclusive")
    return table


def parameter_distance(agent: torch.nn.Module, reference: torch.nn.Module) -> float:
    """Relative distance of two networks of the same shape: ``||θ - θ_ref|| / ||θ_ref||`` over all
    parameters together (0 = the same network)."""
    ours = torch.cat([p.detach().flatten().double() for p in agent.parameters()])
    theirs = torch.cat([p.detach().flatten().double() for p in reference.parameters()])
    if ours.shape != theirs.shape:
        raise ValueError(f"networks of different sizes: {ours.numel()} and {theirs.numel()} parameters")
    return float((ours - theirs).norm() / theirs.norm())


def portfolio_distance(weights: pd.DataFrame, reference: pd.DataFrame) -> float:
    """Mean over days of the share of wealth two portfolios hold differently: half the L1 distance of
    their weights, cash included (1 - the stocks' sum). 0 = the same portfolio every day, 1 = nothing
    in common."""
    if list(weights.columns) != list(reference.columns) or len(weights) != len(reference):
        raise ValueError("the two weight tables must cover the same days and stocks")
    a, b = weights.to_numpy(dtype=float), reference.to_numpy(dtype=float)
    cash = np.abs((1 - a.sum(axis=1)) - (1 - b.sum(axis=1)))
    return float(((np.abs(a - b).sum(axis=1) + cash) / 2).mean())


# --------------------------------------------------------------------------- the yardsticks of chapters 1 and 2
#
# Readings of the stored records `bench_walkforward.json` (sse15, one test year after another),
# `bench_learn.json` / `bench_learn_realistic.json` (planted edges against their oracles) and the
# ``overfitting`` part of `bench_sweep.json` (what choosing the best checkpoint is worth).

def _verdict(ci: Mapping, margin: float | None) -> str:
    """The verdict of a stored Sharpe-difference interval, recomputed from its bounds
    (`finrl_tutorial.metrics.stored_verdict`; the records' own strings predate the tie margin)."""
    from ..metrics import stored_verdict

    return stored_verdict(ci, margin)


def points(value: float) -> str:
    """A difference of two returns (fractions) in percentage points, signed, one decimal: 0.283 → ``+28.3``.
    A return is a percentage; the difference of two is written in points, so that "+28.3 points" is never
    read as 28.3 % more than the other return."""
    return f"{100 * value:+.1f}"


def p_value(p: float) -> str:
    """A p-value for a table: three decimals, and ``< 0.001`` below that, so that a p of 0.0004 is
    not shown as 0.000 nor one of 0.0006 as 0.001; empty for a missing value."""
    if p != p:  # NaN
        return ""
    return "< 0.001" if p < 0.001 else f"{p:.3f}"


def points_text(test: Mapping, mean: str = "mean") -> str:
    """A paired difference with its interval in points: ``+28.3 points [+12.2, +44.5]`` (``test``: a
    `t_interval`-like mapping with ``low`` and ``high`` and the mean under ``mean``)."""
    return f"{points(test[mean])} points [{points(test['low'])}, {points(test['high'])}]"


def _interval_text(ci: Mapping) -> str:
    return f"{ci['difference']:+.2f} [{ci['low']:+.2f}, {ci['high']:+.2f}]"


def walkforward_table(record: Mapping, margin: float | None = None) -> pd.DataFrame:
    """One row per test year of a ``bench walkforward`` record, then the pooled row: the years
    trained on and validated on, equal-weight buy-and-hold's return and Sharpe that year, the
    agent's test Sharpe (mean ± std over seeds), the untrained agent's, and the paired
    block-bootstrap interval of each against equal-weight buy-and-hold with its verdict, recomputed
    from the interval with the tie margin ``margin`` (None: the interval's own, else
    `finrl_tutorial.metrics.TIE_MARGIN`)."""
    years = record["summary"]["years"]
    rows = []
    for row in years:
        agent, untrained = row["agent"]["sharpe_ratio"], row["untrained_agent"]["sharpe_ratio"]
        hold = row["equal_weight_buy_and_hold"]
        ci, ci_untrained = row["intervals"]["agent_vs_equal_weight"], row["intervals"]["untrained_vs_equal_weight"]
        rows.append({
            "test year": str(row["year"]),
            "trained on": "-".join(sorted({row["splits"]["train"][0][:4], row["splits"]["train"][1][:4]})),
            "validated on": row["splits"]["valid"][0][:4],
            "buy-and-hold return": f"{hold['cumulative_return']['mean']:+.1%}",
            "buy-and-hold Sharpe": f"{hold['sharpe_ratio']['mean']:.2f}",
            "agent Sharpe (seeds)": f"{agent['mean']:.2f} ± {agent['std']:.2f}",
            "untrained Sharpe": f"{untrained['mean']:.2f}",
            "agent − buy-and-hold [95 %]": _interval_text(ci), "agent verdict": _verdict(ci, margin),
            "untrained − buy-and-hold [95 %]": _interval_text(ci_untrained),
            "untrained verdict": _verdict(ci_untrained, margin),
        })
    pooled = record["summary"].get("pooled")
    if pooled:
        ci, ci_untrained = pooled["intervals"]["agent_vs_equal_weight"], pooled["intervals"]["untrained_vs_equal_weight"]
        rows.append({"test year": f"pooled ({pooled['days']} days)", "trained on": "", "validated on": "",
                     "buy-and-hold return": "", "buy-and-hold Sharpe": "", "agent Sharpe (seeds)": "",
                     "untrained Sharpe": "",
                     "agent − buy-and-hold [95 %]": _interval_text(ci), "agent verdict": _verdict(ci, margin),
                     "untrained − buy-and-hold [95 %]": _interval_text(ci_untrained),
                     "untrained verdict": _verdict(ci_untrained, margin)})
    return pd.DataFrame(rows).set_index("test year")


def walkforward_checkpoints(record: Mapping) -> dict:
    """Where validation chose each run's checkpoint in a ``bench walkforward`` record: how many of
    the runs kept their first validation (after one update), the number of runs, of validations
    per run, and the env-steps of each chosen checkpoint by (year, seed)."""
    chosen = {}
    for run in record["runs"]:
        best = max(run["validations"], key=lambda evaluation: evaluation["valid_sharpe"])
        chosen[(run["year"], run["seed"])] = best["env_steps"]
    first = {run["validations"][0]["env_steps"] for run in record["runs"]}
    return {"runs": len(chosen), "at_first_validation": sum(steps in first for steps in chosen.values()),
            "validations_per_run": sorted({len(run["validations"]) for run in record["runs"]}),
            "first_validation_env_steps": min(first), "total_steps": record["total_steps"], "chosen": chosen}


def walkforward_verdicts(record: Mapping, key: str = "agent_vs_equal_weight",
                         margin: float | None = None) -> dict[str, str]:
    """The verdict of interval ``key`` per test year and pooled, ``{"2017": "inconclusive", ...,
    "pooled": "tie"}``: recomputed from each stored interval's bounds with the tie margin
    ``margin`` (None: the interval's own, else `finrl_tutorial.metrics.TIE_MARGIN`), never read
    from the record's verdict string (written when every interval containing 0 was a tie)."""
    verdicts = {str(row["year"]): _verdict(row["intervals"][key], margin) for row in record["summary"]["years"]}
    if "pooled" in record["summary"]:
        verdicts["pooled"] = _verdict(record["summary"]["pooled"]["intervals"][key], margin)
    return verdicts


def _full_budget_rows(summary: Sequence[Mapping], select: str) -> list[Mapping]:
    return [row for row in summary if row["select"] == select and row["env_steps"] == row["run_steps"]
            and row["learner"] != "sb3_ppo"]


def realistic_learning_table(record: Mapping, select: str = "best", run_steps: int | None = None) -> pd.DataFrame:
    """One row per (ic, stocks, learner) cell of a realistic ``bench learn`` record at the full
    budget of its runs, checkpoint chosen by ``select``: markets that finished, the capture of the
    informed oracle per market and pooled, the capture of the signal rule (pooled; the market's own
    rule, equal weight in every stock whose expected return is >= 0), how many markets the agent beat
    buy-and-hold on by its interval, and the informed oracle's and the signal rule's mean test excess.
    A cell run at several lengths (``bench learn`` keeps runs of another length apart: their
    learning-rate schedules differ) is read at ``run_steps`` (default: the package's default
    budget, `PPOConfig.total_steps`); `budget_table` shows all of them."""
    if run_steps is None:
        from ..agents import PPOConfig

        run_steps = PPOConfig().total_steps
    rows = []
    full = _full_budget_rows(record["summary"], select)
    lengths: dict[tuple, set] = {}
    for row in full:
        lengths.setdefault((row["ic"], row.get("stocks", 10), row["learner"]), set()).add(row["run_steps"])
    for row in full:
        if len(lengths[(row["ic"], row.get("stocks", 10), row["learner"])]) > 1 and row["run_steps"] != run_steps:
            continue
        rows.append({
            "ic": row["ic"], "stocks": row.get("stocks", 10), "learner": row["learner"],
            "markets": row["seeds"], "env-steps": row["run_steps"],
            "informed oracle captured, per market": ", ".join(f"{v:.2f}" for v in row.get("informed_captures", [])
                                                              if v is not None),
            "informed oracle captured (pooled)": row.get("informed_capture_pooled"),
            **({"chosen on 4 years: captured (pooled)": row["informed_train_valid_capture_pooled"]}
               if "informed_train_valid_excess_mean" in row else {}),
            "signal rule captured (pooled)": row["capture_pooled"],
            "beats buy-and-hold": f"{row['beats_buy_and_hold']} of {row['seeds']}",
            "agent excess": row["test_excess_mean"], "informed oracle excess": row.get("informed_excess_mean"),
            **({"chosen on 4 years: excess": row["informed_train_valid_excess_mean"]}
               if "informed_train_valid_excess_mean" in row else {}),
            "signal rule excess": row["oracle_excess_mean"],
        })
    return pd.DataFrame(rows).set_index(["ic", "stocks", "learner"])


def budget_table(record: Mapping, ic: float, stocks: int, learner: str = "ppo", select: str = "best") -> pd.DataFrame:
    """One cell of a ``bench learn`` record read at every budget of every run length it holds: one
    row per (run length, env-steps) with the pooled capture of the informed oracle, its lowest and
    highest market, the markets where the agent beat buy-and-hold by its interval, the agent's mean
    test excess and the mean training minutes to that budget."""
    rows = [{"run length": row["run_steps"], "env-steps": row["env_steps"], "markets": row["seeds"],
             "informed oracle captured (pooled)": row.get("informed_capture_pooled"),
             "lowest market": row.get("informed_capture_min"), "highest market": row.get("informed_capture_max"),
             "beats buy-and-hold": f"{row['beats_buy_and_hold']} of {row['seeds']}",
             "agent excess": row["test_excess_mean"],
             "training minutes": None if row.get("train_seconds") is None else row["train_seconds"] / 60}
            for row in record["summary"]
            if row["select"] == select and row["learner"] == learner and row["ic"] == ic
            and row.get("stocks", 10) == stocks and row["env_steps"] > 0]
    if not rows:
        raise ValueError(f"the record has no {learner} cell at ic {ic:g} with {stocks} stocks")
    return pd.DataFrame(rows).sort_values(["run length", "env-steps"]).set_index(["run length", "env-steps"])


def informed_oracle_table(record: Mapping) -> pd.DataFrame:
    """The oracles of a realistic ``bench learn`` record, one row per market (whether or not an
    agent finished there): the informed rule chosen on validation, its validation and test excess
    over buy-and-hold, the rule chosen on the training and validation splits together (four years)
    and its test excess where the record holds it, and the signal rule's test excess."""
    rows = [{"ic": m["ic"], "stocks": m["stocks"], "market (seed)": m["seed"], "informed rule (chosen on validation)":
             m["informed_rule"], "informed valid excess": m["informed_valid_excess"],
             "informed test excess": m["informed_test_excess"],
             **({"rule chosen on 4 years": m["train_valid_rule"], "its test excess": m["train_valid_test_excess"]}
                if "train_valid_rule" in m else {}),
             "signal rule test excess": m["simple_oracle_test_excess"]}
            for m in record["oracles"]["markets"]]
    return pd.DataFrame(rows).sort_values(["ic", "stocks", "market (seed)"]).set_index(["ic", "stocks", "market (seed)"])


def overfitting_table(sweep: Mapping) -> pd.DataFrame:
    """The ``overfitting`` part of a ``bench sweep`` record, one row per market: the trials the best
    was chosen from, the chosen checkpoint, its validation Sharpe against the Sharpe the best of that
    many unskilled trials reaches by luck (expected maximum), the deflated Sharpe ratio (a
    probability: ≥ 0.95 is significant), the same with one trial per training run, and PBO where
    the record holds the daily returns CSCV needs."""
    rows = []
    for entry in sweep["overfitting"]:
        deflated, per_run = entry["deflated"], entry["deflated_one_trial_per_run"]
        market = entry["market"] if entry.get("market_seed") is None else f"{entry['market']} (market {entry['market_seed']})"
        rows.append({
            "market": market, "trials (checkpoints)": entry["trials"], "runs": entry["runs"],
            "validation days": entry["days"],
            "chosen": f"{entry['selected']['variant']}, seed {entry['selected']['seed']}, "
                      f"{entry['selected']['env_steps']:,} env-steps",
            "chosen valid Sharpe": deflated["sharpe"], "buy-and-hold valid Sharpe": entry["buy_and_hold_valid_sharpe"],
            "best of N by luck (expected)": deflated["expected_max_sharpe"],
            "deflated Sharpe": deflated["deflated_sharpe"],
            "deflated, one trial per run": per_run["deflated_sharpe"],
            "PBO": entry["pbo"]["pbo"] if entry.get("pbo") else None,
        })
    return pd.DataFrame(rows).set_index("market")


def noise_family(trials: int, days: int, seed: int) -> np.ndarray:
    """``days`` × ``trials`` daily returns of pure noise (mean 0, daily volatility 1 %) from seed
    ``seed``: the family of `pbo_example` and of each draw of `best_of_noise`."""
    return np.random.default_rng(seed).normal(0.0, 0.01, size=(days, trials))


def pbo_example(trials: int = 20, days: int = 750, edge_sharpe: float = 2.0, slices: int = 16, seed: int = 0) -> dict:
    """PBO by CSCV on two families of ``trials`` daily-return series over ``days`` days, computed
    here (well under a second): pure noise (no trial has an edge: the in-sample best is a coin toss
    out of sample, PBO near 0.5) and the same noise with one trial given a true annualised Sharpe of
    ``edge_sharpe`` (PBO near 0). Daily volatility 1 %. Returns both results of
    `finrl_tutorial.metrics.probability_of_backtest_overfitting` (without the per-combination lists)
    and the inputs."""
    from ..metrics import (PERIODS_PER_YEAR, deflated_sharpe_ratio, probability_of_backtest_overfitting,
                           return_moments)

    noise = noise_family(trials, days, seed)
    with_edge = noise.copy()
    with_edge[:, 0] += edge_sharpe / math.sqrt(PERIODS_PER_YEAR) * 0.01  # mean / std = edge_sharpe / √252
    keep = ("pbo", "degradation", "probability_of_loss", "combinations", "slices", "trials", "periods")
    results = {}
    for name, matrix in (("noise", noise), ("one edge", with_edge)):
        result = {k: v for k, v in probability_of_backtest_overfitting(matrix, slices=slices).items() if k in keep}
        # the best trial over the whole period, and what that choice is worth once deflated for N trials
        sharpes = [return_moments(matrix[:, k])["sharpe"] for k in range(trials)]
        best = int(np.argmax(sharpes))
        deflated = deflated_sharpe_ratio(matrix[:, best], sharpes)
        result.update(best_trial=best, best_sharpe=sharpes[best], deflated_sharpe=deflated["deflated_sharpe"],
                      expected_max_sharpe=deflated["expected_max_sharpe"])
        results[name] = result
    return {"trials": trials, "days": days, "edge_sharpe": edge_sharpe, "seed": seed, **results}


def listed(items: Sequence[str]) -> str:
    """Words joined as a sentence lists them: ``a``, ``a and b``, ``a, b and c``."""
    items = list(items)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


#: The first day the package's PPO defaults were the default learner (the market baseline, the pathwise
#: part and GAE λ 0.2 of chapter 3); a record made before it ran the plain learner (glossary: plain and
#: default learner), unless its stored config says otherwise.
DEFAULT_LEARNER_FROM = "2026-12-06"
#: The plain learner's settings, as `train` takes them and as `bench learn` / `bench walkforward` take them.
PLAIN_LEARNER_FLAGS = ("--gae-lambda", "0.95", "--no-market-baseline", "--no-pathwise")
PLAIN_LEARNER_SET = ("--set", "gae_lambda=0.95", "market_baseline=false", "pathwise=false")


def ran_plain_learner(record: Mapping) -> bool:
    """Whether the stored ``record`` ran the plain learner: from the PPO config it stores where that
    names the baselines (both off), else from its date (before `DEFAULT_LEARNER_FROM`)."""
    config = record.get("config") or record.get("base_config") or {}  # base_config: a sweep record's
    if "pathwise" in config or "market_baseline" in config:
        return not config.get("pathwise") and not config.get("market_baseline")
    date = str(record.get("date") or (record.get("machine") or {}).get("date", ""))[:10]
    return bool(date) and date < DEFAULT_LEARNER_FROM


def reader_command(command: str, out: str | None = None,
                   drop: Sequence[str] = ("--merge", "--resume", "--variants"), plain: bool = False) -> str:
    """A command from a record as a reader would run it: the first command of a chain
    (``a && b``), without the options in ``drop`` (and their values), and with ``--out`` set to
    ``out`` — or, without ``out``, the stored ``--out`` kept unless it was a temporary,
    machine-specific path (absolute, e.g. under ``/tmp``), which becomes ``runs/<its name>``. So no
    temporary folder appears on the page; the options that decide what is measured stay as recorded.
    With ``plain`` (a record of the plain learner, `ran_plain_learner`), a `train`, `bench learn`,
    `bench walkforward` or `bench sweep` command also gets the plain learner's settings, so that it
    makes that record again with the package as installed."""
    words = shlex.split(command.split("&&")[0])
    drop = tuple(drop) + (("--out",) if out is not None else ())  # then one --out, at the end
    kept, skipping = [], False
    for word in words:
        if word.startswith("--"):
            skipping = word in drop
        elif not skipping and kept and kept[-1] == "--out" and word.startswith("/"):
            name = re.sub(r"[^\w.-]", "_", word.rstrip("/").rsplit("/", 1)[-1])
            stem, dot, suffix = name.partition(".")
            # a scratch name's revision marks (peers_new, scale_quiet2) say nothing to a reader
            word = "runs/" + (re.sub(r"(_new|_old|(?<=[a-z])[2-9])$", "", stem) or stem) + dot + suffix
        if not skipping:
            kept.append(word)
    if plain and "train" in kept[:4]:
        kept += PLAIN_LEARNER_FLAGS
    elif plain and "bench" in kept[:4] and any(kind in kept[:5] for kind in ("learn", "walkforward", "sweep")) \
            and "--set" not in kept:
        algos = kept[kept.index("--algos") + 1:] if "--algos" in kept else ["ppo"]
        algos = algos[:next((i for i, word in enumerate(algos) if word.startswith("--")), len(algos))]
        # A2C keeps its own λ (1) in both learners: only the baselines differ
        kept += PLAIN_LEARNER_SET if algos != ["a2c"] else [w for w in PLAIN_LEARNER_SET if not w.startswith("gae_lambda")]
    return shlex.join(kept + (["--out", out] if out is not None else []))


def paired_by_family(learn: Mapping, comparisons: Mapping[str, tuple[tuple, tuple]], level: float = 0.05) -> pd.DataFrame:
    """Learner against learner on the markets both ran, in oracle capture: ``comparisons`` maps a
    name to the ``(a, b)`` pair of `paired_captures`; the table is `differences_by_family` of those
    pairs. A capture is a ratio (undefined where the signal rule made no excess, heavy-tailed where
    that excess is small): chapter 3.8 tests excess returns instead (`differences_by_family` of
    `finrl_tutorial.book.learning.paired_excess`)."""
    return differences_by_family({name: paired_captures(learn, a, b) for name, (a, b) in comparisons.items()}, level)


def differences_by_family(pairs: Mapping[str, pd.DataFrame], level: float = 0.05) -> pd.DataFrame:
    """Paired differences per signal family and over all families: ``pairs`` maps a comparison's
    name to a frame with columns ``family`` and ``difference`` (a − b), one row per market both
    learners ran (`paired_captures`, or `finrl_tutorial.book.learning.paired_excess` for test excess
    over buy-and-hold). Each row: the (family, market) pairs, the mean difference with its 95 %
    t-interval, the one-sample t-test's p-value on the differences and its Holm adjustment over
    **all** the rows of the table, the "all families" rows included (every row is a verdict drawn,
    as in `signal_rule_comparison`). ``verdict`` is "first ahead" / "second ahead" only where the
    Holm-adjusted p-value is below ``level``, else "inconclusive": no equivalence margin is stated,
    so none is called a tie. An uncorrected interval that excludes 0 is therefore not a verdict on
    its own."""
    from scipy import stats  # here, not at the top: `import finrl_tutorial` stays quick for the CLI

    rows = []
    for name, frame in pairs.items():
        groups = [(family, group["difference"]) for family, group in frame.groupby("family", sort=True)]
        groups.append(("all families", frame["difference"]))
        for family, differences in groups:
            interval = t_interval(differences.tolist(), 0.95)
            p = float(stats.ttest_1samp(differences, 0.0).pvalue) if len(differences) > 1 and differences.std() > 0 \
                else math.nan
            rows.append({"comparison": name, "family": family, "pairs": interval["n"], "mean difference": interval["mean"],
                         "low": interval["low"], "high": interval["high"], "p (t)": p})
    table = pd.DataFrame(rows)
    table["p (Holm)"] = holm(table["p (t)"].fillna(1.0).tolist()).to_numpy()
    significant = table["p (Holm)"] < level
    table["verdict"] = np.where(significant, np.where(table["mean difference"] > 0, "first ahead", "second ahead"),
                                "inconclusive")
    return table.set_index(["comparison", "family"])


def _run_length(case: Mapping, select: str) -> int:
    """The length of the run a ``bench learn`` case comes from: the last budget its curve reads."""
    return max(int(k) for k in case["curve"][select])


def signal_rule_comparison(learn: Mapping, learners: Sequence[str] = ("ppo", "a2c"), select: str = "best",
                           run_steps: int | None = None, level: float = 0.05) -> pd.DataFrame:
    """The agent against the signal rule on the planted edges of a ``bench learn`` record, market by
    market: on each market the paired difference *agent test excess − signal rule test excess* (both
    over buy-and-hold on the same test split of the same market), defined on every market, also where
    the signal rule made no excess and a capture is undefined. One row per (learner, signal family)
    and one "all families" row per learner (its markets taken as independent draws): the markets, the
    mean of each excess, the mean difference with its 95 % t-interval, the one-sample t-test's p-value
    and its Holm adjustment over **all** the rows of the table (every row is a verdict drawn).
    ``verdict`` is "beats" / "loses" only where the Holm-adjusted p-value is below ``level``, else
    "inconclusive" (no equivalence margin is stated for an excess return, so none is called a tie).
    The control family ``none`` (no signal) is not a signal family and is left out. Runs are read at
    the end of runs of ``run_steps`` env-steps (default: the package's default budget)."""
    from scipy import stats  # here, not at the top: `import finrl_tutorial` stays quick for the CLI

    if run_steps is None:
        from ..agents import PPOConfig

        run_steps = PPOConfig().total_steps
    markets: dict[tuple, list] = {}
    for case in learn["cases"]:
        if case["algo"] not in learners or case["family"] == "none" or _run_length(case, select) != run_steps:
            continue
        agent = case["curve"][select][str(run_steps)]["test_excess"]
        markets.setdefault((case["algo"], case["family"]), []).append((agent, case["oracle_excess"]))
    if not markets:
        raise ValueError(f"the record has no {'/'.join(learners)} run of {run_steps:,} env-steps on a signal family")
    groups = [(learner, family, markets[(learner, family)]) for learner in learners
              for family in sorted(f for l, f in markets if l == learner)]
    groups += [(learner, "all families", [m for (l, _), ms in markets.items() if l == learner for m in ms])
               for learner in learners if any(l == learner for l, _ in markets)]
    rows = []
    for learner, family, pairs in groups:
        agent, rule = np.array(pairs, dtype=float).T
        difference = agent - rule
        interval = t_interval(difference.tolist(), 0.95)
        p = float(stats.ttest_1samp(difference, 0.0).pvalue) if len(difference) > 1 and difference.std() > 0 \
            else math.nan
        rows.append({"learner": learner, "family": family, "markets": len(difference),
                     "agent excess": float(agent.mean()), "signal rule excess": float(rule.mean()),
                     "mean difference": interval["mean"], "low": interval["low"], "high": interval["high"],
                     "p (t)": p})
    table = pd.DataFrame(rows)
    table["p (Holm)"] = holm(table["p (t)"].fillna(1.0).tolist()).to_numpy()
    significant = table["p (Holm)"] < level
    table["verdict"] = np.where(significant, np.where(table["mean difference"] > 0, "beats", "loses"), "inconclusive")
    return table.set_index(["learner", "family"])


def capture_gaps(learn: Mapping, a: tuple[str, int, str], b: tuple[str, int, str]) -> pd.DataFrame:
    """The (family, market) pairs that two learners **both** ran but `paired_captures` leaves out,
    because a capture is undefined there: the signal rule made no excess over buy-and-hold on that
    market's test split (its excess is the denominator of the capture). Columns: family, market,
    signal rule excess (from the record's cases; NaN where the record does not hold the case)."""
    first, second = _captures(learn, *a), _captures(learn, *b)
    excess = {(case["family"], case["seed"]): case["oracle_excess"] for case in learn.get("cases", [])
              if case["algo"] == a[0]}
    rows = [{"family": family, "market": market, "signal rule excess": excess.get((family, market), math.nan)}
            for family in [f for f in first if f in second]
            for market, (x, y) in enumerate(zip(first[family], second[family])) if x is None or y is None]
    return pd.DataFrame(rows, columns=["family", "market", "signal rule excess"])


def capture_gaps_text(gaps: pd.DataFrame) -> str:
    """`capture_gaps` in words: which pairs are left out and why ("" when none is)."""
    if gaps.empty:
        return ""
    by_family = []
    for family, group in gaps.groupby("family", sort=False):
        where = ", ".join(f"{int(m)}" + (f" ({e:+.1%})" if math.isfinite(e) else "")
                          for m, e in zip(group["market"], group["signal rule excess"]))
        by_family.append(f"{family} market{'s' if len(group) > 1 else ''} {where}")
    return (f"{len(gaps)} pair{'s' if len(gaps) > 1 else ''} both ran {'are' if len(gaps) > 1 else 'is'} left out, "
            f"{'; '.join(by_family)}: there the signal rule made no excess over buy-and-hold (its excess in "
            "brackets), so a capture is undefined; that is decided by the market, not by either learner's result")


def undefined_captures(record: Mapping, select: str = "best", run_steps: int | None = None) -> pd.DataFrame:
    """For the cells `realistic_learning_table` shows (the same rows), how many markets have no
    capture: ``informed: no capture`` counts the markets where the informed oracle made no excess over
    buy-and-hold on the test split, ``signal rule: no capture`` those where the signal rule made none
    (a capture divides by that excess). Indexed by (ic, stocks, learner)."""
    if run_steps is None:
        from ..agents import PPOConfig

        run_steps = PPOConfig().total_steps
    full = _full_budget_rows(record["summary"], select)
    lengths: dict[tuple, set] = {}
    for row in full:
        lengths.setdefault((row["ic"], row.get("stocks", 10), row["learner"]), set()).add(row["run_steps"])
    rows = [{"ic": row["ic"], "stocks": row.get("stocks", 10), "learner": row["learner"], "markets": row["seeds"],
             "informed: no capture": sum(v is None for v in row.get("informed_captures", [])),
             "signal rule: no capture": sum(v is None for v in row.get("captures", []))}
            for row in full
            if not (len(lengths[(row["ic"], row.get("stocks", 10), row["learner"])]) > 1 and row["run_steps"] != run_steps)]
    return pd.DataFrame(rows).set_index(["ic", "stocks", "learner"])


# --------------------------------------------------------------------------- the best of many noise strategies


def best_of_noise(trials: int = 20, days: int = 750, draws: int = 2000) -> dict:
    """The annualised Sharpe ratio of the best of ``trials`` strategies of pure noise over ``days``
    days (daily volatility 1 %), in each of ``draws`` independent draws of that family. Draw ``d`` is
    the noise family of `pbo_example` with ``seed=d``, so the first draws are those of a table of
    `pbo_example` over seeds 0, 1, ... (about a second for 2,000 draws of 20 × 750).

    Returns the inputs, ``best`` (one Sharpe ratio per draw), ``sharpe_variance`` (the variance of
    every trial's Sharpe ratio over all draws: the deflated Sharpe's V) and ``expected_max_sharpe``:
    SR0, `finrl_tutorial.metrics.expected_max_sharpe` of ``trials`` and that V, the Sharpe ratio the
    best of ``trials`` unskilled trials is expected to reach by luck alone."""
    from ..metrics import _annual_sharpe_rows, expected_max_sharpe  # the package's Sharpe, one row per trial

    if trials < 2 or days < 2 or draws < 1:
        raise ValueError(f"need trials >= 2, days >= 2 and draws >= 1, got {trials}, {days} and {draws}")
    sharpes = np.stack([_annual_sharpe_rows(noise_family(trials, days, draw).T) for draw in range(draws)])
    variance = float(sharpes.var(ddof=1))
    return {"trials": trials, "days": days, "draws": draws, "best": sharpes.max(axis=1),
            "sharpe_variance": variance, "expected_max_sharpe": expected_max_sharpe(trials, variance)}


def plot_best_of_noise(noise: Mapping, ax, edge_sharpe: float | None = None, table_draws: int = 0) -> None:
    """Reads `best_of_noise`; draws on ``ax`` the histogram of the best trial's annualised Sharpe
    ratio over the draws, SR0 (the best of N expected by luck) as a dashed vertical line, a real
    edge's true Sharpe ratio ``edge_sharpe`` (if given) as a solid one, and the first
    ``table_draws`` draws (those of a table of `pbo_example`) as ticks under the bars."""
    best, sr0 = np.asarray(noise["best"]), noise["expected_max_sharpe"]
    counts, _, _ = ax.hist(best, bins=40, color="tab:blue", alpha=0.6, edgecolor="white",
                           label=f"best of {noise['trials']} noise strategies, {noise['draws']:,} draws")
    ax.axvline(sr0, color="black", linestyle="--", linewidth=1.5, label=f"SR0: best of {noise['trials']} by luck, expected ({sr0:.2f})")
    if edge_sharpe is not None:
        ax.axvline(edge_sharpe, color="tab:red", linewidth=2, label=f"one real edge: true Sharpe {edge_sharpe:.1f}")
    top = float(counts.max())
    if table_draws:
        ax.plot(best[:table_draws], np.full(table_draws, -0.05 * top), "|", color="black", markersize=10,
                label=f"the {table_draws} draws of the table (seeds 0 to {table_draws - 1})")
    ax.set_ylim(-0.1 * top, 1.15 * top)
    ax.axhline(0, color="grey", linewidth=0.8)
    ax.set(xlabel=f"best trial's Sharpe ratio (annualised, over {noise['days']:,} days)",
           ylabel=f"draws (of {noise['draws']:,})")
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small", loc="upper right")
