"""Walk-forward on real data: one test year after another instead of a single split.

``python -m finrl_tutorial bench walkforward`` cuts the data (default: the embedded sse15 sample,
2015-01-05..2020-01-03) into one fold per test year Y that the data allows (`walk_forward_folds`):

    train  every trading day before the validation period
    valid  the ``--valid-months`` months before 1 January of Y (default 12: the calendar year Y−1)
    test   the trading days of the calendar year Y

The three parts of a fold never overlap and each ends before the next begins. Each fold is loaded
with its own splits (`finrl_tutorial.data.load_market`): the features are z-scored with statistics
fitted on the fold's train part only, and the indicators read each stock's own past only, so
nothing of the validation period or of Y reaches training, and nothing of Y reaches selection.
With 12 months of validation, sse15 gives the test years 2017, 2018 and 2019; the 2019 fold is
the main job's split, except that the test year stops on 2019-12-31 (the main job's test split
runs to 2020-01-03).

In each fold ``--seeds`` seeds train as the main job does (`finrl_tutorial.training.train`: the
PPO defaults, a validation every ``--eval-every`` iterations, the best validation Sharpe kept), and
each seed's chosen agent trades the test year with full costs beside the untrained agent of the
same seed, the constant action, equal-weight and equal-shares buy-and-hold and random trading.
Per year, and pooled over the years, the record holds the paired block-bootstrap interval of the
mean-over-seeds Sharpe(agent) − Sharpe(buy-and-hold) (`finrl_tutorial.metrics.sharpe_difference_ci`),
against both buy-and-holds, and the same for the untrained agent. Pooled means the test years
chained: each year traded by the agent trained for it, buy-and-hold bought afresh on each year's
first day (the day from a year's last close to the next year's first close belongs to no fold).

Writes one JSON record (``--out``, atomically, rewritten after every finished run so an
interrupted walk-forward keeps what it measured; ``--resume`` keeps the runs already in it) with
every run's daily test wealth, so the summary can be recomputed (``--summarize``), and its figure
(`plot_walkforward`) beside it as PNG. ``--merge A.json B.json --out C.json`` joins test years run
in separate processes (same settings).
"""
from __future__ import annotations

import datetime
import json
import os
import shlex
import statistics
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from matplotlib.figure import Figure

from ..agents import PPOConfig, make_config
from ..atomic import save_figure, write_json
from ..backtest.runner import agent_policy, backtest
from ..data import load_market
from ..envs import EnvConfig
from ..errors import InputError, check_int
from ..metrics import sharpe_difference_ci
from ..provenance import machine
from ..training import initial_agent, train
from .common import check_same_settings, checked_overrides, config_changes, explicit_command, recorded_config

POLICIES = ("agent", "untrained_agent", "constant_action", "equal_weight_buy_and_hold",
            "equal_shares_buy_and_hold", "random")
"""What trades each test year: the chosen agent and the baselines of `finrl_tutorial.backtest.backtest`."""

REFERENCES = ("equal_weight_buy_and_hold", "equal_shares_buy_and_hold")
"""The buy-and-holds the Sharpe differences are taken against."""

MIN_VALID_DAYS = 20
"""Fewest trading days of a validation period (a Sharpe of a handful of returns chooses nothing)."""


