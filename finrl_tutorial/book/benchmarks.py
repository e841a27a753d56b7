"""Chapter 8's readings: benchmark records turned into the tables, figures and readings of the page.

Every function reads stored records (the dicts of a ``bench`` JSON-lines file, a ``report.json``,
or the chapter's live `run_experiment` report) and returns a table (a DataFrame), a reading (a dict
or a number that the chapter's hidden cells check its Markdown against), a collapsed "How this was
measured" block (`MethodNote`) or draws on the matplotlib Axes (or Figure) it is given: the chapter
shows the one library call and the result. The general readings stay in
`finrl_tutorial.book.report` and `finrl_tutorial.book.scale`, which this module calls.
"""
from __future__ import annotations

import math
import re
from typing import Iterable, Mapping, Sequence

import pandas as pd

from ..errors import InputError
from ..metrics import TIE_MARGIN, stored_verdict, verdict_reason
from . import folded
from .folded import MethodNote
from .report import code_spans, peer_summary, provenance, rollout_share_table
from .scale import (SCALE_RECORD, SPEED_TIE_MARGIN, TrainerModel, clamped_terms, fit_cost_model, holm_speed_tests,
                    measured_points, peer_comparisons, phase_table, plot_projection, project, round_ratios)
from .demo import MAIN_JOB_RECORD
from ..bench.common import parse_overrides
from .teaching import PLAIN_LEARNER_SET, listed, ran_plain_learner, reader_command

#: The records chapter 8 reads, with the section that reads each.
CHAPTER_RECORDS = {"bench_env.jsonl": "8.2 env throughput", "bench_train.jsonl": "8.3 training loop",
                   SCALE_RECORD: "8.3-8.4 loop cost, scale-out", "bench_loop_repeat.jsonl": "8.3 repeat noise",
                   "anchors_elegantrl_h200.jsonl": "8.5 GPU",
                   MAIN_JOB_RECORD: "8.7 full-size run", "main_job_5seeds_report.json": "8.7 (the plain learner's)",
                   "bench_peers.jsonl": "8.8 peers", "bench_peers_small_network.jsonl": "8.8 a smaller network",
                   "bench_learn_small_network.json": "8.8 a smaller network",
                   "bench_learn_small_network_confirm100.json": "8.8 a smaller network, fresh markets"}

#: How the results tables of 8.6 and 8.7 print their columns.
RESULT_FORMATS = ({c: "{:.2%}" for c in ("cumulative_return", "annual_return", "annual_volatility", "max_drawdown",
                                         "turnover")}
                  | {c: "{:.2f}" for c in ("sharpe_ratio", "sortino_ratio", "calmar_ratio")}
                  | {"total_fees": "¥{:,.0f}"})


def _room():
    """The book room (``finrl_tutorial.book``), looked up when called: the room imports this module
    before it defines `read_records`, `record_names`, `measured_box` and its Markdown helper."""
    import importlib

    return importlib.import_module(__package__)


def read_records(name: str) -> list[dict]:
    """`finrl_tutorial.book.read_records`: the stored record ``name``."""
    return _room().read_records(name)


def record_names(pattern: str) -> list[str]:
    """`finrl_tutorial.book.record_names`: the stored records matching ``pattern``."""
    return _room().record_names(pattern)


# --- a collapsed block for the method ---------------------------------------------------------------

def how_measured(items: Sequence[str], title: str = "How this was measured") -> MethodNote:
    """The method lines ``items`` (record names, commands, rounds, loads) as one folded list
    (`folded.how_measured`)."""
    return folded.how_measured(list(items), title=title)


def times(value: float) -> str:
    """A ratio as the chapter prints it: ``"284.5×"`` from 10 up, ``"2.47×"`` below."""
    return f"{value:,.1f}×" if value >= 10 else f"{value:.2f}×"


def _date(records: Iterable[dict]) -> str:
    dates = sorted({str(r.get("date") or (r.get("machine") or {}).get("date", ""))[:10] for r in records} - {""})
    return dates[0] if len(dates) == 1 else f"{dates[0]} .. {dates[-1]}"


# --- 8.1 where and when -----------------------------------------------------------------------------

def _device(prov: dict) -> str:
    if prov["GPU"] != "none":
        return f"GPU: {prov['GPU']}"
    return f"CPU: {prov['CPU cores']} cores, {prov['torch threads']} torch thread(s)"


def sources_table(names: Mapping[str, str] = CHAPTER_RECORDS) -> pd.DataFrame:
    """One row per record file the chapter reads (``names``: file name or pattern → the section that
    reads it): the section, the device its figures were measured on (GPU name, or CPU cores and torch
    threads), the date(s), the number of records and torch. Reads the stored records."""
    rows = {}
    for pattern, section in names.items():
        for name in (record_names(pattern) if any(c in pattern for c in "*?[") else [pattern]):
            records = read_records(name)
            prov = provenance(records)
            rows[name] = {"section": section, "device": _device(prov), "measured": _date(records),
                          "records": prov["records"], "torch": prov["torch"]}
    return pd.DataFrame.from_dict(rows, orient="index")


#: Stored records that run no learner of this package.
NO_LEARNER = {"bench_env.jsonl": "none (the env alone)", "bench_processes_quiet.jsonl": "none (the env alone)",
              "bench_processes_control.jsonl": "none (the env alone)",
              "anchors_elegantrl_h200.jsonl": "none (ElegantRL's, on a GPU)"}


PLAIN_BY_SET = parse_overrides(list(PLAIN_LEARNER_SET[1:]))
"""The plain learner's fields, as `bench learn --set` gives them to a later package's default learner
(`teaching.PLAIN_LEARNER_SET`, parsed as `--set` parses it)."""


def record_learner(name: str) -> str:
    """Which learner the stored record ``name`` ran: ``plain`` or ``default`` (glossary: plain and
    default learner), from the PPO config it stores where it stores one (both baselines off: plain; on:
    default), else from its last date (`teaching.ran_plain_learner`); `NO_LEARNER`'s records run none. A
    ``bench learn`` record whose cases all set the plain learner's fields (`PLAIN_BY_SET`) ran the plain
    learner; one whose cases ran other ``--set`` overrides says which fields they changed."""
    if name in NO_LEARNER:
        return NO_LEARNER[name]
    records = read_records(name)
    configs = [case.get("config", {}) for record in records for case in record.get("cases", [])]
    if configs and all(all(config.get(key) == value for key, value in PLAIN_BY_SET.items()) for config in configs):
        return "plain (its fields set with --set)"
    changed = sorted({key for config in configs for key in config if key != "algo"})
    if not any({"pathwise", "market_baseline"} & set(record.get("config") or {}) for record in records):
        records = [{"date": _date(records).split(" .. ")[-1]}]  # by its last date (rows may carry none)
    plain = [ran_plain_learner(record) for record in records]
    learner = "plain" if all(plain) else "default" if not any(plain) else "plain and default"
    # bench learn --set: that learner with these fields changed in its cases
    return learner + (", with " + ", ".join(changed) + " changed (--set)" if changed else "")


def learners_table(pattern: str = "*.json*") -> pd.DataFrame:
    """Every stored record (``pattern``): when it was measured and which learner it ran
    (`record_learner`)."""
    return pd.DataFrame.from_dict({name: {"measured": _date(read_records(name)), "learner": record_learner(name)}
                                   for name in record_names(pattern)}, orient="index")


