"""CUDA-graph capture of a whole rollout: policy forward, sampling, env step and storage (GPU only).

It replays `collect_rollout` as one graph, so it lives with the agents, above the env's own graph
(`finrl_tutorial.envs.graph`). The policy's noise comes from the default CUDA generator, which
graphs advance on every replay by themselves.
"""
from __future__ import annotations

import torch

from ..envs.graph import warm_up
from .ppo import collect_rollout


class GraphedRollout:
    """A whole ``collect_rollout`` as one graph.

    The agent's weights are read in place, so optimiser steps between replays are seen by the
    next rollout. ``collect()`` fills ``rollout`` and returns it.
    """

    def __init__(self, env, agent, rollout, obs: torch.Tensor):
        self.obs = obs.clone()
        self.rollout = rollout

        def run():
            self.obs.copy_(collect_rollout(env, agent, rollout, self.obs))

        warm_up(run, times=2)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            run()

    def collect(self):
        self.graph.replay()
        return self.rollout