def walk_forward_folds(dates, years=None, *, valid_months: int = 12, min_train_days: int = 200,
                       min_test_days: int = 200) -> list[dict]:
    """The folds of a walk-forward over the trading days ``dates``, oldest test year first.

    For a test year Y: ``test`` is the trading days of Y, ``valid`` those of the ``valid_months``
    months before 1 January of Y, ``train`` every trading day before ``valid``. A year is allowed
    when its train part has ``min_train_days``, its test part ``min_test_days`` and its
    validation `MIN_VALID_DAYS` trading days. ``years``: the test years wanted (default: every
    allowed year); one the data does not allow is refused, naming those it does. Each fold is
    ``{"year", "train", "valid", "test"}``, each part ``(first day, last day)`` as ISO dates.
    """
    check_int("walk_forward_folds", "valid_months", valid_months, minimum=1)
    dates = pd.DatetimeIndex(sorted(set(pd.DatetimeIndex(dates).normalize())))
    if len(dates) == 0:
        raise InputError("walk-forward needs trading days, got none")
    folds = []
    for year in sorted(set(dates.year)):
        year_start = pd.Timestamp(year=year, month=1, day=1)
        valid_start = year_start - pd.DateOffset(months=valid_months)
        parts = {"train": dates[dates < valid_start],
                 "valid": dates[(dates >= valid_start) & (dates < year_start)],
                 "test": dates[dates.year == year]}
        if (len(parts["train"]) < min_train_days or len(parts["valid"]) < MIN_VALID_DAYS
                or len(parts["test"]) < min_test_days):
            continue
        folds.append({"year": int(year)} | {name: (str(days[0].date()), str(days[-1].date()))
                                            for name, days in parts.items()})
    allowed = [fold["year"] for fold in folds]
    if years:
        refused = sorted(set(int(y) for y in years) - set(allowed))
        if refused:
            raise InputError(f"test year(s) {', '.join(map(str, refused))} not possible on data "
                             f"{dates[0].date()}..{dates[-1].date()} with {valid_months} months of validation, "
                             f"{min_train_days} training and {min_test_days} test days: choose from "
                             f"{', '.join(map(str, allowed)) or 'none'}")
        folds = [fold for fold in folds if fold["year"] in set(int(y) for y in years)]
    if not folds:
        raise InputError(f"data {dates[0].date()}..{dates[-1].date()} allows no walk-forward test year with "
                         f"{valid_months} months of validation, {min_train_days} training and {min_test_days} test "
                         "days: use longer data or lower --valid-months")
    return folds


def fold_splits(fold: dict) -> dict[str, tuple[str, str]]:
    """The ``splits`` argument of `finrl_tutorial.data.load_market` for a fold."""
    return {name: tuple(fold[name]) for name in ("train", "valid", "test")}


def _rounded(wealth: pd.Series) -> list[float]:
    return [round(float(v), 4) for v in wealth]


def run_fold(source, fold: dict, seed: int, total_steps: int, eval_every: int, threads: int = 1,
             overrides: dict | None = None) -> dict:
    """Train one seed on one fold and backtest its chosen agent and the baselines on the test year:
    the record of one run, with every policy's test metrics and daily test wealth. ``overrides`` are
    `PPOConfig` fields (``--set``), e.g. the plain learner's ``gae_lambda=0.95``, ``market_baseline``
    and ``pathwise`` off."""
    torch.set_num_threads(threads)
    env_config = EnvConfig()
    prepared = load_market(source, splits=fold_splits(fold))
    config = make_config("ppo", seed=seed, total_steps=total_steps, **(overrides or {}))
    validations: list[dict] = []

    def follow(event: dict) -> None:
        validations.append({"iteration": event["iteration"], "env_steps": event["env_steps"],
                            "valid_sharpe": event["metrics"]["sharpe_ratio"]})

    untrained = initial_agent(prepared.train, config, env_config).eval()
    started = time.perf_counter()
    result = train(prepared, config, env_config, eval_every=eval_every, progress=False, on_evaluation=follow)
    wall = time.perf_counter() - started
    tested = backtest(agent_policy(result.agent), prepared.test, env_config, random_seed=seed,
                      others={"untrained_agent": agent_policy(untrained)})
    return {"year": fold["year"], "seed": seed, "splits": fold_splits(fold),
            "days": {name: prepared.splits[name].num_days for name in ("train", "valid", "test")},
            "env_steps": result.env_steps, "wall_seconds": wall, "best_valid_sharpe": result.best_valid_sharpe,
            "validations": validations,
            "test": {name: tested.records[name].metrics() for name in POLICIES},
            "test_dates": [str(d.date()) for d in tested.records["agent"].wealth.index],
            "test_wealth": {name: _rounded(tested.records[name].wealth) for name in POLICIES}}


def _spread(values: list[float]) -> dict:
    return {"mean": statistics.fmean(values), "std": statistics.stdev(values) if len(values) > 1 else 0.0,
            "min": min(values), "max": max(values), "values": values}


def _curve(run: dict, name: str) -> pd.Series:
    return pd.Series(run["test_wealth"][name], index=pd.DatetimeIndex(run["test_dates"]), name="wealth")


def chain(curves: list[pd.Series]) -> pd.Series:
    """Wealth curves of consecutive periods as one curve: the daily returns of each in turn,
    compounded from the first curve's start (each period starts afresh at its own first close)."""
    returns = pd.concat([curve.pct_change().iloc[1:] for curve in curves])
    start = curves[0].iloc[:1]
    return pd.concat([start, start.iloc[0] * (1.0 + returns).cumprod()]).rename("wealth")


