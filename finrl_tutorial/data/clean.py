"""From a validated bar table to `MarketData`: calendar, suspensions, corporate actions,
price limits, indicators and train-only normalisation. Nothing here looks ahead: every value
on day ``d`` uses bars up to and including day ``d`` only.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import torch
from stockstats import StockDataFrame

from .. import rules
from ..errors import DataWarning
from .market import MarketData, days_between
from .schema import (PRICE_COLUMNS, DataError, check_factors, check_splits, feature_columns, names_argument,
                     validate_bars)

DEFAULT_INDICATORS = ("macd", "boll_ub", "boll_lb", "rsi_30", "cci_30", "dx_30", "close_30_sma", "close_60_sma")
"""FinRL's default technical indicators (stockstats names)."""

SSE15_SPLITS = {
    "train": ("2015-01-05", "2017-12-29"),
    "valid": ("2018-01-01", "2018-12-31"),
    "test": ("2019-01-02", "2020-01-03"),
}
"""Default date splits of the embedded sse15 sample."""

FEATURE_CLIP = 5.0
"""Normalised features are clipped to ±5 standard deviations."""

_MIN_MARKET_STOCKS = 3  # other stocks needed to estimate a day's market move (else the open is used)
_RATIO_TOLERANCE = 1e-4  # provider pre_close equals the last close up to rounding on ordinary days


@dataclass
class PreparedMarket:
    """The cleaned market and its date splits, ready for envs, trainers and backtests."""

    full: MarketData
    """The whole calendar."""
    splits: dict[str, MarketData]
    """``train`` / ``valid`` / ``test`` slices of ``full`` (normalisation fitted on train only)."""
    bars: pd.DataFrame
    """The validated bar table the arrays came from."""
    benchmark: pd.Series | None = None
    """An index close series (CSI 300) when the source provides one."""
    split_dates: dict[str, tuple[str, str]] = field(default_factory=dict)
    """First and last trading day of each split."""

    @property
    def train(self) -> MarketData:
        return self.splits["train"]

    @property
    def valid(self) -> MarketData:
        return self.splits["valid"]

    @property
    def test(self) -> MarketData:
        return self.splits["test"]

    def summary(self) -> dict:
        """Plain-Python facts for printing and for ``report.json``."""
        info = self.full.info
        return {
            "source": self.full.source,
            "tickers": list(self.full.tickers),
            "trading_days": self.full.num_days,
            "date_range": list(self.full.date_range()),
            "suspended_stock_days": int(info["suspended_stock_days"]),
            "suspended_by_ticker": dict(info["suspended_by_ticker"]),
            "corporate_actions": list(info["corporate_actions"]),
            "features": list(self.full.feature_names),
            "splits": {name: {"start": a, "end": b, "days": self.splits[name].num_days}
                       for name, (a, b) in self.split_dates.items()},
        }

    def select_stocks(self, columns) -> "PreparedMarket":
        """Only the stocks at positions ``columns`` in every split (see `MarketData.select_stocks`;
        a position may repeat, which widens the market for speed tests); the bars keep the rows of
        the chosen tickers."""
        columns = list(columns)
        full = self.full.select_stocks(columns)
        return PreparedMarket(full=full, splits={name: market.select_stocks(columns)
                                                 for name, market in self.splits.items()},
                              bars=self.bars[self.bars["tic"].isin(full.tickers)], benchmark=self.benchmark,
                              split_dates=dict(self.split_dates))



_ST_WARNED: set[str] = set()


def _warn_no_st(source: str) -> None:
    """Once per source and process: the data has no ST flag, so risk-warning stocks get the
    ordinary limits (±10 % on the main board instead of ±5 % before 2026-07-06)."""
    if source in _ST_WARNED:
        return
    _ST_WARNED.add(source)
    warnings.warn(f"the data ({source}) has no 'is_st' column: ST/*ST stocks get the ordinary price limits "
                  "(main board ±10 % instead of ±5 % before 2026-07-06) and no buy cap; add an is_st "
                  "column (1 on risk-warning days) or use a source that has one (tushare, baostock)",
                  DataWarning, stacklevel=4)


def _explicit_actions(group: pd.DataFrame) -> tuple[pd.Series, pd.Series, pd.Series]:
    """Cash per share, shares per share and "has an announced action" from the bars' own
    ``cash_dividend``/``bonus_shares`` columns (a provider's dividend table), zeros without them."""
    cash = group["cash_dividend"].fillna(0.0) if "cash_dividend" in group else pd.Series(0.0, index=group.index)
    shares = group["bonus_shares"].fillna(0.0) if "bonus_shares" in group else pd.Series(0.0, index=group.index)
    return cash, shares, (cash > 0) | (shares > 0)


SPLIT_EXPOSURE_BOUND = rules.BONUS_STEP / (1.0 + rules.BONUS_STEP)
"""The largest share of a holding's value that `rules.split_corporate_action` can put on the wrong
side (shares or cash) of an ex-day: less than one bonus step (0.1 share per share) of a total
ratio of at least 1.1, 0.1 / 1.1 = 9.1 %. The wealth is exact either way."""


