"""Chapter 1's readings (``book/01_ashare_demo.ipynb``): the tables and figures the A-share demo
shows, so that its visible code keeps to the library calls a reader reuses. The chapter writes its
sentences as Markdown, each number checked against its record by a hidden cell.

Each function reads what the chapter has in hand (a loaded market, the account's daily rows, a
training result, a backtest table, the stored records `MAIN_JOB_RECORD`,
``bench_sweep.json`` and ``bench_learn.json``) and returns a DataFrame, a small dict, a one-line printout, the chapter's
closing box or folded method block, or draws on the matplotlib Axes or Figure passed in. None trains
or measures anything itself.
"""
from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Mapping

import numpy as np
import pandas as pd
from .folded import MethodNote, how_measured as folded_note
from .teaching import ran_plain_learner, reader_command

__all__ = ["MAIN_JOB_RECORD", "source_summary", "longest_stretch", "plot_suspensions", "plot_ex_day", "own_moves", "ex_day_sizing",
           "cash_label", "cash_labels", "sizing_table", "budget_table", "mark_learning_curve", "with_extra_dividend", "seeds_below_hold",
           "recorded_table", "validation_curves", "distance_from_untrained", "planted_learning", "how_measured",
           "chapter_box"]

MAIN_JOB_RECORD = "main_job_pathwise_5seeds_report.json"
"""The recorded five-seed run of ``python -m finrl_tutorial train --seeds 5`` with the package's
defaults (the default learner) that chapters 1 and 8 read. ``main_job_5seeds_report.json`` is the
same command with the plain learner (2026-12-04)."""


# --------------------------------------------------------------------------- 1.1-1.3: data

def source_summary(source: str, live) -> str:
    """One line on what a provider returned: ``live`` is the `PreparedMarket` that
    ``load_market(source, ...)`` made; its trading days, dates, tickers, the corporate actions found
    and whether the CSI 300 came along."""
    facts = live.summary()
    first, last = facts["date_range"]
    actions = len(facts["corporate_actions"])
    index = "with" if live.benchmark is not None else "without"
    return (f"{source}: {facts['trading_days']} trading days ({first} .. {last}) of {', '.join(facts['tickers'])}; "
            f"{actions} corporate action{'' if actions == 1 else 's'}; {index} the CSI 300")


def longest_stretch(flags: pd.Series) -> tuple:
    """The longest run of consecutive True values of ``flags`` (a boolean Series indexed by date):
    ``(first date, last date, length)``, dates as ``datetime.date``; ``(None, None, 0)`` when none is
    True. The earliest run wins a tie."""
    flags = flags.astype(bool)
    if not flags.any():
        return None, None, 0
    runs = (flags != flags.shift()).cumsum()[flags]
    lengths = runs.groupby(runs).size()
    best = lengths.idxmax()  # the first of the longest (groups are numbered in date order)
    days = runs.index[runs == best]
    return pd.Timestamp(days[0]).date(), pd.Timestamp(days[-1]).date(), int(lengths[best])


def plot_suspensions(ax, market, splits: Mapping) -> None:
    """Draw on ``ax`` a map of ``market``'s suspended days (red: the stock had no bar), one row per
    stock, with a dashed line and the name at the start of each split (``splits``: name →
    `MarketData`, as ``prepared.splits``)."""
    dates = pd.DatetimeIndex(market.dates)
    halted = (~market.tradable).numpy().T.astype(float)  # [stock, day], 1 = suspended
    rows = np.arange(market.num_stocks)
    ax.pcolormesh(dates, rows, halted, cmap="Reds", vmin=0, vmax=1.5, shading="nearest")
    ax.set_yticks(rows, market.tickers, fontsize="small")
    ax.invert_yaxis()
    for name, split in splits.items():
        ax.axvline(pd.Timestamp(split.first_date), color="grey", linewidth=0.8, linestyle="--")
        ax.text(pd.Timestamp(split.first_date), -0.6, f" {name}", fontsize="small", va="bottom")
    ax.set_title("Suspended days (red): the stock had no bar, so it could not trade", pad=14)


# --------------------------------------------------------------------------- 1.4: an ex-rights day

def _close_drop(held: pd.DataFrame, ex_day) -> float:
    """How far the raw close fell on ``ex_day`` against the row before it (0.22 = 22 %)."""
    at = held.index.get_loc(pd.Timestamp(ex_day))
    return float(1 - held["close"].iloc[at] / held["close"].iloc[at - 1])


