"""Chapter 6's readings: one A-share step function run four ways (one gymnasium env, a subprocess
VecEnv, the hand-batched env, the vmap env), and whether several processes, each with a batched
env, add throughput.

The chapter measures with `finrl_tutorial.bench.measure_env` and keeps its numbers in a pandas
Series ``rate`` of env-steps/s indexed by ``(env, num_envs)``; the functions here turn those
numbers, the rounds of `process_rounds` and the stored records (the quiet and the loaded
``bench scale`` records of `finrl_tutorial.book.scale`, and the H200 anchors of `GPU_RECORD`) into
the chapter's figures, tables and folded method notes; the chapter's prose is Markdown, checked
by hidden cells against these readings. Each ``N×`` a table states names what it is a multiple of. Only `process_rounds`
measures (through `finrl_tutorial.bench.processes`); everything else is a pure reading.
"""
from __future__ import annotations

import os

import numpy as np
import pandas as pd

from ..bench.processes import measure_rounds
from ..bench.scale import loadavg, scale_label
from ..errors import InputError
from .cli import cli_command
from .folded import MethodNote, how_measured
from .report import code_spans
from .scale import (LOADED_SCALE_RECORD, SCALE_RECORD, SPEED_TIE_MARGIN, fit_per_call, holm_speed_tests,
                    speed_verdict, speedups)

GPU_RECORD = "anchors_elegantrl_h200.jsonl"
"""The recorded measurement of other envs on one NVIDIA H200 (chapter 6.6)."""

RATIO = "2 processes ÷ faster 1 process"
"""The column of `process_rounds` that holds each round's speed ratio."""

GPU_CURVES = {("elegantrl_StockTradingVecEnv", False): ("ElegantRL's StockTradingVecEnv", "o--", "tab:green"),
              ("ref_batched_env", False): ("rule-free batched env, eager", "s:", "tab:purple"),
              ("ref_batched_env", True): ("rule-free batched env, one CUDA graph", "s-", "tab:red")}
"""The curves of `GPU_RECORD` drawn in 6.6: ``(bench, graph)`` → (label, line style, colour)."""


def _dropdown(title: str, body: str) -> MethodNote:
    """A folded method note (`folded.how_measured`) titled ``title`` holding the Markdown ``body``."""
    return how_measured(body.strip(), title=title)


def _range(low: float, high: float, digits: int = 2) -> str:
    """``"0.91–1.08"`` (one number when both ends print the same)."""
    a, b = f"{low:.{digits}f}", f"{high:.{digits}f}"
    return a if a == b else f"{a}–{b}"


def _accounts(n: int) -> str:
    """``"1 account"``, ``"2 accounts"``, ``"4,096 accounts"``."""
    return f"{n:,} account{'' if n == 1 else 's'}"


def _same_sizes(rate: pd.Series) -> list[int]:
    """The numbers of accounts at which the subprocess VecEnv and both batched envs ran."""
    return sorted(set(rate["subproc"].index) & set(rate["vec"].index) & set(rate["vmap"].index))


# --- 6.3: env-steps per second ---------------------------------------------------------------------

def plot_throughput(rate: pd.Series, per_call: dict, ax, stocks: int) -> None:
    """Draw on ``ax`` the env-steps/s of ``rate`` (env-steps/s indexed by ``(env, num_envs)``,
    holding ``single``, ``subproc``, ``vec`` and ``vmap``) against the number of accounts, on log
    axes: the two batched envs as lines, the fit ``n / (c + a n)`` of ``per_call``
    (`finrl_tutorial.book.scale.fit_per_call`), the single env as a horizontal line and the
    subprocess VecEnv as points. ``stocks`` goes into the title."""
    for kind, style in (("vec", "o-"), ("vmap", "s--")):
        ax.plot(rate[kind].index, rate[kind].to_numpy(), style, label=f"{kind} (one process)")
    # the fit drawn past the largest size, dashed and dark so that it shows where it lies on the vec curve,
    # with its ceiling 1/a, which the batched curves bend towards
    sizes = pd.Series(np.geomspace(1, 4 * max(rate["vec"].index), 200))
    ax.plot(sizes, sizes / (per_call["call_seconds"] + sizes * per_call["account_seconds"]), color="black",
            linestyle=(0, (4, 3)), linewidth=1.1, zorder=3, label="fit: n / (c + a n)")
    if per_call["account_seconds"] > 0:
        ceiling = 1 / per_call["account_seconds"]
        ax.axhline(ceiling, color="black", linestyle=":", linewidth=1, alpha=0.6,
                   label=f"the fit's ceiling 1 / a ≈ {float(f'{ceiling:.2g}'):,.0f} env-steps/s")  # two digits: a fit
    ax.axhline(float(rate["single"].iloc[0]), color="tab:green", linestyle=":", label="single gymnasium env")
    ax.plot(rate["subproc"].index, rate["subproc"].to_numpy(), "D", color="tab:red", markersize=8,
            label="subproc VecEnv (one process per account)")
    ax.set(xscale="log", yscale="log", xlabel="accounts (sub-envs)", ylabel="env-steps / s",
           title=f"One A-share step function, four ways ({stocks} stocks, this CPU, this run)")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize="small")


