"""The GPU suite: env sweep (eager and CUDA graph), rollout with the policy, whole PPO loop,
and a check that graph replay gives the same results as eager execution."""
from __future__ import annotations

import time
from dataclasses import asdict

import torch

from ..agents import ActorCritic, GraphedRollout, Rollout, make_config, policy_loss_for, update
from ..atomic import write_json
from ..data import load_market
from ..envs import GraphedEnvStep, VecStockTradingEnv
from ..errors import InputError
from ..provenance import machine
from .common import timed
from .env import measure_env

SWEEP = (1, 16, 256, 4096, 16384, 65536, 262144)


def add_arguments(kinds) -> None:
    parser = kinds.add_parser("gpu", help="the whole GPU suite (needs CUDA)")
    parser.add_argument("--num-envs", type=int, nargs="+", default=list(SWEEP))
    parser.add_argument("--loop-envs", type=int, nargs="+", default=[4096, 16384])
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--out", help="also write all records to this JSON file")
    parser.add_argument("--threads", type=int, default=1)


def graph_matches_eager(market, device, num_envs: int = 1024, steps: int = 50) -> bool:
    """Same seed, same actions: eager steps and graph replays end in identical accounts."""
    eager = VecStockTradingEnv(market, num_envs, device=device, seed=3)
    graphed_env = VecStockTradingEnv(market, num_envs, device=device, seed=3)
    eager.reset(), graphed_env.reset()
    graphed = GraphedEnvStep(graphed_env)  # its 3 warm-up steps ran; capture itself only records
    for _ in range(3):
        eager.step(torch.zeros(num_envs, eager.action_dim, device=device))
    generator = torch.Generator(device=device).manual_seed(0)
    for _ in range(steps):
        action = torch.rand(num_envs, eager.action_dim, generator=generator, device=device) * 2 - 1
        eager.step(action)
        graphed.step(action)
    torch.cuda.synchronize()
    return all(torch.equal(a, b) for a, b in zip(eager.account, graphed_env.account))


def run(args):
    if not torch.cuda.is_available():
        raise InputError("bench gpu needs a CUDA GPU; use `bench env --device cpu` on this machine")
    device = torch.device(args.device)
    market = load_market().train.to(device, torch.float32)
    sync = lambda: torch.cuda.synchronize(device)  # noqa: E731
    records = [{"bench": "gpu", "check": "graph_equals_eager", "ok": graph_matches_eager(market, device),
                **machine()}]
    yield records[-1]
    for num_envs in args.num_envs:
        for cuda_graph in (False, True):
            records.append(measure_env("vec", market, num_envs, device, args.seconds, cuda_graph=cuda_graph))
            yield records[-1]
        torch.cuda.empty_cache()

    for num_envs in args.loop_envs:
        config = make_config("ppo", num_envs=num_envs, device=str(device))
        env = VecStockTradingEnv(market, num_envs, device=device, seed=0)
        agent = ActorCritic.from_config(env.observation_dim, env.action_dim, config, env.config.action_mode).to(device)
        optimizer = torch.optim.Adam(agent.parameters(), lr=config.learning_rate, eps=1e-5, capturable=True)
        rollout = Rollout.empty(config.horizon_len, num_envs, env.observation_dim, env.action_dim, device)
        obs, _ = env.reset()
        graphed = GraphedRollout(env, agent, rollout, obs)
        calls, elapsed = timed(graphed.collect, args.seconds, sync=sync)
        records.append({"bench": "rollout", "mode": "cuda_graph", "num_envs": num_envs,
                        "horizon_len": config.horizon_len, "device": str(device),
                        "env_steps_per_s": calls * config.rollout_size / elapsed, **machine()})
        yield records[-1]
        loss = policy_loss_for(config)
        iterations, start = 0, time.perf_counter()
        while time.perf_counter() - start < args.seconds or iterations < 2:
            update(agent, optimizer, graphed.collect(), config, loss)
            iterations += 1
        sync()
        elapsed = time.perf_counter() - start
        records.append({"bench": "train", "mode": "cuda_graph rollout + eager update", "num_envs": num_envs,
                        "config": asdict(config),
                        "device": str(device), "samples_per_s": iterations * config.rollout_size / elapsed,
                        **machine()})
        yield records[-1]
    if args.out:
        write_json(records, args.out)
