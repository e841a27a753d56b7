"""Checkpoints: written atomically (`finrl_tutorial.atomic.atomic_save`), loadable with
``torch.load(weights_only=True)``."""
from __future__ import annotations

import math
import numbers
import os
import warnings
from dataclasses import asdict, fields
from pathlib import Path

import torch

from ..agents import ActorCritic, PPOConfig, make_config
from ..envs import EnvConfig
from ..errors import InputError
from ..rules import FeeSchedule


class CheckpointError(InputError):
    """A file that is not a usable checkpoint (unreadable, incomplete, or for another network)."""


class MissingCheckpointError(CheckpointError, FileNotFoundError):
    """No checkpoint at the path given."""


def config_to_dict(config) -> dict:
    """A dataclass config as plain JSON-able values (tuples become lists)."""
    return asdict(config)


def _number(value) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value) and value >= 0


def fees_from_dict(values) -> FeeSchedule:
    """The `FeeSchedule` a checkpoint saved, every field checked: a rate is a finite number >= 0, a
    schedule a list of ``[date, rate]`` steps. Anything else is refused, never replaced by the
    default fees (a backtest with other fees than the agent's is a silently wrong result)."""
    if not isinstance(values, dict):
        raise CheckpointError(f"the checkpoint's env_config.fees is {values!r}, not a fee schedule")
    known = {f.name: f for f in fields(FeeSchedule)}
    unknown = sorted(set(values) - set(known))
    if unknown:
        raise CheckpointError(f"the checkpoint's env_config.fees has unknown fields {', '.join(unknown)}")
    checked = {}
    for name, value in values.items():
        if isinstance(known[name].default, tuple):  # a schedule: (date, rate) steps
            steps = value if isinstance(value, (list, tuple)) else None
            if not steps or not all(isinstance(step, (list, tuple)) and len(step) == 2 and isinstance(step[0], str)
                                    and _number(step[1]) for step in steps):
                raise CheckpointError(f"the checkpoint's env_config.fees.{name} is {value!r}, not a list of "
                                      "[date, rate] steps with rates >= 0")
            checked[name] = tuple(tuple(step) for step in steps)
        elif not _number(value):
            raise CheckpointError(f"the checkpoint's env_config.fees.{name} is {value!r}, not a number >= 0")
        else:
            checked[name] = value
    try:
        return FeeSchedule(**checked)
    except (TypeError, ValueError) as error:
        raise CheckpointError(f"the checkpoint's env_config.fees cannot be used: {error}") from None


def env_config_from_dict(values: dict) -> EnvConfig:
    """The `EnvConfig` a checkpoint saved; a field of the wrong type or value is refused (one line)."""
    if not isinstance(values, dict):
        raise CheckpointError(f"the checkpoint's env_config is {values!r}, not a config")
    values = dict(values)
    if "fees" in values:
        values["fees"] = fees_from_dict(values["fees"])
    known = {f.name for f in fields(EnvConfig)}
    try:
        return EnvConfig(**{k: v for k, v in values.items() if k in known})
    except (InputError, TypeError, ValueError) as error:
        raise CheckpointError(f"the checkpoint's env_config cannot be used: {error}") from None


def agent_config_from_dict(values: dict) -> PPOConfig:
    """The `PPOConfig` a checkpoint saved; a field of the wrong type or value is refused (one line)."""
    if not isinstance(values, dict):
        raise CheckpointError(f"the checkpoint's config is {values!r}, not a config")
    values = dict(values)
    algo = values.pop("algo", "ppo")
    # checkpoints written before the stockwise network and the portfolio head existed
    values.setdefault("network", "mlp")
    values.setdefault("portfolio_head", False)
    known = {f.name for f in fields(PPOConfig)}
    try:
        return make_config(algo, **{k: v for k, v in values.items() if k in known})
    except (InputError, TypeError, ValueError) as error:
        raise CheckpointError(f"the checkpoint's config cannot be used: {error}") from None


_REQUIRED_KEYS = ("model", "config", "env_config", "obs_dim", "action_dim", "tickers", "feature_names")


_PREAMBLE = ("Weights only load failed", "Check the documentation", "Please file an issue", "WeightsUnpickler error")


def _reason(error: Exception, limit: int = 300) -> str:
    """torch.load's error as one short line: the reason, without the dozen lines of advice around
    it (a refused pickle says which global it tried to load)."""
    text = str(error)
    if "WeightsUnpickler error:" in text:
        text = text.split("WeightsUnpickler error:", 1)[1]
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    reasons = [line for line in lines if not line.startswith(_PREAMBLE)]
    line = (reasons or lines or [type(error).__name__])[0]
    return line if len(line) <= limit else line[:limit - 3] + "..."


def load_checkpoint(path: str | os.PathLike, device="cpu") -> dict:
    """Load a checkpoint safely (tensors and plain values only); a clear error if it is not one."""
    path = Path(path)
    if path.is_dir():
        raise CheckpointError(f"{path} is a folder, not a checkpoint (e.g. {path}/checkpoints/best.pt)")
    if not path.is_file():
        raise MissingCheckpointError(f"no checkpoint at {path}")
    try:
        with warnings.catch_warnings():  # torch warns about odd pickle protocols on stderr: the error says it
            warnings.simplefilter("ignore")
            state = torch.load(path, map_location=device, weights_only=True)
    except Exception as error:
        raise CheckpointError(f"{path} is not a readable finrl_tutorial checkpoint: {_reason(error)}") from None
    if not isinstance(state, dict) or "model" not in state or "config" not in state:
        raise CheckpointError(f"{path} is not a finrl_tutorial checkpoint (no model/config inside)")
    missing = [key for key in _REQUIRED_KEYS if key not in state]
    if missing:  # what agent_from_checkpoint and the backtest read
        raise CheckpointError(f"{path} is an incomplete finrl_tutorial checkpoint (missing {', '.join(missing)})")
    return state


def load_weights(agent: torch.nn.Module, weights: dict, path="the checkpoint") -> None:
    """``agent.load_state_dict(weights)``, or one line saying the shapes do not fit."""
    try:
        agent.load_state_dict(weights)
    except (RuntimeError, KeyError, TypeError) as error:
        mismatched = [f"{k} {tuple(v.shape)} vs {tuple(agent.state_dict()[k].shape)}"
                      for k, v in weights.items() if isinstance(v, torch.Tensor) and k in agent.state_dict()
                      and tuple(v.shape) != tuple(agent.state_dict()[k].shape)]
        detail = "; ".join(mismatched[:2]) if mismatched else _reason(error)
        raise CheckpointError(f"{path} holds a network of another shape ({detail})") from None


def agent_from_checkpoint(state: dict, device="cpu") -> tuple[ActorCritic, PPOConfig, EnvConfig]:
    """Rebuild the agent (in eval mode) and the configs it was trained with."""
    config = agent_config_from_dict(state["config"])
    env_config = env_config_from_dict(state["env_config"])
    for name in ("obs_dim", "action_dim"):
        if not isinstance(state[name], int) or isinstance(state[name], bool) or state[name] < 1:
            raise CheckpointError(f"the checkpoint's {name} is {state[name]!r}, not a size")
    agent = ActorCritic.from_config(state["obs_dim"], state["action_dim"], config, env_config.action_mode)
    load_weights(agent, state["model"])
    return agent.to(device).eval(), config, env_config
