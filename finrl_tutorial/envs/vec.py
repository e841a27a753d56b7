"""Batched environments: N independent accounts stepped together as tensors on any device."""
from __future__ import annotations

import gymnasium as gym
import numpy as np
import torch
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from ..data.market import MarketData
from ..errors import InputError, check_int, require_device
from .core import (OBSERVATION_BOUND, Account, EnvConfig, MarketArrays, check_action_tensor, check_env_arguments,
                   check_reset_options, counter_uniform, draw_start_days, initial_account, observation_size, observe,
                   reward_references, seed_counters, start_days_option, step_account)


class VecStockTradingEnv(VectorEnv):
    """N sub-envs (accounts) on one market, stepped with batched tensor ops: a
    ``gymnasium.vector.VectorEnv`` that speaks torch.

    ``reset(seed=..., options=...)`` returns ``obs [N, obs_dim], info``; ``step(actions [N, S])``
    returns ``obs, reward [N], terminated [N], truncated [N], info``; ``close()`` releases the
    accounts. ``single_observation_space``/``single_action_space`` are the spaces of one account
    (the same as `StockTradingEnv`'s), ``observation_space``/``action_space`` the batched ones.
    Each sub-env starts on its own random day. ``reset(seed=s)`` reseeds: the same seed gives
    the same episodes (start days), on every device; ``reset()`` continues the stream. The only
    option is ``{"start_day": day}`` (one day, or one per env) for the first episodes.

    Finished sub-envs restart in the same step (``metadata["autoreset_mode"]`` is
    ``AutoresetMode.SAME_STEP``): the returned ``obs`` row is the new episode's first
    observation, ``info["final_obs"]`` holds the observation the finished episode ended on and
    ``info["final_info"]`` its step info, where ``info["_final_obs"]``/``info["_final_info"]``
    (= ``terminated | truncated``) are True. ``info`` also has, for every env, the step just
    taken: ``wealth`` (before any reset), ``fee``, ``traded_value``, ``dividend`` (cash
    dividends received, pre-tax) and ``dividend_tax`` (withheld on the step).

    Gymnasium rules relaxed, as gymnasium's torch wrappers (``NumpyToTorch``) relax them:
    observations, rewards, flags and info values are torch tensors on the env's device, not
    numpy arrays (the spaces are numpy ``Box``es: check ``obs.cpu().numpy()`` against them);
    actions may be a tensor or anything ``torch.as_tensor`` takes. ``final_obs`` is a dense
    ``[N, obs_dim]`` tensor, not an object array with ``None`` for envs that did not finish
    (their rows hold the ordinary next observation), and ``final_obs``/``final_info`` are in
    every step's ``info``, not only when an env finished: deciding that would cost a host sync.
    The top-level ``wealth``, ``fee``, ... describe the step just taken by every env, also one
    that finished (gymnasium's ``SyncVectorEnv`` puts the reset info there, which is empty here).
    ``market_reward``, ``overnight_reward`` and ``reward_per_weight`` are the parts of the step's reward that the day's
    prices set whatever the action (`finrl_tutorial.envs.core.reward_references`).
    The step keeps static shapes and never synchronises with the host, so it can be captured
    in a CUDA graph or compiled with ``torch.compile(fullgraph=True)``.
    """

    metadata = {"autoreset_mode": AutoresetMode.SAME_STEP, "render_modes": []}
    render_mode = None

    def __init__(self, market: MarketData, num_envs: int, config: EnvConfig | None = None, *,
                 device=None, dtype: torch.dtype = torch.float32, seed: int = 0,
                 start_window: tuple[int, int] | None = None, check_actions: bool | None = None):
        check_int("VecStockTradingEnv", "num_envs", num_envs, minimum=1)
        check_int("VecStockTradingEnv", "seed", seed)
        self.config = check_env_arguments(type(self).__name__, market, config, dtype)
        if device is not None:
            require_device(device)
        self.market = market.to(device if device is not None else market.device, dtype)
        self.arrays = MarketArrays.from_market(self.market, self.config.fees, self.config)
        self.num_envs = num_envs
        self.num_stocks = self.market.num_stocks
        self.device = self.market.device
        self.dtype = dtype
        self.observation_dim = observation_size(self.num_stocks, self.market.num_features)
        self.action_dim = self.num_stocks
        space_dtype = _numpy_dtype(dtype)
        self.single_observation_space = gym.spaces.Box(-OBSERVATION_BOUND, OBSERVATION_BOUND,
                                                       shape=(self.observation_dim,), dtype=space_dtype)
        self.single_action_space = gym.spaces.Box(-1.0, 1.0, shape=(self.action_dim,), dtype=space_dtype)
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
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

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        check_reset_options(options)
        start_days = None
        if options and "start_day" in options:
            start_days = start_days_option(options["start_day"], self.num_envs, self.arrays.num_days, self.device)
        if seed is not None:
            check_int(f"{type(self).__name__}.reset", "seed", seed)
            # gymnasium's own generator (`np_random`, unused by the env) wants a seed >= 0
            super().reset(seed=seed % (1 << 64))
            # copy_: a captured CUDA graph keeps reading these same counters
            self.rng_state.copy_(seed_counters(seed, self.num_envs, self.device))
        starts = self._draw_starts()  # drawn even when start_day is given: later episodes stay the same
        self.account = initial_account(starts if start_days is None else start_days, self.num_stocks,
                                       self.config, self.dtype)
        return observe(self.account, self.arrays), {}

    def _step_accounts(self, action: torch.Tensor):
        return step_account(self.account, action, self.arrays, self.config)

    def step(self, actions: torch.Tensor):
        if self.account is None:
            raise RuntimeError("call reset() before step()")
        check_action_tensor(actions)
        action = actions
        if not isinstance(action, torch.Tensor):  # (a tensor skips this: the compiled step has no try block)
            try:
                action = torch.as_tensor(actions)
            except (TypeError, ValueError, RuntimeError):
                raise InputError(f"actions must be numbers, shape ({self.num_envs}, {self.num_stocks}), "
                                 f"got {type(actions).__name__}") from None
        if tuple(action.shape) != (self.num_envs, self.num_stocks):
            raise InputError(f"actions have shape {tuple(action.shape)}, expected ({self.num_envs}, {self.num_stocks}): "
                             "one row per env, one value in [-1, 1] per stock")
        action = action.to(device=self.device, dtype=self.dtype)
        # (not inside torch.compile or a CUDA graph: the check's host sync would break the graph)
        if self.check_actions and not torch.compiler.is_compiling() and not bool(torch.isfinite(action).all()):
            env, stock = torch.nonzero(~torch.isfinite(action))[0].tolist()
            raise InputError(f"non-finite action {float(action[env, stock])} for env {env}, stock "
                             f"{self.market.tickers[stock]}: a NaN would poison the account")
        market_reward, overnight_reward, reward_per_weight = reward_references(self.account, self.arrays, self.config)
        stepped, reward, terminated, truncated, fee, traded, dividend, tax = self._step_accounts(action)
        final_obs = observe(stepped, self.arrays)
        done = terminated | truncated
        fresh = self._fresh_accounts()
        # Write the next state into the same tensors every step: fixed addresses let the step be
        # replayed as a CUDA graph (see `finrl_tutorial.envs.graph`).
        for target, new, old in zip(self.account, fresh, stepped):
            target.copy_(torch.where(done.view(-1, *([1] * (new.dim() - 1))), new, old))
        obs = torch.where(done.unsqueeze(-1), observe(self.account, self.arrays), final_obs)
        step_info = {"wealth": stepped.wealth, "fee": fee, "traded_value": traded, "dividend": dividend,
                     "dividend_tax": tax, "market_reward": market_reward, "overnight_reward": overnight_reward,
                     "reward_per_weight": reward_per_weight}
        info = {**step_info, "final_obs": final_obs, "_final_obs": done, "final_info": step_info,
                "_final_info": done}
        return obs, reward, terminated, truncated, info

    def close_extras(self, **kwargs) -> None:
        """Drop the accounts (``VectorEnv.close`` calls this once): step() then needs a reset()."""
        self.account = None


def _numpy_dtype(dtype: torch.dtype) -> np.dtype:
    """The numpy dtype of the spaces for an env computing in ``dtype``."""
    if not dtype.is_floating_point:
        raise InputError(f"the env's dtype must be a floating-point torch dtype, got {dtype}")
    try:
        return torch.empty(0, dtype=dtype).numpy().dtype
    except TypeError:  # bfloat16 has no numpy dtype
        raise InputError(f"the env's dtype {dtype} has no numpy counterpart for its spaces: "
                         "use float16, float32 or float64") from None


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
