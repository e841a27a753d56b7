"""CUDA-graph replay of the batched env step and of a whole rollout (GPU only).

A captured graph replays the recorded kernels with no Python and no launch overhead; it needs
static shapes, no host synchronisation and fixed memory addresses, which the step function and
`VecStockTradingEnv` (state written in place) provide. Random numbers advance on every replay:
the env's draws come from in-place counters, and the policy's noise uses the default CUDA
generator, which graphs handle by themselves.
"""
from __future__ import annotations

import torch


def _warm_up(function, times: int = 3):
    """Run ``function`` on a side stream first, as CUDA-graph capture requires."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(times):
            function()
    torch.cuda.current_stream().wait_stream(stream)


def _new_graph(env) -> torch.cuda.CUDAGraph:
    # The env's start-day draws come from counters it stores in place (`env.rng_state`), so they
    # advance on every replay with no generator to register.
    return torch.cuda.CUDAGraph()


class GraphedEnvStep:
    """``step(action)`` of a CUDA `VecStockTradingEnv`, replayed from one captured graph.

    The returned tensors are the graph's static outputs: they are overwritten by the next call,
    so clone what you keep.
    """

    def __init__(self, env):
        if env.device.type != "cuda":
            raise ValueError("CUDA graphs need the env on a CUDA device")
        if env.account is None:
            env.reset()
        self.env = env
        self.action = torch.zeros(env.num_envs, env.action_dim, device=env.device, dtype=env.dtype)
        _warm_up(lambda: env.step(self.action))
        self.graph = _new_graph(env)
        with torch.cuda.graph(self.graph):
            self.outputs = env.step(self.action)

    def step(self, action: torch.Tensor):
        self.action.copy_(action)
        self.graph.replay()
        return self.outputs


class GraphedRollout:
    """A whole ``collect_rollout`` (policy forward, sampling, env step, storage) as one graph.

    The agent's weights are read in place, so optimiser steps between replays are seen by the
    next rollout. ``collect()`` fills ``rollout`` and returns it.
    """

    def __init__(self, env, agent, rollout, obs: torch.Tensor):
        from ..agents.ppo import collect_rollout

        self.obs = obs.clone()
        self.rollout = rollout

        def run():
            self.obs.copy_(collect_rollout(env, agent, rollout, self.obs))

        _warm_up(run, times=2)
        self.graph = _new_graph(env)
        with torch.cuda.graph(self.graph):
            run()

    def collect(self):
        self.graph.replay()
        return self.rollout
