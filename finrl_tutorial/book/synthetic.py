"""Readings for the reference page "The synthetic markets": the generator's numbers, what generated
markets measure, and what a planted edge is worth.

The page answers a sceptical reader's question: how strong is "IC 0.05 over 100 stocks"? It shows
the return model of `finrl_tutorial.data.synthetic` with its default numbers (`model_numbers`),
measures generated markets (`measure_market`, `measured_markets`, `return_facts`), and sizes the
edge three ways: Grinold's fundamental law (`fundamental_law_ir`, `fundamental_law_table`), the
generator's exact frictionless ideal (`ideal_ir`) and frictionless portfolios measured on the bars
(`frictionless_irs`), then the informed oracle as the records stored it
(`recorded_oracles`) and run again live, with and without costs (`oracle_rerun`). Nothing here
trains an agent; the backtests reuse `finrl_tutorial.backtest.oracle`.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace

import numpy as np
import pandas as pd

from .. import rules
from ..backtest.oracle import excess_return, informed_record, informed_rules
from ..backtest.runner import EpisodeRecord, buy_and_hold_baseline
from ..data.market import MarketData
from ..data.synthetic import MAX_MOVE, SyntheticMarket, SyntheticSpec, make_synthetic
from ..envs import EnvConfig
from ..metrics import PERIODS_PER_YEAR

__all__ = ["TRADING_DAYS", "NEAR_CLIP", "half_life", "model_numbers", "measure_market", "measured_markets",
           "return_facts", "fundamental_law_ir", "fundamental_law_table", "ideal_ir", "frictionless_irs",
           "recorded_oracles", "free_env_config", "active_ir", "oracle_rerun", "oracle_reruns"]

TRADING_DAYS = PERIODS_PER_YEAR
"""Trading days a year, the annualisation of the book's ratios (`finrl_tutorial.metrics.PERIODS_PER_YEAR`)."""
NEAR_CLIP = 0.09
"""A daily move at least this large (in absolute value) counts as *near the clip* of ±9.5 %."""


# --------------------------------------------------------------------------- the model's numbers

def half_life(persistence: float) -> float:
    """Days until an AR(1) signal's expected value has halved: ``ln 0.5 / ln φ`` (0 for φ = 0).

    ``persistence`` is φ in [0, 1), `SyntheticSpec.persistence`; ``ValueError`` outside it."""
    if not 0.0 <= persistence < 1.0:
        raise ValueError(f"persistence must be in [0, 1), got {persistence}")
    return 0.0 if persistence == 0.0 else math.log(0.5) / math.log(persistence)


def model_numbers(spec: SyntheticSpec | None = None, ics: Sequence[float] = (0.05, 0.03),
                  env_config: EnvConfig | None = None) -> dict:
    """The return model's numbers for ``spec`` (default `SyntheticSpec()`) at each of ``ics``.

    Returns a dict: ``noise`` (σ_u, the standard deviation of the unpredictable part of a daily
    return), ``persistence`` (φ) and ``half_life`` in days, ``round_trip`` (what buying and later
    selling costs in the env, `learning.ic_scale`), and ``table``: one row per IC with the loading
    ``k`` (the planted move of the next day's expected return per one standard deviation of the
    signal), ``k`` over σ_u, the total move a 1-σ signal predicts over the rest of its life
    (``k / (1 - φ)``, the sum of ``k φ^j``), and the days of ``k`` that pay one round trip."""
    from .learning import ic_scale  # the chapters' own reading of the costs (the same round trip)

    spec = spec or SyntheticSpec()
    env_config = env_config or EnvConfig()
    scale = ic_scale(ics, env_config, spec)
    rows = {}
    for ic in ics:
        k = scale["moves"][ic]
        rows[ic] = {"k: next-day move per 1-σ signal": k, "k / σ_u": k / scale["noise"],
                    "move over the signal's life, k / (1 - φ)": k / (1.0 - spec.persistence),
                    "days of k that pay a round trip": scale["days"][ic]}
    table = pd.DataFrame(rows).T.rename_axis("IC")
    return {"noise": scale["noise"], "persistence": spec.persistence, "half_life": half_life(spec.persistence),
            "round_trip": scale["round_trip"], "volatility": spec.volatility,
            "market_volatility": spec.market_volatility, "overnight_share": spec.overnight_share,
            "clip": MAX_MOVE, "table": table}