def _warn_split_actions(split: pd.DataFrame, source: str) -> None:
    """Warn once per preparation when ex-days had only a total adjustment to go by."""
    if split.empty:
        return
    first = split.iloc[0]
    warnings.warn(
        f"{len(split)} ex-day(s) in the data ({source}; first {first['tic']} {pd.Timestamp(first['date']).date()}) "
        "come from a total adjustment (pre_close or adj_factor) without the dividend table: each is split into "
        "whole bonus shares per 10 and cash (10送1.6 is booked as 10送1 plus cash). The wealth is exact; up to "
        f"{SPLIT_EXPOSURE_BOUND:.1%} of the holding's value may sit on the wrong side (shares or cash) until "
        "the next trade. Add cash_dividend/bonus_shares columns (per share), or fetch with "
        "corporate_actions=True from tushare, baostock or akshare, to make it exact",
        DataWarning, stacklevel=4)


def _reference_close(group: pd.DataFrame, listing_day=None, hole_before=None) -> tuple[pd.Series, pd.Series]:
    """Per ticker: the ex-rights reference previous close, and whether an action was *detected*.

    Exact when the bars carry ``pre_close`` (tushare, baostock), ``adj_factor`` (tushare,
    akshare's adjusted series) or the announced ``cash_dividend``/``bonus_shares``. Otherwise a
    day whose *low* lies below the stock's own limit-down from the last close (by board, date and
    ST flag) cannot happen in normal trading, so it marks an ex-rights day (an action only ever
    lowers the reference; a move beyond the limit-up is not one); its reference is left NaN here
    and estimated by :func:`_detected_references`. Small dividends inside the limit cannot be
    told apart from market moves without a provider field. Never detected: a stock's first bar,
    the bars of a new listing's own window (``listing_day``: no ordinary limit), and a bar after
    a hole in the data (``hole_before``: exchange trading days missing from the whole data, over
    which the price may have moved by any amount). A provider's ``pre_close`` on a ticker's first
    bar is kept (the day has limits); without it the first bar has no previous close.
    """
    previous = group["close"].shift(1)
    detected = pd.Series(False, index=group.index)
    cash, shares, announced = _explicit_actions(group)
    has_pre_close = "pre_close" in group and group["pre_close"].notna().any()
    announced_reference = pd.Series(rules.ex_rights_reference(previous, cash, shares), index=group.index)
    if has_pre_close:
        # a missing pre_close on an announced ex-day takes the reference the announcement implies
        reference = group["pre_close"].where(group["pre_close"].notna(),
                                             previous.where(~announced, announced_reference))
    elif "adj_factor" in group and group["adj_factor"].notna().any():
        factor = group["adj_factor"].ffill()
        reference = previous * factor.shift(1) / factor
    elif announced.any():
        reference = previous.where(~announced, announced_reference)
    else:
        rate = rules.limit_rate(group["tic"].iloc[0], group["date"], group.get("is_st"))
        _, down = rules.limit_prices(previous.to_numpy(), rate)
        beyond = group["low"].to_numpy() < down - rules.TICK / 2
        if listing_day is not None:
            beyond &= ~listing_day
        if hole_before is not None:
            beyond &= ~np.asarray(hole_before, dtype=bool)
        detected = pd.Series(beyond & previous.notna().to_numpy(), index=group.index)
        reference = previous.where(~detected)
    reference = reference.copy()
    if not (has_pre_close and pd.notna(group["pre_close"].iloc[0])):
        reference.iloc[0] = np.nan  # a first bar without a provider pre_close has no previous close
    return reference, detected


DETECTED_MAX_CASH_YIELD = 0.05
"""A detected ex-day's cash part is taken to be at most this share of the last close (the candidate
bonus ratios are searched with cash dividends of 0..5 % of the price)."""

DETECTED_MAX_BONUS = 3.0
"""Candidate bonus and transfer shares of a detected ex-day: 0.1 .. 3.0 per share, in whole shares
per 10 (`rules.BONUS_STEP`)."""


