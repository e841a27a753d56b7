"""Checkpoints: written atomically, loadable with ``torch.load(weights_only=True)``."""
from __future__ import annotations

import os
from dataclasses import asdict, fields
from pathlib import Path

import torch

from ..agents import ActorCritic, PPOConfig, make_config
from ..atomic import atomic_open
from ..envs import EnvConfig
from ..rules import FeeSchedule


def atomic_save(obj, path: str | os.PathLike) -> Path:
    """``torch.save`` to a temp file in the same folder, then rename over ``path``: a crash never
    leaves a half-written checkpoint, and the previous one stays until the new one is complete."""
    with atomic_open(path, "wb") as stream:
        torch.save(obj, stream)
    return Path(path)


def config_to_dict(config) -> dict:
    """A dataclass config as plain JSON-able values (tuples become lists)."""
    return asdict(config)


def env_config_from_dict(values: dict) -> EnvConfig:
    values = dict(values)
    fees = values.pop("fees", None)
    if isinstance(fees, dict):
        values["fees"] = FeeSchedule(**{k: tuple(tuple(step) for step in v) if isinstance(v, list) else v
                                        for k, v in fees.items()})
    known = {f.name for f in fields(EnvConfig)}
    return EnvConfig(**{k: v for k, v in values.items() if k in known})


def agent_config_from_dict(values: dict) -> PPOConfig:
    values = dict(values)
    algo = values.pop("algo", "ppo")
    # checkpoints written before the stockwise network and the portfolio head existed
    values.setdefault("network", "mlp")
    values.setdefault("portfolio_head", False)
    known = {f.name for f in fields(PPOConfig)}
    return make_config(algo, **{k: v for k, v in values.items() if k in known})


_REQUIRED_KEYS = ("model", "config", "env_config", "obs_dim", "action_dim", "tickers", "feature_names")


def _reason(error: Exception, limit: int = 300) -> str:
    """torch.load's error as one short line (its weights-only errors span a dozen lines of advice)."""
    text = str(error)
    if "WeightsUnpickler error:" in text:
        text = text.split("WeightsUnpickler error:", 1)[1]
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    line = lines[0] if lines else type(error).__name__
    return line if len(line) <= limit else line[:limit - 3] + "..."


def load_checkpoint(path: str | os.PathLike, device="cpu") -> dict:
    """Load a checkpoint safely (tensors and plain values only); a clear error if it is not one."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no checkpoint at {path}")
    try:
        state = torch.load(path, map_location=device, weights_only=True)
    except Exception as error:
        raise ValueError(f"{path} is not a readable finrl_tutorial checkpoint: {_reason(error)}") from None
    if not isinstance(state, dict) or "model" not in state or "config" not in state:
        raise ValueError(f"{path} is not a finrl_tutorial checkpoint (no model/config inside)")
    missing = [key for key in _REQUIRED_KEYS if key not in state]
    if missing:  # what agent_from_checkpoint and the backtest read
        raise ValueError(f"{path} is an incomplete finrl_tutorial checkpoint (missing {', '.join(missing)})")
    return state


def agent_from_checkpoint(state: dict, device="cpu") -> tuple[ActorCritic, PPOConfig, EnvConfig]:
    """Rebuild the agent (in eval mode) and the configs it was trained with."""
    config = agent_config_from_dict(state["config"])
    env_config = env_config_from_dict(state["env_config"])
    agent = ActorCritic.from_config(state["obs_dim"], state["action_dim"], config, env_config.action_mode)
    agent.load_state_dict(state["model"])
    return agent.to(device).eval(), config, env_config