def commands_note(names: Iterable[str]) -> MethodNote:
    """The commands that wrote each stored record file of ``names`` (e.g. `sources_table`'s index), as
    a reader runs them (`reader_command`: a temporary output folder shown under ``runs/``; a record of
    the plain learner gets its settings, so that the command makes it again), in a collapsed
    `MethodNote`; a record of another program, which runs no command of this package, is cited by the
    provenance its first line holds (`record_provenance`)."""
    items = []
    for name in names:
        records = read_records(name)
        commands = sorted({str(r.get("command", "(not recorded)")) for r in records})
        if not any(c.startswith("python") for c in commands) and record_provenance(records):
            items.append(f"`{name}`: {record_provenance(records)}")  # another program's measurement: its meta line
            continue
        plain = ran_plain_learner(records[0])  # the plain learner's record: the command that makes it today
        shown = []
        for command in commands:  # every command of a chain (a && b), each as a reader runs it
            parts = [part.strip() for part in command.split("&&")]
            runs = [part for part in parts if "--merge" not in part.split()]
            if not runs:  # a merge alone: the commands of the parts it merged, where the record keeps them
                runs = list(dict.fromkeys(str(part["command"]) for part in records[0].get("merged_from", [])
                                          if isinstance(part, dict) and "command" in part)) or parts
            shown += [f"`{reader_command(part, plain=plain)}`" if part.startswith("python") else part for part in runs]
            if any("--merge" in part.split() for part in parts) and runs != parts:
                shown[-1] += " (then merged into one record with `--merge`)"
        items.append(f"`{name}`: " + "; ".join(shown))
    return how_measured(items, "The commands behind these records")


def record_provenance(records: Sequence[dict]) -> str:
    """Where a record of another program comes from, in the words of its first line (``meta``): the
    date, the device, the measured program's commit (``HEAD <hash>`` in its description), what was
    measured and the method; ``""`` where the record has no such line."""
    meta = (records[0].get("meta") if records else None) or {}
    if not {"what", "device", "date", "method"} <= set(meta):
        return ""
    commit = re.search(r"HEAD ([0-9a-f]{7,40})", meta["what"])
    program = f"; {meta['what'].split()[0]} commit `{commit.group(1)}`" if commit else ""
    return (f"measured on {meta['date']}, on {meta['device']}{program}. What it measured, as its first line "
            f"(`meta`) records: {code_spans(meta['what'])}. Method: {code_spans(meta['method'])}.")


# --- 8.2 env throughput -----------------------------------------------------------------------------

ENV_STYLES = {"vec": "o-", "vmap": "s--", "subproc": "D-", "single": "^"}


def plot_env_throughput(env: pd.DataFrame, ax) -> None:
    """Env-steps/s against sub-envs for each kind of env of a ``bench env`` frame, on ``ax`` (log-log),
    titled with its stocks, CPU cores, torch threads and date."""
    for kind, marker in ENV_STYLES.items():
        part = env[env["env"] == kind].sort_values("num_envs")
        if len(part):
            ax.plot(part["num_envs"], part["env_steps_per_s"], marker, label=kind)
    first = env.iloc[0]
    ax.set(xscale="log", yscale="log", xlabel="sub-envs (accounts)", ylabel="env-steps / s",
           title=f"Env throughput on a CPU: {first['stocks']} stocks, {first['cpu_count']} cores, "
                 f"{first['threads']} torch thread ({str(first['date'])[:10]})")
    ax.grid(alpha=0.3, which="both")
    ax.legend()


def batched_vs_subprocess(env: pd.DataFrame) -> pd.DataFrame:
    """At every number of accounts both ran in one ``bench env`` frame: the batched env's and the
    subprocess VecEnv's env-steps/s and their ratio (like with like: the same accounts)."""
    rates = env.set_index(["env", "num_envs"])["env_steps_per_s"]
    same = sorted(set(rates["subproc"].index) & set(rates["vec"].index))
    return pd.DataFrame({"batched env": [rates["vec"][n] for n in same],
                         "subprocess VecEnv": [rates["subproc"][n] for n in same],
                         "batched ÷ subprocess": [rates["vec"][n] / rates["subproc"][n] for n in same]},
                        index=pd.Index(same, name="accounts"))


def quiet_two_accounts(scale_records: Iterable[dict]) -> float:
    """The batched env's env-steps/s ÷ the subprocess VecEnv's at 2 accounts in a ``bench scale`` record."""
    from .scale import speedups  # the same function as chapters 4-6

    table = speedups(list(scale_records), key="env_steps_per_s", baseline="subproc ×2", layouts=["vec"])
    return float(table.loc["vec 2", "speed-up"])


def rates_across_records(env: pd.DataFrame, scale_records: Iterable[dict], kind: str = "vec") -> pd.DataFrame:
    """The env ``kind``'s env-steps/s at every number of accounts that both a ``bench env`` frame and a
    ``bench scale`` record hold, one row each: the two rates and the second ÷ the first."""
    here = env[env["env"] == kind].set_index("num_envs")["env_steps_per_s"]
    there = pd.Series({int(r["num_envs"]): r["env_steps_per_s"] for r in scale_records if r["layout"] == kind})
    shared = sorted(set(here.index) & set(there.index))
    table = pd.DataFrame({"bench env": here.loc[shared].to_numpy(), "bench scale": there.loc[shared].to_numpy()},
                         index=pd.Index(shared, name="accounts"))
    table["bench scale ÷ bench env"] = table["bench scale"] / table["bench env"]
    return table


def call_seconds(env: pd.DataFrame, kind: str = "vec") -> pd.Series:
    """Seconds of one step call of the env ``kind`` at each number of accounts of a ``bench env`` frame:
    accounts ÷ env-steps/s."""
    part = env[env["env"] == kind].set_index("num_envs")["env_steps_per_s"].sort_index()
    return pd.Series(part.index.to_numpy() / part.to_numpy(), index=part.index)


def env_note(env_records: Sequence[dict], scale_records: Sequence[dict]) -> MethodNote:
    """8.2's method: the two records, their dates and how they were timed."""
    first = env_records[0]
    return how_measured([
        f"`bench_env.jsonl`, {_date(env_records)}: random actions, each size timed for a few seconds "
        f"on {first['cpu_count']} CPU cores with {first['threads']} torch thread; no load average recorded.",
        f"The 2-account ratio comes from `{SCALE_RECORD}` ({_date(scale_records)}), measured in another "
        "run (8.4), with the load below the core count: compare a ratio only with one at the same accounts from the same run.",
        "Chapter 6 measures the same pair live each time its page runs, so its ratio carries that day's load.",
    ])


# --- 8.3 the training loop --------------------------------------------------------------------------

def loop_rows(train: pd.DataFrame, stocks: int = 15) -> pd.DataFrame:
    """The ``bench train`` rows at ``stocks`` stocks that are not in pairs (a pair, marked by its
    ``note``, times one command before and after a change to the stockwise network, back to back under
    one load: read against each other only)."""
    paired = train["note"].notna() if "note" in train else pd.Series(False, index=train.index)
    return train[(train["stocks"] == stocks) & ~paired]


def loop_table(loop: pd.DataFrame) -> pd.DataFrame:
    """Samples/s of the whole loop and rollout env-steps/s by sub-envs (rows) and algorithm."""
    return loop.pivot_table(index="num_envs", columns="algo", values=["samples_per_s", "rollout_env_steps_per_s"])


