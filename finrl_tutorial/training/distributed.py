"""Learners on several devices or processes: ``DataParallel`` (one process) and DDP (torchrun).

Two contexts plug into `finrl_tutorial.training.train` (and `finrl_tutorial.agents.learn`)
through its ``distributed`` argument, in place of the default one-process
`finrl_tutorial.agents.SingleProcessContext`. All three are a
`finrl_tutorial.agents.LearnerContext`: ``rank``, ``world_size``, ``device``, ``is_main``,
``wrap(agent)`` (the module the update runs through), ``all_reduce_mean(x)``, ``gather(obj)``
(each rank's env state, for rank 0's checkpoint) and ``close()``.

`DataParallelContext` — one process, one batched env, the *update* split over all visible GPUs
by ``torch.nn.DataParallel`` (each minibatch is scattered over the GPUs, gradients gathered on
the first). With one GPU or none it is the plain module. ``python -m finrl_tutorial train
--data-parallel --device cuda``.

`DistributedContext` — DistributedDataParallel, one process per device, launched by torchrun::

    # one machine, K processes (CPU: gloo; with --device cuda: NCCL, rank r on cuda:LOCAL_RANK)
    torchrun --standalone --nproc_per_node=K -m finrl_tutorial train --ddp --total-steps 1000000

    # several machines: the same command on every node, with its own --node_rank
    torchrun --nnodes=2 --node_rank=0 --nproc_per_node=K --master_addr=HOST0 --master_port=29500 \\
        -m finrl_tutorial train --ddp --device cuda ...      # on HOST0
    torchrun --nnodes=2 --node_rank=1 --nproc_per_node=K --master_addr=HOST0 --master_port=29500 \\
        -m finrl_tutorial train --ddp --device cuda ...      # on HOST1

What each rank does (see the trainer):

- it builds the same initial weights (``torch.manual_seed(config.seed)`` precedes the model,
  and DDP broadcasts rank 0's weights at wrap time anyway);
- it owns a batched env of ``config.num_envs`` sub-envs (so ``world_size × num_envs`` in all),
  its own *shard* of the training data — episodes start only in its window of the start days,
  `finrl_tutorial.training.workers.shard_start_windows` — and its own env/sampling seed
  (``seed + 1000 × rank``);
- ``config.total_steps`` counts the env steps of all ranks together, so K ranks make the same
  number of env steps K times faster, in 1/K as many iterations with a K times larger batch;
- every rank runs the same number of minibatches (same config and rollout size); DDP averages
  the gradients in ``backward()``, so all ranks take the same optimiser step and the weights
  stay identical; an early stop on ``target_kl`` is decided on the KL averaged over ranks
  (``all_reduce_mean``), so all ranks stop together;
- only rank 0 evaluates, logs, checkpoints and writes the report: other ranks write no files, but
  they send rank 0 their env state (accounts, random states, observations) for each checkpoint,
  so a resumed run continues every rank's episodes (with the same number of ranks).

``init_process_group`` gets a timeout: a rank that dies or never arrives makes the others fail
with an error after ``timeout_s`` instead of waiting forever (torchrun also stops the whole job
when one rank exits with an error).
"""
from __future__ import annotations

import datetime
import os

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from ..agents import SingleProcessContext
from ..errors import InputError

_TORCHRUN_VARIABLES = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")


class DataParallelContext(SingleProcessContext):
    """``torch.nn.DataParallel`` over the visible GPUs in one process (rank 0 of 1): the single
    process's context (nothing to all-reduce or gather) with the agent split over the GPUs."""

    def __init__(self, device=None):
        self.device = torch.device(device if device is not None else ("cuda" if torch.cuda.is_available() else "cpu"))
        if self.device.type == "cuda":
            if not torch.cuda.is_available():
                raise InputError(f"device {self.device} requested but CUDA is not available")
            if self.device.index is None:
                self.device = torch.device("cuda", torch.cuda.current_device())
            others = [i for i in range(torch.cuda.device_count()) if i != self.device.index]
            self.device_ids = [self.device.index, *others]
        else:
            self.device_ids = []

    def wrap(self, agent: nn.Module) -> nn.Module:
        """The agent split over the GPUs (``DataParallel``), or the agent itself with < 2 GPUs."""
        if len(self.device_ids) < 2:
            return agent
        return nn.DataParallel(agent, device_ids=self.device_ids, output_device=self.device.index)


class DistributedContext:
    """One rank of a ``torch.distributed`` job (gloo on CPU, NCCL on CUDA)."""

    def __init__(self, rank: int, world_size: int, local_rank: int, device: torch.device):
        self.rank = rank
        self.world_size = world_size
        self.local_rank = local_rank
        self.device = device
        self.is_main = rank == 0  # rank 0 validates, logs and writes the run folder

    @classmethod
    def from_env(cls, device=None, timeout_s: float = 600.0) -> "DistributedContext":
        """Join the process group described by torchrun's environment variables.

        ``device``: ``None`` or ``cpu`` → gloo on the CPU; ``cuda`` (any index) → NCCL with this
        rank on ``cuda:LOCAL_RANK``. ``timeout_s`` bounds the rendezvous and every collective.
        """
        missing = [name for name in _TORCHRUN_VARIABLES if name not in os.environ]
        if missing:
            raise InputError(f"--ddp needs the environment torchrun sets ({', '.join(missing)} missing): launch "
                             "with `torchrun --nproc_per_node=K -m finrl_tutorial train --ddp ...`")
        if not dist.is_available():
            raise ImportError("this torch build has no torch.distributed")
        rank, world_size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
        local_rank = int(os.environ["LOCAL_RANK"])
        wanted = torch.device(device if device is not None else "cpu")
        if wanted.type == "cuda":
            if not torch.cuda.is_available():
                raise InputError("--ddp --device cuda requested but CUDA is not available")
            if local_rank >= torch.cuda.device_count():
                raise InputError(f"LOCAL_RANK {local_rank} but only {torch.cuda.device_count()} GPU(s) visible: "
                                 "use --nproc_per_node <= the number of GPUs")
            wanted = torch.device("cuda", local_rank)
            torch.cuda.set_device(wanted)
            backend = "nccl"
        elif wanted.type == "cpu":
            backend = "gloo"
        else:
            raise InputError(f"--ddp supports cpu and cuda devices, got {wanted}")
        if not dist.is_initialized():
            dist.init_process_group(backend, timeout=datetime.timedelta(seconds=timeout_s))
        return cls(rank, world_size, local_rank, wanted)

    def wrap(self, agent: nn.Module) -> nn.Module:
        """``DistributedDataParallel(agent)``: gradients averaged over ranks in ``backward()``."""
        device_ids = [self.device.index] if self.device.type == "cuda" else None
        return DistributedDataParallel(agent, device_ids=device_ids)

    def all_reduce_mean(self, x):
        """The mean of ``x`` (a tensor or number) over all ranks, as a tensor on this rank's device."""
        tensor = torch.as_tensor(x, device=self.device).detach().clone().float()
        dist.all_reduce(tensor, op=dist.ReduceOp.SUM)
        return tensor / self.world_size

    def gather(self, obj) -> list | None:
        """Every rank's ``obj`` (picklable) on rank 0, in rank order; None on the other ranks."""
        gathered = [None] * self.world_size if self.rank == 0 else None
        dist.gather_object(obj, gathered, dst=0)
        return gathered

    def close(self) -> None:
        """Leave the process group (idempotent)."""
        if dist.is_available() and dist.is_initialized():
            dist.destroy_process_group()
