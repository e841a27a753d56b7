"""Command line: ``python -m finrl_tutorial data|train|backtest|bench …``.

Bad input ends with exit code 2 and one line on stderr naming the problem.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import pandas as pd
import torch

from . import bench, data
from .agents import make_config
from .atomic import atomic_open, write_json
from .backtest.runner import agent_policy, backtest
from .envs import EnvConfig, shard_start_windows
from .errors import InputError, TrainingError, one_line, require_device, show_data_warnings_in_one_line
from .training import (DataParallelContext, DistributedContext, WorkerPool, agent_from_checkpoint, load_checkpoint,
                       results_table, run_experiment, runs)

FAST = os.environ.get("FINRL_TUTORIAL_FAST") == "1"


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a bad option is one line on stderr (``error: …``) and exit code 2, like
    every other bad input (argparse itself prints the whole usage first)."""

    def error(self, message):
        self.exit(2, f"error: {self.prog}: {one_line(message)}\n")


def _int_at_least(minimum: int):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum}, got {value}")
        return value
    parse.__name__ = f"integer >= {minimum}"
    return parse


def _tickers(values):
    """Accept ``--tickers 600000.SH 600519.SH`` and ``--tickers 600000.SH,600519.SH``."""
    if not values:
        return None
    return [t for value in values for t in value.split(",") if t]


def _add_data_options(parser, default="sample"):
    parser.add_argument("--source", "--data", dest="source", default=default,
                        help="sample (embedded sse15) | tushare | akshare | baostock | PATH.csv")
    parser.add_argument("--tickers", nargs="*", help="tickers to keep or fetch, e.g. 600000.SH 600519.SH")
    parser.add_argument("--start", help="first date (YYYY-MM-DD)")
    parser.add_argument("--end", help="last date (YYYY-MM-DD)")
    parser.add_argument("--token", help="tushare token (default: $TUSHARE_TOKEN); never printed or saved")
    parser.add_argument("--date-format", help="format of your file's dates when it is ambiguous, e.g. %%d/%%m/%%Y")


def _load(args, **options):
    source = "sample" if args.source in ("sample", "sse15") else args.source
    return data.load_market(source, tickers=_tickers(args.tickers), start=args.start, end=args.end,
                            token=getattr(args, "token", None), date_format=args.date_format, **options)


def _same_file(a, b) -> bool:
    try:
        return Path(a).resolve() == Path(b).resolve() or (Path(b).exists() and os.path.samefile(a, b))
    except OSError:
        return False


def _output_file(path, overwrite: bool, inputs=()) -> Path:
    """An output file that loses nothing: not an input, not a folder, not an existing file unless overwrite."""
    path = Path(path)
    for source in inputs:
        if source and _same_file(path, source):
            raise InputError(f"--out {path} is the input file itself: write the output somewhere else")
    if path.is_dir():
        raise InputError(f"--out {path} is a folder: give a file name, e.g. {path}/clean.csv")
    if path.exists() and not overwrite:
        raise InputError(f"--out {path} exists: pass --overwrite to replace it, or choose another name")
    runs.check_target(path.parent)
    return path


