"""CUDA-graph replay of the batched env step (GPU only).

A captured graph replays the recorded kernels with no Python and no launch overhead; it needs
static shapes, no host synchronisation and fixed memory addresses, which the step function and
`VecStockTradingEnv` (state written in place) provide. Random numbers advance on every replay:
the env's start-day draws come from counters it stores in place (`env.rng_state`), so there is
no generator to register with the graph. A whole rollout (policy and env) as one graph is
`finrl_tutorial.agents.graph.GraphedRollout`, above the agents.
"""
from __future__ import annotations

import torch


def warm_up(function, times: int = 3):
    """Run ``function`` on a side stream first, as CUDA-graph capture requires."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(times):
            function()
    torch.cuda.current_stream().wait_stream(stream)


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
        warm_up(lambda: env.step(self.action))
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.outputs = env.step(self.action)

    def step(self, action: torch.Tensor):
        self.action.copy_(action)
        self.graph.replay()
        return self.outputs