def _intervals(agent: list[pd.Series], untrained: list[pd.Series], references: dict[str, pd.Series],
               seed: int = 0) -> dict:
    out = {}
    for name, reference in references.items():
        short = name.removesuffix("_buy_and_hold")
        out[f"agent_vs_{short}"] = sharpe_difference_ci(agent, reference, seed=seed)
        out[f"untrained_vs_{short}"] = sharpe_difference_ci(untrained, reference, seed=seed)
    return out


def summarize(runs: list[dict]) -> dict:
    """Per test year: the seeds' test metrics of every policy (mean, std, min, max of the Sharpe
    and of the cumulative return) and the Sharpe-difference intervals (`sharpe_difference_ci`,
    mean over seeds) of the agent and of the untrained agent against both buy-and-holds; then
    the same intervals pooled over the years (`chain`), over the seeds every year has."""
    by_year: dict[int, list[dict]] = {}
    for run in runs:
        by_year.setdefault(run["year"], []).append(run)
    years = []
    for year in sorted(by_year):
        group = sorted(by_year[year], key=lambda r: r["seed"])
        row = {"year": year, "seeds": [r["seed"] for r in group], "splits": group[0]["splits"],
               "days": group[0]["days"],
               "best_valid_sharpe": _spread([r["best_valid_sharpe"] for r in group])}
        for name in POLICIES:
            row[name] = {"sharpe_ratio": _spread([r["test"][name]["sharpe_ratio"] for r in group]),
                         "cumulative_return": _spread([r["test"][name]["cumulative_return"] for r in group]),
                         "max_drawdown": _spread([r["test"][name]["max_drawdown"] for r in group]),
                         "turnover": _spread([r["test"][name]["turnover"] for r in group])}
        row["intervals"] = _intervals([_curve(r, "agent") for r in group], [_curve(r, "untrained_agent") for r in group],
                                      {name: _curve(group[0], name) for name in REFERENCES})
        years.append(row)
    summary = {"years": years}
    common = sorted(set.intersection(*(set(row["seeds"]) for row in years))) if years else []
    if len(years) > 1 and common:
        pick = lambda year, seed: next(r for r in by_year[year] if r["seed"] == seed)  # noqa: E731
        ordered = sorted(by_year)
        agent = [chain([_curve(pick(y, s), "agent") for y in ordered]) for s in common]
        untrained = [chain([_curve(pick(y, s), "untrained_agent") for y in ordered]) for s in common]
        references = {name: chain([_curve(pick(y, common[0]), name) for y in ordered]) for name in REFERENCES}
        summary["pooled"] = {"years": ordered, "seeds": common, "days": len(references[REFERENCES[0]]) - 1,
                             "intervals": _intervals(agent, untrained, references)}
    return summary


def plot_walkforward(record: dict, path=None) -> Figure:
    """Left: test Sharpe per year (the agent's seeds as points and their mean, the baselines as
    bars). Right: the interval of Sharpe(agent) − Sharpe(equal-weight buy-and-hold) per year and
    pooled, with the untrained agent's beside it."""
    summary = record["summary"]
    years = summary["years"]
    fig = Figure(figsize=(11, 4.2), layout="constrained")
    left, right = fig.subplots(1, 2)
    x = np.arange(len(years))
    shown = ("untrained_agent", "constant_action", "equal_weight_buy_and_hold", "equal_shares_buy_and_hold")
    width = 0.8 / (len(shown) + 1)
    for k, name in enumerate(("agent", *shown)):
        means = [row[name]["sharpe_ratio"]["mean"] for row in years]
        left.bar(x + (k - len(shown) / 2) * width, means, width, label=name.replace("_", " "),
                 color="black" if name == "agent" else f"C{k}", alpha=0.85 if name == "agent" else 0.6)
        if name == "agent":
            for i, row in enumerate(years):
                values = row["agent"]["sharpe_ratio"]["values"]
                left.scatter([x[i] + (k - len(shown) / 2) * width] * len(values), values, color="white",
                             edgecolor="black", zorder=3, s=14)
    left.set_xticks(x, [str(row["year"]) for row in years])
    left.axhline(0.0, color="grey", linewidth=0.8)
    left.set_ylabel("test Sharpe")
    left.set_title(f"Test year by test year ({len(years[0]['seeds'])} seeds; points: each seed)", fontsize="medium")
    left.legend(fontsize="x-small")
    left.grid(alpha=0.3, axis="y")
    rows = [(str(row["year"]), row["intervals"]) for row in years]
    if "pooled" in summary:
        rows.append(("pooled", summary["pooled"]["intervals"]))
    for offset, (key, label, color) in enumerate((("agent_vs_equal_weight", "agent", "black"),
                                                  ("untrained_vs_equal_weight", "untrained agent", "C1"))):
        for i, (_, intervals) in enumerate(rows):
            ci = intervals[key]
            right.errorbar(i + 0.15 * (offset - 0.5), ci["difference"],
                           yerr=[[ci["difference"] - ci["low"]], [ci["high"] - ci["difference"]]],
                           fmt="o", color=color, capsize=3, label=label if i == 0 else None)
    right.axhline(0.0, color="grey", linewidth=0.8)
    right.set_xticks(range(len(rows)), [name for name, _ in rows])
    right.set_ylabel("Sharpe − equal-weight buy-and-hold")
    level = rows[0][1]["agent_vs_equal_weight"]["level"]
    right.set_title(f"{level:.0%} paired block-bootstrap interval (mean over seeds)", fontsize="medium")
    right.legend(fontsize="x-small")
    right.grid(alpha=0.3, axis="y")
    if path is not None:
        save_figure(fig, path)
    return fig