def plot_ex_day(ax, held: pd.DataFrame, ex_day, ticker: str) -> None:
    """Draw on ``ax`` the raw close of ``ticker`` and the wealth of the account holding it, both as a
    multiple of their first day, with the ex-rights day marked; ``held`` has one row per day (index:
    dates) with columns ``close`` and ``wealth``. The title states the close's drop on ``ex_day``."""
    import matplotlib.dates as mdates

    day = pd.Timestamp(ex_day)
    ax.plot(held.index, held["close"] / held["close"].iloc[0], label=f"{ticker} raw close (unadjusted)",
            color="tab:red")
    ax.plot(held.index, held["wealth"] / held["wealth"].iloc[0], label="account holding it (env)",
            color="tab:blue", linewidth=2)
    ax.axvline(day, color="grey", linestyle="--", linewidth=1)
    ax.annotate("ex-rights day", (day, 0.5), xycoords=("data", "axes fraction"), xytext=(6, 0),
                textcoords="offset points", color="grey")
    ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(ax.xaxis.get_major_locator()))
    ax.set_ylabel("value (first day = 1)")
    ax.set_title(f"An ex-rights day: the raw close falls {100 * _close_drop(held, day):.0f} %, "
                 "the holding does not (no fake loss)")
    ax.legend(loc="lower left")
    ax.grid(alpha=0.3)


def own_moves(market) -> np.ndarray:
    """What a detected ex-rights reference cannot see: on ordinary days (no corporate action, the
    stock traded that day and the day before), each stock's close-to-close move minus the median
    move of the other stocks that day (days with at least 3 others). All stocks' values, one array."""
    moves = (market.close / market.pre_close - 1).numpy()
    tradable = market.tradable.numpy()
    ordinary = tradable & np.vstack([np.zeros((1, market.num_stocks), bool), tradable[:-1]])
    ordinary &= market.split_ratio.numpy() == 1
    residuals = []
    with warnings.catch_warnings():  # a day where no other stock traded has no median (NaN, left out)
        warnings.simplefilter("ignore", RuntimeWarning)
        for k in range(market.num_stocks):
            others = np.where(ordinary, moves, np.nan)
            others[:, k] = np.nan
            median = np.nanmedian(others[1:], axis=1)
            keep = ordinary[1:, k] & (np.isfinite(others[1:]).sum(axis=1) >= 3)
            residuals.append(moves[1:, k][keep] - median[keep])
    return np.concatenate(residuals)


def ex_day_sizing(market, detected: pd.DataFrame, ticker: str, ex_day: str) -> dict:
    """How the cleaning sized the detected ex-day ``ex_day`` of ``ticker``: ``detected`` is the table
    of ``market.info["detected_actions"]``. Returns a dict: ``market_move`` (the other tradable
    stocks' median close-to-close move that day), ``residuals`` (`own_moves`), ``evidence`` (the
    detected row), ``feasible_reference`` (low, high: what the day's prices allow), ``previous_close``,
    ``reference`` and ``bonus`` (bonus shares per share) of the estimate, ``dividend`` (its cash per
    share), ``cash_range`` (the cash part the feasible references allow at that bonus),
    ``cash_at_reference`` (bonus shares per 10 → the cash per share the reference leaves, at 2, 3, 4),
    ``open`` and ``close`` of the day."""
    dates = pd.DatetimeIndex(market.dates)
    j = market.tickers.index(ticker)
    d = int(np.flatnonzero(dates == pd.Timestamp(ex_day))[0])
    moves = (market.close[d] / market.pre_close[d] - 1).numpy()
    others = [k for k in range(market.num_stocks) if k != j and bool(market.tradable[d, k])]
    reference, bonus = float(market.pre_close[d, j]), float(market.split_ratio[d, j]) - 1
    evidence = detected[(detected["tic"] == ticker) & (detected["date"].astype(str).str[:10] == ex_day)].iloc[0]
    low_ref, high_ref = (float(value) for value in evidence["feasible_reference"])
    previous = float(evidence["previous_close"])
    return {
        "market_move": float(np.median(moves[others])), "residuals": own_moves(market), "evidence": evidence,
        "feasible_reference": (low_ref, high_ref), "previous_close": previous, "reference": reference,
        "bonus": bonus, "dividend": float(market.dividend[d, j]),
        "cash_range": (max(0.0, previous - (1 + bonus) * high_ref), previous - (1 + bonus) * low_ref),
        "cash_at_reference": {b: previous - (1 + b / 10) * reference for b in (2, 3, 4)},
        "open": float(market.open[d, j]), "close": float(market.close[d, j]),
    }