def _detected_references(bars: pd.DataFrame, reference: pd.Series, detected: pd.Series):
    """Reference price, share ratio and cash of each *detected* ex-rights day, with evidence.

    The exchanges' reference price is ``(close − cash) / (1 + bonus)`` (`rules.ex_rights_reference`,
    rights issues aside), and the ex-day's prices must lie inside the limits around it:
    ``reference ∈ [high / (1 + r), low / (1 − r)]`` (r: the stock's own limit). The estimate is
    the ex-day's open net of the market's opening move that day (the median open/reference of
    the other stocks without an action, when at least `_MIN_MARKET_STOCKS` traded), projected
    onto that feasible range and onto the nearest candidate bonus (0.1..`DETECTED_MAX_BONUS`
    per share, cash 0..`DETECTED_MAX_CASH_YIELD` of the last close; with no bonus, the smallest
    cash dividend that makes the day's prices legal). A close at the day's high or low that is
    the limit of a reference in that range (within 2 % of the estimate) pins the reference to it
    (``limit_locked_close``). The bonus becomes shares and the rest of
    the total cash. Confidence: ``high`` when exactly one candidate bonus fits the feasible range
    within 2 % of the estimate, ``medium`` when several do, ``low`` when none does or only a
    cash dividend explains the day (when no candidate fits at all, the estimate clipped to the
    feasible range is taken, all of it as shares).

    Returns ``reference, ratio, cash`` (Series on ``bars.index``, NaN off detected days) and a
    list of evidence dicts.
    """
    ordinary = ~detected & reference.notna()
    open_move = (bars["open"] / reference - 1.0).where(ordinary)
    by_date = open_move.groupby(bars["date"])
    market_open = by_date.median().where(by_date.count() >= _MIN_MARKET_STOCKS)
    previous_close = bars.sort_values("date").groupby("tic")["close"].shift(1).reindex(bars.index)
    bonus_grid = np.round(np.arange(0, int(round(DETECTED_MAX_BONUS / rules.BONUS_STEP)) + 1) * rules.BONUS_STEP, 10)
    out_reference = pd.Series(np.nan, index=bars.index)
    out_ratio = pd.Series(np.nan, index=bars.index)
    out_cash = pd.Series(np.nan, index=bars.index)
    evidence = []
    for index in np.flatnonzero(detected.to_numpy()):
        row = bars.iloc[index]
        label = bars.index[index]
        previous = float(previous_close.loc[label])
        rate = float(rules.limit_rate(row["tic"], [row["date"]], [row["is_st"]] if "is_st" in row else None)[0])
        move = market_open.get(row["date"], np.nan)
        move = 0.0 if not np.isfinite(move) else float(move)
        estimate = float(row["open"]) / (1.0 + move)
        low_bound = (float(row["high"]) - rules.TICK / 2) / (1.0 + rate)
        high_bound = min((float(row["low"]) + rules.TICK / 2) / (1.0 - rate), previous)
        fits = []
        for bonus in bonus_grid:
            lo = max(low_bound, previous * (1.0 - DETECTED_MAX_CASH_YIELD) / (1.0 + bonus))
            hi = min(high_bound, previous / (1.0 + bonus))
            if lo <= hi:
                # a cash-only action: the smallest dividend that makes the day's prices legal
                point = hi if bonus == 0 else min(max(estimate, lo), hi)
                fits.append((abs(point - estimate), float(bonus), point))
        close_fits = [f for f in fits if f[0] <= 0.02 * estimate]
        locked = None
        if fits:
            _, bonus, point = min(fits)
            ref = float(rules.round_to_tick(point))
            # A close at the day's high (low) that is the limit-up (-down) of a reference inside the
            # chosen bonus's range pins the reference: the exchange's limit is that reference ± r.
            lo = max(low_bound, previous * (1.0 - DETECTED_MAX_CASH_YIELD) / (1.0 + bonus))
            hi = min(high_bound, previous / (1.0 + bonus))
            close = float(row["close"])
            for at_limit, side in ((close >= float(row["high"]) - rules.TICK / 2, 1.0),
                                   (close <= float(row["low"]) + rules.TICK / 2, -1.0)):
                if not at_limit:
                    continue
                centre = close / (1.0 + side * rate)
                for candidate in (float(rules.round_to_tick(centre - rules.TICK)), float(rules.round_to_tick(centre)),
                                  float(rules.round_to_tick(centre + rules.TICK))):
                    limit = float(rules.round_to_tick(candidate * (1.0 + side * rate)))
                    if (abs(limit - close) < rules.TICK / 2 and lo - rules.TICK / 2 <= candidate <= hi + rules.TICK / 2
                            and abs(candidate - estimate) <= 0.02 * estimate
                            and (locked is None or abs(candidate - estimate) < abs(locked - estimate))):
                        locked = candidate
            ref = locked if locked is not None else ref
            ratio = 1.0 + bonus
            cash = max(previous - ratio * ref, 0.0)
            # the confidence judges the bonus shares only (how many bonus ratios fit the day's prices);
            # the cash part is a residual whose size a day's own noise can match (chapter 1.4)
            confidence = ("low" if bonus == 0 or not close_fits else "high" if len(close_fits) == 1 else "medium")
        else:
            ref = float(rules.round_to_tick(min(max(estimate, low_bound), high_bound)))
            ratio, cash, confidence = previous / ref, 0.0, "low"
        out_reference.loc[label], out_ratio.loc[label], out_cash.loc[label] = ref, ratio, cash
        evidence.append({
            "tic": row["tic"], "date": str(pd.Timestamp(row["date"]).date()), "previous_close": previous,
            "open": float(row["open"]), "low": float(row["low"]), "high": float(row["high"]),
            "close": float(row["close"]), "limit": rate,
            "limit_down_from_previous_close": float(rules.limit_prices(previous, rate)[1]),
            "feasible_reference": [round(low_bound, 4), round(high_bound, 4)],
            "market_open_move": round(move, 6), "reference": ref, "bonus_shares": round(ratio - 1.0, 6),
            "cash_dividend": round(cash, 4), "confidence": confidence,
            "limit_locked_close": locked is not None,
        })
    return out_reference, out_ratio, out_cash, evidence