def per_call_table(per_call: dict) -> pd.DataFrame:
    """The fit of `fit_per_call` as a one-column table: the fixed cost ``c`` of one batched call and
    the cost ``a`` of one more account (µs), and the break-even size ``c / a`` (accounts)."""
    return pd.DataFrame({"this run": {"fixed cost of one call, c (µs)": f"{1e6 * per_call['call_seconds']:,.0f}",
                                      "cost of one more account, a (µs)": f"{1e6 * per_call['account_seconds']:.2f}",
                                      "break-even size c / a (accounts)": f"{per_call['break_even_accounts']:,.0f}"}})


def sweep_method(records: list[dict], seconds: float):
    """The method of the 6.3 sweep, folded away: how each of ``records`` (`measure_env` records of
    this run) was measured, the machine they name, and the load average now. Returns Markdown (a
    MyST dropdown)."""
    cores = sorted({r["cpu_count"] for r in records})
    threads = sorted({r["threads"] for r in records})
    load = loadavg()
    return _dropdown("How this was measured", f"""
Each point is one call of `ft.bench.measure_env`: after one warm-up step, the env is stepped with
random actions (one number per stock, drawn uniformly in $[-1, 1]$; the default `weights` mode reads
the positive part as target portfolio weights, as in 6.1) for {seconds:g} s, episodes auto-resetting,
and its env-steps are counted. The subprocess VecEnv starts its processes (`spawn`) before the clock starts. Everything
runs in this notebook's process on {' or '.join(map(str, threads))} torch
thread{'' if threads == [1] else 's'}, on a machine with {' or '.join(map(str, cores))} CPU cores, whose load average is
{'not available here' if load is None else f'{load[0]:.2f}'} now (everything running on the machine counts
in it). The fit is a least-squares line through the seconds of one call of the batched env, $n$ /
(env-steps/s), against $n$.
""")


# --- 6.4: like with like ---------------------------------------------------------------------------

def same_accounts_table(rate: pd.Series) -> pd.DataFrame:
    """env-steps/s of the subprocess VecEnv, the batched env and the vmap env at every number of
    accounts all three ran (rows ``"2 accounts"`` ...), from ``rate`` (env-steps/s indexed by
    ``(env, num_envs)``); where ``rate`` holds the single gymnasium env, a first column with its
    rate at the sizes it ran (one account; empty elsewhere)."""
    table = pd.DataFrame({_accounts(n): {"subproc VecEnv": rate["subproc"][n], "batched env (vec)": rate["vec"][n],
                                              "vmap env": rate["vmap"][n]} for n in _same_sizes(rate)}).T
    if "single" in rate.index.get_level_values(0):  # the plain gymnasium env steps one account
        table.insert(0, "single env", [rate["single"].get(int(label.split()[0].replace(",", "")), float("nan"))
                                       for label in table.index])
    return table


def same_accounts_reading(rate: pd.Series) -> dict:
    """The numbers of 6.4 from ``rate``: the batched env ÷ the subprocess VecEnv at each shared size
    (``"same"``), the smallest shared size (``"small"``) and the largest batched size (``"large"``),
    how many times longer a call of ``large`` accounts took than a call of ``small`` (``"call
    ratio"``) and how many times the env-steps/s grew (``"gain"``), and the vmap env ÷ the batched
    env over the sizes both ran (``"vmap low"``, ``"vmap high"``)."""
    sizes = _same_sizes(rate)
    if not sizes:
        raise InputError("rate holds no number of accounts that the subprocess VecEnv and both batched envs ran")
    small, large = sizes[0], int(max(rate["vec"].index))
    vmap = (rate["vmap"] / rate["vec"]).dropna()
    call = lambda n: n / rate["vec"][n]  # seconds of one call of n accounts  # noqa: E731
    return {"same": {n: rate["vec"][n] / rate["subproc"][n] for n in sizes}, "small": small, "large": large,
            "call ratio": call(large) / call(small), "gain": rate["vec"][large] / rate["vec"][small],
            "vmap low": float(vmap.min()), "vmap high": float(vmap.max())}


def batching_table(rate: pd.Series) -> pd.DataFrame:
    """6.4's reading of ``rate`` as a one-column table (`same_accounts_reading`): the batched env ÷ the
    subprocess VecEnv at each shared size, the call of the largest batched size ÷ the call of the
    smallest shared one, the env-steps/s at the largest ÷ at the smallest, and the vmap env ÷ the
    batched env over the sizes both ran; with the single env in ``rate``, the batched env ÷ the
    single env at one account. Each row names its baseline."""
    r = same_accounts_reading(rate)
    rows = {f"{_accounts(n)}: batched env ÷ subprocess VecEnv": f"{v:.2f}×" for n, v in r["same"].items()}
    if ("single", 1) in rate.index and ("vec", 1) in rate.index:
        rows["1 account: batched env ÷ single env"] = f"{rate['vec'][1] / rate['single'][1]:.2f}×"
    rows[f"one call of {r['large']:,} accounts ÷ one call of {r['small']:,}"] = f"{r['call ratio']:.0f}×"
    rows[f"batched env at {r['large']:,} accounts ÷ at {r['small']:,} (env-steps/s)"] = f"{r['gain']:,.0f}×"
    rows["vmap env ÷ batched env (env-steps/s), over the sizes both ran"] = f"{_range(r['vmap low'], r['vmap high'])}×"
    return pd.DataFrame({"this run": rows})


