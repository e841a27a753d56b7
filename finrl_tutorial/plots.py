"""Figures: equity curves and portfolio weights (backtests), learning curves (training), bars
(benchmarks).

Every function builds a :class:`matplotlib.figure.Figure` directly (not through
``pyplot``), so it works under any backend, including headless ``Agg`` in CI, and does
not accumulate open figures in ``pyplot``'s global state. Each returns the figure; in a
notebook, a figure returned as the cell's last expression is displayed (or call
``display(fig)``). With ``path`` given, the figure is also written there atomically:
rendered to a temporary file in the same directory, then moved into place with
``os.replace``, so a reader never sees a half-written image.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.artist import setp
from matplotlib.figure import Figure

from .atomic import save_figure
from .metrics import _validate_wealth, drawdown_series

__all__ = ["plot_equity", "plot_learning_curve", "plot_band", "plot_bars", "plot_weights", "save_figure"]


def _finish(fig: Figure, path: str | os.PathLike | None) -> Figure:
    if path is not None:
        save_figure(fig, path)
    return fig


def plot_equity(
    curves: Mapping[str, pd.Series],
    path: str | os.PathLike | None = None,
    title: str = "Equity curve",
    highlight: str | None = "agent",
    relative_to: str | None = None,
) -> Figure:
    """Wealth curves normalised to 1.0 (top) and their drawdowns in % (bottom).

    ``relative_to`` (a label of ``curves``, e.g. ``"equal_weight_buy_and_hold"``) adds a middle
    axis: each other curve's wealth over that one's, ``100 * (W_t / R_t - 1)`` in % (with
    ``W_0 = R_0``), so that curves the top axis draws on top of each other can be told apart. It
    frames the highlighted curve (at least ±3 %) and names the curves that leave it.

    ``curves`` maps a label (strategy, agent, benchmark) to a wealth series indexed by
    date. Top axis: ``W_t / W_0``, with the start (1.0) as the reference line. Bottom axis:
    ``100 * (W_t / max_{s<=t} W_s - 1)``, one line per curve, the highlighted curve's also filled down
    from 0 (overlapping filled areas would hide each other). The two axes share the x-axis.

    The curve labelled ``highlight`` (the agent, by default) is the one the figure is about:
    it is drawn last, on top of the baselines, in black and twice as wide, and heads the legend,
    so the baselines that track it closely cannot hide it. ``highlight=None`` (or a label not in
    ``curves``) draws every curve alike.
    """
    if not curves:
        raise ValueError("plot_equity needs at least one curve")
    if relative_to is not None and relative_to not in curves:
        raise ValueError(f"plot_equity: relative_to={relative_to!r} is not one of the curves {list(curves)}")
    heights = [3, 1] if relative_to is None else [3, 1.6, 1]
    fig = Figure(figsize=(10, 6 if relative_to is None else 8), layout="constrained")
    axes = fig.subplots(len(heights), 1, sharex=True, gridspec_kw={"height_ratios": heights})
    ax_w, ax_dd = axes[0], axes[-1]
    hero = highlight if highlight in curves else None
    order = [label for label in curves if label != hero] + ([hero] if hero is not None else [])
    handles, norms, styles = {}, {}, {}
    for rank, label in enumerate(order):
        w = _validate_wealth(curves[label], name=f"curve {label!r}")
        norm = w / w.iloc[0]
        dd = drawdown_series(w)
        style = (dict(color="black", linewidth=2.4, zorder=10) if label == hero
                 else dict(linewidth=1.1, alpha=0.85, zorder=2 + rank))
        (line,) = ax_w.plot(norm.index, norm.to_numpy(), label=str(label), **style)
        handles[label], norms[label], styles[label] = line, norm, style
        if label == hero or hero is None and len(curves) == 1:  # one filled area: several overlap into mud
            ax_dd.fill_between(dd.index, 100.0 * dd.to_numpy(), 0.0, color=line.get_color(), alpha=0.12,
                               linewidth=0, zorder=style["zorder"])
        ax_dd.plot(dd.index, 100.0 * dd.to_numpy(), color=line.get_color(),
                   linewidth=1.6 if label == hero else 0.7, zorder=style["zorder"])
    ax_w.axhline(1.0, color="grey", linewidth=0.6, linestyle="--")
    ax_w.set_ylabel("wealth (start = 1)")
    ax_w.set_title(title)
    legend_order = ([hero] if hero is not None else []) + [label for label in curves if label != hero]
    ax_w.legend([handles[label] for label in legend_order], [str(label) for label in legend_order], loc="best")
    ax_w.grid(alpha=0.3)
    if relative_to is not None:
        ax_rel, ratios = axes[1], {}
        for label in order:  # the same order, colours and widths as the top axis
            if label != relative_to:
                ratios[label] = 100.0 * (norms[label] / norms[relative_to].reindex(norms[label].index) - 1.0)
                ax_rel.plot(ratios[label].index, ratios[label].to_numpy(), color=handles[label].get_color(),
                            linewidth=styles[label]["linewidth"], zorder=styles[label]["zorder"],
                            alpha=styles[label].get("alpha", 1.0))
        ax_rel.axhline(0.0, color=handles[relative_to].get_color(), linewidth=1.2, linestyle="--")
        ax_rel.set_ylabel(f"above {relative_to} (%)", fontsize="small")
        ax_rel.grid(alpha=0.3)
        if hero is not None and hero in ratios:
            # the axis frames the highlighted curve (at least ±3 %): a curve far away would flatten it
            half = 1.3 * max(3.0, float(ratios[hero].abs().max()))
            ax_rel.set_ylim(-half, half)
            outside = [label for label, ratio in ratios.items() if float(ratio.abs().max()) > half]
            if outside:
                ax_rel.text(0.01, 0.03, "leave the axis: " + ", ".join(outside), transform=ax_rel.transAxes,
                            fontsize="x-small", color="dimgrey", va="bottom")
    ax_dd.set_ylabel("drawdown (%)")
    ax_dd.set_xlabel("date")
    ax_dd.grid(alpha=0.3)
    setp(ax_dd.get_xticklabels(), rotation=30, horizontalalignment="right")
    return _finish(fig, path)


def plot_learning_curve(
    log: pd.DataFrame,
    x: str | None = "env_steps",
    y: str | Iterable[str] = ("train/final_wealth", "valid/sharpe_ratio", "loss/entropy"),
    path: str | os.PathLike | None = None,
) -> Figure:
    """One stacked subplot per ``y`` column of a training log, against column ``x``.

    The defaults are columns of the trainer's ``log.csv`` (`finrl_tutorial.training.LOG_COLUMNS`):
    mean final wealth of the training episodes, validation Sharpe, policy entropy.

    Columns of ``y`` missing from ``log`` are skipped; within each column, rows where
    ``x`` or that column is NaN are dropped (train and validation metrics are usually
    logged at different steps). ``x=None`` uses the frame's index. Raises
    ``ValueError`` if none of the ``y`` columns is present.
    """
    ys = [y] if isinstance(y, str) else list(y)
    present = [c for c in ys if c in log.columns]
    if not present:
        raise ValueError(f"none of the columns {ys} is in the log; it has {list(log.columns)}")
    if x is not None and x not in log.columns:
        raise ValueError(f"x column {x!r} is not in the log; it has {list(log.columns)}")
    xs = log.index.to_series() if x is None else log[x]
    xlabel = (log.index.name or "index") if x is None else x

    fig = Figure(figsize=(8, 2.8 * len(present)), layout="constrained")
    axes = np.atleast_1d(fig.subplots(len(present), 1, sharex=True, squeeze=False)[:, 0])
    for ax, col in zip(axes, present):
        data = pd.DataFrame({"x": xs.to_numpy(), "y": log[col].to_numpy()}).dropna()
        ax.plot(data["x"].to_numpy(), data["y"].to_numpy(), marker="." if len(data) < 50 else None)
        ax.set_title(col, fontsize="medium")
        ax.grid(alpha=0.3)
    axes[-1].set_xlabel(xlabel)
    return _finish(fig, path)


def plot_band(
    curves: Mapping[str, pd.DataFrame],
    x: str,
    path: str | os.PathLike | None = None,
    ylabel: str = "",
) -> Figure:
    """Mean line and mean ± std band over seeds, one per label.

    ``curves`` maps a label to a frame indexed by ``x`` (e.g. environment steps) with
    one column per seed. At each ``x``: ``mean = df.mean(axis=1)`` and
    ``std = df.std(axis=1, ddof=1)`` over the seeds present (NaN ignored; std taken as
    0 where only one seed has a value); rows with no value at all are dropped.
    ``x`` is the x-axis label.
    """
    if not curves:
        raise ValueError("plot_band needs at least one curve")
    fig = Figure(figsize=(8, 4.5), layout="constrained")
    ax = fig.subplots()
    for label, df in curves.items():
        frame = pd.DataFrame(df).sort_index().dropna(how="all")
        if frame.empty:
            continue
        mean = frame.mean(axis=1).to_numpy(dtype=float)
        std = frame.std(axis=1, ddof=1).fillna(0.0).to_numpy(dtype=float)
        idx = frame.index.to_numpy()
        (line,) = ax.plot(idx, mean, label=f"{label} (n={frame.shape[1]})", linewidth=1.4)
        ax.fill_between(idx, mean - std, mean + std, color=line.get_color(), alpha=0.2, linewidth=0)
    ax.set_xlabel(x)
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="best")
    return _finish(fig, path)


def _fmt_bar(v: float) -> str:
    """1234567 -> '1,234,567'; 0.01234 -> '0.0123'."""
    return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.3g}"


def plot_bars(
    values: Mapping[str, float],
    path: str | os.PathLike | None = None,
    ylabel: str = "",
    log: bool = False,
) -> Figure:
    """Bar chart of ``values`` (label -> number), each bar annotated with its value.

    Meant for throughput benchmarks (e.g. env steps per second per configuration).
    ``log=True`` uses a log y-axis and then requires every value to be > 0.
    """
    if not values:
        raise ValueError("plot_bars needs at least one value")
    labels = [str(k) for k in values]
    heights = np.asarray([float(v) for v in values.values()], dtype=float)
    if not np.isfinite(heights).all():
        raise ValueError("plot_bars values must be finite")
    if log and (heights <= 0).any():
        raise ValueError("log=True needs every value > 0")
    fig = Figure(figsize=(max(5.0, 0.9 * len(labels) + 2), 4), layout="constrained")
    ax = fig.subplots()
    bars = ax.bar(labels, heights, color="tab:blue")
    ax.bar_label(bars, labels=[_fmt_bar(h) for h in heights], padding=2, fontsize="small")
    if log:
        ax.set_yscale("log")
    ax.set_ylabel(ylabel)
    ax.grid(axis="y", alpha=0.3)
    if len(labels) > 4:
        setp(ax.get_xticklabels(), rotation=30, horizontalalignment="right")
    return _finish(fig, path)


def plot_weights(
    weights: pd.DataFrame,
    path: str | os.PathLike | None = None,
    title: str = "Portfolio weights",
) -> Figure:
    """What a policy holds: each stock's share of wealth at each close, stacked (cash on top).

    ``weights`` is an `EpisodeRecord.weights` frame (dates × tickers, each row summing to ≤ 1).
    """
    if weights is None or weights.empty:
        raise ValueError("plot_weights needs a non-empty weights frame")
    values = weights.clip(lower=0.0).to_numpy(dtype=float).T
    cash = np.clip(1.0 - values.sum(axis=0), 0.0, 1.0)
    fig = Figure(figsize=(10, 4), layout="constrained")
    ax = fig.subplots()
    # one distinct colour per stock (tab20, then a continuous map past 20) and light grey for cash
    count = len(weights.columns)
    palette = matplotlib.colormaps["tab20"].colors if count <= 20 else \
        [matplotlib.colormaps["turbo"](i / max(count - 1, 1)) for i in range(count)]
    colors = [*palette[:count], (0.85, 0.85, 0.85)]
    ax.stackplot(weights.index, *values, cash, labels=[*map(str, weights.columns), "cash"], colors=colors,
                 linewidth=0)
    ax.set_ylim(0.0, 1.0)
    ax.set_ylabel("share of wealth")
    ax.set_title(title)
    ax.legend(loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize="small")
    ax.grid(alpha=0.3)
    return _finish(fig, path)
