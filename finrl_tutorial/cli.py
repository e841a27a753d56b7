"""Command line: ``python -m finrl_tutorial data|train|backtest|bench …``.

Bad input ends with exit code 2 and one line on stderr naming the problem.
"""
from __future__ import annotations

import argparse
import ast
import contextlib
import errno
import dataclasses
import inspect
import json
import os
import sys
import textwrap
import types
import typing
from pathlib import Path

import pandas as pd
import torch

from . import bench, data
from .agents import A2CConfig, PPOConfig, make_config
from .atomic import atomic_open, write_json, written_together
from .backtest.runner import agent_policy, backtest
from .envs import EnvConfig
from .metrics import check_margin, verdict_reason
from .errors import (ConfigError, InputError, TrainingError, one_line,
                     show_data_warnings_in_one_line)
from .provenance import fast_mode
from .training.workers import DEFAULT_LEARNER_THREADS
from .training import (DataParallelContext, DistributedContext, agent_from_checkpoint, load_checkpoint,
                       local_context, results_table, run_experiment, runs)


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


def _tie_margin(text: str) -> float:
    """A tie margin: a finite number >= 0 (annualised Sharpe), else one line (`metrics.check_margin`)."""
    try:
        return check_margin(float(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a finite number >= 0 (annualised Sharpe), got {text!r}") from None


_tie_margin.__name__ = "tie margin"


def _tickers(values):
    """Accept ``--tickers 600000.SH 600519.SH`` and ``--tickers 600000.SH,600519.SH``."""
    if not values:
        return None
    return [t for value in values for t in value.split(",") if t]


# --- options generated from the config dataclasses: one source of names, types, defaults and help ---------

def field_docs(cls) -> dict[str, str]:
    """The docstring under each field of the dataclass ``cls`` (and of the dataclasses it extends)."""
    docs = {}
    for klass in reversed(cls.__mro__):
        if not dataclasses.is_dataclass(klass):
            continue
        body = ast.parse(textwrap.dedent(inspect.getsource(klass))).body[0].body
        for node, after in zip(body, body[1:]):
            if (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and isinstance(after, ast.Expr)
                    and isinstance(after.value, ast.Constant) and isinstance(after.value.value, str)):
                docs[node.target.id] = " ".join(after.value.value.replace("``", "").split())
    return docs


def _optional(parse):
    """``parse``, with ``none`` for None (a field typed ``X | None``)."""
    def parse_or_none(text: str):
        return None if text.strip().lower() == "none" else parse(text)
    parse_or_none.__name__ = f"{parse.__name__} or none"
    return parse_or_none


def _option_kind(annotation) -> dict | None:
    """argparse's type/nargs/action for a field's annotation; None for a field the command line
    cannot give (a nested config such as ``EnvConfig.fees``)."""
    args = typing.get_args(annotation)
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        inner = [a for a in args if a is not type(None)]
        kind = _option_kind(inner[0]) if len(inner) == 1 else None
        if kind is None or "type" not in kind or "nargs" in kind:
            return None
        return kind | {"type": _optional(kind["type"])}
    if annotation is bool:
        return {"action": argparse.BooleanOptionalAction}
    if annotation in (int, float, str):
        return {"type": annotation}
    if typing.get_origin(annotation) is tuple and args and args[0] in (int, float):
        return {"type": args[0], "nargs": "+"}
    return None


def add_config_options(parser, classes, skip=(), aliases=None) -> list[str]:
    """One ``--field-name`` option per field of the dataclasses ``classes`` (first class first; a
    field of a later class with the same name is left out), typed by its annotation, with its
    docstring as help and the dataclasses' defaults shown there. An option left out stays None:
    the config's own default then applies (A2C's differ from PPO's), and the config's own checks
    judge every value given. Returns the destinations added."""
    aliases = aliases or {}
    added = []
    for cls in classes:
        docs, hints = field_docs(cls), typing.get_type_hints(cls)
        for item in dataclasses.fields(cls):
            kind = _option_kind(hints[item.name])
            if item.name in skip or item.name in added or kind is None:
                continue
            values = [(klass.__name__, getattr(klass(), item.name)) for klass in _VARIANTS.get(cls, (cls,))]
            defaults = [repr(values[0][1])] if len({repr(v) for _, v in values}) == 1 else \
                [f"{value!r} ({name})" for name, value in values]
            flags = [f"--{item.name.replace('_', '-')}", *aliases.get(item.name, ())]
            parser.add_argument(*flags, dest=item.name, default=None, **kind,
                                help=f"{docs.get(item.name, '')} (default: {', '.join(defaults)})".replace("%", "%%"))
            added.append(item.name)
    return added


_VARIANTS = {PPOConfig: (PPOConfig, A2CConfig)}
"""Configs whose defaults differ by algorithm: the help shows each one's."""


def config_values(args, cls, skip=()) -> dict:
    """The fields of ``cls`` given on the command line (the rest keep the config's defaults)."""
    return {f.name: getattr(args, f.name) for f in dataclasses.fields(cls)
            if f.name not in skip and getattr(args, f.name, None) is not None}


def _build(flag_names, build):
    """``build()``, with a config's complaint about a field turned into one about its option."""
    try:
        return build()
    except ConfigError as error:
        field = next((name for name in flag_names if f".{name} " in str(error) or f".{name}:" in str(error)), None)
        raise ConfigError(f"--{field.replace('_', '-')}: {error}" if field else str(error)) from None


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


_ACTION_SOURCES = {"announced": "dividend table", "detected": "detected from the prices",
                   "split": "total adjustment split into shares and cash"}
"""How `cmd_data` names the source of each corporate action (`info["corporate_actions"][i]["how"]`)."""


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
        how = _ACTION_SOURCES.get(action["how"], action["how"])
        print(f"  {action['tic']} {action['date']}  holdings x{action['ratio']:.4f}{cash}  ({how})")
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


FAST_TOTAL_STEPS = 8192
"""``--total-steps`` when ``FINRL_TUTORIAL_FAST`` is on and the option is not given."""


def _configs(args):
    """The agent's and the env's configs from the options generated from their fields."""
    overrides = config_values(args, PPOConfig, skip=("algo",))
    if fast_mode():
        overrides.setdefault("total_steps", FAST_TOTAL_STEPS)
    names = [f.name for f in dataclasses.fields(PPOConfig)] + [f.name for f in dataclasses.fields(EnvConfig)]
    config = _build(names, lambda: make_config(args.algo, **overrides))
    env_config = _build(names, lambda: EnvConfig(**config_values(args, EnvConfig)))
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
    """The `LearnerContext` the options ask for, resolved before the data is loaded (a wrong
    device is one line at once): DDP (``--ddp``, under torchrun), DataParallel
    (``--data-parallel``) or this process on ``--device``."""
    if args.ddp:
        return DistributedContext.from_env(device=args.device)
    if args.data_parallel:
        return DataParallelContext(device=config.device)
    return local_context(config)


def cmd_train(args) -> int:
    if args.ddp and args.data_parallel:
        raise InputError("--ddp and --data-parallel exclude each other: DDP runs one process per device "
                         "(launch with torchrun), DataParallel one process over all GPUs; choose one")
    torch.set_num_threads(args.threads)
    config, env_config = _configs(args)
    context = _learner_context(args, config)
    try:
        prepared = _load(args)
        out = _run_folder(args)
        report = run_experiment(prepared, config, env_config, out_dir=out, seeds=args.seeds,
                                eval_every=args.eval_every, progress=not args.no_progress, workers=args.workers,
                                learner_threads=args.learner_threads, tie_margin=args.tie_margin,
                                distributed=context, resume=args.resume, overwrite=args.overwrite)
    finally:
        context.close()
    if report:
        with pd.option_context("display.width", 160, "display.float_format", "{:.4f}".format):
            print(f"\nTest split {report['data']['test'][0]}..{report['data']['test'][1]}, "
                  f"{report['env_steps']:,} env steps in {report['wall_seconds']:.1f} s "
                  f"({report['samples_per_s']:,.0f} samples/s)")
            print(results_table(report).to_string())
            versus = report["sharpe_vs_buy_and_hold"]
            print(f"\nSharpe(agent) - Sharpe(equal-weight buy-and-hold), mean over seeds: {versus['difference']:+.2f}, "
                  f"{versus['level']:.0%} bootstrap interval [{versus['low']:+.2f}, {versus['high']:+.2f}]: "
                  f"{versus['verdict']} ({verdict_reason(versus['verdict'], versus['margin'], versus['low'], versus['high'])})")
            nested = report.get("sharpe_vs_buy_and_hold_seeds_and_days")
            if nested:  # several seeds: the interval that also counts their spread
                print(f"With the seeds resampled as well as the days: [{nested['low']:+.2f}, {nested['high']:+.2f}]: "
                      f"{nested['verdict']}")
        written = [name for name in ("report.json", "config.json", "learning_curve.png", "equity.png", "weights.png",
                                     "checkpoints/best.pt") if (out / name).exists()]
        print(f"\nwrote in {out}/: {', '.join(written)}")
    return 0


BACKTEST_FILES = ("backtest.json", "equity.png")


def cmd_backtest(args) -> int:
    # the --out folder is claimed before the work (locked: a second backtest there waits for none and is
    # refused), never a training run's folder, and an earlier backtest is replaced only with --overwrite
    with (runs.claim_output(args.out, BACKTEST_FILES, overwrite=args.overwrite) if args.out
          else contextlib.nullcontext()) as out:
        return _backtest(args, out)


def _backtest(args, out: Path | None) -> int:
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
    if out is not None:  # written before printing (a closed stdout cannot lose them), both or neither
        with written_together(*(out / name for name in BACKTEST_FILES)) as (json_path, plot_path):
            write_json({"checkpoint": str(args.checkpoint), "split": args.split,
                        "dates": [market.first_date, market.last_date], "metrics": result.metrics}, json_path)
            result.plot(path=plot_path, title=f"{args.split} split")
    with pd.option_context("display.width", 160, "display.float_format", "{:.4f}".format):
        print(f"{args.split} split {market.first_date}..{market.last_date}")
        print(result.table().to_string())
    if out is not None:
        print(f"wrote {out}/backtest.json and equity.png")
    return 0


def cmd_bench(args) -> int:
    out = getattr(args, "out", None)  # a benchmark's --out file: one writer at a time
    with runs.file_lock(out) if out else contextlib.nullcontext():
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
    train.add_argument("--algo", choices=("ppo", "a2c"), default="ppo",
                       help="ppo or a2c: which algorithm, and so which config's defaults (default: ppo)")
    agent_options = train.add_argument_group("agent (PPOConfig / A2CConfig fields)")
    add_config_options(agent_options, [PPOConfig], skip=("algo",), aliases={"learning_rate": ("--lr",)})
    env_options = train.add_argument_group("environment (EnvConfig fields)")
    add_config_options(env_options, [EnvConfig])
    job = inspect.signature(run_experiment).parameters  # the main job's own defaults
    train.add_argument("--seeds", type=_int_at_least(1), default=job["seeds"].default,
                       help="train this many seeds and report mean ± std")
    train.add_argument("--eval-every", type=_int_at_least(0), default=job["eval_every"].default,
                       help="validate (and checkpoint) every K iterations; 0: never validate, keep the final weights")
    train.add_argument("--workers", type=_int_at_least(0), default=job["workers"].default,
                       help="collect with N worker processes (the update runs meanwhile on "
                            "--learner-threads threads, on the workers' cores, idle while it runs)")
    train.add_argument("--learner-threads", type=_int_at_least(1), default=None,
                       help="torch threads of the update beside --workers (default, chosen at start-up: "
                            f"{DEFAULT_LEARNER_THREADS}, at most the cores, while the load average is below the cores, "
                            "the faster on a quiet 2-core machine; else 1, where two threads ran 0.09x as fast)")
    train.add_argument("--tie-margin", type=_tie_margin, default=job["tie_margin"].default,
                       help="equivalence margin of the Sharpe difference against buy-and-hold, in annualised "
                            "Sharpe: a tie only if the whole interval lies within ±margin, else inconclusive "
                            "when it contains 0 (default %(default)s)")
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


_MACHINE_FAULTS = {errno.ENOSPC, errno.EDQUOT, errno.EACCES, errno.EPERM, errno.EROFS}
"""OS errors that are the machine's state (a full disk, a read-only or forbidden place): one line."""


def main(argv=None) -> int:
    show_data_warnings_in_one_line()
    args = build_parser().parse_args(argv)
    try:
        if getattr(args, "out", None) == "":  # an empty --out would silently fall back to the default
            raise InputError("--out is empty: give a file or folder name, or leave the option out")
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
    except OSError as error:  # the machine's fault, not the package's: one line (the writes left nothing half-done)
        if error.errno not in _MACHINE_FAULTS:
            raise
        where = f" ({error.filename})" if error.filename else ""
        print(f"error: {one_line(error.strerror or str(error))}{where}: free some space or fix the permissions, "
              "or write somewhere else (--out)", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