def call_costs(records, largest: int = 16_384) -> pd.DataFrame:
    """The line t(n) = c + a·n (`fit_per_call`) fitted separately to the batched env's and the vmap
    env's one-thread sweeps of a ``bench scale`` record, up to ``largest`` accounts (past it memory,
    not the call, sets the pace): one row per env, its fixed cost per call ``c (ms)``, its cost per
    account ``a (µs)``, and each as a multiple of the batched env's. Why the vmap env is slower."""
    fits = {}
    for kind, name in (("vec", "batched env (vec)"), ("vmap", "vmap env")):
        rows = sorted((r["num_envs"], r["env_steps_per_s"]) for r in records
                      if r.get("layout") == kind and r.get("threads") == 1 and r["num_envs"] <= largest)
        if len(rows) < 2:
            raise InputError(f"the record holds fewer than two one-thread sizes of the {kind} env")
        fits[name] = fit_per_call([n for n, _ in rows], [rate for _, rate in rows])
    vec = fits["batched env (vec)"]
    return pd.DataFrame({name: {"c (ms)": 1e3 * f["call_seconds"], "a (µs)": 1e6 * f["account_seconds"],
                                "c ÷ batched env's": f["call_seconds"] / vec["call_seconds"],
                                "a ÷ batched env's": f["account_seconds"] / vec["account_seconds"]}
                         for name, f in fits.items()}).T


# --- 6.5: several processes, each with a batched env -----------------------------------------------

def process_rounds(market, num_envs: int, rounds: int = 3, seconds: float = 2.0) -> pd.DataFrame:
    """Measure, ``rounds`` times, two processes each running the batched env with ``num_envs``
    accounts at the same moment (two ``python -m finrl_tutorial bench env`` commands, each measuring
    for ``2 × seconds + 1`` s; their env-steps/s summed) and, right after, this process alone with
    all ``2 × num_envs`` accounts for ``seconds``, once on one torch thread and once on one thread
    per core. One row per round: the three rates, the 1-minute load average at the round's end, and
    `RATIO`, the two processes ÷ the faster single-process setup of the same round. ``attrs`` keep
    the column names (``"one"``, ``"one_all"``, ``"two"``), ``num_envs``, ``cores``, ``seconds``, the
    command and each round's two process records (``"records"``)."""
    record = measure_rounds(market, num_envs, rounds=rounds, seconds=seconds)  # interleaved rounds
    record["command"] = "python " + " ".join(cli_command("bench", "env", "--env", "vec", "--num-envs", num_envs,
                                                         "--seconds", 2 * seconds + 1, "--stocks",
                                                         market.num_stocks)[1:])
    return rounds_frame(record)


def rounds_frame(record: dict) -> pd.DataFrame:
    """A ``bench processes`` record (or `process_rounds`' own) as the table `process_rounds` returns:
    one row per round with the three rates, the load average at the round's end and `RATIO`."""
    num_envs, cores = int(record["num_envs"]), int(record["cores"])
    one, one_all = f"1 process × {2 * num_envs:,}, 1 thread", f"1 process × {2 * num_envs:,}, {cores} threads"
    two = f"2 processes × {num_envs:,} (sum)"
    columns = {"one_process_one_thread": one, "one_process_all_threads": one_all, "two_processes": two}
    rows = [{label: row[key] for key, label in columns.items() if key in row}
            | {"load average": (row.get("loadavg") or [float("nan")])[0]} for row in record["rounds"]]
    table = pd.DataFrame(rows).rename_axis("round")
    singles = [label for label in (one, one_all) if label in table]
    table[RATIO] = table[two] / table[singles].max(axis=1)
    table.attrs.update({"one": one, "one_all": one_all if cores > 1 else one, "two": two, "num_envs": num_envs,
                        "cores": cores, "seconds": record["seconds"],
                        "records": [[{"num_envs": num_envs, "env_steps_per_s": rate} for rate in row["two_process_rates"]]
                                    for row in record["rounds"]],
                        "command": record.get("command", "")})
    return table


PROCESSES_RECORD = "bench_processes_quiet.jsonl"
"""The stored ``bench processes`` record (6.5): two processes of 1,024 and of 8,192 accounts each
against one process with all their accounts, 5 interleaved rounds each, on a quiet 2-core machine."""

CONTROL_PROCESSES_RECORD = "bench_processes_control.jsonl"
"""The same ``bench processes`` command made again (6.5), whose rounds also time one process with all
the accounts as a separate command, exactly as each of the two (`same_method_reading`)."""