def plot_loop(loop: pd.DataFrame, env: pd.DataFrame, ax) -> None:
    """The whole loop's samples/s and the rollout's env-steps/s of PPO and A2C against sub-envs, with the
    bare batched env of 8.2 in grey, on ``ax`` (log-log); the title and the grey line's label carry the
    dates of their records (two runs)."""
    for algo, color in (("ppo", "tab:blue"), ("a2c", "tab:red")):
        part = loop[loop["algo"] == algo].sort_values("num_envs")
        ax.plot(part["num_envs"], part["samples_per_s"], "o-", color=color, label=f"{algo.upper()}: whole loop")
        ax.plot(part["num_envs"], part["rollout_env_steps_per_s"], "o:", color=color, alpha=0.6,
                label=f"{algo.upper()}: rollout only")
    vec = env[env["env"] == "vec"].sort_values("num_envs")
    ax.plot(vec["num_envs"], vec["env_steps_per_s"], color="grey", linewidth=1,
            label=f"env alone (8.2, {_date(vec.to_dict('records'))})")
    ax.set(xscale="log", yscale="log", xlabel="sub-envs", ylabel="per second",
           title=f"From env-steps to training samples, CPU ({loop['stocks'].iloc[0]} stocks, "
                 f"{_date(loop.to_dict('records'))})")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize="small")


def loop_cost_reading(scale_records: Iterable[dict]) -> dict:
    """From the rows of a ``bench scale`` record that measured the bare env, its rollout and PPO's whole
    loop together (`rollout_share_table`): the largest such size, the update's share of an iteration
    there, the rollout's rate as a share of the bare env's, and the load averages of those rows."""
    records = list(scale_records)
    shares = rollout_share_table(records)
    largest = int(shares.index.max())
    loads = [r["loadavg"][0] for r in records if r["layout"] == "vec" and "samples_per_s" in r]
    return {"largest": largest, "update_share": float(shares.loc[largest, "update's share of the loop"]),
            "rollout_share": float(shares.loc[largest, "rollout ÷ bare env"]), "loads": loads,
            "cores": records[0]["cpu_count"]}


def update_shares(loop: pd.DataFrame) -> pd.Series:
    """The update's share of a whole-loop iteration at the largest size of each algorithm's ``bench
    train`` rows: ``1 - samples/s ÷ rollout env-steps/s``."""
    largest = loop[loop["num_envs"] == loop["num_envs"].max()].set_index("algo")
    return 1 - largest["samples_per_s"] / largest["rollout_env_steps_per_s"]


def loop_records_side_by_side(loop: pd.DataFrame, scale_records: Iterable[dict], algo: str = "ppo") -> pd.DataFrame:
    """At every number of envs both hold: ``algo``'s whole-loop samples/s and the update's share of an
    iteration in 8.3's ``bench train`` rows (``loop``: `loop_rows`) and in the rows of a ``bench scale``
    record that timed the loop (`rollout_share_table`). Two runs: a rate is read within its own record,
    a share (a ratio within one row) side by side."""
    shares = rollout_share_table(list(scale_records))
    rows = loop[loop["algo"] == algo].set_index("num_envs")
    sizes = sorted(set(rows.index) & set(shares.index))
    return pd.DataFrame({"bench train: samples / s": rows.loc[sizes, "samples_per_s"].to_numpy(),
                         "bench train: update's share": (1 - rows.loc[sizes, "samples_per_s"]
                                                         / rows.loc[sizes, "rollout_env_steps_per_s"]).to_numpy(),
                         "bench scale: samples / s": shares.loc[sizes, "whole loop (samples / s)"].to_numpy(),
                         "bench scale: update's share": shares.loc[sizes, "update's share of the loop"].to_numpy()},
                        index=pd.Index(sizes, name="envs"))


def loop_rows_predate(train: pd.DataFrame, loop: pd.DataFrame) -> bool:
    """Whether the ``bench train`` rows read in 8.3 (``loop``: `loop_rows`) were made before the change
    to the stockwise network that the left-out pairs of ``train`` time."""
    left_out = train.drop(loop.index)
    return bool(len(left_out)) and pd.to_datetime(loop["date"]).max() < pd.to_datetime(left_out["date"]).min()


def loop_rows_current(train: pd.DataFrame, loop: pd.DataFrame) -> bool:
    """Whether the ``bench train`` rows read in 8.3 (``loop``: `loop_rows`) were made after the change to
    the stockwise network that the left-out pairs of ``train`` time, so that they time the current agent."""
    left_out = train.drop(loop.index)
    return bool(len(left_out)) and pd.to_datetime(loop["date"]).min() > pd.to_datetime(left_out["date"]).max()


def _loads(rows: pd.DataFrame) -> pd.Series:
    """The 1-minute load averages recorded before and after each of ``rows`` (``bench train`` rows)."""
    return pd.concat([rows["loadavg_before"], rows["loadavg_after"]]).dropna().str[0]


def loop_note(train: pd.DataFrame, loop: pd.DataFrame, scale_records: Sequence[dict]) -> MethodNote:
    """8.3's method: which ``bench train`` rows are read (with their load and whether they time the current
    agent) and which are left out (and why), and the load of the scale record's rows."""
    left_out = train.drop(loop.index)
    reading = loop_cost_reading(scale_records)
    shares = rollout_share_table(scale_records)
    recorded = "loadavg_before" in loop and loop["loadavg_before"].notna().all()
    loads = _loads(loop) if recorded else None
    items = [f"Read here: {len(loop)} rows of `bench_train.jsonl` at {loop['stocks'].iloc[0]} stocks "
             f"({_date(loop.to_dict('records'))}), from the two default `bench train` commands at 15 stocks (8.1 lists them); "
             + (f"load average {loads.min():.1f}–{loads.max():.1f} on {loop['cpu_count'].iloc[0]} cores, before and "
                f"after each of the {len(loop)} rows." if recorded else "no load average recorded.")]
    if len(left_out):
        rows_date, pairs_date = _date(loop.to_dict("records")), _date(left_out.to_dict("records"))
        if loop_rows_predate(train, loop):
            items.append(f"These rows ran on {rows_date}, with the stockwise network as it was before the change that "
                         f"the left-out rows below ({pairs_date}) time, so they show the loop's shape; the loop of "
                         f"the current network is timed in `{SCALE_RECORD}`.")
        elif loop_rows_current(train, loop):
            items.append(f"These rows ran on {rows_date} with the stockwise network as the installed package has it. "
                         f"The left-out rows below ({pairs_date}) timed an older version and this one back to back; "
                         "these rows match their second run.")
        pair_loads = _loads(left_out)
        items.append(f"Left out: {len(left_out)} rows at {listed([str(n) for n in sorted(set(left_out['stocks']))])} "
                     "stocks, each command run twice back to back, once with an older version of the stockwise "
                     "network and once with this one, to compare the two; a pair is read against itself only. Load average "
                     f"{pair_loads.min():.1f}–{pair_loads.max():.1f} on {left_out['cpu_count'].iloc[0]} cores, over those "
                     f"{len(left_out)} runs.")
    current = (len(left_out) and pd.to_datetime([r["date"] for r in scale_records]).min()
               > pd.to_datetime(left_out["date"]).max())  # made after the change the pairs time
    items.append(f"The update's share comes from `{SCALE_RECORD}` ({_date(scale_records)}"
                 + (", after that change" if current else "") + "), which "
                 "measured the bare env, the rollout and the whole loop together at each size. Load average "
                 f"{min(reading['loads']):.1f}–{max(reading['loads']):.1f} on {reading['cores']} cores, over its "
                 f"{len(reading['loads'])} loop runs ({int(shares.index.min()):,} to {int(shares.index.max()):,} envs).")
    return how_measured(items)