# --------------------------------------------------------------------------- measured on generated markets

def _close_returns(synthetic: SyntheticMarket) -> np.ndarray:
    """[days - 1, S] close-to-close simple returns of the generated bars."""
    close = synthetic.bars.pivot(index="date", columns="tic", values="close").to_numpy()
    return close[1:] / close[:-1] - 1.0


def _signal(synthetic: SyntheticMarket) -> np.ndarray:
    """[days, S] the ``signal`` column (``ValueError`` for momentum/reversal, which have none)."""
    if "signal" not in synthetic.bars:
        raise ValueError(f"family {synthetic.spec.family!r} has no signal column: use factor, cross_section or none")
    return synthetic.bars.pivot(index="date", columns="tic", values="signal").to_numpy()


def measure_market(synthetic: SyntheticMarket) -> dict:
    """What one generated market measures, beside what its spec planted.

    ``planted IC`` and ``realised IC`` (`SyntheticMarket.realised_ic`, pooled over stocks and days),
    ``IC standard error`` (``1/sqrt(n)`` for ``n`` pooled pairs: the spread a correlation near 0
    has from sampling alone), the signal's ``lag-1 autocorrelation`` (for the families with a signal
    column; nan otherwise) and the ``measured half-life`` it implies, the ``daily volatility`` of
    close-to-close returns with the model's ``expected volatility`` (``sqrt(σ_u² + k²)``), and the
    share of stock-days whose move is at least `NEAR_CLIP` in absolute value."""
    spec = synthetic.spec
    returns = _close_returns(synthetic)
    pairs = returns.size  # the IC pairs the predictor at close t with r(t+1): days - 1 pairs per stock
    if "signal" in synthetic.bars:
        signal = _signal(synthetic)
        lag1 = float(np.corrcoef(signal[1:].ravel(), signal[:-1].ravel())[0, 1])
        measured_half_life = half_life(lag1) if 0.0 < lag1 < 1.0 else float("nan")
    else:
        lag1 = measured_half_life = float("nan")
    planted = 0.0 if spec.family == "none" else spec.ic
    loading = spec.loading if spec.family in ("factor", "cross_section") else 0.0
    return {"family": spec.family, "stocks": spec.num_stocks, "days": spec.num_days, "seed": spec.seed,
            "planted IC": planted, "realised IC": synthetic.realised_ic(), "IC standard error": 1.0 / math.sqrt(pairs),
            "lag-1 autocorrelation": lag1, "measured half-life": measured_half_life,
            "daily volatility": float(returns.std()),
            "expected volatility": math.sqrt(spec.noise_volatility ** 2 + loading ** 2),
            "share near the clip": float((np.abs(returns) >= NEAR_CLIP).mean())}


def measured_markets(specs: Iterable[SyntheticSpec]) -> pd.DataFrame:
    """`measure_market` of each spec's market, one row each (the markets are built here)."""
    return pd.DataFrame([measure_market(make_synthetic(spec)) for spec in specs])


