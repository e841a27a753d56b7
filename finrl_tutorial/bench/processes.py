"""Several processes, each with a batched env, against one process with all their accounts.

``python -m finrl_tutorial bench processes --num-envs 1024 8192 --rounds 5`` answers chapter 6's
second question on the machine it runs on. For each ``N`` in ``--num-envs`` it measures, in
``--rounds`` interleaved rounds (so a busy spell of a shared machine hits every layout alike):

* **two processes**: two ``python -m finrl_tutorial bench env --env vec --num-envs N`` commands
  started at the same moment, one torch thread each, each timing ``2 × --seconds + 1`` s (longer
  than the single process, so that the two windows overlap although the processes start a moment
  apart); their env-steps/s summed;
* **one process, timed the same way**, right after both have exited: one such command with all
  ``2 N`` accounts, alone, timing ``2 × --seconds + 1`` s; its ratio to the two processes compares
  like with like in method (a fresh process, the same window, the same start-up);
* **one process of one share, timed the same way**: one such command with ``N`` accounts, alone.
  Against the command with ``2 N`` it shows how the rate of one process changes with its size, and
  against either of the two processes how much they slow each other down;
* **one process in this process**: this process with one batched env of all ``2 N`` accounts for
  ``--seconds``, once on one torch thread and once on one thread per core.

One JSON record per ``N``: every round's rates and 1-minute load average, and the machine.
Each round's ratio of two processes to either single-process setup is a reading of the record
(`finrl_tutorial.book.batched`); this module only measures.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import torch

from ..data import load_market
from ..errors import InputError
from ..provenance import loadavg, machine
from .common import market_with_stocks, positive_int, positive_seconds
from .env import measure_env


def add_arguments(kinds) -> None:
    parser = kinds.add_parser("processes", help="two processes with a batched env each against one process "
                                                "with all their accounts, in interleaved rounds")
    parser.add_argument("--num-envs", type=positive_int, nargs="+", default=[1024],
                        help="accounts per process (the single process steps twice as many)")
    parser.add_argument("--rounds", type=positive_int, default=5, help="interleaved rounds per size")
    parser.add_argument("--seconds", type=positive_seconds, default=2.0,
                        help="time per single-process measurement (each of the two processes times 2 × it + 1)")
    parser.add_argument("--stocks", type=positive_int, default=15, help="columns (the sample's 15 stocks repeated)")
    parser.add_argument("--threads", type=positive_int, default=1)


def env_processes(count: int, num_envs: int, seconds: float, stocks: int) -> list[dict]:
    """Start ``count`` ``python -m finrl_tutorial bench env`` commands (one torch thread each) at
    once and wait for all of them; their records."""
    command = [sys.executable, "-m", "finrl_tutorial", "bench", "env", "--env", "vec", "--num-envs", str(num_envs),
               "--seconds", str(seconds), "--stocks", str(stocks)]
    running = [subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=os.environ | {"OMP_NUM_THREADS": "1"})
               for _ in range(count)]
    outputs = [process.communicate(timeout=300)[0] for process in running]
    for process in running:
        if process.returncode != 0:
            raise InputError(f"`{' '.join(command[1:])}` failed with exit code {process.returncode}")
    return [json.loads(output.strip().splitlines()[-1]) for output in outputs]


def one_process(market, num_envs: int, seconds: float, threads: int) -> float:
    """env-steps/s of the batched env of ``num_envs`` accounts in this process on ``threads`` torch threads."""
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        return measure_env("vec", market, num_envs, seconds=seconds)["env_steps_per_s"]
    finally:
        torch.set_num_threads(previous)


def measure_rounds(market, num_envs: int, rounds: int = 5, seconds: float = 2.0) -> dict:
    """``rounds`` interleaved rounds of two processes of ``num_envs`` accounts each, then one such
    process alone with all ``2 × num_envs``, then this process with all of them on one torch thread
    and on one thread per core (see the module). Returns
    the record: ``num_envs`` (per process), ``accounts``, ``stocks``, ``cores``, ``seconds`` and
    ``rounds``, one dict per round with ``two_processes`` (the two rates summed), ``two_process_rates``,
    ``one_subprocess`` (one command with all the accounts, timed as each of the two),
    ``one_subprocess_share`` (one such command with ``num_envs`` accounts, alone),
    ``one_process_one_thread``, ``one_process_all_threads`` (absent on one core) and ``loadavg``."""
    cores = os.cpu_count() or 1
    measured = []
    for _ in range(rounds):
        together = env_processes(2, num_envs, 2 * seconds + 1, market.num_stocks)
        alone, = env_processes(1, 2 * num_envs, 2 * seconds + 1, market.num_stocks)  # the same method, all accounts
        share, = env_processes(1, num_envs, 2 * seconds + 1, market.num_stocks)  # one process's share, alone
        row = {"two_processes": sum(r["env_steps_per_s"] for r in together),
               "two_process_rates": [r["env_steps_per_s"] for r in together],
               "one_subprocess": alone["env_steps_per_s"],
               "one_subprocess_share": share["env_steps_per_s"],
               "one_process_one_thread": one_process(market, 2 * num_envs, seconds, 1)}
        if cores > 1:
            row["one_process_all_threads"] = one_process(market, 2 * num_envs, seconds, cores)
        measured.append(row | {"loadavg": loadavg()})
    return {"bench": "processes", "num_envs": num_envs, "accounts": 2 * num_envs, "stocks": market.num_stocks,
            "cores": cores, "seconds": seconds, "rounds": measured}


def run(args):  # --num-envs, --rounds and --seconds are checked by their argument types
    market = market_with_stocks(load_market().train, args.stocks)  # as `bench env` widens it
    for num_envs in args.num_envs:
        yield measure_rounds(market, num_envs, args.rounds, args.seconds) | machine()