def cmd_data(args) -> int:
    if args.out:  # refuse before the (slow) cleaning, not after
        _output_file(args.out, args.overwrite, inputs=[args.source])
    prepared = _load(args)
    summary = prepared.summary()
    print(f"source:        {summary['source']}")
    print(f"tickers ({len(summary['tickers'])}):  {' '.join(summary['tickers'])}")
    print(f"trading days:  {summary['trading_days']}  ({summary['date_range'][0]} .. {summary['date_range'][1]})")
    print(f"suspended stock-days: {summary['suspended_stock_days']}  "
          + ", ".join(f"{t} {n}" for t, n in summary["suspended_by_ticker"].items()))
    actions = summary["corporate_actions"]
    print(f"corporate actions: {len(actions)}")
    for action in actions:
        cash = f" + ¥{action['dividend']:.4f}/share" if action.get("dividend") else ""
        print(f"  {action['tic']} {action['date']}  holdings x{action['ratio']:.4f}{cash}  ({action['how']})")
    print("splits:        " + ", ".join(f"{name} {s['start']}..{s['end']} ({s['days']} days)"
                                        for name, s in summary["splits"].items()))
    print(f"features ({len(summary['features'])}): {' '.join(summary['features'])}")
    if args.out:
        out = _output_file(args.out, args.overwrite, inputs=[args.source])
        compression = {".gz": "gzip", ".bz2": "bz2", ".xz": "xz", ".zip": "zip"}.get(out.suffix.lower())
        with atomic_open(out, "wb") as stream:  # x.csv.gz is gzip, as its name says (read back by --data)
            prepared.full.to_frame().to_csv(stream, index=False, compression=compression)
        print(f"saved the cleaned frame to {out}")
    return 0


def _configs(args):
    overrides = {k: v for k, v in {
        "total_steps": args.total_steps, "num_envs": args.num_envs, "horizon_len": args.horizon_len,
        "batch_size": args.batch_size, "repeat_times": args.repeat_times, "learning_rate": args.lr,
        "network": args.network,
        "seed": args.seed, "device": args.device,
    }.items() if v is not None}
    if FAST:
        overrides.setdefault("total_steps", 8192)
    config = make_config(args.algo, **overrides)
    env_config = EnvConfig(execution=args.execution, action_mode=args.action_mode, episode_days=args.episode_days)
    return config, env_config


def _run_folder(args) -> Path:
    """The run folder: ``--out`` as given; the default ``runs/<name>`` moves on to a fresh
    ``runs/<name>-2`` … when it holds an earlier run (and ``--resume`` takes the newest)."""
    if args.out:
        return Path(args.out)
    default = Path(f"runs/{args.name or args.algo}")
    if args.resume:
        return runs.latest(default)
    if args.overwrite:
        return default
    fresh = runs.next_free(default)
    if fresh != default:
        print(f"{default} holds an earlier run: writing to {fresh} (--overwrite replaces {default})", flush=True)
    return fresh


def _learner_context(args, config):
    """The `LearnerContext` the options ask for: DDP (``--ddp``, under torchrun), DataParallel
    (``--data-parallel``) or None (train's default, this process)."""
    if args.ddp:
        return DistributedContext.from_env(device=args.device)
    if args.data_parallel:
        return DataParallelContext(device=config.device)
    return None


def cmd_train(args) -> int:
    if args.ddp and args.data_parallel:
        raise InputError("--ddp and --data-parallel exclude each other: DDP runs one process per device "
                         "(launch with torchrun), DataParallel one process over all GPUs; choose one")
    torch.set_num_threads(args.threads)
    if args.ddp and args.data_parallel:
        raise InputError("--ddp and --data-parallel exclude each other: DDP runs one process per device, "
                         "DataParallel splits one process's update over the GPUs; choose one")
    if args.device is not None and not args.ddp:
        require_device(args.device)  # before the data is loaded: a wrong device is one line at once
    config, env_config = _configs(args)
    distributed = _learner_context(args, config)
    prepared = _load(args)
    pool_factory = None
    if args.workers:
        window = None
        if distributed is not None and distributed.world_size > 1:  # each rank's workers share its shard
            window = shard_start_windows(prepared.train.num_days, distributed.world_size)[distributed.rank]
        pool_factory = lambda seed: WorkerPool(prepared.train, config, env_config,  # noqa: E731
                                               num_workers=args.workers, seed=seed, start_window=window)
    out = _run_folder(args)
    try:
        report = run_experiment(prepared, config, env_config, out_dir=out, seeds=args.seeds,
                                eval_every=args.eval_every, progress=not args.no_progress,
                                worker_pool_factory=pool_factory, distributed=distributed,
                                resume=args.resume, overwrite=args.overwrite)
    finally:
        if distributed is not None:
            distributed.close()
    if report:
        with pd.option_context("display.width", 160, "display.float_format", "{:.4f}".format):
            print(f"\nTest split {report['data']['test'][0]}..{report['data']['test'][1]}, "
                  f"{report['env_steps']:,} env steps in {report['wall_seconds']:.1f} s "
                  f"({report['samples_per_s']:,.0f} samples/s)")
            print(results_table(report).to_string())
            versus = report["sharpe_vs_buy_and_hold"]
            print(f"\nSharpe(agent) - Sharpe(equal-weight buy-and-hold), mean over seeds: {versus['difference']:+.2f}, "
                  f"{versus['level']:.0%} bootstrap interval [{versus['low']:+.2f}, {versus['high']:+.2f}]: "
                  f"{versus['verdict']}")
        written = [name for name in ("report.json", "config.json", "learning_curve.png", "equity.png", "weights.png",
                                     "checkpoints/best.pt") if (out / name).exists()]
        print(f"\nwrote in {out}/: {', '.join(written)}")
    return 0