CANNOT_TELL = "within a day's noise: cannot tell"
"""The label of a detected ex-day's cash part that one ordinary day's own move could produce."""
BEYOND_NOISE = "beyond a day's noise"
"""The label of a detected ex-day's cash part larger than one ordinary day's own move."""


def cash_label(cash: float, previous_close: float, noise: float) -> str:
    """How far a detected ex-day's estimated cash part can be trusted: ``cash`` (yuan a share)
    against the estimate of no cash at all. Their difference, as a share of ``previous_close``, is
    compared with ``noise``, the standard deviation of a stock's own move on ordinary days
    (`own_moves`): the reference absorbs the stock's own opening gap (1.4), so a difference within
    one such move is `CANNOT_TELL`; a larger one is `BEYOND_NOISE`. The label says no more than the
    noise allows; the cleaning's ``confidence`` is about the bonus shares only."""
    return CANNOT_TELL if abs(cash) / previous_close <= noise else BEYOND_NOISE


def cash_labels(detected: pd.DataFrame, noise: float) -> pd.Series:
    """`cash_label` of every detected ex-day of ``detected`` (``market.info["detected_actions"]`` as
    a table), against ``noise`` (the std of `own_moves`): one label a row, on ``detected``'s index."""
    return pd.Series([cash_label(row.cash_dividend, row.previous_close, noise) for row in detected.itertuples()],
                     index=detected.index, name="cash part")


def sizing_table(sizing: Mapping, ex_day: str) -> pd.DataFrame:
    """`ex_day_sizing`'s reading as a table of three groups: what a reference cannot see (the
    market's move on ``ex_day`` and a stock's own moves on ordinary days), the evidence the day's
    bars give (the cleaning's confidence, which is about the bonus shares, and the cash part's own
    `cash_label`), and the estimate. One column of values, written out (percent, yuan)."""
    evidence, residuals = sizing["evidence"], sizing["residuals"]
    low_ref, high_ref = sizing["feasible_reference"]
    cash_low, cash_high = sizing["cash_range"]
    per_10 = 10 * sizing["bonus"]
    cash_at = sizing["cash_at_reference"]
    rows = [
        ("what a reference cannot see", f"market move on {ex_day} (median of the other stocks)",
         f"{sizing['market_move']:+.2%}"),
        ("what a reference cannot see", "ordinary days: a stock's own move against that median, std",
         f"{residuals.std():.1%}"),
        ("what a reference cannot see", "ordinary days: the same, mean absolute", f"{np.abs(residuals).mean():.1%}"),
        ("evidence", "the day's low", f"{float(evidence['low']):.2f}"),
        ("evidence", "limit-down from the last close", f"{float(evidence['limit_down_from_previous_close']):.2f}"),
        ("evidence", "reference the day's prices allow", f"{low_ref:.2f} .. {high_ref:.2f}"),
        ("evidence", f"cash part that range allows, a share, at {per_10:.0f} bonus shares per 10",
         f"¥{cash_low:.2f} .. ¥{cash_high:.2f}"),
        ("evidence", "cash a share the reference leaves at " + ", ".join(f"{b}" for b in cash_at) + " per 10",
         ", ".join(f"¥{cash:.2f}" for cash in cash_at.values())),
        ("evidence", "cap on the cash part, 5 % of the reference", f"¥{0.05 * sizing['reference']:.2f}"),
        ("evidence", "confidence in the bonus shares (the cleaning's label)", str(evidence["confidence"])),
        ("evidence", "the cash part against no cash, as a share of the last close",
         f"{sizing['dividend'] / sizing['previous_close']:.1%}: "
         + cash_label(sizing["dividend"], sizing["previous_close"], float(residuals.std()))),
        ("estimate", "shares after the action, for every 10 held", f"{10 + per_10:.0f}"),
        ("estimate", "cash dividend a share", f"¥{sizing['dividend']:.3f}"),
        ("estimate", "reference", f"{sizing['reference']:.2f}"),
        ("estimate", "the day's open, for comparison", f"{sizing['open']:.2f}"),
        ("estimate", "close over the reference", f"{sizing['close'] / sizing['reference'] - 1:+.2%}"),
    ]
    index = pd.MultiIndex.from_tuples([(group, name) for group, name, _ in rows], names=["", "quantity"])
    return pd.DataFrame({"value": [value for _, _, value in rows]}, index=index)


