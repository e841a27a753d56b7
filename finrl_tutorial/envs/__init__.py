"""Market simulators: one account (`StockTradingEnv`), a batch (`VecStockTradingEnv`), vmap; the
sharding of episode start days over workers and ranks (`shard_start_windows`); the CUDA-graph
replay of a batched step (`GraphedEnvStep`)."""
from .core import Account, EnvConfig, MarketArrays, observation_size, observe, shard_start_windows, step_account
from .graph import GraphedEnvStep
from .single import StockTradingEnv
from .vec import VecStockTradingEnv, VmapStockTradingEnv

__all__ = ["Account", "EnvConfig", "GraphedEnvStep", "MarketArrays", "StockTradingEnv", "VecStockTradingEnv",
           "VmapStockTradingEnv", "observation_size", "observe", "shard_start_windows", "step_account"]
