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

import itertools
import math
from statistics import NormalDist
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

__all__ = [
    "PERIODS_PER_YEAR",
    "TIE_MARGIN",
    "check_margin",
    "difference_verdict",
    "stored_verdict",
    "verdict_reason",
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
    "return_moments",
    "probabilistic_sharpe_ratio",
    "expected_max_sharpe",
    "deflated_sharpe_ratio",
    "probability_of_backtest_overfitting",
    "selection_overfitting",
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


TIE_MARGIN = 0.25
"""The equivalence margin of a Sharpe difference, in annualised Sharpe: two strategies "tie" only
when the whole interval of their difference lies within ±0.25. A stated choice, not something the
data decide: a quarter of a unit of annualised Sharpe is a difference most readers would call
small, while one year of daily returns pins a single Sharpe down only to a standard error of
about 1 (√((1 + SR²/2) / years), Lo 2002), so only paired, strongly correlated curves or several
years reach an interval that narrow. It is a parameter (``margin``; ``train
--tie-margin``): a tighter or wider one changes which wide intervals are called ties, never a
"beats" or a "loses"."""


def check_margin(margin: Any) -> float:
    """``margin`` as a float if it is a finite number >= 0, else a ValueError naming it."""
    try:
        value = float(margin)
    except (TypeError, ValueError):
        raise ValueError(f"the tie margin must be a number >= 0, got {margin!r}") from None
    if isinstance(margin, bool) or not math.isfinite(value) or value < 0:
        raise ValueError(f"the tie margin must be a finite number >= 0 (annualised Sharpe), got {margin!r}")
    return value


def difference_verdict(low: float, high: float, margin: float | None = TIE_MARGIN) -> str:
    """The verdict of a difference's interval ``[low, high]``: ``"beats"`` when it lies above 0,
    ``"loses"`` when below, ``"tie"`` only when it lies inside the equivalence margin
    ``[-margin, margin]``, else ``"inconclusive"`` (it contains 0 but reaches past the margin: the
    data cannot tell the two apart, nor call them equal). ``margin=None``: the quantity has no
    equivalence margin, so an interval containing 0 is always ``"inconclusive"``."""
    if low > 0:
        return "beats"
    if high < 0:
        return "loses"
    if margin is not None and -check_margin(margin) <= low and high <= margin:
        return "tie"
    return "inconclusive"


def verdict_reason(verdict: str, margin: float | None = TIE_MARGIN, low: float | None = None,
                   high: float | None = None) -> str:
    """Why an interval got ``verdict`` (`difference_verdict`), in a few words for a printout. With the
    interval's ``low`` and ``high``, an inconclusive one names the end that leaves the margin, to three
    decimals (a bound printed as -0.25 may lie just beyond a margin of 0.25)."""
    bound = "no equivalence margin" if margin is None else f"the tie margin ±{margin:.2f}"
    if verdict == "inconclusive" and margin is not None and low is not None and high is not None:
        outside = [f"its {name} end {value:+.3f}" for name, value in (("lower", low), ("upper", high))
                   if abs(value) > margin]
        if outside:
            return (f"the interval contains 0, and {' and '.join(outside)} "
                    f"{'lie' if len(outside) > 1 else 'lies'} beyond {bound}")
    return {"beats": "the interval lies above 0", "loses": "the interval lies below 0",
            "tie": f"the whole interval lies within {bound}",
            "inconclusive": f"the interval contains 0 but is not within {bound}" if margin is not None
            else "the interval contains 0 and the quantity has no equivalence margin"}[verdict]


def stored_verdict(interval: Mapping, margin: float | None = None) -> str:
    """The verdict of a stored interval (a `sharpe_difference_ci` result read from a record),
    recomputed from its ``low`` and ``high`` rather than read from its ``verdict`` string: records
    written before the equivalence margin called every interval containing 0 a tie. ``margin``:
    the margin to apply; ``None`` takes the interval's own ``margin``, or `TIE_MARGIN` where the
    record has none."""
    if margin is None:
        margin = interval.get("margin", TIE_MARGIN)
    return difference_verdict(float(interval["low"]), float(interval["high"]), margin)


def sharpe_difference_ci(
    wealth: pd.Series | Sequence[pd.Series],
    reference: pd.Series,
    *,
    level: float = 0.95,
    resamples: int = 5000,
    block_days: int = 10,
    seed: int = 0,
    margin: float = TIE_MARGIN,
    resample_seeds: bool = False,
) -> dict[str, Any]:
    """Bootstrap confidence interval of ``Sharpe(wealth) − Sharpe(reference)`` on the same days.

    A *paired circular block bootstrap* (Politis & Romano 1992; the usual tool for Sharpe
    comparisons since Ledoit & Wolf 2008): the same blocks of ``block_days`` consecutive days are
    drawn for both curves, so their correlation and short-range dependence survive the
    resampling. ``wealth`` may be several curves on the same days (an agent's seeds): the
    statistic is then the *mean* over them of the Sharpe difference, every curve resampled on the
    same days. Returns ``difference`` (on the real days), ``low``/``high`` (percentile interval at
    ``level``), ``p_value`` (two-sided: twice the share of resampled differences on the far side
    of 0), ``margin`` and ``verdict`` (`difference_verdict`): ``"beats"`` when the interval lies
    above 0, ``"loses"`` when below, ``"tie"`` only when it lies inside ``[-margin, margin]``
    (an equivalence margin in annualised Sharpe, `TIE_MARGIN` unless given), else
    ``"inconclusive"``: it contains 0 but is too wide to call the two equal. Risk-free rate 0,
    annualised with ``PERIODS_PER_YEAR``.

    By default the interval counts the days' noise only: the curves are fixed, the days resampled.
    ``resample_seeds=True`` makes it a two-level (cluster) bootstrap, as for any nested sample
    (Davison & Hinkley 1997, section 3.8): each resample also draws the curves with replacement
    (as many as given), so the interval counts the seeds' spread as well as the days'; with one
    curve, or identical curves, it equals the days-only interval. ``resampled`` says which.
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
    margin = check_margin(margin)
    ra, rb = np.stack(returns), _returns_array(b)  # [K, n], [n]
    n = len(rb)
    if n < 2 * block_days:
        raise ValueError(f"{n} return days are too few for a block bootstrap with blocks of {block_days}")
    rng = np.random.default_rng(seed)
    starts = rng.integers(0, n, size=(resamples, math.ceil(n / block_days)))
    index = ((starts[:, :, None] + np.arange(block_days)) % n).reshape(resamples, -1)[:, :n]
    per_curve = _annual_sharpe_rows(ra[:, index])  # [K, resamples]
    if resample_seeds:  # the second level: which seeds this resample holds (after the days: same days per seed)
        picks = rng.integers(0, len(ra), size=(resamples, len(ra)))
        agent = np.take_along_axis(per_curve.T, picks, axis=1).mean(axis=1)
    else:
        agent = per_curve.mean(axis=0)
    diffs = agent - _annual_sharpe_rows(rb[index])
    observed = float(_annual_sharpe_rows(ra).mean() - _annual_sharpe_rows(rb[None])[0])
    tail = (1.0 - level) / 2.0
    low, high = (float(q) for q in np.quantile(diffs, [tail, 1.0 - tail]))
    p_value = float(min(1.0, 2.0 * min((diffs <= 0).mean(), (diffs >= 0).mean())))
    return {"difference": observed, "low": low, "high": high, "level": level, "p_value": p_value,
            "verdict": difference_verdict(low, high, margin), "margin": margin, "curves": len(curves), "days": n, "block_days": block_days,
            "resamples": resamples, "resampled": "seeds and days" if resample_seeds else "days"}


# --------------------------------------------------------------------------- overfitting
#
# Selection inflates results: the best of many backtests looks good by chance. Two corrections
# from the literature, written from the papers (no well-kept package implements both; the PyPI
# candidates are 0.x single-author releases):
#
# * PBO, the probability of backtest overfitting, by combinatorially symmetric cross-validation
#   (CSCV): Bailey, Borwein, López de Prado & Zhu, "The Probability of Backtest Overfitting",
#   Journal of Computational Finance 20(4), 2017 (SSRN 2326253, 2015), section 2.
# * The deflated Sharpe ratio: Bailey & López de Prado, "The Deflated Sharpe Ratio: Correcting for
#   Selection Bias, Backtest Overfitting and Non-Normality", Journal of Portfolio Management
#   40(5), 2014, 94-107 (SSRN 2460551): the probabilistic Sharpe ratio (Bailey & López de Prado,
#   "The Sharpe Ratio Efficient Frontier", Journal of Risk 15(2), 2012) against the Sharpe ratio
#   the best of N unskilled trials is expected to reach.

EULER_GAMMA = 0.5772156649015329
"""The Euler–Mascheroni constant of the expected-maximum formula (`expected_max_sharpe`)."""

_NORMAL = NormalDist()


def return_moments(returns: Any) -> dict[str, float]:
    """Annualised Sharpe ratio (rf = 0), number of returns, skewness and kurtosis (not excess:
    3 for a normal law) of daily ``returns``; the moments are the plain (biased) sample moments
    ``m3 / m2**1.5`` and ``m4 / m2**2`` that the deflated-Sharpe paper uses. A series without
    spread has Sharpe 0, skewness 0 and kurtosis 3."""
    r = np.asarray(returns, dtype=float).ravel()
    if len(r) < 2 or not np.isfinite(r).all():
        raise ValueError(f"returns must be at least 2 finite numbers, got {len(r)}")
    centred = r - r.mean()
    m2 = float(np.mean(centred**2))
    if math.sqrt(m2) <= _ZERO_DISPERSION:
        return {"sharpe": 0.0, "days": len(r), "skewness": 0.0, "kurtosis": 3.0}
    return {"sharpe": float(_annual_sharpe_rows(r[None])[0]), "days": len(r),
            "skewness": float(np.mean(centred**3)) / m2**1.5, "kurtosis": float(np.mean(centred**4)) / m2**2}


def probabilistic_sharpe_ratio(sharpe: float, days: int, benchmark: float = 0.0, *, skewness: float = 0.0,
                               kurtosis: float = 3.0) -> float:
    """Probability that the true Sharpe ratio exceeds ``benchmark``, given an observed ``sharpe``
    over ``days`` returns with that skewness and kurtosis (Bailey & López de Prado 2012, eq. 11;
    the DSR paper, eq. 2)::

        PSR(SR*) = Φ( (SR − SR*) √(T − 1) / √(1 − γ3 SR + (γ4 − 1) / 4 · SR²) )

    with SR and SR* per period. ``sharpe`` and ``benchmark`` are annualised here (like
    `sharpe_ratio`) and divided by √252 first. Normal returns: ``skewness`` 0, ``kurtosis`` 3."""
    if days < 2:
        raise ValueError(f"days must be >= 2, got {days}")
    sr, sr0 = sharpe / math.sqrt(PERIODS_PER_YEAR), benchmark / math.sqrt(PERIODS_PER_YEAR)
    # the variance of the estimated Sharpe ratio; positive for any real series (kurtosis >= 1 + skew²)
    variance = max(1.0 - skewness * sr + (kurtosis - 1.0) / 4.0 * sr * sr, 1e-12)
    return float(_NORMAL.cdf((sr - sr0) * math.sqrt(days - 1) / math.sqrt(variance)))


def expected_max_sharpe(trials: int, variance: float, mean: float = 0.0) -> float:
    """Expected maximum Sharpe ratio of ``trials`` independent unskilled trials whose Sharpe
    ratios have this cross-trial ``variance`` (DSR paper, eq. 1; Bailey, Borwein, López de Prado &
    Zhu, "Pseudo-Mathematics and Financial Charlatanism", Notices of the AMS 61(5), 2014)::

        E[max SR] ≈ mean + √V · ((1 − γ) Φ⁻¹(1 − 1/N) + γ Φ⁻¹(1 − 1/(N e))),   γ = Euler–Mascheroni

    In the units of ``variance`` and ``mean`` (annualised Sharpe here). One trial is no
    selection: ``mean``."""
    if trials < 1 or variance < 0:
        raise ValueError(f"trials must be >= 1 and variance >= 0, got {trials} and {variance}")
    if trials == 1:
        return float(mean)
    spread = (1.0 - EULER_GAMMA) * _NORMAL.inv_cdf(1.0 - 1.0 / trials) \
        + EULER_GAMMA * _NORMAL.inv_cdf(1.0 - 1.0 / (trials * math.e))
    return float(mean + math.sqrt(variance) * spread)


def deflated_sharpe_ratio(selected_returns: Any, trial_sharpes: Sequence[float], *, trials: int | None = None,
                          level: float = 0.95, null_sharpe: float = 0.0) -> dict[str, Any]:
    """The deflated Sharpe ratio of a selected strategy (Bailey & López de Prado 2014, eq. 2):
    its probabilistic Sharpe ratio against the Sharpe ratio the best of the trials would reach
    by luck alone, ``SR0 = expected_max_sharpe(N, Var[trial Sharpes])``, with the selected
    strategy's own skewness and kurtosis.

    ``selected_returns``: the daily returns of the chosen strategy on the period it was chosen
    on (or a dict of `return_moments`, when only its statistics are known). ``trial_sharpes``:
    the annualised Sharpe ratio of every trial the choice was made among, the chosen one
    included, on the same period (their variance is the paper's V[SR_n]). ``trials``: the
    number of independent trials N when it is smaller than ``len(trial_sharpes)`` (correlated
    trials count less; default: every trial counts). ``null_sharpe``: the Sharpe ratio unskilled
    trials centre on (the paper's null, 0, is no skill at all; a benchmark's Sharpe ratio, e.g.
    buy-and-hold's on the same period, is no skill over that benchmark): SR0 is shifted by it.
    Returns ``deflated_sharpe`` (a probability),
    ``significant`` (it is at least ``level``), ``p_value`` (1 − DSR), the ``sharpe``,
    ``expected_max_sharpe`` (SR0), ``trials``, ``sharpe_variance``, ``days``, ``skewness``,
    ``kurtosis`` and the undeflated ``probabilistic_sharpe`` (against 0)."""
    moments = dict(selected_returns) if isinstance(selected_returns, dict) else return_moments(selected_returns)
    sharpes = np.asarray(trial_sharpes, dtype=float)
    if sharpes.ndim != 1 or len(sharpes) < 1 or not np.isfinite(sharpes).all():
        raise ValueError("trial_sharpes must be a non-empty list of finite Sharpe ratios")
    n = len(sharpes) if trials is None else int(trials)
    if not 1 <= n <= len(sharpes):
        raise ValueError(f"trials must be in [1, {len(sharpes)}] (the trials given), got {trials}")
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    variance = float(sharpes.var(ddof=1)) if len(sharpes) > 1 else 0.0
    if not math.isfinite(null_sharpe):
        raise ValueError(f"null_sharpe must be finite, got {null_sharpe}")
    threshold = expected_max_sharpe(n, variance, mean=float(null_sharpe))
    shape = {"skewness": moments["skewness"], "kurtosis": moments["kurtosis"]}
    dsr = probabilistic_sharpe_ratio(moments["sharpe"], moments["days"], threshold, **shape)
    return {"deflated_sharpe": dsr, "significant": dsr >= level, "level": level, "p_value": 1.0 - dsr,
            "sharpe": moments["sharpe"], "expected_max_sharpe": threshold, "trials": n,
            "sharpe_variance": variance, "days": moments["days"], **shape,
            "probabilistic_sharpe": probabilistic_sharpe_ratio(moments["sharpe"], moments["days"], 0.0, **shape)}


def _column_sharpe(total: np.ndarray, squares: np.ndarray, count: float) -> np.ndarray:
    """Per-period Sharpe ratio of columns from their sums and sums of squares over ``count`` rows."""
    mean = total / count
    variance = np.maximum(squares - total * mean, 0.0) / (count - 1)
    std = np.sqrt(variance)
    return np.where(std > _ZERO_DISPERSION, mean / np.where(std > _ZERO_DISPERSION, std, 1.0), 0.0)


def _rank_of(chosen: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Rank (1 the lowest, ties sharing their average rank) of ``chosen[c]`` among ``values[c]``."""
    below = (values < chosen[:, None]).sum(axis=1)
    tied = (values == chosen[:, None]).sum(axis=1)  # the chosen value itself included
    return below + (tied + 1) / 2.0


def probability_of_backtest_overfitting(returns: Any, slices: int = 16) -> dict[str, Any]:
    """PBO by combinatorially symmetric cross-validation (Bailey, Borwein, López de Prado & Zhu
    2017, section 2.2), with the Sharpe ratio as the performance statistic.

    ``returns``: the performance matrix M, one row per period (day) and one column per trial
    (strategy, configuration, checkpoint) — ``[T, N]``, a DataFrame or an array. CSCV cuts the rows
    into ``slices`` (S, even) consecutive blocks of equal size (the oldest ``T mod S`` rows are
    dropped) and, for each of the C(S, S/2) ways to choose half of the blocks as the in-sample
    set J (the rest, J̄, out of sample): picks the trial n* with the best in-sample Sharpe, takes
    the relative rank ω = rank of n* out of sample / (N + 1) (rank 1 the worst) and its logit
    λ = ln(ω / (1 − ω)). PBO = share of the combinations with λ ≤ 0: how often the in-sample best
    ranks at or below the median out of sample. Noise gives about 0.5, a trial with a real edge
    about 0.

    Also returns the ``logits``, the in-sample and out-of-sample Sharpe ratio of each chosen trial
    (annualised: ``sharpe_in``, ``sharpe_out``), ``degradation`` (least-squares slope of
    sharpe_out on sharpe_in, section 2.3: negative means in-sample success predicts out-of-sample
    failure), ``probability_of_loss`` (share of combinations whose chosen trial has an
    out-of-sample Sharpe < 0), ``combinations``, ``slices``, ``trials`` and ``periods`` used."""
    matrix = np.asarray(returns, dtype=float)
    if matrix.ndim != 2 or matrix.shape[1] < 2:
        raise ValueError(f"returns must be a [periods, trials] matrix with at least 2 trials, got shape {matrix.shape}")
    if not np.isfinite(matrix).all():
        raise ValueError("returns contain NaN or infinite values")
    if slices < 2 or slices % 2:
        raise ValueError(f"slices must be an even number >= 2, got {slices}")
    periods = matrix.shape[0] // slices * slices
    if periods // slices < 2:
        raise ValueError(f"{matrix.shape[0]} periods are too few for {slices} slices of 2 or more")
    blocks = matrix[matrix.shape[0] - periods:].reshape(slices, periods // slices, -1)
    sums, squares = blocks.sum(axis=1), (blocks**2).sum(axis=1)  # [S, N]
    chosen = np.array(list(itertools.combinations(range(slices), slices // 2)))
    inside = np.zeros((len(chosen), slices))
    np.put_along_axis(inside, chosen, 1.0, axis=1)
    half = periods / 2
    sharpe_in = _column_sharpe(inside @ sums, inside @ squares, half)  # [C, N]
    sharpe_out = _column_sharpe((1 - inside) @ sums, (1 - inside) @ squares, half)
    best = np.argmax(sharpe_in, axis=1)  # the first of tied bests
    trials = matrix.shape[1]
    chosen_in, chosen_out = (np.take_along_axis(s, best[:, None], axis=1)[:, 0] for s in (sharpe_in, sharpe_out))
    omega = _rank_of(chosen_out, sharpe_out) / (trials + 1)
    logits = np.log(omega / (1.0 - omega))
    scale = math.sqrt(PERIODS_PER_YEAR)
    chosen_in, chosen_out = chosen_in * scale, chosen_out * scale
    spread = float(np.var(chosen_in))
    slope = float(np.cov(chosen_in, chosen_out, bias=True)[0, 1] / spread) if spread > 0 else 0.0
    return {"pbo": float(np.mean(logits <= 0.0)), "logits": logits.tolist(), "sharpe_in": chosen_in.tolist(),
            "sharpe_out": chosen_out.tolist(), "degradation": slope,
            "probability_of_loss": float(np.mean(chosen_out < 0.0)), "combinations": len(chosen),
            "slices": slices, "trials": trials, "periods": periods}


def selection_overfitting(trial_sharpes: Sequence[float], days: int, *, selected_returns: Any = None,
                          returns: Any = None, trials: int | None = None, slices: int = 16,
                          level: float = 0.95) -> dict[str, Any]:
    """What choosing the best of several trials is worth, in one record: the deflated Sharpe
    ratio of the chosen trial (`deflated_sharpe_ratio`) and, when the trials' daily returns are
    given, the probability of backtest overfitting of choosing the best
    (`probability_of_backtest_overfitting`).

    ``trial_sharpes``: every trial's annualised Sharpe ratio over the ``days`` daily returns of the
    selection period (validation); the chosen trial is the largest. ``returns``: the trials' daily
    returns on that period, ``[days, trials]`` in the order of ``trial_sharpes`` (None: no PBO,
    ``pbo`` is None). The chosen trial's skewness and kurtosis come from ``selected_returns``, else
    from its column of ``returns``; without either they are a normal law's (``"moments": "assumed
    normal"``, which overstates the DSR of negatively skewed, fat-tailed returns). The PBO's
    per-combination lists are left out."""
    sharpes = np.asarray(trial_sharpes, dtype=float)
    if sharpes.ndim != 1 or len(sharpes) == 0:
        raise ValueError("trial_sharpes must be a non-empty list")
    matrix = None if returns is None else np.asarray(returns, dtype=float)
    if matrix is not None and matrix.shape != (days, len(sharpes)):
        raise ValueError(f"returns must be [days, trials] = [{days}, {len(sharpes)}], got {matrix.shape}")
    if selected_returns is None and matrix is not None:
        selected_returns = matrix[:, int(np.argmax(sharpes))]
    if selected_returns is not None:
        selected, moments = return_moments(selected_returns), "measured"
        if selected["days"] != days:
            raise ValueError(f"selected_returns has {selected['days']} returns, the period {days}")
    else:
        selected = {"sharpe": float(sharpes.max()), "days": int(days), "skewness": 0.0, "kurtosis": 3.0}
        moments = "assumed normal"
    out = {"deflated": deflated_sharpe_ratio(selected, sharpes, trials=trials, level=level), "moments": moments,
           "pbo": None}
    if matrix is not None:
        pbo = probability_of_backtest_overfitting(matrix, slices=slices)
        out["pbo"] = {k: v for k, v in pbo.items() if k not in ("logits", "sharpe_in", "sharpe_out")}
    return out
