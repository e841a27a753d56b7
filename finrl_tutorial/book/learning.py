"""Readings for the chapters on learning (1 continued: finding an edge; 2: hyperparameters; 7: your
own data): the tables, sentences, figures and boxes those pages show, computed from committed
records (``bench learn``, ``bench walkforward``, ``bench sweep``) and from the numbers a chapter has
just measured. Every function reads what it is given and returns a `Markdown`, a DataFrame, a
Styler, a box, or draws on a matplotlib Axes passed in; none trains or times anything itself.

Sentences carry only the one or two numbers that matter; how a record was measured (dates, load,
run lengths, commands) goes into `how_measured`, a block folded away at the end of a section.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from . import teaching
from .sweep import MEASURE_NAMES
from . import folded
from .folded import MethodNote, markdown as _markdown

__all__ = [
    # chapter 1, second page
    "MethodNote", "how_measured", "bridge_text", "total_return", "records_table", "planted_edge_text",
    "planted_summary", "planted_summary_text", "learner_pair_text", "learn_method", "signal_rule_text",
    "style_signal_rule", "walkforward_reading", "walkforward_text", "walkforward_method", "realistic_provenance",
    "realistic_method", "no_capture_text", "style_realistic", "oracle_range_text", "style_oracles", "budget_table",
    "budget_reading", "budget_text", "style_budgets", "edge_box", "walkforward_seed_differences", "with_seed_spread",
    "agent_excess_per_market", "ceiling_text", "ic_scale_text", "walkforward_pooled_hold", "near_margin",
    "fragile_sentences", "margin_details", "walkforward_verdict_text",
    # chapter 2
    "live_runs_table", "style_live_runs", "QUIET_LABEL", "quiet_base_cost", "plot_cost", "cost_reading",
    "update_cost_table", "cost_text", "cost_method", "update_share_text", "kl_tables", "plot_kl", "kl_ratio_table",
    "curve_text", "NO_CALL", "vs_base", "sweep_effects", "record_text", "sweep_method", "comparisons_text",
    "overfitting_text", "style_overfitting", "pbo_rows", "pbo_text", "reading_text", "work_table", "sweep_box",
    # chapter 7
    "plot_factor", "broken_tables", "factor_reading", "factor_sentences", "factor_text", "factor_tests_table",
    "factor_tests_text", "factor_method", "factor_box",
]


def _measured_box(*args, **kwargs):
    """The book room's `measured_box` (read when called, as `_markdown`)."""
    from . import measured_box as box

    return box(*args, **kwargs)


def _fmt_steps(steps: int) -> str:
    return f"{int(steps):,}"


