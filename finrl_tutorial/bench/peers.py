"""Peers side by side: FinRL's env, ElegantRL's vectorised env and stable-baselines3's PPO next to
ours, on the same bars, on the same machine, in one run.

``python -m finrl_tutorial bench peers`` measures, on the embedded sse15 training split widened to
``--stocks`` columns (the sample's 15 stocks repeated, as ``bench env --stocks`` does):

==================  ==========================================================================
measurement         what runs
==================  ==========================================================================
finrl_env           FinRL's ``StockTradingEnv`` (``finrl.meta.env_stock_trading.env_stocktrading``)
                    on a long DataFrame of the same bars with FinRL's eight indicator columns,
                    computed by stockstats per stock as FinRL's ``FeatureEngineer`` does
elegantrl_env       ElegantRL's ``StockTradingVmapEnv`` (``elegantrl.envs.StockTradingVmapEnv``)
                    with N sub-envs, fed the same close prices and indicators
our_env             our `StockTradingEnv` (one account) and `VecStockTradingEnv` with N sub-envs
sb3_ppo_finrl_env   stable-baselines3's PPO, its defaults, training on FinRL's env
sb3_ppo_our_env     stable-baselines3's PPO, its defaults, training on our `StockTradingEnv`
our_ppo             this package's PPO loop, its defaults (`finrl_tutorial.bench.train.measure_loop`)
==================  ==========================================================================

Everything runs on the CPU with ``--threads`` torch threads (1 by default), one measurement at a
time. Env figures are env steps per second with random actions (every ``step`` call counts, episode
resets included); training figures are samples (env steps) per second of rollout + update. Each
measurement is repeated ``--repeats`` times, the measurements interleaved round by round (so a
slow spell of a shared machine hits them alike); every record gives the median, the single runs
and their spread ((max - min) / median), and a last ``summary`` record the ratios of the medians.

Peers are imported from their installed packages (``pip install -e .[peers]``, see the README),
never copied here. A peer that is not installed, or does not import, gets one ``skipped`` record
naming the reason, and the rest is measured.
"""
from __future__ import annotations

import contextlib
import importlib
import importlib.metadata
import importlib.util
import statistics
import sys
import time
import warnings
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pandas as pd
import torch
from stockstats import StockDataFrame

from ..agents import make_config
from ..atomic import write_json_lines
from ..data import load_market
from ..data.clean import DEFAULT_INDICATORS, PreparedMarket
from ..data.market import MarketData
from ..envs import EnvConfig, StockTradingEnv
from ..errors import InputError, one_line
from ..provenance import machine
from .common import explicit_command, market_with_stocks, parse_overrides, timed
from .env import measure_env
from .train import measure_loop

MEASUREMENTS = ("finrl_env", "elegantrl_env", "our_env", "sb3_ppo_finrl_env", "sb3_ppo_our_env", "our_ppo")

PEER_DISTRIBUTIONS = {"stable_baselines3": "stable-baselines3", "finrl": "finrl", "elegantrl": "elegantrl"}
"""Import name → distribution name of every peer."""

FINRL_INDICATORS = list(DEFAULT_INDICATORS)
"""FinRL's default ``config.INDICATORS`` (the same eight stockstats names as our default)."""

FINRL_ENV_MODULE = "finrl.meta.env_stock_trading.env_stocktrading"
ELEGANTRL_ENV_MODULE = "elegantrl.envs.StockTradingVmapEnv"
_FINRL_FILE_MODULE = "_finrl_tutorial_peer_finrl_env_stocktrading"  # FinRL's env module loaded by its file


class PeerMissing(RuntimeError):
    """A peer library is not installed here, or does not import."""


