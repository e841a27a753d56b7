"""RL agents: a single-file PPO (config, network, rollout, GAE, update, and the loop `learn`)
and A2C sharing it; the loop's plumbing (collectors, learner contexts: `collect.py`); the code
that is there only for speed (`fast.py`); a rollout captured as one CUDA graph (`GraphedRollout`)."""
from ..errors import ConfigError
from .a2c import A2CConfig
from .collect import Collector, EnvCollector, LearnerContext, Rollout, SingleProcessContext
from .graph import GraphedRollout
from .ppo import (ActorCritic, PPOConfig, a2c_policy_loss, collect_rollout, compute_gae, learn, make_optimizer,
                  policy_loss_for, ppo_policy_loss, update)


def make_config(algo: str = "ppo", **overrides) -> PPOConfig:
    """The config of ``algo`` (``ppo`` or ``a2c``) with its own defaults, then ``overrides``."""
    if algo not in ("ppo", "a2c"):
        raise ConfigError(f"unknown algo {algo!r}: use 'ppo' or 'a2c'")
    return (A2CConfig if algo == "a2c" else PPOConfig)(**overrides)


__all__ = ["A2CConfig", "ActorCritic", "Collector", "EnvCollector", "GraphedRollout", "LearnerContext",
           "PPOConfig", "Rollout", "SingleProcessContext", "a2c_policy_loss", "collect_rollout", "compute_gae",
           "learn", "make_config", "make_optimizer", "policy_loss_for", "ppo_policy_loss", "update"]
