"""Code that is there only for speed, so that `ppo.py` reads as the algorithm.

Each function or class here computes what the plain code its docstring names computes (the same
numbers, or within the rounding it states) and says why it is faster. `ppo.py` calls them in the
places where it would otherwise hold the plain code; chapter 3 checks each one against that code.
"""
from __future__ import annotations

import ctypes
import os
import sys
from typing import Iterable

import torch
from torch import nn


class _InPlaceSigmoidTanh(torch.autograd.Function):
    """tanh(x) = 2 σ(2x) − 1, written over ``x``; the backward is tanh's own, 1 − y², from the output."""

    @staticmethod
    def forward(ctx, x):
        if x._is_view():  # writing over a view would make autograd copy its base back (CopySlices)
            y = x.mul(2).sigmoid_().mul_(2).sub_(1)
        else:
            y = x.mul_(2).sigmoid_().mul_(2).sub_(1)
            ctx.mark_dirty(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad):
        y, = ctx.saved_tensors
        return torch.ops.aten.tanh_backward(grad, y)


class InPlaceTanh(nn.Module):
    """``nn.Tanh``, computed as 2 σ(2x) − 1 (within 4e-7 of ``torch.tanh``) over its input, which
    must be used nowhere else (in `ppo.mlp`: the output of the `nn.Linear` before it). Why faster: on
    the CPU torch's vectorised tanh was measured at several times its sigmoid and the largest single
    item of the stockwise network's time (28 % of a PPO iteration at 30 stocks, 2026-12-01). The
    ratio depends on the torch build and the CPU: chapter 3.2 times this module's forward and
    backward against ``torch.tanh``'s in its own run. In place, the four passes allocate nothing."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _InPlaceSigmoidTanh.apply(x)


def adam(params: Iterable[torch.Tensor], lr: float, eps: float) -> torch.optim.Optimizer:
    """``torch.optim.Adam(params, lr=lr, eps=eps)``, with torch's fused kernel where it has one for
    the device (the same step to float rounding). Why faster: one kernel per step instead of a dozen
    small ops per tensor, about 10 % of a CPU update here, and less serial work when the update
    runs on several threads. It also calls `keep_freed_memory` for the parameters' device, once
    per optimizer, for the update's activations."""
    params = list(params)
    if params:
        keep_freed_memory(params[0].device)
    try:
        return torch.optim.Adam(params, lr=lr, eps=eps, fused=True)
    except (RuntimeError, TypeError):  # older torch: no fused Adam on this device
        return torch.optim.Adam(params, lr=lr, eps=eps)


_freed_memory_kept: bool | None = None  # None: not tried yet in this process


def keep_freed_memory(device: torch.device | str = "cpu") -> bool:
    """On the CPU, ask glibc's malloc (Linux) to keep freed memory for reuse instead of returning it
    to the system; it changes no number (the plain code does nothing here). Why faster: every
    minibatch allocates activations of megabytes (at 300 stocks, 80 MB each); by default glibc maps
    each one fresh and the kernel zero-fills it page by page, which doubled the time of a forward
    and backward pass at 300 stocks and cost a fifth at 30 (2026-12-01). The process keeps its peak
    memory instead. Called by `bootstrap_values` (the rollout, on the CPU) and `adam` (the update's
    optimizer); tried once per process; does nothing on other devices, on other systems, or where
    ``MALLOC_MMAP_THRESHOLD_`` or ``GLIBC_TUNABLES`` say otherwise. Returns whether the setting is
    in force."""
    global _freed_memory_kept
    if torch.device(device).type != "cpu" or _freed_memory_kept is not None:
        return bool(_freed_memory_kept)
    _freed_memory_kept = False
    if sys.platform.startswith("linux") and not (
            os.environ.keys() & {"MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "GLIBC_TUNABLES"}):
        try:
            libc = ctypes.CDLL("libc.so.6")
            m_trim_threshold, m_mmap_threshold, largest = -1, -3, 2**31 - 1  # glibc's malloc.h
            _freed_memory_kept = bool(libc.mallopt(m_mmap_threshold, largest)
                                      and libc.mallopt(m_trim_threshold, largest))
        except (OSError, AttributeError):  # not glibc (musl, ...)
            pass
    return _freed_memory_kept


def cross_sectional_zscore(stocks: torch.Tensor) -> torch.Tensor:
    """Each entry of ``stocks [..., S, F]`` minus its mean over the S stocks, divided by their
    spread (+ 1e-3): ``(stocks - stocks.mean(-2, keepdim=True)) / (stocks.std(-2, correction=0,
    keepdim=True) + 1e-3)``, to float rounding. Why faster: the spread is taken in two passes (the
    mean, then the mean square of the deviation); ``std``'s Welford pass cost ten times as much on
    the CPU (2026-12-01; chapter 3.2 times both in its run)."""
    deviation = stocks - stocks.mean(-2, keepdim=True)
    spread = deviation.square().mean(-2, keepdim=True).sqrt()
    return deviation / (spread + 1e-3)


def bootstrap_values(agent: nn.Module, final_obs: torch.Tensor, terminated: torch.Tensor,
                     truncated: torch.Tensor) -> torch.Tensor:
    """One step's next values where episodes ended: ``agent.value(final_obs) * ~terminated``, that is
    V(final observation) where an episode was truncated and 0 where it terminated. (Where an episode
    goes on, `ppo.collect_rollout` replaces the entry by the next step's value; this function leaves
    0 there on the CPU.) Why faster: on the CPU only the rows truncated at this step, a few per
    step, go through the critic. On other devices every row does, as the plain formula says:
    fixed shapes let a whole rollout be recorded once and replayed as one CUDA graph
    (`GraphedRollout`), and picking the rows would wait for the device. On the CPU it also calls
    `keep_freed_memory`, once per process."""
    if final_obs.device.type != "cpu":
        return agent.value(final_obs) * (~terminated)
    if _freed_memory_kept is None:
        keep_freed_memory()
    values = torch.zeros(terminated.shape, device=final_obs.device, dtype=final_obs.dtype)
    rows = truncated.nonzero().squeeze(-1)
    if len(rows):
        values[rows] = agent.value(final_obs[rows])
    return values