def add_arguments(kinds) -> None:
    parser = kinds.add_parser("peers", help="FinRL's env, ElegantRL's vectorised env and SB3's PPO side by side "
                                            "with ours, in one run (JSON lines, a summary with the ratios)")
    parser.add_argument("--measure", nargs="+", choices=MEASUREMENTS, default=list(MEASUREMENTS),
                        help="what to measure (default: everything)")
    parser.add_argument("--stocks", type=int, default=30, help="columns (the sample's 15 stocks repeated)")
    parser.add_argument("--num-envs", type=int, nargs="+", default=[64, 1024, 4096],
                        help="sub-envs of our batched env and of ElegantRL's vectorised env")
    parser.add_argument("--seconds", type=float, default=2.0, help="time per env-steps/s timing")
    parser.add_argument("--repeats", type=int, default=3, help="timings of each measurement (median reported)")
    parser.add_argument("--sb3-steps", type=int, default=4096,
                        help="env steps per SB3 timing (SB3's PPO collects whole rollouts of 2,048 steps)")
    parser.add_argument("--loop-envs", type=int, nargs="+", default=[64, 1024], help="sub-envs of our PPO loop")
    parser.add_argument("--iterations", type=int, default=3,
                        help="measured iterations per timing of our PPO loop (after one warm-up)")
    parser.add_argument("--set", nargs="+", default=[], metavar="FIELD=VALUE",
                        help="also time our PPO loop with these PPOConfig fields changed, beside its defaults, "
                             "e.g. --set hidden_sizes=32,32 repeat_times=2 (labels our_ppo_<envs>_set)")
    parser.add_argument("--out", help="also write the records to this JSON-lines file")
    parser.add_argument("--threads", type=int, default=1)


# --- peers: versions and imports ---------------------------------------------------------------

def peer_versions() -> dict[str, str | None]:
    """Installed version of every peer (None when absent) and of the libraries they share with us."""
    names = [*PEER_DISTRIBUTIONS.values(), "torch", "gymnasium", "numpy", "pandas", "stockstats"]
    versions = {}
    for name in names:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def peer_installed(top: str) -> bool:
    """Whether the top-level package ``top`` can be found (without importing it)."""
    try:
        return importlib.util.find_spec(top) is not None
    except (ImportError, ValueError):  # a broken or half-imported package
        return False


def import_peer(module: str):
    """Import ``module`` of a peer, or raise `PeerMissing` in one line saying why."""
    top = module.split(".")[0]
    if not peer_installed(top):
        how = "pip install --no-deps elegantrl" if top == "elegantrl" else "pip install -e .[peers]"
        raise PeerMissing(f"{PEER_DISTRIBUTIONS.get(top, top)} is not installed ({how}; README, Peers)")
    try:
        return importlib.import_module(module)
    except Exception as error:  # a peer's import can fail in many ways (a missing dependency, an API change)
        raise PeerMissing(f"{module} does not import: {one_line(error)}") from None


def finrl_env_class() -> tuple[type, str]:
    """FinRL's ``StockTradingEnv`` class, and how it was imported.

    ``import finrl.meta…`` runs ``finrl/__init__.py``, which imports FinRL's paper-trading and data
    download code (alpaca-trade-api, yfinance, wrds, exchange-calendars, …), none of which the env
    uses. Where those are absent, the env's own module file is loaded from the installed package
    (its imports: gymnasium, numpy, pandas, matplotlib, stable-baselines3).
    """
    try:
        return import_peer(FINRL_ENV_MODULE).StockTradingEnv, "package"
    except PeerMissing as error:
        if not peer_installed("finrl"):
            raise
        spec = importlib.util.find_spec("finrl")
        if not spec.submodule_search_locations:
            raise
        package_error = str(error)
    path = f"{spec.submodule_search_locations[0]}/{FINRL_ENV_MODULE.split('.', 1)[1].replace('.', '/')}.py"
    how = f"module file {path} (the package does not import: {package_error})"
    module = sys.modules.get(_FINRL_FILE_MODULE)
    if module is None or getattr(module, "__file__", None) != path:
        try:
            module_spec = importlib.util.spec_from_file_location(_FINRL_FILE_MODULE, path)
            module = importlib.util.module_from_spec(module_spec)
            module_spec.loader.exec_module(module)
        except Exception as error:
            raise PeerMissing(f"{package_error}; nor does its module file alone: {one_line(error)}") from None
        sys.modules[_FINRL_FILE_MODULE] = module
    return module.StockTradingEnv, how


@contextlib.contextmanager
def _peer_prints_to_stderr():
    """Peers print progress on stdout; keep stdout for the JSON lines."""
    with contextlib.redirect_stdout(sys.stderr):
        yield


# --- the same bars in each peer's format -------------------------------------------------------

def distinct_tickers(tickers: list[str]) -> list[str]:
    """Ticker names made unique (``600000.SH``, ``600000.SH#2`` …) for a widened market: FinRL
    counts stocks by their names."""
    seen: dict[str, int] = {}
    out = []
    for tic in tickers:
        seen[tic] = seen.get(tic, 0) + 1
        out.append(tic if seen[tic] == 1 else f"{tic}#{seen[tic]}")
    return out


