"""Run a policy through a whole split with full costs, and compare it with baselines."""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable

import numpy as np
import pandas as pd
import torch

from ..data.market import MarketData
from ..envs import EnvConfig, VecStockTradingEnv
from ..envs.core import check_env_arguments
from ..errors import InputError
from ..metrics import performance_summary
from ..plots import plot_equity
from ..rules import LOT_SIZE

Policy = Callable[[torch.Tensor], torch.Tensor]
"""A policy maps observations ``[1, obs_dim]`` to actions ``[1, S]`` in [-1, 1]."""

_BASELINE_MAX_LOTS = 10**9

TABLE_COLUMNS = ["cumulative_return", "annual_return", "annual_volatility", "sharpe_ratio", "sortino_ratio",
                 "max_drawdown", "calmar_ratio", "turnover", "total_fees"]
"""The statistics shown in result tables (all of `performance_summary` but the raw counts)."""  # baselines state exact share counts through a huge max_lots


@dataclass
class EpisodeRecord:
    """Daily results of one policy over a split."""

    wealth: pd.Series
    """Wealth at each close, starting with the initial cash on the first day."""
    fees: pd.Series
    """Fees paid on each day (0 on the first)."""
    traded_value: pd.Series
    """Value traded on each day."""
    dividends: pd.Series | None = None
    """Cash dividends received on each day (pre-tax; None for an index)."""
    weights: pd.DataFrame | None = None
    """Each stock's share of wealth at each close (columns: tickers); cash is the rest."""
    dividend_tax: pd.Series | None = None
    """Dividend tax withheld on each day's sales (0 unless ``EnvConfig.dividend_tax``; None for an index)."""

    def metrics(self) -> dict:
        return performance_summary(self.wealth, traded_value=self.traded_value, fees=self.fees)


def run_policy(policy: Policy, market: MarketData, env_config: EnvConfig | None = None, *,
               device="cpu", dtype=torch.float64) -> EpisodeRecord:
    """Trade ``policy`` from the first to the last day of ``market`` in one episode."""
    if not callable(policy):
        raise InputError(f"run_policy: policy must be a function of the observation, got {type(policy).__name__}")
    config = replace(check_env_arguments("run_policy", market, env_config), random_start=False, episode_days=None,
                     ruin_fraction=0.0)
    env = VecStockTradingEnv(market, 1, config, device=device, dtype=dtype)
    obs, _ = env.reset()
    wealth, fees, traded, dividends, taxes = [config.initial_cash], [0.0], [0.0], [0.0], [0.0]
    weights = [torch.zeros(market.num_stocks, dtype=dtype)]
    per_stock = (env.observation_dim - 1) // market.num_stocks  # observation: cash share, then one block per stock
    for _ in range(market.num_days - 1):
        obs, _, terminated, truncated, info = env.step(policy(obs))
        wealth.append(float(info["wealth"][0]))
        fees.append(float(info["fee"][0]))
        traded.append(float(info["traded_value"][0]))
        dividends.append(float(info["dividend"][0]))
        taxes.append(float(info["dividend_tax"][0]))
        # the stepped account's observation (before the reset at the end): each block starts with the weight
        weights.append(info["final_obs"][0, 1:].reshape(market.num_stocks, per_stock)[:, 0].cpu())
    index = pd.DatetimeIndex(market.dates, name="date")
    return EpisodeRecord(pd.Series(wealth, index=index, name="wealth"), pd.Series(fees, index=index, name="fees"),
                         pd.Series(traded, index=index, name="traded_value"),
                         pd.Series(dividends, index=index, name="dividends"),
                         pd.DataFrame(torch.stack(weights).numpy(), index=index, columns=list(market.tickers)),
                         pd.Series(taxes, index=index, name="dividend_tax"))


def agent_policy(agent) -> Policy:
    """The agent's deterministic action (the Gaussian mean), on the agent's device and dtype."""
    parameter = next(agent.parameters())
    return lambda obs: agent.act(obs.to(device=parameter.device, dtype=parameter.dtype), deterministic=True)


def buy_and_hold_baseline(market: MarketData, env_config: EnvConfig | None = None, **kwargs) -> EpisodeRecord:
    """Equal-weight buy-and-hold: equal *money* per stock at the start, then no trades.

    (FinRL's "equal weight" buys equal share counts, which weights by price.) Orders go in at
    the first decision with full costs and lots, so a stock suspended on the fill day stays in cash.
    """
    budget = (env_config or EnvConfig()).initial_cash / market.num_stocks
    return _buy_once_and_hold(budget / market.close[0].to(torch.float64), market, env_config, **kwargs)


def _buy_once_and_hold(shares: torch.Tensor, market: MarketData, env_config: EnvConfig | None,
                       **kwargs) -> EpisodeRecord:
    """Order ``shares`` [S] of each stock at the first decision, then never trade (the env's lots,
    limits and costs apply; the shares mode with a huge ``max_lots`` states exact share counts)."""
    config = replace(env_config or EnvConfig(), action_mode="shares", max_lots=_BASELINE_MAX_LOTS)
    first = (shares / (config.max_lots * LOT_SIZE)).unsqueeze(0)
    calls = [0]

    def policy(obs):
        calls[0] += 1
        return first if calls[0] == 1 else torch.zeros_like(first)

    return run_policy(policy, market, config, **kwargs)