# --------------------------------------------------------------------------- 1.7: training

def budget_table(result, report: Mapping) -> pd.DataFrame:
    """This run against the recorded full-size run, per seed (``report``: the five-seed
    ``report.json``): env-steps, the share of the full-size budget, the kept checkpoint's validation
    Sharpe (for the recorded run, the range over its seeds) and the wall time (the recorded run's
    mean per seed; each on its own machine, the recorded one is in ``report["machine"]``). Values
    written out, one row each, each saying what it is."""
    seeds = len(report["seeds"])
    per_seed = report["env_steps"] / seeds
    valid = list(report["valid_sharpe_per_seed"].values())
    rows = {
        "this run": {
            "env-steps": f"{result.env_steps:,}", "share of the full-size budget": f"{result.env_steps / per_seed:.1%}",
            "kept checkpoint's validation Sharpe": f"{result.best_valid_sharpe:.2f}",
            "wall time": f"{result.wall_seconds:.0f} s"},
        f"recorded full-size run, per seed ({seeds} seeds)": {
            "env-steps": f"{per_seed:,.0f}", "share of the full-size budget": f"{1:.0%}",
            "kept checkpoint's validation Sharpe": f"{min(valid):.2f} .. {max(valid):.2f} (the {seeds} seeds' range)",
            "wall time": f"{report['wall_seconds'] / seeds:.0f} s (mean of the {seeds} seeds)"},
    }
    return pd.DataFrame(rows).T


def _axis(fig, column: str):
    """The Axes of ``fig`` that `plot_learning_curve` titled ``column``."""
    for ax in fig.axes:
        if ax.get_title().split(":")[0] == column:
            return ax
    raise ValueError(f"the figure has no panel {column!r}")


WEALTH_MIN_HALF_SPAN = 0.2
"""`mark_learning_curve` shows ``train/final_wealth`` over at least break-even ± this: about the spread
(std 0.21) of buy-and-hold's 250-day returns over the sample's training years, one episode's noise."""
SHARPE_MIN_HALF_SPAN = 0.3
"""... and ``valid/sharpe_ratio`` over at least buy-and-hold's validation Sharpe ± this."""
SHARPE_YEAR_NOISE = 0.15
"""The half-width of the band drawn around buy-and-hold's validation Sharpe: one year's 95 % interval
of a Sharpe difference to buy-and-hold is about 0.3 wide (1.8: [-0.23, +0.11] over five seeds)."""
ENTROPY_MIN_HALF_SPAN = 0.01
"""... and ``loss/entropy`` over at least its start ± this share of it."""


def _frame(ax, centre: float, half: float, values) -> bool:
    """A y range that holds ``centre ± half`` and every one of ``values``: exactly ``centre ± half``
    when they fit in it (then True), else widened to them with a margin of 5 % of the span."""
    low, high = centre - half, centre + half
    data_low, data_high = float(np.min(values)), float(np.max(values))
    if data_low >= low and data_high <= high:
        ax.set_ylim(low, high)
        return True
    low, high = min(low, data_low), max(high, data_high)
    pad = 0.05 * (high - low)
    ax.set_ylim(low - pad if data_low <= low else low, high + pad if data_high >= high else high)
    return False


