"""Helper of ``tests/test_scale.py``: two gloo ranks each update on half of a fixed rollout.

``python tests/ddp_equivalence_worker.py OUT_DIR`` spawns 2 CPU ranks that join a process group
through `DistributedContext.from_env` (the variables torchrun would set, on a free port), run
`update` through DDP on their half of `fixed_rollout` (split along the env dimension) and save
their weights and losses to ``OUT_DIR/rank{r}.pt``. The test compares them with one process
updating on the whole rollout (`single_process_weights`).
"""
from __future__ import annotations

import os
import socket
import sys

import torch

from finrl_tutorial.agents import ActorCritic, PPOConfig, Rollout, make_optimizer, update

HORIZON, NUM_ENVS, OBS_DIM, ACTION_DIM = 16, 8, 7, 3
UPDATES = 3  # update() calls in a row: the later ones also check Adam's state stays in step


def config() -> PPOConfig:
    """One minibatch (the whole local rollout), one epoch, no per-minibatch advantage standardisation,
    the flat MLP."""
    return PPOConfig(num_envs=NUM_ENVS, horizon_len=HORIZON, batch_size=HORIZON * NUM_ENVS, repeat_times=1,
                     normalize_advantages=False, target_kl=None, hidden_sizes=(32, 32), learning_rate=1e-3,
                     network="mlp")


def fixed_rollout() -> Rollout:
    generator = torch.Generator().manual_seed(123)
    rand = lambda *shape: torch.randn(HORIZON, NUM_ENVS, *shape, generator=generator)  # noqa: E731
    dones = (torch.rand(HORIZON, NUM_ENVS, generator=generator) < 0.1).float()
    return Rollout(obs=rand(OBS_DIM), actions=rand(ACTION_DIM).clamp(-1, 1), log_probs=rand() - 3.0,
                   rewards=rand(), values=rand(), next_values=rand(), dones=dones)


def half(rollout: Rollout, rank: int, world_size: int) -> Rollout:
    size = NUM_ENVS // world_size
    part = slice(rank * size, (rank + 1) * size)
    return Rollout(**{name: getattr(rollout, name)[:, part].contiguous()
                      for name in ("obs", "actions", "log_probs", "rewards", "values", "next_values", "dones")})


def initial_agent() -> ActorCritic:
    torch.manual_seed(0)
    return ActorCritic.from_config(OBS_DIM, ACTION_DIM, config())


def run_updates(learner, agent, rollout, all_reduce_mean=lambda x: x) -> list[dict]:
    cfg = config()
    optimizer = make_optimizer(agent, cfg)
    order = torch.Generator().manual_seed(0)
    return [update(learner, optimizer, rollout, cfg, None, order, all_reduce_mean) for _ in range(UPDATES)]


def single_process_weights() -> tuple[dict, list[dict]]:
    agent = initial_agent()
    losses = run_updates(agent, agent, fixed_rollout())
    return agent.state_dict(), losses


def _rank(rank: int, world_size: int, port: int, out: str) -> None:
    torch.set_num_threads(1)
    os.environ.update(RANK=str(rank), WORLD_SIZE=str(world_size), LOCAL_RANK=str(rank),
                      MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    from finrl_tutorial.training.distributed import DistributedContext

    context = DistributedContext.from_env(device="cpu", timeout_s=60)
    try:
        agent = initial_agent()
        losses = run_updates(context.wrap(agent), agent, half(fixed_rollout(), rank, world_size),
                             context.all_reduce_mean)
        torch.save({"state": agent.state_dict(), "losses": losses}, os.path.join(out, f"rank{rank}.pt"))
    finally:
        context.close()


def main(out: str, world_size: int = 2) -> None:
    import torch.multiprocessing as mp

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    mp.spawn(_rank, args=(world_size, port, out), nprocs=world_size, join=True)


if __name__ == "__main__":
    main(sys.argv[1])
