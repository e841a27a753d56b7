"""Market simulators: one account (`StockTradingEnv`, a ``gymnasium.Env``), a batch
(`VecStockTradingEnv`, a ``gymnasium.vector.VectorEnv`` on torch tensors), vmap; the sharding of
episode start days over workers and ranks (`shard_start_windows`); the CUDA-graph replay of a
batched step (`GraphedEnvStep`).

Both are registered with gymnasium as ``ENV_ID``, so code that builds envs by id works too:
``gymnasium.make(ENV_ID, market=m)`` gives the one-account env (with gymnasium's checks around
it) and ``gymnasium.make_vec(ENV_ID, num_envs=N, market=m)`` the batched one.
"""
import gymnasium as _gym

from .core import Account, EnvConfig, MarketArrays, observation_size, observe, shard_start_windows, step_account
from .graph import GraphedEnvStep
from .single import StockTradingEnv
from .vec import VecStockTradingEnv, VmapStockTradingEnv

ENV_ID = "finrl_tutorial/AShareTrading-v0"
"""The gymnasium id of the env: ``entry_point`` `StockTradingEnv`, ``vector_entry_point`` `VecStockTradingEnv`."""

if ENV_ID not in _gym.registry:  # (a re-import must not re-register: gymnasium would warn)
    _gym.register(ENV_ID, entry_point=StockTradingEnv, vector_entry_point=VecStockTradingEnv)

__all__ = ["ENV_ID", "Account", "EnvConfig", "GraphedEnvStep", "MarketArrays", "StockTradingEnv",
           "VecStockTradingEnv", "VmapStockTradingEnv", "observation_size", "observe", "shard_start_windows",
           "step_account"]
