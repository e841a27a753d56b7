"""What every benchmark shares: a market of any width, a timing loop, the command of a record, and a
training run followed through its validations."""
from __future__ import annotations

import argparse
import math
import shlex
import time
from dataclasses import dataclass
from typing import Callable

import torch

from ..data.clean import PreparedMarket
from ..data.market import MarketData
from ..errors import InputError, check_int, check_real
from ..training.trainer import TrainResult, train


def positive_int(text: str) -> int:
    """An argparse type: a whole number >= 1 (``--stocks 0`` would benchmark nothing)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


positive_int.__name__ = "integer >= 1"


def positive_seconds(text: str) -> float:
    """An argparse type: a finite number of seconds > 0 (``nan`` would time forever: elapsed >= nan
    is never true)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a finite number of seconds > 0, got {text!r}")
    return value


positive_seconds.__name__ = "seconds > 0"


def market_with_stocks(market: MarketData | PreparedMarket, stocks: int) -> MarketData | PreparedMarket:
    """The market widened (columns repeated) or narrowed to ``stocks`` columns, for speed tests; a
    `PreparedMarket` is widened in every split alike."""
    check_int("market_with_stocks", "stocks", stocks, minimum=1)
    count = (market.full if isinstance(market, PreparedMarket) else market).num_stocks
    return market.select_stocks([i % count for i in range(stocks)])


def timed(step, seconds: float, min_calls: int = 3, sync=lambda: None) -> tuple[int, float]:
    """Call ``step()`` repeatedly for about ``seconds`` (after one warm-up call); returns
    ``(calls, elapsed)``. ``sync`` waits for queued device work before the clock is read."""
    check_real("timed", "seconds", seconds, low=0, low_open=True)  # NaN would never end the loop
    check_int("timed", "min_calls", min_calls, minimum=1)
    step()
    sync()
    calls, start = 0, time.perf_counter()
    while True:
        step()
        calls += 1
        if calls >= min_calls and calls % 8 == 0:
            sync()
            if time.perf_counter() - start >= seconds:
                break
    sync()
    return calls, time.perf_counter() - start


def sync_for(device) -> callable:
    """A function that waits for the queued work of ``device`` (nothing to wait for on the CPU)."""
    device = torch.device(device)
    return (lambda: torch.cuda.synchronize(device)) if device.type == "cuda" else (lambda: None)


def explicit_command(args: argparse.Namespace, add_arguments) -> str:
    """The command that reproduces a ``bench`` run with every option spelled out, read from the
    benchmark's own parser (``add_arguments``, the module's function): a flag for a true switch, the
    values of a list, nothing for an unset option. Unlike the command as typed, it still means the
    same run after a default changes."""
    kinds = argparse.ArgumentParser().add_subparsers()
    add_arguments(kinds)
    (name, parser), = kinds.choices.items()
    parts = ["python", "-m", "finrl_tutorial", "bench", name]
    for action in parser._actions:  # argparse's list of options (no public accessor)
        value = getattr(args, action.dest, None)
        if not action.option_strings or isinstance(action, argparse._HelpAction) or value is None or value is False:
            continue
        flag = action.option_strings[-1]
        if value is True:
            parts.append(flag)
        elif isinstance(value, (list, tuple)):
            parts += [flag, *map(str, value)] if value else []
        else:
            parts += [flag, str(value)]
    return shlex.join(parts)


@dataclass
class FollowedRun:
    """A training run and what was seen at each of its validations (`train_and_follow`)."""

    result: TrainResult
    """What `train` returned (the validation-selected agent, the log)."""
    evaluations: list[dict]
    """One entry per validation: ``iteration``, ``env_steps``, ``valid_sharpe``, ``valid_return``,
    ``train_seconds`` (training time up to it, the followers' own time left out) and whatever
    ``on_candidate`` added."""
    wall_seconds: float
    """The whole `train` call, followers included."""
    train_seconds: float
    """``wall_seconds`` less the time spent in ``on_candidate``: what the learning itself took."""


def check_same_settings(paths: list, records: list[dict], keys, what: str) -> None:
    """Records to be merged share the header fields ``keys`` with the first (else their runs are
    not comparable): refuse the first that differs, naming the fields (``what``: "sweep", ...)."""
    for path, record in zip(paths[1:], records[1:]):
        differ = [key for key in keys if record.get(key) != records[0].get(key)]
        if differ:
            raise InputError(f"{path} was made with other settings than {paths[0]} ({', '.join(differ)}): "
                             f"only parts of the same {what} can be merged")


