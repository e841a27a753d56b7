"""Reading committed benchmark records: the tables and sentences of chapters 4-8, as pure functions.

Every function takes records (the dicts of a ``bench`` JSON-lines file, or a ``report.json``) and
returns a table or sentences computed from them; nothing here measures or reads files, so the same
reading serves the book, the README and the tests. Fields a newer record may add are used when
present; records without them are still read.
"""
from __future__ import annotations

import re
from typing import Iterable

import pandas as pd

from ..errors import InputError
from ..metrics import TIE_MARGIN, stored_verdict, verdict_reason


#: The keys of :func:`finrl_tutorial.provenance.machine` that a JSON-lines record carries at its top level.
MACHINE_KEYS = ("cpu_count", "platform", "torch", "threads")


def _frame(records: Iterable[dict] | pd.DataFrame) -> pd.DataFrame:
    return records.copy() if isinstance(records, pd.DataFrame) else pd.DataFrame(list(records))


def _joined(values) -> str:
    return ", ".join(map(str, sorted(set(values))))


_ARCHITECTURES = {"x86_64": "x86-64", "amd64": "x86-64", "aarch64": "ARM64", "arm64": "ARM64"}


def short_platform(platform: str) -> str:
    """The operating system and processor architecture of a ``platform.platform()`` string
    (``"Linux-6.18.44-…-x86_64-with-glibc2.36"`` → ``"Linux x86-64"``): the kernel build says nothing
    about a speed a reader can compare."""
    parts = str(platform).split("-")
    arch = next((_ARCHITECTURES[part.lower()] for part in parts if part.lower() in _ARCHITECTURES), "")
    return " ".join(part for part in (parts[0], arch) if part)


_CODE = re.compile(r"\b[\w.]+\(\)|\b\w+ = [\w*/+\-.()]+|\b[\w.]+(?:/[\w.]+)+\.py\b")


def code_spans(text: str) -> str:
    """``text`` with the code in it (a call such as ``torch.cuda.synchronize()``, a formula such as
    ``rate = n*steps/seconds``, a file such as ``envs/env.py``) set in backticks, so that Markdown prints it as code, not as italics."""
    return _CODE.sub(lambda match: f"`{match.group(0)}`", str(text))


def provenance(records: Iterable[dict] | pd.DataFrame) -> dict:
    """Where and when a file of records was measured: count, time span (UTC), cores, threads,
    torch, GPU and platform (operating system and architecture, `short_platform`; a nested ``machine``
    dict is read like top-level machine keys)."""
    frame = _frame(records)
    if "machine" in frame:  # report-style records: {"machine": {...}, ...}
        nested = pd.DataFrame([m if isinstance(m, dict) else {} for m in frame["machine"]])
        for key in nested:
            frame[key] = frame[key].fillna(nested[key]) if key in frame else nested[key]
    dates = pd.to_datetime(frame["date"], utc=True)
    gpus = frame["gpu"].dropna() if "gpu" in frame else []
    return {
        "records": len(frame),
        "measured": f"{dates.min():%Y-%m-%d %H:%M} .. {dates.max():%H:%M} UTC",
        "CPU cores": _joined(frame["cpu_count"]),
        "torch threads": _joined(frame["threads"]),
        "torch": _joined(frame["torch"]),
        "GPU": _joined(gpus) if len(gpus) else "none",
        "platform": _joined(frame["platform"].map(short_platform)),
    }


def env_throughput_table(env_records: Iterable[dict] | pd.DataFrame) -> pd.DataFrame:
    """Env steps/s by number of sub-envs (rows) and kind of env (columns), from ``bench env``."""
    return _frame(env_records).pivot_table(index="num_envs", columns="env", values="env_steps_per_s")


def loop_cost_lines(train_records: Iterable[dict] | pd.DataFrame) -> list[str]:
    """For the largest ``bench train`` size: the rollout's rate, the whole loop's rate and the
    share of the time the update takes, each from one record. No share of the bare env's rate
    is given: ``bench train`` does not measure the bare env, and a ``bench env`` record is another
    run (`rollout_share_table` reads the share from rows that measured both together)."""
    loop = _frame(train_records)
    largest = int(loop["num_envs"].max())
    at = loop[loop["num_envs"] == largest].set_index("algo")
    lines = []
    for algo, r in at.iterrows():
        rollout_rate, total_rate = r["rollout_env_steps_per_s"], r["samples_per_s"]
        share = 1 - total_rate / rollout_rate  # (1/total - 1/rollout) / (1/total)
        lines.append(f"{algo.upper()} with {largest:,} envs: rollout {rollout_rate:,.0f}/s, "
                     f"whole loop {total_rate:,.0f}/s: the update takes {share:.0%} of the time")
    return lines