def return_facts(market: MarketData) -> dict:
    """Facts of a market's daily returns that the synthetic model leaves out, to set a generated
    market beside a real one (both cleaned into a `MarketData`).

    The returns are ``close / pre_close - 1`` (``pre_close`` is ex-rights adjusted, so a corporate
    action is no move) on days a stock traded and had traded the day before. Returns a dict:
    ``daily volatility``, ``excess kurtosis`` (0 for normal returns), ``share beyond 4 σ`` (normal:
    6.3e-5), ``share near the clip`` (at least `NEAR_CLIP`), ``share closed at a limit`` (the close
    within one tick of the day's limit price), ``squared-return autocorrelation`` (lag 1, pooled
    over stocks: volatility that clusters in time is above 0), ``volatility ratio`` (the highest
    over the lowest yearly volatility, pooled over stocks, 250-day blocks) and ``share suspended``
    (stock-days the stock did not trade)."""
    close, pre_close = market.close.double().numpy(), market.pre_close.double().numpy()
    tradable = market.tradable.numpy()
    valid = tradable[1:] & tradable[:-1]
    returns = np.where(valid, close[1:] / pre_close[1:] - 1.0, np.nan)
    pooled = returns[np.isfinite(returns)]
    deviation = (pooled - pooled.mean()) / pooled.std()
    limit = (close >= market.up_limit.double().numpy() - 0.005) | (close <= market.down_limit.double().numpy() + 0.005)
    centred = returns - np.nanmean(returns, axis=0)
    squared = centred ** 2
    both = np.isfinite(squared[1:]) & np.isfinite(squared[:-1])
    lag = np.corrcoef(squared[1:][both], squared[:-1][both])[0, 1]
    years = [block[np.isfinite(block)].std() for block in
             (returns[start:start + 250] for start in range(0, len(returns) - 249, 250))]
    return {"daily volatility": float(pooled.std()), "excess kurtosis": float((deviation ** 4).mean() - 3.0),
            "share beyond 4 σ": float((np.abs(deviation) > 4.0).mean()),
            "share near the clip": float((np.abs(pooled) >= NEAR_CLIP).mean()),
            "share closed at a limit": float(limit[1:][valid].mean()),
            "squared-return autocorrelation": float(lag),
            "volatility ratio": float(max(years) / min(years)) if len(years) >= 2 else float("nan"),
            "share suspended": float(1.0 - tradable.mean())}


# --------------------------------------------------------------------------- what an edge is worth

def fundamental_law_ir(ic: float, stocks: int, days: int = TRADING_DAYS) -> float:
    """Grinold's fundamental law of active management, annualised: ``IR ≈ IC · sqrt(breadth)`` with
    one independent bet per stock and day, ``breadth = days · stocks``. A frictionless figure: no
    costs, weights free to go long and short, the whole portfolio turned over every day."""
    if stocks < 1 or days < 1:
        raise ValueError(f"stocks and days must be >= 1, got {stocks} and {days}")
    return ic * math.sqrt(days * stocks)


def fundamental_law_table(ics: Sequence[float] = (0.02, 0.03, 0.05, 0.10),
                          stocks: Sequence[int] = (10, 30, 100, 300), days: int = TRADING_DAYS) -> pd.DataFrame:
    """[IC × stocks] `fundamental_law_ir` of every pair."""
    table = pd.DataFrame({n: [fundamental_law_ir(ic, n, days) for ic in ics] for n in stocks}, index=list(ics))
    return table.rename_axis(index="IC", columns="stocks")


def ideal_ir(spec: SyntheticSpec, days: int = TRADING_DAYS) -> float:
    """The frictionless annual IR of the best linear long-short portfolio on a ``factor`` market of
    ``spec``: weights proportional to the day's demeaned signal, at constant risk. Its active return
    carries ``k`` per unit of signal and only the stocks' own noise (the market move cancels), so the
    daily ratio is ``k sqrt(N - 1) / volatility``: the fundamental law's figure times
    ``σ_u / (volatility · sqrt(1 - IC²))`` and ``sqrt((N - 1) / N)``."""
    if spec.family != "factor":
        raise ValueError(f"ideal_ir is derived for the factor family, got {spec.family!r}")
    return spec.loading / spec.volatility * math.sqrt(days * (spec.num_stocks - 1))


def _annual_ir(daily: np.ndarray, days: int = TRADING_DAYS) -> float:
    daily = np.asarray(daily, dtype=float)
    spread = daily.std(ddof=1)
    return float(daily.mean() / spread * math.sqrt(days)) if spread > 0 else float("nan")