def _listing_day(dates: pd.Series, list_date) -> np.ndarray:
    """Trading day number since listing (1 = listing day) of each bar of one ticker; NaN before.

    Counted on the stock's own bars when the data starts on or before the listing date, else in
    exchange trading days since listing (`rules.exchange_sessions`; weekdays only where the
    calendar does not reach)."""
    list_date = pd.Timestamp(list_date)
    dates = pd.DatetimeIndex(dates)
    after = dates >= list_date
    if len(dates) and dates[0] <= list_date:
        day = np.cumsum(after).astype(float)
    else:
        sessions = rules.exchange_sessions(list_date, dates.max()) if len(dates) else None
        if sessions is not None and len(sessions) and sessions[0] <= list_date + pd.Timedelta(days=31):
            day = np.searchsorted(sessions.values, dates.values, side="right").astype(float)
        else:
            day = np.busday_count(np.datetime64(list_date.date()), dates.values.astype("datetime64[D]")) + 1.0
    return np.where(after, day, np.nan)


def _listing_facts(listings) -> dict[str, tuple[pd.Timestamp, float | None]]:
    if listings is None:
        return {}
    frame = pd.DataFrame(listings)
    if "tic" not in frame or "list_date" not in frame:
        raise DataError("listings need columns 'tic' and 'list_date' (and optionally 'issue_price')")
    facts = {}
    for row in frame.itertuples():
        date = pd.to_datetime(str(row.list_date), errors="coerce", format="mixed")
        if pd.isna(date):
            continue
        price = getattr(row, "issue_price", None)
        price = float(price) if price is not None and pd.notna(price) else None
        facts[str(row.tic)] = (date.normalize(), price)
    return facts


def data_holes(dates: pd.DatetimeIndex) -> pd.DatetimeIndex:
    """Exchange trading days (`rules.exchange_sessions`) inside the data's range on which no stock
    has a bar: a hole in the data, not a suspension. Without the calendar (dates beyond it), a
    gap of more than 14 calendar days between bars stands for one (the longest A-share holiday
    closure, the Spring Festival, is shorter)."""
    dates = pd.DatetimeIndex(dates)
    if not len(dates):
        return dates
    sessions = rules.exchange_sessions(dates[0], dates[-1])
    holes = sessions.difference(dates) if sessions is not None else pd.DatetimeIndex([])
    uncovered = dates[~rules.covered_by_calendar(dates)]
    if len(uncovered) > 1:
        gaps = np.diff(uncovered.values).astype("timedelta64[D]").astype(int)
        holes = holes.union(uncovered[1:][gaps > 14] - pd.Timedelta(days=1))
    return holes