def process_record_reading(records, fit: dict | None = None) -> pd.DataFrame:
    """Each size of a stored ``bench processes`` record (`PROCESSES_RECORD`), one row: the
    accounts per process and in all, the rounds' ratios of two processes ÷ the faster single-process
    setup of the same round (`RATIO`: median, min, max) and ÷ the one-thread process alone (min,
    max: a baseline fixed before the rounds), the verdict of the rounds (`speed_verdict`), the
    t-test's p on the log ratios after Holm's correction over the sizes (`holm_speed_tests`), the
    range of load averages at the rounds' ends and, given a `fit_per_call` fit ``fit``, the cost
    model's projection for that size (`projected_ratio`)."""
    frames = {int(record["num_envs"]): rounds_frame(record) for record in records}
    family = holm_speed_tests({n: frame[RATIO].astype(float).tolist() for n, frame in frames.items()})
    rows = {}
    for n, frame in frames.items():
        reading, alone = rounds_reading(frame), frame[frame.attrs["two"]] / frame[frame.attrs["one"]]
        rows[f"2 processes × {n:,}"] = {
            "accounts per process": n, "accounts in all": 2 * n, "rounds": len(frame), "cores": reading["cores"],
            "÷ faster 1 process, median": reading["median"], "min": reading["low"], "max": reading["high"],
            "÷ 1 process on 1 thread, min": float(alone.min()), "÷ 1 process on 1 thread, max": float(alone.max()),
            "verdict": reading["verdict"], "p (Holm)": float(family.loc[n, "p (Holm)"]),
            "load average": _range(float(frame["load average"].min()), float(frame["load average"].max())),
            **({"projected": projected_ratio(fit, n)} if fit else {})}
    return pd.DataFrame.from_dict(rows, orient="index")


SAME_METHOD = "2 processes ÷ 1 process, timed alike"
"""`same_method_reading`'s ratio: both sides separate ``bench env`` commands over the same window."""


def same_method_reading(records) -> pd.DataFrame:
    """Each size of a ``bench processes`` record whose rounds also timed one command with all the
    accounts exactly as each of the two processes (``one_subprocess``), one row: the rounds' ratios of
    the two processes' summed rate ÷ that one command's (`SAME_METHOD`: median, min, max), the verdict
    of the rounds (`speed_verdict`), the t-test's p on the log ratios after Holm's correction over the
    sizes and the range of load averages. The like-with-like control for `process_record_reading`,
    whose single process runs inside the benchmark's own process."""
    ratios = {int(record["num_envs"]): [row["two_processes"] / row["one_subprocess"] for row in record["rounds"]]
              for record in records if all("one_subprocess" in row for row in record["rounds"])}
    if not ratios:
        raise InputError("no size of this bench processes record timed one process with all the accounts as a "
                         "separate command (one_subprocess): record it again with the current package")
    family = holm_speed_tests(ratios)
    rows = {}
    for record in records:
        n = int(record["num_envs"])
        if n not in ratios:
            continue
        loads = rounds_frame(record)["load average"]
        rows[f"2 processes × {n:,}"] = {
            "accounts in all": 2 * n, "rounds": len(ratios[n]), f"{SAME_METHOD}, median": float(np.median(ratios[n])),
            "min": min(ratios[n]), "max": max(ratios[n]), "verdict": speed_verdict(ratios[n]),
            "p (Holm)": float(family.loc[n, "p (Holm)"]), "load average": _range(float(loads.min()), float(loads.max()))}
    return pd.DataFrame.from_dict(rows, orient="index")


SIZE_EFFECT = "size: 2 × rate at N ÷ rate at 2N"
"""`size_and_sharing`'s first factor: what two processes would make, each at its own rate alone, ÷ one
process with all their accounts (both timed as separate commands)."""

SHARING = "sharing: 2 processes ÷ 2 × rate at N"
"""`size_and_sharing`'s second factor: the two processes' summed rate ÷ twice one of them alone (below
1 when they slow each other down)."""


def size_and_sharing(records) -> pd.DataFrame:
    """Each size ``N`` of a ``bench processes`` record whose rounds also timed one process of ``N``
    accounts alone (``one_subprocess_share``), one row splitting `same_method_reading`'s ratio into two
    factors, round by round: `SIZE_EFFECT` (how much faster a process steps per account at ``N`` than at
    ``2 N``) and `SHARING` (what running side by side costs the two). Their product is the ratio itself.
    Also the median rates of one process of ``N`` and of ``2 N`` accounts alone."""
    rows = {}
    for record in records:
        rounds = record["rounds"]
        if not all("one_subprocess_share" in row for row in rounds):
            continue
        n = int(record["num_envs"])
        size = [2 * row["one_subprocess_share"] / row["one_subprocess"] for row in rounds]
        sharing = [row["two_processes"] / (2 * row["one_subprocess_share"]) for row in rounds]
        rows[f"2 processes × {n:,}"] = {
            "1 process × N alone, env-steps/s": float(np.median([row["one_subprocess_share"] for row in rounds])),
            "1 process × 2N alone, env-steps/s": float(np.median([row["one_subprocess"] for row in rounds])),
            f"{SIZE_EFFECT}, median": float(np.median(size)), "size min": min(size), "size max": max(size),
            f"{SHARING}, median": float(np.median(sharing)), "sharing min": min(sharing), "sharing max": max(sharing),
            "rounds": len(rounds)}
    if not rows:
        raise InputError("no size of this bench processes record timed one process's share alone "
                         "(one_subprocess_share): record it again with the current package")
    return pd.DataFrame.from_dict(rows, orient="index")


def _layouts(rounds: pd.DataFrame) -> list[str]:
    return list(dict.fromkeys(rounds.attrs[key] for key in ("one", "one_all", "two")))


