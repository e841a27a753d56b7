"""Env throughput: env-steps per second of each env kind (random actions, auto-reset on)."""
from __future__ import annotations

import gymnasium
import numpy as np
import torch

from ..data import load_market
from ..envs import EnvConfig, GraphedEnvStep, StockTradingEnv, VecStockTradingEnv, VmapStockTradingEnv
from ..errors import check_choice, check_int, check_real, require_device
from ..provenance import machine
from .common import market_with_stocks, positive_int, positive_seconds, sync_for, timed

ENV_KINDS = ("single", "vec", "vmap", "subproc")


def add_arguments(kinds) -> None:
    parser = kinds.add_parser("env", help="env-steps/s of single | vec | vmap | subproc envs")
    parser.add_argument("--env", nargs="+", choices=ENV_KINDS, default=["vec"])
    parser.add_argument("--num-envs", type=positive_int, nargs="+", default=[64])
    parser.add_argument("--stocks", type=positive_int, default=30, help="columns (the sample's 15 stocks repeated)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--seconds", type=positive_seconds, default=3.0, help="time per measurement (> 0)")
    parser.add_argument("--threads", type=positive_int, default=1)
    parser.add_argument("--dividend-tax", nargs="+", choices=("off", "on"), default=None,
                        help="measure with EnvConfig.dividend_tax off and/or on (default: the EnvConfig default)")


def measure_env(kind: str, market, num_envs: int, device="cpu", seconds: float = 3.0,
                cuda_graph: bool = False, config: EnvConfig | None = None) -> dict:
    """One throughput record for ``kind`` with ``num_envs`` sub-envs; ``cuda_graph`` replays the
    batched (``vec``) step from a captured CUDA graph (`finrl_tutorial.envs.graph`); ``config``
    the env's settings (default `EnvConfig()`)."""
    check_choice("measure_env", "kind", kind, ENV_KINDS)
    check_int("measure_env", "num_envs", num_envs, minimum=1)
    check_real("measure_env", "seconds", seconds, low=0, low_open=True)
    require_device(device)
    config = EnvConfig() if config is None else config
    stocks = market.num_stocks
    if kind == "single":
        env = StockTradingEnv(market, config, dtype=torch.float32)
        env.reset(seed=0)
        rng = np.random.default_rng(0)

        def step():
            _, _, terminated, truncated, _ = env.step(rng.uniform(-1, 1, stocks).astype(np.float32))
            if terminated or truncated:
                env.reset()
        calls, elapsed = timed(step, seconds)
        num_envs = 1
    elif kind == "subproc":
        env = gymnasium.vector.AsyncVectorEnv([lambda: StockTradingEnv(market, config, dtype=torch.float32)
                                               for _ in range(num_envs)], context="spawn")
        env.reset(seed=0)
        rng = np.random.default_rng(0)
        try:
            calls, elapsed = timed(lambda: env.step(rng.uniform(-1, 1, (num_envs, stocks)).astype(np.float32)),
                                   seconds)
        finally:
            env.close()
    else:
        cls = VecStockTradingEnv if kind == "vec" else VmapStockTradingEnv
        env = cls(market, num_envs, config, device=device, seed=0, check_actions=False)  # as training steps it
        env.reset()
        if cuda_graph:
            env_step = GraphedEnvStep(env).step
        else:
            env_step = env.step
        generator = torch.Generator(device=env.device).manual_seed(0)
        actions = torch.rand(64, num_envs, stocks, generator=generator, device=env.device) * 2 - 1
        counter = [0]

        def step():
            counter[0] += 1
            env_step(actions[counter[0] % 64])
        calls, elapsed = timed(step, seconds, sync=sync_for(env.device))
    return {"bench": "env", "env": kind, "mode": "cuda_graph" if cuda_graph else "eager", "num_envs": num_envs,
            "stocks": stocks, "device": str(device), "dividend_tax": config.dividend_tax,
            "steps": calls, "seconds": round(elapsed, 4),
            "env_steps_per_s": calls * num_envs / elapsed, **machine()}


def run(args):
    market = market_with_stocks(load_market().train, args.stocks)
    configs = [EnvConfig()] if args.dividend_tax is None else [EnvConfig(dividend_tax=t == "on")
                                                               for t in args.dividend_tax]
    for kind in args.env:
        for num_envs in args.num_envs:
            for config in configs:
                yield measure_env(kind, market, num_envs, args.device, args.seconds, config=config)