def finrl_frame(market: MarketData, indicators=FINRL_INDICATORS) -> pd.DataFrame:
    """``market``'s bars as FinRL's long DataFrame: one row per day and stock, ``date, tic, open,
    high, low, close`` and FinRL's indicator columns, sorted by date and ticker, indexed by the day's
    position (FinRL's env reads ``df.loc[day, :]``).

    The indicators are stockstats' on each stock's own bars, as FinRL's
    ``FeatureEngineer.add_technical_indicator`` computes them (raw values, not our scale-free ones),
    then filled forward and backward as its ``preprocess_data`` does (per stock here).
    """
    dates = pd.DatetimeIndex(market.dates)
    tickers = distinct_tickers(list(market.tickers))
    arrays = {name: getattr(market, name).double().cpu().numpy() for name in ("open", "high", "low", "close")}
    pieces = []
    for column, tic in enumerate(tickers):
        bars = pd.DataFrame({"date": dates, **{name: values[:, column] for name, values in arrays.items()}})
        stock = StockDataFrame.retype(bars.copy())
        frame = bars.assign(tic=tic)
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*inplace keyword.*")  # stockstats on pandas 3
            for name in indicators:
                frame[name] = np.asarray(stock[name], dtype=float)
        frame[list(indicators)] = frame[list(indicators)].replace([np.inf, -np.inf], np.nan).ffill().bfill().fillna(0.0)
        pieces.append(frame)
    frame = pd.concat(pieces, ignore_index=True).sort_values(["date", "tic"], kind="stable")
    frame.index = frame["date"].factorize()[0]
    return frame[["date", "tic", "open", "high", "low", "close", *indicators]]


def make_finrl_env(frame: pd.DataFrame, indicators=FINRL_INDICATORS):
    """FinRL's env on ``frame`` with the settings of FinRL's stock-trading tutorial (100 shares per
    unit of action, ¥1M, 0.1 % costs each way, reward scaled by 1e-4); no plots, no prints."""
    env_class, _ = finrl_env_class()
    stocks = frame["tic"].nunique()
    return env_class(df=frame, stock_dim=stocks, hmax=100, initial_amount=1_000_000,
                     num_stock_shares=[0] * stocks, buy_cost_pct=[0.001] * stocks, sell_cost_pct=[0.001] * stocks,
                     reward_scaling=1e-4, state_space=1 + 2 * stocks + len(indicators) * stocks,
                     action_space=stocks, tech_indicator_list=list(indicators), print_verbosity=10**9)


def elegantrl_arrays(frame: pd.DataFrame, indicators=FINRL_INDICATORS) -> tuple[np.ndarray, np.ndarray]:
    """``close [D, S]`` and ``tech [D, len(indicators) × S]`` (indicator-major, as ElegantRL's
    ``load_data_from_disk`` lays out its own A-share data) from FinRL's frame."""
    days = frame.index.unique()
    close = np.stack([frame.loc[day, "close"].to_numpy() for day in days])
    tech = np.stack([np.concatenate([frame.loc[day, name].to_numpy() for name in indicators]) for day in days])
    return close.astype(np.float32), tech.astype(np.float32)


def make_elegantrl_env(close: np.ndarray, tech: np.ndarray, num_envs: int):
    """ElegantRL's ``StockTradingVmapEnv`` with ``num_envs`` sub-envs on the CPU, reading our arrays
    instead of its own data file (the one method overridden: ``load_data_from_disk``)."""
    base = import_peer(ELEGANTRL_ENV_MODULE).StockTradingVmapEnv

    class StockTradingVmapEnvOnOurBars(base):
        def load_data_from_disk(self, tech_id_list=None):
            return close, tech

    with _peer_prints_to_stderr(), warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*functorch.vmap.*", category=FutureWarning)
        return StockTradingVmapEnvOnOurBars(beg_idx=0, end_idx=len(close), gpu_id=-1, num_envs=num_envs)


# --- stable-baselines3 -------------------------------------------------------------------------

def _sb3_ppo():
    return import_peer("stable_baselines3").PPO


def _our_single_env(market: MarketData, env_config: EnvConfig):
    # float32 as in `bench env --env single` and in training (the batched env's default)
    return StockTradingEnv(market, env_config, dtype=torch.float32)