REPEAT_RECORD = "bench_loop_repeat.jsonl"
"""The same PPO loop (64 envs, 15 stocks) run back to back by ``bench train`` and ``bench scale``
(vec layout), interleaved: how far repeats of one configuration spread within one record."""


def platforms(records: Iterable[dict]) -> list[str]:
    """The raw ``platform`` strings of ``records`` (top level, or in ``machine``), kernel build included."""
    return sorted({str(r.get("platform") or (r.get("machine") or {}).get("platform", "")) for r in records} - {""})


def repeat_reading(repeat_records: Sequence[dict], margin: float = SPEED_TIE_MARGIN) -> dict:
    """`REPEAT_RECORD` read: the runs of each bench (``{"train": [...], "scale": [...]}``, samples/s in
    record order), each bench's median, the median of all runs, the lowest and highest run as a share of
    that median (``low``/``high``, e.g. ``-0.02``/``+0.07``), how many runs lie outside ±``margin`` of it,
    the configuration (envs, stocks) and the record's date(s) and platform(s)."""
    rows = [r for r in repeat_records if "samples_per_s" in r]
    if not rows:
        raise InputError("the repeat record holds no samples_per_s rows: run `python -m finrl_tutorial bench "
                         "train --num-envs 64 --stocks 15` and `bench scale --layouts vec` in turn")
    runs = {bench: [float(r["samples_per_s"]) for r in rows if r["bench"] == bench]
            for bench in sorted({r["bench"] for r in rows})}
    every = [float(r["samples_per_s"]) for r in rows]
    median = float(pd.Series(every).median())
    return {"runs": runs, "medians": {bench: float(pd.Series(v).median()) for bench, v in runs.items()},
            "median": median, "low": min(every) / median - 1, "high": max(every) / median - 1,
            "outside": sum(abs(v / median - 1) > margin for v in every), "count": len(every),
            "num_envs": sorted({int(r["num_envs"]) for r in rows}), "stocks": sorted({int(r["stocks"]) for r in rows}),
            "date": _date(rows), "platforms": platforms(rows)}


def loop_vs_trainer(scale_records: Sequence[dict], num_envs: int = 64) -> dict:
    """The two measurements of PPO's loop at ``num_envs`` envs in one ``bench scale`` record: the ``vec``
    row (8.3: one run of `measure_loop`, which times the rollout and the update phases only) and the
    in-process trainer on one thread (8.4: the trainer's whole iterations on its own clock, the median
    of its rounds). Each one's samples/s and rollout env-steps/s, the trainer's rounds and its
    samples/s from its phases alone, and the load averages of each."""
    records = list(scale_records)
    vec = next(r for r in records if r["layout"] == "vec" and r["num_envs"] == num_envs and "samples_per_s" in r)
    trainer = next(r for r in records if r["layout"] == "trainer" and r["num_envs"] == num_envs
                   and r.get("learner_threads", 1) == 1)
    phases = trainer["phases"]
    rollout = phases["rollout"]
    rounds = [run["samples_per_s"] for run in trainer["runs"]]
    return {"num_envs": num_envs, "loop": vec["samples_per_s"], "loop rollout": vec["rollout_env_steps_per_s"],
            "loop load": vec["loadavg"][0], "trainer": trainer["samples_per_s"], "trainer rounds": rounds,
            "trainer rollout seconds": rollout, "samples": trainer["samples_per_iteration"],
            "trainer rollout": trainer["samples_per_iteration"] / rollout,
            "trainer phases": trainer["samples_per_iteration"] / sum(phases.values()),
            "trainer loads": [run["loadavg"][0] for run in trainer["runs"]], "repeats": int(trainer["repeats"])}


# --- 8.4 scale-out layouts --------------------------------------------------------------------------

