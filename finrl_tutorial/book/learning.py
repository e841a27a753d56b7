"""Readings for the chapters on learning (1 continued: finding an edge; 2: hyperparameters; 7: your
own data): the tables, sentences, figures and boxes those pages show, computed from recorded
records (``bench learn``, ``bench walkforward``, ``bench sweep``) and from the numbers a chapter has
just measured. Every function reads what it is given and returns a DataFrame, a Styler, a dict of
numbers, a folded block or a box, or draws on a matplotlib Axes passed in; none trains or times
anything itself.

The chapters write their sentences as Markdown and check each number against these readings in a
hidden cell; how a record was measured (dates, load, run lengths, commands) goes into
`how_measured`, a block folded away at the end of a section.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from ..bench.common import parse_overrides
from ..metrics import stored_verdict
from . import teaching
from .sweep import MEASURE_NAMES
from . import folded
from .folded import MethodNote

__all__ = [
    # chapter 1, second page
    "MethodNote", "how_measured", "total_return", "records_table", "planted_edge_table", "planted_summary",
    "style_signal_rule", "control_markets", "style_control_markets", "learn_method", "learn_rebuilt", "walkforward_reading", "walkforward_chosen_table", "walkforward_method", "realistic_provenance",
    "realistic_method", "style_realistic", "style_oracles", "budget_table", "budget_reading", "style_budgets",
    "edge_box", "same_markets", "planted_rows", "walkforward_row", "walkforward_seed_differences", "with_seed_spread", "ic_scale", "walkforward_pooled_hold",
    "near_margin", "margin_details", "walkforward_two_level", "with_two_level", "learner_comparison",
    "style_comparison", "learner_differences", "run_length_differences", "pooled_capture_interval", "ABLATION_LABELS", "ablation_table", "style_ablation",
    "non_inferiority", "network_comparison", "network_table",
    # chapter 1, third page
    "difference_rows", "changes_box", "realistic_rows", "plain_records_box", "plot_differences", "ablation_tests", "WF_VERDICT_COLUMNS",
    # chapter 2
    "live_runs_table", "style_live_runs", "deflation_against_hold", "TRAINER_LABEL", "trainer_base_cost", "plot_cost", "cost_reading",
    "update_cost_table", "timing_table", "cost_method", "kl_tables", "plot_kl", "kl_ratio_table",
    "curve_separations", "NO_CALL", "vs_base", "sweep_effects", "sweep_method", "style_overfitting", "pbo_rows",
    "work_table", "sweep_box",
    # chapter 7
    "plot_factor", "broken_tables", "factor_reading", "factor_tests_table", "factor_method", "factor_box",
]


def _measured_box(*args, **kwargs):
    """The book room's `measured_box` (read when called, as `_markdown`)."""
    from . import measured_box as box

    return box(*args, **kwargs)