def _per_ticker_rows(bars: pd.DataFrame, listings=None, holes=None) -> tuple[pd.DataFrame, dict]:
    """Add reference close, share ratio, cash dividend, limits and adjusted prices per ticker.

    A stock first seen after the data's first day is taken to list on that day (its IPO window
    applies, by board and date) unless ``listings`` says otherwise. Returns the rows and facts
    (``listings_inferred``, ``detected_actions`` with their evidence)."""
    facts = _listing_facts(listings)
    data_start = bars["date"].min()
    first_seen = bars.groupby("tic")["date"].min()
    inferred = {tic: date for tic, date in first_seen.items() if date > data_start and tic not in facts}
    facts.update({tic: (date, None) for tic, date in inferred.items()})
    holes = pd.DatetimeIndex([]) if holes is None else pd.DatetimeIndex(holes)

    def listing_rules(tic, group):
        if tic not in facts:
            return None
        list_date, issue_price = facts[tic]
        return rules.listing_limits(tic, group["date"], _listing_day(group["date"], list_date), list_date,
                                    issue_price)

    def first_days(tic, group):
        """The bars of a listing's first five trading days: never read as a corporate action."""
        if tic not in facts:
            return None
        day = _listing_day(group["date"], facts[tic][0])
        return np.nan_to_num(day, nan=0.0) <= rules.REGISTRATION_UNLIMITED_DAYS

    references, flags = [], []
    for tic, group in bars.groupby("tic", sort=True):
        group = group.sort_values("date")
        previous_date = group["date"].shift(1)
        after_hole = (np.searchsorted(holes.values, group["date"].values)
                      - np.searchsorted(holes.values, previous_date.fillna(group["date"]).values, side="right")) > 0
        reference, detected = _reference_close(group, first_days(tic, group), after_hole)
        references.append(reference)
        flags.append(detected)
    reference_all = pd.concat(references).reindex(bars.index)
    detected_all = pd.concat(flags).reindex(bars.index).astype(bool)
    detected_reference, detected_ratio, detected_cash, evidence = _detected_references(bars, reference_all,
                                                                                       detected_all)
    reference_all = reference_all.where(~detected_all, detected_reference)

    pieces, disagreements = [], []
    for tic, group in bars.groupby("tic", sort=True):
        group = group.sort_values("date").copy()
        reference, detected = reference_all.loc[group.index], detected_all.loc[group.index]
        previous = group["close"].shift(1)
        total = previous / reference
        has_action = ((total - 1.0).abs() > _RATIO_TOLERANCE).fillna(False)
        split_ratio, split_dividend = rules.split_corporate_action(previous.to_numpy(), reference.to_numpy())
        cash, shares, announced = _explicit_actions(group)
        announced = announced & previous.notna()
        # A detected day's split comes from the candidate bonus that fits its prices (see
        # `_detected_references`).
        split_ratio = np.where(detected, detected_ratio.loc[group.index], split_ratio)
        split_dividend = np.where(detected, detected_cash.loc[group.index], split_dividend)
        # The dividend table and the prices' own total adjustment (pre_close, adj_factor) must agree
        # up to the reference's rounding to the fen; where they do not (a rights issue, an ex-date a
        # day off), the table's bonus shares are kept and the cash follows from the prices, so that
        # the holder's wealth matches them.
        gap = ((1.0 + shares) * reference + cash - previous).abs()
        mismatch = announced & (gap > (1.0 + shares) * rules.TICK)
        table_ratio = 1.0 + shares
        reconciled_cash = previous - table_ratio * reference
        table_ratio = table_ratio.where(~mismatch | (reconciled_cash >= 0), total)
        table_cash = cash.where(~mismatch, reconciled_cash.clip(lower=0.0))
        ratio = np.where(announced, table_ratio, np.where(has_action, split_ratio, 1.0))
        dividend = np.where(announced, table_cash, np.where(has_action, split_dividend, 0.0))
        for at in np.flatnonzero(mismatch.to_numpy()):  # rare: the table's own reference only for these
            table_reference = rules.ex_rights_reference(previous.iloc[at], cash.iloc[at], shares.iloc[at])
            disagreements.append({"tic": tic, "date": str(pd.Timestamp(group["date"].iloc[at]).date()),
                                  "table_reference": round(float(table_reference), 4),
                                  "data_reference": round(float(reference.iloc[at]), 4)})
        group["ref_close"] = reference
        group["split_ratio"] = ratio
        group["dividend"] = dividend
        group["action_detected"] = detected
        # how each ex-day's holdings were set: from the dividend table, detected from the bars, or
        # a provider's total adjustment split into whole bonus shares per 10 and cash
        group["action_how"] = np.where(announced, "announced", np.where(detected, "detected", "split"))
        rate = rules.limit_rate(tic, group["date"], group.get("is_st"))
        up, down = rules.limit_prices(reference.to_numpy(), rate)
        no_limit = reference.isna().to_numpy()  # no previous close: first listed day, or unknown
        computed_up = np.where(no_limit, np.inf, up)
        computed_down = np.where(no_limit, 0.0, down)
        # A detected ex-day's reference is an estimate, and a first bar's provider pre_close may be
        # an IPO's issue price (a listing day with its own band): the day's own trading range was legal.
        widen = detected.to_numpy() | (np.arange(len(group)) == 0)
        computed_up = np.where(widen, np.maximum(computed_up, group["high"].to_numpy()), computed_up)
        computed_down = np.where(widen, np.minimum(computed_down, group["low"].to_numpy()), computed_down)
        listing = listing_rules(tic, group)
        if listing is not None:
            listing_up, listing_down = listing
            computed_up = np.where(np.isnan(listing_up), computed_up, listing_up)
            computed_down = np.where(np.isnan(listing_down), computed_down, listing_down)
        group["up_limit_"] = group["up_limit"].fillna(pd.Series(computed_up, index=group.index)) \
            if "up_limit" in group else computed_up
        group["down_limit_"] = group["down_limit"].fillna(pd.Series(computed_down, index=group.index)) \
            if "down_limit" in group else computed_down
        # Back-adjusted (hfq) prices: multiply by the cumulative total factor, so past values never change.
        cumulative = pd.Series(np.where(has_action | announced, total, 1.0), index=group.index).fillna(1.0).cumprod()
        for column in PRICE_COLUMNS:
            group[f"adj_{column}"] = group[column] * cumulative
        group["adj_volume"] = group["volume"] / cumulative
        pieces.append(group)
    if disagreements:
        first = disagreements[0]
        warnings.warn(f"{len(disagreements)} ex-day(s) where the dividend table and the prices' own adjustment "
                      f"(pre_close/adj_factor) disagree (first {first['tic']} {first['date']}: the table implies "
                      f"a reference of {first['table_reference']}, the data {first['data_reference']}): the table's "
                      "bonus shares are kept and the cash set so that the holder's wealth matches the prices "
                      "(a rights issue, or an ex-date a day off?)", DataWarning, stacklevel=5)
    found = {"listings_inferred": {tic: str(date.date()) for tic, date in sorted(inferred.items())},
             "detected_actions": evidence, "dividend_table_disagreements": disagreements}
    return pd.concat(pieces, ignore_index=True), found


