"""DDP's update on K halves equals one process's update on the whole batch: the check, runnable anywhere.

`ddp_equivalence` spawns two CPU ranks that join a gloo process group through
`DistributedContext.from_env` (the variables torchrun would set, on a free port). Each runs the
package's `update` through DDP, three times in a row, on its half of one fixed rollout (split along
the env dimension); one process runs the same updates on the whole rollout. The weights must agree
to float rounding. Chapter 5 shows the result and ``tests/test_scale.py`` checks it.

Why the math is identical, not just close: with one minibatch per rank (the whole local rollout)
and one epoch, each rank's loss is a mean over its half, and DDP averages the gradients, which is
the gradient of the mean over the whole batch (equal halves); GAE runs per env, so splitting envs
does not change it. Per-minibatch advantage standardisation is off, because it would use each
half's own mean and std; several minibatches would draw different samples per rank. Three updates
check that Adam's state stays in step too.
"""
from __future__ import annotations

import dataclasses
import os
import socket
import tempfile
from dataclasses import dataclass
from pathlib import Path

import torch

from ..agents import ActorCritic, PPOConfig, Rollout, make_optimizer, update

HORIZON, NUM_ENVS, OBS_DIM, ACTION_DIM = 16, 8, 7, 3
UPDATES = 3  # update() calls in a row: the later ones also check that Adam's state stays in step
_FIELDS = tuple(f.name for f in dataclasses.fields(Rollout) if f.name != "stats")  # the tensors


def equivalence_config(normalize_advantages: bool = False) -> PPOConfig:
    """One minibatch (the whole local rollout), one epoch, and by default no per-minibatch advantage
    standardisation (with it, each rank standardises its half by that half's own mean and spread)."""
    return PPOConfig(num_envs=NUM_ENVS, horizon_len=HORIZON, batch_size=HORIZON * NUM_ENVS, repeat_times=1,
                     normalize_advantages=normalize_advantages, target_kl=None, hidden_sizes=(32, 32),
                     learning_rate=1e-3, network="mlp", gae_lambda=0.95)  # λ: the one chapter 5's numbers were read with


def fixed_rollout() -> Rollout:
    """A seeded random rollout of ``HORIZON`` steps × ``NUM_ENVS`` envs (the same in every process)."""
    generator = torch.Generator().manual_seed(123)

    def rand(*shape):
        return torch.randn(HORIZON, NUM_ENVS, *shape, generator=generator)

    dones = (torch.rand(HORIZON, NUM_ENVS, generator=generator) < 0.1).float()
    # the parts of the reward that the day's prices set are 0 here: the check is the update's arithmetic
    # across ranks (the agent is a plain Gaussian, with no portfolio head for the pathwise gradient)
    zeros = torch.zeros(HORIZON, NUM_ENVS)
    return Rollout(obs=rand(OBS_DIM), actions=rand(ACTION_DIM).clamp(-1, 1), log_probs=rand() - 3.0,
                   rewards=rand(), values=rand(), next_values=rand(), dones=dones, market_rewards=zeros,
                   reward_per_weight=torch.zeros(HORIZON, NUM_ENVS, ACTION_DIM), sampling_luck=zeros,
                   average_rewards=zeros)


def env_slice(rollout: Rollout, rank: int, world_size: int) -> Rollout:
    """Rank ``rank``'s equal share of the rollout's envs."""
    size = NUM_ENVS // world_size
    part = slice(rank * size, (rank + 1) * size)
    return Rollout(**{name: getattr(rollout, name)[:, part].contiguous() for name in _FIELDS})


def initial_agent() -> ActorCritic:
    torch.manual_seed(0)
    return ActorCritic.from_config(OBS_DIM, ACTION_DIM, equivalence_config(), "shares")  # a plain Gaussian


def run_updates(learner, agent, rollout: Rollout, all_reduce_mean=lambda x: x,
                normalize_advantages: bool = False) -> list[dict]:
    """``UPDATES`` calls of `update` (through ``learner``, the DDP wrapper or the agent itself)."""
    config = equivalence_config(normalize_advantages)
    optimizer = make_optimizer(agent, config)
    order = torch.Generator().manual_seed(0)
    return [update(learner, optimizer, rollout, config, None, order, all_reduce_mean) for _ in range(UPDATES)]


def single_process_weights(normalize_advantages: bool = False) -> tuple[dict, list[dict]]:
    """The weights and losses of one process updating on the whole rollout."""
    agent = initial_agent()
    losses = run_updates(agent, agent, fixed_rollout(), normalize_advantages=normalize_advantages)
    return agent.state_dict(), losses


def _rank(rank: int, world_size: int, port: int, out: str, timeout_s: float, normalize_advantages: bool) -> None:
    torch.set_num_threads(1)
    os.environ.update(RANK=str(rank), WORLD_SIZE=str(world_size), LOCAL_RANK=str(rank),
                      MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    from .distributed import DistributedContext

    context = DistributedContext.from_env(device="cpu", timeout_s=timeout_s)
    try:
        agent = initial_agent()
        losses = run_updates(context.wrap(agent), agent, env_slice(fixed_rollout(), rank, world_size),
                             context.all_reduce_mean, normalize_advantages)
        torch.save({"state": agent.state_dict(), "losses": losses}, os.path.join(out, f"rank{rank}.pt"))
    finally:
        context.close()


@dataclass
class Equivalence:
    """What `ddp_equivalence` measured."""

    ranks: list[dict]
    """per rank: ``{"state": weights after the updates, "losses": update()'s dicts}``"""
    whole: dict
    """the weights of one process updating on the whole rollout"""
    whole_losses: list[dict]
    """its update() dicts"""
    initial: dict
    """the weights everyone started from"""

    def differences(self) -> dict[str, dict[str, float]]:
        """Per weight tensor: the largest absolute difference rank 0 vs rank 1, rank 0 vs one
        process, and how far one process moved the weights from the start."""
        first, second = (rank["state"] for rank in self.ranks[:2])
        return {name: {"rank 0 vs rank 1": float((first[name] - second[name]).abs().max()),
                       "rank 0 vs one process": float((first[name] - value).abs().max()),
                       "moved from the start": float((value - self.initial[name]).abs().max())}
                for name, value in self.whole.items()}


def ddp_equivalence(out_dir: str | Path | None = None, world_size: int = 2, timeout_s: float = 60.0,
                    normalize_advantages: bool = False) -> Equivalence:
    """Run the DDP ranks (spawned CPU processes, gloo) and the single process; see the module docstring.
    The ranks save their results to ``out_dir/rank{r}.pt`` (a temporary folder by default). With
    ``normalize_advantages`` every side standardises its advantages per minibatch, as the trainer
    does: the ranks then no longer compute one process's update, and the differences say by how much."""
    import torch.multiprocessing as mp

    if NUM_ENVS % world_size:
        raise ValueError(f"world_size must divide the rollout's {NUM_ENVS} envs, got {world_size}")
    with tempfile.TemporaryDirectory(prefix="finrl_ddp_equivalence_") as scratch:
        out = Path(out_dir) if out_dir is not None else Path(scratch)
        out.mkdir(parents=True, exist_ok=True)
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        mp.spawn(_rank, args=(world_size, port, str(out), timeout_s, normalize_advantages), nprocs=world_size,
                 join=True)
        ranks = [torch.load(out / f"rank{r}.pt", weights_only=True) for r in range(world_size)]
    whole, whole_losses = single_process_weights(normalize_advantages)
    return Equivalence(ranks, whole, whole_losses, initial_agent().state_dict())
