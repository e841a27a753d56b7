"""Whole-loop throughput: samples/s of rollout + GAE + update, as the trainer runs them."""
from __future__ import annotations

import time

import torch

from ..agents import ActorCritic, Rollout, collect_rollout, make_config, make_optimizer, policy_loss_for, update
from ..data import load_market
from ..envs import VecStockTradingEnv
from ..provenance import machine
from .common import market_with_stocks, sync_for


def add_arguments(kinds) -> None:
    parser = kinds.add_parser("train", help="samples/s of the whole PPO/A2C loop")
    parser.add_argument("--algo", choices=("ppo", "a2c"), default="ppo")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--num-envs", type=int, nargs="+", default=[64])
    parser.add_argument("--horizon-len", type=int, default=None)
    parser.add_argument("--stocks", type=int, default=30)
    parser.add_argument("--iterations", type=int, default=5, help="measured iterations (after one warm-up)")
    parser.add_argument("--threads", type=int, default=1)


def measure_loop(market, config, env_config=None, iterations: int = 5) -> dict:
    """Time ``iterations`` training iterations (one warm-up first): rollout and update apart."""
    torch.manual_seed(config.seed)
    env = VecStockTradingEnv(market, config.num_envs, env_config, device=config.device, seed=config.seed,
                             check_actions=False)  # as the trainer runs it
    agent = ActorCritic.from_config(env.observation_dim, env.action_dim, config, env.config.action_mode).to(env.device)
    optimizer = make_optimizer(agent, config)
    rollout = Rollout.empty(config.horizon_len, config.num_envs, env.observation_dim, env.action_dim, env.device)
    loss = policy_loss_for(config)
    sync = sync_for(env.device)
    obs, _ = env.reset()
    rollout_time = update_time = 0.0
    for i in range(iterations + 1):
        start = time.perf_counter()
        obs = collect_rollout(env, agent, rollout, obs)
        sync()
        middle = time.perf_counter()
        update(agent, optimizer, rollout, config, loss)
        sync()
        if i:  # the first iteration warms up allocators and kernels
            rollout_time += middle - start
            update_time += time.perf_counter() - middle
    samples = iterations * config.rollout_size
    return {"bench": "train", "algo": config.algo, "device": str(env.device), "num_envs": config.num_envs,
            "horizon_len": config.horizon_len, "batch_size": config.batch_size,
            "repeat_times": config.repeat_times, "stocks": market.num_stocks, "samples": samples,
            "seconds": round(rollout_time + update_time, 4),
            "samples_per_s": samples / (rollout_time + update_time),
            "rollout_env_steps_per_s": samples / rollout_time, **machine()}


def run(args):
    market = market_with_stocks(load_market().train, args.stocks)
    for num_envs in args.num_envs:
        extra = {"horizon_len": args.horizon_len} if args.horizon_len else {}
        config = make_config(args.algo, num_envs=num_envs, device=args.device, **extra)
        yield measure_loop(market, config, iterations=args.iterations)