def optimiser_steps(scale: pd.DataFrame, scale_records: Iterable[dict], label: str) -> tuple[int, int]:
    """Optimiser steps per iteration of the layout ``label`` of `speedups` table ``scale``, and the samples
    behind each step (DDP: all ranks together), from the samples per iteration its record holds and
    PPOConfig's defaults (``bench scale`` trains every layout with them)."""
    from .. import make_config  # the package's own config: what bench scale ran

    samples = phase_table(list(scale_records))["samples"]
    defaults = make_config("ppo")
    ranks = int(scale.loc[label, "processes"]) if scale.loc[label, "layout"] == "ddp" else 1
    per_rank = make_config("ppo", num_envs=int(samples[label]) // ranks // defaults.horizon_len)
    return per_rank.repeat_times * per_rank.num_minibatches, min(per_rank.batch_size, per_rank.rollout_size) * ranks


def other_update(scale: pd.DataFrame, scale_records: Iterable[dict], label: str) -> str:
    """How the layout ``label``'s optimiser steps differ from the baseline's where it steps on larger
    minibatches (DDP: each step averages the ranks' minibatches, chapter 5.5); ``""`` where its minibatch
    is the baseline's."""
    records = list(scale_records)
    (steps, size) = optimiser_steps(scale, records, label)
    (base_steps, base_size) = optimiser_steps(scale, records, scale["baseline"].iloc[0])
    return "" if size == base_size else (
        f"{steps} optimiser steps of {size:,} samples per iteration against the baseline's {base_steps} of "
        f"{base_size:,}, so its ratio is not like with like: it compares two minibatch sizes as well as one "
        f"process with {int(scale.loc[label, 'processes'])}, as chapter 5.5 explains")


def scale_title(scale: pd.DataFrame, scale_records: Sequence[dict]) -> str:
    """The title of 8.4's figure: the device and the rounds behind each median."""
    first = scale_records[0]
    return (f"Training samples/s by layout, CPU: {first['cpu_count']} cores ({_date(scale_records)}), "
            f"median of {int(scale['repeats'].max())} rounds")


SHORT_VERDICTS = {"faster": "faster in every round", "slower": "slower in every round"}


def scale_family(scale: pd.DataFrame, scale_records: Iterable[dict]) -> pd.DataFrame:
    """Every verdict of 8.4's table tested together (`holm_speed_tests`, as chapters 4 and 5 test theirs):
    each configuration of ``scale`` but the baseline, against the baseline, round by round."""
    records = list(scale_records)
    base = scale["baseline"].iloc[0]
    return holm_speed_tests({label: round_ratios(records, label) for label in scale.index if label != base})


def scale_table(scale: pd.DataFrame, scale_records: Iterable[dict]) -> pd.DataFrame:
    """8.4's table: for every configuration of ``scale`` (`speedups`), its samples/s, its speed-up against
    the table's baseline (the fastest in-process trainer), the range of the round-by-round ratios, the
    verdict of the rounds (`speed_verdict`: a tie only inside the tie margin), the p-value of that
    comparison after Holm's correction over all of the table's comparisons (`scale_family`; NaN for the
    baseline) and its optimiser steps × minibatch."""
    records = list(scale_records)
    base = scale["baseline"].iloc[0]
    holm_p = scale_family(scale, records)["p (Holm)"]
    rows = {}
    for label, row in scale.iterrows():
        steps, size = optimiser_steps(scale, records, label)
        rows[label] = {"samples / s": row["median"], "× baseline": row["speed-up"],
                       "rounds": "" if label == base else f"{row['rounds min']:.2f}–{row['rounds max']:.2f}×",
                       "verdict": "the baseline" if label == base
                       else SHORT_VERDICTS.get(row["verdict"], row["verdict"]),
                       "p (Holm)": float(holm_p[label]) if label != base else math.nan,
                       "optimiser steps × minibatch": f"{steps} × {size:,}"}
    return pd.DataFrame.from_dict(rows, orient="index")


def scale_note(scale: pd.DataFrame, scale_records: Sequence[dict]) -> MethodNote:
    """8.4's method: the record, the interleaved rounds, the loads, the command and the loaded twin."""
    first = scale_records[0]
    return how_measured([
        f"`{SCALE_RECORD}` ({_date(scale_records)}): every layout of chapters 4-6 in one run on one machine, "
        f"{first['cpu_count']} CPU cores, {first['threads']} torch thread per process unless a label says more.",
        f"{int(scale['repeats'].max())} interleaved rounds: every configuration runs once per round, so a busy "
        "spell of the machine hits all of them alike; round *i* of a configuration is divided by round *i* of the "
        "baseline, and the verdict reads those ratios.",
        f"Load average {scale['load min'].min():.1f}–{scale['load max'].max():.1f} on {first['cpu_count']} cores "
        f"(its own processes included), over the {int(scale['repeats'].max())} rounds of all {len(scale)} "
        "configurations of the table: below the number of cores. A configuration's rounds still spread (8.3), "
        "which is why the verdicts read ratios within a round.",
        "The same command under heavy load is kept as `bench_scale.jsonl`, to show what load does; chapter 4.5 "
        "reads it.",
        f"Command: `{reader_command(first['command'])}`.",
    ])


WORKERS_MODEL = "workers, update on 2 threads (default)"
DDP_MODEL = "DDP ranks"


def cost_models(scale_records: Iterable[dict]) -> dict:
    """The two cost models of chapters 4 and 5, fitted to the phases of one and two processes:
    ``{WORKERS_MODEL: ..., DDP_MODEL: ...}`` (`fit_cost_model`)."""
    records = list(scale_records)
    return {WORKERS_MODEL: fit_cost_model(records, "workers", learner_threads=2),
            DDP_MODEL: fit_cost_model(records, "ddp")}


PROJECTED_UP_TO = 8
"""The most processes chapter 8 projects to, as chapters 4 and 5: the further a two-point fit runs from
its points, the more of its answer comes from its assumptions."""


def _measured_for_models(models: dict, scale: pd.DataFrame, trainer: TrainerModel | None) -> dict:
    """Each model's measured points ``{name: {P: (median, low, high)}}`` (`measured_points`)."""
    per_process = {name: model.samples_per_process for name, model in models.items()}
    return {WORKERS_MODEL: measured_points(scale, "workers", threads=2, baseline=trainer,
                                           samples_per_process=per_process[WORKERS_MODEL]),
            DDP_MODEL: measured_points(scale, "ddp", baseline=trainer, samples_per_process=per_process[DDP_MODEL])}


def measured_over_model(models: dict, scale: pd.DataFrame, trainer: TrainerModel) -> dict[tuple[str, int], float]:
    """``{(model name, P): measured median / model}`` at each measured process count, both against
    ``trainer`` with as many envs: how far the whole runs' samples/s (the figure's points) lie from the
    model fitted to the timed phases (its lines). Below 1 where the runs pay for work outside the
    phases (logging, bookkeeping) or the rounds were slower than the phases' medians."""
    out = {}
    for name, points in _measured_for_models(models, scale, trainer).items():
        model = models[name].projectable()
        for p, (median, _, _) in points.items():
            out[name, p] = median / (model.samples_per_s(p) / trainer.samples_per_s(p * models[name].samples_per_process))
    return out


def plot_cost_models(models: dict, scale: pd.DataFrame, ax, trainer: TrainerModel | None = None) -> None:
    """The models' speed-ups from 1 to `PROJECTED_UP_TO` processes, with the measured points
    (`plot_projection`), on ``ax``: against the fastest in-process trainer of ``scale``, or, with
    ``trainer`` (`fit_trainer_model`), like with like as chapters 4.6 and 5.6 read them: against one
    in-process trainer holding as many envs as the P processes together."""
    base = scale["baseline"].iloc[0]
    measured = _measured_for_models(models, scale, trainer)
    against = "one in-process trainer with as many envs" if trainer is not None else f"the {base}"
    plot_projection(models, trainer if trainer is not None else float(scale.loc[base, "median"]), measured, ax,
                    f"Cost models, measured at 1-2 processes, projected to {PROJECTED_UP_TO} (against {against})",
                    max_processes=PROJECTED_UP_TO)


PROJECTION_FORMATS = {"serial fraction": "{:.0%}", "overhead per added process (s)": "{:+.3f}",
                      "overhead, share of one process": "{:+.0%}",
                      f"projected at {PROJECTED_UP_TO}: × the fastest in-process trainer": "{:.2f}×",
                      f"projected at {PROJECTED_UP_TO}: × one in-process trainer with as many envs": "{:.2f}×"}
"""How `projection_table`'s columns print (at its default of `PROJECTED_UP_TO` processes)."""


def clamped_overheads(models: dict) -> dict:
    """``{model name: fitted overhead (s)}`` for each cost model whose fitted overhead per added process
    is negative, which the projection takes as 0 (`CostModel.projectable`, `clamped_terms`); ``{}`` where
    none is."""
    return {name: terms["overhead"] for name, terms in ((name, clamped_terms(model)) for name, model in models.items())
            if "overhead" in terms}


def projection_table(models: dict, scale: pd.DataFrame, processes: int = PROJECTED_UP_TO,
                     trainer: TrainerModel | None = None) -> pd.DataFrame:
    """Each model's three numbers in words a reader can compare (the share of one process's iteration
    more processes do not split, the seconds each added process adds and their share of one process's
    iteration) and its projected speed-up at ``processes``: against the fastest in-process trainer
    (a fixed rate), and, with ``trainer``, also against one in-process trainer with as many envs as
    the processes hold together (like with like, `fit_trainer_model`)."""
    base = float(scale.loc[scale["baseline"].iloc[0], "median"])
    column = f"projected at {processes}: × the fastest in-process trainer"
    same = f"projected at {processes}: × one in-process trainer with as many envs"
    rows = {}
    for name, model in models.items():
        rows[name] = {"serial fraction": model.serial_fraction, "overhead per added process (s)": model.overhead,
                      "overhead, share of one process": model.overhead_fraction,
                      column: float(project(model, (processes,), baseline=base).loc[processes, "speed-up"])}
        if trainer is not None:
            rows[name][same] = float(project(model, (processes,), baseline=trainer).loc[processes, "speed-up"])
    return pd.DataFrame(rows).T


# --- 8.5 GPU ------------------------------------------------------------------------------------------

GPU_NAMES = {"elegantrl_StockTradingVecEnv": "ElegantRL's StockTradingVecEnv", "ref_batched_env": "rule-free env",
             "ref_batched_env+mlp2x256": "rule-free env + 2×256 MLP"}


def anchor(anchors: Sequence[dict], num_envs: int = 4096) -> dict:
    """The cited GPU measurement of an anchors record: ElegantRL's ``StockTradingVecEnv`` at ``num_envs``
    envs, with the record's date, device, ElegantRL commit (from the record's description) and method."""
    meta = anchors[0]["meta"]
    row = next(r for r in anchors if r.get("bench") == "elegantrl_StockTradingVecEnv" and r["num_envs"] == num_envs)
    commit = re.search(r"HEAD ([0-9a-f]{7,40})", meta["what"])
    return {"env_steps_per_s": float(row["env_steps_per_s"]), "num_envs": int(row["num_envs"]),
            "stocks": int(row["stocks"]), "date": meta["date"], "device": meta["device"],
            "commit": commit.group(1) if commit else "not recorded", "method": meta["method"],
            "gpu": anchors[1].get("machine", {}).get("gpu") or meta["device"].split(",")[0],
            "source": anchors[1].get("source", "")}


def gpu_frame(names: Sequence[str]) -> pd.DataFrame:
    """This package's own GPU records (``bench gpu --out``, the files ``names``), one row per record with
    its file name; an empty frame where there are none."""
    return pd.DataFrame([dict(r, file=name) for name in names for r in read_records(name)])


def graph_replay_checks(gpu: pd.DataFrame) -> dict:
    """``{file: ok}`` of the graph-replay checks in ``gpu`` (`gpu_frame`): a replayed CUDA graph gives the
    eager accounts bit for bit; empty where there is no GPU record."""
    if gpu.empty or "bench" not in gpu:
        return {}
    checks = gpu[gpu["bench"] == "gpu"]
    return dict(zip(checks["file"], checks["ok"].astype(bool)))


def plot_gpu_throughput(anchors: Sequence[dict], gpu: pd.DataFrame, ax) -> None:
    """GPU measurements only, on ``ax``: the H200 curves of the anchors record at 15 stocks (dashed:
    other programs) and this package's GPU records where there are any (solid)."""
    rows = pd.DataFrame([r for r in anchors if r.get("stocks") == 15 and "num_envs" in r and "env_steps_per_s" in r])
    for (bench, graph), part in rows.groupby(["bench", "graph"], dropna=False):
        part = part.sort_values("num_envs")
        how = "" if pd.isna(graph) else (", CUDA graph" if graph else ", eager")
        ax.plot(part["num_envs"], part["env_steps_per_s"], "s--", alpha=0.7,
                label=f"{GPU_NAMES.get(bench, bench)}{how}")
    if not gpu.empty:
        sweep = gpu[(gpu["bench"] == "env") & gpu["env_steps_per_s"].notna()]
        for (name, mode), part in sweep.groupby(["file", "mode"]):
            part = part.sort_values("num_envs")
            ax.plot(part["num_envs"], part["env_steps_per_s"], "o-", linewidth=2,
                    label=f"this package: {mode} ({name})")
    date = anchors[0]["meta"]["date"]
    ax.set(xscale="log", yscale="log", xlabel="sub-envs (15 stocks)", ylabel="env-steps / s",
           title=f"GPU env throughput, dashed: other programs on one NVIDIA H200 ({date})"
                 + ("" if not gpu.empty else "; this package's env has no GPU record"))
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize="x-small")