def _count(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


# --------------------------------------------------------------------------- a folded block for method details

def how_measured(*paragraphs: str, tables: Sequence[pd.DataFrame] = (),
                 title: str = "How this was measured") -> MethodNote:
    """A folded block (title ``title``) with ``paragraphs`` and then ``tables``: the method details of
    a section (dates, load, commands), out of the teaching sentences (`folded.how_measured`)."""
    return folded.how_measured(*map(str, paragraphs), *tables, title=title)


# --------------------------------------------------------------------------- chapter 1.8-1.9: the planted edge


def total_return(record) -> float:
    """The cumulative return of an episode record (its wealth curve's last value over its first, - 1)."""
    wealth = record.wealth
    return float(wealth.iloc[-1] / wealth.iloc[0] - 1)


def records_table(records: Mapping) -> pd.DataFrame:
    """One row per policy of ``records`` (name → episode record): its Sharpe ratio and its return
    over the split, rounded to two decimals / as a percentage (strings, as a reader reads them)."""
    rows = {name: {"Sharpe ratio": f"{record.metrics()['sharpe_ratio']:.2f}",
                   "return": f"{total_return(record):+.1%}"} for name, record in records.items()}
    return pd.DataFrame(rows).T.rename_axis("policy")



def planted_edge_table(env_steps: int, captured: float, versus: Mapping) -> pd.DataFrame:
    """The planted edge of 1.9 as one row: the env-steps trained, the share of the signal rule's
    excess return the agent earned on the test split, and its Sharpe difference against buy-and-hold
    (``sharpe_difference_ci``) with the interval and the verdict (strings, as a reader reads them)."""
    return pd.DataFrame([{"env-steps": f"{int(env_steps):,}", "signal-rule capture": f"{captured:.0%}",
                          "Sharpe − buy-and-hold's [95 %]":
                              f"{versus['difference']:+.2f} [{versus['low']:+.2f}, {versus['high']:+.2f}]",
                          "verdict": versus["verdict"]}], index=["this run"])

def planted_summary(learn: Mapping, budget: int, learners: Sequence[str] = ("ppo", "a2c")) -> pd.DataFrame:
    """The planted edges of a ``bench learn`` record at the end of runs of ``budget`` env-steps,
    checkpoint chosen on validation: one row per (family, learner) with the markets, the pooled
    capture of the signal rule's excess, the markets without a capture, the mean and spread of the
    defined captures, and the mean test excess of the agent and of the signal rule."""
    rows = [r for r in learn["summary"]
            if r["select"] == "best" and r["learner"] in learners and r["env_steps"] == r["run_steps"] == budget]
    return pd.DataFrame(
        {"family": r["family"], "ic": r["ic"], "learner": r["learner"], "markets (seeds)": r["seeds"],
         "signal-rule capture (pooled)": r["capture_pooled"], "no capture": sum(v is None for v in r["captures"]),
         "signal-rule capture (mean)": r["capture_mean"], "± std": r["capture_std"],
         "agent excess": r["test_excess_mean"], "signal rule excess": r["oracle_excess_mean"]}
        for r in rows)





def paired_excess(learn: Mapping, a: str = "ppo", b: str = "a2c", run_steps: int | None = None,
                  select: str = "best") -> pd.DataFrame:
    """Two learners of a ``bench learn`` record on the planted-edge markets **both** ran (the same
    family, strength, universe and seed: the same market), read at the end of runs of ``run_steps``
    env-steps: each one's test excess over buy-and-hold and the difference ``a − b``. Unlike a
    capture, an excess is defined on every market. The control family ``none`` is left out.
    ``"sb3_ppo"`` names SB3's PPO, which the record keeps beside our PPO's case on the same market
    (``case["sb3"]``, its final model after ``run_steps`` env-steps; ``select`` does not apply to it).
    Columns: family, market, a, b, difference."""
    if run_steps is None:
        from ..agents import PPOConfig

        run_steps = PPOConfig().total_steps
    excess = {}
    for case in learn["cases"]:
        if case["family"] == "none":
            continue
        key = (case["family"], case["ic"], case.get("stocks", 10), case["days"], case["seed"])
        if case["algo"] in (a, b) and teaching._run_length(case, select) == run_steps:
            excess[case["algo"], key] = case["curve"][select][str(run_steps)]["test_excess"]
        sb3 = case.get("sb3")
        if "sb3_ppo" in (a, b) and sb3 is not None and sb3["env_steps"] == run_steps:
            excess["sb3_ppo", key] = sb3["test_excess"]
    rows = [{"family": key[0], "market": key[4], a: excess[a, key], b: excess[b, key],
             "difference": excess[a, key] - excess[b, key]}
            for learner, key in sorted(excess) if learner == a and (b, key) in excess]
    return pd.DataFrame(rows, columns=["family", "market", a, b, "difference"])


def control_markets(records: Mapping[str, Mapping], run_steps: int,
                    learners: Sequence[str] = ("ppo", "a2c")) -> pd.DataFrame:
    """The control markets (family ``none``: a noise column, no edge) of one or more ``bench learn``
    records, read at the end of runs of ``run_steps`` env-steps with the checkpoint chosen on
    validation. ``records`` maps a label (e.g. ``"plain"``, ``"default"``) to its record. One row per
    (label, learner, market): the first checkpoint validation saw (after one update) and the one it
    chose, whether it moved off the first, the test excess over buy-and-hold of the chosen agent, of
    the untrained network (env-step 0) and of the signal rule, the chosen agent minus the untrained
    network, and the daily test turnover of both. On a market with nothing to find, a chosen
    checkpoint past the first one is validation fitting noise."""
    rows = []
    for label, record in records.items():
        for case in record["cases"]:
            if case["family"] != "none" or case["algo"] not in learners or teaching._run_length(case, "best") != run_steps:
                continue
            chosen = case["curve"]["best"][str(run_steps)]
            untrained = next(c for c in case["candidates"] if c["env_steps"] == 0)
            first = min(c["env_steps"] for c in case["candidates"] if c["valid_sharpe"] is not None)
            rows.append({"learner": label, "algo": case["algo"], "market": case["seed"],
                         "first checkpoint": first, "chosen checkpoint": chosen["env_steps"],
                         "moved off the first": chosen["env_steps"] != first,
                         "agent excess": chosen["test_excess"], "untrained excess": untrained["test_excess"],
                         "signal rule excess": case["oracle_excess"],
                         "agent − untrained": chosen["test_excess"] - untrained["test_excess"],
                         "agent turnover": chosen["test_turnover"], "untrained turnover": untrained["test_turnover"]})
    if not rows:
        raise ValueError(f"no control-market run of {run_steps:,} env-steps by {'/'.join(learners)} in the records")
    return pd.DataFrame(rows).set_index(["learner", "algo", "market"])


def style_control_markets(table: pd.DataFrame):
    """`control_markets` for the page: excess in percent, the difference in percentage points (`teaching.points`), turnover to three decimals, the chosen checkpoint with
    commas; the first checkpoint (one per learner, which the text states) is left out to keep the table narrow."""
    percent = {c: "{:+.1%}" for c in ("agent excess", "untrained excess", "signal rule excess")}
    table = table.rename(columns={"agent − untrained": "agent − untrained (points)"})
    return table.style.format(percent | {"agent − untrained (points)": teaching.points, "agent turnover": "{:.3f}", "untrained turnover": "{:.3f}",
                                         "chosen checkpoint": "{:,}"}).hide(["first checkpoint"], axis="columns")


def paired_test(differences: Sequence[float]) -> dict:
    """The mean of paired differences with its 95 % t-interval (`teaching.t_interval`), the paired
    t-test's p-value and the Wilcoxon signed-rank test's (which uses only the ranks of the
    differences, so one large difference cannot carry it), and how many differences are positive."""
    from scipy import stats  # here, not at the top: `import finrl_tutorial` stays quick for the CLI

    x = np.asarray(differences, dtype=float)
    interval = teaching.t_interval(x.tolist())
    return interval | {"p (t)": float(stats.ttest_1samp(x, 0.0).pvalue),
                       "p (Wilcoxon)": float(stats.wilcoxon(x).pvalue), "positive": int((x > 0).sum())}


def style_signal_rule(table: pd.DataFrame):
    """A `teaching.signal_rule_comparison` table formatted for the page (excess in percent, the difference in percentage points, p-values), its
    ``low`` and ``high`` shown as one column, the 95 % interval of the mean difference."""
    shown = table.drop(columns=["low", "high"])
    shown.insert(shown.columns.get_loc("mean difference") + 1, "95 % interval",
                 [f"[{teaching.points(low)}, {teaching.points(high)}]" for low, high in zip(table["low"], table["high"])])
    percent = {c: "{:+.1%}" for c in ("agent excess", "signal rule excess")}
    shown = shown.rename(columns={"mean difference": "mean difference (points)"})
    return shown.style.format(percent | {"mean difference (points)": teaching.points, "p (t)": teaching.p_value,
                                 "p (Holm)": teaching.p_value})


def learn_rebuilt(learn: Mapping, env_config, family: str = "factor", algo: str = "ppo", markets: int = 3) -> dict:
    """The first ``markets`` markets of ``family`` in a ``bench learn`` record, rebuilt now with the
    package as installed (`make_synthetic` with the case's spec): per market seed, the record's and
    the present test Sharpe of equal-weight buy-and-hold and of the signal rule (``{seed: {"record":
    (hold, rule), "now": (hold, rule)}}``), for `learn_method` to say whether the record's markets are
    the ones the package builds now."""
    from ..backtest import oracle_record
    from ..backtest.runner import buy_and_hold_baseline
    from ..data.synthetic import SyntheticSpec, make_synthetic

    out = {}
    for case in [c for c in learn["cases"] if c["family"] == family and c["algo"] == algo][:markets]:
        synthetic = make_synthetic(SyntheticSpec(family=family, ic=case["ic"], seed=case["seed"],
                                                 num_stocks=case["stocks"], num_days=case["days"]))
        hold = buy_and_hold_baseline(synthetic.market.test, env_config).metrics()["sharpe_ratio"]
        rule = oracle_record(synthetic, "test", env_config).metrics()["sharpe_ratio"]
        out[case["seed"]] = {"record": (case["buy_and_hold_sharpe"], case["oracle_sharpe"]), "now": (hold, rule)}
    return out


def learn_method(learn: Mapping, budget: int, rebuilt: Mapping | None = None,
                 record_name: str = "bench_learn.json") -> MethodNote:
    """How a planted-edge record (the file ``record_name``) was made: its date and machine, the budget
    and the choice of checkpoint the tables read, and the commands of its parts as a reader runs
    them (the merge of the parts left out); with ``rebuilt`` (`learn_rebuilt`), one plain note where
    the markets the package builds now differ from the record's. Returns a :class:`MethodNote`."""
    machine = learn["machine"]
    parts = [part for part in learn["command"].split("&&") if "--merge" not in part]
    paragraphs = [
        f"The record {record_name}, made on {machine['date'][:10]} on a {machine['cpu_count']}-core CPU, one "
        f"torch thread per run. The tables read the runs of {budget:,} env-steps (the default budget) at their end, "
        "with the checkpoint chosen on the validation split and scored once on the test split."]
    moved = {seed: v for seed, v in (rebuilt or {}).items()
             if max(abs(a - b) for a, b in zip(v["record"], v["now"])) >= 0.005}
    if moved:
        paragraphs.append(
            f"On the record's factor markets of seed{'' if len(moved) == 1 else 's'} "
            f"{teaching.listed(list(map(str, moved)))}, the test Sharpe of buy-and-hold and of the signal rule differ from "
            "those of the markets the package as installed builds: " + "; ".join(
                f"seed {seed}, {v['record'][0]:.2f} and {v['record'][1]:.2f} in the record, {v['now'][0]:.2f} and "
                f"{v['now'][1]:.2f} as installed" for seed, v in moved.items())
            + ". Within the record every learner and the signal rule met the same markets, so its comparisons hold "
              "for the markets it ran.")
    paragraphs.append("To make its parts again, one command each: " + "; ".join(
        teaching.reader_command(part, f"runs/{record_name.removesuffix('.json')}_{_out_name(part)}",
                                plain=teaching.ran_plain_learner(learn))
        for part in parts))
    return how_measured(*paragraphs)


def _out_name(command: str) -> str:
    """The last folder of a command's ``--out`` ("" without one)."""
    import shlex

    words = shlex.split(command)
    return words[words.index("--out") + 1].rstrip("/").rsplit("/", 1)[-1] if "--out" in words else ""


# --------------------------------------------------------------------------- chapter 1.10: the walk-forward

def walkforward_chosen_table(walkforward: Mapping) -> pd.DataFrame:
    """Where validation chose each run's checkpoint in a ``bench walkforward`` record: one row per
    test year, one column per seed, each cell the chosen checkpoint's env-steps and its place among
    the run's validations (``"4,096 (1st of 16)"``: the first validation, after one update)."""
    def place(k: int) -> str:
        return f"{k}{'st' if k % 10 == 1 and k != 11 else 'nd' if k % 10 == 2 and k != 12 else 'rd' if k % 10 == 3 and k != 13 else 'th'}"

    rows = {}
    for run in walkforward["runs"]:
        validations = run["validations"]
        k = max(range(len(validations)), key=lambda i: validations[i]["valid_sharpe"])
        rows.setdefault(f"test {run['year']}", {})[f"seed {run['seed']}"] = (
            f"{validations[k]['env_steps']:,} ({place(k + 1)} of {len(validations)})")
    table = pd.DataFrame.from_dict(rows, orient="index").sort_index()
    table.columns.name = "chosen checkpoint: env-steps"
    return table[sorted(table.columns)]


def walkforward_reading(walkforward: Mapping) -> dict:
    """The numbers 1.10 reads from a ``bench walkforward`` record: each year's and the pooled
    interval of agent − equal-weight buy-and-hold (``intervals``), the width of each year's
    (``widths``), the pooled interval (``pooled``) and its days, each seed's own Sharpe difference
    per year and pooled (``seed_differences``, `walkforward_seed_differences`), where validation
    chose the checkpoints (``chosen``, `teaching.walkforward_checkpoints`), the wall minutes of
    all runs, the annual volatility of the pooled buy-and-hold curve (``pooled_hold_volatility``,
    `walkforward_pooled_hold`: what the Sharpe margin is in return) and how many seeds ended below
    buy-and-hold, pooled (``seeds_below``)."""
    from ..metrics import annual_volatility

    years = walkforward["summary"]["years"]
    intervals = {str(row["year"]): row["intervals"]["agent_vs_equal_weight"] for row in years}
    pooled = walkforward["summary"]["pooled"]
    intervals["pooled"] = pooled["intervals"]["agent_vs_equal_weight"]
    widths = {year: ci["high"] - ci["low"] for year, ci in intervals.items() if year != "pooled"}
    seed_differences = walkforward_seed_differences(walkforward)
    return {"intervals": intervals, "widths": widths, "pooled": intervals["pooled"], "pooled_days": pooled["days"],
            "seed_differences": seed_differences,
            "chosen": teaching.walkforward_checkpoints(walkforward),
            "wall_minutes": sum(run["wall_seconds"] for run in walkforward["runs"]) / 60,
            "pooled_hold_volatility": annual_volatility(walkforward_pooled_hold(walkforward)),
            "seeds_below": sum(difference < 0 for difference in seed_differences["pooled"])}


def walkforward_pooled_hold(walkforward: Mapping) -> pd.Series:
    """Equal-weight buy-and-hold's test years in a ``bench walkforward`` record chained into one
    wealth curve (`bench.walkforward.chain`; buy-and-hold is the same in every seed's run)."""
    from ..bench.walkforward import chain

    runs = walkforward["runs"]
    years = sorted({run["year"] for run in runs})
    first = {year: min((run for run in runs if run["year"] == year), key=lambda run: run["seed"]) for year in years}
    return chain([pd.Series(first[year]["test_wealth"]["equal_weight_buy_and_hold"],
                            index=pd.DatetimeIndex(first[year]["test_dates"])) for year in years])


def _walkforward_curves(walkforward: Mapping) -> dict[str, tuple[list[pd.Series], pd.Series]]:
    """The daily test wealth of a ``bench walkforward`` record, per test year and pooled: for each
    key (the years as strings, then ``"pooled"``) the agent's curves, one per seed in seed order, and
    equal-weight buy-and-hold's curve. Pooled chains each seed's test years
    (`bench.walkforward.chain`) over the seeds every year has, as the record does."""
    from ..bench.walkforward import chain

    def curve(run, name):
        return pd.Series(run["test_wealth"][name], index=pd.DatetimeIndex(run["test_dates"]))

    runs = walkforward["runs"]
    years = sorted({run["year"] for run in runs})
    out = {}
    for year in years:
        group = sorted((run for run in runs if run["year"] == year), key=lambda run: run["seed"])
        out[str(year)] = ([curve(run, "agent") for run in group], curve(group[0], "equal_weight_buy_and_hold"))
    seeds = sorted(set.intersection(*({run["seed"] for run in runs if run["year"] == year} for year in years)))
    pick = {(run["year"], run["seed"]): run for run in runs}
    out["pooled"] = ([chain([curve(pick[(year, seed)], "agent") for year in years]) for seed in seeds],
                     chain([curve(pick[(year, seeds[0])], "equal_weight_buy_and_hold") for year in years]))
    return out


def walkforward_seed_differences(walkforward: Mapping) -> dict[str, list[float]]:
    """Each seed's own Sharpe(agent) − Sharpe(equal-weight buy-and-hold) in a ``bench walkforward``
    record, per test year and pooled (each seed's test years chained, `bench.walkforward.chain`),
    from the runs' daily test wealth. Their mean is the interval's ``difference``; their spread is
    what the interval, which resamples the days of the seed-averaged statistic, leaves out."""
    from ..metrics import sharpe_ratio

    return {key: [sharpe_ratio(agent) - sharpe_ratio(hold) for agent in agents]
            for key, (agents, hold) in _walkforward_curves(walkforward).items()}


def with_seed_spread(table: pd.DataFrame, reading: Mapping) -> pd.DataFrame:
    """`teaching.walkforward_table` with, beside the agent's interval, the lowest and highest of
    the seeds' own differences (`walkforward_reading`'s ``seed_differences``), row by row."""
    spread = [f"{min(values):+.2f} to {max(values):+.2f}" for values in reading["seed_differences"].values()]
    table = table.copy()
    table.insert(table.columns.get_loc("agent − buy-and-hold [95 %]") + 1, "seeds' own differences", spread)
    return table


def walkforward_two_level(walkforward: Mapping, seed: int = 0) -> dict[str, dict]:
    """Each test year's and the pooled interval of Sharpe(agent) − Sharpe(equal-weight buy-and-hold)
    of a ``bench walkforward`` record, recomputed from its runs' daily test wealth with the seeds
    resampled as well as the days (`metrics.sharpe_difference_ci(..., resample_seeds=True)`, the
    two-level bootstrap). The record's own intervals resample the days only; these use the same
    curves, the same bootstrap seed and settings, and pool the years as the record does
    (`bench.walkforward.chain`, over the seeds every year has). Keys: the years as strings, then
    ``"pooled"``; each value is a `sharpe_difference_ci` dict (``resampled`` says "seeds and days")."""
    from ..metrics import sharpe_difference_ci

    return {key: sharpe_difference_ci(agents, hold, seed=seed, resample_seeds=True)
            for key, (agents, hold) in _walkforward_curves(walkforward).items()}


def _interval_verdict(ci: Mapping, margin: float) -> str:
    """``[low, high] verdict`` of an interval against the tie ``margin``; an end within 0.01 of the
    margin gets three decimals, so that the printed ends explain the verdict."""
    from ..metrics import difference_verdict

    digits = 3 if min(abs(abs(ci["low"]) - margin), abs(abs(ci["high"]) - margin)) < 0.01 else 2
    return f"[{ci['low']:+.{digits}f}, {ci['high']:+.{digits}f}] {difference_verdict(ci['low'], ci['high'], margin)}"


TWO_LEVEL_COLUMN = "seeds and days resampled [95 %]"
"""The column `with_two_level` adds: the two-level interval and its verdict."""


def with_two_level(table: pd.DataFrame, two_level: Mapping[str, Mapping], margin: float | None = None) -> pd.DataFrame:
    """``table`` (`teaching.walkforward_table`, with or without `with_seed_spread`) with, beside the
    record's days-only interval of the agent, the interval that resamples the seeds too
    (`walkforward_two_level`) and its verdict, row by row (``margin``: the tie margin, default the
    intervals' own)."""
    cells = [_interval_verdict(ci, ci["margin"] if margin is None else margin) for ci in two_level.values()]
    table = table.copy()
    table.insert(table.columns.get_loc("agent verdict") + 1, TWO_LEVEL_COLUMN, cells)
    return table


def walkforward_method(walkforward: Mapping, reading: Mapping, live_hold: Mapping | None = None,
                       split_hold: float | None = None, split_days: tuple | None = None,
                       fine_print: Sequence[str] = (), record_name: str = "bench_walkforward.json") -> MethodNote:
    """How the walk-forward record ``record_name`` was made: its date, seeds, budget, validations, runs and wall
    time, its note if it has one, and the command that makes it again; with ``live_hold`` (year → buy-and-hold's return
    computed on this page on that test year's dates), ``split_hold`` and ``split_days``
    (buy-and-hold on chapter 1.8's test split and its first and last day), buy-and-hold beside the
    record's; ``fine_print``: sentences on the verdicts (ends of an interval close to the margin),
    one paragraph after the record's. Returns a :class:`MethodNote`."""
    paragraphs = [
        f"The record {record_name}, made on {walkforward['date'][:10]}: seeds {walkforward['seeds']}, "
        f"{walkforward['total_steps']:,} env-steps asked for per run"
        + ("" if {run["env_steps"] for run in walkforward["runs"]} == {walkforward["total_steps"]} else
           " (" + ", ".join(f"{steps:,}" for steps in sorted({run["env_steps"] for run in walkforward["runs"]}))
           + " run: a run stops at the last whole iteration)")
        + f", a validation every {walkforward['eval_every']} "
        f"iterations; {len(walkforward['runs'])} runs, {reading['wall_minutes']:.0f} minutes of wall time one after "
        f"another on {walkforward['machine']['cpu_count']} CPU cores: a wall time under whatever else ran on the "
        "machine that day, not a speed figure.",
        *([walkforward["note"]] if walkforward.get("note") else []),
        *([" ".join(fine_print)] if fine_print else []),
        "To make it again: " + teaching.reader_command(walkforward["command"], f"runs/{record_name}",
                                                       plain=teaching.ran_plain_learner(walkforward))]
    if live_hold:
        paragraphs.append(
            "Buy-and-hold on each test year's dates, computed on this page: "
            + ", ".join(f"{year} {value:+.1%}" for year, value in live_hold.items())
            + " (the record's column of the table)"
            + (f"; on 1.8's test split, {split_days[0]} to {split_days[1]}, {split_hold:+.1%}. The record's 2019 is "
               "the calendar year. 1.8's test split adds the sample's two days of 2020. Each verdict compares "
               "curves on the same days." if split_hold is not None else "."))
    return how_measured(*paragraphs)


_ENDS = {"lower": "low", "upper": "high"}


def near_margin(intervals: Mapping, verdicts: Mapping, margin: float, within: float = 0.01) -> list[dict]:
    """The ends of ``intervals`` (name → interval with ``low`` and ``high``) that lie within
    ``within`` of the margin ±``margin``: two decimals cannot show on which side of it they lie. One
    dict per such end, in order: ``name``, ``end`` ("lower" or "upper"), ``value``, ``beyond``
    (whether it lies beyond the margin), ``other`` (the other end's value) and ``turns``: whether
    moving this end just across the margin changes ``verdicts[name]`` (`metrics.difference_verdict`),
    i.e. whether that verdict is fragile."""
    from ..metrics import difference_verdict

    out = []
    for name, ci in intervals.items():
        for end, key in _ENDS.items():
            value = ci[key]
            if abs(abs(value) - margin) >= within:
                continue
            beyond = abs(value) > margin
            across = math.copysign(margin - within / 2 if beyond else margin + within / 2, value)
            moved = dict(ci, **{key: across})
            out.append({"name": name, "end": end, "value": value, "beyond": beyond,
                        "other": ci[_ENDS["upper" if end == "lower" else "lower"]],
                        "turns": difference_verdict(moved["low"], moved["high"], margin) != verdicts[name]})
    return out



def margin_details(near: Sequence[Mapping], margin: float) -> list[str]:
    """The bound details of `near_margin`, for the folded block: which end of which
    interval lies near the margin, on which side, and where the other end lies."""
    if not near:
        return []
    lines = [f"Ends near the margin. Two decimals cannot show on which side of the ±{margin} margin an end within "
             "0.01 of it lies."]
    for n in near:
        other = "upper" if n["end"] == "lower" else "lower"
        other_side = "beyond" if abs(n["other"]) > margin else "inside"
        lines.append(f"{n['name']}: the {n['end']} end, {n['value']:+.3f}, lies just "
                     f"{'beyond' if n['beyond'] else 'inside'} the margin; the {other} end, {n['other']:+.3f}, lies "
                     f"{other_side} it" + (", so the first decides the verdict." if n["turns"] else
                                          ", so the verdict does not turn on the first."))
    return lines



# --------------------------------------------------------------------------- chapter 1.11: realistic strength

def _market(case: Mapping) -> tuple:
    """A ``bench learn`` case's market: (family, ic, stocks, seed). Two cases with the same key met the same
    market (a planted-edge record holds several families at one ic and seed)."""
    return case["family"], case["ic"], case.get("stocks", 10), case["seed"]


def _test_excess(cases: Sequence[Mapping], steps: int, algo: str, planted_only: bool = False) -> dict:
    """``_market`` → ``algo``'s test excess over buy-and-hold at the end of its runs of ``steps`` env-steps
    (checkpoint chosen on validation) among ``cases``; ``planted_only`` leaves the control family out."""
    return {_market(c): c["curve"]["best"][str(steps)]["test_excess"] for c in cases
            if c.get("total_steps") == steps and c["algo"] == algo and not (planted_only and c["family"] == "none")}


def _overrides(case: Mapping) -> dict:
    """The config fields a ``bench learn`` case set with ``--set`` (its stored config without ``algo``)."""
    return {key: value for key, value in case.get("config", {}).items() if key != "algo"}


def run_length_differences(cases: Sequence[Mapping], shorter: int, longer: int, algo: str = "ppo") -> pd.DataFrame:
    """Market by market, two run lengths of one learner on the same markets: ``algo``'s test excess over
    buy-and-hold at the end of runs of ``shorter`` and of ``longer`` env-steps (checkpoints chosen on
    validation; each run length is a learner of its own, since the learning rate falls to 0 over the
    run) and the difference ``longer − shorter``. ``cases``: ``bench learn`` cases, from one record or
    several; markets with only one of the two lengths are left out."""
    short, long = _test_excess(cases, shorter, algo), _test_excess(cases, longer, algo)
    rows = [{"ic": key[1], "stocks": key[2], "market": key[3], "shorter": short[key], "longer": long[key],
             "difference": long[key] - short[key]} for key in sorted(long) if key in short]
    return pd.DataFrame(rows, columns=["ic", "stocks", "market", "shorter", "longer", "difference"])


def pooled_capture_interval(cases: Sequence[Mapping], steps: int, oracle: str = "informed_oracle", algo: str = "ppo",
                            level: float = 0.95, resamples: int = 10_000, seed: int = 0) -> dict:
    """The pooled capture of runs of ``steps`` env-steps (the agents' mean test excess over the mean
    test excess of ``oracle``, ``informed_oracle`` or ``informed_oracle_train_valid``, as `bench learn`'s
    summary pools it) with a percentile bootstrap interval over the markets: the markets are drawn with
    replacement ``resamples`` times and the ratio recomputed. A draw whose oracle gained nothing on
    average has no capture; if more than half of ``1 − level`` of the draws have none, the interval is
    undefined (``low`` and ``high`` None). Five markets make a wide interval: it says how far the pooled
    figure could move with other markets of the same kind, not how far the learner is from the oracle
    on one."""
    runs = [c for c in cases if c.get("total_steps") == steps and c["algo"] == algo]
    if not runs:
        raise ValueError(f"no {algo} runs of {steps:,} env-steps among the cases")
    agent = np.array([c["curve"]["best"][str(steps)]["test_excess"] for c in runs])
    truth = np.array([c[oracle]["test_excess"] for c in runs])
    draws = np.random.default_rng(seed).integers(0, len(runs), size=(resamples, len(runs)))
    numerator, denominator = agent[draws].mean(axis=1), truth[draws].mean(axis=1)
    defined = denominator > 1e-9
    tail = (1 - level) / 2
    reading = {"pooled": float(agent.mean() / truth.mean()) if truth.mean() > 1e-9 else None, "low": None,
               "high": None, "markets": len(runs), "undefined_share": float((~defined).mean())}
    if reading["undefined_share"] > tail:
        return reading
    ratios = np.where(defined, numerator / np.where(defined, denominator, 1.0), np.inf)  # no capture: off the top
    low, high = np.quantile(ratios, [tail, 1 - tail])
    return reading | {"low": float(low), "high": float(high) if np.isfinite(high) else None}


def _cell_columns(row: Mapping) -> dict:
    """The columns `learner_comparison` and `ablation_table` read from a `bench.learn.summarize` row."""
    return {"agent excess (mean)": row["test_excess_mean"],
            "informed oracle captured (pooled)": row.get("informed_capture_pooled"),
            "chosen on 4 years: captured (pooled)": row.get("informed_train_valid_capture_pooled"),
            "beats buy-and-hold": f"{row['beats_buy_and_hold']} of {row['seeds']}"}


def learner_comparison(before: Mapping, today: Mapping, budget: int = 300_000,
                       cells: Sequence[tuple[float, int]] = ((0.05, 30), (0.03, 30), (0.05, 100))) -> pd.DataFrame:
    """The realistic cells of two ``bench learn`` records at one budget, the plain learner's
    (``before``: GAE λ 0.95, neither baseline of chapter 3.4) beside the default learner's
    (``today``), each group of markets apart: one row per (ic, stocks, markets, learner: ``plain`` or
    ``default``), from `finrl_tutorial.bench.learn.summarize` on that group's runs of ``budget``
    env-steps (checkpoint chosen on validation). Columns: the agent's mean test excess over
    buy-and-hold, the informed oracle's (chosen on validation, and on four years) pooled capture and
    the markets beaten by the interval. (No training seconds: the records ran beside other work.)"""
    from ..bench.learn import summarize

    rows = []
    for learner, record in (("plain", before), ("default", today)):
        for ic, stocks in cells:
            runs = [c for c in record["cases"] if c["ic"] == ic and c.get("stocks", 10) == stocks
                    and c.get("total_steps") == budget and c["algo"] == "ppo"]
            for first in sorted({c["seed"] // 100 * 100 for c in runs}):
                group = [c for c in runs if c["seed"] // 100 * 100 == first]
                row = next(r for r in summarize(group) if r["select"] == "best" and r["env_steps"] == budget
                           and r["learner"] == "ppo")
                seeds = sorted(c["seed"] for c in group)
                rows.append({"ic": ic, "stocks": stocks, "markets": f"{seeds[0]}-{seeds[-1]}", "learner": learner}
                            | _cell_columns(row))
    return pd.DataFrame(rows).set_index(["ic", "stocks", "markets", "learner"]).sort_index(level=[0, 1, 2], sort_remaining=False, ascending=[False, True, True])


def same_markets(first: Mapping, second: Mapping, digits: int = 3) -> dict:
    """Whether two ``bench learn`` records ran the same markets where they share a (family, ic, stocks,
    seed): each case stores its market's test Sharpe of equal-weight buy-and-hold and of the signal
    rule, which depend on the market alone, so a market the generator built differently shows there.
    Returns ``{"shared": n, "differing": [(key, first's pair, second's pair), ...]}`` (pairs rounded to
    ``digits``)."""
    def markets(record):
        out = {}
        for case in record["cases"]:
            key = (case["family"], case["ic"], case.get("stocks", 10), case["seed"])
            out.setdefault(key, (round(case["buy_and_hold_sharpe"], digits), round(case["oracle_sharpe"], digits)))
        return out

    a, b = markets(first), markets(second)
    shared = [key for key in a if key in b]
    return {"shared": len(shared), "differing": [(key, a[key], b[key]) for key in shared if a[key] != b[key]]}


def learner_differences(before: Mapping, today: Mapping, budget: int = 300_000, algo: str = "ppo") -> pd.DataFrame:
    """Market by market, on the markets both records ran (same family, ic, stocks and seed: the same
    market), ``algo``'s test excess over buy-and-hold in ``today``'s record (the default learner)
    beside ``before``'s (the plain learner) and the difference ``default − plain``, at the end of
    runs of ``budget`` env-steps (chosen on validation). The control family ``none`` is left out."""
    old, new = (_test_excess(record["cases"], budget, algo, planted_only=True) for record in (before, today))
    rows = [{"family": key[0], "ic": key[1], "stocks": key[2], "market": key[3], "plain": old[key], "default": new[key],
             "difference": new[key] - old[key]} for key in sorted(new) if key in old]
    return pd.DataFrame(rows, columns=["family", "ic", "stocks", "market", "plain", "default", "difference"])


ABLATION_LABELS = {"market_baseline": "without the market baseline", "pathwise": "without the pathwise part",
                   "gae_lambda": "GAE λ 0.95 instead of 0.2"}
"""What each ``--set`` override of an ablation run takes away from the default learner, by config field."""


def _ablation_groups(default: Mapping, ablation: Mapping, budget: int) -> tuple[dict, dict]:
    """The cases of ``ablation`` grouped by what they take away (`ABLATION_LABELS`), after the default
    learner's cases on the same markets (``"default learner"``), and for each ablated group the
    default's test excess minus its own, market by market (runs of ``budget`` env-steps, chosen on
    validation)."""
    runs = [c for c in ablation["cases"] if c.get("total_steps") == budget and c["algo"] == "ppo"]
    markets = {_market(c) for c in runs}
    baseline = {_market(c): c for c in default["cases"]
                if c.get("total_steps") == budget and c["algo"] == "ppo" and c.get("config", {}) == {"algo": "ppo"}
                and _market(c) in markets}
    groups = {"default learner": list(baseline.values())}
    for case in runs:
        label = "; ".join(ABLATION_LABELS.get(key, f"{key}={value}") for key, value in _overrides(case).items())
        groups.setdefault(label, []).append(case)
    order = ["default learner", *ABLATION_LABELS.values()]  # one order on every page, whatever order the runs had
    groups = dict(sorted(groups.items(), key=lambda item: order.index(item[0]) if item[0] in order else len(order)))
    base = _test_excess(list(baseline.values()), budget, "ppo")
    differences = {label: [base[market] - own for market, own in _test_excess(group, budget, "ppo").items() if market in base]
                   for label, group in groups.items() if label != "default learner"}
    return groups, differences


def ablation_tests(default: Mapping, ablation: Mapping, budget: int = 300_000) -> dict[str, dict]:
    """For each learner of ``ablation`` that takes a change away, the default learner's test excess
    minus its own on the same markets, as `paired_test` reads it: ``{label: test}``."""
    return {label: paired_test(values) for label, values in _ablation_groups(default, ablation, budget)[1].items()}


def ablation_table(default: Mapping, ablation: Mapping, budget: int = 300_000) -> pd.DataFrame:
    """The default learner beside runs that each take one of its changes away (``ablation``: a
    ``bench learn`` record of runs with ``--set`` overrides), on the markets the ablation ran (same
    ic, stocks and seed: the same market) at the end of runs of ``budget`` env-steps, checkpoint
    chosen on validation. One row per learner: the markets, the mean test excess over buy-and-hold,
    the informed oracle's pooled capture (chosen on validation, and on four years), the markets
    beaten by the interval; and, for each ablated learner, the default's test excess minus its own,
    market by market: the mean with its t-interval, how many markets the default was ahead on, the
    paired t-test's p-value (`paired_test`) and that p-value after Holm's correction over the table's
    ablated rows (`teaching.holm`)."""
    from ..bench.learn import summarize

    groups, by_label = _ablation_groups(default, ablation, budget)
    rows = []
    for label, group in groups.items():
        row = next(r for r in summarize(group) if r["select"] == "best" and r["env_steps"] == budget)
        seeds = sorted(c["seed"] for c in group)
        consecutive = seeds == list(range(seeds[0], seeds[0] + len(seeds))) and len(seeds) > 2
        entry = {"learner": label, "markets": f"{seeds[0]}-{seeds[-1]}" if consecutive else ", ".join(map(str, seeds))} \
            | _cell_columns(row)
        if label != "default learner":
            differences = by_label[label]
            test = paired_test(differences) if len(differences) > 1 else teaching.t_interval(differences)
            entry |= {"default − this (mean)": test["mean"], "low": test["low"], "high": test["high"],
                      "default ahead on": f"{sum(d > 0 for d in differences)} of {len(differences)}",
                      "p (t)": test.get("p (t)", math.nan)}
        rows.append(entry)
    table = pd.DataFrame(rows).set_index("learner")
    ablated = table["p (t)"].dropna()
    table["p (Holm)"] = teaching.holm(ablated) if len(ablated) else math.nan
    return table


def non_inferiority(test: Mapping, margin: float) -> str:
    """A candidate's verdict against a reference from the paired differences' interval (candidate minus
    reference), with a margin fixed before the runs: ``keeps up`` when the interval's lower end is above
    −``margin``, ``falls behind`` when its upper end is below 0, else ``inconclusive``."""
    if test["low"] > -margin:
        return "keeps up"
    return "falls behind" if test["high"] < 0 else "inconclusive"


def network_comparison(record: Mapping, candidate: Mapping, steps: int = 300_000,
                       candidate_steps: int | None = None, margin: float = 0.05) -> dict:
    """A cheaper network against the default learner on the same markets of ``record`` (a ``bench learn``
    record holding both): the runs whose ``--set`` overrides are ``candidate`` (e.g. ``{"hidden_sizes":
    [32]}``), of ``candidate_steps`` env-steps (default ``steps``), against the runs with no overrides of
    ``steps``, checkpoints chosen on validation. Returns ``rows`` (per market: both test excesses over
    buy-and-hold, their difference, both training seconds), ``test`` (`paired_test` of candidate minus
    default), ``verdict`` (`non_inferiority` with ``margin``) and ``time_ratio``: the candidate's total
    training seconds over the default's, on the same markets."""
    candidate_steps = candidate_steps or steps
    wanted = {key: list(value) if isinstance(value, (list, tuple)) else value for key, value in candidate.items()}

    def runs(overrides: Mapping, length: int) -> dict:
        return {_market(c): c for c in record["cases"] if c["algo"] == "ppo" and c.get("total_steps") == length
                and _overrides(c) == overrides}

    default, cheaper = runs({}, steps), runs(wanted, candidate_steps)
    rows = [{"stocks": key[2], "market": key[3],
             "default": default[key]["curve"]["best"][str(steps)]["test_excess"],
             "candidate": cheaper[key]["curve"]["best"][str(candidate_steps)]["test_excess"],
             "default seconds": default[key]["train_seconds"], "candidate seconds": cheaper[key]["train_seconds"]}
            for key in sorted(default) if key in cheaper]
    if len(rows) < 2:
        raise ValueError(f"fewer than two markets hold both the default ({steps:,}) and {wanted} ({candidate_steps:,})")
    table = pd.DataFrame(rows)
    table["difference"] = table["candidate"] - table["default"]
    test = paired_test(table["difference"].tolist())
    return {"rows": table, "test": test, "verdict": non_inferiority(test, margin), "margin": margin,
            "time_ratio": float(table["candidate seconds"].sum() / table["default seconds"].sum())}


def network_table(record: Mapping, candidate: Mapping, lengths: Sequence[tuple[int, int]],
                  margin: float = 0.05) -> pd.DataFrame:
    """One row per (``default steps``, ``candidate steps``) pair of ``lengths``, as `network_comparison`
    reads it: the markets, the mean difference in test excess (candidate minus default) with its 95 %
    t-interval, the markets where the candidate is ahead, its training time over the default's and
    the verdict."""
    rows = {}
    for steps, candidate_steps in lengths:
        reading = network_comparison(record, candidate, steps, candidate_steps, margin)
        test = reading["test"]
        rows[f"{candidate_steps:,} vs {steps:,} env-steps"] = {
            "markets": test["n"], "difference": test["mean"], "low": test["low"], "high": test["high"],
            "ahead": f"{test['positive']} of {test['n']}", "training time ×": reading["time_ratio"],
            "verdict": reading["verdict"]}
    return pd.DataFrame.from_dict(rows, orient="index")


def style_ablation(table: pd.DataFrame):
    """`ablation_table` for the page: excess in percent, differences in percentage points, the difference's 95 %
    t-interval as one column, captures to two decimals, p-values to three."""
    shown = table.drop(columns=["low", "high"])
    shown.insert(shown.columns.get_loc("default − this (mean)") + 1, "95 % interval",
                 ["" if pd.isna(low) else f"[{teaching.points(low)}, {teaching.points(high)}]"
                  for low, high in zip(table["low"], table["high"])])
    shown = shown.rename(columns={"default − this (mean)": "default − this (mean, points)"})
    return shown.style.format({"agent excess (mean)": "{:+.1%}", "default − this (mean, points)": teaching.points, "informed oracle captured (pooled)": "{:.2f}",
                                         "chosen on 4 years: captured (pooled)": "{:.2f}",
                                         "p (t)": teaching.p_value, "p (Holm)": teaching.p_value}, na_rep="")


def style_comparison(table: pd.DataFrame):
    """`learner_comparison` for the page: excess in percent, captures to two decimals."""
    return table.style.format_index(lambda ic: f"{ic:g}", level="ic").format(
        {"agent excess (mean)": "{:+.1%}", "informed oracle captured (pooled)": "{:.2f}",
         "chosen on 4 years: captured (pooled)": "{:.2f}"}, na_rep="—")


def realistic_provenance(realistic: Mapping) -> pd.DataFrame:
    """How each cell of the realistic ``bench learn`` record ran: one row per (cell, run length, ``--set``
    overrides) with the markets, the start (UTC), the markets each command ran at once (``--jobs``) and the range of wall minutes
    per run; a column ``--set`` where any run of the record overrode the learner's fields."""
    runs = list({run["command"]: run for run in realistic["runs"]}.values())  # each run of the record once
    rows = []
    for run in runs:
        arguments = run["arguments"]
        length = max(arguments["budgets"])  # the run's length; the shorter budgets are checks along the way
        overrides = parse_overrides(list(arguments.get("set") or []))
        for ic in arguments["ic"]:
            for stocks in arguments["stocks"]:
                first = arguments.get("first_seed", 0)
                seeds = range(first, first + arguments["seeds"])  # this run's markets, not another run's of the cell
                minutes = [case["wall_seconds"] / 60 for case in realistic["cases"]
                           if (case["ic"], case["stocks"], case["total_steps"]) == (ic, stocks, length)
                           and case["seed"] in seeds
                           and _overrides(case) == overrides]
                rows.append({"cell": f"IC {ic:g} × {stocks} stocks", "env-steps per run": f"{length:,}",
                             "--set": " ".join(arguments.get("set") or []),
                             "markets": len(minutes), "started (UTC)": run["machine"]["date"][:16].replace("T", " "),
                             "markets at once (--jobs)": arguments["jobs"],
                             "wall minutes per run": f"{min(minutes):.0f}-{max(minutes):.0f}" if minutes else ""})
    table = pd.DataFrame(rows).set_index("cell")
    return table if (table["--set"] != "").any() else table.drop(columns="--set")


def realistic_method(realistic: Mapping, provenance: pd.DataFrame) -> MethodNote:
    """How the realistic record was made (``bench_learn_realistic.json``): the learner and markets,
    the threads and the load the wall and training minutes were measured under, the provenance
    table, the record's own note and the commands that make one cell and the full grid again.
    Returns a :class:`MethodNote`."""
    arguments = realistic["runs"][0]["arguments"]
    held = sorted({(case["ic"], case["stocks"]) for case in realistic["cases"]}, key=lambda c: (c[1], -c[0]))
    held_text = ", ".join(f"IC {ic:g} × {stocks} stocks" for ic, stocks in held)
    commands = "; ".join(f"`{command}`" for command in realistic["note"]["commands"])
    return how_measured(
        f"PPO with the package defaults"
        + (" of that day (the plain learner)" if teaching.ran_plain_learner(realistic) else "")
        + f" on factor markets of {arguments['days']:,} days, market seed = learner seed; "
        f"each run on {arguments['threads']} torch thread of a {realistic['machine']['cpu_count']}-core CPU beside "
        "other processes, so the wall times and the training minutes of the tables are that load's.",
        f"The record holds {len(held)} cells: {held_text}, five markets each (the table below: one row per cell "
        f"and run length). These commands made them with the package of that day"
        + (", whose defaults were the plain learner's (run now, they need the plain learner's settings, as in the "
           "commands below)" if teaching.ran_plain_learner(realistic) else "") + f": {commands}.",
        "The record's own note: " + realistic["note"]["what_ran"],
        "To make one cell again: " + teaching.reader_command(realistic["note"]["commands"][0], "runs/learn_ic005_s30",
                                                             plain=teaching.ran_plain_learner(realistic)),
        f"The full grid, of which the record holds these {len(held)} cells: "
        + teaching.reader_command(realistic["note"]["full_grid_command"], "runs/bench_learn_grid",
                                  plain=teaching.ran_plain_learner(realistic)),
        tables=[provenance])



def style_realistic(cells: pd.DataFrame):
    """A `teaching.realistic_learning_table` formatted for the page (captures to two decimals, excess
    returns as percentages, a capture whose yardstick earned no excess shown as ``undefined``)."""
    captures = ("informed oracle captured (pooled)", "chosen on 4 years: captured (pooled)",
                "signal rule captured (pooled)")
    excess = ("agent excess", "informed oracle excess", "chosen on 4 years: excess", "signal rule excess")
    return cells.style.format_index(lambda ic: f"{ic:g}", level="ic").format(
        {c: "{:.2f}" for c in captures if c in cells} | {c: "{:+.1%}" for c in excess if c in cells}
        | ({"env-steps": "{:,}"} if "env-steps" in cells else {}), na_rep="undefined")  # a capture of no excess



def style_oracles(oracles: pd.DataFrame):
    """A `teaching.informed_oracle_table` (or a slice of its columns) formatted for the page."""
    percent = [c for c in oracles.columns if "excess" in c]
    return oracles.style.format_index(lambda ic: f"{ic:g}", level="ic").format({c: "{:+.1%}" for c in percent})


def same_rule_rerun(realistic: Mapping, env_config) -> pd.DataFrame:
    """The markets of a realistic ``bench learn`` record where the oracle chosen on validation and the
    one chosen on four years are the same rule: that rule's test excess over buy-and-hold in each of
    the record's two columns, and run again now on the market rebuilt from its spec (the rule reads
    the true expected returns and, for mean-variance, the training split's covariance, whatever the
    window that chose it). Indexed by (ic, stocks, market (seed))."""
    from ..backtest import oracle
    from ..backtest.runner import buy_and_hold_baseline
    from ..data.synthetic import SyntheticSpec, make_synthetic

    rows = []
    for m in realistic["oracles"]["markets"]:
        if m.get("train_valid_rule") != m["informed_rule"]:
            continue
        synthetic = make_synthetic(SyntheticSpec(family="factor", ic=m["ic"], seed=m["seed"], num_stocks=m["stocks"],
                                                 num_days=realistic["cases"][0]["days"]))
        rule = next(r for r in oracle.informed_rules(m["stocks"]) if r.name == m["informed_rule"])
        now = oracle.excess_return(oracle.informed_record(synthetic, rule, "test", env_config),
                                   buy_and_hold_baseline(synthetic.market.test, env_config))
        rows.append({"ic": m["ic"], "stocks": m["stocks"], "market (seed)": m["seed"], "rule": rule.name,
                     "kind": rule.kind, "one-year column": m["informed_test_excess"],
                     "four-year column": m["train_valid_test_excess"], "now": now})
    return pd.DataFrame(rows).set_index(["ic", "stocks", "market (seed)"])


def budget_table(record: Mapping, ic: float, stocks: int, learner: str = "ppo", select: str = "best") -> pd.DataFrame:
    """`teaching.budget_table` of one cell of a realistic ``bench learn`` record, with the pooled
    capture of the oracle chosen on four years (train and validation together) beside the one
    chosen on validation: one row per (run length, env-steps)."""
    table = teaching.budget_table(record, ic, stocks, learner, select)
    four_years = {(row["run_steps"], row["env_steps"]): row.get("informed_train_valid_capture_pooled")
                  for row in record["summary"]
                  if row["select"] == select and row["learner"] == learner and row["ic"] == ic
                  and row.get("stocks", 10) == stocks and row["env_steps"] > 0}
    position = table.columns.get_loc("informed oracle captured (pooled)") + 1
    table.insert(position, "chosen on 4 years: captured (pooled)", [four_years.get(key) for key in table.index])
    return table


def budget_reading(table: pd.DataFrame, default_steps: int) -> dict:
    """The rows of a `budget_table` the text reads: the longest run length (``longest``) and its
    rows (``long_run``), its end (``end``), the end of the run of ``default_steps`` (``short``) and
    the longer run after as many env-steps (``at_default``, None if it was not read there)."""
    longest = int(table.index.get_level_values("run length").max())
    long_run = table.loc[longest]
    return {"longest": longest, "long_run": long_run, "end": long_run.iloc[-1],
            "short": table.loc[default_steps].iloc[-1], "default_steps": default_steps,
            "at_default": long_run.loc[default_steps] if default_steps in long_run.index else None}



def ic_scale(ics: Sequence[float], env_config, spec=None) -> dict:
    """What an information coefficient means in the benchmark's markets, from the market model and
    the env's costs: ``noise``, the standard deviation of the unpredictable part of a daily return;
    ``moves``, how far a signal one standard deviation from its mean moves the next day's expected
    return at each of ``ics`` (the loading, `SyntheticSpec.loading`); ``round_trip``, what buying and
    later selling a stock costs (commission on both sides, stamp duty, transfer fee and slippage at
    the market's first date; the ¥5 minimum commission left out); and ``days``, how many days of
    such a move pay for one round trip. ``spec``: the market (default `SyntheticSpec()`, the
    benchmark's volatilities)."""
    from dataclasses import replace

    from ..data.synthetic import START_DATE, SyntheticSpec

    spec = spec or SyntheticSpec()
    fees = env_config.fees
    rates = fees.day_rates([START_DATE], ["000001.SZ"])
    round_trip = float(2 * fees.commission_rate + rates["stamp_buy"][0, 0] + rates["stamp_sell"][0, 0]
                       + 2 * rates["transfer_value"][0, 0] + 2 * env_config.slippage)
    moves = {ic: replace(spec, family="factor", ic=ic).loading for ic in ics}
    return {"noise": spec.noise_volatility, "moves": moves, "round_trip": round_trip,
            "days": {ic: round_trip / move for ic, move in moves.items()}}




def style_budgets(table: pd.DataFrame):
    """A `budget_table` formatted for the page."""
    two = {c: "{:.2f}" for c in ("informed oracle captured (pooled)", "chosen on 4 years: captured (pooled)",
                                 "lowest market", "highest market")}
    return table.style.format_index("{:,}", level=[0, 1]).format(
        two | {"agent excess": "{:+.1%}", "training minutes": "{:.1f}"}, na_rep="")


def edge_box(syn_steps: int, captured: float, syn_versus: Mapping, split_hold: float, planted: pd.DataFrame,
             ppo_vs_a2c: Mapping, versus_rule: pd.DataFrame, wf_intervals: Mapping, wf_verdicts: Mapping,
             near: Sequence[Mapping], margin: float, cells: pd.DataFrame, per_market: pd.DataFrame,
             seeds_below: tuple[int, int] | None = None, two_level: Mapping | None = None,
             default_learner: Mapping[str, str] | None = None,
             walk_learner: str = "plain learner (bench_walkforward.json)",
             planted_label: str = "plain learner (bench_learn.json)"):
    """The box at the end of chapter 1's second page: this run's planted edge and buy-and-hold on
    1.8's test split; the recorded planted edges (`planted_summary`), PPO against A2C (`paired_test`
    of `paired_excess`), the agent against the signal rule over all families (the learners that beat
    it named in ``shows``), the walk-forward intervals and verdicts (a verdict that turns on an end
    near the margin, from ``near`` (`near_margin`), marked fragile; with ``seeds_below``,
    ``(below, seeds)``, how many seeds ended below buy-and-hold, pooled; with ``two_level``
    (`walkforward_two_level`), the same intervals with the seeds resampled too), and the pooled
    capture of the informed oracle at realistic strength with the markets the agent was ahead on; with
    ``default_learner`` (`default_learner_rows`), the default learner's records after them.
    ``walk_learner`` and ``planted_label`` name the learner and record of the walk-forward and the
    planted-edge rows; with no realistic ``cells`` (None or empty) their row is left out. Returns a
    `MeasuredBox`."""
    fragile = {n["name"] for n in near if n["turns"]}
    pooled_rule = versus_rule.xs("all families", level="family")
    beats = [learner.upper() for learner, row in pooled_rule.iterrows() if row["verdict"] == "beats"]

    families = versus_rule.drop(index="all families", level="family")
    called = int((families["verdict"] != "inconclusive").sum())

    def ahead(ic, stocks):
        rows = per_market.loc[(ic, stocks)]
        return int((rows["agent test excess"] > rows["informed test excess"]).sum())

    realistic = {} if cells is None or not len(cells) else {
        "realistic strength, informed-oracle capture, pooled, no interval, plain learner (bench_learn_realistic.json)": "; ".join(
            f"IC {ic:g} × {stocks}: {row['informed oracle captured (pooled)']:.2f}, the agent ahead of the oracle "
            f"on {ahead(ic, stocks)} of {row['markets']} markets" for (ic, stocks, _), row in cells.iterrows())}
    return _measured_box(
        this_run={
            f"planted edge (IC 0.10, one market), {syn_steps:,} env-steps: signal-rule capture":
                f"{captured:.0%}; Sharpe vs buy-and-hold {teaching._interval_text(syn_versus)}: {syn_versus['verdict']}",
            "equal-weight buy-and-hold, 1.8's test split, full costs, dividends only where the prices reveal them (1.4)": f"{split_hold:+.1%}",
        },
        recorded={
            **planted_rows(planted_label, planted, ppo_vs_a2c, versus_rule),
            **walkforward_row(f"walk-forward, agent vs buy-and-hold, {walk_learner}", wf_intervals, wf_verdicts,
                              fragile, margin, seeds_below, two_level),
            **({f"walk-forward, {walk_learner}, seeds and days resampled (from the record's daily curves)": ", ".join(
                f"{year} {_interval_verdict(ci, margin)}" for year, ci in two_level.items())} if two_level else {}),
            **realistic,
            **(default_learner or {}),
        },
        shows="that the same code finds planted edges and, on strong ones, "
              + (f"{' and '.join(beats)} beat{'s' if len(beats) == 1 else ''} the signal rule over all signal families "
                 "together" if beats else "earns more than the signal rule, pooled")
              + f" ({'no single family does' if not called else f'{called} single (learner, family) row does'} after "
                "Holm's correction); what three test "
                "years of the sample say, each with "
                "its interval",
        does_not_show="an edge on real A-shares: no walk-forward year shows either learner ahead of buy-and-hold; nor, at "
                      "IC 0.03, how close the agent comes to the best possible: the informed oracle, chosen on one "
                      "year or on four, is no ceiling there",
        title="What this page measured",
    )


def planted_rows(label: str, planted: pd.DataFrame, ppo_vs_a2c: Mapping, versus_rule: pd.DataFrame) -> dict[str, str]:
    """A planted-edge record as two rows of `edge_box`, ``label`` naming its learner and record: the
    pooled signal-rule captures (``planted``: `planted_summary` without the control family) with PPO
    minus A2C (`paired_test` of `paired_excess`), and the agent against the signal rule over all
    families (``versus_rule``: `teaching.signal_rule_comparison`) with the verdicts per family."""
    captures = planted["signal-rule capture (pooled)"]
    wilcoxon = f", Wilcoxon p = {ppo_vs_a2c['p (Wilcoxon)']:.2f}" if "p (Wilcoxon)" in ppo_vs_a2c else ""
    pooled_rule = versus_rule.xs("all families", level="family")
    families = versus_rule.drop(index="all families", level="family")
    per_family = ", ".join(f"{verdict} {int((families['verdict'] == verdict).sum())} of {len(families)}"
                           for verdict in sorted(set(families["verdict"])))
    return {
        f"planted edges, PPO and A2C, {label}":
            f"signal-rule capture (pooled) {captures.min():.2f}–{captures.max():.2f}; PPO minus A2C in test excess "
            f"on common markets {teaching.points_text(ppo_vs_a2c)} "
            f"({ppo_vs_a2c['n']} markets{wilcoxon})",
        f"agent excess minus the signal rule's, per market, all signal families, {label}": "; ".join(
            f"{learner.upper()} {teaching.points_text(row, 'mean difference')} over "
            f"{row['markets']} markets: {row['verdict']}" for learner, row in pooled_rule.iterrows())
            + f"; per (learner, family): {per_family}",
    }


WF_VERDICT_COLUMNS = ["buy-and-hold Sharpe", "agent Sharpe (seeds)", "untrained Sharpe", "agent − buy-and-hold [95 %]",
                      "agent verdict", "untrained − buy-and-hold [95 %]", "untrained verdict"]
"""The columns of a walk-forward table (`teaching.walkforward_table` with `with_seed_spread` and
`with_two_level`) that carry the verdicts; the others describe the folds and the seeds' spread."""


def walkforward_row(label: str, walk_intervals: Mapping, walk_verdicts: Mapping, fragile: Sequence[str] = (),
                    margin: float | None = None, seeds_below: tuple[int, int] | None = None,
                    two_level: Mapping | None = None) -> dict[str, str]:
    """One walk-forward as a row of `edge_box`: each year's interval and verdict (``walk_intervals``:
    `walkforward_reading`'s intervals; ``walk_verdicts``: `teaching.walkforward_verdicts`), the years
    in ``fragile`` marked as turning on an end near the tie ``margin`` (`near_margin`), and with
    ``seeds_below``, ``(below, seeds)``, how many seeds ended below buy-and-hold, pooled. With
    ``two_level`` (`walkforward_two_level`) and ``margin``, a year whose verdict does not hold once the
    seeds are resampled too says so beside it: a verdict that rests on the days of one seed's curve is
    not read alone."""
    from ..metrics import difference_verdict

    def caveat(year, verdict):
        if not two_level or margin is None or year not in two_level:
            return ""
        both = difference_verdict(two_level[year]["low"], two_level[year]["high"], margin)
        return "" if both == verdict else f" (with the seeds resampled too: {both})"

    text = ", ".join(f"{year} {teaching._interval_text(walk_intervals[year])} {verdict}" + caveat(year, verdict)
                     + (f" (fragile: it turns on an end within 0.01 of the ±{margin} margin)" if year in fragile else "")
                     for year, verdict in walk_verdicts.items())
    if seeds_below:
        text += f"; pooled, {seeds_below[0]} of {seeds_below[1]} seeds below buy-and-hold"
    return {label: text}


def default_learner_rows(job: Mapping, comparison: pd.DataFrame, paired_all: Mapping | None = None) -> dict[str, str]:
    """The default learner's records as rows of `edge_box`: the five-seed run on the sample (``job``,
    its two intervals), the informed-oracle capture per realistic cell and group of markets
    (``comparison``: `learner_comparison`), and its test excess minus the plain learner's on the
    markets both ran (``paired_all``: `paired_test`; None leaves that row out). Its walk-forward is
    `edge_box`'s own rows."""
    days, both = job["sharpe_vs_buy_and_hold"], job["sharpe_vs_buy_and_hold_seeds_and_days"]
    default = comparison.xs("default", level="learner")
    return {
        "default learner, the sample's test split, five seeds (main_job_pathwise_5seeds_report.json)":
            f"{teaching._interval_text(days)} {stored_verdict(days)}; seeds and days resampled "
            f"[{both['low']:+.2f}, {both['high']:+.2f}] {stored_verdict(both)}",
        "default learner, informed-oracle capture, pooled (bench_learn_pathwise.json)": "; ".join(
            f"IC {ic:g} × {stocks} (markets {markets}): "
            + ("—" if pd.isna(row["informed oracle captured (pooled)"]) else f"{row['informed oracle captured (pooled)']:.2f}")
            + f", beats buy-and-hold on {row['beats buy-and-hold']}" for (ic, stocks, markets), row in default.iterrows()),
        **({} if paired_all is None else {"default minus plain learner, test excess, the markets both ran":
            f"{teaching.points_text(paired_all)} "
            f"({int(paired_all['n'])} markets, ahead on {int(paired_all['positive'])})"}),
    }


def difference_rows(tests: Mapping[str, Mapping]) -> dict[str, str]:
    """Paired comparisons (``{label: paired_test or t_interval result}``) as rows of a box: the mean
    with its 95 % t-interval, the markets, how many differences were positive and, where computed,
    the t-test's p-value."""
    def row(test):
        text = f"{teaching.points_text(test)} ({int(test['n'])} markets"
        text += f", ahead on {int(test['positive'])}" if "positive" in test else ""
        if "p (t)" not in test:
            return text + ")"
        return text + (", p (t) < 0.001)" if test["p (t)"] < 0.001 else f", p (t) = {test['p (t)']:.3f})")
    return {label: row(test) for label, test in tests.items()}


def changes_box(held: pd.Series, differences: Mapping[str, Mapping], plain_rows: Mapping[str, str] | None = None):
    """The box at the end of chapter 1's third page: this run's share of the stocks an untrained
    sampled portfolio holds (``held``, by number of stocks); the default learner minus the plain one
    and minus each ablated learner, market by market (``differences``: `difference_rows`), then any
    further rows (``plain_rows``: `planted_rows`, `walkforward_row`, ...). Returns a `MeasuredBox`."""
    return _measured_box(
        this_run={"untrained default policy, share of the stocks a sampled portfolio holds (median, effective holdings)":
                  ", ".join(f"{share:.0%} of {stocks}" for stocks, share in held.items())},
        recorded={**difference_rows(differences), **(plain_rows or {})},
        shows="what the default learner's three changes are worth, market by market on the same markets, seeds and "
              "budgets: most at 100 stocks, on markets that chose nothing as on those that did, and which change "
              "cost most when taken away",
        does_not_show="why, beyond one mechanism that would predict it; what two changes taken away together cost; "
                      "or that the changes help on real A-shares, where neither learner finds a gain",
        title="What this page measured",
    )


def realistic_rows(label: str, cells: pd.DataFrame, longer: Mapping[tuple, Mapping] | None = None) -> dict[str, str]:
    """A realistic ``bench learn`` record as rows of a measured box, ``label`` naming its learner and
    record: one row per cell of ``cells`` (`teaching.realistic_learning_table`: the runs of the default
    length) and one per longer run (``longer``: ``{(ic, stocks): budget_reading(...)}``), each with the
    informed oracle's capture (pooled) and the markets on which the agent beat buy-and-hold."""
    def reading(row) -> str:
        return (f"informed-oracle capture (pooled) {row['informed oracle captured (pooled)']:.2f}; "
                f"beats buy-and-hold on {row['beats buy-and-hold']}")

    rows = {f"IC {ic:g} × {stocks} stocks, {int(row['markets'])} markets, {int(row['env-steps']):,} env-steps, {label}":
            reading(row) for (ic, stocks, _), row in cells.iterrows()}
    for (ic, stocks), read in (longer or {}).items():
        rows[f"IC {ic:g} × {stocks} stocks, run to {read['longest']:,} env-steps, {label}"] = reading(read["end"])
    return rows


def plain_records_box(rows: Mapping[str, str]):
    """The box at the end of the plain learner's reference page: its stored records only (``rows``:
    `planted_rows`, `walkforward_row`, `realistic_rows`). Returns a `MeasuredBox`."""
    return _measured_box(
        this_run={},
        recorded=dict(rows),
        shows="what the package's earlier default learner found on its own: the strong planted edges, nothing on "
              "the real sample, and little at 100 stocks within the default budget",
        does_not_show="how it compares with the default learner (chapter 1.12 pairs them market by market), or "
                      "anything about the package's current default beyond what chapter 1 measures",
        title="What this page read",
    )


def plot_differences(tests: Mapping[str, Mapping], ax, title: str = "", level: float = 0.05) -> pd.Series:
    """A forest plot on ``ax``: each paired comparison (``{label: paired_test result}``, in the
    order given, top to bottom) as its mean with the 95 % t-interval, a line at 0 (no difference),
    the markets, the count ahead and the Holm-adjusted p-value under each row's label.

    The intervals are uncorrected, so the colour does not come from them alone: a row is filled blue
    when its t-test p-value stays below ``level`` after Holm's correction over *all* the figure's
    rows (`teaching.holm`), hollow blue when only its uncorrected interval excludes 0, grey when the
    interval holds 0. Returns the adjusted p-values, in the order of ``tests``."""
    labels = list(tests)
    adjusted = teaching.holm({k: tests[k]["p (t)"] for k in labels})
    y = np.arange(len(labels))[::-1]
    means = np.array([tests[k]["mean"] for k in labels])
    lows, highs = np.array([tests[k]["low"] for k in labels]), np.array([tests[k]["high"] for k in labels])
    clear = (lows > 0) | (highs < 0)
    called = adjusted.to_numpy() < level
    ax.axvline(0, color="grey", lw=1, zorder=0)
    styles = ((called, "tab:blue", "tab:blue", f"below {level:.0%} after Holm over all {len(labels)} rows"),
              (clear & ~called, "tab:blue", "white", "uncorrected interval excludes 0, not after Holm"),
              (~clear, "tab:grey", "tab:grey", "interval holds 0"))
    for keep, color, face, label in styles:
        if keep.any():
            ax.errorbar(100 * means[keep], y[keep], xerr=[100 * (means - lows)[keep], 100 * (highs - means)[keep]],
                        fmt="o", color=color, markerfacecolor=face, markersize=7, capsize=3, label=label)
    counts = [f"{int(tests[k]['n'])} markets" + (f", ahead on {int(tests[k]['positive'])}" if "positive" in tests[k] else "")
              + f", Holm p {adjusted[k]:.3f}" for k in labels]
    ax.set_yticks(y, [f"{label}\n({count})" for label, count in zip(labels, counts)], fontsize="small")
    ax.set_xlabel("difference in test excess over buy-and-hold (percentage points):\nmean and 95 % t-interval, uncorrected")
    ax.grid(axis="x", alpha=0.3)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.13), fontsize="small")  # below: no row hides under it
    ax.set_title(title or "Default learner minus the other, market by market", fontsize="medium")
    return adjusted


# --------------------------------------------------------------------------- chapter 2: the knobs

def live_runs_table(live: Mapping) -> pd.DataFrame:
    """The runs of a live ``run_sweep`` result, one row per (variant, seed): the work as it follows
    from the config (samples and gradient steps per iteration, gradient steps in all), the env-steps
    of each validation, how far the updates moved the policy (mean approximate KL and clip fraction)
    and the final and best validation Sharpe."""
    return pd.DataFrame(
        {"variant": run["variant"], "seed": run["seed"], "samples / iteration": run["rollout_size"],
         "iterations": run["iterations"], "grad steps / iteration": run["gradient_steps_per_iteration"],
         "grad steps in all": run["iterations"] * run["gradient_steps_per_iteration"],
         "validated at env-steps": ", ".join(f"{e['env_steps']:,}" for e in run["evaluations"]),
         "approx KL": run["approx_kl_mean"], "clip fraction": run["clip_fraction_mean"],
         "final valid Sharpe": run["final_valid_sharpe"], "best valid Sharpe": run["best_valid_sharpe"]}
        for run in live["runs"]).set_index(["variant", "seed"])


def style_live_runs(runs: pd.DataFrame):
    """A `live_runs_table` formatted for the page."""
    return runs.style.format({"grad steps in all": "{:,}", "approx KL": "{:.2g}", "clip fraction": "{:.3f}",
                              "final valid Sharpe": "{:.2f}", "best valid Sharpe": "{:.2f}"})


TRAINER_LABEL = "in-process trainer (64 envs)"
"""The ``bench scale`` record's row that *is* the base configuration: 64 envs, one thread, default knobs."""


def trainer_base_cost(trainer_records: Sequence[Mapping]) -> pd.Series:
    """The base configuration's rollout and update seconds per 10,000 samples in the ``bench
    scale`` record (its in-process trainer with 64 envs on one thread)."""
    from .scale import phase_table

    phases = phase_table(trainer_records, layouts=("trainer",))
    return phases.loc[TRAINER_LABEL, ["rollout", "update"]] * 10_000 / phases.loc[TRAINER_LABEL, "samples"]


def plot_cost(ax, per_10k: pd.DataFrame, trainer_base: pd.Series, rounds: int, record_name: str):
    """Stacked bars on ``ax``: each variant's median rollout (blue) and update (red) seconds per
    10,000 samples over the rounds, and last the trainer record's base configuration (``record_name``)."""
    shown = pd.concat([per_10k, trainer_base.to_frame("base, trainer record (chapter 8.4)").T])
    shown.iloc[::-1].plot.barh(stacked=True, ax=ax, color=["tab:blue", "tab:red"])
    ax.set_xlabel(f"seconds per 10,000 samples, 1 thread (this machine: median of {rounds} interleaved rounds; "
                  "last bar: the trainer record, another run)")
    ax.set_title("Where the time goes: rollout (blue) and update (red)")
    ax.grid(axis="x", alpha=0.3)
    return ax


def cost_reading(timed: pd.DataFrame) -> dict:
    """What timed rounds say (``timed``: one row per variant and round, rollout and update seconds
    per 10,000 samples): the median per variant (``per_10k``), each variant's update cost as a
    multiple of the base's (``update``), the range of that ratio over the rounds, each round against
    the same round's base (``rounds_low``, ``rounds_high``), and the timing noise: the slowest
    variant's median rollout over the fastest's (``noise``), the same work in every variant."""
    per_10k = timed.groupby("variant")[["rollout", "update"]].median().loc[list(dict.fromkeys(timed["variant"]))]
    by_round = timed.pivot(index="round", columns="variant", values="update")
    round_ratio = by_round.div(by_round["base"], axis=0)
    update = per_10k["update"] / per_10k.loc["base", "update"]
    return {"per_10k": per_10k, "update": update, "rounds_low": round_ratio.min(), "rounds_high": round_ratio.max(),
            "noise": float(per_10k["rollout"].max() / per_10k["rollout"].min())}


def _beyond_noise(ratio: float, noise: float) -> bool:
    """Whether ``ratio`` lies further from 1 than the timing ``noise``, as both read on the page (two
    decimals): above the noise, or below its inverse."""
    shown = round(float(ratio), 2)
    return shown > round(noise, 2) or shown < round(1 / noise, 2)


def update_cost_table(reading: Mapping, variants: Mapping[str, dict]) -> pd.DataFrame:
    """One row per variant other than the base: its gradient steps per sample and its measured update
    cost per sample, both relative to the base, the range of the cost ratio over the rounds, and
    whether the cost lies beyond the timing noise of `cost_reading`."""
    from ..agents import make_config

    def steps_per_sample(change):
        config = make_config("ppo", **change)
        return config.repeat_times * math.ceil(config.rollout_size / min(config.batch_size, config.rollout_size)) \
            / config.rollout_size

    base = steps_per_sample(variants["base"])
    rows = [{"variant": name, "grad steps per sample ÷ base": steps_per_sample(change) / base,
             "update cost ÷ base": reading["update"][name],
             "÷ base, range over the rounds": f"{reading['rounds_low'][name]:.1f}-{reading['rounds_high'][name]:.1f}",
             "beyond the timing noise": "yes" if _beyond_noise(reading["update"][name], reading["noise"]) else "no"}
            for name, change in variants.items() if name != "base"]
    return pd.DataFrame(rows).set_index("variant")



def cost_method(load_before: float, load_after: float, trainer_records: Sequence[Mapping],
                per_10k: pd.DataFrame, trainer_base: pd.Series, rounds: int, record_name: str) -> MethodNote:
    """How 2.2 was timed: the interleaved rounds, this machine against the trainer record's (cores,
    torch, load average; whether the operating system is the same, without its version string) and
    the base's seconds per 10,000 samples on both. Returns a :class:`MethodNote`."""
    import os
    import platform

    import torch

    row = next(r for r in trainer_records if r["layout"] == "trainer" and r["num_envs"] == 64)
    here = {"cores": os.cpu_count(), "platform": platform.platform(), "torch": torch.__version__}
    there = {"cores": row["cpu_count"], "platform": row["platform"], "torch": row["torch"]}
    same = here == there  # the record names cores, platform and torch, not the processor
    return how_measured(
        f"Each variant was timed once per round, {rounds} rounds one after another, so a busy spell of the machine "
        "hits every variant alike; the figure shows the median of the rounds, the table each round against the "
        "same round's base.",
        f"This machine: {_count(here['cores'], 'core')}, torch {here['torch']}; load average "
        f"{load_before:.1f} before the rounds, {load_after:.1f} after. The trainer record ({record_name}): "
        f"{_count(there['cores'], 'core')}, torch {there['torch']}; load average {row['loadavg'][0]:.1f} "
        f"when its trainer rounds ended ({row['date'][:16].replace('T', ' ')} UTC).",
        f"The base per 10,000 samples: {per_10k.loc['base'].sum():.2f} s here, {trainer_base.sum():.2f} s in the record"
        + (" (the same cores, operating system and torch; the record does not name its processor)." if same else
           " (another machine: the seconds can differ by hardware as well as by load).")
        + " " + _absolute_times(trainer_base.sum(), per_10k.loc["base"].sum()))


def _absolute_times(record_seconds: float, here_seconds: float, close: float = 0.05) -> str:
    """How the record's seconds per 10,000 samples stand to this run's, in words: within ``close``
    (relative) they are called about the same, since load alone moves them that far; either way only
    the record's ratios are read."""
    gap = record_seconds / here_seconds - 1
    where = (f"within {100 * close:g} % of this run's" if abs(gap) <= close
             else f"{100 * abs(gap):.0f} % {'slower' if gap > 0 else 'faster'} than this run's")
    return (f"The record's absolute times are {where}; load moves them between runs, so only the ratios within the "
            "record (how its bar splits between rollout and update) are read.")



def timing_table(cost: Mapping, trainer_base: pd.Series, record_name: str) -> pd.DataFrame:
    """2.2's timings read two ways, beside the trainer record's: the update's share of the base's time,
    and the timing noise of `cost_reading` (the slowest variant's median rollout over the fastest's,
    the same work in every variant) with the bounds an update ratio must pass to count."""
    per_10k, noise = cost["per_10k"], cost["noise"]
    here = per_10k.loc["base", "update"] / per_10k.loc["base"].sum()
    there = trainer_base["update"] / trainer_base.sum()
    rows = ["update's share of the base's time", "timing noise: slowest ÷ fastest rollout",
            "an update ratio counts if above / below"]
    return pd.DataFrame({"this machine": [f"{here:.0%}", f"{noise:.2f}", f"{noise:.2f} / {1 / noise:.2f}"],
                         "trainer record (chapter 8.4)": [f"{there:.0%}", "not timed", "not timed"]}, index=rows)


def kl_tables(full: Mapping, runs: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The mean approximate KL and clip fraction per iteration: of the full-size sweep record per
    (market, variant), and of the live runs (`live_runs_table`) per variant."""
    full_kl = pd.DataFrame(
        {"market": row["market"], "variant": row["variant"], "approx KL": row["approx_kl_mean"],
         "clip fraction": row["clip_fraction_mean"]} for row in full["summary"]).set_index(["market", "variant"])
    live_kl = runs.groupby(level="variant")[["approx KL", "clip fraction"]].mean()
    return full_kl, live_kl


def plot_kl(axes, full_kl: pd.DataFrame, live_kl: pd.DataFrame, variants: Sequence[str], full: Mapping | None = None):
    """Horizontal bars on the two ``axes``, on a log scale (the variants span two orders of magnitude):
    the mean approximate KL (left) and clip fraction (right) per iteration of the live runs (purple)
    and of the full-size record on the sample (orange) and the synthetic markets (green), variants in
    the order of ``variants``. With the record ``full``, its bars' labels say which learner it ran
    (`teaching.ran_plain_learner`). A zero (a single epoch never clips) is written as "0" at the
    axis, since a log scale cannot draw it."""
    from matplotlib.patches import Patch

    from .teaching import ran_plain_learner

    learners = {"tab:purple": "live runs (default learner)"}
    record = "record" + (" (plain learner)" if full is not None and ran_plain_learner(full) else "")
    order = [name for name in variants if name in live_kl.index]
    for ax, column in zip(axes, ("approx KL", "clip fraction")):
        bars = [(f"{n} (live)", live_kl.loc[n, column], "tab:purple") for n in order]
        for market, color in (("sample", "tab:orange"), ("synthetic", "tab:green")):
            learners[color] = f"{market}: {record}"
            bars += [(f"{n} ({market})", full_kl.loc[(market, n), column], color)
                     for n in variants if (market, n) in full_kl.index]
        values = [float(value) for _, value, _ in bars]
        # the left edge: below every bar worth drawing, at most four decades under the largest
        floor = max(min((v for v in values if v > 0), default=1e-6) / 3, max(values) / 1e4)
        ax.barh([label for label, _, _ in bars], [max(v - floor, 0.0) for v in values], left=floor,
                color=[color for _, _, color in bars])
        for y, value in enumerate(values):
            if value < floor:
                ax.text(floor, y, " 0" if value <= 0 else " ≈0", va="center", fontsize=8)
        ax.set_xscale("log")
        ax.set_xlim(left=floor)
        ax.set_xlabel(f"mean {column} per iteration (log scale)")
        ax.invert_yaxis()
        ax.grid(axis="x", alpha=0.3)
    axes[1].set_yticklabels([])
    axes[0].figure.legend(handles=[Patch(color=color, label=label) for color, label in learners.items()],
                          loc="outside lower center", ncols=len(learners), fontsize=8)
    return axes


def kl_ratio_table(full_kl: pd.DataFrame, live_kl: pd.DataFrame, variants: Sequence[str]) -> pd.DataFrame:
    """Each variant's approximate KL per iteration as a multiple of the base's: in the live run and
    in the full-size record on each market (empty where a variant did not run)."""
    rows = {}
    for name in variants:
        if name == "base":
            continue
        row = {}
        if name in live_kl.index:
            row["live run"] = live_kl.loc[name, "approx KL"] / live_kl.loc["base", "approx KL"]
        for market in dict.fromkeys(full_kl.index.get_level_values("market")):
            if (market, name) in full_kl.index:
                row[f"{market} (full size)"] = (full_kl.loc[(market, name), "approx KL"]
                                                / full_kl.loc[(market, "base"), "approx KL"])
        rows[name] = row
    return pd.DataFrame(rows).T.rename_axis("approx KL ÷ base")



def curve_separations(full: Mapping) -> pd.DataFrame:
    """Along the learning curve, per market and variant: at how many of the validations (the same
    index on every variant's grid) all of the variant's seeds lay above or below all of the base's
    (``above``, ``below``), of how many (``validations``), and the first and last env-steps where
    they did (0 where they never did)."""
    from ..bench.sweep import verdict

    base_name = full.get("base_variant", "base")
    groups: dict[tuple, list] = {}
    for run in full["runs"]:
        groups.setdefault((run["market"], run["variant"]), []).append(run)
    rows = []
    for (market, variant), group in groups.items():
        base = groups.get((market, base_name))
        if variant == base_name or base is None:
            continue
        validations = group[0]["evaluations"]
        apart = [(e["env_steps"], outcome) for i, e in enumerate(validations)
                 for outcome in [verdict([r["evaluations"][i]["valid_sharpe"] for r in group],
                                         [r["evaluations"][i]["valid_sharpe"] for r in base])]
                 if outcome in ("higher", "lower")]
        steps = [step for step, _ in apart]
        rows.append({"market": market, "variant": variant, "validations": len(validations),
                     "above": sum(o == "higher" for _, o in apart), "below": sum(o == "lower" for _, o in apart),
                     "first": steps[0] if steps else 0, "last": steps[-1] if steps else 0})
    return pd.DataFrame(rows).set_index(["market", "variant"])


NO_CALL = {"inconclusive", "too few seeds"}
"""The verdicts of the non-overlap rule that call nothing."""


def vs_base(record: Mapping, row: Mapping, measure: str = "final_valid_sharpe") -> str:
    """The non-overlap verdict of a summary ``row`` of a sweep record against the base of its market,
    from the seeds' values the record stores (`bench.sweep.verdict`)."""
    from ..bench.sweep import verdict

    base_name = record.get("base_variant", "base")
    base = next(r for r in record["summary"] if r["variant"] == base_name and r["market"] == row["market"])
    return verdict(row[measure]["values"], base[measure]["values"])


def sweep_effects(record: Mapping) -> dict:
    """Every variant of a sweep record against the base: ``effects`` maps (market, variant, "final" or
    "best") to the non-overlap verdict; ``variants`` and ``knobs`` are those the record ran;
    ``called`` the comparisons the rule calls (outside the seed spread)."""
    effects = {(row["market"], row["variant"], measure.split("_")[0]): vs_base(record, row, measure)
               for row in record["summary"] for measure in ("final_valid_sharpe", "best_valid_sharpe")
               if f"{measure}_vs_base" in row}
    return {"effects": effects, "knobs": sorted({row["knob"] for row in record["summary"] if row["knob"]}),
            "variants": sorted({row["variant"] for row in record["summary"] if row["variant"] != "base"}),
            "called": {key: value for key, value in effects.items() if value not in NO_CALL}}



def _caption_blocks(record: Mapping, name: str, reader_out: str) -> list[str]:
    """`sweep.sweep_caption` as paragraphs for a folded block: without the machine's platform string
    (cores and torch say what matters), and with each command as code, so that it copies as written."""
    import re

    from .sweep import sweep_caption

    platform = str(record.get("machine", {}).get("platform", ""))
    blocks = []
    for line in sweep_caption(record, name, reader_out=reader_out).splitlines():
        if platform:
            line = line.replace(f", {platform}", "")
        blocks.append(re.sub(r"(: )(python -m [^`]+?)\s*$", r"\1`\2`", line))
    return blocks


def sweep_method(record: Mapping, name: str, reader_out: str, live_hold: float | None = None,
                 live_synthetic_holds: Mapping[int, float] | None = None) -> MethodNote:
    """How a full-size sweep record was made (`_caption_blocks`: date, machine, seeds, budget, the
    command that makes it again); with ``live_hold`` (buy-and-hold's validation Sharpe on the sample
    as the package computes it now), one plain sentence where it differs from the record's: the
    record's date, the two values, what that can change and what not; with ``live_synthetic_holds``
    (market seed → buy-and-hold's validation Sharpe on that synthetic market as the package builds it
    now), one more where those differ from the record's.
    Returns a :class:`MethodNote`."""
    paragraphs = _caption_blocks(record, name, reader_out)
    paragraphs.append("The tables leave out the record's wall-clock seconds: its runs ran beside other processes, "
                      "so their seconds differ by load as much as by knob.")
    recorded = next((row["buy_and_hold_valid_sharpe"] for row in record["summary"] if row["market"] == "sample"), None)
    if live_hold is not None and recorded is not None and abs(live_hold - recorded) >= 0.005:
        paragraphs.append(
            f"This record was made on {record['date'][:10]} with the package of that day, whose sizing of detected "
            f"ex-days (chapter 1.4) gives buy-and-hold a validation Sharpe on the sample of {recorded:.2f}, where "
            f"the package as installed gives {live_hold:.2f} on chapter 1's prices. That shifts the record's absolute Sharpe ratios on "
            "the sample, not the fairness of its comparisons: every variant and seed ran on the same prices, and the "
            "comparisons among them share it.")
    if live_synthetic_holds:
        stored = {run["seed"]: run["buy_and_hold_valid_sharpe"] for run in record["runs"]
                  if run["market"] == "synthetic" and run["variant"] == record.get("base_variant", "base")}
        moved = {seed: (stored[seed], live) for seed, live in sorted(live_synthetic_holds.items())
                 if seed in stored and abs(live - stored[seed]) >= 0.005}
        if moved:
            paragraphs.append(
                f"On its synthetic {'market' if len(moved) == 1 else 'markets'} of seed"
                f"{'' if len(moved) == 1 else 's'} {teaching.listed(list(map(str, moved)))}, buy-and-hold's validation "
                "Sharpe reads " + ", ".join(f"{old:.3f} (seed {seed})" for seed, (old, _) in moved.items())
                + f" in the record, made with the package of {record['date'][:10]}; the package as installed builds these "
                "markets with " + ", ".join(f"{new:.3f}" for _, new in moved.values())
                + ". Every variant met the same three markets, so the comparisons hold for the markets the record ran.")
    return how_measured(*paragraphs)




def fixed_budget_deflation(record: Mapping) -> pd.DataFrame:
    """The deflated Sharpe ratio of a ``bench sweep`` record two ways, per market (the entries of
    its ``overfitting`` part): over **every** checkpoint (the record's: V, the variance of the
    trials' validation Sharpe ratios, mixes early, untrained-like checkpoints with late ones, so it
    holds learning as well as luck) and **within one budget**: the trials are the runs' final
    checkpoints only (variants × seeds), the chosen one the best of them, V their variance. Both
    assume normal returns, as the record does. Columns: trials, V, SR0 (the Sharpe ratio the best of
    that many unskilled trials reaches by luck), the chosen validation Sharpe and the DSR, for each."""
    from ..metrics import deflated_sharpe_ratio

    rows = []
    for entry in record["overfitting"]:
        seed = entry.get("market_seed")
        runs = [run for run in record["runs"] if run["market"] == entry["market"] and (seed is None or run["seed"] == seed)]
        final = [run["evaluations"][-1]["valid_sharpe"] for run in runs]
        moments = {"sharpe": max(final), "days": entry["days"], "skewness": 0.0, "kurtosis": 3.0}
        at_end, every = deflated_sharpe_ratio(moments, final), entry["deflated"]
        name = entry["market"] if seed is None else f"{entry['market']} (market {seed})"
        rows.append({"market": name,
                     "all checkpoints: trials": every["trials"], "all checkpoints: V": every["sharpe_variance"],
                     "all checkpoints: SR0": every["expected_max_sharpe"], "all checkpoints: chosen": every["sharpe"],
                     "all checkpoints: DSR": every["deflated_sharpe"],
                     "final checkpoints: trials": len(final), "final checkpoints: V": at_end["sharpe_variance"],
                     "final checkpoints: SR0": at_end["expected_max_sharpe"], "final checkpoints: chosen": at_end["sharpe"],
                     "final checkpoints: DSR": at_end["deflated_sharpe"]})
    return pd.DataFrame(rows).set_index("market")


def deflation_against_hold(record: Mapping) -> pd.DataFrame:
    """The deflated Sharpe ratio of a ``bench sweep`` record's best checkpoint per market under two
    nulls: the record's (unskilled trials centre on a Sharpe ratio of 0) and *no skill over
    buy-and-hold* (they centre on buy-and-hold's validation Sharpe on that market, so SR0 is shifted
    by it; `finrl_tutorial.metrics.deflated_sharpe_ratio` with ``null_sharpe``). The trials are every
    checkpoint of the market's runs, as in the record, and counted once per run in the last column.
    Normal returns are assumed, as the record does."""
    from ..metrics import deflated_sharpe_ratio

    rows = []
    for entry in record["overfitting"]:
        seed = entry.get("market_seed")
        runs = [run for run in record["runs"] if run["market"] == entry["market"] and (seed is None or run["seed"] == seed)]
        trial_sharpes = [evaluation["valid_sharpe"] for run in runs for evaluation in run["evaluations"]]
        moments = {"sharpe": max(trial_sharpes), "days": entry["days"], "skewness": 0.0, "kurtosis": 3.0}
        hold = entry["buy_and_hold_valid_sharpe"]
        zero = deflated_sharpe_ratio(moments, trial_sharpes)
        against = deflated_sharpe_ratio(moments, trial_sharpes, null_sharpe=hold)
        per_run = deflated_sharpe_ratio(moments, trial_sharpes, trials=len(runs), null_sharpe=hold)
        name = entry["market"] if seed is None else f"{entry['market']} (market {seed})"
        rows.append({"market": name, "chosen valid Sharpe": zero["sharpe"], "buy-and-hold valid Sharpe": hold,
                     "null 0: SR0": zero["expected_max_sharpe"], "null 0: DSR": zero["deflated_sharpe"],
                     "null buy-and-hold: SR0": against["expected_max_sharpe"],
                     "null buy-and-hold: DSR": against["deflated_sharpe"],
                     "null buy-and-hold: DSR, one trial per run": per_run["deflated_sharpe"]})
    return pd.DataFrame(rows).set_index("market")


def style_overfitting(overfit: pd.DataFrame):
    """A `teaching.overfitting_table` formatted for the page: Sharpe ratios to two decimals, the deflated
    Sharpe ratios to three, since they are read against 0.95 (0.946 is not significant, and shows so)."""
    two = ("chosen valid Sharpe", "buy-and-hold valid Sharpe", "best of N by luck (expected)")
    three = ("deflated Sharpe", "deflated, one trial per run")
    return overfit.style.format({c: "{:.2f}" for c in two} | {c: "{:.3f}" for c in three}, na_rep="not recorded")


def pbo_rows(examples: Sequence[Mapping]) -> pd.DataFrame:
    """One row per draw and family of `teaching.pbo_example` results: PBO, the best trial's Sharpe,
    what the best of that many reaches by luck, and the deflated Sharpe of the best."""
    return pd.DataFrame([
        {"draw": e["seed"], "family": family, "PBO": e[family]["pbo"], "best trial's Sharpe": e[family]["best_sharpe"],
         f"best of {e['trials']} by luck (expected)": e[family]["expected_max_sharpe"],
         "deflated Sharpe": e[family]["deflated_sharpe"]}
        for e in examples for family in ("noise", "one edge")])



def _full_kl_ratios(record: Mapping, variant: str = "repeat_times=16") -> dict[str, float]:
    """``variant``'s mean approximate KL per iteration over the base's in a full-size sweep record, per
    market (the markets where both ran)."""
    base_name = record.get("base_variant", "base")
    kl = {(row["market"], row["variant"]): row["approx_kl_mean"] for row in record["summary"]}
    markets = dict.fromkeys(row["market"] for row in record["summary"])
    return {market: kl[(market, variant)] / kl[(market, base_name)] for market in markets
            if (market, variant) in kl and (market, base_name) in kl}



def work_table(record: Mapping, market: str = "sample") -> pd.DataFrame:
    """The work of one full-size run per variant, from its config: gradient steps in all over the
    record's budget (the same on any machine and at any load)."""
    seed = record["seeds"][0]
    work = {run["variant"]: run["iterations"] * run["gradient_steps_per_iteration"]
            for run in record["runs"] if run["market"] == market and run["seed"] == seed}
    return pd.DataFrame({f"gradient steps in {record['total_steps']:,} env-steps": work}).rename_axis("variant")


def sweep_box(live: Mapping, live_variants: Sequence[str], cost: Mapping, kl_ratio: float, trainer_base: pd.Series,
              rounds: int, record_name: str, record: Mapping, tests: pd.DataFrame,
              sample_fit: pd.Series, synthetic_fit: pd.DataFrame):
    """The box at the end of chapter 2: this run's live sweep, update costs, drift and base cost; the
    stored record's verdicts per market, what survives Holm's correction and the deflated Sharpe
    of the best checkpoint, and how far repeat_times=16 moved the policy at full size. (The PBO
    demonstration runs on the reference page *Selection and overfitting*.) Returns a `MeasuredBox`."""
    survivors = tests[~tests["holm_verdict"].isin(NO_CALL)]

    def verdicts_of(market):
        return ", ".join(f"{row['variant']}: {vs_base(record, row)}"
                         for row in record["summary"] if row["market"] == market and row["variant"] != "base")

    seeds = len(live["seeds"])
    return _measured_box(
        this_run={
            "live sweep": f"{len(live['runs'])} runs (base + {', '.join(live_variants)}), {seeds} "
                          f"seed{'s' if seeds != 1 else ''}, {live['total_steps']:,} env-steps, synthetic market",
            "update cost per sample vs base": f"repeat_times=16 {cost['update']['repeat_times=16']:.2f}×, "
                                              f"batch_size=256 {cost['update']['batch_size=256']:.2f}×, "
                                              f"batch_size=4096 {cost['update']['batch_size=4096']:.2f}× (timing "
                                              f"noise {cost['noise']:.2f})",
            "approx KL, repeat_times=16 vs base (live sweep)": f"{kl_ratio:.1f}× the base's",
            "base cost per 10,000 samples": f"{cost['per_10k'].loc['base'].sum():.2f} s here (median of {rounds} "
                                            f"rounds), {trainer_base.sum():.2f} s in {record_name}",
        },
        recorded={
            "bench_sweep.json": f"{record['date']}, seeds {record['seeds']}, {record['total_steps']:,} env-steps per run",
            "approx KL, repeat_times=16 vs base": ", ".join(f"{market} {ratio:.1f}× the base's"
                                                           for market, ratio in _full_kl_ratios(record).items()),
            "final validation Sharpe vs base, sample": verdicts_of("sample"),
            "final validation Sharpe vs base, synthetic": verdicts_of("synthetic"),
            "after Holm's correction over all comparisons": f"{len(survivors)} of {len(tests)} differ (smallest "
                                                             f"adjusted p {tests['p (Holm)'].min():.2f})",
            "deflated Sharpe of the best checkpoint": f"sample {sample_fit['deflated Sharpe']:.2f} (of "
                f"{sample_fit['trials (checkpoints)']}), synthetic {synthetic_fit['deflated Sharpe'].min():.2f} .. "
                f"{synthetic_fit['deflated Sharpe'].max():.2f} (of {synthetic_fit['trials (checkpoints)'].iloc[0]} each)",
        },
        shows="what each knob costs per sample, how far it moves the policy per iteration, and, at full size with "
              "three seeds, which differences in validation Sharpe are worth following up (exploratory: none "
              "survives a correction for the number of comparisons)",
        does_not_show="effects smaller than three seeds' spread, other markets, budgets or learning rates, "
                      "anything about the test split (the sweep chooses on validation only), and which knob learns "
                      "better from the live run",
    )


# --------------------------------------------------------------------------- chapter 7: your own data

def plot_factor(ax, prepared, tic: str, factor: int):
    """Feature ``factor`` of stock ``tic`` over the whole calendar of ``prepared`` (a prepared market),
    as the agent sees it (a z-score with the train split's statistics, clipped to ±5), on ``ax``,
    with the train, validation and test splits shaded."""
    j = prepared.full.tickers.index(tic)
    dates = pd.DatetimeIndex(prepared.full.dates)
    ax.plot(dates, prepared.full.features[:, j, factor].numpy(), linewidth=0.7, color="tab:purple")
    colors = {"train": "tab:blue", "valid": "tab:orange", "test": "tab:green"}
    for name, split in prepared.splits.items():
        ax.axvspan(pd.Timestamp(split.first_date), pd.Timestamp(split.last_date), alpha=0.08, color=colors[name])
        ax.text(pd.Timestamp(split.first_date), 4.3, f" {name}", fontsize="small")
    ax.set_ylim(-5.3, 5.3)
    ax.set_ylabel("z-score (train statistics)")
    ax.set_title(f"Your factor as the agent sees it: {prepared.full.feature_names[factor]} of {tic}")
    ax.grid(alpha=0.3)
    return ax


def broken_tables(good: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """A good bar table made bad in one way at a time, by name: a required column missing, a date
    that is not a date (row 3), text in a price column (row 5), a missing price (row 7), a zero price
    (row 8), high below low (row 9), negative volume (row 10), an optional column in the wrong unit
    (``amount`` in thousands of yuan, as some vendors export it: the day's average price
    amount / volume falls far below the low), the same day twice (row 11 repeated) and a stock with
    one bar. ``good`` needs at least 12 rows and a default index."""
    def broken(change):
        frame = good.copy()
        change(frame)
        return frame

    return {
        "a required column is missing": broken(lambda f: f.pop("volume")),
        "a date that is not a date": broken(lambda f: f.__setitem__("date", f["date"].where(f.index != 3, "2016-13-45"))),
        "text in a price column": broken(
            lambda f: f.__setitem__("close", f["close"].astype(object).where(f.index != 5, "n/a"))),
        "a missing price": broken(lambda f: f.loc.__setitem__((7, "open"), np.nan)),
        "a zero price": broken(lambda f: f.loc.__setitem__((8, "low"), 0.0)),
        "high below low": broken(lambda f: f.loc.__setitem__((9, "high"), f.loc[9, "low"] - 1)),
        "negative volume": broken(lambda f: f.loc.__setitem__((10, "volume"), -100.0)),
        "an optional column in the wrong unit": broken(
            lambda f: f.__setitem__("amount", f["close"] * f["volume"] / 1000)),  # turnover in thousands of yuan
        "the same day twice": pd.concat([good, good.iloc[[11]]]),
        "a stock with one bar": pd.concat([good, good.iloc[[0]].assign(tic="600999.SH")]),
    }


def factor_reading(record: Mapping) -> dict:
    """What the with/without record (``bench sweep --experiment factor``) holds: its summary rows by
    variant (``rows``), buy-and-hold's validation Sharpe (``hold``), each run's change of the final
    validation Sharpe from its own untrained policy by variant (``moved``), how many runs ended below
    their untrained policy (``below``) of how many (``runs``), and the mean untrained Sharpe per
    variant (``untrained``)."""
    rows = {row["variant"]: row for row in record["summary"]}
    variants = list(rows)
    moved = {name: [run["final_valid_sharpe"] - run["untrained_valid_sharpe"] for run in record["runs"]
                    if run["variant"] == name] for name in variants}
    untrained = {name: float(np.mean([run["untrained_valid_sharpe"] for run in record["runs"]
                                      if run["variant"] == name])) for name in variants}
    return {"rows": rows, "hold": rows[record.get("base_variant", variants[0])]["buy_and_hold_valid_sharpe"],
            "moved": moved, "untrained": untrained,
            "below": sum(change < 0 for changes in moved.values() for change in changes),
            "runs": sum(len(changes) for changes in moved.values())}




def factor_tests_table(tests: pd.DataFrame, record: Mapping) -> pd.DataFrame:
    """`teaching.sweep_comparisons` of a with/without record as a small table: per measure, the mean
    paired difference over the seeds, the paired t-test's p-value and its Holm adjustment, and the
    non-overlap verdict."""
    table = tests.assign(measure=tests["measure"].map(MEASURE_NAMES))
    table = table.set_index("measure")[["mean difference", "p (paired t)", "p (Holm)", "non-overlap verdict"]]
    return table.rename_axis(f"{tests['variant'].iloc[0]} − {record['base_variant']}")



def factor_method(record: Mapping, name: str = "bench_factor.json") -> MethodNote:
    """How the with/without record ``name`` was made (`_caption_blocks`: date, machine, seeds, budget
    and the command that makes it again, as code). Returns a :class:`MethodNote`."""
    return how_measured(*_caption_blocks(record, name, reader_out=f"runs/{name}"))


def factor_box(mine, facts: Mapping, result, bt, live: Mapping, dividend_gap: float, record: Mapping,
               reading: Mapping, tests: pd.DataFrame, name: str = "bench_factor.json"):
    """The box at the end of chapter 7: this run's file, training and backtest (on the validation
    split: chapter 7 leaves its test split unread), live with/without
    runs and the dividends the file misses; the stored record's with/without verdict (the
    non-overlap rule has no equivalence margin, so an uncalled comparison is inconclusive, never a
    tie), buy-and-hold and the paired tests; ``name``: the record's file. Returns a `MeasuredBox`."""
    rows = reading["rows"]
    verdict = rows["with_factor"].get("final_valid_sharpe_vs_base", "n/a")
    verdict = "inconclusive" if verdict in ("tie", "inconclusive") else verdict
    return _measured_box(
        this_run={
            "file": f"{len(mine.full.tickers)} stocks, {facts['trading_days']} trading days, "
                    f"features {', '.join(facts['features'])}",
            "training on the file": f"{result.env_steps:,} env-steps in {result.wall_seconds:.1f} s (one run, this machine), "
                                    f"validation Sharpe {bt.table().loc['agent', 'sharpe_ratio']:.2f} (the split its "
                                    "checkpoint was chosen on; the test split unread)",
            "live with/without": f"{len(live['runs'])} runs of {live['total_steps']:,} env-steps",
            "dividends missing from the file (2 % yield)": f"{teaching.points(dividend_gap)} points of buy-and-hold's validation return",
        },
        recorded={
            name: f"{record['date']}, seeds {record['seeds']}, {record['total_steps']:,} env-steps per run",
            "with vs without the factor (final validation Sharpe)": (
                f"{rows['with_factor']['final_valid_sharpe']['mean']:.2f} vs "
                f"{rows['without_factor']['final_valid_sharpe']['mean']:.2f}: {verdict}"),
            "buy-and-hold (validation Sharpe)": f"{reading['hold']:.2f}",
            "paired test over the seeds (p, then Holm over both measures)": ", ".join(
                f"{r['measure']}: p {r['p (paired t)']:.2f}, Holm {r['p (Holm)']:.2f}" for r in tests.to_dict("records")),
        },
        shows="that a file of your own, with a factor of your own, validates, reaches the observation, trains and "
              "backtests; and, at full size with three seeds, whether the factor changed the validation Sharpe "
              "beyond the seed spread (exploratory)",
        does_not_show="whether the factor carries information in general (one file, one budget, three seeds), or "
                      "anything about the test split for the with/without comparison",
    )
