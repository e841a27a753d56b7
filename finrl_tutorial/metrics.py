"""Performance statistics of a daily wealth (equity) curve.

Conventions
-----------
* ``wealth`` is the account value (cash + holdings) at each trading day, a ``pd.Series``
  of positive floats, oldest first. Its first value is the starting capital.
* ``r_t = W_t / W_{t-1} - 1`` are the *daily returns*; a curve of ``n + 1`` points has
  ``n`` return days.
* Annualisation uses ``PERIODS_PER_YEAR = 252`` trading days (the China A-share market
  trades about 242-250 days a year; 252 is kept for comparability with the literature
  and with ``empyrical``).
* Rates given by the caller (``risk_free``, ``required_return``) are **annual** and are
  converted to a per-day rate geometrically: ``(1 + rate) ** (1 / 252) - 1``.
* The ratio definitions match ``empyrical`` (sample std with ``ddof=1``; Sortino with
  the root-mean-square downside deviation over *all* days).

Undefined statistics
--------------------
Every scalar function here returns a plain, NaN-free Python ``float``. Where a
ratio is undefined because its denominator is zero, it returns ``0.0`` instead of
``nan``/``inf`` (``empyrical`` returns ``nan`` or ``inf`` there):

* ``sharpe_ratio`` is ``0.0`` when the daily returns have zero volatility,
* ``sortino_ratio`` is ``0.0`` when no day falls below the required return,
* ``calmar_ratio`` is ``0.0`` when the curve never draws down.

"Zero" means a daily standard deviation (or downside deviation) below ``1e-12``: a
curve growing at a constant rate yields returns that differ only by floating-point
rounding, and dividing by that residue would give an arbitrary ratio near ``1e15``.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np
import pandas as pd

__all__ = [
    "PERIODS_PER_YEAR",
    "daily_returns",
    "cumulative_return",
    "annual_return",
    "annual_volatility",
    "sharpe_ratio",
    "sortino_ratio",
    "max_drawdown",
    "calmar_ratio",
    "drawdown_series",
    "average_daily_turnover",
    "performance_summary",
    "sharpe_difference_ci",
    "SUMMARY_KEYS",
]

PERIODS_PER_YEAR = 252

#: Daily (downside) deviations at or below this are treated as exactly zero.
_ZERO_DISPERSION = 1e-12

#: Keys of :func:`performance_summary`, in order.
SUMMARY_KEYS = (
    "cumulative_return",
    "annual_return",
    "annual_volatility",
    "sharpe_ratio",
    "sortino_ratio",
    "max_drawdown",
    "calmar_ratio",
    "turnover",
    "total_fees",
    "final_wealth",
    "days",
)


# --------------------------------------------------------------------------- helpers


def _validate_wealth(wealth: Any, name: str = "wealth") -> pd.Series:
    """Return ``wealth`` as a float ``pd.Series``, or raise ``ValueError``.

    A valid curve has at least 2 points, no NaN/inf, and only strictly positive values.
    """
    if isinstance(wealth, pd.DataFrame):
        raise ValueError(f"{name} must be a 1-D series, got a DataFrame")
    try:
        w = pd.Series(wealth, dtype=float, copy=True)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be numeric: {exc}") from exc
    if w.ndim != 1:
        raise ValueError(f"{name} must be 1-D")
    if len(w) < 2:
        raise ValueError(f"{name} needs at least 2 points to define a return, got {len(w)}")
    values = w.to_numpy()
    if np.isnan(values).any():
        bad = list(w.index[np.isnan(values)][:5])
        raise ValueError(f"{name} contains NaN (first at {bad})")
    if not np.isfinite(values).all():
        raise ValueError(f"{name} contains infinite values")
    if (values <= 0).any():
        bad = list(w.index[values <= 0][:5])
        raise ValueError(f"{name} must be strictly positive; values <= 0 at {bad}")
    return w


def _per_day(annual_rate: float) -> float:
    """Convert an annual rate to a per-trading-day rate: ``(1 + a) ** (1/252) - 1``."""
    annual_rate = float(annual_rate)
    if not math.isfinite(annual_rate) or annual_rate <= -1.0:
        raise ValueError(f"annual rate must be finite and > -1, got {annual_rate}")
    return (1.0 + annual_rate) ** (1.0 / PERIODS_PER_YEAR) - 1.0


def _returns_array(wealth: Any) -> np.ndarray:
    return daily_returns(wealth).to_numpy()


# --------------------------------------------------------------------------- returns


def daily_returns(wealth: pd.Series) -> pd.Series:
    """Simple daily returns ``r_t = W_t / W_{t-1} - 1``.

    The result has one value per return day (``len(wealth) - 1``), indexed by the day
    the return is realised (the first date of ``wealth`` is dropped).
    """
    w = _validate_wealth(wealth)
    r = w.iloc[1:] / w.iloc[:-1].to_numpy() - 1.0
    r.name = "returns"
    return r


def cumulative_return(wealth: pd.Series) -> float:
    """Total return over the whole curve: ``W_n / W_0 - 1``."""
    w = _validate_wealth(wealth)
    return float(w.iloc[-1] / w.iloc[0] - 1.0)


def annual_return(wealth: pd.Series) -> float:
    """Compound annual growth rate: ``(W_n / W_0) ** (252 / n) - 1``, ``n`` = return days.

    Returns ``inf`` only if the compounding overflows a float (a huge gain over a few
    days, e.g. x1e6 in one day), which cannot happen for realistic curves.
    """
    w = _validate_wealth(wealth)
    n = len(w) - 1
    growth = float(w.iloc[-1] / w.iloc[0])
    try:
        return math.exp(math.log(growth) * PERIODS_PER_YEAR / n) - 1.0
    except OverflowError:
        return math.inf


def annual_volatility(wealth: pd.Series) -> float:
    """Annualised volatility: ``std(r, ddof=1) * sqrt(252)``.

    Needs at least 2 return days (3 wealth points) for a sample std; with a single
    return day the volatility is undefined and ``0.0`` is returned.
    """
    r = _returns_array(wealth)
    if len(r) < 2:
        return 0.0
    sd = float(np.std(r, ddof=1))
    if sd <= _ZERO_DISPERSION:
        return 0.0
    return sd * math.sqrt(PERIODS_PER_YEAR)


def sharpe_ratio(wealth: pd.Series, risk_free: float = 0.0) -> float:
    """Annualised Sharpe ratio: ``mean(r - rf_d) / std(r - rf_d, ddof=1) * sqrt(252)``.

    ``risk_free`` is an *annual* rate, converted per day as ``rf_d = (1 + rf) ** (1/252) - 1``.
    Returns ``0.0`` when undefined: zero volatility, or a single return day.
    """
    excess = _returns_array(wealth) - _per_day(risk_free)
    if len(excess) < 2:
        return 0.0
    sd = float(np.std(excess, ddof=1))
    if sd <= _ZERO_DISPERSION:
        return 0.0
    return float(np.mean(excess)) / sd * math.sqrt(PERIODS_PER_YEAR)


def sortino_ratio(wealth: pd.Series, required_return: float = 0.0) -> float:
    """Annualised Sortino ratio (``empyrical``'s definition).

    With ``d_t = r_t - req_d`` (``required_return`` is an annual rate, converted per day
    like ``risk_free`` in :func:`sharpe_ratio`)::

        downside_deviation = sqrt(mean(min(d_t, 0) ** 2)) * sqrt(252)   # mean over ALL days
        sortino            = mean(d_t) * 252 / downside_deviation

    Returns ``0.0`` when undefined: no day below the required return (zero downside
    deviation), or a single return day.
    """
    d = _returns_array(wealth) - _per_day(required_return)
    if len(d) < 2:
        return 0.0
    downside = math.sqrt(float(np.mean(np.minimum(d, 0.0) ** 2)))
    if downside <= _ZERO_DISPERSION:
        return 0.0
    return float(np.mean(d)) * PERIODS_PER_YEAR / (downside * math.sqrt(PERIODS_PER_YEAR))


# --------------------------------------------------------------------------- drawdowns


def drawdown_series(wealth: pd.Series) -> pd.Series:
    """Drawdown at each date: ``W_t / max_{s<=t} W_s - 1`` (0 at a new high, else < 0).

    Same index as ``wealth`` (the first point, the starting capital, is a peak: 0).
    """
    w = _validate_wealth(wealth)
    dd = w / w.cummax() - 1.0
    dd.name = "drawdown"
    return dd


def max_drawdown(wealth: pd.Series) -> float:
    """Largest peak-to-trough loss: ``min_t (W_t / max_{s<=t} W_s - 1)``, in ``[-1, 0]``.

    A negative number (``-0.23`` = a 23 % loss from the running peak); ``0.0`` when
    the curve never falls below a previous high.
    """
    # ``+ 0.0`` turns a -0.0 into 0.0.
    return float(drawdown_series(wealth).min()) + 0.0


def calmar_ratio(wealth: pd.Series) -> float:
    """Calmar ratio: ``annual_return / |max_drawdown|``.

    Returns ``0.0`` when undefined (the curve never draws down).
    """
    mdd = max_drawdown(wealth)
    if mdd >= 0.0:
        return 0.0
    return annual_return(wealth) / abs(mdd)


# --------------------------------------------------------------------------- trading


def average_daily_turnover(traded_value: pd.Series, wealth: pd.Series) -> float:
    """Mean daily turnover: ``mean_t(traded_value_t / W_{t-1})``.

    ``traded_value_t`` is the gross value traded on day ``t`` (buys + sells, >= 0, in
    the same currency as ``wealth``). Its index must be a subset of ``wealth``'s index;
    the mean runs over the entries of ``traded_value`` (pass 0 for days without
    trades). ``W_{t-1}`` is the wealth on the previous date of ``wealth``; for the first
    date of ``wealth`` it is ``W_0`` itself, the capital the first trades draw on.

    A turnover of 0.5 means that half of the portfolio value changes hands per day.
    """
    w = _validate_wealth(wealth)
    tv = pd.Series(traded_value, dtype=float)
    if tv.empty:
        return 0.0
    if tv.isna().any() or not np.isfinite(tv.to_numpy()).all():
        raise ValueError("traded_value contains NaN or infinite values")
    if (tv < 0).any():
        raise ValueError("traded_value must be >= 0 (gross value bought + sold)")
    if not w.index.is_unique:
        raise ValueError("wealth index must be unique to align traded_value")
    missing = tv.index.difference(w.index)
    if len(missing):
        raise ValueError(
            f"traded_value has dates not in wealth's index (first: {list(missing[:3])})"
        )
    prev_wealth = w.shift(1)
    prev_wealth.iloc[0] = w.iloc[0]
    return float((tv / prev_wealth.loc[tv.index].to_numpy()).mean())


def _total_fees(fees: Any) -> float:
    if fees is None:
        return 0.0
    if np.ndim(fees) == 0:
        total = float(fees)
    else:
        arr = np.asarray(fees, dtype=float)
        if np.isnan(arr).any():
            raise ValueError("fees contain NaN")
        total = float(arr.sum())
    if not math.isfinite(total):
        raise ValueError(f"fees must be finite, got total {total}")
    return total


# --------------------------------------------------------------------------- summary


def performance_summary(
    wealth: pd.Series,
    traded_value: pd.Series | None = None,
    fees: pd.Series | float | None = None,
) -> dict[str, float]:
    """All statistics of one wealth curve as a JSON-serialisable dict.

    Keys (see :data:`SUMMARY_KEYS`): ``cumulative_return, annual_return,
    annual_volatility, sharpe_ratio, sortino_ratio, max_drawdown, calmar_ratio,
    turnover, total_fees, final_wealth, days``.

    Values are plain Python ``float`` (``days`` is an ``int``: the number of return
    days, ``len(wealth) - 1``), never NaN: undefined ratios are ``0.0`` (see the
    module docstring). ``turnover`` is :func:`average_daily_turnover` of
    ``traded_value`` and ``total_fees`` is the sum of ``fees`` (a per-day series or an
    already-summed scalar); both are ``0.0`` when not given. Risk-free rate is 0.
    """
    w = _validate_wealth(wealth)
    summary: dict[str, float] = {
        "cumulative_return": cumulative_return(w),
        "annual_return": annual_return(w),
        "annual_volatility": annual_volatility(w),
        "sharpe_ratio": sharpe_ratio(w),
        "sortino_ratio": sortino_ratio(w),
        "max_drawdown": max_drawdown(w),
        "calmar_ratio": calmar_ratio(w),
        "turnover": 0.0 if traded_value is None else average_daily_turnover(traded_value, w),
        "total_fees": _total_fees(fees),
        "final_wealth": float(w.iloc[-1]),
        "days": int(len(w) - 1),
    }
    assert tuple(summary) == SUMMARY_KEYS
    return summary


# --------------------------------------------------------------------------- inference


def _annual_sharpe_rows(returns: np.ndarray) -> np.ndarray:
    """Annualised Sharpe (rf = 0) of each row of ``returns`` [B, n]; 0 where a row has no spread."""
    std = returns.std(axis=-1, ddof=1)
    mean = returns.mean(axis=-1)
    safe = np.where(std > _ZERO_DISPERSION, std, 1.0)
    return np.where(std > _ZERO_DISPERSION, mean / safe * math.sqrt(PERIODS_PER_YEAR), 0.0)


def sharpe_difference_ci(
    wealth: pd.Series | Sequence[pd.Series],
    reference: pd.Series,
    *,
    level: float = 0.95,
    resamples: int = 5000,
    block_days: int = 10,
    seed: int = 0,
) -> dict[str, Any]:
    """Bootstrap confidence interval of ``Sharpe(wealth) − Sharpe(reference)`` on the same days.

    A *paired circular block bootstrap* (Politis & Romano 1992; the usual tool for Sharpe
    comparisons since Ledoit & Wolf 2008): the same blocks of ``block_days`` consecutive days are
    drawn for both curves, so their correlation and short-range dependence survive the
    resampling. ``wealth`` may be several curves on the same days (an agent's seeds): the
    statistic is then the *mean* over them of the Sharpe difference, every curve resampled on the
    same days. Returns ``difference`` (on the real days), ``low``/``high`` (percentile interval at
    ``level``), ``p_value`` (two-sided: twice the share of resampled differences on the far side
    of 0) and ``verdict``: ``"beats"`` when the interval lies above 0, ``"loses"`` when below,
    ``"tie"`` when it contains 0. Risk-free rate 0, annualised with ``PERIODS_PER_YEAR``.
    """
    curves = [wealth] if isinstance(wealth, pd.Series) else list(wealth)
    if not curves:
        raise ValueError("sharpe_difference_ci needs at least one wealth curve")
    b = _validate_wealth(reference, "reference")
    returns = []
    for curve in curves:
        a = _validate_wealth(curve)
        if len(a) != len(b) or not a.index.equals(b.index):
            raise ValueError("every wealth curve and the reference must cover the same days")
        returns.append(_returns_array(a))
    if not 0 < level < 1 or resamples < 100 or block_days < 1:
        raise ValueError("level must be in (0, 1), resamples >= 100 and block_days >= 1")
    ra, rb = np.stack(returns), _returns_array(b)  # [K, n], [n]
    n = len(rb)
    if n < 2 * block_days:
        raise ValueError(f"{n} return days are too few for a block bootstrap with blocks of {block_days}")
    rng = np.random.default_rng(seed)
    starts = rng.integers(0, n, size=(resamples, math.ceil(n / block_days)))
    index = ((starts[:, :, None] + np.arange(block_days)) % n).reshape(resamples, -1)[:, :n]
    diffs = _annual_sharpe_rows(ra[:, index]).mean(axis=0) - _annual_sharpe_rows(rb[index])
    observed = float(_annual_sharpe_rows(ra).mean() - _annual_sharpe_rows(rb[None])[0])
    tail = (1.0 - level) / 2.0
    low, high = (float(q) for q in np.quantile(diffs, [tail, 1.0 - tail]))
    p_value = float(min(1.0, 2.0 * min((diffs <= 0).mean(), (diffs >= 0).mean())))
    verdict = "beats" if low > 0 else "loses" if high < 0 else "tie"
    return {"difference": observed, "low": low, "high": high, "level": level, "p_value": p_value,
            "verdict": verdict, "curves": len(curves), "days": n, "block_days": block_days,
            "resamples": resamples}