def mark_learning_curve(fig, log: pd.DataFrame, hold_valid_sharpe: float) -> dict:
    """Yardsticks on the learning curve ``fig`` (`finrl_tutorial.plot_learning_curve` of ``log``), so
    that a wiggle of a few hundredths does not read as a trend. Each panel gets a dashed yardstick
    and a y range that holds it with a minimum span, widened only to show every point:

    * ``train/final_wealth``: break-even (1), at least ± `WEALTH_MIN_HALF_SPAN`;
    * ``valid/sharpe_ratio``: buy-and-hold's validation Sharpe ``hold_valid_sharpe``, at least
      ± `SHARPE_MIN_HALF_SPAN`, with a band of ± `SHARPE_YEAR_NOISE` (about one year's noise) and the
      first validation (just after one update, nearly the untrained network) dotted; its title gives
      the best validation and where;
    * ``loss/entropy``: its start, at least ± `ENTROPY_MIN_HALF_SPAN` of it (so a flat line looks
      flat); its title gives the change.

    Legends sit outside the panels, on the right. Returns the numbers the titles state."""
    entropy = log["loss/entropy"].dropna()
    start, end = float(entropy.iloc[0]), float(entropy.iloc[-1])
    change = end / start - 1
    moved = "fell" if change < -0.01 else "rose" if change > 0.01 else "barely moved"
    ax = _axis(fig, "loss/entropy")
    ax.ticklabel_format(axis="y", useOffset=False)  # the values themselves, not an offset
    ax.axhline(start, color="grey", linewidth=0.8, linestyle="--", label=f"start ({start:.2f})")
    if _frame(ax, start, ENTROPY_MIN_HALF_SPAN * abs(start), entropy):  # a flat line looks flat
        ax.set_ylabel(f"±{100 * ENTROPY_MIN_HALF_SPAN:g} % of the start")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize="small", frameon=False)
    ax.set_title(f"loss/entropy: {start:.3f} → {end:.3f} ({change:+.2%}): it {moved}", fontsize="medium")

    wealth = _axis(fig, "train/final_wealth")
    wealth.axhline(1.0, color="grey", linewidth=0.8, linestyle="--", label="broke even (1)")
    _frame(wealth, 1.0, WEALTH_MIN_HALF_SPAN, log["train/final_wealth"].dropna())
    wealth.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize="small", frameon=False)

    valid = log["valid/sharpe_ratio"].dropna()
    best_steps = int(log.loc[valid.idxmax(), "env_steps"])
    ax = _axis(fig, "valid/sharpe_ratio")
    ax.axhspan(hold_valid_sharpe - SHARPE_YEAR_NOISE, hold_valid_sharpe + SHARPE_YEAR_NOISE, color="tab:orange",
               alpha=0.12, linewidth=0, label=f"±{SHARPE_YEAR_NOISE:g} around it:\nabout one year's noise")
    ax.axhline(hold_valid_sharpe, color="tab:orange", linewidth=1.2, linestyle="--",
               label=f"buy-and-hold on the validation year ({hold_valid_sharpe:.2f})")
    ax.axhline(float(valid.iloc[0]), color="grey", linewidth=0.8, linestyle=":",
               label=f"first validation ({float(valid.iloc[0]):.2f})")
    _frame(ax, hold_valid_sharpe, SHARPE_MIN_HALF_SPAN, valid)
    handles, labels = ax.get_legend_handles_labels()
    order = [1, 0, 2]  # buy-and-hold, its band, the first validation
    ax.legend([handles[i] for i in order], [labels[i] for i in order], loc="upper left", bbox_to_anchor=(1.01, 1),
              fontsize="small", frameon=False)
    ax.set_title(f"valid/sharpe_ratio: {len(valid)} validations, best {valid.max():.2f} "
                 f"(at {best_steps:,} env-steps)", fontsize="medium")
    return {"entropy_start": start, "entropy_end": end, "entropy_change": change, "entropy_moved": moved,
            "validations": len(valid), "best_valid": float(valid.max()), "best_env_steps": best_steps}


# --------------------------------------------------------------------------- 1.8: the backtest

def with_extra_dividend(market, day: int, dividend_yield: float):
    """``market`` (a `MarketData`) with a hypothetical cash dividend of ``dividend_yield`` times the
    previous close, paid by every stock on day index ``day``, on top of the detected ex-days' cash.
    Prices are unchanged: they already show the real ex-dividend drops. A new MarketData."""
    dividend = market.dividend.clone()  # the cash of the detected ex-days (1.4) stays
    dividend[day] += dividend_yield * market.close[day - 1]
    return dataclasses.replace(market, dividend=dividend)


def seeds_below_hold(report: Mapping) -> tuple[int, int]:
    """How many of the stored ``report``'s seeds ended with a test Sharpe below equal-weight
    buy-and-hold's, and how many seeds there are: ``(below, seeds)``."""
    hold = report["baselines"]["equal_weight_buy_and_hold"]["sharpe_ratio"]
    seeds = [row["sharpe_ratio"] for row in report["agent_per_seed"].values()]
    return sum(sharpe < hold for sharpe in seeds), len(seeds)