def _indicators(group: pd.DataFrame, indicators) -> pd.DataFrame:
    """stockstats indicators on one ticker's back-adjusted bars, made scale-free.

    Price-like indicators become ratios to the close (``boll_ub / close - 1``, ``macd / close``)
    so an ex-rights day or a high-priced stock does not change their scale.
    """
    frame = pd.DataFrame({
        "date": group["date"].to_numpy(), "open": group["adj_open"].to_numpy(), "high": group["adj_high"].to_numpy(),
        "low": group["adj_low"].to_numpy(), "close": group["adj_close"].to_numpy(),
        "volume": group["adj_volume"].to_numpy(),
    })
    stock = StockDataFrame.retype(frame)
    close = frame["close"].to_numpy()
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for name in indicators:
            try:
                values = np.asarray(stock[name], dtype=float)
            except Exception as error:  # stockstats raises many types for unknown names
                raise DataError(f"unknown or failing stockstats indicator {name!r}: {error}") from None
            if name.startswith("macd") or name.startswith("atr"):
                values = values / close
            elif name.startswith("boll") or name.endswith(("_sma", "_ema", "_mstd")) or name.startswith("close_"):
                values = values / close - 1.0
            out[name] = values
    out["return_1d"] = (group["close"] / group["ref_close"] - 1.0).fillna(0.0).to_numpy()
    return pd.DataFrame(out, index=group.index)


def _dense(frame: pd.DataFrame, column: str, dates, tickers) -> np.ndarray:
    return frame.pivot(index="date", columns="tic", values=column).reindex(index=dates, columns=tickers).to_numpy(dtype=float)


def _split_positions(dates: pd.DatetimeIndex, splits) -> dict[str, tuple[int, int]]:
    check_splits(splits)
    positions = {}
    for name, (start, end) in splits.items():
        inside = days_between(dates, start, end)
        if len(inside) < 2:
            raise DataError(f"split {name!r} ({start}..{end}) has fewer than 2 trading days in the data "
                            f"({dates[0].date()}..{dates[-1].date()})")
        positions[name] = (int(inside[0]), int(inside[-1]) + 1)
    ordered = sorted(positions.items(), key=lambda item: item[1][0])
    for (name_a, (_, stop_a)), (name_b, (start_b, _)) in zip(ordered, ordered[1:]):
        if start_b < stop_a:
            raise DataError(f"splits {name_a!r} and {name_b!r} overlap")
    if "train" not in positions:
        raise DataError("splits need a 'train' entry (normalisation is fitted on it)")
    return positions


def fraction_splits(dates: pd.DatetimeIndex, train: float = 0.6, valid: float = 0.2) -> dict[str, tuple[str, str]]:
    """Chronological train/valid/test splits by fraction of the calendar."""
    n = len(dates)
    a, b = int(n * train), int(n * (train + valid))
    if a < 2 or b - a < 2 or n - b < 2:
        raise DataError(f"only {n} trading days: too few for train/valid/test splits")
    day = lambda i: str(dates[i].date())  # noqa: E731
    return {"train": (day(0), day(a - 1)), "valid": (day(a), day(b - 1)), "test": (day(b), day(n - 1))}


