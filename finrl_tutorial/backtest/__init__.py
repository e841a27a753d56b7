"""Backtests: a policy through a whole split with full costs, against baselines (:mod:`.runner`),
and the oracle of a synthetic market as the yardstick of learning (:mod:`.oracle`). The statistics
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
from .oracle import excess_return, oracle_capture, oracle_record

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
    "excess_return",
    "oracle_capture",
    "oracle_record",
]
