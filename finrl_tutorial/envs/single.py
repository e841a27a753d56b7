"""`StockTradingEnv`: one account as a standard ``gymnasium.Env``."""
from __future__ import annotations

import gymnasium as gym
import numpy as np
import torch

from ..data.market import MarketData
from ..errors import InputError, check_int
from .core import (OBSERVATION_BOUND, EnvConfig, MarketArrays, check_action_tensor, check_env_arguments,
                   check_reset_options, draw_start_days, initial_account, observation_size, observe,
                   reward_references, start_days_option, step_account)


class StockTradingEnv(gym.Env):
    """A-share trading for one account: observation and action as float32 numpy arrays.

    Uses the same step function and rules as the batched envs (see `finrl_tutorial.envs.core`).
    ``terminated`` means ruin; ``truncated`` means the episode length (``episode_days``) or the data's end was reached.
    ``info`` has ``wealth``, ``fee``, ``traded_value``, ``dividend`` (cash dividends received on
    the step, pre-tax), ``dividend_tax`` (withheld on the step, `EnvConfig.dividend_tax`), ``day`` and ``date``;
    after a step also ``market_reward``, ``overnight_reward`` and ``reward_per_weight``, the parts of the reward that the
    day's prices set whatever the action (`finrl_tutorial.envs.core.reward_references`).
    """

    metadata = {"render_modes": []}

    def __init__(self, market: MarketData, config: EnvConfig | None = None, dtype: torch.dtype = torch.float64):
        self.config = check_env_arguments("StockTradingEnv", market, config, dtype)
        self.market = market.to("cpu", dtype)
        self.arrays = MarketArrays.from_market(self.market, self.config.fees, self.config)
        self.dtype = dtype
        size = observation_size(self.market.num_stocks, self.market.num_features)
        self.observation_space = gym.spaces.Box(-OBSERVATION_BOUND, OBSERVATION_BOUND, shape=(size,),
                                                dtype=np.float32)
        self.action_space = gym.spaces.Box(-1.0, 1.0, shape=(self.market.num_stocks,), dtype=np.float32)
        self.account = None

    def _obs(self) -> np.ndarray:
        return observe(self.account, self.arrays).numpy().astype(np.float32)

    def _info(self, **extra) -> dict:
        day = int(self.account.day)
        return {"wealth": float(self.account.wealth), "day": day, "date": str(self.market.dates[day]), **extra}

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        check_reset_options(options)
        if seed is not None:
            check_int("StockTradingEnv.reset", "seed", seed, minimum=0)  # gymnasium takes seeds >= 0 only
        super().reset(seed=seed)
        uniform = torch.tensor(self.np_random.random(), dtype=torch.float64)
        start = draw_start_days(uniform, self.arrays.num_days, self.config)
        if options and "start_day" in options:
            start = start_days_option(options["start_day"], 1, self.arrays.num_days, "cpu")[0]
        self.account = initial_account(start, self.market.num_stocks, self.config, self.dtype)
        return self._obs(), self._info()

    def step(self, action):
        if self.account is None:
            raise RuntimeError("call reset() before step()")
        check_action_tensor(action)
        if isinstance(action, torch.Tensor):  # a policy's output: on a GPU, or still attached to its graph
            action = action.detach().cpu()
        try:
            values = np.asarray(action, dtype=np.float64)
        except (TypeError, ValueError):
            raise InputError(f"action must be {self.market.num_stocks} numbers (one per stock), "
                             f"got {type(action).__name__}") from None
        if values.shape != (self.market.num_stocks,):
            raise InputError(f"action has shape {values.shape}, expected ({self.market.num_stocks},): "
                             "one value in [-1, 1] per stock")
        bad = np.flatnonzero(~np.isfinite(values))
        if len(bad):
            raise InputError(f"action has non-finite value(s) {values[bad[:3]].tolist()} for stock(s) "
                             f"{[self.market.tickers[i] for i in bad[:3]]}: a NaN would poison the account")
        action = torch.as_tensor(values, dtype=self.dtype)
        market_reward, overnight_reward, reward_per_weight = reward_references(self.account, self.arrays, self.config)
        self.account, reward, terminated, truncated, fee, traded, dividend, tax = step_account(
            self.account, action, self.arrays, self.config)
        info = self._info(fee=float(fee), traded_value=float(traded), dividend=float(dividend),
                          dividend_tax=float(tax), market_reward=float(market_reward),
                          overnight_reward=float(overnight_reward),
                          reward_per_weight=reward_per_weight.numpy())
        return self._obs(), float(reward), bool(terminated), bool(truncated), info
