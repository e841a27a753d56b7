"""Helper of ``tests/test_scale.py``: a two-rank DDP run on CPU, whole, cut, or resumed.

``python tests/ddp_resume_worker.py RUN_DIR MODE`` spawns 2 gloo ranks (joining through
`DistributedContext.from_env`, with the variables torchrun would set, on a free port) that train
PPO on the sse15 sample into ``RUN_DIR`` (validation and checkpoints every 2 iterations).
``full`` runs all 6 iterations; ``cut`` fails on every rank when iteration 4 starts collecting
(``last.pt`` is then from iteration 2's checkpoint); ``resume`` continues ``RUN_DIR`` from its
``last.pt``. Rank 0 saves the returned agent's weights to ``RUN_DIR/weights.pt``.
"""
from __future__ import annotations

import os
import socket
import sys

import torch

CONFIG = dict(num_envs=8, horizon_len=16, batch_size=64, repeat_times=2, total_steps=1536, seed=0)
"""6 iterations of 2 ranks × 8 envs × 16 steps."""
EVAL_EVERY = 2


class Cut(Exception):
    """The injected failure of the ``cut`` mode."""


def _rank(rank: int, world_size: int, port: int, run_dir: str, mode: str) -> None:
    torch.set_num_threads(1)
    os.environ.update(RANK=str(rank), WORLD_SIZE=str(world_size), LOCAL_RANK=str(rank),
                      MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    from finrl_tutorial.agents import make_config, ppo
    from finrl_tutorial.data import load_market
    from finrl_tutorial.training import DistributedContext, train

    if mode == "cut":
        real_collect, calls = ppo.collect_rollout, [0]

        def cut_collect(*args, **kwargs):
            calls[0] += 1
            if calls[0] == 5:  # iteration 4, on every rank: no collective is left waiting
                raise Cut
            return real_collect(*args, **kwargs)

        ppo.collect_rollout = cut_collect
    context = DistributedContext.from_env(device="cpu", timeout_s=120)
    try:
        resume = os.path.join(run_dir, "checkpoints", "last.pt") if mode == "resume" else None
        result = train(load_market(), make_config("ppo", **CONFIG), out_dir=run_dir, eval_every=EVAL_EVERY,
                       progress=False, distributed=context, resume=resume)
        if rank == 0:
            torch.save(result.agent.state_dict(), os.path.join(run_dir, "weights.pt"))
    except Cut:
        pass
    finally:
        context.close()


def main(run_dir: str, mode: str, world_size: int = 2) -> None:
    import torch.multiprocessing as mp

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    mp.spawn(_rank, args=(world_size, port, run_dir, mode), nprocs=world_size, join=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