def rollout_share_table(records: Iterable[dict] | pd.DataFrame, layout: str = "vec") -> pd.DataFrame:
    """Rows that measured the bare env, its rollout and the whole training loop together (the
    ``vec`` rows of a ``bench scale`` record up to ``--loop-max-envs``), one per size: the three
    rates, the rollout's share of the bare env's rate and the update's share of the loop's time.
    Every ratio is within one row, so within one run of one machine."""
    frame = _frame(records)
    needed = ["env_steps_per_s", "rollout_env_steps_per_s", "samples_per_s"]
    if not set(needed) <= set(frame):
        raise InputError("the records hold no row that measured the bare env, its rollout and the loop together "
                         "(`bench scale` writes them in its vec rows)")
    rows = frame[(frame.get("layout") == layout) & frame[needed].notna().all(axis=1)]
    if rows.empty:
        raise InputError(f"the records hold no {layout} row with {', '.join(needed)}")
    rows = rows.sort_values("num_envs")
    return pd.DataFrame({
        "bare env (env-steps / s)": rows["env_steps_per_s"].to_numpy(),
        "rollout (env-steps / s)": rows["rollout_env_steps_per_s"].to_numpy(),
        "whole loop (samples / s)": rows["samples_per_s"].to_numpy(),
        "rollout ÷ bare env": (rows["rollout_env_steps_per_s"] / rows["env_steps_per_s"]).to_numpy(),
        "update's share of the loop": (1 - rows["samples_per_s"] / rows["rollout_env_steps_per_s"]).to_numpy(),
    }, index=pd.Index(rows["num_envs"].astype(int).to_numpy(), name="envs"))


def gpu_summary(gpu_records: Iterable[dict] | pd.DataFrame, reference: float) -> list[str]:
    """Sentences from ``bench gpu`` records: the best env rate, the rate at 4,096 envs × 15 stocks,
    each against ``reference`` env-steps/s, and the rollout and training rates."""
    gpu = _frame(gpu_records)
    sweep = gpu[(gpu["bench"] == "env") & gpu["env_steps_per_s"].notna()] if "env_steps_per_s" in gpu else gpu.iloc[:0]
    lines = []
    if len(sweep):
        best = sweep["env_steps_per_s"].max()
        lines.append(f"Best measured: {best:,.0f} env-steps/s ({best / reference:,.0f}× the reference).")
        at_4096 = sweep[(sweep["num_envs"] == 4096) & (sweep["stocks"] == 15)]
        if len(at_4096):
            same = at_4096["env_steps_per_s"].max()
            lines.append(f"At the reference's own shape (4,096 envs × 15 stocks): {same:,.0f} env-steps/s, "
                         f"{same / reference:,.1f}× the reference.")
    for r in gpu[gpu["bench"].isin(["rollout", "train"])].to_dict("records"):
        value = r.get("env_steps_per_s") if r["bench"] == "rollout" else r.get("samples_per_s")
        if value is not None and value == value:
            lines.append(f"{r['bench']} ({r.get('mode', 'eager')}), {int(r['num_envs']):,} envs: {value:,.0f} per second.")
    return lines


def peer_summary(peer_records: Iterable[dict]) -> dict:
    """The ``summary`` record of a ``bench peers`` file: one run per file (the readings pair each
    summary's ratios with the repeats of its own run, so two runs in one file would mix)."""
    summaries = [r for r in peer_records if r.get("measurement") == "summary"]
    if len(summaries) != 1:
        raise InputError(f"a bench peers file holds one run (one summary record), this one {len(summaries)}: "
                         "write each run to its own file (--out)")
    return summaries[0]


def peer_table(peer_records: Iterable[dict]) -> pd.DataFrame:
    """One row per peer measurement: library, label, median rate, min and max of the repeats,
    spread ((max − min) / median) and number of repeats."""
    frame = pd.DataFrame([r for r in peer_records if "label" in r])
    rate = frame["env_steps_per_s"] if "env_steps_per_s" in frame else pd.Series(float("nan"), index=frame.index)
    if "samples_per_s" in frame:
        rate = rate.fillna(frame["samples_per_s"])
    return pd.DataFrame({
        "library": frame["library"],
        "what": frame["label"],
        "per second (median)": rate,
        "min": frame["runs"].apply(min),
        "max": frame["runs"].apply(max),
        "spread": frame["spread"],
        "repeats": frame["repeats"],
    })


def _round_ratios(peer_records: list[dict], key: str) -> list[float]:
    """Round-by-round ratios ``numerator/denominator``: runs[i] of every record come from round i."""
    runs_of = {r["label"]: r["runs"] for r in peer_records if "runs" in r and "label" in r}
    numerator, denominator = key.split("/")
    return [a / b for a, b in zip(runs_of[numerator], runs_of[denominator])]


def peer_ratio_table(peer_records: Iterable[dict]) -> pd.DataFrame:
    """Ours ÷ peer: the ratio of medians and the range of the round-by-round ratios."""
    records = list(peer_records)
    ratios = peer_summary(records)["ratios"]
    rounds = {key: _round_ratios(records, key) for key in ratios}
    return pd.DataFrame({"ratio of medians": ratios,
                         "round by round: min": {k: min(v) for k, v in rounds.items()},
                         "max": {k: max(v) for k, v in rounds.items()}})


