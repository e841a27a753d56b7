"""Market simulators: one account (`StockTradingEnv`), a batch (`VecStockTradingEnv`), vmap."""
from .core import Account, EnvConfig, MarketArrays, observation_size, observe, step_account
from .single import StockTradingEnv
from .vec import VecStockTradingEnv, VmapStockTradingEnv

__all__ = ["Account", "EnvConfig", "MarketArrays", "StockTradingEnv", "VecStockTradingEnv",
           "VmapStockTradingEnv", "observation_size", "observe", "step_account"]