def frictionless_irs(synthetic: SyntheticMarket, days: int = TRADING_DAYS) -> dict:
    """Annual IRs measured on the generated bars, close to close, every day of the market, no costs:
    ``long-short`` (the linear portfolio of `ideal_ir`, rebalanced daily) and ``top half`` (equal
    weight in the half of the stocks with the higher signal, read against equal weight in all: the
    long-only counterpart, whose active weights can go no lower than -1/N). Both trade on the
    ``signal`` column of close t and earn r(t+1)."""
    returns = _close_returns(synthetic)
    signal = _signal(synthetic)[:-1]
    demeaned = signal - signal.mean(axis=1, keepdims=True)
    linear = demeaned / np.sqrt((demeaned ** 2).sum(axis=1, keepdims=True))
    top = (demeaned >= np.median(demeaned, axis=1, keepdims=True)).astype(float)
    top /= top.sum(axis=1, keepdims=True)
    return {"long-short": _annual_ir((linear * returns).sum(axis=1), days),
            "top half": _annual_ir((top * returns).sum(axis=1) - returns.mean(axis=1), days),
            "years": len(returns) / days}


def recorded_oracles(record: Mapping) -> pd.DataFrame:
    """The informed oracle as a ``bench learn`` record stored it, one row per (IC, stocks) cell, each
    market counted once (a record may hold several runs of one market): ``markets``, its test excess
    over buy-and-hold (``mean``, ``lowest``, ``highest``, markets ``lost``), its test Sharpe ratio
    and buy-and-hold's (means), and its daily turnover (mean)."""
    markets = {}
    for case in record["cases"]:
        if "informed_oracle" in case:
            markets[(case["ic"], case["stocks"], case["seed"])] = case
    rows = []
    for (ic, stocks), group in pd.Series(markets).groupby(level=[0, 1]):
        cases = list(group)
        excess = np.array([c["informed_oracle"]["test_excess"] for c in cases])
        rows.append({"IC": ic, "stocks": stocks, "markets": len(cases), "test excess (mean)": excess.mean(),
                     "lowest": excess.min(), "highest": excess.max(), "lost": int((excess < 0).sum()),
                     "oracle Sharpe (mean)": float(np.mean([c["informed_oracle"]["test_sharpe"] for c in cases])),
                     "buy-and-hold Sharpe (mean)": float(np.mean([c["buy_and_hold_sharpe"] for c in cases])),
                     "daily turnover (mean)": float(np.mean([c["informed_oracle"]["test_turnover"] for c in cases]))})
    return pd.DataFrame(rows).set_index(["IC", "stocks"])


def free_env_config(env_config: EnvConfig | None = None) -> EnvConfig:
    """``env_config`` (default `EnvConfig()`) with every trading cost at 0: no commission (nor its
    ¥5 minimum), stamp duty, transfer fee, slippage or impact. Lots, fills at the next open and the
    participation cap stay."""
    zero = (("1900-01-01", 0.0),)
    fees = rules.FeeSchedule(commission_rate=0.0, min_commission=0.0, stamp_duty=zero, stamp_duty_buy=zero,
                             transfer_fee=zero, transfer_fee_sh_per_share=0.0, transfer_fee_sz_rate=0.0)
    return replace(env_config or EnvConfig(), fees=fees, slippage=0.0, impact=0.0)


def active_ir(record: EpisodeRecord, baseline: EpisodeRecord, days: int = TRADING_DAYS) -> float:
    """Annual IR of ``record`` against ``baseline`` over the same days: the mean of the daily
    difference of their returns over its standard deviation, times ``sqrt(days)``."""
    ours = record.wealth.pct_change().dropna().to_numpy()
    theirs = baseline.wealth.pct_change().dropna().to_numpy()
    return _annual_ir(ours - theirs, days)