def gpu_note(anchors: Sequence[dict]) -> MethodNote:
    """8.5's method: where the cited figure comes from, what the anchors record holds, and the command
    that would give this package's own GPU record."""
    cited = anchor(anchors)
    return how_measured([
        f"`anchors_elegantrl_h200.jsonl` ({cited['date']}, {cited['device']}): {code_spans(anchors[0]['meta']['what'])}.",
        f"Method (the record's first line): {code_spans(cited['method'])}.",
        f"Source: a measurement of ElegantRL on one {cited['gpu']} ({cited['date']}, ElegantRL commit "
        f"`{cited['commit']}`, the method above), stored as `anchors_elegantrl_h200.jsonl`.",
        "This package's own GPU record would come from `python -m finrl_tutorial bench gpu --out "
        "book/data/gpu_<name>.json` on a machine with a CUDA GPU; the figure draws every such record.",
    ])


# --- 8.6 and 8.7 results over several seeds -------------------------------------------------------------

def validation_curves(report: dict, run_folder) -> dict:
    """``{"validation Sharpe": frame}``: each seed's validation Sharpe by env-steps (one column per seed),
    from the ``log.csv`` files `run_experiment` wrote under ``run_folder``."""
    from pathlib import Path

    logs = {seed: pd.read_csv(Path(run_folder) / f"seed_{seed}" / "log.csv") for seed in report["seeds"]}
    return {"validation Sharpe": pd.DataFrame({seed: log.set_index("env_steps")["valid/sharpe_ratio"].dropna()
                                               for seed, log in logs.items()})}


def plot_validation_band(report: dict, run_folder, prepared) -> object:
    """The seeds' validation Sharpe as a mean ± std band (`finrl_tutorial.plot_band`), with buy-and-hold's
    validation Sharpe and 0 drawn; the axis spans at least one Sharpe unit, so that a drift inside the
    seeds' noise does not read as a trend. Returns the Figure."""
    from .. import EnvConfig, buy_and_hold_baseline, plot_band

    figure = plot_band(validation_curves(report, run_folder), x="env steps",
                       ylabel="validation Sharpe (2018), mean ± std over seeds")
    axis = figure.axes[0]
    hold = buy_and_hold_baseline(prepared.valid, EnvConfig()).metrics()["sharpe_ratio"]
    axis.axhline(hold, color="tab:orange", linestyle=":", label=f"buy-and-hold, validation year ({hold:.2f})")
    axis.axhline(0, color="grey", linewidth=0.8)
    axis.legend(loc="best")
    low, high = axis.get_ylim()
    middle = (low + high) / 2
    axis.set_ylim(min(low, middle - 0.5), max(high, middle + 0.5))
    return figure


def plot_per_seed(report: dict, axes, title: str = "") -> None:
    """One bar per seed of the test-year cumulative return, Sharpe and max drawdown on the three ``axes``,
    with the seeds' mean (dashed) and equal-weight buy-and-hold (orange)."""
    per_seed = pd.DataFrame(report["agent_per_seed"]).T[["cumulative_return", "sharpe_ratio", "max_drawdown"]]
    hold = report["baselines"]["equal_weight_buy_and_hold"]
    for ax, column in zip(axes, per_seed.columns):
        ax.bar([f"seed {s}" for s in per_seed.index], per_seed[column], color="tab:blue", alpha=0.8)
        ax.axhline(per_seed[column].mean(), color="tab:blue", linestyle="--", label="agent mean")
        ax.axhline(hold[column], color="tab:orange", label="buy-and-hold")
        ax.set_title(column.replace("_", " "))
        ax.grid(axis="y", alpha=0.3)
    axes[0].legend(fontsize="small")
    if title:
        axes[0].figure.suptitle(title)


def _seed_sharpes(report: dict) -> list[float]:
    rows = report["agent_per_seed"]
    return [row["sharpe_ratio"] for row in (rows.values() if isinstance(rows, dict) else rows)]


NO_SEED_GAP = "none: the seeds' std rounds to 0.00"
"""`seed_table`'s gap in standard errors where the seeds barely differ (fast mode's seeds train so little
that they end almost alike): a gap divided by a near-zero error would look huge and mean nothing."""


