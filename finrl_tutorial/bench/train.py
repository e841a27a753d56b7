"""Whole-loop throughput: samples/s of rollout + GAE + update, timed inside the trainer's own loop
(`finrl_tutorial.agents.learn`)."""
from __future__ import annotations

import time

import torch

from ..agents import ActorCritic, EnvCollector, collect_rollout, learn, make_config
from ..data import load_market
from ..envs import VecStockTradingEnv
from ..provenance import loadavg, machine
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


class _TimedCollector(EnvCollector):
    """The trainer's in-process collector, timing each rollout (synchronised with the device)."""

    def __init__(self, env, sync):
        super().__init__(env, collect_rollout)
        self.sync, self.ends, self.seconds = sync, [], []

    def collect(self, agent, horizon_len):
        started = time.perf_counter()
        rollout = super().collect(agent, horizon_len)
        self.sync()
        self.ends.append(time.perf_counter())
        self.seconds.append(self.ends[-1] - started)
        return rollout


def measure_loop(market, config, env_config=None, iterations: int = 5) -> dict:
    """Time ``iterations`` iterations of `finrl_tutorial.agents.learn` (one warm-up first):
    rollout and update apart."""
    torch.manual_seed(config.seed)
    env = VecStockTradingEnv(market, config.num_envs, env_config, device=config.device, seed=config.seed,
                             check_actions=False)  # as the trainer runs it
    agent = ActorCritic.from_config(env.observation_dim, env.action_dim, config, env.config.action_mode).to(env.device)
    collector = _TimedCollector(env, sync_for(env.device))
    updated = []  # when each iteration's update ended

    def update_done(iteration, rollout, losses):
        collector.sync()
        updated.append(time.perf_counter())

    learn(collector, agent, config, iterations=iterations + 1, on_iteration=update_done)
    # the first iteration warms up allocators and kernels
    rollout_time = sum(collector.seconds[1:])
    update_time = sum(end - start for start, end in zip(collector.ends[1:], updated[1:]))
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
        # the load around each size: on a shared machine a busy minute slows the same work
        before = loadavg()
        row = measure_loop(market, config, iterations=args.iterations)
        yield row | {"loadavg_before": before, "loadavg_after": loadavg()}
