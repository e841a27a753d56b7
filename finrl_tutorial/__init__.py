"""finrl_tutorial: scalable reinforcement learning for China A-share trading.

One import for the book's chapters, as d2l does: ``import finrl_tutorial as ft``, then ``ft.load_market``,
``ft.train``, ``ft.backtest`` (the function: the backtest room's names are all exported here), … and
every other room by name (``ft.data``, ``ft.envs``, ``ft.agents``, ``ft.training``, ``ft.bench``,
``ft.book``, ``ft.metrics``, ``ft.plots``, ``ft.rules``).

Layers: data flows one way. Each subpackage is a room; a module may import anything in its own
room and anything in a lower layer, never a higher one (a test reads every import, those inside
functions too): 0 ``rules``, ``errors``, ``atomic``, ``provenance``, ``metrics``, ``plots`` (the
foundations: A-share rules, errors and the one-line message, atomic writes, where a figure was
measured, statistics and figures of wealth curves; one room: they import one another, nothing
else of the package) → 1 ``data`` (sources, cleaning, synthetic markets) → 2 ``envs`` (the
simulators, the start-day windows of workers and ranks, the CUDA-graph env step) → 3 ``agents``
(PPO, A2C, the CUDA-graph rollout) → 4 ``backtest`` (a policy through a split, baselines, the
oracle's yardstick) → 5 ``training`` (the loop, checkpoints, run folders, workers, DDP, the main
job) → 6 ``bench`` (the benchmarks) → 7 ``book``, ``cli`` (the entry points, with this package's
own exports and ``__main__``).
"""
from .agents import A2CConfig, ActorCritic, PPOConfig, make_config
from .backtest import (InformedRule, excess_return, informed_rules, oracle_capture, oracle_record, performance_summary,
                       plot_band, plot_bars, plot_equity, plot_learning_curve, plot_weights, sharpe_difference_ci)
from .backtest.runner import (BacktestResult, EpisodeRecord, agent_policy, backtest, buy_and_hold_baseline,
                              constant_action_baseline, equal_shares_baseline, random_baseline, run_policy)
from .data import (DataError, MarketData, PreparedMarket, load_market, load_sample, prepare_market,
                   validate_bars)
from .data.synthetic import SyntheticMarket, SyntheticSpec, make_synthetic
from .envs import EnvConfig, StockTradingEnv, VecStockTradingEnv, VmapStockTradingEnv
from .errors import ConfigError, InputError, TrainingError
from .rules import FeeSchedule
from .training import TrainResult, agent_from_checkpoint, initial_agent, load_checkpoint, train

from . import agents, bench, book, data, envs, metrics, plots, rules, training  # every room by name (`backtest` is the function)

__version__ = "0.1.0"

__all__ = [
    "A2CConfig", "ActorCritic", "BacktestResult", "ConfigError", "DataError", "EnvConfig", "EpisodeRecord",
    "FeeSchedule", "InformedRule", "InputError", "MarketData", "PPOConfig", "PreparedMarket", "StockTradingEnv", "SyntheticMarket",
    "SyntheticSpec", "TrainResult", "TrainingError", "VecStockTradingEnv", "VmapStockTradingEnv",
    "agent_from_checkpoint", "agent_policy", "backtest", "buy_and_hold_baseline", "constant_action_baseline",
    "equal_shares_baseline", "excess_return", "informed_rules", "initial_agent", "load_checkpoint", "load_market", "load_sample",
    "make_config", "make_synthetic", "oracle_capture", "oracle_record", "performance_summary", "plot_band",
    "plot_bars", "plot_equity", "plot_learning_curve", "plot_weights", "prepare_market", "random_baseline",
    "run_policy", "sharpe_difference_ci", "train", "validate_bars",
]