def cmd_backtest(args) -> int:
    out = Path(args.out) if args.out else None
    if out is not None:  # refuse before the work, and never replace an earlier backtest silently
        runs.check_target(out)
        taken = [name for name in ("backtest.json", "equity.png") if (out / name).exists()]
        if taken and not args.overwrite:
            raise InputError(f"{out} already holds a backtest ({', '.join(taken)}): pass --overwrite to replace it, "
                             "or choose another --out")
    state = load_checkpoint(args.checkpoint)
    agent, _, env_config = agent_from_checkpoint(state)
    options = {}
    if state.get("feature_stats"):  # the agent's own normalisation, whatever the window
        options = {"feature_stats": state["feature_stats"], "indicators": tuple(state["indicators"])}
    else:
        print("note: this checkpoint has no feature statistics (written before they were saved): "
              "the features are normalised on this data's train split", file=sys.stderr)
    prepared = _load(args, **options)
    market = prepared.full if args.split == "all" else prepared.splits[args.split]
    if list(market.tickers) != list(state["tickers"]):
        missing = [t for t in state["tickers"] if t not in market.tickers]
        extra = [t for t in market.tickers if t not in state["tickers"]]
        raise InputError(f"the checkpoint was trained on tickers {' '.join(state['tickers'])}, but the data has "
                         f"{' '.join(market.tickers)}" + (f" (missing {' '.join(missing)})" if missing else "")
                         + (f" (extra {' '.join(extra)})" if extra else "") + ": select them with --tickers")
    if list(market.feature_names) != list(state["feature_names"]):
        raise InputError(f"the checkpoint was trained on features {state['feature_names']}, "
                         f"but the data has {market.feature_names}")
    result = backtest(agent_policy(agent), market, env_config, benchmark=prepared.benchmark)
    if out is not None:  # written before printing: a closed stdout cannot lose them
        write_json({"checkpoint": str(args.checkpoint), "split": args.split,
                    "dates": [market.first_date, market.last_date], "metrics": result.metrics},
                   out / "backtest.json")
        result.plot(path=out / "equity.png", title=f"{args.split} split")
    with pd.option_context("display.width", 160, "display.float_format", "{:.4f}".format):
        print(f"{args.split} split {market.first_date}..{market.last_date}")
        print(result.table().to_string())
    if out is not None:
        print(f"wrote {out}/backtest.json and equity.png")
    return 0