def against_own_untrained(report: Mapping, prepared) -> pd.DataFrame:
    """Each seed of a ``run_experiment`` report set against its *own* untrained network: the report
    keeps each trained seed's test metrics but only the mean of the untrained ones, so each seed's
    untrained network is rebuilt here (`initial_agent`: the same seed, config and market, which gives
    the same weights) and backtested on ``prepared``'s test split with the report's env settings. One
    row per seed: the trained and the untrained test Sharpe and their difference. Raises if the
    rebuilt networks' mean Sharpe differs from the report's (then they are not the report's networks)."""
    from ..backtest.runner import agent_policy, backtest
    from ..training.checkpoint import agent_config_from_dict, env_config_from_dict
    from ..training.trainer import initial_agent

    config = agent_config_from_dict(report["config"])
    env_config = env_config_from_dict(report["env_config"])
    rows = {}
    for seed in report["seeds"]:
        untrained = initial_agent(prepared.train, dataclasses.replace(config, seed=seed), env_config).eval()
        sharpe = backtest(agent_policy(untrained), prepared.test, env_config).metrics["agent"]["sharpe_ratio"]
        trained = report["agent_per_seed"][str(seed)]["sharpe_ratio"]
        rows[seed] = {"trained": trained, "its untrained network": sharpe, "trained − untrained": trained - sharpe}
    table = pd.DataFrame.from_dict(rows, orient="index").rename_axis("seed")
    recorded = report["baselines"]["untrained_agent"]["sharpe_ratio"]
    if not np.isclose(table["its untrained network"].mean(), recorded, rtol=0, atol=1e-9):
        raise ValueError(f"the rebuilt untrained networks' mean test Sharpe {table['its untrained network'].mean():.6f} "
                         f"is not the report's {recorded:.6f}: they are not the networks the report started from")
    return table


def recorded_table(report: Mapping, per_seed: bool = False) -> pd.DataFrame:
    """The stored ``report``'s test-year rows: the agent (mean of its seeds) and each baseline,
    with return, Sharpe, drawdown and daily turnover, rounded to 3 decimals; with ``per_seed``, one
    row per seed of the agent after the mean (``agent, seed k``)."""
    seeds = {f"agent, seed {seed}": row for seed, row in report["agent_per_seed"].items()} if per_seed else {}
    rows = {"agent (mean of seeds)": report["agent"]} | seeds | dict(report["baselines"])
    return pd.DataFrame(rows).T[["cumulative_return", "sharpe_ratio", "max_drawdown", "turnover"]].round(3)


def _base_runs(sweep: Mapping) -> list[dict]:
    """The recorded sweep's runs of the base variant on the sample."""
    return [run for run in sweep["runs"] if run["market"] == "sample" and run["variant"] == sweep["base_variant"]]


def validation_curves(sweep: Mapping) -> pd.DataFrame:
    """One row per seed of the recorded sweep's default runs on the sample (``bench_sweep.json``):
    the untrained network's validation Sharpe, the first and the last validation's, which validation
    scored best (``"k of n"``) and at how many env-steps."""
    rows = []
    for run in _base_runs(sweep):
        sharpes = [evaluation["valid_sharpe"] for evaluation in run["evaluations"]]
        best = int(np.argmax(sharpes))
        rows.append({"seed": run["seed"], "untrained": run["untrained_valid_sharpe"], "first validation": sharpes[0],
                     "last validation": sharpes[-1], "best at validation": f"{best + 1} of {len(sharpes)}",
                     "best at env-steps": run["evaluations"][best]["env_steps"]})
    return pd.DataFrame(rows).set_index("seed")


def distance_from_untrained(untrained, untrained_weights: pd.DataFrame, checkpoints: Mapping) -> pd.DataFrame:
    """How far checkpoints moved from the untrained network: ``checkpoints`` maps a name to
    ``(iteration, env_steps, agent, test-year weights)``. One row each: its iteration and env-steps,
    the relative distance of its weights (`teaching.parameter_distance`) and the share of wealth its
    test-year portfolio held differently, averaged over days (`teaching.portfolio_distance`)."""
    from .teaching import parameter_distance, portfolio_distance

    rows = {name: {"iteration": int(iteration), "env-steps": int(env_steps),
                   "weights' distance from untrained": parameter_distance(agent, untrained),
                   "test-year portfolio held differently": portfolio_distance(weights, untrained_weights)}
            for name, (iteration, env_steps, agent, weights) in checkpoints.items()}
    return pd.DataFrame(rows).T


