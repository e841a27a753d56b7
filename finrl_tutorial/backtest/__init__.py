"""Backtests: a policy through a whole split with full costs, against baselines (:mod:`.runner`),
and the oracles of a synthetic market as the yardsticks of learning (:mod:`.oracle`: the simple
oracle, and the informed oracle chosen on validation among rules that know the truth). The statistics
(`finrl_tutorial.metrics`) and figures (`finrl_tutorial.plots`) are re-exported here."""

from ..metrics import (
    PERIODS_PER_YEAR,
    SUMMARY_KEYS,
    annual_return,
    annual_volatility,
    average_daily_turnover,
    calmar_ratio,
    cumulative_return,
    daily_returns,
    drawdown_series,
    max_drawdown,
    performance_summary,
    sharpe_difference_ci,
    sharpe_ratio,
    sortino_ratio,
)
from ..plots import plot_band, plot_bars, plot_equity, plot_learning_curve, plot_weights, save_figure
from .oracle import (InformedOracle, InformedRule, excess_return, informed_oracle, informed_record, informed_rules,
                     oracle_capture, oracle_record)

__all__ = [
    "PERIODS_PER_YEAR",
    "SUMMARY_KEYS",
    "annual_return",
    "annual_volatility",
    "average_daily_turnover",
    "calmar_ratio",
    "cumulative_return",
    "daily_returns",
    "drawdown_series",
    "max_drawdown",
    "performance_summary",
    "sharpe_difference_ci",
    "sharpe_ratio",
    "sortino_ratio",
    "plot_band",
    "plot_bars",
    "plot_equity",
    "plot_learning_curve",
    "plot_weights",
    "save_figure",
    "InformedOracle",
    "InformedRule",
    "excess_return",
    "informed_oracle",
    "informed_record",
    "informed_rules",
    "oracle_capture",
    "oracle_record",
]
