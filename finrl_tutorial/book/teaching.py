"""Small readings the first chapters teach with: like-with-like comparisons of committed records,
their intervals and a multiple-comparison correction, and how far a trained agent moved from the
untrained one.

Each function reads numbers a chapter has in hand (a record, two agents, two weight tables) and
returns a table or a number; none trains or measures anything itself.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
import torch

__all__ = ["t_interval", "holm", "chance_of_no_overlap", "paired_captures", "sweep_comparisons",
           "parameter_distance", "portfolio_distance"]


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
    the mean paired difference, the record's own non-overlap verdict, the paired t-test's p-value and
    its Holm adjustment over **all** the comparisons of the table. ``holm_verdict`` is "higher" or
    "lower" only where the adjusted p-value is below ``level``."""
    from scipy import stats  # here, not at the top: `import finrl_tutorial` stays quick for the CLI

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
            rows.append({"market": row["market"], "variant": row["variant"], "measure": measure,
                         "seeds": len(seeds), "mean difference": float(difference.mean()),
                         "non-overlap verdict": row.get(f"{measure}_vs_base", "n/a"), "p (paired t)": p})
    table = pd.DataFrame(rows)
    table["p (Holm)"] = holm(table["p (paired t)"].tolist()).to_numpy()
    table["holm_verdict"] = np.where(table["p (Holm)"] < level,
                                     np.where(table["mean difference"] > 0, "higher", "lower"), "tie")
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