def planted_learning(learn: Mapping, family: str = "factor", learner: str = "ppo") -> pd.DataFrame:
    """Learning on a planted edge, from the stored ``bench learn`` record (``bench_learn.json``):
    for the ``family`` markets, the checkpoint chosen on validation after each number of env-steps of
    the longest runs, one row each (0 = the untrained network): the markets (seeds), the agent's mean
    test excess return over buy-and-hold, the signal rule's (the same at every row) and the pooled
    share of it the agent captured; where the record holds it, the same for the informed oracle
    (the best on validation of the rules that know the expected returns, `backtest.informed_oracle`)."""
    rows = [r for r in learn["summary"] if r["family"] == family and r["learner"] == learner and r["select"] == "best"]
    longest = max(r["run_steps"] for r in rows)
    rows = sorted((r for r in rows if r["run_steps"] == longest), key=lambda r: r["env_steps"])
    informed = all("informed_excess_mean" in r for r in rows)
    return pd.DataFrame(
        [{"env-steps": r["env_steps"], "markets (seeds)": r["seeds"], "agent's test excess": r["test_excess_mean"],
          "signal rule's test excess": r["oracle_excess_mean"], "signal rule's excess captured": r["capture_pooled"]}
         | ({"informed oracle's test excess": r["informed_excess_mean"],
             "informed oracle's excess captured": r["informed_capture_pooled"]} if informed else {})
         for r in rows]).set_index("env-steps")


def how_measured(report: Mapping, sweep: Mapping, page_hold_valid: float | None = None,
                 name: str = MAIN_JOB_RECORD) -> MethodNote:
    """The method behind the chapter's recorded numbers, folded (a `folded.MethodNote`): the full-size run's
    record (``name``), command, seeds, budget, machine and note; its interval's bootstrap; and the sweep's
    record, seeds and validations. With ``page_hold_valid`` (buy-and-hold's validation Sharpe on the
    page's data), one sentence says when the sweep's data differ from the page's (its own
    buy-and-hold validation Sharpe, rounded, is another): the package date the sweep ran, and the
    two buy-and-hold validation Sharpes its ex-day sizing and the page's give."""
    seeds, machine = report["seeds"], report["machine"]
    versus = report["sharpe_vs_buy_and_hold"]
    runs = _base_runs(sweep)
    note = report.get("command_note", "")
    config = report["config"]
    rollout = config["num_envs"] * config["horizon_len"]
    per_seed = report["env_steps"] / len(seeds)
    return folded_note([
        ("The full-size run",
         f"the record `{name}`, made by `{report['command']}`: seeds "
         f"{', '.join(map(str, seeds))}, {per_seed:,.0f} env-steps and "
         f"{report['wall_seconds'] / len(seeds):.0f} s a seed on {machine['cpu_count']} CPU cores, "
         f"{machine['date'][:10]}"
         + (f", with the plain learner: with the package as installed, "
            f"`{reader_command(report['command'], plain=True)}` makes it again." if ran_plain_learner(report) else ".")),
        ("Its budget",
         f"{config['total_steps']:,} env-steps asked for per seed. A run stops at the last whole iteration. One "
         f"iteration is a rollout of num_envs × horizon_len = {config['num_envs']} × {config['horizon_len']} = "
         f"{rollout:,} env-steps. So a seed ran {per_seed / rollout:.0f} iterations: {per_seed:,.0f} of the "
         f"{config['total_steps']:,} asked for."),
        *([("The record's note, with the machine's load", note[0].upper() + note[1:] + ".")] if note else []),
        ("Its interval",
         f"a paired block bootstrap of the {versus['curves']} seeds' test-year curves ({versus['days']} days) "
         f"against buy-and-hold, in blocks of {versus['block_days']} days, {versus['resamples']:,} resamples."),
        ("The validation curves",
         f"the record `bench_sweep.json` (chapter 2): the default configuration of its day on the sample"
         + (" (the plain learner)" if ran_plain_learner(sweep) else "") + ", seeds "
         f"{', '.join(str(run['seed']) for run in runs)}, each validated {len(runs[0]['evaluations'])} times over "
         f"{sweep['total_steps']:,} env-steps; {sweep['machine']['date'][:10]}, {sweep['machine']['cpu_count']} "
         "CPU cores." + _sweep_provenance(sweep, page_hold_valid)),
    ])


def _sweep_provenance(sweep: Mapping, page_hold_valid: float | None) -> str:
    """The sentence `how_measured` adds when the sweep's buy-and-hold validation Sharpe differs from
    the page's at two decimals (the sweep ran a package whose ex-day sizing differs), else ``""``."""
    if page_hold_valid is None:
        return ""
    sweep_hold = _base_runs(sweep)[0]["buy_and_hold_valid_sharpe"]
    if f"{sweep_hold:.2f}" == f"{page_hold_valid:.2f}":
        return ""
    return (f" It ran the package of {sweep['machine']['date'][:10]}, whose ex-day sizing (1.4) gives buy-and-hold "
            f"a validation Sharpe of {sweep_hold:.2f} where this page's gives {page_hold_valid:.2f}. Its returns and "
            "Sharpe ratios can differ from this page's by about that much, not in the mechanics it shows (the "
            "same update, validation and choice of checkpoint).")


