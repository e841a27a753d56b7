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



def _explicit_actions(group: pd.DataFrame) -> tuple[pd.Series, pd.Series, pd.Series]:
    """Cash per share, shares per share and "has an announced action" from the bars' own
    ``cash_dividend``/``bonus_shares`` columns (a provider's dividend table), zeros without them."""
    cash = group["cash_dividend"].fillna(0.0) if "cash_dividend" in group else pd.Series(0.0, index=group.index)
    shares = group["bonus_shares"].fillna(0.0) if "bonus_shares" in group else pd.Series(0.0, index=group.index)
    return cash, shares, (cash > 0) | (shares > 0)


def _reference_close(group: pd.DataFrame, listing_day=None) -> tuple[pd.Series, pd.Series]:
    """Per ticker: the ex-rights reference previous close, and whether an action was *detected*.

    Exact when the bars carry ``pre_close`` (tushare, baostock), ``adj_factor`` (tushare,
    akshare's adjusted series) or the announced ``cash_dividend``/``bonus_shares``. Otherwise a
    close-to-close move beyond the board's daily limit cannot happen in normal trading, so it
    marks an ex-rights day; its reference is left NaN here and estimated across the market by
    :func:`_market_references`. Small dividends inside the limit cannot be told apart from market
    moves without a provider field. A provider's ``pre_close`` on a ticker's first bar is kept
    (the day has limits); without it the first bar has no previous close. ``listing_day`` marks
    the bars that a new listing's own rules govern (no detection there: no ordinary limit).
    """
    previous = group["close"].shift(1)
    detected = pd.Series(False, index=group.index)
    cash, shares, announced = _explicit_actions(group)
    has_pre_close = "pre_close" in group and group["pre_close"].notna().any()
    if has_pre_close:
        reference = group["pre_close"].where(group["pre_close"].notna(), previous)
    elif "adj_factor" in group and group["adj_factor"].notna().any():
        factor = group["adj_factor"].ffill()
        reference = previous * factor.shift(1) / factor
    elif announced.any():
        reference = previous.where(~announced, pd.Series(rules.ex_rights_reference(previous, cash, shares),
                                                         index=group.index))
    else:
        rate = rules.limit_rate(group["tic"].iloc[0], group["date"], group.get("is_st"))
        up, down = rules.limit_prices(previous.to_numpy(), rate)
        half_tick = rules.TICK / 2
        beyond = (group["close"].to_numpy() < down - half_tick) | (group["close"].to_numpy() > up + half_tick)
        if listing_day is not None:
            beyond &= ~listing_day
        detected = pd.Series(beyond & previous.notna().to_numpy(), index=group.index)
        reference = previous.where(~detected)
    reference = reference.copy()
    if not (has_pre_close and pd.notna(group["pre_close"].iloc[0])):
        reference.iloc[0] = np.nan  # a first bar without a provider pre_close has no previous close
    return reference, detected


def _market_references(bars: pd.DataFrame, reference: pd.Series, detected: pd.Series) -> pd.Series:
    """Reference prices of *detected* ex-rights days, net of the day's market move.

    The ex-day's reference is estimated as close / (1 + m), where m is the median close-to-close
    move (against their own references) of the other stocks that traded that day without an
    action: the holder's ex-day change is then the market's, and only the stock's own move
    relative to the market (its idiosyncratic part) remains as error. With fewer than
    `_MIN_MARKET_STOCKS` other stocks that day the ex-day's open stands in (the opening gap is
    then taken as the action).
    """
    move = (bars["close"] / reference - 1.0).where(~detected & reference.notna())
    by_date = move.groupby(bars["date"])
    market_move = by_date.median().where(by_date.count() >= _MIN_MARKET_STOCKS)
    m = bars["date"].map(market_move)
    estimate = (bars["close"] / (1.0 + m)).where(m.notna(), bars["open"])
    return reference.where(~detected, estimate)


