"""Backtest statistics and figures: :mod:`.metrics` and :mod:`.plots`."""

from .metrics import (
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
from .plots import plot_band, plot_bars, plot_equity, plot_learning_curve, plot_weights, save_figure

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
]
