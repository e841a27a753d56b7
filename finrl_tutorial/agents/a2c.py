"""Advantage actor-critic (A2C): PPO's rollout, GAE and update loop with a plain policy
gradient, one pass over each (short) rollout and no clipping. Only the defaults and the loss
differ from `ppo.py`: the defaults live here, the loss (`a2c_policy_loss`) beside PPO's in
`ppo.py`, where `policy_loss_for` picks one of the two by ``config.algo``."""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import strict_fields
from .ppo import PPOConfig


@strict_fields
@dataclass
class A2CConfig(PPOConfig):
    """PPOConfig with A2C's defaults: short rollouts, one full-batch step per iteration."""

    algo: str = "a2c"
    """Always ``a2c``."""
    horizon_len: int = 8
    """Rollout steps per env per iteration (A2C updates often, on fresh data)."""
    batch_size: int = 1 << 30
    """The whole rollout is one batch."""
    repeat_times: int = 1
    """One pass: the samples are on-policy only once."""
    learning_rate: float = 7e-4
    """Adam step size (A2C's usual RMSprop rate, with Adam)."""
    gae_lambda: float = 1.0
    """n-step returns over the short rollout."""
    max_grad_norm: float = 0.5
    """Gradient-norm clip."""

