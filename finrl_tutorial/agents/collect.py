"""Where the loop's rollouts come from and where its update runs: the plumbing behind `learn`.

`finrl_tutorial.agents.ppo` is the algorithm (config, network, rollout, GAE, losses, update and
the loop `learn`); this module holds what lets that one loop run in every layout, behind two small
interfaces: a `Collector` says where rollouts come from (this process's batched env,
`EnvCollector`, or rollout worker processes, `finrl_tutorial.training.WorkerPool`), a
`LearnerContext` where the update runs (one process, `SingleProcessContext`; DataParallel over
GPUs or one rank of a DDP job, `finrl_tutorial.training.distributed`). `Rollout` is what a
collector hands the update. A collector's ``state_dict`` is what a checkpoint keeps of the envs.
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Callable, ContextManager, Protocol, runtime_checkable

import torch
from torch import nn

from ..envs import Account
from ..errors import ConfigError


@dataclass
class Rollout:
    """One iteration's experience, [horizon_len, num_envs, ...] tensors on the env's device."""

    obs: torch.Tensor
    actions: torch.Tensor
    log_probs: torch.Tensor
    rewards: torch.Tensor
    values: torch.Tensor
    next_values: torch.Tensor  # V(next state): V(final obs) at a truncation, 0 at a termination
    dones: torch.Tensor        # the episode ended after this step (terminated or truncated)
    market_rewards: torch.Tensor     # the env's market_reward: what the day paid, whatever the action
    reward_per_weight: torch.Tensor  # [..., S] the env's reward_per_weight: the day's frictionless reward per unit weight
    sampling_luck: torch.Tensor      # frictionless reward of the sampled action minus the policy's average one
    average_rewards: torch.Tensor    # the env's overnight_reward + the policy's average frictionless reward
    stats: dict = field(default_factory=dict)

    @classmethod
    def empty(cls, horizon_len: int, num_envs: int, obs_dim: int, action_dim: int, device, dtype=torch.float32):
        z = lambda *shape: torch.zeros(horizon_len, num_envs, *shape, device=device, dtype=dtype)  # noqa: E731
        return cls(z(obs_dim), z(action_dim), z(), z(), z(), z(), z(), z(), z(action_dim), z(), z())


@runtime_checkable
class Collector(Protocol):
    """Where rollouts come from: `EnvCollector` (one batched env in this process) or
    `finrl_tutorial.training.WorkerPool` (rollout worker processes, each with its own env)."""

    num_workers: int
    """Rollout processes besides the learner (0: the learner steps the env itself)."""

    def reset(self, seed: int | None = None):
        """Start fresh episodes in every env, seeded by ``seed``."""

    def collect(self, agent: nn.Module, horizon_len: int) -> Rollout:
        """``horizon_len`` steps of every env with ``agent``'s current policy, as one `Rollout`."""

    def update_threads(self) -> ContextManager:
        """The context the update runs in (a worker pool lends the learner its idle cores)."""

    def state_dict(self) -> dict:
        """What a checkpoint needs to continue the episodes exactly: accounts, random states, observations."""

    def load_state_dict(self, state: dict) -> None:
        """Continue from a `state_dict` (a state of another kind of collector is refused in one line)."""

    def close(self) -> None:
        """Release what the collector holds (processes, shared memory). Idempotent."""


def check_saved_account(saved: dict) -> None:
    """A checkpoint's env accounts hold every field an `Account` has now (an older version's lack
    the dividend-tax ledger): anything else is refused in one line, not as a KeyError."""
    missing = [name for name in Account._fields if name not in saved]
    if missing:
        raise ConfigError(f"the checkpoint's env state lacks {', '.join(missing)} (written by an older version): "
                          "start the run again with --overwrite")


class EnvCollector:
    """The in-process `Collector`: one batched env (`finrl_tutorial.envs.VecStockTradingEnv`)
    stepped by ``step_rollout`` (PPO's `collect_rollout`: ``(env, agent, rollout, obs) -> obs``)
    into a rollout buffer allocated once; episodes run on across iterations (the observation to
    continue from is kept)."""

    num_workers = 0

    def __init__(self, env, step_rollout: Callable):
        self.env, self.step_rollout = env, step_rollout
        self.obs: torch.Tensor | None = None
        self.rollout: Rollout | None = None

    def reset(self, seed: int | None = None):
        self.obs, info = self.env.reset(seed=seed)
        return self.obs, info

    def collect(self, agent: nn.Module, horizon_len: int) -> Rollout:
        if self.obs is None:
            self.reset()
        if self.rollout is None or self.rollout.obs.shape[0] != horizon_len:
            env = self.env
            self.rollout = Rollout.empty(horizon_len, env.num_envs, env.observation_dim, env.action_dim, env.device)
        self.obs = self.step_rollout(self.env, agent, self.rollout, self.obs)
        return self.rollout

    def update_threads(self) -> ContextManager:
        return contextlib.nullcontext()  # the update keeps this process's threads

    def state_dict(self) -> dict:
        if self.obs is None:
            self.reset()
        copy = lambda tensor: tensor.detach().to("cpu", copy=True)  # noqa: E731  (a snapshot: the env steps on)
        return {"obs": copy(self.obs), "rng_env": copy(self.env.rng_state),
                "env_account": {name: copy(tensor) for name, tensor in self.env.account._asdict().items()}}

    def load_state_dict(self, state: dict) -> None:
        if "env_account" not in state or "rng_env" not in state:
            written_by = f"{len(state['workers'])} rollout workers" if "workers" in state else "an older version"
            raise ConfigError(f"the checkpoint holds no state of an in-process env (it was written by {written_by}): "
                              "resume with the --workers it was started with")
        check_saved_account(state["env_account"])
        if self.obs is None:
            self.reset()
        # copied into the env's own tensors: their addresses stay fixed (CUDA graphs replay them)
        self.env.rng_state.copy_(state["rng_env"])
        for name, tensor in self.env.account._asdict().items():
            tensor.copy_(state["env_account"][name])
        self.obs = state["obs"].to(self.obs.device, copy=True)

    def close(self) -> None:
        self.rollout = None


@runtime_checkable
class LearnerContext(Protocol):
    """Where the update runs: `SingleProcessContext` (the default),
    `finrl_tutorial.training.DataParallelContext` (one process, the update split over GPUs) or
    `finrl_tutorial.training.DistributedContext` (one rank of a DDP job)."""

    rank: int
    world_size: int
    device: torch.device
    is_main: bool
    """Rank 0: the one that validates, logs and writes files."""

    def wrap(self, agent: nn.Module) -> nn.Module:
        """The module the update's forward and backward run through."""

    def all_reduce_mean(self, x) -> torch.Tensor:
        """The mean of ``x`` over all ranks."""

    def gather(self, obj) -> list | None:
        """Every rank's ``obj`` on the main rank, in rank order (None on the others): each rank's
        env state for the main rank's checkpoint."""

    def close(self) -> None:
        """Leave the group of processes, if any."""


class SingleProcessContext:
    """One process on one device: the update runs through the agent itself."""

    rank = 0
    world_size = 1
    is_main = True

    def __init__(self, device="cpu"):
        self.device = torch.device(device)

    def wrap(self, agent: nn.Module) -> nn.Module:
        return agent

    def all_reduce_mean(self, x):
        return x

    def gather(self, obj) -> list:
        return [obj]

    def close(self) -> None:
        pass