def _listing_day(dates: pd.Series, list_date) -> np.ndarray:
    """Trading day number since listing (1 = listing day) of each bar of one ticker; NaN before.

    Counted on the stock's own bars when the data starts on or before the listing date, else
    estimated with weekdays since listing (holidays make it an over-count)."""
    list_date = pd.Timestamp(list_date)
    dates = pd.DatetimeIndex(dates)
    after = dates >= list_date
    if len(dates) and dates[0] <= list_date:
        day = np.cumsum(after).astype(float)
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


def _per_ticker_rows(bars: pd.DataFrame, listings=None) -> pd.DataFrame:
    """Add reference close, share ratio, cash dividend, limits and adjusted prices per ticker."""
    facts = _listing_facts(listings)

    def listing_rules(tic, group):
        if tic not in facts:
            return None
        list_date, issue_price = facts[tic]
        return rules.listing_limits(tic, group["date"], _listing_day(group["date"], list_date), list_date,
                                    issue_price)

    references, flags = [], []
    for tic, group in bars.groupby("tic", sort=True):
        group = group.sort_values("date")
        listing = listing_rules(tic, group)
        reference, detected = _reference_close(group, None if listing is None else ~np.isnan(listing[0]))
        references.append(reference)
        flags.append(detected)
    reference_all = pd.concat(references).reindex(bars.index)
    detected_all = pd.concat(flags).reindex(bars.index).astype(bool)
    reference_all = _market_references(bars, reference_all, detected_all)

    pieces = []
    for tic, group in bars.groupby("tic", sort=True):
        group = group.sort_values("date").copy()
        reference, detected = reference_all.loc[group.index], detected_all.loc[group.index]
        previous = group["close"].shift(1)
        total = previous / reference
        has_action = ((total - 1.0).abs() > _RATIO_TOLERANCE).fillna(False)
        split_ratio, split_dividend = rules.split_corporate_action(previous.to_numpy(), reference.to_numpy())
        cash, shares, announced = _explicit_actions(group)
        announced = announced & previous.notna()
        # A detected total is an estimate (it carries the stock's own move that day): its split into
        # shares and cash would be noise, so all of it is taken as shares.
        split_ratio = np.where(detected, total, split_ratio)
        split_dividend = np.where(detected, 0.0, split_dividend)
        ratio = np.where(announced, 1.0 + shares, np.where(has_action, split_ratio, 1.0))
        dividend = np.where(announced, cash, np.where(has_action, split_dividend, 0.0))
        group["ref_close"] = reference
        group["split_ratio"] = ratio
        group["dividend"] = dividend
        group["action_detected"] = detected
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
    return pd.concat(pieces, ignore_index=True)


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
    user_factors = feature_columns(bars)
    built_in = set(indicators) | {"return_1d"}
    clash = [c for c in user_factors if c in built_in]
    if clash:
        raise DataError(f"user factor(s) {', '.join(map(repr, clash))} have the name of a built-in feature: "
                        "rename them")
    rows = _per_ticker_rows(bars, listings)
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
    info = {
        "suspended_stock_days": int(suspended.sum()),
        "suspended_by_ticker": {t: int(n) for t, n in zip(tickers, suspended) if n},
        "corporate_actions": [
            {"tic": r.tic, "date": str(r.date.date()), "ratio": round(float(r.split_ratio), 6),
             "dividend": round(float(r.dividend), 4), "how": "detected" if r.action_detected else "provider"}
            for r in actions.itertuples()
        ],
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
        features=as_tensor(features), source=source, info=info,
    )
    full = everything.slice_days(first, len(dates)) if first else everything
    sliced = {name: everything.slice_days(a, b) for name, (a, b) in positions.items()}
    split_dates = {name: m.date_range() for name, m in sliced.items()}
    window_bars = bars[bars["date"] >= dates[first]].reset_index(drop=True) if first else bars
    return PreparedMarket(full=full, splits=sliced, bars=window_bars, benchmark=benchmark, split_dates=split_dates)