def oracle_rerun(record: Mapping, ic: float, stocks: int, seed: int = 0,
                 env_config: EnvConfig | None = None) -> dict:
    """One market of a ``bench learn`` record rebuilt (the benchmark's spec: factor family, the
    case's days) and its informed oracle's rule, as the record stored it, run again on the test
    split through the env: with full costs and with none (`free_env_config`), each against
    buy-and-hold under the same costs. Returns the fundamental law's IR, the generator's ideal
    (`ideal_ir`), the IRs measured frictionless on the bars (`frictionless_irs`), the rule, the
    recorded and the rerun test excess, the test-year active IR with and without costs (`active_ir`),
    fees and turnover."""
    case = next((c for c in record["cases"] if (c["ic"], c["stocks"], c["seed"]) == (ic, stocks, seed)
                 and "informed_oracle" in c), None)
    if case is None:
        raise ValueError(f"the record has no market with ic {ic}, {stocks} stocks, seed {seed}")
    spec = SyntheticSpec(family=case["family"], ic=ic, seed=seed, num_stocks=stocks, num_days=case["days"])
    synthetic = make_synthetic(spec)
    rule = {r.name: r for r in informed_rules(stocks)}[case["informed_oracle"]["rule"]]
    env_config = env_config or EnvConfig()
    result = {"IC": ic, "stocks": stocks, "seed": seed, "rule": rule.name,
              "fundamental law": fundamental_law_ir(ic, stocks), "ideal long-short": ideal_ir(spec),
              **{f"measured {name}": value for name, value in frictionless_irs(synthetic).items() if name != "years"},
              "recorded test excess": case["informed_oracle"]["test_excess"]}
    for label, config in (("full costs", env_config), ("no costs", free_env_config(env_config))):
        test = synthetic.market.test
        ran, hold = informed_record(synthetic, rule, "test", config), buy_and_hold_baseline(test, config)
        metrics = ran.metrics()
        result |= {f"test excess, {label}": excess_return(ran, hold), f"test IR, {label}": active_ir(ran, hold),
                   f"fees, {label}": metrics["total_fees"] / config.initial_cash,
                   f"daily turnover, {label}": metrics["turnover"]}
    result["test days"] = synthetic.market.test.num_days - 1
    return result


def oracle_reruns(record: Mapping, cells: Sequence[tuple[float, int]], seed: int = 0,
                  env_config: EnvConfig | None = None) -> pd.DataFrame:
    """`oracle_rerun` of market ``seed`` of each (IC, stocks) cell, one row each, indexed by the cell."""
    rows = [oracle_rerun(record, ic, stocks, seed, env_config) for ic, stocks in cells]
    return pd.DataFrame(rows).set_index(["IC", "stocks"])


def plot_realised_ic(measured: pd.DataFrame, ax) -> None:
    """Reads a `measured_markets` table whose markets share one planted IC; draws on ``ax`` each
    market's realised daily IC as a point with a bar of ±2 ``IC standard error``, one per market (its
    seed on the x axis), and the planted IC as a dashed horizontal line. A bar that misses the line
    is a market that measures something other than what was planted, beyond sampling error."""
    planted = measured["planted IC"].unique()
    if len(planted) != 1:
        raise ValueError(f"the markets must share one planted IC, got {sorted(planted)}")
    x = np.arange(len(measured))
    ax.errorbar(x, measured["realised IC"], yerr=2 * measured["IC standard error"], fmt="o", color="tab:blue",
                capsize=4, label="realised IC ± 2 standard errors")
    ax.axhline(planted[0], color="black", linestyle="--", linewidth=1, label=f"planted IC ({planted[0]:g})")
    ax.set_xticks(x, [str(seed) for seed in measured["seed"]])
    ax.set_xlim(-0.6, len(measured) - 0.4)
    shapes = sorted({(row["family"], row["stocks"], row["days"]) for _, row in measured.iterrows()})
    if len(shapes) == 1:
        family, stocks, days = shapes[0]
        ax.set_title(f"{family} markets, {stocks} stocks × {days:,} days each", fontsize="medium")
    ax.set(xlabel="market (seed)", ylabel=r"daily IC, corr($s_t$, $r_{t+1}$)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small", loc="best")