def plot_rounds(rounds: pd.DataFrame, ax) -> None:
    """Draw on ``ax`` the median env-steps/s of each layout of `process_rounds` as a bar, with
    whiskers from the slowest to the fastest round."""
    layouts = _layouts(rounds)
    median = rounds[layouts].median()
    ax.barh(median.index, median.to_numpy(), color=["tab:blue", "tab:cyan", "tab:orange"][-len(layouts):])
    ax.errorbar(median.to_numpy(), median.index, xerr=[median - rounds[layouts].min(), rounds[layouts].max() - median],
                fmt="none", color="black", capsize=4)
    ax.invert_yaxis()
    ax.set_xlabel(f"env-steps / s, {2 * rounds.attrs['num_envs']:,} accounts in all: median of {len(rounds)} "
                  "rounds, whiskers min..max")
    ax.grid(axis="x", alpha=0.3)


def rounds_reading(rounds: pd.DataFrame) -> dict:
    """The verdict of `process_rounds`: the round-by-round ratios (two processes ÷ the faster single
    process), their min, median and max, the verdict (`speed_verdict`, margin `SPEED_TIE_MARGIN`),
    and the ratios of one process on all cores' threads ÷ the same process on one thread."""
    ratios = rounds[RATIO].astype(float)
    threads = rounds[rounds.attrs["one_all"]] / rounds[rounds.attrs["one"]]
    return {"ratios": ratios.tolist(), "low": float(ratios.min()), "median": float(ratios.median()),
            "high": float(ratios.max()), "verdict": speed_verdict(ratios), "num_envs": rounds.attrs["num_envs"],
            "cores": rounds.attrs["cores"], "threads low": float(threads.min()), "threads high": float(threads.max())}


def rounds_table(rounds: pd.DataFrame, fast: bool = False):
    """This run's rounds of `process_rounds` as a styled table, one row per round: two processes ÷ the
    faster single-process setup (`RATIO`), one process on every core's thread ÷ on one thread, and
    the load average at the round's end; the caption holds the verdict of `rounds_reading` (margin
    `SPEED_TIE_MARGIN`) and the cores, or, where the rounds cannot decide (`not_deciding`: ``fast``
    mode, or a load above the cores), says so instead of giving a verdict."""
    r = rounds_reading(rounds)
    why = not_deciding(rounds, fast)
    a = rounds.attrs
    table = pd.DataFrame({RATIO: rounds[RATIO].astype(float),
                          f"1 process: {a['cores']} threads ÷ 1 thread": rounds[a["one_all"]] / rounds[a["one"]],
                          "load average": rounds["load average"]})
    table.index = pd.Index(range(1, len(table) + 1), name="round")
    return (table.style.format({RATIO: "{:.2f}×", table.columns[1]: "{:.2f}×", "load average": "{:.2f}"})
            .set_caption(f"{2 * r['num_envs']:,} accounts in all, {r['cores']} cores; "
                         + (f"no verdict: these rounds {why} (the records below answer)" if why else
                            f"verdict over the rounds (±{100 * SPEED_TIE_MARGIN:g} % tie margin): {r['verdict']}")))


def not_deciding(rounds: pd.DataFrame, fast: bool = False) -> str:
    """Why this run's rounds (`process_rounds`) cannot answer 6.5's question, in words (``""`` when they
    can): ``fast`` (fast mode's short measurements), or a load average above the cores in some round."""
    reasons = ["are fast mode's short measurements"] if fast else []
    load, cores = float(rounds["load average"].max()), rounds.attrs["cores"]
    if load > cores:
        reasons.append(f"ran on a loaded machine (load average up to {load:.1f} on {cores} cores)")
    return " and ".join(reasons)


def projected_ratio(per_call: dict, num_envs: int) -> float:
    """The cost model of 6.1 (``per_call``: `fit_per_call`, t(n) = c + a n) with a free core for each
    process and nothing else shared: two processes of ``num_envs`` accounts ÷ one process with all
    ``2 × num_envs``, (c + 2 N a) / (c + N a). A projection, always between 1 and 2."""
    c, a = per_call["call_seconds"], per_call["account_seconds"]
    return (c + 2 * num_envs * a) / (c + num_envs * a)