def seed_table(report: dict):
    """8.6's reading of a multi-seed report as a styled one-column table: the agent's test Sharpe (mean
    ± std over seeds) and buy-and-hold's, their gap in standard errors of the mean over seeds (std ÷ √K;
    `NO_SEED_GAP` where the std rounds to 0.00), and the bootstrap difference, interval and verdict (`stored_verdict`), which also count the luck of
    the test days."""
    mean, std = report["agent"]["sharpe_ratio"], report["agent_std"]["sharpe_ratio"]
    hold = report["baselines"]["equal_weight_buy_and_hold"]["sharpe_ratio"]
    seeds = len(report["seeds"])
    error = std / seeds ** 0.5
    versus = report["sharpe_vs_buy_and_hold"]
    margin = versus.get("margin", TIE_MARGIN)
    rows = {"agent test Sharpe, mean ± std over seeds": f"{mean:.2f} ± {std:.2f} ({seeds} seeds)",
            "standard error of the mean over seeds (std ÷ √K)": f"{error:.3f}",
            "equal-weight buy-and-hold, test Sharpe": f"{hold:.2f}",
            "gap, agent − buy-and-hold": f"{mean - hold:+.2f}",
            "gap in standard errors (signed)": f"{(mean - hold) / error:+.1f}" if f"{std:.2f}" != "0.00" else NO_SEED_GAP,
            "bootstrap Sharpe difference, 95 % interval": f"{versus['difference']:+.2f} [{versus['low']:+.2f}, "
                                                           f"{versus['high']:+.2f}]",
            "verdict": stored_verdict(versus, margin),
            "why": verdict_reason(stored_verdict(versus, margin), margin, versus["low"], versus["high"])}
    return pd.DataFrame({"this run": rows}).style.set_caption("Live: test year, the agent against buy-and-hold")


def untrained_reading(report: dict) -> dict:
    """The untrained agent's test Sharpe, the number of seeds at or below it and the seeds."""
    untrained = report["baselines"]["untrained_agent"]["sharpe_ratio"]
    seeds = _seed_sharpes(report)
    return {"untrained": untrained, "at_or_below": sum(value <= untrained + 1e-9 for value in seeds), "seeds": seeds}


def within_one_std(report: dict) -> dict:
    """``{baseline: test Sharpe}`` of every baseline of ``report`` (equal-weight buy-and-hold included)
    whose test Sharpe lies within one seed-std of the agent's mean, in the report's order."""
    agent, std = report["agent"]["sharpe_ratio"], report["agent_std"]["sharpe_ratio"]
    return {name: row["sharpe_ratio"] for name, row in report["baselines"].items()
            if abs(row["sharpe_ratio"] - agent) <= std}


def full_run_note(name: str, report: dict) -> MethodNote:
    """8.7's method: the record, its machine, its wall time and its command."""
    machine = report["machine"]
    return how_measured([
        f"`{name}`: written by `run_experiment` (`python -m finrl_tutorial train --seeds K`).",
        f"{report['env_steps']:,} env-steps in {report['wall_seconds']:,.0f} s on {machine['cpu_count']} CPU cores, "
        f"torch {machine['torch']}, {report['config']['num_envs']} envs; finished {machine['date']}.",
        f"Command: `{report.get('command', 'not recorded')}`"
        + (f"; it ran the plain learner, so with the package as installed "
           f"`{reader_command(report['command'], plain=True)}` makes it again." if 'command' in report
           and ran_plain_learner(report) else "."),
    ])


# --- 8.8 peers ------------------------------------------------------------------------------------------

def peers_note(peer_records: Sequence[dict], peers: pd.DataFrame) -> MethodNote:
    """8.8's method: the record, its data, command, every version, the spread of the timings and the
    peers that could not run."""
    summary = peer_summary(peer_records)
    items = [f"`bench_peers.jsonl` ({summary['date'][:16].replace('T', ' ')} UTC): data {summary['data']}.",
             "Each figure is the median of several timings taken in rounds (every measurement once per round), so "
             "that a busy spell of the machine hits all of them alike; a ratio's rounds divide round *i* by round *i*.",
             f"Spread of the single timings, (max − min) / median: {peers['spread'].min():.0%} .. "
             f"{peers['spread'].max():.0%}.",
             "Versions: " + ", ".join(f"{name} {version or 'not installed'}"
                                      for name, version in summary["versions"].items()) + ".",
             f"Command: `{reader_command(summary['command'])}`."]
    items += [f"Not measured here: {name}: {reason}" for name, reason in summary["skipped"].items()]
    return how_measured(items)


def peer_verdicts(peer_records: Iterable[dict], margin: float = SPEED_TIE_MARGIN) -> pd.DataFrame:
    """`peer_comparisons`: every like-with-like ratio of a ``bench peers`` record, named "X ÷ baseline",
    with the book's one verdict rule (`speed_verdict`, glossary "Tie"): faster or slower when every
    round's ratio lies on one side of 1, a tie when every round lies within ``margin`` of 1."""
    return peer_comparisons(peer_records, margin)


def peer_family(comparisons: pd.DataFrame) -> pd.DataFrame:
    """`peer_verdicts`' table with every ratio also tested as one family (`holm_speed_tests`: a
    t-test on the log ratios of its rounds, Holm-corrected over all the rows): the columns ``p
    (Holm)`` and ``Holm verdict`` added beside the rounds' verdict."""
    tests = holm_speed_tests(dict(zip(comparisons.index, comparisons["rounds"])))
    return comparisons.join(tests[["p (Holm)", "Holm verdict"]])


def plot_peers(peer_records: Sequence[dict], comparisons: pd.DataFrame, fig) -> None:
    """Two panels on ``fig`` (subfigures, so the long bar labels take no width from the panel above):
    env-steps/s of every env by accounts with the rounds' range, and the like-with-like ratios (blue:
    same accounts, grey: batching within our env) with their round-by-round whiskers."""
    env_rows = pd.DataFrame([r for r in peer_records if r.get("env_steps_per_s") is not None and "runs" in r])
    env_rows["accounts"] = env_rows["num_envs"].fillna(1).astype(int)
    env_rows["low"], env_rows["high"] = env_rows["runs"].apply(min), env_rows["runs"].apply(max)
    elegant_name = next(r["env"].rsplit(".", 1)[-1] for r in peer_records if r.get("measurement") == "elegantrl_env")
    top, bottom = fig.subfigures(2, 1)
    left, right = top.subplots(), bottom.subplots()
    for (label, kind), style in {("FinRL's StockTradingEnv", "finrl_env"): ("D", "tab:orange"),
                                 (f"ElegantRL's {elegant_name}", "elegantrl_env"): ("s--", "tab:green"),
                                 ("our batched env", "our_env"): ("o-", "tab:blue")}.items():
        part = env_rows[env_rows["measurement"] == kind]
        if kind == "our_env":
            one = part[part["accounts"] == 1]
            left.plot(one["accounts"], one["env_steps_per_s"], "^", color="tab:blue", markersize=9,
                      label="our single env")
            part = part[part["accounts"] > 1]
        part = part.sort_values("accounts")
        left.errorbar(part["accounts"], part["env_steps_per_s"], fmt=style[0], color=style[1], capsize=3, label=label,
                      yerr=[part["env_steps_per_s"] - part["low"], part["high"] - part["env_steps_per_s"]])
    left.set(xscale="log", yscale="log", xlabel="accounts (sub-envs)", ylabel="env-steps / s (log)",
             title="Env-steps/s by accounts: compare along a vertical line")
    left.grid(alpha=0.3, which="both")
    left.legend(fontsize="small")
    shown = comparisons[comparisons["compares"].isin(["same accounts", "batching, ours"])]
    middle = shown["ratio of medians"]
    right.barh(list(shown.index), middle, color=["tab:blue" if kind == "same accounts" else "tab:grey"
                                                 for kind in shown["compares"]])
    # the ratio of medians may lie outside the round-by-round range: the whisker then starts at the bar
    right.errorbar(middle, list(shown.index), fmt="none", color="black", capsize=3,
                   xerr=[(middle - shown["round by round: min"]).clip(lower=0), (shown["max"] - middle).clip(lower=0)])
    right.axvline(1, color="black", linewidth=1)
    right.invert_yaxis()
    right.set(xscale="log", xlim=(0.8, None),
              xlabel="X ÷ baseline (log; the black line is 1×, as fast as the baseline)",
              title="Ratios, whiskers: round by round; blue: same accounts, grey: batching within our env")
    right.grid(axis="x", alpha=0.3, which="both")
    summary, first = peer_summary(peer_records), peer_records[0]
    fig.suptitle(f"Peers side by side on a CPU, {summary['stocks']} stocks, {first['cpu_count']} cores, "
                 f"{first['threads']} torch thread ({summary['date'][:10]})")