def write_record(path: Path | None, header: dict, runs: list[dict]) -> dict:
    """The record of ``runs`` (sorted by year and seed, with the summary); written atomically to ``path``."""
    runs = sorted(runs, key=lambda r: (r["year"], r["seed"]))
    record = header | {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                       "machine": machine(), "loadavg_end": list(os.getloadavg()), "runs": runs,
                       "summary": summarize(runs)}
    if path is not None:
        write_json(record, path)
    return record


def _read_record(path) -> dict:
    try:
        record = json.loads(Path(path).read_text())
        record["runs"]
        return record
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise InputError(f"{path} is not a walk-forward record: {error}") from None


def resummarize(path, out, command: str | None = None) -> dict:
    """Recompute the summary (and the figure) of a walk-forward record from its runs' daily test
    wealth, into ``out``: the runs, the date and the machine of the measurement are kept;
    ``summarized`` says when and by which command the summary was made."""
    record = _read_record(path)
    record["summary"] = summarize(sorted(record["runs"], key=lambda r: (r["year"], r["seed"])))
    record["summarized"] = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                            "command": command, "from": str(path)}
    write_json(record, out)
    plot_walkforward(record, Path(out).with_suffix(".png"))
    return record


SAME_SETTINGS = ("data", "valid_months", "total_steps", "eval_every", "config")
"""Header fields two walk-forward records must share to be merged (else their runs are not comparable)."""


def merge_records(paths: list, out, command: str | None = None) -> dict:
    """One record from walk-forward records of the same settings (`SAME_SETTINGS`), e.g. test years
    run in separate processes: the union of their runs (a year and seed present twice is kept once,
    from the first file) and folds, the summary recomputed; the parts' commands, dates, machines
    and load averages are kept under ``merged_from``."""
    records = [_read_record(path) for path in paths]
    check_same_settings(paths, records, SAME_SETTINGS, "walk-forward")
    first = records[0]
    runs, seen, folds = [], set(), {}
    for record in records:
        folds |= {fold["year"]: fold for fold in record["folds"]}
        for run in record["runs"]:
            if (run["year"], run["seed"]) not in seen:
                seen.add((run["year"], run["seed"]))
                runs.append(run)
    header = {key: first[key] for key in ("bench", "source", *SAME_SETTINGS)} | {
        "command": command, "folds": [folds[year] for year in sorted(folds)],
        "seeds": sorted({run["seed"] for run in runs}),
        "merged_from": [{key: record.get(key) for key in ("command", "started", "date", "machine", "loadavg_start",
                                                          "loadavg_end")} | {"runs": len(record["runs"])}
                        for record in records]}
    record = write_record(Path(out), header, runs)
    plot_walkforward(record, Path(out).with_suffix(".png"))
    return record