def train_and_follow(market: PreparedMarket, config, env_config, *, eval_every: int,
                     on_candidate: Callable[[dict], dict | None] | None = None) -> FollowedRun:
    """Train ``config`` on ``market`` (a synthetic market or any other) and follow its validations:
    every validated agent is a candidate checkpoint; ``on_candidate(event)`` (the trainer's
    ``on_evaluation`` event) may test it further and returns fields to add to its entry. The
    benchmarks that read learning curves (``bench learn``, ``bench sweep``) share this."""
    evaluations: list[dict] = []
    followers = 0.0
    started = time.perf_counter()

    def follow(event: dict) -> None:
        nonlocal followers
        entered = time.perf_counter()
        entry = {"iteration": event["iteration"], "env_steps": event["env_steps"],
                 "valid_sharpe": event["metrics"]["sharpe_ratio"],
                 "valid_return": event["metrics"]["cumulative_return"],
                 "train_seconds": entered - started - followers}
        if on_candidate is not None:
            entry |= on_candidate(event) or {}
        evaluations.append(entry)
        followers += time.perf_counter() - entered

    result = train(market, config, env_config, eval_every=eval_every, progress=False, on_evaluation=follow)
    wall = time.perf_counter() - started
    return FollowedRun(result, evaluations, wall, wall - followers)


RECORDED_CONFIG_FIELDS = ("num_envs", "horizon_len", "batch_size", "repeat_times", "learning_rate", "gamma",
                          "gae_lambda", "market_baseline", "pathwise")
"""The `PPOConfig` fields a sweep or walk-forward record stores: the rollout and update sizes, the step
size, γ, and what says which learner ran (λ and the two baselines of chapter 3.4)."""


def recorded_config(config) -> dict:
    """``config``'s `RECORDED_CONFIG_FIELDS`, as a record stores them."""
    return {field: getattr(config, field) for field in RECORDED_CONFIG_FIELDS}


def config_changes(stored: dict, wanted: dict) -> dict:
    """The entries of a record's ``stored`` config that ``wanted`` (`recorded_config` of the run about
    to resume it) sets otherwise: ``{}`` where the runs may be mixed. Fields only one side has do not count."""
    return {field: value for field, value in stored.items() if field in wanted and wanted[field] != value}


def checked_overrides(pairs: list[str], algos, set_by_bench, refusal: str) -> tuple[dict, dict]:
    """``--set`` as a benchmark takes it: `parse_overrides` of ``pairs``, then one line (exit 2) for a
    field in ``set_by_bench`` (``"--set <fields>: " + refusal``) or for an unknown field or bad value,
    before any run. Returns the overrides and each of ``algos``' config with them."""
    from ..agents import make_config

    overrides = parse_overrides(pairs)
    fixed = sorted(set(overrides) & set(set_by_bench))
    if fixed:
        raise InputError(f"--set {', '.join(fixed)}: {refusal}")
    try:  # an unknown field or a bad value fails here, before any run
        return overrides, {algo: make_config(algo, **overrides) for algo in algos}
    except (TypeError, ValueError) as error:
        raise InputError(f"--set: {error}") from None


def parse_overrides(pairs: list[str]) -> dict:
    """``["gamma=0.9", "network=mlp", "hidden_sizes=32,32"]`` → ``{"gamma": 0.9, "network": "mlp",
    "hidden_sizes": (32, 32)}``: numbers where they parse, booleans, a comma-separated list as a tuple
    (a trailing comma makes a tuple of one, as in Python: ``hidden_sizes=32,`` → ``(32,)``)."""
    overrides = {}
    for pair in pairs:
        field, sep, text = pair.partition("=")
        if not sep or not field:
            raise InputError(f"--set takes FIELD=VALUE, got {pair!r}")
        if "," in text:
            parts = text.split(",")
            if parts[-1] == "":  # "32," is the tuple (32,)
                parts.pop()
            if not parts or "" in parts:
                raise InputError(f"--set {field}: an empty item in the list {text!r}")
            overrides[field] = tuple(_parse_value(part) for part in parts)
        else:
            overrides[field] = _parse_value(text)
    return overrides


def _parse_value(text: str):
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            continue
    return {"true": True, "false": False}.get(text.lower(), text)