def _count(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


# --------------------------------------------------------------------------- a folded block for method details

def how_measured(*paragraphs: str, tables: Sequence[pd.DataFrame] = (),
                 title: str = "How this was measured") -> MethodNote:
    """A folded block (title ``title``) with ``paragraphs`` and then ``tables``: the method details of
    a section (dates, load, commands), out of the teaching sentences (`folded.how_measured`)."""
    return folded.how_measured(*map(str, paragraphs), *tables, title=title)


# --------------------------------------------------------------------------- chapter 1.8-1.9: the planted edge

def bridge_text(main_job: Mapping):
    """Where chapter 1.8 left off, from the five-seed report (``main_job_5seeds_report.json``): the
    Sharpe difference against equal-weight buy-and-hold with its interval and verdict, what that
    interval counts (the days of the seeds' curves, not the spread between seeds) beside the
    seeds' own differences and how many of them are below 0 (the seeds that ended below
    buy-and-hold), and how many seeds ended at or below the untrained network. The verdict is recomputed from the interval's bounds and its margin (`metrics.stored_verdict`),
    never read from the stored string. Returns a `Markdown`."""
    from ..metrics import stored_verdict, verdict_reason

    versus = main_job["sharpe_vs_buy_and_hold"]
    seeds = [row["sharpe_ratio"] for row in main_job["agent_per_seed"].values()]
    untrained = main_job["baselines"]["untrained_agent"]["sharpe_ratio"]
    hold = main_job["baselines"]["equal_weight_buy_and_hold"]["sharpe_ratio"]
    own = [sharpe - hold for sharpe in seeds]  # each seed's Sharpe minus buy-and-hold's, on the same days
    at_or_below = sum(s <= untrained for s in seeds)
    below = sum(difference < 0 for difference in own)
    verdict = stored_verdict(versus)
    reason = verdict_reason(verdict, versus.get("margin"), versus["low"], versus["high"])
    return _markdown(
        f"Over {len(seeds)} seeds, the agent's Sharpe ratio minus buy-and-hold's is "
        f"**{versus['difference']:+.2f}** [{versus['low']:+.2f}, {versus['high']:+.2f}]: {verdict} "
        f"({reason}). The interval resamples the test days of the {len(seeds)} seeds' curves together. So it "
        "counts the noise of the days, not the spread between seeds. The seeds' own differences run from "
        f"{min(own):+.2f} to {max(own):+.2f}: {below} of the {len(seeds)} seeds ended below buy-and-hold. "
        f"{at_or_below} of the {len(seeds)} trained seeds ended at or below the untrained network.")


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


def planted_edge_text(env_steps: int, captured: float, versus: Mapping):
    """The planted edge of 1.9 in two sentences: the share of the signal rule's excess return the
    agent earned on the test split after ``env_steps``, and its Sharpe difference against
    buy-and-hold (``sharpe_difference_ci``) with the verdict. Returns a `Markdown`."""
    return _markdown(
        f"After {_fmt_steps(env_steps)} env-steps the agent earned **{captured:.0%}** of the signal rule's excess "
        f"return on the test split. Its Sharpe ratio minus buy-and-hold's is {versus['difference']:+.2f} "
        f"[{versus['low']:+.2f}, {versus['high']:+.2f}]: {versus['verdict']}.")


def planted_summary(learn: Mapping, budget: int, learners: Sequence[str] = ("ppo", "a2c")) -> pd.DataFrame:
    """The planted edges of a ``bench learn`` record at the end of runs of ``budget`` env-steps,
    checkpoint chosen on validation: one row per (family, learner) with the markets, the pooled
    capture of the signal rule's excess, the markets without a capture, the mean and spread of the
    defined captures, and the mean test excess of the agent and of the signal rule."""
    rows = [r for r in learn["summary"]
            if r["select"] == "best" and r["learner"] in learners and r["env_steps"] == r["run_steps"] == budget]
    return pd.DataFrame(
        {"family": r["family"], "ic": r["ic"], "learner": r["learner"], "markets (seeds)": r["seeds"],
         "captured (pooled)": r["capture_pooled"], "no capture": sum(v is None for v in r["captures"]),
         "captured (mean)": r["capture_mean"], "± std": r["capture_std"],
         "agent excess": r["test_excess_mean"], "signal rule excess": r["oracle_excess_mean"]}
        for r in rows)


def planted_summary_text(summary: pd.DataFrame):
    """What the table of `planted_summary` says, in two sentences: the range of the pooled capture
    over the signal families, and the markets without a capture. Returns a `Markdown`."""
    planted, control = summary[summary["family"] != "none"], summary[summary["family"] == "none"]
    low, high = planted["captured (pooled)"].min(), planted["captured (pooled)"].max()
    return _markdown(
        f"Pooled over the markets of each signal family, the agent earned **{low:.2f} to {high:.2f} times** the "
        f"signal rule's excess return, with PPO and with A2C. On {int(planted['no capture'].sum())} of the "
        f"{int(planted['markets (seeds)'].sum())} planted-edge runs, and on all {int(control['markets (seeds)'].sum())} "
        "control runs, the signal rule made no excess over buy-and-hold, so a capture is undefined there "
        "(`no capture`): the market decides which, not the agent.")


def learner_pair_text(interval: Mapping, paired: pd.DataFrame, left_out: pd.DataFrame):
    """PPO against A2C on the markets both ran (`teaching.paired_captures`, its `t_interval`, and the
    pairs `teaching.capture_gaps` leaves out), in two sentences. Returns a `Markdown`."""
    ahead = int((paired["difference"] > 0).sum())
    where = "contains 0: these markets do not separate the two" if interval["low"] < 0 < interval["high"] else \
        "excludes 0"
    return _markdown(
        f"**PPO minus A2C in capture**, on the {interval['n']} markets both ran that have a capture: "
        f"{interval['mean']:+.2f} [{interval['low']:+.2f}, {interval['high']:+.2f}]. The interval {where}; PPO was "
        f"ahead on {ahead} of them. {_count(len(left_out), 'pair')} both ran "
        f"{'has' if len(left_out) == 1 else 'have'} no capture (the signal rule made no excess there) and "
        f"{'is' if len(left_out) == 1 else 'are'} left out.")


def signal_rule_text(table: pd.DataFrame):
    """What a `teaching.signal_rule_comparison` table says, in two short sentences: the verdict over
    all signal families together per learner, with its mean difference, and, within single
    families, how many uncorrected intervals exclude 0 against how many verdicts survive Holm's
    correction. Returns a `Markdown`."""
    phrase = {"beats": "beats the signal rule", "loses": "loses to the signal rule",
              "inconclusive": "is inconclusive against the signal rule"}
    families = table.index.get_level_values("family")
    pooled, per_family = table[families == "all families"], table[families != "all families"]
    called = int((per_family["verdict"] != "inconclusive").sum())
    excluded = int(((per_family["low"] > 0) | (per_family["high"] < 0)).sum())
    pooled_part = "; ".join(f"{learner.upper()} {phrase[row['verdict']]} by {row['mean difference']:+.1%} per market "
                            f"({row['markets']} markets)" for (learner, _), row in pooled.iterrows())
    return _markdown(
        f"**Over all signal families together**, {pooled_part}. Within a single family "
        f"({per_family['markets'].min()} to {per_family['markets'].max()} markets), the uncorrected interval excludes "
        f"0 in {excluded} of {len(per_family)} cells, "
        + ("but no verdict survives Holm's correction: each is inconclusive." if called == 0 else
           f"and {called} of the {len(per_family)} verdicts survive Holm's correction.")
        + " The table gives each interval.")


def style_signal_rule(table: pd.DataFrame):
    """A `teaching.signal_rule_comparison` table formatted for the page (percentages, p-values)."""
    percent = {c: "{:+.1%}" for c in ("agent excess", "signal rule excess", "mean difference", "low", "high")}
    return table.style.format(percent | {"p (t)": "{:.3f}", "p (Holm)": "{:.3f}"})


def learn_method(learn: Mapping, budget: int) -> MethodNote:
    """How the planted-edge record (``bench_learn.json``) was made: its date and machine, the budget
    and the choice of checkpoint the tables read, and the commands of its parts as a reader runs
    them (the merge of the parts left out). Returns a :class:`MethodNote`."""
    machine = learn["machine"]
    parts = [part for part in learn["command"].split("&&") if "--merge" not in part]
    return how_measured(
        f"The record bench_learn.json, made on {machine['date'][:10]} on a {machine['cpu_count']}-core CPU, one "
        f"torch thread per run. The tables read the runs of {budget:,} env-steps (the default budget) at their end, "
        "with the checkpoint chosen on the validation split and scored once on the test split.",
        "To make its parts again, one command each: " + "; ".join(
            teaching.reader_command(part, f"runs/bench_learn_{_out_name(part)}") for part in parts))


def _out_name(command: str) -> str:
    """The last folder of a command's ``--out`` ("" without one)."""
    import shlex

    words = shlex.split(command)
    return words[words.index("--out") + 1].rstrip("/").rsplit("/", 1)[-1] if "--out" in words else ""


# --------------------------------------------------------------------------- chapter 1.10: the walk-forward

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


def walkforward_seed_differences(walkforward: Mapping) -> dict[str, list[float]]:
    """Each seed's own Sharpe(agent) − Sharpe(equal-weight buy-and-hold) in a ``bench walkforward``
    record, per test year and pooled (each seed's test years chained, `bench.walkforward.chain`),
    from the runs' daily test wealth. Their mean is the interval's ``difference``; their spread is
    what the interval, which resamples the days of the seed-averaged statistic, leaves out."""
    from ..bench.walkforward import chain
    from ..metrics import sharpe_ratio

    def curve(run, name):
        return pd.Series(run["test_wealth"][name], index=pd.DatetimeIndex(run["test_dates"]))

    runs = walkforward["runs"]
    years = sorted({run["year"] for run in runs})
    out = {}
    for year in years:
        group = sorted((run for run in runs if run["year"] == year), key=lambda run: run["seed"])
        out[str(year)] = [sharpe_ratio(curve(run, "agent")) - sharpe_ratio(curve(run, "equal_weight_buy_and_hold"))
                          for run in group]
    seeds = sorted(set.intersection(*({run["seed"] for run in runs if run["year"] == year} for year in years)))
    pick = {(run["year"], run["seed"]): run for run in runs}
    hold = sharpe_ratio(chain([curve(pick[(year, seeds[0])], "equal_weight_buy_and_hold") for year in years]))
    out["pooled"] = [sharpe_ratio(chain([curve(pick[(year, seed)], "agent") for year in years])) - hold
                     for seed in seeds]
    return out


def with_seed_spread(table: pd.DataFrame, reading: Mapping) -> pd.DataFrame:
    """`teaching.walkforward_table` with, beside the agent's interval, the lowest and highest of
    the seeds' own differences (`walkforward_reading`'s ``seed_differences``), row by row."""
    spread = [f"{min(values):+.2f} to {max(values):+.2f}" for values in reading["seed_differences"].values()]
    table = table.copy()
    table.insert(table.columns.get_loc("agent − buy-and-hold [95 %]") + 1, "seeds' own differences", spread)
    return table


def walkforward_text(reading: Mapping):
    """Sentences from `walkforward_reading`: how wide one year's interval is against the pooled
    one; what the intervals count (the days of the seed-averaged curve, not the spread between
    seeds) beside the widest spread of the seeds' own differences; and how often validation kept
    the first checkpoint. Returns a `Markdown`."""
    widths, pooled, chosen = reading["widths"], reading["pooled"], reading["chosen"]
    seeds = reading["seed_differences"]
    spread = {year: max(values) - min(values) for year, values in seeds.items() if year != "pooled"}
    widest = max(spread, key=spread.get)
    return _markdown(
        f"**One year's 95 % interval is {min(widths.values()):.2f} to {max(widths.values()):.2f} Sharpe units "
        f"wide**; pooled over {reading['pooled_days']} days it narrows to {pooled['high'] - pooled['low']:.2f}. "
        f"Each interval resamples the days of the curve averaged over the {len(seeds['pooled'])} seeds. So it "
        "counts the noise of the days, not the spread between seeds. The column beside it gives the seeds' own "
        f"differences. They spread by up to {spread[widest]:.2f} Sharpe units within one year ({widest}), and "
        f"pooled from {min(seeds['pooled']):+.2f} to {max(seeds['pooled']):+.2f}. "
        f"Validation kept its first checkpoint, after a single update, in {chosen['at_first_validation']} of the "
        f"{chosen['runs']} runs.")


def walkforward_method(walkforward: Mapping, reading: Mapping, live_hold: Mapping | None = None,
                       split_hold: float | None = None, split_days: tuple | None = None,
                       fine_print: Sequence[str] = ()) -> MethodNote:
    """How the walk-forward record was made: its date, seeds, budget, validations, runs and wall
    time, and the command that makes it again; with ``live_hold`` (year → buy-and-hold's return
    computed on this page on that test year's dates), ``split_hold`` and ``split_days``
    (buy-and-hold on chapter 1.8's test split and its first and last day), buy-and-hold beside the
    record's; ``fine_print``: sentences on the verdicts (ends of an interval close to the margin),
    one paragraph after the record's. Returns a :class:`MethodNote`."""
    paragraphs = [
        f"The record bench_walkforward.json, made on {walkforward['date'][:10]}: seeds {walkforward['seeds']}, "
        f"{walkforward['total_steps']:,} env-steps asked for per run"
        + ("" if {run["env_steps"] for run in walkforward["runs"]} == {walkforward["total_steps"]} else
           " (" + ", ".join(f"{steps:,}" for steps in sorted({run["env_steps"] for run in walkforward["runs"]}))
           + " run: a run stops at the last whole iteration)")
        + f", a validation every {walkforward['eval_every']} "
        f"iterations; {len(walkforward['runs'])} runs, {reading['wall_minutes']:.0f} minutes of wall time one after "
        f"another on {walkforward['machine']['cpu_count']} CPU cores.",
        *([" ".join(fine_print)] if fine_print else []),
        "To make it again: " + teaching.reader_command(walkforward["command"], "runs/bench_walkforward.json")]
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


def fragile_sentences(near: Sequence[Mapping], verdicts: Mapping) -> list[str]:
    """One short sentence per name in ``near`` (`near_margin`): its verdict is fragile where it turns
    on an end near the margin, else it does not turn on it."""
    names = list(dict.fromkeys(n["name"] for n in near))
    return [f"{name}'s verdict ({verdicts[name]}) "
            + ("is fragile: it turns on an end within 0.01 of the margin."
               if any(n["turns"] for n in near if n["name"] == name) else
               "does not turn on its end near the margin.") for name in names]


def margin_details(near: Sequence[Mapping], margin: float) -> list[str]:
    """The bound details behind `fragile_sentences`, for the folded block: which end of which
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


def walkforward_verdict_text(walkforward: Mapping, reading: Mapping, verdicts: Mapping, margin: float,
                             near: Sequence[Mapping] = ()):
    """What the walk-forward's verdicts say (`walkforward_reading`, `teaching.walkforward_verdicts`):
    whether any interval excludes 0, with each test year's buy-and-hold rising or falling; the
    pooled verdict with the margin in return a year at the pooled buy-and-hold's volatility, and how
    many seeds ended below buy-and-hold, pooled (the interval counts the days, not the seeds); one
    sentence per year with an end near the margin (`fragile_sentences`). Returns a `Markdown`."""
    intervals = reading["intervals"]
    apart = [name for name, ci in intervals.items() if not ci["low"] < 0 < ci["high"]]
    moves = [("rising" if row["equal_weight_buy_and_hold"]["cumulative_return"]["mean"] > 0 else "falling",
              str(row["year"])) for row in walkforward["summary"]["years"]]
    years = [f"a {move} one ({year})" for move, year in moves]
    first = ("**No test year separates the agent from buy-and-hold, nor does the pooled curve.** Every interval "
             "contains 0." if not apart else f"**The intervals of {', '.join(apart)} exclude 0.**")
    seeds = len(reading["seed_differences"]["pooled"])
    in_return = margin * reading["pooled_hold_volatility"]
    if verdicts["pooled"] == "tie":
        pooled_part = (
            f"Pooled, the three years narrow the interval to fit inside ±{margin} Sharpe: a tie. So over these years "
            f"the agent and buy-and-hold are not distinguishable at about ±{100 * in_return:.0f} % of return a year "
            f"(the margin at buy-and-hold's volatility, {100 * reading['pooled_hold_volatility']:.0f} %).")
    else:
        pooled_part = f"Pooled, the three years narrow the interval, but not inside ±{margin} Sharpe."
    text = (
        f"{first} The years include {', '.join(years[:-1])} and {years[-1]}. The untrained network reads the "
        "same. The reason is the one 1.8 found. Validation mostly kept the checkpoint after the first update "
        "(the line under the figure). So the tested agent is close to the untrained network.\n\n"
        "An edge smaller than one year's interval width (under the figure) cannot show in one year. "
        f"{pooled_part} Yet {reading['seeds_below']} of the {seeds} seeds ended below buy-and-hold, pooled (the "
        "table's seeds' column). The interval counts the noise of the days, not the spread between seeds. "
        "That does not mean A-shares hold nothing to learn. This is one "
        "small universe of survivors (1.2), with nine features of price and volume.")
    if near:
        text += ("\n\n**Verdicts near the margin** (1.8). " + " ".join(fragile_sentences(near, verdicts))
                 + " The block below gives the ends.")
    return _markdown(text)


# --------------------------------------------------------------------------- chapter 1.11: realistic strength

def realistic_provenance(realistic: Mapping) -> pd.DataFrame:
    """How each cell of the realistic ``bench learn`` record ran: one row per (cell, run length) with
    the markets, the start (UTC), the runs at a time and the range of wall minutes per run."""
    runs = list({run["command"]: run for run in realistic["runs"]}.values())  # each run of the record once
    rows = []
    for run in runs:
        arguments = run["arguments"]
        length = max(arguments["budgets"])  # the run's length; the shorter budgets are checks along the way
        for ic in arguments["ic"]:
            for stocks in arguments["stocks"]:
                minutes = [case["wall_seconds"] / 60 for case in realistic["cases"]
                           if (case["ic"], case["stocks"], case["total_steps"]) == (ic, stocks, length)]
                rows.append({"cell": f"IC {ic:g} × {stocks} stocks", "env-steps per run": f"{length:,}",
                             "markets": len(minutes), "started (UTC)": run["machine"]["date"][:16].replace("T", " "),
                             "runs at a time": arguments["jobs"],
                             "wall minutes per run": f"{min(minutes):.0f}-{max(minutes):.0f}"})
    return pd.DataFrame(rows).set_index("cell")


def realistic_method(realistic: Mapping, provenance: pd.DataFrame) -> MethodNote:
    """How the realistic record was made (``bench_learn_realistic.json``): the learner and markets,
    the threads and the load the wall and training minutes were measured under, the provenance
    table, the record's own note and the commands that make one cell and the full grid again.
    Returns a :class:`MethodNote`."""
    arguments = realistic["runs"][0]["arguments"]
    return how_measured(
        f"PPO with the package defaults on factor markets of {arguments['days']:,} days, market seed = learner seed; "
        f"each run on {arguments['threads']} torch thread of a {realistic['machine']['cpu_count']}-core CPU beside "
        "other processes, so the wall times and the training minutes of the tables are that load's.",
        "The record's own note: " + realistic["note"]["what_ran"],
        "To make one cell again: " + teaching.reader_command(realistic["note"]["commands"][0], "runs/learn_ic005_s30"),
        "The full grid: " + teaching.reader_command(realistic["note"]["full_grid_command"], "runs/bench_learn_grid"),
        tables=[provenance])


def no_capture_text(no_capture: pd.DataFrame):
    """The markets without a capture of the informed oracle (`teaching.undefined_captures`), in one
    sentence. Returns a `Markdown`."""
    parts = "; ".join(f"IC {ic:g} × {stocks}: {row['informed: no capture']} of {row['markets']}"
                      for (ic, stocks, _), row in no_capture.iterrows())
    return _markdown(
        "Where the informed oracle made no excess over buy-and-hold in the test year, a capture is undefined "
        f"({parts}). The per-market column leaves those markets out; the pooled columns count them.")


def style_realistic(cells: pd.DataFrame):
    """A `teaching.realistic_learning_table` formatted for the page (captures to two decimals, excess
    returns as percentages)."""
    captures = ("informed oracle captured (pooled)", "chosen on 4 years: captured (pooled)",
                "signal rule captured (pooled)")
    excess = ("agent excess", "informed oracle excess", "chosen on 4 years: excess", "signal rule excess")
    return cells.style.format_index(lambda ic: f"{ic:g}", level="ic").format(
        {c: "{:.2f}" for c in captures if c in cells} | {c: "{:+.1%}" for c in excess if c in cells})


def oracle_range_text(oracles: pd.DataFrame):
    """The spread of the informed oracle's test excess over the markets of `teaching.informed_oracle_table`,
    and how many it lost on, in one sentence. Returns a `Markdown`."""
    excess = oracles["informed test excess"]
    return _markdown(
        f"On the {len(oracles)} markets, the informed oracle's test excess over buy-and-hold runs from "
        f"{excess.min():+.0%} to {excess.max():+.0%}; it lost to buy-and-hold on {int((excess < 0).sum())} of them.")


def style_oracles(oracles: pd.DataFrame):
    """A `teaching.informed_oracle_table` (or a slice of its columns) formatted for the page."""
    percent = [c for c in oracles.columns if "excess" in c]
    return oracles.style.format_index(lambda ic: f"{ic:g}", level="ic").format({c: "{:+.1%}" for c in percent})


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


def _capture_phrase(row: pd.Series, markets: int, defined: int) -> str:
    where = "market by market" if defined == markets else f"on the {defined} markets with a capture"
    spread = (f"{row['lowest market']:.2f} to {row['highest market']:.2f} {where}" if defined > 1 else
              "one market with a capture")
    return (f"**{row['informed oracle captured (pooled)']:.2f}** of the informed oracle's excess return, pooled over "
            f"the {markets} markets ({spread}), and {row['chosen on 4 years: captured (pooled)']:.2f} of the rule "
            "chosen on four years")


def ic_scale_text(ics: Sequence[float], env_config, spec=None):
    """What an information coefficient means in the benchmark's markets, from the market model and
    the env's costs: the standard deviation of the unpredictable part of a daily return, how far a
    signal one standard deviation from its mean moves the next day's expected return at each of
    ``ics`` (the loading, `SyntheticSpec.loading`), and what buying and later selling a stock costs
    there (commission on both sides, stamp duty, transfer fee and slippage at the market's first
    date; the ¥5 minimum commission left out). ``spec``: the market (default `SyntheticSpec()`, the
    benchmark's volatilities). Returns a `Markdown`."""
    from dataclasses import replace

    from ..data.synthetic import START_DATE, SyntheticSpec

    spec = spec or SyntheticSpec()
    fees = env_config.fees
    rates = fees.day_rates([START_DATE], ["000001.SZ"])
    round_trip = float(2 * fees.commission_rate + rates["stamp_buy"][0, 0] + rates["stamp_sell"][0, 0]
                       + 2 * rates["transfer_value"][0, 0] + 2 * env_config.slippage)
    moves = {ic: replace(spec, family="factor", ic=ic).loading for ic in ics}
    days = {ic: round_trip / move for ic, move in moves.items()}
    return _markdown(
        f"In the benchmark's markets, the unpredictable part of a stock's daily return has a standard deviation of "
        f"{spec.noise_volatility:.2%}. A signal one standard deviation above its mean raises the next day's expected "
        "return by " + " and ".join(f"{moves[ic]:.2%} at IC {ic:g}" for ic in ics) + ". Buying a stock and later "
        f"selling it costs about {round_trip:.2%} of the value traded (commission, stamp duty, transfer fee and "
        "slippage). So one round trip costs what such a signal earns in "
        + " and ".join(f"about {days[ic]:.1f} days at IC {ic:g}" for ic in ics)
        + ". An edge this size pays only if a position is held while its signal lasts.")


def agent_excess_per_market(record: Mapping, ic: float, stocks: int, run_steps: int) -> pd.Series:
    """The agent's test excess over buy-and-hold at the end of each run of ``run_steps`` env-steps
    in one cell of a realistic ``bench learn`` record (checkpoint chosen on validation), one value
    per market (its seed)."""
    return pd.Series({case["seed"]: case["curve"]["best"][str(run_steps)]["test_excess"] for case in record["cases"]
                      if (case["ic"], case["stocks"], case["total_steps"]) == (ic, stocks, run_steps)},
                     name="agent test excess").rename_axis("market (seed)").sort_index()


def _markets(markets: Sequence) -> str:
    """"market 4", "markets 1 and 2", "markets 0, 2 and 3"."""
    names = [str(m) for m in markets]
    if len(names) == 1:
        return f"market {names[0]}"
    return f"markets {', '.join(names[:-1])} and {names[-1]}"


def ceiling_text(agent: pd.Series, oracle: pd.Series, name: str) -> str:
    """Whether an oracle is a ceiling for the agent, market by market, in two short sentences:
    where the oracle lost to buy-and-hold, and on which markets the agent's test excess was above
    the oracle's. An oracle is called a ceiling only on the markets where the agent stayed below
    it, and "here it is a ceiling" only where that holds on every market and the oracle gained on
    each. ``agent`` and ``oracle``: test excess over buy-and-hold, indexed by market; ``name``
    starts the first sentence ("The informed oracle")."""
    markets = list(oracle.index)
    above = [m for m in markets if agent[m] > oracle[m]]
    below = [m for m in markets if m not in above]
    lost = int((oracle < 0).sum())
    first = (f"{name} lost to buy-and-hold on {lost} of the {len(markets)} markets." if lost else
             f"{name} gained on every market.")
    if not above:
        return first + " The agent stayed below it on each market" + ("." if lost else ": here it is a ceiling.")
    return (first + f" The agent was above it on {_markets(above)}, so it is a ceiling "
            + (f"only on {_markets(below)}." if below else "on no market."))


def _excess_curve(long_run: pd.DataFrame) -> str:
    """What the mean test excess (and the pooled capture) of one run length did along its checks."""
    excess, capture = long_run["agent excess"], long_run["informed oracle captured (pooled)"]
    peak, last = excess.idxmax(), excess.index[-1]
    if peak == last:
        return ("Along the longer run the agent's mean test excess "
                + ("rose at every check" if excess.is_monotonic_increasing else "ended at its highest")
                + f", to {excess[last]:+.1%}.")
    text = (f"Along the longer run the agent's mean test excess rose to {excess[peak]:+.1%} at {peak:,} env-steps, "
            f"then fell to {excess[last]:+.1%} at {last:,}.")
    if capture.idxmax() == peak:
        text += f" The pooled capture moved with it: {capture[peak]:.2f}, then {capture[last]:.2f}."
    return text


def budget_text(reading: Mapping, record: Mapping, oracles: pd.DataFrame, ic: float, stocks: int):
    """The reading of one cell run longer, from `budget_reading`: what the longest run earned of
    the informed oracle (chosen on validation) and of the rule chosen on four years, pooled over the
    markets with the per-market spread, against the run of the default length, and on how many
    markets it beat buy-and-hold by its interval; then what its mean test excess did along the run
    (`_excess_curve`: rose at every check, or rose to a peak and then fell); then, market by market
    against ``oracles`` (`teaching.informed_oracle_table`), where each oracle is a ceiling
    (`ceiling_text`), and, where the informed oracle lost on a market, what the capture then means.
    Returns a `Markdown`."""
    end, short, at_default = reading["end"], reading["short"], reading["at_default"]
    markets = int(end["markets"])
    rows = [row for row in record["summary"] if row["select"] == "best" and row["learner"] == "ppo"
            and row["ic"] == ic and row.get("stocks", 10) == stocks and row["run_steps"] == reading["longest"]
            and row["env_steps"] == reading["longest"]]
    defined = sum(v is not None for v in rows[0].get("informed_captures", [])) if rows else markets
    beats, short_beats = (int(row["beats buy-and-hold"].split()[0]) for row in (end, short))
    on = ("no market" if beats == 0 else f"all {markets} markets" if beats == markets else
          f"{beats} of the {markets} markets")
    text = (f"Run to {reading['longest']:,} env-steps, the agent earned {_capture_phrase(end, markets, defined)}. "
            f"It beat buy-and-hold by its interval on {on}. The run of the default length earned "
            f"{short['informed oracle captured (pooled)']:.2f} of the informed oracle's excess "
            f"({short['chosen on 4 years: captured (pooled)']:.2f} of the four-year rule's) and beat buy-and-hold on "
            f"{short_beats or 'none'}")
    if at_default is not None:
        text += (f"; the longer run, after as many env-steps, stood at "
                 f"{at_default['informed oracle captured (pooled)']:.2f} (each run length is a learner of its own: "
                 "the learning rate falls to 0 over the whole run)")
    text += ".\n\n" + _excess_curve(reading["long_run"])
    cell = oracles.loc[(ic, stocks)]
    agent = agent_excess_per_market(record, ic, stocks, reading["longest"])
    text += "\n\nMarket by market, at the end of the longer run: " + ceiling_text(
        agent, cell["informed test excess"], "the informed oracle")
    if (cell["informed test excess"] < 0).any():
        text += (" Where it lost, it shows little of what is possible: read the capture as a share of what a "
                 "validation year's rule earned.")
    if "its test excess" in cell:
        text += " " + ceiling_text(agent, cell["its test excess"], "The rule chosen on four years")
    return _markdown(text)


def style_budgets(table: pd.DataFrame):
    """A `budget_table` formatted for the page."""
    two = {c: "{:.2f}" for c in ("informed oracle captured (pooled)", "chosen on 4 years: captured (pooled)",
                                 "lowest market", "highest market")}
    return table.style.format_index("{:,}", level=[0, 1]).format(
        two | {"agent excess": "{:+.1%}", "training minutes": "{:.1f}"}, na_rep="")


def edge_box(syn_steps: int, captured: float, syn_versus: Mapping, split_hold: float, planted: pd.DataFrame,
             ppo_vs_a2c: Mapping, versus_rule: pd.DataFrame, wf_intervals: Mapping, wf_verdicts: Mapping,
             near: Sequence[Mapping], margin: float, cells: pd.DataFrame, per_market: pd.DataFrame,
             seeds_below: tuple[int, int] | None = None):
    """The box at the end of chapter 1's second page: this run's planted edge and buy-and-hold on
    1.8's test split; the committed planted edges (`planted_summary`), PPO against A2C, the agent
    against the signal rule over all families, the walk-forward intervals and verdicts (a verdict
    that turns on an end near the margin, from ``near`` (`near_margin`), marked fragile; with
    ``seeds_below``, ``(below, seeds)``, how many seeds ended below buy-and-hold, pooled), and the
    pooled capture of the informed oracle at realistic strength with the markets the agent was ahead
    on. Returns a `MeasuredBox`."""
    fragile = {n["name"] for n in near if n["turns"]}
    pooled_rule = versus_rule.xs("all families", level="family")
    per_family = sorted(set(versus_rule.drop(index="all families", level="family")["verdict"]))

    def interval(ci):
        return f"{ci['difference']:+.2f} [{ci['low']:+.2f}, {ci['high']:+.2f}]"

    def ahead(ic, stocks):
        rows = per_market.loc[(ic, stocks)]
        return int((rows["agent test excess"] > rows["informed test excess"]).sum())

    return _measured_box(
        this_run={
            f"planted edge (IC 0.10, one market), {syn_steps:,} env-steps: signal rule's excess captured":
                f"{captured:.0%}; Sharpe vs buy-and-hold {interval(syn_versus)}: {syn_versus['verdict']}",
            "equal-weight buy-and-hold, 1.8's test split, full costs, detected dividends only": f"{split_hold:+.1%}",
        },
        committed={
            "planted edges, PPO and A2C (bench_learn.json)":
                f"captured {planted['captured (pooled)'].min():.2f} .. {planted['captured (pooled)'].max():.2f}; "
                f"PPO minus A2C on common markets {ppo_vs_a2c['mean']:+.2f} [{ppo_vs_a2c['low']:+.2f}, "
                f"{ppo_vs_a2c['high']:+.2f}] ({ppo_vs_a2c['n']} pairs with a capture)",
            "agent excess minus the signal rule's, per market, all signal families (bench_learn.json)": "; ".join(
                f"{learner.upper()} {row['mean difference']:+.1%} [{row['low']:+.1%}, {row['high']:+.1%}] over "
                f"{row['markets']} markets: {row['verdict']}" for learner, row in pooled_rule.iterrows())
                + f"; per family: {', '.join(per_family)}",
            "walk-forward, agent vs buy-and-hold (bench_walkforward.json)": ", ".join(
                f"{year} {interval(wf_intervals[year])} {verdict}"
                + (f" (fragile: it turns on an end within 0.01 of the ±{margin} margin)" if year in fragile else "")
                for year, verdict in wf_verdicts.items())
                + (f"; pooled, {seeds_below[0]} of {seeds_below[1]} seeds below buy-and-hold" if seeds_below else ""),
            "realistic strength, informed oracle captured, pooled, no interval (bench_learn_realistic.json)": "; ".join(
                f"IC {ic:g} × {stocks}: {row['informed oracle captured (pooled)']:.2f}, the agent ahead of the oracle "
                f"on {ahead(ic, stocks)} of {row['markets']} markets" for (ic, stocks, _), row in cells.iterrows()),
        },
        shows="that the same code finds planted edges and, on strong ones, beats the signal rule over all signal "
              "families together (no single family does after Holm's correction); what three test years of the "
              "sample say, each with its interval",
        does_not_show="an edge on real A-shares: no walk-forward year separates the agent from buy-and-hold; nor, at "
                      "IC 0.03, how close the agent comes to the best possible: the informed oracle, chosen on one "
                      "year or on four, is no ceiling there",
        title="What this page measured",
    )


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


QUIET_LABEL = "in-process trainer (64 envs)"
"""The quiet ``bench scale`` record's row that *is* the base configuration: 64 envs, one thread, default knobs."""


def quiet_base_cost(quiet_records: Sequence[Mapping]) -> pd.Series:
    """The base configuration's rollout and update seconds per 10,000 samples in the quiet ``bench
    scale`` record (its in-process trainer with 64 envs on one thread)."""
    from .scale import phase_table

    phases = phase_table(quiet_records, layouts=("trainer",))
    return phases.loc[QUIET_LABEL, ["rollout", "update"]] * 10_000 / phases.loc[QUIET_LABEL, "samples"]


def plot_cost(ax, per_10k: pd.DataFrame, quiet_base: pd.Series, rounds: int, quiet_name: str):
    """Stacked bars on ``ax``: each variant's median rollout (blue) and update (red) seconds per
    10,000 samples over the rounds, and last the quiet record's base configuration (``quiet_name``)."""
    shown = pd.concat([per_10k, quiet_base.to_frame(f"base, quiet machine ({quiet_name})").T])
    shown.iloc[::-1].plot.barh(stacked=True, ax=ax, color=["tab:blue", "tab:red"])
    ax.set_xlabel(f"seconds per 10,000 samples, 1 thread (this machine: median of {rounds} interleaved rounds; "
                  "last bar: the quiet record)")
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


def cost_text(reading: Mapping):
    """The timing noise and what the batch size costs, from `cost_reading`: the spread of the rollout
    (the same work in every variant), the minibatches each batch size cuts a pass into (from the
    config), each batch size's update cost per sample against the base's and batch_size=256 against
    4096, each judged by that noise as the page shows it (two decimals, `_beyond_noise`). Returns a
    `Markdown`."""
    from ..agents import make_config

    noise, update, per_10k = reading["noise"], reading["update"], reading["per_10k"]
    small, large = per_10k.loc["batch_size=256", "update"], per_10k.loc["batch_size=4096", "update"]
    ratio = small / large
    base, narrow, wide = (make_config("ppo", **change) for change in ({}, {"batch_size": 256}, {"batch_size": 4096}))

    def judged(value):
        return ("beyond the timing noise" if _beyond_noise(value, noise) else
                "inside the timing noise: not a difference this run can show")

    return _markdown(
        "**The timing noise.** The rollout does the same work per sample in every variant (the knobs regroup the "
        "samples for the update; they do not change how samples are collected). Yet the slowest variant's rollout "
        f"took {noise:.2f} times as long as the fastest's. Two timings of the same work differ that much here. So an "
        f"update ratio in the table counts as a difference only if it lies above {noise:.2f} or below "
        f"{1 / noise:.2f}.\n\n"
        f"**The batch size.** Each pass over the same {base.rollout_size:,} samples is cut into "
        f"{base.num_minibatches} gradient steps at the base's batch_size={base.batch_size}, into "
        f"{narrow.num_minibatches} at 256 and into {wide.num_minibatches} at 4096. Per sample, the update at "
        f"batch_size=256 cost {update['batch_size=256']:.2f} times as much as the base's, "
        f"{judged(update['batch_size=256'])}. At batch_size=4096 it cost {update['batch_size=4096']:.2f} times as "
        f"much as the base's, {judged(update['batch_size=4096'])}. Against each other, batch_size=256 cost {ratio:.2f} times as much per "
        f"sample as batch_size=4096, {judged(ratio)}.")


def cost_method(load_before: float, load_after: float, quiet_records: Sequence[Mapping],
                per_10k: pd.DataFrame, quiet_base: pd.Series, rounds: int, record_name: str) -> MethodNote:
    """How 2.2 was timed: the interleaved rounds, this machine against the quiet record's (cores,
    torch, load average; whether the operating system is the same, without its version string) and
    the base's seconds per 10,000 samples on both. Returns a :class:`MethodNote`."""
    import os
    import platform

    import torch

    quiet = next(r for r in quiet_records if r["layout"] == "trainer" and r["num_envs"] == 64)
    here = {"cores": os.cpu_count(), "platform": platform.platform(), "torch": torch.__version__}
    there = {"cores": quiet["cpu_count"], "platform": quiet["platform"], "torch": quiet["torch"]}
    same = here == there  # the record names cores, platform and torch, not the processor
    return how_measured(
        f"Each variant was timed once per round, {rounds} rounds one after another, so a busy spell of the machine "
        "hits every variant alike; the figure shows the median of the rounds, the table each round against the "
        "same round's base.",
        f"This machine: {_count(here['cores'], 'core')}, torch {here['torch']}; load average "
        f"{load_before:.1f} before the rounds, {load_after:.1f} after. The quiet record ({record_name}): "
        f"{_count(there['cores'], 'core')}, torch {there['torch']}; load average {quiet['loadavg'][0]:.1f} "
        f"when its trainer rounds ended ({quiet['date'][:16].replace('T', ' ')} UTC).",
        f"The base per 10,000 samples: {per_10k.loc['base'].sum():.2f} s here, {quiet_base.sum():.2f} s in the record"
        + (" (the same cores, operating system and torch; the record does not name its processor)." if same else
           " (another machine: the seconds can differ by hardware as well as by load)."))


def update_share_text(per_10k: pd.DataFrame, quiet_base: pd.Series):
    """The update's share of the base's time, here and on the quiet record's machine (plain text: a
    timing of this run is a measurement, not a finding to bold). Returns a `Markdown`."""
    here = per_10k.loc["base", "update"] / per_10k.loc["base"].sum()
    there = quiet_base["update"] / quiet_base.sum()
    return _markdown(f"The update takes {here:.0%} of the base's time on this machine, and {there:.0%} on the "
                     "quiet record's: the gradient steps, not the env, are where a knob can save time.")


def kl_tables(full: Mapping, runs: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The mean approximate KL and clip fraction per iteration: of the full-size sweep record per
    (market, variant), and of the live runs (`live_runs_table`) per variant."""
    full_kl = pd.DataFrame(
        {"market": row["market"], "variant": row["variant"], "approx KL": row["approx_kl_mean"],
         "clip fraction": row["clip_fraction_mean"]} for row in full["summary"]).set_index(["market", "variant"])
    live_kl = runs.groupby(level="variant")[["approx KL", "clip fraction"]].mean()
    return full_kl, live_kl


def plot_kl(axes, full_kl: pd.DataFrame, live_kl: pd.DataFrame, variants: Sequence[str]):
    """Horizontal bars on the two ``axes``: the mean approximate KL (left) and clip fraction (right)
    per iteration of the live runs (purple) and of the full-size record on the sample (orange) and
    the synthetic markets (green), variants in the order of ``variants``."""
    order = [name for name in variants if name in live_kl.index]
    for ax, column in zip(axes, ("approx KL", "clip fraction")):
        ax.barh([f"{n} (live)" for n in order], live_kl.loc[order, column], color="tab:purple")
        for market, color in (("sample", "tab:orange"), ("synthetic", "tab:green")):
            names = [n for n in variants if (market, n) in full_kl.index]
            ax.barh([f"{n} ({market}, full)" for n in names], full_kl.loc[[(market, n) for n in names], column],
                    color=color)
        ax.set_xlabel(f"mean {column} per iteration")
        ax.invert_yaxis()
        ax.grid(axis="x", alpha=0.3)
    axes[1].set_yticklabels([])
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


def curve_text(full: Mapping):
    """Along the learning curve, per market: which variants' seeds all lay above or below all of
    the base's, at how many of the validations (the same index on every variant's grid) and between
    which env-steps; the variants that never separated in one clause. Returns a `Markdown`."""
    from ..bench.sweep import verdict

    base_name = full.get("base_variant", "base")
    groups: dict[tuple, list] = {}
    for run in full["runs"]:
        groups.setdefault((run["market"], run["variant"]), []).append(run)
    lines = []
    for market in dict.fromkeys(m for m, _ in groups):
        base = groups.get((market, base_name))
        apart_parts, together = [], []
        for (m, variant), group in groups.items():
            if m != market or variant == base_name or base is None:
                continue
            validations = group[0]["evaluations"]
            apart = [(e["env_steps"], outcome) for i, e in enumerate(validations)
                     for outcome in [verdict([r["evaluations"][i]["valid_sharpe"] for r in group],
                                             [r["evaluations"][i]["valid_sharpe"] for r in base])]
                     if outcome in ("higher", "lower")]
            if not apart:
                together.append(variant)
                continue
            words = " or ".join(sorted({"above" if o == "higher" else "below" for _, o in apart}))
            steps = [s for s, _ in apart]
            where = f"at {steps[0]:,} env-steps" if len(steps) == 1 else f"between {steps[0]:,} and {steps[-1]:,} env-steps"
            apart_parts.append(f"**{variant}** lay {words} every seed of the base at {len(apart)} of "
                               f"{len(validations)} validations ({where})")
        sentence = f"* On {market}: " + ("; ".join(apart_parts) if apart_parts else "no variant separated")
        if together and apart_parts:
            sentence += f". The other {len(together)} variants overlapped the base at every validation."
        else:
            sentence += "."
        lines.append(sentence)
    return _markdown("\n".join(lines))


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


def record_text(record: Mapping, effects: Mapping, variants: Sequence[str]):
    """What the full-size sweep record holds, as a short list: the variants it ran, how many of its
    comparisons the non-overlap rule calls, and where each market's base ended against buy-and-hold
    (and the signal rule). Returns a `Markdown`."""
    missing = [name for name in variants if name != "base" and name not in effects["variants"]]
    called = effects["called"]
    lines = [
        f"* Of {len(effects['effects'])} comparisons with the base ({len(effects['variants'])} variants"
        + (f"; {', '.join(missing)} not run at full size" if missing else "")
        + ", two markets, final and best validation Sharpe), "
        + (f"{len(called)} lie outside the seed spread: "
           + "; ".join(f"{variant} on {market} ({which}: {value})" for (market, variant, which), value in called.items())
           + f". The other {len(effects['effects']) - len(called)} are inconclusive." if called else
           "none lies outside the seed spread: all are inconclusive.")]
    for row in record["summary"]:
        if row["variant"] != "base":
            continue
        b, hold = row["final_valid_sharpe"], row["buy_and_hold_valid_sharpe"]
        where = "above" if b["min"] > hold else "below" if b["max"] < hold else "on both sides of"
        line = f"* On {row['market']}, the base's seeds ended {where} buy-and-hold's {hold:.2f}"
        if "oracle_valid_sharpe" in row:
            rule = row["oracle_valid_sharpe"]
            line += (f", and the signal rule's {rule:.2f} lies "
                     + ("above every seed." if rule > b["max"] else
                        "below every seed: the signal rule is a baseline, not a ceiling." if rule < b["min"] else
                        "inside the seeds' range."))
        else:
            line += "."
        lines.append(line)
    return _markdown("\n".join(lines))


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


def sweep_method(record: Mapping, name: str, reader_out: str, live_hold: float | None = None) -> MethodNote:
    """How a full-size sweep record was made (`_caption_blocks`: date, machine, seeds, budget, the
    command that makes it again); with ``live_hold`` (buy-and-hold's validation Sharpe on the sample
    as the package computes it now), one plain note where it differs from the record's: the record
    predates the present sizing of detected ex-days, and what that means for its numbers. Returns a
    :class:`MethodNote`."""
    paragraphs = _caption_blocks(record, name, reader_out)
    paragraphs.append("The tables leave out the record's wall-clock seconds: its runs shared the machine with other "
                      "processes, so their seconds differ by load as much as by knob.")
    recorded = next((row["buy_and_hold_valid_sharpe"] for row in record["summary"] if row["market"] == "sample"), None)
    if live_hold is not None and recorded is not None and abs(live_hold - recorded) >= 0.005:
        paragraphs.append(
            "This record was made with the earlier sizing of detected ex-days (chapter 1.4). Buy-and-hold's validation "
            f"Sharpe on the sample reads {recorded:.2f} in it and {live_hold:.2f} on chapter 1's prices. The sweep's "
            "absolute Sharpe ratios on the sample come from that earlier cleaning; every variant and seed was run "
            "on the same prices, so the comparisons among them share it.")
    return how_measured(*paragraphs)


def comparisons_text(tests: pd.DataFrame, chance: float):
    """What `teaching.sweep_comparisons` says, in two sentences: the flags the non-overlap rule
    raises against those expected by chance, and what survives Holm's correction. Returns a `Markdown`."""
    flagged = tests[~tests["non-overlap verdict"].isin(NO_CALL)]
    survivors = tests[~tests["holm_verdict"].isin(NO_CALL)]
    names = sorted({f"{r.variant} on {r.market}" for r in flagged.itertuples()})
    return _markdown(
        f"With no effect anywhere, the rule would flag about **{chance * len(tests):.1f}** of the {len(tests)} "
        f"comparisons by seed noise alone; the record has {len(flagged)}"
        + (f" ({', '.join(names)})" if names else "")
        + f". With the paired t-test and Holm's correction, {len(survivors) or 'none'} "
        + ("survives" if len(survivors) <= 1 else "survive")
        + f" (smallest adjusted p-value {tests['p (Holm)'].min():.2f}).")


def overfitting_text(overfit: pd.DataFrame):
    """What `teaching.overfitting_table` says, in three sentences: the sample's best checkpoint against
    what luck gives the best of that many, the synthetic markets' deflated Sharpe, and the same with
    one trial per run, with how many markets reach 0.95 that way. Returns a `Markdown`."""
    sample, synthetic = overfit.loc["sample"], overfit.drop(index="sample")
    per_run = synthetic["deflated, one trial per run"]
    reached = int((per_run >= 0.95).sum())
    return _markdown(
        f"On the sample, the best of {sample['trials (checkpoints)']} checkpoints scored a validation Sharpe of "
        f"{sample['chosen valid Sharpe']:.2f}, below the {sample['best of N by luck (expected)']:.2f} that the best of "
        f"as many unskilled trials reaches by luck: its deflated Sharpe is **{sample['deflated Sharpe']:.2f}**. On the "
        f"synthetic markets it is {synthetic['deflated Sharpe'].min():.2f} to {synthetic['deflated Sharpe'].max():.2f}, "
        "short of 0.95, the level of significance at 5 %, too. "
        f"Counted with one trial per run ({synthetic['runs'].iloc[0]} per market), it is {per_run.min():.2f} to "
        f"{per_run.max():.2f} there: at or above 0.95 on {reached} of the {len(per_run)} synthetic markets.")


def style_overfitting(overfit: pd.DataFrame):
    """A `teaching.overfitting_table` formatted for the page."""
    two = ("chosen valid Sharpe", "buy-and-hold valid Sharpe", "best of N by luck (expected)", "deflated Sharpe",
           "deflated, one trial per run")
    return overfit.style.format({c: "{:.2f}" for c in two}, na_rep="not recorded")


def pbo_rows(examples: Sequence[Mapping]) -> pd.DataFrame:
    """One row per draw and family of `teaching.pbo_example` results: PBO, the best trial's Sharpe,
    what the best of that many reaches by luck, and the deflated Sharpe of the best."""
    return pd.DataFrame([
        {"draw": e["seed"], "family": family, "PBO": e[family]["pbo"], "best trial's Sharpe": e[family]["best_sharpe"],
         f"best of {e['trials']} by luck (expected)": e[family]["expected_max_sharpe"],
         "deflated Sharpe": e[family]["deflated_sharpe"]}
        for e in examples for family in ("noise", "one edge")])


def pbo_text(rows: pd.DataFrame):
    """What `pbo_rows` says, in two sentences: the mean PBO of each family, and in how many draws the
    strategy with an edge is significant once deflated. Returns a `Markdown`."""
    noise, edge = rows[rows["family"] == "noise"], rows[rows["family"] == "one edge"]
    return _markdown(
        f"PBO averages **{noise['PBO'].mean():.2f}** for pure noise and {edge['PBO'].mean():.2f} with one real edge "
        f"(over {len(noise)} draws each). Once deflated, the strategy with the edge is significant in "
        f"{int((edge['deflated Sharpe'] >= 0.95).sum())} of the {len(edge)} draws; the best noise strategy in "
        f"{int((noise['deflated Sharpe'] >= 0.95).sum())}.")


def _full_kl_ratios(record: Mapping, variant: str = "repeat_times=16") -> dict[str, float]:
    """``variant``'s mean approximate KL per iteration over the base's in a full-size sweep record, per
    market (the markets where both ran)."""
    base_name = record.get("base_variant", "base")
    kl = {(row["market"], row["variant"]): row["approx_kl_mean"] for row in record["summary"]}
    markets = dict.fromkeys(row["market"] for row in record["summary"])
    return {market: kl[(market, variant)] / kl[(market, base_name)] for market in markets
            if (market, variant) in kl and (market, base_name) in kl}


def reading_text(cost: Mapping, kl_ratio: float, tests: pd.DataFrame, chance: float, sample_fit: pd.Series,
                 synthetic_fit: pd.DataFrame, record: Mapping, fast: bool = False):
    """The chapter's reading, one short bullet per question, each computed from the numbers it has
    measured or read: first the full-size record's findings (the drift of more passes, the statistics
    of the sweep, the selection, the quality verdicts per market, the work), then this run's own
    measurements: the update cost (`cost_reading`, against its timing noise) and the live drift
    (``kl_ratio``). With ``fast`` those last two are labelled as the mechanics they are, never bolded
    as findings. Returns a `Markdown`."""
    noise, update = cost["noise"], cost["update"]
    beyond = [name for name in update.index if name != "base" and _beyond_noise(update[name], noise)]
    flagged = tests[~tests["non-overlap verdict"].isin(NO_CALL)]
    survivors = tests[~tests["holm_verdict"].isin(NO_CALL)]
    drift = _full_kl_ratios(record)
    seeds = len(record["seeds"])
    lines = [
        "* **Drift.** In the full-size record, repeat_times=16 moved the policy "
        + ", and ".join(f"{ratio:.1f}× as far" + (" per iteration as the base did" if i == 0 else "")
                        + f" on the {'synthetic markets' if market == 'synthetic' else market}"
                        for i, (market, ratio) in enumerate(drift.items()))
        + f" (approximate KL, mean over {seeds} seeds).",
        f"* **Statistics.** The non-overlap rule flags {len(flagged)} of the {len(tests)} comparisons. Seed noise "
        f"alone would flag about {chance * len(tests):.1f} of them (2.5). After Holm's correction "
        f"{len(survivors) or 'none'} " + ("remains" if len(survivors) <= 1 else "remain")
        + ". The quality verdicts below are exploratory.",
        f"* **Selection.** The best of the sample's {sample_fit['trials (checkpoints)']} checkpoints has a deflated "
        f"Sharpe of {sample_fit['deflated Sharpe']:.2f}, the synthetic markets' best "
        f"{synthetic_fit['deflated Sharpe'].min():.2f} to {synthetic_fit['deflated Sharpe'].max():.2f} (significant "
        "from 0.95): the best of a sweep is worth much less than its score says.",
    ]
    for market in ("sample", "synthetic"):
        rows = [row for row in record["summary"] if row["market"] == market and row["variant"] != "base"]
        if not rows:
            continue
        moved = [f"{row['variant']} ({vs_base(record, row)})" for row in rows if vs_base(record, row) not in NO_CALL]
        lines.append(f"* **Quality on {market}** (final validation Sharpe, {len(rows[0]['seeds'])} seeds): "
                     + (f"outside the seed spread: {', '.join(moved)}; the other {len(rows) - len(moved)} inconclusive."
                        if moved else f"all {len(rows)} variants inconclusive against the base."))
    lines.append("* **Work.** The gradient steps of one full-size run follow from its config, the same on any machine "
                 "and at any load (the table); the cost per sample is 2.2's.")
    label = ("* This run's mechanics (fast mode: short timings and a one-seed sweep of a few iterations; they show "
             "the measurement working, not a finding)." if fast else "* **This run.**")
    timed = [name for name in update.index if name != "base"]
    named = ", ".join(beyond[:-1]) + (" and " if len(beyond) > 1 else "") + (beyond[-1] if beyond else "")
    limits = (f"two timings of the same work differ by a factor of {noise:.2f}, so beyond means above {noise:.2f} "
              f"or below {1 / noise:.2f}")
    lines.append(
        label + " Update cost per sample relative to the base on this machine: "
        + ", ".join(f"{name} {update[name]:.2f}×" for name in timed) + ". "
        + (f"None of the {len(timed)} variants lies beyond the timing noise of 2.2 ({limits})." if not beyond else
           f"All {len(timed)} variants lie beyond the timing noise of 2.2 ({limits})." if len(beyond) == len(timed)
           else f"Of the {len(timed)} variants, {len(beyond)} {'lies' if len(beyond) == 1 else 'lie'} beyond the "
                f"timing noise of 2.2 ({limits}): {named}.")
        + f" In the live sweep, repeat_times=16 moved the policy {kl_ratio:.1f}× as far per iteration as the base did.")
    return _markdown("\n".join(lines))


def work_table(record: Mapping, market: str = "sample") -> pd.DataFrame:
    """The work of one full-size run per variant, from its config: gradient steps in all over the
    record's budget (the same on any machine and at any load)."""
    seed = record["seeds"][0]
    work = {run["variant"]: run["iterations"] * run["gradient_steps_per_iteration"]
            for run in record["runs"] if run["market"] == market and run["seed"] == seed}
    return pd.DataFrame({f"gradient steps in {record['total_steps']:,} env-steps": work}).rename_axis("variant")


def sweep_box(live: Mapping, live_variants: Sequence[str], cost: Mapping, kl_ratio: float, quiet_base: pd.Series,
              rounds: int, quiet_name: str, noise_pbo: float, edge_pbo: float, record: Mapping, tests: pd.DataFrame,
              sample_fit: pd.Series, synthetic_fit: pd.DataFrame):
    """The box at the end of chapter 2: this run's live sweep, update costs, drift, base cost and
    PBO example; the committed record's verdicts per market, what survives Holm's correction and the
    deflated Sharpe of the best checkpoint, and how far repeat_times=16 moved the policy at full size.
    Returns a `MeasuredBox`."""
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
            "approx KL, repeat_times=16 vs base (live sweep)": f"{kl_ratio:.1f}× as far as the base",
            "base cost per 10,000 samples": f"{cost['per_10k'].loc['base'].sum():.2f} s here (median of {rounds} "
                                            f"rounds), {quiet_base.sum():.2f} s in {quiet_name}",
            "PBO, 20 strategies, 10 draws": f"noise {noise_pbo:.2f}, one edge {edge_pbo:.2f}",
        },
        committed={
            "bench_sweep.json": f"{record['date']}, seeds {record['seeds']}, {record['total_steps']:,} env-steps per run",
            "approx KL, repeat_times=16 vs base": ", ".join(f"{market} {ratio:.1f}× as far as the base"
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
                      "anything about the test split (the sweep chooses on validation only), and in fast mode which "
                      "knob learns better (one seed, a few iterations)",
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


def factor_sentences(record: Mapping, reading: Mapping) -> list[str]:
    """Four short sentences from `factor_reading`: the variant against the base at the end and at
    its best validation, with the non-overlap verdict (`bench.sweep.verdict`, from the seeds' values),
    and, per variant, where its seeds ended against buy-and-hold and how far training moved it from
    the untrained policy."""
    from ..bench.sweep import verdict

    base_name = record.get("base_variant", "base")
    rows, hold = reading["rows"], reading["hold"]
    other = next(name for name in rows if name != base_name)
    words = {"inconclusive": "the seed ranges overlap: inconclusive", "higher": "all seeds above the base's: higher",
             "lower": "all seeds below the base's: lower", "too few seeds": "too few seeds for a verdict"}
    sentences = []
    for measure in ("final_valid_sharpe", "best_valid_sharpe"):
        mine, theirs = rows[other][measure], rows[base_name][measure]
        outcome = verdict(mine["values"], theirs["values"])
        sentences.append(f"{MEASURE_NAMES[measure][0].upper()}{MEASURE_NAMES[measure][1:]}, mean of "
                         f"{len(rows[other]['seeds'])} seeds: {other} {mine['mean']:.2f}, {base_name} "
                         f"{theirs['mean']:.2f}; {words[outcome]}.")
    for name in [other, *(n for n in rows if n != other)]:
        final = rows[name]["final_valid_sharpe"]
        where = "above" if final["min"] > hold else "below" if final["max"] < hold else "on both sides of"
        sentences.append(f"{name}: its seeds ended {where} buy-and-hold's {hold:.2f}; training moved the mean by "
                         f"{final['mean'] - reading['untrained'][name]:+.2f} from the untrained policy's "
                         f"{reading['untrained'][name]:.2f}.")
    return sentences


def factor_text(record: Mapping, reading: Mapping):
    """The with/without result: a headline on whether training helped at all (each run against its
    own untrained policy), then `factor_sentences` as a list. Returns a `Markdown`."""
    moved, runs, below = reading["moved"], reading["runs"], reading["below"]
    if all(max(changes) < 0 for changes in moved.values()):
        headline = (f"**Training hurt both variants.** All {runs} runs ended with a lower validation Sharpe than their "
                    "own untrained policy, so the with/without comparison asks which variant lost less, not which one "
                    "learned more.")
    else:
        headline = (f"{below} of {runs} runs ended with a lower validation Sharpe than their own untrained policy.")
    return _markdown(headline + "\n\n" + "\n".join(f"* {s}" for s in factor_sentences(record, reading)))


def factor_tests_table(tests: pd.DataFrame, record: Mapping) -> pd.DataFrame:
    """`teaching.sweep_comparisons` of a with/without record as a small table: per measure, the mean
    paired difference over the seeds, the paired t-test's p-value and its Holm adjustment, and the
    non-overlap verdict."""
    table = tests.assign(measure=tests["measure"].map(MEASURE_NAMES))
    table = table.set_index("measure")[["mean difference", "p (paired t)", "p (Holm)", "non-overlap verdict"]]
    return table.rename_axis(f"{tests['variant'].iloc[0]} − {record['base_variant']}")


def factor_tests_text(tests: pd.DataFrame, chance: float, seeds: int):
    """What the paired tests of a with/without record say, in two sentences: the non-overlap rule's
    false-alarm chance with ``seeds`` seeds (`teaching.chance_of_no_overlap`), and the smallest
    Holm-adjusted p-value of `teaching.sweep_comparisons` with what it shows. Returns a `Markdown`."""
    smallest = tests["p (Holm)"].min()
    return _markdown(
        f"With no effect at all, the non-overlap rule calls a difference {chance:.0%} of the time with {seeds} seeds "
        f"per variant. The paired t-test, Holm-corrected over both measures, gives p = {smallest:.2f} at best: "
        + ("no difference is shown, and none is ruled out either." if smallest >= 0.05 else
           "below the 5 % level, a difference (exploratory with so few seeds)."))


def factor_method(record: Mapping) -> MethodNote:
    """How the with/without record was made (`_caption_blocks`: date, machine, seeds, budget and the
    command that makes it again, as code). Returns a :class:`MethodNote`."""
    return how_measured(*_caption_blocks(record, "bench_factor.json", reader_out="runs/bench_factor.json"))


def factor_box(mine, facts: Mapping, result, bt, live: Mapping, dividend_gap: float, record: Mapping,
               reading: Mapping, tests: pd.DataFrame):
    """The box at the end of chapter 7: this run's file, training and backtest, live with/without
    runs and the dividends the file misses; the committed record's with/without verdict (the
    non-overlap rule has no equivalence margin, so an uncalled comparison is inconclusive, never a
    tie), buy-and-hold and the paired tests. Returns a `MeasuredBox`."""
    rows = reading["rows"]
    verdict = rows["with_factor"].get("final_valid_sharpe_vs_base", "n/a")
    verdict = "inconclusive" if verdict in ("tie", "inconclusive") else verdict
    return _measured_box(
        this_run={
            "file": f"{len(mine.full.tickers)} stocks, {facts['trading_days']} trading days, "
                    f"features {', '.join(facts['features'])}",
            "training on the file": f"{result.env_steps:,} env-steps in {result.wall_seconds:.1f} s, "
                                    f"test Sharpe {bt.table().loc['agent', 'sharpe_ratio']:.2f}",
            "live with/without": f"{len(live['runs'])} runs of {live['total_steps']:,} env-steps",
            "dividends missing from the file (2 % yield)": f"{dividend_gap:+.1%} of buy-and-hold's test return",
        },
        committed={
            "bench_factor.json": f"{record['date']}, seeds {record['seeds']}, {record['total_steps']:,} env-steps per run",
            "with vs without the factor (final validation Sharpe)": (
                f"{rows['with_factor']['final_valid_sharpe']['mean']:.2f} vs "
                f"{rows['without_factor']['final_valid_sharpe']['mean']:.2f}: {verdict}"),
            "buy-and-hold (validation Sharpe)": f"{reading['hold']:.2f}",
            "paired test over the seeds": ", ".join(f"{r['measure']}: p {r['p (paired t)']:.2f}"
                                                    for r in tests.to_dict("records")),
        },
        shows="that a file of your own, with a factor of your own, validates, reaches the observation, trains and "
              "backtests; and, at full size with three seeds, whether the factor changed the validation Sharpe "
              "beyond the seed spread (exploratory)",
        does_not_show="whether the factor carries information in general (one file, one budget, three seeds), or "
                      "anything about the test split for the with/without comparison",
    )
