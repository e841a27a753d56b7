"""`MarketData`: the dense [day, stock] arrays every env, trainer and backtest consumes."""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd
import torch

# Arrays indexed [day, stock] (features: [day, stock, feature]); everything else is metadata.
_ARRAY_FIELDS = ("open", "high", "low", "close", "volume", "pre_close", "split_ratio", "dividend",
                 "up_limit", "down_limit", "tradable", "open_volume", "is_st", "features")


def days_between(dates, start, end) -> np.ndarray:
    """Positions of the days with ``start <= date <= end`` on the calendar ``dates`` (inclusive)."""
    dates = pd.DatetimeIndex(dates)
    return np.flatnonzero((dates >= pd.Timestamp(start)) & (dates <= pd.Timestamp(end)))


@dataclass
class MarketData:
    """A cleaned market on a trading calendar, as tensors.

    Prices are *unadjusted* yuan, as traded. On a suspended day a stock's open/high/low/close
    all equal its last close (for valuation only) and ``tradable`` is False. A corporate action
    on day ``d`` shows as ``split_ratio[d] != 1`` (bonus/transfer shares: holdings carried into
    day ``d`` are multiplied by it) and/or ``dividend[d] > 0`` (cash paid per share held), with
    ``close[d-1] == split_ratio[d] × pre_close[d] + dividend[d]``: a buy-and-hold through an
    ex-rights day keeps its value instead of showing a fake loss, and ``pre_close[d]`` is the
    ex-rights reference price that the day's limits use.
    """

    dates: np.ndarray
    """Trading days, ``datetime64[D]``, ascending, length D."""
    tickers: list[str]
    """Stock codes, length S, in column order."""
    feature_names: list[str]
    """Names of the F features in ``features``."""
    open: torch.Tensor
    """[D, S] opening price (last close when suspended)."""
    high: torch.Tensor
    """[D, S] high."""
    low: torch.Tensor
    """[D, S] low."""
    close: torch.Tensor
    """[D, S] closing price (last close when suspended)."""
    pre_close: torch.Tensor
    """[D, S] reference previous close, ex-rights adjusted (the base of the day's price limits)."""
    split_ratio: torch.Tensor
    """[D, S] holdings multiplier (1 + bonus and transfer shares per share) of a corporate action
    effective on that day (1.0 otherwise)."""
    up_limit: torch.Tensor
    """[D, S] limit-up price (inf when the stock has no limit that day)."""
    down_limit: torch.Tensor
    """[D, S] limit-down price (0 when no limit)."""
    tradable: torch.Tensor
    """[D, S] bool: the stock traded that day (False on suspension or before listing)."""
    features: torch.Tensor
    """[D, S, F] normalised features, using data up to and including that day's close only."""
    volume: torch.Tensor | None = None
    """[D, S] shares traded that day (0 when suspended): the base of the participation cap.
    None (a market built by hand) means unknown: no cap."""
    dividend: torch.Tensor | None = None
    """[D, S] cash dividend per share (yuan, pre-tax) with ex-day on that day, paid to every
    share held into it (0.0 otherwise; the pay date is taken to be the ex-day). None: zeros."""
    open_volume: torch.Tensor | None = None
    """[D, S] shares traded in the opening call auction (-1: unknown, the env then takes a share
    of the day's volume, `EnvConfig.open_auction_share`). None: all unknown."""
    is_st: torch.Tensor | None = None
    """[D, S] bool: a risk-warning (ST, *ST) day, from the data's ``is_st`` (False without it)."""
    source: str = "unknown"
    """Where the bars came from (sample name, provider, or file path)."""
    info: dict = field(default_factory=dict)
    """Cleaning facts: suspended stock-days, detected corporate actions, normalisation stats."""

    def __post_init__(self):
        if self.volume is None:
            self.volume = torch.full_like(self.close, float("inf"))
        if self.dividend is None:
            self.dividend = torch.zeros_like(self.close)
        if self.open_volume is None:
            self.open_volume = torch.full_like(self.close, -1.0)
        if self.is_st is None:
            self.is_st = torch.zeros_like(self.close, dtype=torch.bool)

    @property
    def num_days(self) -> int:
        return int(self.close.shape[0])

    @property
    def num_stocks(self) -> int:
        return int(self.close.shape[1])

    @property
    def num_features(self) -> int:
        return int(self.features.shape[2])

    @property
    def device(self) -> torch.device:
        return self.close.device

    def to(self, device: str | torch.device | None = None, dtype: torch.dtype | None = None) -> "MarketData":
        """A copy with every array on ``device`` and floating arrays in ``dtype``."""
        moved = {}
        for name in _ARRAY_FIELDS:
            tensor = getattr(self, name)
            target_dtype = dtype if (dtype is not None and tensor.is_floating_point()) else tensor.dtype
            moved[name] = tensor.to(device=device, dtype=target_dtype)
        return replace(self, **moved)

    def slice_days(self, start: int, stop: int) -> "MarketData":
        """Days ``start:stop`` (positions on the calendar)."""
        if not 0 <= start < stop <= self.num_days:
            raise ValueError(f"day range {start}:{stop} outside 0:{self.num_days}")
        arrays = {name: getattr(self, name)[start:stop] for name in _ARRAY_FIELDS}
        return replace(self, dates=self.dates[start:stop], **arrays)

    def between(self, start, end) -> "MarketData":
        """Days with ``start <= date <= end`` (inclusive; dates as strings or timestamps)."""
        inside = days_between(self.dates, start, end)
        if len(inside) < 2:
            raise ValueError(f"fewer than 2 trading days between {start} and {end} "
                             f"(data covers {self.first_date} .. {self.last_date})")
        return self.slice_days(int(inside[0]), int(inside[-1]) + 1)

    def select_stocks(self, columns) -> "MarketData":
        """Only the stocks at positions ``columns`` (a shard of the universe)."""
        index = torch.as_tensor(list(columns), dtype=torch.long, device=self.device)
        arrays = {name: getattr(self, name).index_select(1, index) for name in _ARRAY_FIELDS}
        return replace(self, tickers=[self.tickers[i] for i in index.tolist()], **arrays)

    @property
    def first_date(self) -> str:
        return str(self.dates[0])

    @property
    def last_date(self) -> str:
        return str(self.dates[-1])

    def date_range(self) -> tuple[str, str]:
        return self.first_date, self.last_date

    def __repr__(self) -> str:  # the default dataclass repr would print whole tensors
        return (f"MarketData({self.num_days} days {self.first_date}..{self.last_date}, "
                f"{self.num_stocks} stocks, {self.num_features} features, "
                f"device={self.device}, dtype={self.close.dtype}, source={self.source!r})")


    def to_frame(self) -> pd.DataFrame:
        """Long table (one row per day and stock) of every array, for saving and inspection."""
        days, stocks = self.num_days, self.num_stocks
        frame = pd.DataFrame({
            "date": np.repeat(pd.DatetimeIndex(self.dates), stocks),
            "tic": np.tile(np.asarray(self.tickers, dtype=object), days),
        })
        for name in _ARRAY_FIELDS[:-1]:
            frame[name] = getattr(self, name).cpu().numpy().reshape(-1)
        features = self.features.cpu().numpy().reshape(days * stocks, -1)
        for i, name in enumerate(self.feature_names):
            frame[f"feature_{name}"] = features[:, i]
        return frame