def recorded_reading(quiet: list[dict], loaded: list[dict], largest: int = 16_384) -> dict:
    """The two comparisons of 6.5 in the stored ``bench scale`` records (``quiet``: `SCALE_RECORD`,
    ``loaded``: `LOADED_SCALE_RECORD`), each a row of `speedups`: the batched env at 2 accounts ÷
    the subprocess VecEnv with 2 processes (``"two accounts"``); two processes of the DDP layout's
    env half ÷ one batched env with all their accounts on one thread (``"two processes"``, and
    ``"loaded"`` for the loaded record); the best batched size ÷ 2 accounts (``"best"``, ``"best
    gain"``); the accounts of the two-process comparison, the cores, the date, whether the
    quiet comparison's load stayed within the cores (``"own cores"``: a core for each process), and
    the cost model's projection for that comparison (``"projected"``: `projected_ratio` of the
    `fit_per_call` through the quiet record's own one-thread ``vec`` sweep up to ``largest`` accounts,
    the fit of `call_costs`)."""
    steps = speedups(quiet, key="env_steps_per_s", baseline="subproc ×2", layouts=["subproc", "vec"])

    def two_processes(records):
        ddp = [r for r in records if r["layout"] == "ddp" and r["processes"] == 2]
        if not ddp:
            raise InputError("the record holds no two-process ddp measurement")
        base = next((r for r in records if r["layout"] == "vec" and r["num_envs"] == ddp[0]["num_envs"]), None)
        if base is None:
            raise InputError(f"the record holds no batched env with all {ddp[0]['num_envs']} accounts in one process")
        table = speedups(records, key="env_steps_per_s", baseline=scale_label(base), layouts=["ddp"])
        return table.loc[scale_label(ddp[0])], int(ddp[0]["num_envs"]), int(ddp[0]["envs_per_process"])

    pair, accounts, per_process = two_processes(quiet)
    loaded_pair, _, _ = two_processes(loaded)
    vec = steps[steps["layout"] == "vec"]
    best = vec["median"].idxmax()
    first = quiet[0]
    sweep = [r for r in quiet if r["layout"] == "vec" and r.get("threads", 1) == 1 and r["num_envs"] <= largest]
    fit = fit_per_call([r["num_envs"] for r in sweep], [r["env_steps_per_s"] for r in sweep])  # as `call_costs`
    return {"two accounts": steps.loc["vec 2"], "two processes": pair, "loaded": loaded_pair,
            "accounts": accounts, "per process": per_process, "best": best,
            "best gain": steps.loc[best, "median"] / steps.loc["vec 2", "median"], "cores": int(first["cpu_count"]),
            "date": first["date"][:10], "own cores": bool(pair["load max"] <= first["cpu_count"]),
            "projected": projected_ratio(fit, per_process), "fit": fit}


def rounds_method(rounds: pd.DataFrame, recorded: dict):
    """The method of 6.5, folded away: how the rounds ran (the command, interleaving, the baseline,
    the tie margin), this run's rounds with their load averages, and the stored records'
    names, dates and load averages (``recorded``: `recorded_reading`). Returns Markdown (a MyST
    dropdown)."""
    a = rounds.attrs
    table = rounds.reset_index()
    columns = ["round", *_layouts(rounds), RATIO, "load average"]
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for _, row in table.iterrows():
        cells = [f"{int(row['round']) + 1}", *(f"{row[k]:,.0f}" for k in _layouts(rounds)), f"{row[RATIO]:.2f}",
                 f"{row['load average']:.2f}"]
        lines.append("| " + " | ".join(cells) + " |")
    pair, loaded = recorded["two processes"], recorded["loaded"]
    return _dropdown("How this was measured", f"""
Each round starts two processes at the same moment, each running `{a['command']}` (one torch
thread each; their env-steps/s are summed). Then one such command runs alone with all
{2 * a['num_envs']:,} accounts, and one with {a['num_envs']:,} (the stored control record's
like-with-like ratio and its size × sharing split read these two). Last, this process measures all
{2 * a['num_envs']:,} accounts for {a['seconds']:g} s on 1 torch thread and on {a['cores']}. The
rounds are interleaved, so a slow spell of the machine hits every layout alike; each round's ratio
divides the two processes by the faster single-process setup *of the same round*. The verdict is
`ft.book.speed_verdict` with the tie margin `ft.book.scale.SPEED_TIE_MARGIN` =
±{100 * SPEED_TIE_MARGIN:g} %. This run's rounds (env-steps/s; the load average is the 1-minute
one at the end of the round, on {a['cores']} cores):

{chr(10).join(lines)}

The recorded comparisons come from `{SCALE_RECORD}` ({recorded['date']}, {recorded['cores']} CPU
cores; load average {_range(pair['load min'], pair['load max'], 1)} during its two-process runs)
and `{LOADED_SCALE_RECORD}` (the same command on the same machine under heavy load, load average
{_range(loaded['load min'], loaded['load max'], 0)} during its two-process runs); each two-process rate there is the median of
{int(pair['repeats'])} repeats, against a single run of one process.
""")


# --- 6.6: where a GPU would change the answer --------------------------------------------------------

def gpu_reading(anchors: list[dict], stocks: int = 15) -> dict:
    """The H200 record `GPU_RECORD` read for 6.6: its ``meta`` line, the env sweeps at ``stocks``
    stocks (``"rows"``, with ``graph`` True or False), ElegantRL's `StockTradingVecEnv` env-steps/s
    by accounts (``"elegant"``) and the `fit_per_call` of its call (``"elegant fit"``), and the fits of
    the rule-free batched env eager and as one CUDA graph (``"rule-free fits"``, keyed by
    ``graph``), the seconds of one ElegantRL call at each measured size (``"elegant per call"``) and
    the largest distance of those seconds from the fitted line (``"elegant off the line"``)."""
    rows = pd.DataFrame([r for r in anchors if r.get("stocks") == stocks and r.get("env_steps_per_s") is not None])
    rows["graph"] = rows["graph"].eq(True) if "graph" in rows else False
    elegant = (rows[rows["bench"] == "elegantrl_StockTradingVecEnv"].set_index("num_envs")["env_steps_per_s"]
               .sort_index())
    free = rows[rows["bench"] == "ref_batched_env"]
    fit = fit_per_call(elegant.index, elegant.to_numpy())
    per_call = pd.Series(elegant.index.to_numpy() / elegant.to_numpy(), index=elegant.index)
    line = fit["call_seconds"] + fit["account_seconds"] * per_call.index.to_numpy()
    return {"meta": anchors[0]["meta"], "rows": rows, "elegant": elegant, "elegant fit": fit,
            "elegant per call": per_call, "elegant off the line": float(abs(per_call.to_numpy() - line).max()),
            "rule-free fits": {bool(graph): fit_per_call(part["num_envs"].to_numpy(),
                                                         part["env_steps_per_s"].to_numpy())
                               for graph, part in free.groupby("graph")}}


