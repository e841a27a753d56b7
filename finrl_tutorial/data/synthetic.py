"""Synthetic A-share markets with a known, planted edge, and the oracle policy that knows it.

Why: on real data nothing separates "there is no edge here" from "the learner cannot find an
edge". Here the edge is planted, so a learner can be measured against it: the fraction of the
oracle's excess return over equal-weight buy-and-hold that an agent captures out of sample
(`finrl_tutorial.backtest.oracle`, which runs the oracle through the env: the backtest sits above
the data).

The return model
----------------
For stock ``i`` the close-to-close simple return of day ``t+1`` is

    r_{t+1,i} = drift + p_{t+1,i} + m_{t+1} + e_{t+1,i}

* ``p_{t+1,i}`` is the **planted predictable part**: a function of what is observable at the close
  of day ``t`` only (a factor column, or the stock's own last return), chosen per family below.
* ``m`` is the common market move, ``N(0, market_volatility²)``, the same for every stock.
* ``e`` is idiosyncratic noise, ``N(0, volatility²)``, independent across stocks and days.

The unpredictable part ``u = m + e`` has standard deviation ``σ_u = sqrt(volatility² +
market_volatility²)``. The loading of the signal is set so that the information coefficient, the
correlation between the (unit-variance) observed signal at close ``t`` and ``r_{t+1}`` pooled over
stocks and days, equals ``ic``: ``k = σ_u · ic / sqrt(1 - ic²)``. (The market move is counted in
``σ_u`` because it is part of the return the signal is correlated with.)

Timing: the env decides on the close of day ``t`` and fills at the *open* of day ``t+1``
(``finrl_tutorial.envs.core``). So each day is built in two legs: the overnight gap
``close_t → open_{t+1}`` carries only noise (a share ``overnight_share`` of the variance of ``m``
and ``e``), and the intraday leg ``open_{t+1} → close_{t+1}`` carries ``drift + p_{t+1}`` plus the
rest of the noise. An agent acting on close-``t`` information can therefore earn the planted part
in full; nothing predictable is spent before it can trade. (The product of the two legs adds a
term of order ``σ²`` that is noise too.)

Signal families (``SIGNAL_FAMILIES``)
-------------------------------------
``factor``
    A latent per-stock signal ``s`` follows an AR(1) with coefficient ``persistence`` (φ) and unit
    variance, ``s_{t+1} = φ s_t + sqrt(1 - φ²) η``. The bars carry it as a user factor column
    ``signal`` (value at close ``t`` = ``s_t``) that reaches the agent's observation.
    ``p_{t+1} = k · s_t``. A persistent signal rewards *holding* positions.
``momentum`` / ``reversal``
    Price-only, no factor column. ``p_{t+1} = +b · r_t`` (momentum) or ``-b · r_t`` (reversal),
    where ``r_t`` is the stock's own realised close-to-close return of day ``t``, computed from the
    rounded closes: exactly the agent's ``return_1d`` feature (``data.clean._indicators``; 0 on
    the first day, as there). The returns then follow an AR(1) whose lag-1 autocorrelation is
    ``±b``, so ``b = ic``. The edge flips sign every day with the last return. ``persistence`` is
    not used by these two families.
``cross_section``
    A ``signal`` column ``c_t + s_{t,i}``: ``s`` is the per-stock AR(1) of ``factor``, ``c`` a common
    AR(1) with the same φ and standard deviation ``common_signal_scale``. Only the cross-sectional
    (demeaned) part predicts: ``p_{t+1,i} = k · (s_{t,i} - mean_j s_{t,j}) / sqrt(1 - 1/N)``, which
    sums to zero over the stocks (no market timing, nothing for buy-and-hold). Because the common
    part dominates the raw column, an absolute threshold on it is uninformative; the agent must
    compare stocks. ``ic`` is the correlation of the demeaned signal with ``r_{t+1}``.
``none``
    A ``signal`` column of pure noise (the AR(1) ``s``), and ``p = 0`` whatever ``ic`` says: the
    control market on which nothing can be learned.

A-share realism and cleanliness
-------------------------------
Weekdays from 2016-01-04 (no holidays); tickers are main-board codes (``600000.SH`` up and
``000001.SZ`` up, alternating), so the ±10 % limit applies. Starting prices are log-uniform on
¥5..¥50; every open and close is rounded to the 0.01 tick and kept strictly within ±9.5 % of the
previous close (the return draw is clipped there), so no price ever reaches its limit and the
cleaning detects no corporate action (it reads a move beyond the limit as an ex-rights day).
High/low extend the open-close range by half-normal noise (pure noise, capped inside the band).
Volume is a positive multiple of 100 shares, drawn independently of prices (it carries no
information). No suspensions. Prices have no mean reversion (that would plant a second edge), and
with ``drift=0`` the *expected* price stays put while the median falls (volatility drag, about
σ_u²/2 a day): over thousands of days some prices end below ¥1, where the 0.01 tick adds rounding
noise (in a 20-stock, 3000-day market the measured IC is still within 0.01 of ``ic``).

The oracle
----------
:meth:`SyntheticMarket.oracle` holds, with equal target weights (``action_mode="weights"``), the
stocks whose expected next-day return (``SyntheticMarket.expected_return``, computed from observed
values only) is ``>= 0``, and cash when none is; for ``cross_section`` it holds the top half by
expected return. It is a simple, honest **yardstick**, not the Bayes-optimal policy under costs:
it ignores trading costs and the persistence of the signal when it rebalances, and a cleverer
policy can beat it. On ``none`` with zero drift it holds the equal-weight market.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, fields

import numpy as np
import pandas as pd
import torch

from .clean import PreparedMarket, fraction_splits, prepare_market

SIGNAL_FAMILIES = ("factor", "momentum", "reversal", "cross_section", "none")
"""The kinds of planted edge (see the module docstring)."""

START_DATE = "2016-01-04"
"""First trading day of every synthetic market (a Monday; the calendar is weekdays from here)."""

MAX_MOVE = 0.095
"""Every close-to-close (and close-to-open) move stays strictly inside ±9.5 %: below the ±10 %
main-board limit, so no price is limit-locked and no move is read as a corporate action."""

MIN_DAYS = 50
"""Shortest market: the 60/20/20 splits then have at least 10 trading days each."""

MAX_STOCKS = 1000
"""Largest universe (the main-board code ranges used for the tickers)."""

_TICKS_PER_YUAN = 100  # prices are built as integer fen, then divided: exact 0.01 ticks
_PRICE_RANGE = (5.0, 50.0)  # starting prices, yuan (log-uniform)
_RANGE_NOISE = 0.5  # high/low extend the open-close range by |N(0, (0.5·volatility)²)|
_MEDIAN_VOLUME = 2e7  # shares per day: ¥290M at ¥14.5, a liquid large cap's turnover (the open's cap is 1/48 of it)


@dataclass(frozen=True)
class SyntheticSpec:
    """What synthetic market to build. Validated on construction (``ValueError``, one line)."""

    family: str = "factor"
    """The planted edge: one of ``SIGNAL_FAMILIES``."""
    num_stocks: int = 10
    """Number of stocks (2 .. 1000)."""
    num_days: int = 750
    """Trading days in the whole market (at least 50; split 60/20/20 into train/valid/test)."""
    ic: float = 0.1
    """Information coefficient in [0, 0.5]: correlation between the signal observable at close t and
    the next day's close-to-close return (ignored by ``none``, whose edge is zero)."""
    persistence: float = 0.9
    """AR(1) coefficient φ in [0, 1) of the latent signal (``factor``, ``cross_section``, ``none``);
    unused by ``momentum``/``reversal``. A sign change every ~1/(1-φ) days for φ near 1."""
    volatility: float = 0.02
    """Daily standard deviation of the idiosyncratic return noise, in (0, 0.05]."""
    market_volatility: float = 0.01
    """Daily standard deviation of the common market move, in [0, 0.05]."""
    drift: float = 0.0
    """Expected daily simple return of every stock (in [-0.01, 0.01]); earned intraday."""
    seed: int = 0
    """Seed of the numpy Generator: same spec, same market."""
    overnight_share: float = 0.25
    """Share in [0, 1] of the noise variance that falls in the overnight gap (close → next open)."""
    common_signal_scale: float = 3.0
    """``cross_section`` only: standard deviation (>= 0) of the common part of the signal column."""

    def __post_init__(self):
        if self.family not in SIGNAL_FAMILIES:
            raise ValueError(f"unknown family {self.family!r}: use one of {', '.join(SIGNAL_FAMILIES)}")
        for name in ("num_stocks", "num_days", "seed"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                raise ValueError(f"{name} must be an integer, got {value!r}")
        for item in fields(self):
            value = getattr(self, item.name)
            if item.name != "family" and not np.isfinite(value):
                raise ValueError(f"{item.name} must be finite, got {value!r}")
        if not 2 <= self.num_stocks <= MAX_STOCKS:
            raise ValueError(f"num_stocks must be in [2, {MAX_STOCKS}], got {self.num_stocks}")
        if self.num_days < MIN_DAYS:
            raise ValueError(f"num_days must be >= {MIN_DAYS} (too short for the 60/20/20 splits), "
                             f"got {self.num_days}")
        if not 0.0 <= self.ic <= 0.5:
            raise ValueError(f"ic must be in [0, 0.5], got {self.ic}")
        if not 0.0 <= self.persistence < 1.0:
            raise ValueError(f"persistence must be in [0, 1), got {self.persistence}")
        if not 0.0 < self.volatility <= 0.05:
            raise ValueError(f"volatility must be in (0, 0.05], got {self.volatility}")
        if not 0.0 <= self.market_volatility <= 0.05:
            raise ValueError(f"market_volatility must be in [0, 0.05], got {self.market_volatility}")
        if not -0.01 <= self.drift <= 0.01:
            raise ValueError(f"drift must be in [-0.01, 0.01], got {self.drift}")
        if self.seed < 0:
            raise ValueError(f"seed must be >= 0, got {self.seed}")
        if not 0.0 <= self.overnight_share <= 1.0:
            raise ValueError(f"overnight_share must be in [0, 1], got {self.overnight_share}")
        if self.common_signal_scale < 0:
            raise ValueError(f"common_signal_scale must be >= 0, got {self.common_signal_scale}")

    @property
    def noise_volatility(self) -> float:
        """σ_u: standard deviation of the unpredictable part of a daily return (market + own)."""
        return math.hypot(self.volatility, self.market_volatility)

    @property
    def loading(self) -> float:
        """The planted coefficient: ``k`` (factor, cross_section), ``+b``/``-b`` (momentum/reversal), 0 (none)."""
        if self.family == "none":
            return 0.0
        if self.family in ("momentum", "reversal"):
            return self.ic if self.family == "momentum" else -self.ic
        return self.noise_volatility * self.ic / math.sqrt(1.0 - self.ic ** 2)


class OraclePolicy:
    """Target weights of the oracle, one row per decision day of a split.

    A `Policy` for ``backtest.runner.run_policy`` with ``EnvConfig(action_mode="weights")``: it
    counts its calls to know the day (``run_policy`` steps day 0 → last day in order), so use a
    fresh one per episode.
    """

    def __init__(self, weights: torch.Tensor):
        self.weights = weights
        """[decision days, S] target weights (rows sum to 1 or 0)."""
        self.calls = 0

    def __call__(self, obs: torch.Tensor) -> torch.Tensor:
        if self.calls >= self.weights.shape[0]:
            raise RuntimeError(f"oracle called {self.calls + 1} times on a split with "
                               f"{self.weights.shape[0]} decision days: use a fresh oracle per episode")
        row = self.weights[self.calls]
        self.calls += 1
        return row.to(device=obs.device, dtype=obs.dtype).unsqueeze(0).expand(obs.shape[0], -1)


@dataclass
class SyntheticMarket:
    """A generated market, cleaned like any other, with the truth about its edge."""

    spec: SyntheticSpec
    """The spec it was built from."""
    bars: pd.DataFrame
    """The bar table in the own-data schema (``date, tic, open, high, low, close, volume`` and, for
    the factor families, ``signal``), as a user would save it to CSV."""
    market: PreparedMarket
    """``prepare_market(bars)`` with 60/20/20 fraction splits, source ``synthetic:<family>``."""
    expected_return: pd.DataFrame
    """[date × tic] ``E[r_{t+1} | information at close t]`` (close-to-close), from observed values
    only, on ``market.full.dates`` and ``market.full.tickers``."""

    def split_offset(self, split: str) -> int:
        """Position of the split's first day on the full calendar."""
        if split not in self.market.splits:
            raise ValueError(f"unknown split {split!r}: use one of {', '.join(self.market.splits)}")
        first = pd.Timestamp(self.market.splits[split].dates[0])
        return int(self.expected_return.index.get_loc(first))

    def oracle_weights(self, split: str) -> torch.Tensor:
        """[days - 1, S] the oracle's target weights for each decision day of ``split`` (float64)."""
        start = self.split_offset(split)
        days = self.market.splits[split].num_days
        expected = self.expected_return.to_numpy()[start:start + days - 1]
        if self.spec.family == "cross_section":
            # top half by expected return (a stable sort breaks ties by column)
            order = np.argsort(-expected, axis=1, kind="stable")
            chosen = np.zeros_like(expected, dtype=bool)
            np.put_along_axis(chosen, order[:, :self.spec.num_stocks // 2], True, axis=1)
        else:
            # >= 0: a stock about which nothing is known is held, as the market holds it
            chosen = expected >= 0.0
        count = chosen.sum(axis=1, keepdims=True)
        weights = np.where(chosen, 1.0 / np.maximum(count, 1), 0.0)
        return torch.as_tensor(weights, dtype=torch.float64)

    def oracle(self, split: str = "test") -> OraclePolicy:
        """A fresh oracle `Policy` for ``market.splits[split]`` (run it with ``action_mode="weights"``)."""
        return OraclePolicy(self.oracle_weights(split))

    def realised_ic(self) -> float:
        """The measured IC over the whole market: pooled correlation between the family's observed
        predictor at close t (signal, demeaned signal, ±return_1d) and the close-to-close r_{t+1}."""
        close = self.bars.pivot(index="date", columns="tic", values="close")
        returns = (close / close.shift(1) - 1.0).fillna(0.0)
        if self.spec.family in ("momentum", "reversal"):
            predictor = returns * (1.0 if self.spec.family == "momentum" else -1.0)
        else:
            predictor = self.bars.pivot(index="date", columns="tic", values="signal")
            if self.spec.family == "cross_section":
                predictor = predictor.sub(predictor.mean(axis=1), axis=0)
        x = predictor.to_numpy()[:-1].ravel()
        y = returns.to_numpy()[1:].ravel()
        return float(np.corrcoef(x, y)[0, 1])


def _tickers(count: int) -> list[str]:
    """Main-board codes, alternating Shanghai 600000+ and Shenzhen 000001+, sorted."""
    codes = [f"{600000 + i // 2}.SH" if i % 2 == 0 else f"{1 + i // 2:06d}.SZ" for i in range(count)]
    return sorted(codes)


def _ar1(innovations: np.ndarray, phi: float) -> np.ndarray:
    """Unit-variance stationary AR(1) along axis 0 from standard normal innovations."""
    out = np.empty_like(innovations)
    out[0] = innovations[0]
    scale = math.sqrt(1.0 - phi * phi)
    for t in range(1, len(innovations)):
        out[t] = phi * out[t - 1] + scale * innovations[t]
    return out


def _band(previous_ticks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Lowest and highest price (in ticks) strictly within ±MAX_MOVE of the previous close."""
    low = np.ceil(previous_ticks * (1.0 - MAX_MOVE) + 1e-9)
    high = np.floor(previous_ticks * (1.0 + MAX_MOVE) - 1e-9)
    return np.maximum(low, 1.0), np.maximum(high, 1.0)


def make_synthetic(spec: SyntheticSpec | None = None) -> SyntheticMarket:
    """Build the market ``spec`` describes (default: ``SyntheticSpec()``); reproducible by ``spec.seed``."""
    spec = spec or SyntheticSpec()
    days, stocks, family = spec.num_days, spec.num_stocks, spec.family
    rng = np.random.default_rng(spec.seed)
    tickers = _tickers(stocks)
    dates = pd.bdate_range(START_DATE, periods=days)

    # Every draw up front, in a fixed order (the family does not change the noise of the others).
    start_ticks = np.round(np.exp(rng.uniform(*np.log(_PRICE_RANGE), stocks)) * _TICKS_PER_YUAN)
    market_gap, market_day = rng.standard_normal((2, days, 1))
    own_gap, own_day = rng.standard_normal((2, days, stocks))
    latent = _ar1(rng.standard_normal((days, stocks)), spec.persistence)
    common = _ar1(rng.standard_normal((days, 1)), spec.persistence) * spec.common_signal_scale
    range_up, range_down = np.abs(rng.standard_normal((2, days, stocks))) * (_RANGE_NOISE * spec.volatility)
    volume = np.maximum(np.round(rng.lognormal(math.log(_MEDIAN_VOLUME / 100), 0.5, (days, stocks))), 1) * 100

    share = spec.overnight_share
    gap = math.sqrt(share) * (spec.market_volatility * market_gap + spec.volatility * own_gap)
    intraday_noise = math.sqrt(1.0 - share) * (spec.market_volatility * market_day + spec.volatility * own_day)

    loading = spec.loading
    if family == "factor":
        signal = latent
        planted = loading * signal  # row t: the predictable part of day t+1
    elif family == "cross_section":
        signal = common + latent
        planted = loading * (signal - signal.mean(axis=1, keepdims=True)) / math.sqrt(1.0 - 1.0 / stocks)
    elif family == "none":
        signal, planted = latent, np.zeros((days, stocks))
    else:
        signal, planted = None, None  # momentum/reversal: from the realised returns, day by day

    open_ticks = np.empty((days, stocks))
    close_ticks = np.empty((days, stocks))
    seen_return = np.zeros((days, stocks))  # what return_1d shows: 0 on the first day
    previous = start_ticks
    for t in range(days):
        if t == 0:
            predictable = 0.0  # nothing is observable before the first bar
        elif planted is None:
            predictable = loading * seen_return[t - 1]
        else:
            predictable = planted[t - 1]
        low, high = _band(previous)
        open_ticks[t] = np.clip(np.round(previous * (1.0 + gap[t])), low, high)
        intraday = spec.drift + predictable + intraday_noise[t]
        close_ticks[t] = np.clip(np.round(open_ticks[t] * (1.0 + intraday)), low, high)
        if t > 0:
            seen_return[t] = close_ticks[t] / close_ticks[t - 1] - 1.0
        previous = close_ticks[t]

    # High/low: beyond the open-close range by pure noise, inside the ±9.5 % band of the last close.
    previous_close = np.vstack([start_ticks[None, :], close_ticks[:-1]])
    band_low, band_high = _band(previous_close)
    top, bottom = np.maximum(open_ticks, close_ticks), np.minimum(open_ticks, close_ticks)
    high_ticks = np.clip(np.ceil(top * (1.0 + range_up)), top, np.maximum(band_high, top))
    low_ticks = np.clip(np.floor(bottom * (1.0 - range_down)), np.minimum(band_low, bottom), bottom)

    to_yuan = lambda ticks: np.round(ticks / _TICKS_PER_YUAN, 2).ravel()  # noqa: E731
    bars = pd.DataFrame({
        "date": np.repeat(dates.values, stocks),
        "tic": np.tile(np.asarray(tickers, dtype=object), days),
        "open": to_yuan(open_ticks), "high": to_yuan(high_ticks), "low": to_yuan(low_ticks),
        "close": to_yuan(close_ticks), "volume": volume.ravel().astype(np.int64),
    })
    if signal is not None:
        bars["signal"] = signal.ravel()

    # E[r_{t+1} | close t], from what a trader sees at close t.
    if family in ("momentum", "reversal"):
        expected = spec.drift + loading * seen_return
    else:
        expected = spec.drift + planted
    prepared = prepare_market(bars, splits=fraction_splits(dates), source=f"synthetic:{family}")
    expected_return = pd.DataFrame(expected, index=pd.DatetimeIndex(dates, name="date"),
                                   columns=pd.Index(tickers, name="tic"))
    expected_return = expected_return.reindex(index=pd.DatetimeIndex(prepared.full.dates, name="date"),
                                              columns=prepared.full.tickers)
    return SyntheticMarket(spec=spec, bars=bars, market=prepared, expected_return=expected_return)


__all__ = ["MAX_MOVE", "MIN_DAYS", "SIGNAL_FAMILIES", "START_DATE", "OraclePolicy", "SyntheticMarket",
           "SyntheticSpec", "make_synthetic"]