def sb3_ppo_train(market: PreparedMarket, env_config: EnvConfig, total_steps: int, seed: int,
                  device="cpu") -> tuple[Callable[[torch.Tensor], torch.Tensor], float]:
    """Train stable-baselines3's PPO, all its defaults, on our single `StockTradingEnv` over
    ``market.train`` (episodes start where ``env_config`` says: random days by default).

    Returns the deterministic policy, a `finrl_tutorial.backtest.runner.Policy` (observations
    ``[1, obs_dim]`` → actions ``[1, S]``, on the observations' device and dtype), and the wall
    seconds of building and training the model. Raises `PeerMissing` without stable-baselines3.
    """
    if total_steps < 1:
        raise ValueError(f"total_steps must be >= 1, got {total_steps}")
    try:
        ppo = _sb3_ppo()
    except PeerMissing as error:
        raise PeerMissing(f"sb3_ppo_train: {error}") from None
    started = time.perf_counter()
    env = _our_single_env(market.train, env_config)
    model = ppo("MlpPolicy", env, seed=seed, device=device, verbose=0)
    model.learn(total_timesteps=total_steps)
    seconds = time.perf_counter() - started

    def policy(obs: torch.Tensor) -> torch.Tensor:
        action, _ = model.predict(obs.detach().cpu().numpy().astype(np.float32), deterministic=True)
        return torch.as_tensor(action, dtype=obs.dtype, device=obs.device).reshape(obs.shape[0], -1)

    return policy, seconds


def _sb3_timing(env, steps: int, seed: int = 0) -> Callable[[], float]:
    """A function timing SB3's PPO (defaults) learning ``steps`` more env steps on ``env``; the
    model is built and warmed up (one rollout and update) once, before any timing."""
    ppo = _sb3_ppo()
    with _peer_prints_to_stderr():
        model = ppo("MlpPolicy", env, seed=seed, device="cpu", verbose=0)
        model.learn(total_timesteps=model.n_steps)

    def once() -> float:
        with _peer_prints_to_stderr():
            before, started = model.num_timesteps, time.perf_counter()
            model.learn(total_timesteps=steps, reset_num_timesteps=False)
            return (model.num_timesteps - before) / (time.perf_counter() - started)

    once.config = {"n_steps": model.n_steps, "batch_size": model.batch_size, "n_epochs": model.n_epochs,
                   "policy": "MlpPolicy", "net_arch": "64x64 (SB3 default)"}
    return once


# --- measurements ------------------------------------------------------------------------------

@dataclass
class Measurement:
    """One thing timed ``repeats`` times: ``once()`` returns one rate per second."""

    name: str
    """One of `MEASUREMENTS`."""
    library: str
    """Whose code runs: finrl, elegantrl, stable-baselines3 or finrl_tutorial."""
    label: str
    """Unique key of this measurement in the summary (name and size)."""
    unit: str
    """``env_steps_per_s`` or ``samples_per_s``."""
    once: Callable[[], float]
    details: dict = field(default_factory=dict)
    """What exactly runs (class, sizes, configuration)."""
    runs: list[float] = field(default_factory=list)


def _env_timing(step: Callable[[], None], steps_per_call: int, seconds: float) -> Callable[[], float]:
    def once() -> float:
        calls, elapsed = timed(step, seconds)
        return calls * steps_per_call / elapsed
    return once


def _random_actions(stocks: int, seed: int = 0) -> Callable[[], np.ndarray]:
    rng = np.random.default_rng(seed)
    return lambda: rng.uniform(-1, 1, stocks).astype(np.float32)


def _finrl_env_measurement(frame, seconds) -> Measurement:
    env = make_finrl_env(frame)
    env_class, imported = finrl_env_class()
    action = _random_actions(env.stock_dim)
    with _peer_prints_to_stderr():
        env.reset(seed=0)

    def step():
        with _peer_prints_to_stderr():
            _, _, terminated, truncated, _ = env.step(action())
            if terminated or truncated:
                env.reset()
    return Measurement("finrl_env", "finrl", "finrl_env", "env_steps_per_s", _env_timing(step, 1, seconds),
                       {"env": f"{env_class.__module__}.StockTradingEnv", "imported": imported, "num_envs": 1,
                        "days": int(frame.index.nunique())})


