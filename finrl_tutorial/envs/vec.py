"""Batched environments: N independent accounts stepped together as tensors on any device."""
from __future__ import annotations

import torch

from ..data.market import MarketData
from ..errors import InputError, check_int
from .core import (Account, EnvConfig, MarketArrays, counter_uniform, draw_start_days, initial_account,
                   observation_size, observe, seed_counters, step_account)


class VecStockTradingEnv:
    """N sub-envs (accounts) on one market, stepped with batched tensor ops.

    Gymnasium's vector API, with torch tensors: ``reset()`` returns ``obs [N, obs_dim], info``;
    ``step(actions [N, S])`` returns ``obs, reward, terminated, truncated, info``. Each sub-env
    starts on its own random day. Finished sub-envs reset in the same step (gymnasium's
    ``SAME_STEP`` autoreset): the returned ``obs`` is the new episode's first observation and
    ``info["final_obs"]`` holds the observation the finished episode ended on (rows of envs that
    did not finish hold their ordinary next observation). ``info`` also has ``wealth`` (before
    any reset), ``fee``, ``traded_value`` and ``dividend`` (cash dividends received) per env. The
    step keeps static shapes and never synchronises with the host, so it can be captured in a
    CUDA graph or compiled with ``torch.compile(fullgraph=True)``.
    """

    def __init__(self, market: MarketData, num_envs: int, config: EnvConfig | None = None, *,
                 device=None, dtype: torch.dtype = torch.float32, seed: int = 0,
                 start_window: tuple[int, int] | None = None, check_actions: bool | None = None):
        check_int("VecStockTradingEnv", "num_envs", num_envs, minimum=1)
        self.config = config or EnvConfig()
        self.market = market.to(device if device is not None else market.device, dtype)
        self.arrays = MarketArrays.from_market(self.market, self.config.fees)
        self.num_envs = num_envs
        self.num_stocks = self.market.num_stocks
        self.device = self.market.device
        self.dtype = dtype
        self.observation_dim = observation_size(self.num_stocks, self.market.num_features)
        self.action_dim = self.num_stocks
        # Per-env random counters (SplitMix64): pure tensor ops, so the step compiles/captures whole.
        self.rng_state = seed_counters(seed, num_envs, self.device)
        self.account: Account | None = None
        # Episodes start on days [lo, hi) only: a worker's or rank's shard of the data.
        self.start_window = start_window
        # A NaN action would poison its account for the rest of the episode. Checking it costs a
        # host sync per step: done on CPU (cheap) unless turned off, skipped on GPUs by default
        # (there a NaN from the policy surfaces as a non-finite loss in the update).
        self.check_actions = self.device.type == "cpu" if check_actions is None else check_actions
        if start_window is not None and not 0 <= start_window[0] < start_window[1] <= self.arrays.num_days - 1:
            raise ValueError(f"start_window {start_window} must lie within [0, {self.arrays.num_days - 1})")

    def _draw_starts(self) -> torch.Tensor:
        counter, uniform = counter_uniform(self.rng_state)
        self.rng_state.copy_(counter)
        return draw_start_days(uniform, self.arrays.num_days, self.config, self.start_window)

    def _fresh_accounts(self) -> Account:
        return initial_account(self._draw_starts(), self.num_stocks, self.config, self.dtype)

    def reset(self, seed: int | None = None):
        if seed is not None:
            self.rng_state.copy_(seed_counters(seed, self.num_envs, self.device))
        self.account = self._fresh_accounts()
        return observe(self.account, self.arrays), {}

    def _step_accounts(self, action: torch.Tensor):
        return step_account(self.account, action, self.arrays, self.config)

    def step(self, action: torch.Tensor):
        if self.account is None:
            raise RuntimeError("call reset() before step()")
        if not isinstance(action, torch.Tensor):
            action = torch.as_tensor(action)
        if tuple(action.shape) != (self.num_envs, self.num_stocks):
            raise InputError(f"actions have shape {tuple(action.shape)}, expected ({self.num_envs}, {self.num_stocks}): "
                             "one row per env, one value in [-1, 1] per stock")
        action = action.to(device=self.device, dtype=self.dtype)
        # (not inside torch.compile or a CUDA graph: the check's host sync would break the graph)
        if self.check_actions and not torch.compiler.is_compiling() and not bool(torch.isfinite(action).all()):
            env, stock = torch.nonzero(~torch.isfinite(action))[0].tolist()
            raise InputError(f"non-finite action {float(action[env, stock])} for env {env}, stock "
                             f"{self.market.tickers[stock]}: a NaN would poison the account")
        stepped, reward, terminated, truncated, fee, traded, dividend = self._step_accounts(action)
        final_obs = observe(stepped, self.arrays)
        done = terminated | truncated
        fresh = self._fresh_accounts()
        # Write the next state into the same tensors every step: fixed addresses let the step be
        # replayed as a CUDA graph (see `finrl_tutorial.envs.graph`).
        for target, new, old in zip(self.account, fresh, stepped):
            target.copy_(torch.where(done.view(-1, *([1] * (new.dim() - 1))), new, old))
        obs = torch.where(done.unsqueeze(-1), observe(self.account, self.arrays), final_obs)
        info = {"final_obs": final_obs, "wealth": stepped.wealth, "fee": fee, "traded_value": traded,
                "dividend": dividend}
        return obs, reward, terminated, truncated, info


class VmapStockTradingEnv(VecStockTradingEnv):
    """The same env, batched by ``torch.func.vmap`` over the one-account step function.

    Where `VecStockTradingEnv` relies on the step function's broadcasting over a leading batch
    dimension, this variant writes nothing batched at all: vmap adds the batch dimension.
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._vmapped = torch.func.vmap(step_account, in_dims=(0, 0, None, None))

    def _step_accounts(self, action: torch.Tensor):
        return self._vmapped(self.account, action, self.arrays, self.config)