def equal_shares_baseline(market: MarketData, env_config: EnvConfig | None = None, **kwargs) -> EpisodeRecord:
    """Equal-*shares* buy-and-hold (FinRL's "equal weight"): the same number of shares of every
    stock, as many as the cash buys, then no trades. It weights the portfolio by price, which is
    what any near-uniform action does in the ``shares`` action mode (±1 = ``max_lots`` lots
    whatever the price): a policy that matches it has learned the action scale, not the market."""
    close = market.close[0].to(torch.float64)
    shares = (env_config or EnvConfig()).initial_cash / close.sum()
    return _buy_once_and_hold(torch.full_like(close, float(shares)), market, env_config, **kwargs)


def constant_action_baseline(market: MarketData, env_config: EnvConfig | None = None, **kwargs) -> EpisodeRecord:
    """The same action every day, whatever the market: in the ``weights`` action mode target
    weight 1/S in every stock (equal weight, rebalanced daily with full costs); in the ``shares``
    mode +1 (buy ``max_lots`` lots of every stock each day until the cash runs out). What a policy
    that ignores its observation earns."""
    config = env_config or EnvConfig()
    value = 1.0 / market.num_stocks if config.action_mode == "weights" else 1.0
    action = torch.full((1, market.num_stocks), value, dtype=torch.float64)
    return run_policy(lambda obs: action, market, config, **kwargs)


def random_baseline(market: MarketData, env_config: EnvConfig | None = None, seed: int = 0, **kwargs) -> EpisodeRecord:
    """Uniform random actions in [-1, 1] each day (seeded)."""
    generator = torch.Generator().manual_seed(seed)
    policy = lambda obs: torch.rand(1, market.num_stocks, generator=generator, dtype=torch.float64) * 2 - 1  # noqa: E731
    return run_policy(policy, market, env_config, **kwargs)


def index_record(benchmark: pd.Series, market: MarketData, initial_cash: float) -> EpisodeRecord | None:
    """An index (CSI 300) as if held without costs over the split's dates; None if it does not cover them."""
    index = pd.DatetimeIndex(market.dates, name="date")
    series = benchmark.copy()
    series.index = pd.DatetimeIndex(series.index).normalize()
    series = series.reindex(index).ffill()
    if series.isna().any():
        return None
    wealth = initial_cash * series / series.iloc[0]
    zeros = pd.Series(np.zeros(len(index)), index=index)
    return EpisodeRecord(wealth.rename("wealth"), zeros.rename("fees"), zeros.rename("traded_value"))


@dataclass
class BacktestResult:
    """Records and metrics of the agent and the baselines on one split."""

    records: dict[str, EpisodeRecord]

    @property
    def metrics(self) -> dict[str, dict]:
        return {name: record.metrics() for name, record in self.records.items()}

    def table(self) -> pd.DataFrame:
        """One row per policy, the main statistics as columns."""
        return pd.DataFrame(self.metrics).T[TABLE_COLUMNS]

    def plot(self, path=None, title="Backtest", relative_to: str | None = None):
        """`finrl_tutorial.plots.plot_equity` of every policy; ``relative_to`` (a policy's name, e.g.
        ``"equal_weight_buy_and_hold"``) adds each curve's wealth relative to that one's."""
        return plot_equity({name: record.wealth for name, record in self.records.items()}, path=path, title=title,
                           relative_to=relative_to)


def backtest(policy: Policy | None, market: MarketData, env_config: EnvConfig | None = None, *,
             benchmark: pd.Series | None = None, name: str = "agent", random_seed: int | None = 0,
             device="cpu", others: dict[str, Policy] | None = None) -> BacktestResult:
    """The policy and the baselines on ``market`` (normally the untouched test split), full costs.

    Baselines: equal-money and equal-shares buy-and-hold, the constant action, random trading
    (``random_seed``; None leaves it out), CSI 300 when ``benchmark`` covers the split, and any
    ``others`` (name → policy, e.g. the untrained agent) through the same env."""
    env_config = check_env_arguments("backtest", market, env_config)
    records = {}
    if policy is not None:
        records[name] = run_policy(policy, market, env_config, device=device)
    for other, other_policy in (others or {}).items():
        records[other] = run_policy(other_policy, market, env_config, device=device)
    records["equal_weight_buy_and_hold"] = buy_and_hold_baseline(market, env_config, device=device)
    if float(records["equal_weight_buy_and_hold"].traded_value.sum()) == 0.0:
        raise InputError("backtest: buy-and-hold could not buy a single lot on "
                         f"{market.first_date}..{market.last_date} "
                         "(every stock suspended, without volume, or its smallest order above the initial cash): "
                         "every record would be all zeros, which is no result (and no tie)")
    records["equal_shares_buy_and_hold"] = equal_shares_baseline(market, env_config, device=device)
    records["constant_action"] = constant_action_baseline(market, env_config, device=device)
    if random_seed is not None:
        records["random"] = random_baseline(market, env_config, seed=random_seed, device=device)
    if benchmark is not None:
        index = index_record(benchmark, market, env_config.initial_cash)
        if index is not None:
            records["csi300"] = index
    return BacktestResult(records)