def _elegantrl_measurement(close, tech, num_envs, seconds) -> Measurement:
    env = make_elegantrl_env(close, tech, num_envs)
    generator = torch.Generator().manual_seed(0)
    actions = torch.rand(64, num_envs, env.action_dim, generator=generator) * 2 - 1
    counter = [0]
    env.reset()

    def step():
        counter[0] += 1
        _, _, done, _ = env.step(actions[counter[0] % 64])
        if bool(done[0]):  # its episodes all end together, on the last day
            env.reset()
    return Measurement("elegantrl_env", "elegantrl", f"elegantrl_env_{num_envs}", "env_steps_per_s",
                       _env_timing(step, num_envs, seconds),
                       {"env": f"{ELEGANTRL_ENV_MODULE}.StockTradingVmapEnv", "num_envs": num_envs,
                        "days": int(len(close))})


def _our_env_measurement(kind, market, num_envs, seconds) -> Measurement:
    label = "our_env_single" if kind == "single" else f"our_env_vec_{num_envs}"
    env = "finrl_tutorial.envs.StockTradingEnv" if kind == "single" else "finrl_tutorial.envs.VecStockTradingEnv"
    return Measurement("our_env", "finrl_tutorial", label, "env_steps_per_s",
                       lambda: measure_env(kind, market, num_envs, "cpu", seconds)["env_steps_per_s"],
                       {"env": env, "num_envs": 1 if kind == "single" else num_envs, "days": market.num_days})


def _our_ppo_measurement(market, num_envs, iterations, overrides: dict | None = None) -> Measurement:
    """Our PPO loop with its defaults, or with ``overrides`` (PPOConfig fields; label ``…_set``)."""
    config = make_config("ppo", num_envs=num_envs, device="cpu", **(overrides or {}))
    label = f"our_ppo_{num_envs}" + ("_set" if overrides else "")
    return Measurement("our_ppo", "finrl_tutorial", label, "samples_per_s",
                       lambda: measure_loop(market, config, iterations=iterations)["samples_per_s"],
                       {"num_envs": num_envs, "horizon_len": config.horizon_len, "batch_size": config.batch_size,
                        "repeat_times": config.repeat_times, "hidden_sizes": list(config.hidden_sizes),
                        "iterations": iterations, "env": "finrl_tutorial.envs.VecStockTradingEnv",
                        "overrides": {name: list(v) if isinstance(v, tuple) else v
                                      for name, v in (overrides or {}).items()}})


def build_measurements(args, market: MarketData):
    """Yield `Measurement`s, or ``(name, reason)`` for each peer measurement that cannot run here."""
    wanted = set(args.measure)
    frame = None
    if wanted & {"finrl_env", "elegantrl_env", "sb3_ppo_finrl_env"}:
        frame = finrl_frame(market)

    def guarded(name, build):
        try:
            return build()
        except PeerMissing as error:
            return name, str(error)
        except Exception as error:  # a peer that imports but fails on our bars: say so, measure the rest
            return name, f"failed: {one_line(error)}"

    if "finrl_env" in wanted:
        yield guarded("finrl_env", lambda: _finrl_env_measurement(frame, args.seconds))
    if "elegantrl_env" in wanted:
        close, tech = elegantrl_arrays(frame)
        for num_envs in args.num_envs:
            yield guarded("elegantrl_env", lambda: _elegantrl_measurement(close, tech, num_envs, args.seconds))
    if "our_env" in wanted:
        yield _our_env_measurement("single", market, 1, args.seconds)
        for num_envs in args.num_envs:
            yield _our_env_measurement("vec", market, num_envs, args.seconds)
    if "sb3_ppo_finrl_env" in wanted:
        def sb3_finrl():
            once = _sb3_timing(make_finrl_env(frame), args.sb3_steps)
            return Measurement("sb3_ppo_finrl_env", "stable-baselines3", "sb3_ppo_finrl_env", "samples_per_s", once,
                               {"env": "finrl StockTradingEnv", "imported": finrl_env_class()[1], **once.config})
        yield guarded("sb3_ppo_finrl_env", sb3_finrl)
    if "sb3_ppo_our_env" in wanted:
        def sb3_ours():
            once = _sb3_timing(_our_single_env(market, EnvConfig()), args.sb3_steps)
            return Measurement("sb3_ppo_our_env", "stable-baselines3", "sb3_ppo_our_env", "samples_per_s", once,
                               {"env": "finrl_tutorial.envs.StockTradingEnv", **once.config})
        yield guarded("sb3_ppo_our_env", sb3_ours)
    if "our_ppo" in wanted:
        overrides = parse_overrides(args.set)
        for num_envs in args.loop_envs:
            yield _our_ppo_measurement(market, num_envs, args.iterations)
            if overrides:
                yield _our_ppo_measurement(market, num_envs, args.iterations, overrides)