def chapter_box(env_steps: int, table: pd.DataFrame, versus: Mapping, missing: pd.Series, moved: pd.DataFrame,
                report: Mapping, sweep: Mapping, page_hold_valid: float, fast: bool | None = None,
                name: str = MAIN_JOB_RECORD):
    """The chapter's closing box (`finrl_tutorial.book.measured_box`): this run's test Sharpe
    (``table``, a `BacktestResult.table`, after ``env_steps``) and interval ``versus``, buy-and-hold's
    return, the return the missing dividends would add (``missing``: 2 % and 3 % yield), how far the
    chosen checkpoint's portfolio is from the untrained one (``moved``); and the recorded five-seed
    ``report`` (the record ``name``) and the sweep's validation curves, each naming its record (where the sweep's buy-and-hold
    validation Sharpe differs from ``page_hold_valid``, its row points to the folded block). ``fast`` (default: `FAST`)
    labels this run's rows as a small-budget run's, once, in the box."""
    from ..metrics import stored_verdict
    from . import measured_box

    agent, hold = table.loc["agent"], table.loc["equal_weight_buy_and_hold"]
    untrained = table.loc["untrained_agent", "sharpe_ratio"]
    report_versus, report_hold = report["sharpe_vs_buy_and_hold"], report["baselines"]["equal_weight_buy_and_hold"]

    curves = validation_curves(sweep)
    sweep_hold = _base_runs(sweep)[0]["buy_and_hold_valid_sharpe"]
    this_run = {
        f"agent after {env_steps:,} env-steps: test Sharpe":
            f"{agent['sharpe_ratio']:.2f} (buy-and-hold {hold['sharpe_ratio']:.2f}, untrained {untrained:.2f})",
        "Sharpe vs buy-and-hold, 95 % interval":
            f"{versus['difference']:+.2f} [{versus['low']:+.2f}, {versus['high']:+.2f}]: {versus['verdict']}",
        "equal-weight buy-and-hold, test split, full costs, dividends only where the prices reveal them (1.4)":
            f"{hold['cumulative_return']:+.1%}",
        "dividends the sample misses (2 % / 3 % yield)": f"{missing.iloc[0]:+.1%} / {missing.iloc[1]:+.1%} of return",
        "chosen checkpoint: test-year portfolio held differently from untrained":
            f"{moved.loc['chosen checkpoint', 'test-year portfolio held differently']:.1%}",
    }
    verdict = stored_verdict(report_versus)
    below, seeds = seeds_below_hold(report)
    report_untrained = report["baselines"]["untrained_agent"]["sharpe_ratio"]
    not_above = sum(row["sharpe_ratio"] <= report_untrained for row in report["agent_per_seed"].values())
    recorded = {
        f"full-size run, {len(report['seeds'])} seeds ({name})":
            f"Sharpe {report['agent']['sharpe_ratio']:.2f} ± {report['agent_std']['sharpe_ratio']:.2f} (mean ± std "
            f"over the {seeds} seeds, not an interval) vs {report_hold['sharpe_ratio']:.2f}: {verdict}; {below} of "
            f"{seeds} seeds below buy-and-hold",
        "sample, validation Sharpe (bench_sweep.json)":
            f"{curves['first validation'].mean():.2f} after one update, {curves['last validation'].mean():.2f} at "
            "the end" + (" (its data differ a little from this page's: see How this was measured)"
                         if f"{sweep_hold:.2f}" != f"{page_hold_valid:.2f}" else ""),
    }
    return measured_box(
        this_run, recorded, fast=fast,
        shows="the pipeline from bars to a full-cost backtest, read against baselines and an interval",
        does_not_show=f"an edge on real A-shares: {len(report['data']['tickers'])} survivors chosen with hindsight, "
                      f"where the recorded {len(report['seeds'])}-seed run does not beat buy-and-hold ({verdict}) and "
                      f"{not_above} of its {seeds} seeds end at or below the untrained network's test Sharpe; nor "
                      "whether the learner can find an edge at all (the next page)")
