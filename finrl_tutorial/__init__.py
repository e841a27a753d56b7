"""finrl_tutorial: scalable reinforcement learning for China A-share trading.

One import for the book's chapters: ``from finrl_tutorial import load_market, PPOConfig, train, …``.
Data flows one way: data → envs → agents → backtest → train.
"""
from .agents import A2CConfig, ActorCritic, PPOConfig, make_config
from .backtest import (performance_summary, plot_band, plot_bars, plot_equity, plot_learning_curve, plot_weights,
                       sharpe_difference_ci)
from .backtest.runner import (BacktestResult, EpisodeRecord, agent_policy, backtest, buy_and_hold_baseline,
                              constant_action_baseline, equal_shares_baseline, random_baseline, run_policy)
from .data import (DataError, MarketData, PreparedMarket, load_market, load_sample, prepare_market,
                   validate_bars)
from .data.synthetic import SyntheticMarket, SyntheticSpec, make_synthetic, oracle_capture
from .envs import EnvConfig, StockTradingEnv, VecStockTradingEnv, VmapStockTradingEnv
from .errors import ConfigError, InputError
from .rules import FeeSchedule
from .training import TrainingError, TrainResult, agent_from_checkpoint, initial_agent, load_checkpoint, train

__version__ = "0.1.0"

__all__ = [
    "A2CConfig", "ActorCritic", "BacktestResult", "ConfigError", "DataError", "EnvConfig", "EpisodeRecord",
    "FeeSchedule", "InputError", "MarketData", "PPOConfig", "PreparedMarket", "StockTradingEnv", "SyntheticMarket",
    "SyntheticSpec", "TrainResult", "TrainingError", "VecStockTradingEnv", "VmapStockTradingEnv",
    "agent_from_checkpoint", "agent_policy", "backtest", "buy_and_hold_baseline", "constant_action_baseline",
    "equal_shares_baseline", "initial_agent", "load_checkpoint", "load_market", "load_sample", "make_config",
    "make_synthetic", "oracle_capture", "performance_summary", "plot_band", "plot_bars", "plot_equity",
    "plot_learning_curve", "plot_weights", "prepare_market", "random_baseline", "run_policy",
    "sharpe_difference_ci", "train", "validate_bars",
]
