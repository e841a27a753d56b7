"""China A-share trading rules, in one place: every env and the data cleaning use this module.

Each function names the rule it enforces. Execution functions are written with ``...``
broadcasting over leading dimensions, so the same code runs for one account (``[S]`` stocks),
a batch of accounts (``[N, S]``) and under ``torch.func.vmap``; they use no host
synchronisation and no data-dependent shapes.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

LOT_SIZE = 100
"""Rule: buys are whole board lots of 100 shares; a sell may include an odd lot (sold at once)."""

TICK = 0.01
"""Prices are quoted in fen (0.01 yuan); price limits are rounded to the tick."""

CHINEXT_20PCT_FROM = pd.Timestamp("2020-08-24")
"""ChiNext (300xxx/301xxx) moved from ±10 % to ±20 % daily limits on this date."""


def board_of(ticker: str) -> str:
    """Board of a tushare-style code: 'main', 'chinext', 'star' or 'bse'."""
    code, _, exchange = ticker.partition(".")
    exchange = exchange.upper()
    if exchange == "SH" and code.startswith("688"):
        return "star"
    if exchange == "SZ" and code.startswith(("300", "301")):
        return "chinext"
    if exchange == "BJ" or code.startswith(("8", "4", "920")):
        return "bse"
    return "main"


def limit_rate(ticker: str, dates, is_st=None) -> np.ndarray:
    """Rule: daily price-limit fraction by board, date and ST status.

    Main board ±10 % (ST ±5 %); ChiNext ±10 % (ST ±5 %) before 2020-08-24 and ±20 % from it,
    ST included; STAR ±20 %; Beijing Stock Exchange ±30 %.
    """
    dates = pd.DatetimeIndex(dates)
    board = board_of(ticker)
    if board == "star":
        rate = np.full(len(dates), 0.20)
    elif board == "bse":
        rate = np.full(len(dates), 0.30)
    elif board == "chinext":
        rate = np.where(dates >= CHINEXT_20PCT_FROM, 0.20, 0.10)
    else:
        rate = np.full(len(dates), 0.10)
    if is_st is not None:
        st = np.asarray(is_st, dtype=float) > 0.5
        # ST stocks: ±5 % on the main board, and on ChiNext before its 2020 reform.
        st_five = st & ((board == "main") | ((board == "chinext") & (dates < CHINEXT_20PCT_FROM)))
        rate = np.where(st_five, 0.05, rate)
    return rate.astype(float)


def round_to_tick(price) -> np.ndarray:
    """Round half up to 0.01 yuan, as the exchanges round limit prices."""
    return np.floor(np.asarray(price, dtype=float) / TICK + 0.5 + 1e-9) * TICK


def limit_prices(reference_close, rate) -> tuple[np.ndarray, np.ndarray]:
    """Rule: limits = previous (ex-rights reference) close × (1 ± limit), rounded to 0.01."""
    reference_close = np.asarray(reference_close, dtype=float)
    up = round_to_tick(reference_close * (1.0 + rate))
    down = round_to_tick(reference_close * (1.0 - rate))
    return up, down


@dataclass(frozen=True)
class FeeSchedule:
    """Trading costs. Rates are fractions of traded value; schedules are (effective date, rate)."""

    commission_rate: float = 0.00025
    """Broker commission per order, both sides (0.025 %)."""
    min_commission: float = 5.0
    """Minimum commission per order in yuan."""
    stamp_duty: tuple = (("1900-01-01", 0.001), ("2023-08-28", 0.0005))
    """Stamp duty on sells only: 0.1 %, halved to 0.05 % from 2023-08-28."""
    transfer_fee: tuple = (("1900-01-01", 0.00002), ("2015-08-01", 0.00002), ("2022-04-29", 0.00001))
    """Transfer fee, both sides: 0.002 % from 2015-08-01, 0.001 % from 2022-04-29. (Before
    2015-08-01 Shanghai charged ¥0.6 per 1,000 shares; the 0.002 % rate stands in for it.)"""

    def rates_on(self, dates) -> tuple[np.ndarray, np.ndarray]:
        """Stamp duty and transfer-fee rates in force on each date (arrays like ``dates``)."""
        dates = pd.DatetimeIndex(dates)
        return _schedule(self.stamp_duty, dates), _schedule(self.transfer_fee, dates)


def _schedule(steps, dates: pd.DatetimeIndex) -> np.ndarray:
    starts = pd.DatetimeIndex([pd.Timestamp(d) for d, _ in steps])
    rates = np.array([r for _, r in steps], dtype=float)
    position = np.searchsorted(starts.values, dates.values, side="right") - 1
    if (position < 0).any():
        raise ValueError(f"fee schedule starts after {dates[position < 0][0].date()}")
    return rates[position]


# --- execution (torch, broadcast over leading dims) -------------------------------------------

def order_commission(value: torch.Tensor, quantity: torch.Tensor, rate: float, minimum: float) -> torch.Tensor:
    """Rule: commission = max(rate × value, minimum) for each order that trades (quantity > 0)."""
    return torch.where(quantity > 0, torch.clamp(value * rate, min=minimum), torch.zeros_like(value))


def tradable_sides(price, up_limit, down_limit, tradable):
    """Rule: a suspended stock cannot trade; at its up limit it cannot be bought, at its down
    limit it cannot be sold (the queue on the locked side does not fill)."""
    half_tick = TICK / 2
    can_buy = tradable & (price < up_limit - half_tick)
    can_sell = tradable & (price > down_limit + half_tick)
    return can_buy, can_sell


def sellable_shares(holdings, bought_shares, bought_on_fill_day):
    """Rule T+1: shares bought on a trading day can be sold from the next trading day on.

    ``bought_on_fill_day`` is True where the last buy happened on the day we now fill at."""
    return holdings - torch.where(bought_on_fill_day.unsqueeze(-1), bought_shares, torch.zeros_like(bought_shares))


def apply_corporate_action(cash, holdings, ratio, reference_price):
    """Holdings follow a corporate action: shares × ratio, whole shares kept and the fraction
    paid out in cash at the ex-rights reference price, so wealth is unchanged by the event."""
    scaled = holdings * ratio
    whole = torch.floor(scaled + 1e-6)
    cash = cash + ((scaled - whole).clamp(min=0) * reference_price).sum(-1)
    return cash, whole


def execute_orders(cash, holdings, sellable, wanted, price, can_buy, can_sell,
                   fees: FeeSchedule, stamp_rate, transfer_rate, cash_margin: float = 1e-5):
    """Fill one day's orders: sells first, then buys scaled down to fit cash, in lots.

    ``wanted`` is the signed number of shares asked for per stock: negative sells, positive
    buys. A sell of at least the sellable position sells all of it (odd lot included);
    otherwise whole lots. Buys are whole lots; if cash (after sells) cannot pay for
    all of them including fees, every buy is scaled by the same factor and rounded down to
    lots, which keeps cash ≥ 0 even with the ¥5 minimum commission. A sell worth less than its
    own fees is not placed. No short selling.

    Returns ``cash, holdings, bought_shares, fee_paid, traded_value``.
    """
    zero = torch.zeros_like(price)

    sell_wanted = torch.where(can_sell, (-wanted).clamp(min=0.0), zero)
    sell_lots = torch.floor(sell_wanted / LOT_SIZE) * LOT_SIZE
    sell_qty = torch.where(sell_wanted >= sellable, sellable, torch.minimum(sell_lots, sellable))
    sell_fee = (order_commission(sell_qty * price, sell_qty, fees.commission_rate, fees.min_commission)
                + sell_qty * price * (stamp_rate + transfer_rate).unsqueeze(-1))
    # A sell whose proceeds would not cover its fees (a tiny odd lot under the ¥5 minimum) is not
    # placed: it could only overdraw the account.
    sell_qty = torch.where(sell_qty * price > sell_fee, sell_qty, zero)
    sell_value = sell_qty * price
    sell_fee = torch.where(sell_qty > 0, sell_fee, zero)
    cash = cash + (sell_value - sell_fee).sum(-1)
    holdings = holdings - sell_qty

    buy_lots = torch.where(can_buy, torch.floor(wanted.clamp(min=0.0) / LOT_SIZE), zero)
    lot_cost = LOT_SIZE * price * (1.0 + fees.commission_rate + transfer_rate.unsqueeze(-1))
    # Cost of the buys ≤ Σ value × (1 + commission + transfer) + ¥5 × orders (commission is
    # max(rate × value, ¥5) ≤ rate × value + ¥5). Scaling shrinks the value part only, and never
    # adds orders, so this factor keeps cash ≥ 0.
    variable_cost = (buy_lots * lot_cost).sum(-1)
    fixed_cost = fees.min_commission * (buy_lots > 0).sum(-1)
    affordable = torch.where(variable_cost > 0,
                             (cash * (1.0 - cash_margin) - fixed_cost) / variable_cost.clamp(min=1e-9),
                             torch.ones_like(cash)).clamp(min=0.0, max=1.0)  # cash < fixed cost buys nothing
    buy_qty = torch.floor(buy_lots * affordable.unsqueeze(-1)) * LOT_SIZE
    buy_value = buy_qty * price
    buy_fee = (order_commission(buy_value, buy_qty, fees.commission_rate, fees.min_commission)
               + buy_value * transfer_rate.unsqueeze(-1))
    cash = cash - (buy_value + buy_fee).sum(-1)
    holdings = holdings + buy_qty

    fee_paid = (sell_fee + buy_fee).sum(-1)
    traded_value = (sell_value + buy_value).sum(-1)
    return cash, holdings, buy_qty, fee_paid, traded_value