def cmd_bench(args) -> int:
    for record in bench.run(args):
        print(json.dumps(record), flush=True)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="python -m finrl_tutorial",
                                     description="Scalable RL for China A-share trading.")
    commands = parser.add_subparsers(dest="command", required=True)

    data_parser = commands.add_parser("data", help="load, clean and summarise market data")
    _add_data_options(data_parser)
    data_parser.add_argument("--out", help="save the cleaned long frame to this CSV")
    data_parser.add_argument("--overwrite", action="store_true", help="replace an existing --out file")
    data_parser.set_defaults(func=cmd_data)

    train = commands.add_parser("train", help="train an agent, backtest it against baselines, write a report")
    _add_data_options(train)
    train.add_argument("--algo", choices=("ppo", "a2c"), default="ppo")
    train.add_argument("--total-steps", type=_int_at_least(1), help="env steps per seed (default: the config's)")
    train.add_argument("--num-envs", type=_int_at_least(1))
    train.add_argument("--horizon-len", type=_int_at_least(1))
    train.add_argument("--batch-size", type=_int_at_least(1))
    train.add_argument("--repeat-times", type=_int_at_least(1))
    train.add_argument("--lr", type=float)
    train.add_argument("--device", default=None, help="cpu | cuda | cuda:1 …")
    train.add_argument("--seed", type=int, default=0)
    train.add_argument("--seeds", type=_int_at_least(1), default=1, help="train this many seeds and report mean ± std")
    train.add_argument("--execution", choices=("open", "close"), default="open")
    train.add_argument("--action-mode", choices=("weights", "shares"), default="weights",
                       help="weights: target portfolio (default); shares: ±max_lots lots per stock (FinRL-style)")
    train.add_argument("--network", choices=("stockwise", "mlp"),
                       help="stockwise: one network shared by all stocks (default); mlp: one flat MLP")
    train.add_argument("--episode-days", type=_int_at_least(1), default=250, help="episode length in trading days")
    train.add_argument("--eval-every", type=_int_at_least(0), default=5,
                       help="validate (and checkpoint) every K iterations; 0: never validate, keep the final weights")
    train.add_argument("--workers", type=_int_at_least(0), default=0,
                       help="collect with N worker processes (the update then runs on N threads: "
                            "the workers' cores, idle while it runs)")
    train.add_argument("--ddp", action="store_true", help="DistributedDataParallel (launch with torchrun)")
    train.add_argument("--data-parallel", action="store_true", help="torch.nn.DataParallel over visible GPUs")
    train.add_argument("--threads", type=_int_at_least(1), default=1,
                       help="torch CPU threads (1 is fastest for small MLPs)")
    train.add_argument("--name", help="run name: output goes to runs/<name> (runs/<name>-2 … if that holds a run)")
    train.add_argument("--out", help="output folder (overrides --name); refused if it holds a run, "
                                     "unless --resume or --overwrite")
    train.add_argument("--resume", action="store_true",
                       help="continue the run in --out (default: the newest runs/<name>) from its last checkpoint")
    train.add_argument("--overwrite", action="store_true", help="replace the run in --out")
    train.add_argument("--no-progress", action="store_true")
    train.set_defaults(func=cmd_train)

    back = commands.add_parser("backtest", help="backtest a saved agent on a split with full costs")
    _add_data_options(back)
    back.add_argument("--checkpoint", required=True)
    back.add_argument("--split", choices=("train", "valid", "test", "all"), default="test",
                      help="which split of the loaded window (all: the whole window)")
    back.add_argument("--out", help="folder for backtest.json and equity.png")
    back.add_argument("--overwrite", action="store_true", help="replace a backtest already in --out")
    back.set_defaults(func=cmd_backtest)

    bench_parser = commands.add_parser("bench", help="benchmarks (JSON lines on stdout)")
    bench.add_arguments(bench_parser)
    bench_parser.set_defaults(func=cmd_bench)
    return parser


def main(argv=None) -> int:
    show_data_warnings_in_one_line()
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (InputError, TrainingError) as error:  # bad input; anything else is a bug: its traceback shows
        print("error: " + one_line(str(error)), file=sys.stderr)  # one line, whatever the message
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # stdout closed early (`… | head`): not an error of the run
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