def add_arguments(kinds) -> None:
    parser = kinds.add_parser("walkforward", help="walk-forward on real data: train before each test year, "
                                                  "select on the months before it, test on it")
    parser.add_argument("--data", default="sample", help="sample (the embedded sse15) or a CSV in the bar schema")
    parser.add_argument("--years", type=int, nargs="+", default=None, help="test years (default: all the data allows)")
    parser.add_argument("--valid-months", type=int, default=12, help="validation months before each test year")
    parser.add_argument("--min-train-days", type=int, default=200, help="fewest training days of a fold")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--total-steps", type=int, default=PPOConfig().total_steps, help="env-steps per run")
    parser.add_argument("--eval-every", type=int, default=5, help="iterations between validations (as train's)")
    parser.add_argument("--jobs", type=int, default=1, help="runs in parallel processes")
    parser.add_argument("--out", default="runs/bench_walkforward/walkforward.json",
                        help="the JSON record (PNG beside it)")
    parser.add_argument("--resume", action="store_true", help="keep the runs already in --out, run the rest")
    parser.add_argument("--summarize", default=None, metavar="WALKFORWARD_JSON",
                        help="train nothing: recompute the summary of a record into --out")
    parser.add_argument("--merge", nargs="+", default=None, metavar="WALKFORWARD_JSON",
                        help="train nothing: merge walk-forward records made with the same settings into --out")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--set", nargs="+", default=[], metavar="FIELD=VALUE",
                        help="override PPOConfig fields of every run, e.g. --set gae_lambda=0.95 "
                             "market_baseline=false pathwise=false (the plain learner)")


def run(args):
    if args.merge:
        record = merge_records(args.merge, args.out, explicit_command(args, add_arguments))
        yield from record["summary"]["years"]
        if "pooled" in record["summary"]:
            yield {"pooled": True} | record["summary"]["pooled"]
        return
    if args.summarize:
        record = resummarize(args.summarize, args.out, shlex.join(["python", "-m", "finrl_tutorial", "bench", "walkforward",
                                                                   "--summarize", str(args.summarize),
                                                                   "--out", str(args.out)]))
        yield from record["summary"]["years"]
        return
    for name in ("seeds", "jobs", "threads", "total_steps", "eval_every", "min_train_days"):
        if getattr(args, name) < 1:
            raise InputError(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    overrides, configs = checked_overrides(args.set, ["ppo"], ("seed", "total_steps", "algo"),
                                           "bench walkforward sets these itself (use --seeds and --total-steps)")
    learner = configs["ppo"]
    source = Path(args.data) if args.data != "sample" else "sample"
    everything = load_market(source)
    folds = walk_forward_folds(pd.DatetimeIndex(everything.full.dates), args.years, valid_months=args.valid_months,
                               min_train_days=args.min_train_days)
    total = make_config("ppo", total_steps=args.total_steps).total_steps
    out = Path(args.out)
    done: list[dict] = []
    config = recorded_config(learner)
    if args.resume and out.exists():
        kept = _read_record(out)
        other = config_changes(kept.get("config", {}), config)
        if other:
            raise InputError(f"--resume: {out} ran another config ({', '.join(f'{k}={v}' for k, v in other.items())}); "
                             "give the same --set or another --out")
        done = [r for r in kept["runs"] if r["seed"] < args.seeds and r["env_steps"] >= total
                and any(r["year"] == f["year"] and r["splits"] == {k: list(v) for k, v in fold_splits(f).items()}
                        for f in folds)]
    header = {"bench": "walkforward", "command": explicit_command(args, add_arguments), "data": str(args.data),
              "source": everything.full.source, "valid_months": args.valid_months, "folds": folds,
              "seeds": list(range(args.seeds)), "total_steps": args.total_steps, "eval_every": args.eval_every,
              "config": config,
              "loadavg_start": list(os.getloadavg()),
              "started": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}
    have = {(r["year"], r["seed"]) for r in done}
    todo = [(fold, seed) for fold in folds for seed in range(args.seeds) if (fold["year"], seed) not in have]
    runs = list(done)
    arguments = [(source, fold, seed, args.total_steps, args.eval_every, args.threads, overrides) for fold, seed in todo]
    pool = ProcessPoolExecutor(args.jobs) if args.jobs > 1 else None
    results = ((run_fold(*a) for a in arguments) if pool is None
               else (f.result() for f in [pool.submit(run_fold, *a) for a in arguments]))
    try:
        for result in results:
            runs.append(result)
            write_record(out, header, runs)
            yield {k: v for k, v in result.items() if k not in ("test_wealth", "test_dates", "validations")} \
                | {"bench": "walkforward"}
    finally:
        if pool is not None:
            pool.shutdown(cancel_futures=True)
    record = write_record(out, header, runs)
    plot_walkforward(record, out.with_suffix(".png"))
    yield from record["summary"]["years"]
    if "pooled" in record["summary"]:
        yield {"pooled": True} | record["summary"]["pooled"]