def plot_gpu_beside_cpu(gpu: dict, rate: pd.Series, axes) -> None:
    """Draw the two devices in two panels of ``axes`` (a pair), each titled with its device and its
    program, on log axes of their own: the H200 curves of ``gpu`` (`gpu_reading`; `GPU_CURVES`) on the
    first, this run's batched env on this CPU (``rate["vec"]``) on the second. The figure's title says
    that no ratio across the devices is stated."""
    gpu_ax, cpu_ax = axes
    rows = gpu["rows"]
    for (name, graph), (label, style, color) in GPU_CURVES.items():
        part = rows[(rows["bench"] == name) & (rows["graph"] == graph)].sort_values("num_envs")
        gpu_ax.plot(part["num_envs"], part["env_steps_per_s"], style, color=color, label=f"GPU (H200): {label}")
    gpu_ax.set_title(f"GPU: one NVIDIA H200 ({gpu['meta']['date']})\nElegantRL's StockTradingVecEnv, a rule-free env",
                     fontsize="medium")
    cpu_ax.plot(rate["vec"].index, rate["vec"].to_numpy(), "o-", color="black",
                label="CPU (this machine, this run): ours, VecStockTradingEnv")
    cpu_ax.set_title(f"CPU: this machine ({os.cpu_count() or 1} cores), this run\nours, VecStockTradingEnv",
                     fontsize="medium")
    for ax in axes:
        ax.set(xscale="log", yscale="log", xlabel="accounts (sub-envs)", ylabel="env-steps / s")
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize="small")
    gpu_ax.figure.suptitle("Two devices, two panels: each curve read for its own shape, no ratio across them")


def call_grows(per_call: pd.Series) -> bool:
    """Whether the seconds of one call (``per_call``, by accounts) grow with the accounts: the call at
    the largest size takes at least twice as long as the call at the smallest."""
    return bool(per_call.iloc[-1] >= 2 * per_call.iloc[0])


def gpu_method(gpu: dict):
    """Where the H200 figures come from, folded away: the record's name and its ``meta`` line
    (what was measured, the device, the date, the method). Returns Markdown (a MyST dropdown)."""
    meta = gpu["meta"]
    return _dropdown("Where the GPU figures come from", f"""
The record `{GPU_RECORD}` was measured on {meta['device']}, on {meta['date']}, with {meta['stocks']} stocks:
{code_spans(meta['what'])}. Method: {code_spans(meta['method'])}. The fits are the same least-squares line as in 6.3
(`ft.book.fit_per_call`), through each curve's own points.
""")


# --- the answer --------------------------------------------------------------------------------------

def recorded_answer(recorded: dict) -> str:
    """What the quiet stored record (`recorded_reading`) answers on a second batched process: its
    verdict from rounds, or ``"one ratio, no verdict"`` where it holds one ratio against a single run
    (inconclusive is a verdict of rounds, so one ratio is not called so)."""
    verdict = recorded["two processes"]["verdict"]
    return "one ratio, no verdict" if verdict == "one ratio" else verdict


def answer(rate: pd.Series, rounds: pd.DataFrame, recorded: dict, per_call: dict, fast: bool = False) -> dict:
    """The chapter's answer in numbers: the batched env ÷ the subprocess VecEnv at the smallest
    shared size (``"same"``, at ``"accounts"``), the call of the largest batched size ÷ the call at
    that size (``"call ratio"``, ``"large"``; `same_accounts_reading`), this run's rounds
    (`rounds_reading`), whether they may answer (``"live"``: not in fast mode, ``fast``, and no round
    loaded past the cores; ``"why not"``: `not_deciding`), the recorded comparisons
    (`recorded_reading`) and their answer (``"recorded answer"``: `recorded_answer`), which
    measurements of a second batched process show it paying (``"paid"``: names; this run only where
    it is live), and the projection of the cost model fitted in 6.3 with a free core per process: two
    processes of N accounts ÷ one process of 2N (``"projected"``: `projected_ratio`), this run's
    slowest and fastest round as a share of it (``"measured ÷ projected"``), and the batched env ÷
    the subprocess VecEnv at every shared size (``"same sizes"``)."""
    same = same_accounts_reading(rate)
    run = rounds_reading(rounds)
    why = not_deciding(rounds, fast)
    n = run["num_envs"]
    projected = projected_ratio(per_call, n)
    paid = [name for name, shown in (("this run", not why and run["verdict"] == "faster"),
                                     ("the quiet record", recorded["two processes"]["speed-up"] > 1),
                                     ("the loaded record", recorded["loaded"]["speed-up"] > 1)) if shown]
    return {"accounts": same["small"], "same": same["same"][same["small"]], "large": same["large"],
            "call ratio": same["call ratio"], "rounds": run, "recorded": recorded, "live": not why, "why not": why,
            "recorded answer": recorded_answer(recorded),
            "paid": paid, "projected": projected, "per call": per_call,
            "measured ÷ projected": (run["low"] / projected, run["high"] / projected),
            "same sizes": same["same"]}


