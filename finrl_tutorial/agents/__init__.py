"""RL agents: a single-file PPO and A2C sharing its rollout and advantage code; a rollout captured
as one CUDA graph (`GraphedRollout`)."""
from .a2c import A2CConfig, a2c_policy_loss
from .graph import GraphedRollout
from .ppo import (ActorCritic, PPOConfig, Rollout, collect_rollout, compute_gae, make_optimizer, ppo_policy_loss,
                  update)


def make_config(algo: str = "ppo", **overrides) -> PPOConfig:
    """The config of ``algo`` (``ppo`` or ``a2c``) with its own defaults, then ``overrides``."""
    if algo not in ("ppo", "a2c"):
        raise ValueError(f"unknown algo {algo!r}: use 'ppo' or 'a2c'")
    return (A2CConfig if algo == "a2c" else PPOConfig)(**overrides)


def policy_loss_for(config: PPOConfig):
    """The policy loss of ``config.algo`` as ``loss(new_log_prob, old_log_prob, advantages)``."""
    if config.algo == "a2c":
        return a2c_policy_loss
    return lambda new, old, adv: ppo_policy_loss(new, old, adv, config.clip_range)


__all__ = ["A2CConfig", "ActorCritic", "GraphedRollout", "PPOConfig", "Rollout", "a2c_policy_loss", "collect_rollout",
           "compute_gae", "make_config", "make_optimizer", "policy_loss_for", "ppo_policy_loss", "update"]