def peer_target_lines(peer_records: Iterable[dict]) -> list[str]:
    """Each target of the peers record (met or not, with its round-by-round range), the peers that
    were skipped, and whether ElegantRL ran on a GPU in this record."""
    records = list(peer_records)
    summary = peer_summary(records)
    lines = []
    for name, target in summary["targets"].items():
        verdict = {True: "met", False: "**not met**", None: "not comparable (other stock count)"}[target["met"]]
        rounds = _round_ratios(records, f"{target['best']}/{name.split('_vs_')[1]}")
        lines.append(f"* `{name}`: {target['ratio']:,.1f}× with `{target['best']}` (round by round "
                     f"{min(rounds):,.1f}× .. {max(rounds):,.1f}×; target {target['target']:.0f}×): {verdict}.")
    if not any(r.get("library") == "elegantrl" and r.get("device", "cpu") != "cpu" for r in records):
        classes = sorted({r["env"].rsplit(".", 1)[-1] for r in records if r.get("library") == "elegantrl" and r.get("env")})
        named = f" ({', '.join(f'`{name}`' for name in classes)})" if classes else ""
        lines.append(f"* ElegantRL's vectorised env{named} ran on the CPU only in this record: no GPU figure of it "
                     "is measured here.")
    finrl = [r.get("imported") for r in records if r.get("label") == "finrl_env" and r.get("imported")]
    if finrl:
        lines.append(f"* FinRL's env was imported from its {finrl[0]}.")
    for name in summary.get("skipped", {}):
        lines.append(f"* `{name}` could not run on this machine; the ratios that need it are missing.")
    return lines


def full_run_commentary(report: dict, margin: float | None = None) -> list[str]:
    """What a committed multi-seed ``report.json`` says, computed from it: the agent's test Sharpe
    (mean ± std over seeds) against each baseline, the bootstrap interval against equal-weight
    buy-and-hold and its verdict (recomputed from the interval with the tie margin ``margin``; None:
    the report's own, else `finrl_tutorial.metrics.TIE_MARGIN`), the spread of the seeds, and the
    validation Sharpes."""
    agent, std = report["agent"], report["agent_std"]
    seeds = report["seeds"]
    baselines = report["baselines"]
    hold = baselines["equal_weight_buy_and_hold"]
    versus = report["sharpe_vs_buy_and_hold"]
    # recomputed from the stored bounds: reports written before the tie margin call every interval holding 0 a tie
    margin = versus.get("margin", TIE_MARGIN) if margin is None else margin
    verdict = stored_verdict(versus, margin)
    per_seed = [row["sharpe_ratio"] for row in report["agent_per_seed"].values()] \
        if isinstance(report["agent_per_seed"], dict) else [row["sharpe_ratio"] for row in report["agent_per_seed"]]
    lines = [
        f"* Test Sharpe of the agent: {agent['sharpe_ratio']:.2f} ± {std['sharpe_ratio']:.2f} over "
        f"{len(seeds)} seeds (seeds range {min(per_seed):.2f} .. {max(per_seed):.2f}); equal-weight "
        f"buy-and-hold {hold['sharpe_ratio']:.2f}.",
        f"* Sharpe difference against buy-and-hold: {versus['difference']:+.2f}, 95 % paired block-bootstrap "
        f"interval [{versus['low']:+.2f}, {versus['high']:+.2f}]: **{verdict}**"
        + (f" ({verdict_reason(verdict, margin, versus['low'], versus['high'])})." if verdict in ("tie", "inconclusive")
           else "."),
    ]
    others = {name: row["sharpe_ratio"] for name, row in baselines.items() if name != "equal_weight_buy_and_hold"}
    if others:
        within = [name for name, value in others.items() if abs(value - agent["sharpe_ratio"]) <= std["sharpe_ratio"]]
        lines.append("* Other baselines' test Sharpe: " + ", ".join(f"{n} {v:.2f}" for n, v in others.items())
                     + (f"; within one seed-std of the agent: {', '.join(within)}." if within
                        else "; none within one seed-std of the agent."))
    lines.append(f"* Return: agent {agent['cumulative_return']:+.1%} ± {std['cumulative_return']:.1%}, "
                 f"buy-and-hold {hold['cumulative_return']:+.1%}; turnover {agent['turnover']:.2%} a day "
                 f"against buy-and-hold's {hold['turnover']:.2%}.")
    valid = report.get("valid_sharpe_per_seed")
    if valid:
        values = list(valid.values()) if isinstance(valid, dict) else list(valid)
        sign = ("negative for every seed" if max(values) < 0 else "positive for every seed" if min(values) > 0
                else "of both signs across seeds")
        lines.append(f"* Validation Sharpe (the year that chose each checkpoint): {min(values):.2f} .. "
                     f"{max(values):.2f}, {sign}.")
    return lines