def projection_check(result: dict, margin: float = SPEED_TIE_MARGIN) -> str:
    """This run's rounds (`answer`) set against the projection, in words: the slowest and fastest
    round as a share of it, and whether the projection fails here (every round more than ``margin``
    below it), holds (every round within ``margin``) or neither."""
    low, high = result["measured ÷ projected"]
    shares = f"the rounds measured {_range(low, high)} of it"
    if high < 1 - margin:
        return f"{shares}: the projection fails in these rounds (their load is in the folded block)"
    if low >= 1 - margin and high <= 1 + margin:
        return f"{shares}: the projection holds in these rounds"
    return shares


def _faster_count(ratios: list[float], margin: float = SPEED_TIE_MARGIN) -> str:
    """How many of the same-accounts ratios (batched ÷ subprocess) lie above ``1 + margin``, in words,
    and how many lie within ``margin`` of 1 (a ratio of 1.04 is no sign of "faster")."""
    faster = sum(ratio > 1 + margin for ratio in ratios)
    close = sum(abs(ratio - 1) <= margin for ratio in ratios)
    if faster == len(ratios):
        return "every comparison made"
    return f"{faster} of the {len(ratios)} comparisons made" + (f", within ±{margin:.0%} of the other in {close}" if close else "")


def box_contents(result: dict, gpu: dict, above: pd.DataFrame | None = None) -> dict:
    """The keyword arguments of `finrl_tutorial.book.measured_box` for chapter 6, from `answer`,
    `gpu_reading` and, if given, `process_record_reading` of `PROCESSES_RECORD` (``above``): this
    run's ratios, each naming its baseline, the recorded ones with their records, and what they do
    and do not show."""
    run, c = result["rounds"], result["recorded"]
    rounds_record = {} if above is None else {
        f"{PROCESSES_RECORD}, {label} ÷ faster 1 process × {int(row['accounts in all']):,} (1 or {int(row['cores'])} threads)":
            f"median {row['÷ faster 1 process, median']:.2f}×, rounds {_range(row['min'], row['max'])}×: {row['verdict']} "
            f"(adjusted p {row['p (Holm)']:.3f})" for label, row in above.iterrows()}
    n = run["num_envs"]
    elegant = gpu["elegant"]
    return {
        "this_run": {
            "batched env ÷ subprocess VecEnv, same accounts (one process per account)":
                ", ".join(f"{ratio:.2f}× at {size:,}" for size, ratio in result["same sizes"].items())
                + " (one ratio each, no rounds)",
            f"2 processes × {n:,} ÷ faster 1 process × {2 * n:,} (1 or {run['cores']} threads)":
                f"rounds {_range(run['low'], run['high'])}×: {run['verdict']}"
                + ("" if result.get("live", True) else f"; these rounds {result['why not']}"),
            "fixed cost of one batched call": f"{1e6 * result['per call']['call_seconds']:,.0f} µs",
            f"projection, not a measurement (6.1's model, a free core each): 2 processes × {n:,} ÷ 1 process × "
            f"{2 * n:,}": f"{result['projected']:.2f}×; " + projection_check(result),
        },
        "recorded": {
            f"{SCALE_RECORD} ({c['date']}), 2 accounts: batched env ÷ subprocess VecEnv":
                f"{c['two accounts']['speed-up']:.1f}× (one ratio, no rounds)",
            f"{SCALE_RECORD}, 2 processes × {c['per process']:,} ÷ 1 process × {c['accounts']:,} (1 thread)":
                f"{c['two processes']['speed-up']:.2f}× (one ratio, no verdict)"
                if c["two processes"]["verdict"] == "one ratio" else
                f"{c['two processes']['speed-up']:.2f}× ({c['two processes']['verdict']})",
            f"{SCALE_RECORD}, projection (its own fit, not a measurement): 2 processes × {c['per process']:,} ÷ "
            f"1 process × {c['accounts']:,}": f"{c['projected']:.2f}×; measured "
                                              f"{c['two processes']['speed-up'] / c['projected']:.2f} of it",
            **rounds_record,
            f"{GPU_RECORD} ({gpu['meta']['date']}, one H200: another device, another program)":
                f"ElegantRL's StockTradingVecEnv {elegant.max():,.0f} env-steps/s at {elegant.idxmax():,} accounts",
        },
        "shows": "the batched env against the subprocess VecEnv at equal accounts, one ratio each (the batched env "
                 "faster in "
                 + _faster_count(list(result["same sizes"].values()))
                 + " by this run on this CPU; the record's are in the summary); what more accounts per call buy; whether a second batched process helped "
                 "on this CPU at this load",
        "does_not_show": "this package's env on a GPU (not measured on a GPU), or machines with more free cores",
    }