PPO_FORMATS = {"samples / iteration": "{:,.0f}", "minibatch": "{:,.0f}", "accounts": "{:,.0f}",
               "gradient steps / 1,000 samples": "{:,.1f}", "samples / s (median)": "{:,.0f}"}
"""How 8.8's table of PPO loops (`finrl_tutorial.book.scale.peer_ppo_layouts`) prints its columns."""


# --- the chapter's box ------------------------------------------------------------------------------------

def layout_box_value(scale: pd.DataFrame, scale_records: Sequence[dict], label: str) -> str:
    """A process layout's entry in the chapter's box: its speed-up against the fastest in-process trainer,
    the verdict of its rounds with its p-value after Holm's correction over all of ``scale``'s
    comparisons (`scale_family`, as 8.4's table), and, where it runs another update (`other_update`),
    that the ratio is not like with like."""
    row = scale.loc[label]
    different = other_update(scale, scale_records, label)
    holm_p = float(scale_family(scale, scale_records).loc[label, "p (Holm)"])
    value = (f"{row['speed-up']:.2f}×, {SHORT_VERDICTS.get(row['verdict'], row['verdict'])} "
             f"(adjusted p {holm_p:.2f}, Holm over {len(scale) - 1} comparisons)")
    if different:
        steps, size = optimiser_steps(scale, scale_records, label)
        base_steps, base_size = optimiser_steps(scale, scale_records, scale["baseline"].iloc[0])
        value += (f"; not like with like: {steps} optimiser steps of {size:,} samples against the baseline's "
                  f"{base_steps} of {base_size:,}")
    return value


def seed_spread(report: dict, fast: bool = False) -> str:
    """The box's reading of this run's seeds: the agent's test Sharpe, mean ± std over seeds, and, in fast
    mode (``fast``) where the std rounds to 0.00, why: fast mode trains too little to move the agent, so
    every seed ends within a hundredth or so of the untrained agent's Sharpe (the bound is rounded up)."""
    mean, std = report["agent"]["sharpe_ratio"], report["agent_std"]["sharpe_ratio"]
    value = f"{mean:.2f} ± {std:.2f}"
    if not fast or f"{std:.2f}" != "0.00":
        return value
    untrained = report["baselines"]["untrained_agent"]["sharpe_ratio"]
    off = math.ceil(100 * max(abs(sharpe - untrained) for sharpe in _seed_sharpes(report)) - 1e-9) / 100
    return (f"{value}: the spread is 0 because fast mode trains too little to move the agent; every seed ends "
            f"within {off:.2f} of the untrained agent's {untrained:.2f}")


def chapter_box(report: dict, config, seeds: int, records: Mapping[str, list[dict]], full_run: dict,
                peer_records: Sequence[dict], anchors: Sequence[dict], fast: bool = False):
    """The "What this chapter measured" box (`finrl_tutorial.book.measured_box`): this run's seeds
    (`seed_spread`; ``fast``: fast mode), and the recorded figures, each naming its record and its
    baseline. ``records`` holds the chapter's ``env``, ``scale`` records."""
    from .scale import speedups

    env = pd.DataFrame(records["env"])
    best_env = env.loc[env["env_steps_per_s"].idxmax()]
    scale = speedups(records["scale"], layouts=["trainer", "workers", "ddp"])
    two = scale[(scale["layout"] != "trainer") & (scale["processes"] == 2)]
    layouts = {layout: part["speed-up"].idxmax() for layout, part in two.groupby("layout")}  # each at its fastest
    comparisons = peer_verdicts(peer_records)
    same = comparisons[comparisons["compares"] == "same accounts"]
    ours = comparisons[comparisons["compares"] == "batching, ours"]
    versus = report["sharpe_vs_buy_and_hold"]
    full = full_run["sharpe_vs_buy_and_hold"]
    cited = anchor(anchors)
    return _room().measured_box(
        this_run={
            f"{seeds} seeds × {config.total_steps:,} env-steps: agent Sharpe (test)":
                seed_spread(report, fast),
            "Sharpe vs buy-and-hold, 95 % interval":
                f"{versus['difference']:+.2f} [{versus['low']:+.2f}, {versus['high']:+.2f}]: {versus['verdict']}",
        },
        recorded={
            "fastest env, CPU (bench_env.jsonl)": f"{best_env['env']} × {int(best_env['num_envs']):,}: "
                                                  f"{best_env['env_steps_per_s']:,.0f} env-steps/s",
            f"2 accounts: batched env ÷ subprocess VecEnv, CPU ({SCALE_RECORD})":
                f"{quiet_two_accounts(records['scale']):.1f}×",
            **{f"{label} ÷ fastest in-process trainer, CPU ({SCALE_RECORD})": layout_box_value(scale, records["scale"], label)
               for label in layouts.values()},
            f"the full-size run, {len(full_run['seeds'])} seeds ({MAIN_JOB_RECORD})":
                f"Sharpe {full_run['agent']['sharpe_ratio']:.2f} ± {full_run['agent_std']['sharpe_ratio']:.2f} vs "
                f"buy-and-hold {full_run['baselines']['equal_weight_buy_and_hold']['sharpe_ratio']:.2f}: "
                f"{stored_verdict(full, full.get('margin', TIE_MARGIN))}",
            "peers, same accounts, CPU (bench_peers.jsonl)": "; ".join(
                f"{label}: {comparisons.loc[label, 'ratio of medians']:,.1f}×"
                for label in (same[same["accounts"] == 1].index[0], same.index[-1])),
            "peers, batching within our env, CPU (bench_peers.jsonl)":
                f"{ours.index[-1]}: {ours['ratio of medians'].iloc[-1]:,.1f}×",
            f"ElegantRL's StockTradingVecEnv, one H200 (anchors_elegantrl_h200.jsonl, {cited['date']}, commit "
            f"{cited['commit']}: a measurement of another program on another device)":
                f"{cited['env_steps_per_s']:,.0f} env-steps/s at {cited['num_envs']:,} envs × "
                f"{cited['stocks']} stocks",
        },
        shows="speeds on a CPU with their machine, date and command; speed-ups against the fastest in-process "
              "trainer; peers at the same number of accounts, and batching as its own figure; the spread of seeds; "
              "one full-size multi-seed result with its bootstrap interval",
        does_not_show="this package's env or trainer on a GPU (not measured on a GPU), machines with more free "
                      "cores (the scale-out projection is a model), or a result beyond one test year of 15 large caps",
    )