def _spread(runs: list[float]) -> float:
    return (max(runs) - min(runs)) / statistics.median(runs)


def summary(measured: list[Measurement], stocks: int) -> dict:
    """Ratios of the medians measured in this run, and the issue's targets checked against them."""
    median = {m.label: statistics.median(m.runs) for m in measured}
    ratios = {}

    def ratio(numerator, denominator):
        if numerator in median and denominator in median:
            ratios[f"{numerator}/{denominator}"] = median[numerator] / median[denominator]

    ours_env = [label for label in median if label.startswith("our_env")]
    for label in ours_env:
        ratio(label, "finrl_env")
    for label in ours_env:
        if label.startswith("our_env_vec_"):
            ratio(label, f"elegantrl_env_{label.rsplit('_', 1)[1]}")
    ours_ppo = [label for label in median if label.startswith("our_ppo")]
    defaults = [label for label in ours_ppo if not label.endswith("_set")]  # without --set overrides
    for label in ours_ppo:
        ratio(label, "sb3_ppo_finrl_env")
        ratio(label, "sb3_ppo_our_env")
    ratio("sb3_ppo_our_env", "sb3_ppo_finrl_env")

    targets = {}
    vec = {label: median[label] for label in ours_env if label.startswith("our_env_vec_")}
    if vec and "finrl_env" in median:
        best = max(vec, key=vec.get)
        value = vec[best] / median["finrl_env"]
        targets["batched_env_vs_finrl_env"] = {
            "target": 100.0, "at_stocks": 30, "stocks": stocks, "best": best, "ratio": value,
            "met": bool(value >= 100.0) if stocks == 30 else None}
    if defaults and "sb3_ppo_finrl_env" in median:
        for peer in ("sb3_ppo_finrl_env", "sb3_ppo_our_env"):
            if peer in median:
                best = max(defaults, key=median.get)  # the target is the default agent's
                value = median[best] / median[peer]
                targets[f"our_ppo_vs_{peer}"] = {"target": 50.0, "best": best, "ratio": value,
                                                 "met": bool(value >= 50.0)}
    return {"medians": median, "ratios": ratios, "targets": targets}


def run(args):
    for name in ("stocks", "repeats", "sb3_steps", "iterations", "threads"):
        if getattr(args, name) < 1:
            raise InputError(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    if args.seconds <= 0 or min(args.num_envs) < 1 or min(args.loop_envs) < 1:
        raise InputError("--seconds must be > 0 and --num-envs / --loop-envs >= 1")
    market = market_with_stocks(load_market().train, args.stocks)
    common = {"stocks": args.stocks, "data": f"{market.source} train split {market.first_date}..{market.last_date}",
              "versions": peer_versions(), "command": explicit_command(args, add_arguments)}
    records, measured = [], []
    for item in build_measurements(args, market):
        if isinstance(item, tuple):
            name, reason = item
            records.append({"bench": "peers", "measurement": name, "skipped": reason, **common, **machine()})
            yield records[-1]
        else:
            measured.append(item)
    for _ in range(args.repeats):  # interleaved rounds: a slow spell of the machine hits every measurement
        for measurement in measured:
            measurement.runs.append(measurement.once())
    for m in measured:
        records.append({"bench": "peers", "measurement": m.name, "label": m.label, "library": m.library,
                        m.unit: statistics.median(m.runs), "runs": m.runs, "spread": _spread(m.runs),
                        "repeats": len(m.runs), "device": "cpu", **m.details, **common, **machine()})
        yield records[-1]
    skipped = {r["measurement"]: r["skipped"] for r in records if "skipped" in r}
    records.append({"bench": "peers", "measurement": "summary", **summary(measured, args.stocks),
                    "skipped": skipped, **common, **machine()})
    yield records[-1]
    if args.out:
        write_json_lines(records, args.out)