def check_feature_stats(stats: dict, feature_names: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Given normalisation statistics (``{"names", "mean", "std"}``, as a checkpoint stores
    them) as arrays in ``feature_names`` order; a `DataError` saying which features differ."""
    if not isinstance(stats, dict) or not {"names", "mean", "std"} <= set(stats):
        raise DataError(f"feature_stats must be a dict with 'names', 'mean' and 'std', got {type(stats).__name__}")
    names = list(stats["names"])
    if names != list(feature_names):
        missing = [n for n in names if n not in feature_names]
        extra = [n for n in feature_names if n not in names]
        detail = "; ".join(part for part in (
            f"missing {', '.join(missing)}" if missing else "",
            f"not in the checkpoint: {', '.join(extra)}" if extra else "",
            "same features in another order" if not missing and not extra else "") if part)
        raise DataError(f"the data's features do not match the ones the agent was trained on ({detail}); "
                        f"expected: {', '.join(names)}")
    mean, std = np.asarray(stats["mean"], dtype=float), np.asarray(stats["std"], dtype=float)
    if mean.shape != (len(names),) or std.shape != (len(names),) or not (np.isfinite(mean).all()
                                                                        and np.isfinite(std).all() and (std > 0).all()):
        raise DataError("feature statistics must be finite, one mean and one std > 0 per feature")
    return mean, std


def check_split_lengths(prepared: "PreparedMarket", minimum: int = 20) -> None:
    """Every split must have at least ``minimum`` trading days: metrics on a handful of days
    (a Sharpe ratio of three returns) mean nothing. Called before training starts."""
    for name, market in prepared.splits.items():
        if market.num_days < minimum:
            raise DataError(f"split {name!r} has only {market.num_days} trading days "
                            f"({market.first_date}..{market.last_date}): at least {minimum} are needed; "
                            "use more data or longer splits")


def prepare_market(bars: pd.DataFrame, *, splits: dict | None = None, indicators=DEFAULT_INDICATORS,
                   calendar=None, benchmark: pd.Series | None = None, source: str = "dataframe",
                   min_history: int = 2, listings=None, feature_stats: dict | None = None,
                   date_format: str | None = None, window_start=None) -> PreparedMarket:
    """Clean a bar table into `MarketData` and its date splits.

    - Calendar: ``calendar`` (the exchange's, when a source has one) within the data's range,
      else the union of bar dates. A stock absent on a trading day is *suspended*: untradable,
      valued at its last close. Nothing is back-filled from the future.
    - Corporate actions: see :func:`_reference_close` and :func:`rules.split_corporate_action`;
      cash dividends are paid and bonus shares added in the env.
    - Limits: from the reference close by board/date/ST, or the bars' own ``up_limit``/``down_limit``;
      new listings by :func:`rules.listing_limits` when ``listings`` (a table with ``tic``,
      ``list_date`` and optionally ``issue_price``) gives their listing dates.
    - Features: ``indicators`` (stockstats names) on back-adjusted prices, ``return_1d``, and every
      extra numeric column of ``bars`` (user factors); z-scored with mean/std of the train split,
      or with ``feature_stats`` (``{"names", "mean", "std"}`` from a checkpoint) when given, so
      that a backtest on another window sees exactly the inputs the agent was trained on.
    - ``window_start``: bars before this date are history only: they warm up the indicators
      (an EMA remembers the past) and the last close, but the market starts on this date. So
      the features of a day do not depend on where the loaded window starts.
    """
    bars = validate_bars(bars, min_history=min_history, date_format=date_format)
    return prepare_validated(bars, splits=splits, indicators=indicators, calendar=calendar, benchmark=benchmark,
                             source=source, feature_stats=feature_stats, window_start=window_start,
                             listings=listings)


def prepare_validated(bars: pd.DataFrame, *, splits: dict | None = None, indicators=DEFAULT_INDICATORS,
                      calendar=None, benchmark: pd.Series | None = None, source: str = "dataframe",
                      feature_stats: dict | None = None, window_start=None, listings=None) -> PreparedMarket:
    """`prepare_market` on bars that `validate_bars` returned (or a row subset of them): the
    entry check is not run a second time."""
    indicators = tuple(names_argument(indicators, "indicators") or ())
    # ``open_volume`` (shares traded in the opening auction) feeds the open-fill cap, not the agent
    user_factors = [c for c in feature_columns(bars) if c != "open_volume"]
    built_in = set(indicators) | {"return_1d"}
    clash = [c for c in user_factors if c in built_in]
    if clash:
        raise DataError(f"user factor(s) {', '.join(map(repr, clash))} have the name of a built-in feature: "
                        "rename them")
    data_dates = pd.DatetimeIndex(sorted(bars["date"].unique()))
    synthetic = str(source).startswith("synthetic")  # weekday calendars by design (see data.synthetic)
    holes = pd.DatetimeIndex([]) if synthetic or calendar is not None else data_holes(data_dates)
    off_exchange = pd.DatetimeIndex([])
    if not synthetic and calendar is None:
        known = data_dates[rules.covered_by_calendar(data_dates)]
        sessions = rules.exchange_sessions(data_dates[0], data_dates[-1]) if len(known) else None
        off_exchange = known.difference(sessions) if sessions is not None else off_exchange
        if len(off_exchange):
            warnings.warn(f"{len(off_exchange)} date(s) with bars are not A-share trading days "
                          f"({rules.CALENDAR_SOURCE}): {', '.join(str(d.date()) for d in off_exchange[:3])}"
                          f"{' ...' if len(off_exchange) > 3 else ''}; they are kept as trading days: "
                          "check the dates (a weekend, a holiday, or a time zone shift)", stacklevel=3)
        if len(holes):
            warnings.warn(f"the data has no bars on {len(holes)} exchange trading day(s) "
                          f"({holes[0].date()} .. {holes[-1].date()}): a hole in the data; moves across it "
                          "are not read as corporate actions", stacklevel=3)
    # (the embedded sample's lack of ST flags is stated in the README instead of warned on every run)
    if not synthetic and "is_st" not in bars and not str(source).startswith("sample:"):
        _warn_no_st(source)
    rows, found = _per_ticker_rows(bars, listings, holes)
    tickers = sorted(rows["tic"].unique())

    dates = pd.DatetimeIndex(sorted(rows["date"].unique()))
    if calendar is not None:
        calendar = pd.DatetimeIndex(pd.to_datetime(calendar)).normalize()
        calendar = calendar[(calendar >= dates[0]) & (calendar <= dates[-1])]
        off_calendar = dates.difference(calendar)
        if len(off_calendar):
            raise DataError(f"bars on non-trading day(s) of the calendar: {[str(d.date()) for d in off_calendar[:3]]}")
        dates = calendar.sort_values()
    first = 0 if window_start is None else int(np.searchsorted(dates, pd.Timestamp(window_start)))
    if first >= len(dates):
        raise DataError(f"no trading days from {pd.Timestamp(window_start).date()} on in the data")
    if splits is None:
        splits = fraction_splits(dates[first:])
    positions = {name: (a + first, b + first) for name, (a, b) in _split_positions(dates[first:], splits).items()}

    present = _dense(rows, "close", dates, tickers)
    traded = ~np.isnan(present) & (_dense(rows, "volume", dates, tickers) > 0)
    close = pd.DataFrame(present).ffill().to_numpy()
    # Before its first bar a stock cannot be held; its first open stands in so arrays stay finite.
    first_open = pd.DataFrame(_dense(rows, "open", dates, tickers)).bfill().to_numpy()
    close = np.where(np.isnan(close), first_open, close)

    def dense_or_close(column):
        values = _dense(rows, column, dates, tickers)
        return np.where(np.isnan(values), close, values)

    ratio = np.nan_to_num(_dense(rows, "split_ratio", dates, tickers), nan=1.0)
    dividend = np.nan_to_num(_dense(rows, "dividend", dates, tickers), nan=0.0)
    volume = np.nan_to_num(_dense(rows, "volume", dates, tickers), nan=0.0)
    reference = _dense(rows, "ref_close", dates, tickers)
    previous_close = np.vstack([close[:1], close[:-1]])
    reference = np.where(np.isnan(reference), previous_close, reference)
    up = _dense(rows, "up_limit_", dates, tickers)
    down = _dense(rows, "down_limit_", dates, tickers)

    feature_frame = pd.concat([rows[["date", "tic"]], pd.concat(
        [_indicators(group, indicators) for _, group in rows.groupby("tic", sort=True)]).sort_index(),
        rows[user_factors]], axis=1)
    feature_names = [c for c in feature_frame.columns if c not in ("date", "tic")]
    raw_features = np.stack([
        pd.DataFrame(_dense(feature_frame, name, dates, tickers)).ffill().to_numpy() for name in feature_names
    ], axis=-1)
    if feature_stats is not None:
        mean, std = check_feature_stats(feature_stats, feature_names)
    else:
        train_start, train_stop = positions["train"]
        factor_warnings = check_factors(rows, user_factors, dates[train_start], dates[train_stop - 1])
        train_values = raw_features[train_start:train_stop][traded[train_start:train_stop]]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            mean = np.nanmean(train_values, axis=0)
            std = np.nanstd(train_values, axis=0)
        mean = np.nan_to_num(mean)
        std = np.where(np.isfinite(std) & (std > 1e-12), std, 1.0)
    features = np.clip(np.nan_to_num((raw_features - mean) / std), -FEATURE_CLIP, FEATURE_CLIP)

    suspended = (~traded[first:]).sum(axis=0)
    actions = rows[((rows["split_ratio"] != 1.0) | (rows["dividend"] > 0.0)) & (rows["date"] >= dates[first])]
    _warn_split_actions(actions[actions["action_how"] == "split"], source)
    info = {
        "suspended_stock_days": int(suspended.sum()),
        "suspended_by_ticker": {t: int(n) for t, n in zip(tickers, suspended) if n},
        "corporate_actions": [
            {"tic": r.tic, "date": str(r.date.date()), "ratio": round(float(r.split_ratio), 6),
             "dividend": round(float(r.dividend), 4), "how": r.action_how}
            for r in actions.itertuples()
        ],
        "detected_actions": [e for e in found["detected_actions"] if pd.Timestamp(e["date"]) >= dates[first]],
        "dividend_table_disagreements": [e for e in found["dividend_table_disagreements"]
                                         if pd.Timestamp(e["date"]) >= dates[first]],
        "listings_inferred": found["listings_inferred"],
        "data_holes": [str(d.date()) for d in holes],
        "off_calendar_dates": [str(d.date()) for d in off_exchange],
        "st_flags": "is_st" in bars,
        "feature_mean": mean.tolist(),
        "feature_std": std.tolist(),
        "feature_stats_from": "given" if feature_stats is not None else "train split",
        "indicators": list(indicators),
        "user_factors": user_factors,
        "factor_warnings": factor_warnings if feature_stats is None else [],
    }
    as_tensor = lambda a: torch.as_tensor(np.ascontiguousarray(a), dtype=torch.float64)  # noqa: E731
    everything = MarketData(
        dates=dates.values.astype("datetime64[D]"), tickers=list(tickers), feature_names=feature_names,
        open=as_tensor(dense_or_close("open")), high=as_tensor(dense_or_close("high")),
        low=as_tensor(dense_or_close("low")), close=as_tensor(close), volume=as_tensor(volume),
        pre_close=as_tensor(reference), split_ratio=as_tensor(ratio), dividend=as_tensor(dividend),
        up_limit=as_tensor(np.where(np.isnan(up), np.inf, up)),
        down_limit=as_tensor(np.where(np.isnan(down), 0.0, down)), tradable=torch.as_tensor(traded),
        open_volume=as_tensor(np.nan_to_num(_dense(rows, "open_volume", dates, tickers), nan=-1.0)
                              if "open_volume" in rows else np.full(close.shape, -1.0)),
        is_st=torch.as_tensor(np.nan_to_num(_dense(rows, "is_st", dates, tickers), nan=0.0) > 0.5
                              if "is_st" in rows else np.zeros(close.shape, dtype=bool)),
        features=as_tensor(features), source=source, info=info,
    )
    full = everything.slice_days(first, len(dates)) if first else everything
    sliced = {name: everything.slice_days(a, b) for name, (a, b) in positions.items()}
    split_dates = {name: m.date_range() for name, m in sliced.items()}
    window_bars = bars[bars["date"] >= dates[first]].reset_index(drop=True) if first else bars
    return PreparedMarket(full=full, splits=sliced, bars=window_bars, benchmark=benchmark, split_dates=split_dates)
