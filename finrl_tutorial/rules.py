"""China A-share trading rules, in one place: every env and the data cleaning use this module.

Each function names the rule it enforces. Execution functions are written with ``...``
broadcasting over leading dimensions, so the same code runs for one account (``[S]`` stocks),
a batch of accounts (``[N, S]``) and under ``torch.func.vmap``; they use no host
synchronisation and no data-dependent shapes.
"""
from __future__ import annotations

import functools
import re
import warnings
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import pandas as pd
import torch

from .errors import strict_fields

LOT_SIZE = 100
"""Rule: a board lot is 100 shares; the ``shares`` action mode counts its orders in these lots."""

TICK = 0.01
"""Prices are quoted in fen (0.01 yuan); price limits and fees are rounded to it."""

CHINEXT_20PCT_FROM = pd.Timestamp("2020-08-24")
"""ChiNext (300xxx/301xxx/302xxx) moved from ±10 % to ±20 % daily limits, and to the
registration system (new listings unlimited for five days), on this date (SZSE ChiNext trading
special rules, 2020)."""

MAIN_BOARD_REGISTRATION_FROM = pd.Timestamp("2023-04-10")
"""First main-board listings under the registration system (SSE/SZSE, 2023-04-10): from this
listing date on, a main-board IPO has no price limit for its first five trading days."""

MAIN_BOARD_ST_10PCT_FROM = pd.Timestamp("2026-07-06")
"""Main-board risk-warning (ST, *ST) stocks move from ±5 % to ±10 %, like other main-board stocks.

Proposed by the SSE and SZSE on 2025-06-27 (consultation draft 《关于调整主板风险警示股票价格涨跌幅
限制比例及有关事项的通知》, reported by Xinhua and China Securities Journal that day). In force
"starting July 6" per nashnova.com's report of the three exchanges' new rules; the year is
inferred (2026-07-06 is a Monday, 2025-07-06 a Sunday). The exchanges' final notice was not
found: check this date before relying on ST limits in 2025-2026 data. (The ±5 % rule dates from
1998-04-22.)"""

REGISTRATION_UNLIMITED_DAYS = 5
"""Registration-system IPOs (STAR from its 2019-07-22 launch, ChiNext listed from 2020-08-24,
main board listed from 2023-04-10) have no price limit on their first five trading days (SSE STAR
trading special rules 2019; SZSE ChiNext special rules 2020; SSE/SZSE main-board rules 2023)."""

FIRST_DAY_CAP = (0.44, 0.36)
"""Approval-system IPOs (main board listed before 2023-04-10, ChiNext before 2020-08-24), from
2014-01-01: on the first day the valid order price range is 64 %..144 % of the issue price
(SSE/SZSE rules on new-share first-day trading, 2013-12; 集合竞价 80 %..120 %, 连续竞价
64 %..144 %). Needs the issue price; without it the first day has no limit here."""

FIRST_DAY_CAP_FROM = pd.Timestamp("2014-01-01")

BSE_UNLIMITED_DAYS = 1
"""Beijing Stock Exchange (from 2021-11-15): a new listing has no price limit on its first day,
±30 % after (BSE trading rules, 2021)."""


@dataclass(frozen=True)
class LotRule:
    """Order sizes of a board: at least ``minimum`` shares per order, in steps of ``step``; a
    remainder below ``minimum`` can only be sold in one order."""

    minimum: float
    step: float


LOT_RULES = {
    "main": LotRule(100.0, 100.0),
    "chinext": LotRule(100.0, 100.0),
    "star": LotRule(200.0, 1.0),
    "bse": LotRule(100.0, 1.0),
}
"""Rule: order sizes by board.

- Main board and ChiNext: 100 shares or a multiple; a remainder under 100 is sold in one order
  (SSE/SZSE trading rules).
- STAR: at least 200 shares per order, then 1-share increments; a balance under 200 is sold in
  one order (SSE STAR trading special rules, 2019: 单笔申报数量应当不小于200股 ... 超过200股的部分，
  可以以1股为单位递增 ... 余额不足200股时，应当一次性申报卖出).
- Beijing Stock Exchange: at least 100 shares, then 1-share increments; a balance under 100 is
  sold in one order (BSE trading rules, 2021: 买卖申报的最低数量为100股，每笔申报可以1股为单位递增).
"""


_STOCK_PREFIXES = {
    "SH": (("600", "main"), ("601", "main"), ("603", "main"), ("605", "main"), ("688", "star"), ("689", "star")),
    "SZ": (("000", "main"), ("001", "main"), ("002", "main"), ("003", "main"), ("300", "chinext"),
           ("301", "chinext"), ("302", "chinext")),
    "BJ": (("43", "bse"), ("83", "bse"), ("87", "bse"), ("88", "bse"), ("920", "bse")),
}
"""A-share stock code ranges by exchange and their boards (SSE, SZSE and BSE code plans): Shanghai
600/601/603/605 main board, 688 STAR shares and 689 STAR depositary receipts (CDRs); Shenzhen
000/001/002/003 main board (002 was the SME board, merged into the main board in 2021 with the
same ±10 %), 300/301/302 ChiNext; Beijing 43x/83x/87x/88x (codes moved over from the NEEQ) and
920 (new codes from 2024)."""

_OTHER_SECURITIES = {
    "SH": (("900", "a Shanghai B-share (traded in US dollars)"), ("000", "a Shanghai index (e.g. 000300 CSI 300)"),
           ("5", "a Shanghai fund (ETF/LOF, e.g. 510300)"), ("1", "a Shanghai bond or convertible"),
           ("0", "a Shanghai bond or index code"), ("7", "a Shanghai subscription/placing code"),
           ("2", "a Shanghai repo code")),
    "SZ": (("200", "a Shenzhen B-share (traded in HK dollars)"), ("399", "a Shenzhen index"),
           ("15", "a Shenzhen fund (ETF)"), ("16", "a Shenzhen fund (LOF)"), ("18", "a Shenzhen fund"),
           ("1", "a Shenzhen bond or convertible"), ("08", "a Shenzhen placing code"),
           ("03", "a Shenzhen warrant code")),
}


def _code_and_exchange(ticker) -> tuple[str, str]:
    """Split ``600000.SH`` into ``("600000", "SH")``; a bare 6-digit code gets its exchange from its
    leading digits (6 Shanghai; 0/2/3 Shenzhen; 4/8/92 Beijing), as the exchanges assign them."""
    code, _, exchange = str(ticker).strip().upper().partition(".")
    if not exchange and re.fullmatch(r"\d{6}", code):
        exchange = ("BJ" if code.startswith(("92", "4", "8")) else "SH" if code.startswith(("6", "9", "5"))
                    else "SZ")
    return code, exchange


def not_an_a_share(ticker) -> str | None:
    """Why ``ticker`` is not an A-share stock the rules know (``None`` when it is one).

    B-shares (900xxx.SH, 200xxx.SZ), funds and ETFs (5xxxxx.SH, 15/16/18xxxx.SZ), indices
    (000xxx.SH, 399xxx.SZ), bonds, Hong Kong and foreign codes have other rules (currencies, T+0,
    no or other price limits, other lots) and are refused by name rather than read as main-board
    stocks."""
    code, exchange = _code_and_exchange(ticker)
    if exchange == "HK":
        return "a Hong Kong code (no daily price limit, board lots set per stock, T+0)"
    if not re.fullmatch(r"\d{6}", code):
        return "not a 6-digit exchange code (a US or other foreign ticker, or a name)"
    if exchange not in _STOCK_PREFIXES:
        return f"on an exchange the rules do not cover ({exchange!r}; expected SH, SZ or BJ)"
    if any(code.startswith(prefix) for prefix, _ in _STOCK_PREFIXES[exchange]):
        return None
    for prefix, kind in _OTHER_SECURITIES.get(exchange, ()):
        if code.startswith(prefix):
            return kind
    return f"outside every A-share stock code range of {exchange}"


def board_of(ticker: str) -> str:
    """Board of an A-share code, with or without its suffix: 'main', 'chinext', 'star' or 'bse'
    (`_STOCK_PREFIXES`; ``board_of("688001")`` is STAR). A code outside every stock range (see
    :func:`not_an_a_share`, which the data's entry check applies first) reads as main board."""
    code, exchange = _code_and_exchange(ticker)
    for prefix, board in _STOCK_PREFIXES.get(exchange, ()):
        if code.startswith(prefix):
            return board
    return "main"


def exchange_of(ticker: str) -> str:
    """'SH', 'SZ' or 'BJ' from the suffix (or, for a bare code, from its leading digits)."""
    code, exchange = _code_and_exchange(ticker)
    return exchange if exchange in ("SH", "SZ", "BJ") else "SZ"


CALENDAR_SOURCE = "exchange_calendars XSHG (Shanghai and Shenzhen share one holiday calendar)"
"""Trading days of the A-share exchanges: the maintained ``exchange_calendars`` package's XSHG
calendar (from 1991; its future years are its maintainers' announced holidays). Shenzhen
(XSHE) and Beijing close on the same days as Shanghai."""


@functools.lru_cache(maxsize=1)
def _xshg():
    import exchange_calendars  # a maintained holiday calendar, not a hand-written list

    with warnings.catch_warnings():  # the package's own pandas deprecation notices
        warnings.simplefilter("ignore")
        return exchange_calendars.get_calendar("XSHG", start="1991-01-02")


def exchange_sessions(start, end) -> pd.DatetimeIndex | None:
    """A-share trading days from ``start`` to ``end`` (inclusive), clipped to the span the
    calendar covers; None when the span lies wholly outside it."""
    calendar = _xshg()
    start = max(pd.Timestamp(start).normalize(), calendar.first_session.tz_localize(None))
    end = min(pd.Timestamp(end).normalize(), calendar.last_session.tz_localize(None))
    if start > end:
        return None
    return pd.DatetimeIndex(calendar.sessions_in_range(start, end)).tz_localize(None).normalize()


def covered_by_calendar(dates) -> np.ndarray:
    """True for each date inside the span the exchange calendar knows (see `exchange_sessions`)."""
    calendar = _xshg()
    dates = pd.DatetimeIndex(dates)
    return np.asarray((dates >= calendar.first_session.tz_localize(None))
                      & (dates <= calendar.last_session.tz_localize(None)))


def lot_rule(ticker: str) -> LotRule:
    """The order-size rule of a ticker's board (see `LOT_RULES`)."""
    return LOT_RULES[board_of(ticker)]


def limit_rate(ticker: str, dates, is_st=None) -> np.ndarray:
    """Rule: daily price-limit fraction by board, date and ST status.

    Main board ±10 % (ST ±5 % until `MAIN_BOARD_ST_10PCT_FROM`, ±10 % from it); ChiNext ±10 %
    (ST ±5 %) before 2020-08-24 and ±20 % from it, ST included; STAR ±20 %; Beijing Stock
    Exchange ±30 %. New listings: see :func:`listing_limits`.
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
        # ST stocks: ±5 % on the main board (until the 2026 change), and on ChiNext before its 2020 reform.
        st_five = st & (((board == "main") & (dates < MAIN_BOARD_ST_10PCT_FROM))
                        | ((board == "chinext") & (dates < CHINEXT_20PCT_FROM)))
        rate = np.where(st_five, 0.05, rate)
    return rate.astype(float)


def registration_listing(ticker: str, list_date) -> bool:
    """True when the stock listed under the registration system (no limit for five days)."""
    list_date = pd.Timestamp(list_date)
    board = board_of(ticker)
    return (board == "star" or (board == "chinext" and list_date >= CHINEXT_20PCT_FROM)
            or (board == "main" and list_date >= MAIN_BOARD_REGISTRATION_FROM))


def listing_limits(ticker: str, dates, day_of_listing, list_date, issue_price=None):
    """Rule: price limits of a new listing, or NaN where the ordinary daily limit applies.

    ``day_of_listing`` is the trading day number since listing (1 = the listing day) for each of
    ``dates``. Registration-system listings (see :func:`registration_listing`) have no limit on
    days 1..5; Beijing listings none on day 1; approval-system listings from 2014-01-01 are capped
    on day 1 at issue price × (1 + 44 %) and × (1 − 36 %) (`FIRST_DAY_CAP`), or unlimited when
    the issue price is unknown (and for listings before 2014, whose first-day rules are not
    modelled). Returns ``(up, down)``: ``inf``/``0`` for no limit, NaN for "ordinary limit".
    """
    dates = pd.DatetimeIndex(dates)
    day = np.asarray(day_of_listing, dtype=float)
    up = np.full(len(dates), np.nan)
    down = np.full(len(dates), np.nan)
    board = board_of(ticker)
    if board == "bse":
        unlimited = day <= BSE_UNLIMITED_DAYS
    elif registration_listing(ticker, list_date):
        unlimited = day <= REGISTRATION_UNLIMITED_DAYS
    else:
        first = day == 1
        known_price = issue_price is not None and bool(np.isfinite(issue_price))
        if known_price and pd.Timestamp(list_date) >= FIRST_DAY_CAP_FROM:
            up = np.where(first, round_to_tick(issue_price * (1 + FIRST_DAY_CAP[0])), up)
            down = np.where(first, round_to_tick(issue_price * (1 - FIRST_DAY_CAP[1])), down)
            unlimited = np.zeros(len(dates), dtype=bool)
        else:  # issue price unknown (or a listing before 2014): no limit on the first day
            unlimited = first
    up = np.where(unlimited, np.inf, up)
    down = np.where(unlimited, 0.0, down)
    return up, down


def round_to_tick(price) -> np.ndarray:
    """Round half up to 0.01 yuan, as the exchanges round limit prices."""
    return np.floor(np.asarray(price, dtype=float) / TICK + 0.5 + 1e-9) * TICK


def limit_prices(reference_close, rate) -> tuple[np.ndarray, np.ndarray]:
    """Rule: limits = previous (ex-rights reference) close × (1 ± limit), rounded to 0.01."""
    reference_close = np.asarray(reference_close, dtype=float)
    up = round_to_tick(reference_close * (1.0 + rate))
    down = round_to_tick(reference_close * (1.0 - rate))
    return up, down


# --- corporate actions (numpy, used by the cleaning) ---------------------------------------------

BONUS_STEP = 0.1
"""Bonus and transfer shares are announced per 10 shares held (每10股送/转 N 股); when only the
total adjustment is known, whole shares per 10 are taken as shares and the rest as cash."""


def ex_rights_reference(previous_close, cash_dividend, bonus_shares):
    """Rule: the ex-rights (除权除息) reference price = (previous close − cash dividend per share)
    / (1 + bonus and transfer shares per share), rounded to the fen (SSE/SZSE trading rules,
    除权(息)参考价格). Rights issues (配股) are not part of this formula here."""
    previous_close = np.asarray(previous_close, dtype=float)
    return round_to_tick((previous_close - np.asarray(cash_dividend, dtype=float))
                         / (1.0 + np.asarray(bonus_shares, dtype=float)))


def split_corporate_action(previous_close, reference):
    """Split a total adjustment (previous close / ex-rights reference, from a provider's
    ``pre_close`` or ``adj_factor``, or detected) into share multiplier and cash per share.

    Holders keep their wealth at the reference price: ``ratio × reference + dividend =
    previous close``. Shares: the largest whole number of shares per 10 (`BONUS_STEP`) that the
    total covers, allowing for the reference being rounded to the fen; cash: the rest. A plain
    cash dividend (total < 1.1) is all cash; 10送3派1 is ratio 1.3 and ¥0.10. A bonus ratio that is
    not a whole number per 10 (e.g. 10转4.5) is split 1.4 shares + cash; the wealth is right
    either way, and less than 0.1 / 1.1 of the holding's value lands on the wrong side (the
    cleaning warns and uses a provider's dividend table instead wherever there is one). A rights
    issue (配股) shows as cash: the holder is paid the theoretical value of the rights, as if every
    holder sold them at that value.
    Returns ``(ratio, dividend)`` arrays (1 and 0 where there is no action).
    """
    previous = np.asarray(previous_close, dtype=float)
    reference = np.asarray(reference, dtype=float)
    total = previous / reference
    slack = TICK * total / reference  # the reference is rounded to the fen (half a tick, with margin)
    shares = np.floor((total - 1.0 + slack) / BONUS_STEP + 1e-9) * BONUS_STEP
    shares = np.maximum(shares, 0.0)
    ratio = 1.0 + shares
    dividend = previous - ratio * reference
    # rounding can leave a hair below zero: then the whole adjustment is shares
    exact_shares = dividend < 0
    ratio = np.where(exact_shares, total, ratio)
    dividend = np.where(exact_shares, 0.0, dividend)
    return ratio, dividend


@strict_fields
@dataclass(frozen=True)
class FeeSchedule:
    """Trading costs. Rates are fractions of traded value; schedules are (effective date, rate).

    Every fee is rounded to the fen (0.01 yuan) per order, half up, as brokers and ChinaClear
    bill them.
    """

    commission_rate: float = 0.00025
    """Broker commission per order, both sides (0.025 %; negotiable, capped at 0.3 % by the
    exchanges)."""
    min_commission: float = 5.0
    """Minimum commission per order in yuan."""
    stamp_duty: tuple = (("1900-01-01", 0.002), ("2005-01-24", 0.001), ("2007-05-30", 0.003),
                         ("2008-04-24", 0.001), ("2023-08-28", 0.0005))
    """Stamp duty on the *seller*: 0.1 % from 2005-01-24 (MoF/SAT, Xinhua 2005-01-24: cut from
    0.2 %), 0.3 % from 2007-05-30 (MoF/SAT circular of 2007-05-30; China Daily 2007-05-30), 0.1 %
    from 2008-04-24 (cut by two thirds "last April", China Briefing 2008-09-19), 0.05 % from
    2023-08-28 (MoF/SAT announcement 2023 No. 39). Before 2005-01-24 the 0.2 % the
    2005 cut started from stands in for every earlier date (earlier rates are not modelled)."""
    stamp_duty_buy: tuple = (("1900-01-01", 0.002), ("2005-01-24", 0.001), ("2007-05-30", 0.003),
                             ("2008-04-24", 0.001), ("2008-09-19", 0.0))
    """Stamp duty on the *buyer*: both sides paid the same rate until 2008-09-18; from
    2008-09-19 only the seller pays (财税明电〔2008〕2号)."""
    transfer_fee: tuple = (("2015-08-01", 0.00002), ("2022-04-29", 0.00001))
    """Transfer fee (过户费, ChinaClear), both sides, fraction of value, every exchange: 0.002 %
    from 2015-08-01, 0.001 % from 2022-04-29. Before 2015-08-01 see the two fields below."""
    transfer_fee_sh_per_share: float = 0.0003
    """Shanghai before 2015-08-01: 0.3 ‰ of the par value (¥1) traded, both sides, i.e. ¥0.0003 per
    share (ChinaClear notice of 2015-07, which replaced it by 0.02 ‰ of value). Earlier, higher
    Shanghai rates (1 ‰ of par with a ¥1 minimum in older guides) are not modelled."""
    transfer_fee_sz_rate: float = 0.0000255
    """Shenzhen before 2015-08-01: 0.0255 ‰ of value, both sides (the same ChinaClear notice)."""

    def rates_on(self, dates) -> tuple[np.ndarray, np.ndarray]:
        """Sell-side stamp duty and the value-based transfer-fee rate in force on each date, for a
        Shenzhen/Beijing stock (arrays like ``dates``); see :meth:`day_rates` for every rate."""
        dates = pd.DatetimeIndex(dates)
        rates = self.day_rates(dates, ["000001.SZ"])
        return rates["stamp_sell"][:, 0], rates["transfer_value"][:, 0]

    def day_rates(self, dates, tickers) -> dict[str, np.ndarray]:
        """Every date- and exchange-dependent rate, as ``[D, S]`` arrays: ``stamp_buy``,
        ``stamp_sell``, ``transfer_value`` (fraction of value) and ``transfer_per_share`` (yuan)."""
        dates = pd.DatetimeIndex(dates)
        exchanges = np.array([exchange_of(t) for t in tickers])
        before = (dates < pd.Timestamp(self.transfer_fee[0][0]))[:, None]
        unified = _schedule((("1900-01-01", 0.0),) + tuple(self.transfer_fee), dates)[:, None]
        shape = (len(dates), len(exchanges))
        transfer_value = np.where(before, np.where(exchanges == "SZ", self.transfer_fee_sz_rate, 0.0), unified)
        transfer_per_share = np.where(before & (exchanges == "SH"), self.transfer_fee_sh_per_share, 0.0)
        return {
            "stamp_buy": np.broadcast_to(_schedule(self.stamp_duty_buy, dates)[:, None], shape).copy(),
            "stamp_sell": np.broadcast_to(_schedule(self.stamp_duty, dates)[:, None], shape).copy(),
            "transfer_value": np.broadcast_to(transfer_value, shape).astype(float),
            "transfer_per_share": np.broadcast_to(transfer_per_share, shape).astype(float),
        }


def _schedule(steps, dates: pd.DatetimeIndex) -> np.ndarray:
    starts = pd.DatetimeIndex([pd.Timestamp(d) for d, _ in steps])
    rates = np.array([r for _, r in steps], dtype=float)
    position = np.searchsorted(starts.values, dates.values, side="right") - 1
    if (position < 0).any():
        raise ValueError(f"fee schedule starts after {dates[position < 0][0].date()}")
    return rates[position]


# --- execution (torch, broadcast over leading dims) -------------------------------------------

class DayRates(NamedTuple):
    """The fee rates of one fill day, per stock (each broadcasts against ``[..., S]``)."""

    stamp_buy: torch.Tensor
    stamp_sell: torch.Tensor
    transfer_value: torch.Tensor
    transfer_per_share: torch.Tensor


FEE_ROUNDING_SLACK = 3 * TICK / 2
"""Rounding three fees (commission, stamp duty, transfer fee) half up adds at most this per order."""


def round_fee(amount: torch.Tensor) -> torch.Tensor:
    """Rule: a fee is billed in fen, rounded half up (the 1e-7 guards 0.5 against binary error)."""
    return torch.floor(amount / TICK + 0.5 + 1e-7) * TICK


def order_commission(value: torch.Tensor, quantity: torch.Tensor, rate: float, minimum: float) -> torch.Tensor:
    """Rule: commission = max(rate × value, minimum) for each order that trades (quantity > 0)."""
    return torch.where(quantity > 0, torch.clamp(value * rate, min=minimum), torch.zeros_like(value))


def order_fees(value, quantity, fees: FeeSchedule, stamp_rate, rates: DayRates) -> torch.Tensor:
    """Rule: commission + stamp duty + transfer fee of each order, each rounded to the fen.

    ``stamp_rate`` is the side's stamp duty (``rates.stamp_buy`` or ``rates.stamp_sell``)."""
    commission = round_fee(order_commission(value, quantity, fees.commission_rate, fees.min_commission))
    stamp = round_fee(value * stamp_rate)
    transfer = round_fee(value * rates.transfer_value + quantity * rates.transfer_per_share)
    return torch.where(quantity > 0, commission + stamp + transfer, torch.zeros_like(value))


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


def participation_cap(volume, max_participation: float):
    """Costs of size: at most ``max_participation`` × the fill day's traded volume (shares) per
    stock and day, as zipline's default equity model caps fills at 10 % of a bar's volume
    (``FixedBasisPointsSlippage(basis_points=5, volume_limit=0.1)``). The day's volume is known
    only after the close: the cap is a property of the fill, not something the policy sees."""
    return torch.floor(volume * max_participation)


def tick_up(price):
    """The price rounded up to the next 0.01 tick (a buyer's fill, against the trader)."""
    return torch.ceil(price / TICK - 1e-6) * TICK


def tick_down(price):
    """The price rounded down to the 0.01 tick (a seller's fill, against the trader)."""
    return torch.floor(price / TICK + 1e-6) * TICK


OPEN_AUCTION_SHARE = 1.0 / 48.0
"""Share of a day's volume assumed to trade in the opening call auction (9:15-9:25) when the data
does not give the open's own volume: one 5-minute slice of the 240-minute session (SSE/SZSE
trading rules: continuous trading 9:30-11:30 and 13:00-15:00), i.e. 2.1 %. An assumption, not a
measurement: daily bars do not carry the auction's volume, and the real share varies by stock
and day; give an ``open_volume`` column (from minute or auction data) to use the real one."""

ST_DAILY_BUY_CAP = 500_000.0
"""Rule: an investor may buy at most 500,000 shares of one risk-warning (ST, *ST) stock per day,
auction and block trades together (SSE 风险警示板 rules, 2012-2013; SZSE the same:
投资者当日通过竞价交易和大宗交易累计买入的单只风险警示股票，数量不得超过50万股)."""


def fill_prices(price, up_limit, down_limit, slippage: float, impact: float = 0.0, participation=0.0,
                on_tick: bool = True):
    """Slippage: buys fill at price × (1 + s), sells at price × (1 − s), on the 0.01 tick (buys
    rounded up, sells down: orders are priced in fen, SSE/SZSE trading rules 申报价格最小变动单位
    0.01元) and never beyond the day's limits, with ``s = slippage + impact × participation²``
    (participation = order / volume; the quadratic term is zipline's ``VolumeShareSlippage``;
    default ``impact`` 0). The fixed part stands for half the bid-ask spread: a one-tick spread on
    a ¥10 stock is 10 bp, half is 5 bp, zipline's default; the tick rounding makes it at least one
    tick on any price with ``s > 0``. ``on_tick=False`` keeps the unrounded average price (an
    order filled in parts averages several ticks; `EnvConfig.fill_on_tick` chooses, off by default).
    Returns ``(buy_price, sell_price)``."""
    s = price * 0.0 + (slippage + impact * participation * participation)  # a tensor like price
    buy, sell = price * (1.0 + s), price * (1.0 - s)
    if on_tick:
        buy, sell = torch.where(s > 0, tick_up(buy), price), torch.where(s > 0, tick_down(sell), price)
    return torch.minimum(buy, up_limit), torch.maximum(sell, down_limit)


class DividendTaxRegime(NamedTuple):
    """The individual dividend tax on A-shares for dividends whose record date (股权登记日) is
    on or after ``start``: the total rate by holding period at the sale (``within_month``: held
    one month or less; ``within_year``: over a month, at most a year; ``beyond``: over a year),
    and the part ``withheld`` when the dividend is paid (the rest is withheld at the sale)."""

    start: str
    within_month: float
    within_year: float
    beyond: float
    withheld: float
    source: str


DIVIDEND_TAX_REGIMES = (
    DividendTaxRegime("1994-01-01", 0.20, 0.20, 0.20, 0.20,
                      "个人所得税法 (1994): dividends taxed at 20 %, withheld at payment"),
    DividendTaxRegime("2005-06-13", 0.10, 0.10, 0.10, 0.10,
                      "财税〔2005〕102号 (MoF/SAT 2005-06-13): half the dividend taxable, 10 % withheld at payment"),
    DividendTaxRegime("2013-01-01", 0.20, 0.10, 0.05, 0.05,
                      "财税〔2012〕85号 (MoF/SAT/CSRC 2012-11-16): 100 % / 50 % / 25 % of the dividend taxable at 20 %; "
                      "5 % withheld at payment, the rest at the sale by the holding period"),
    DividendTaxRegime("2015-09-08", 0.20, 0.10, 0.00, 0.00,
                      "财税〔2015〕101号 (MoF/SAT/CSRC 2015-09-07): exempt beyond a year; nothing withheld at "
                      "payment, 20 % / 10 % withheld at the sale"),
)
"""Rule: the differentiated individual dividend tax by record date, withheld first-in first-out
(the shares bought first are sold first) at each lot's holding period. The holding period runs
from the buy date to the day before the sale (持股期限: 取得之日至转让交割该股票之日前一日, 财税〔2012〕85号)
in calendar months and years: bought 2017-01-08, sold 2017-02-08 is one month (20 %), sold
later is over a month; bought 2017-01-31, sold 2017-02-28 is one month (China Securities
Depository and Clearing's answer, SSE and SZSE alike: 持股一个月是指从上月某日至本月同日的前一日连续持股;
quoted at jisilu.cn/question/510141). Not modelled: the tax on bonus shares (at their ¥1 par)."""


def dividend_tax_rates(record_dates) -> dict[str, np.ndarray]:
    """Per record date: the rate ``withheld`` at payment and the rates still ``due_within_month``
    / ``due_within_year`` at a sale that far from the lot's purchase (`DIVIDEND_TAX_REGIMES`;
    beyond a year nothing more is due)."""
    record_dates = pd.DatetimeIndex(record_dates)
    index = np.searchsorted(pd.DatetimeIndex([r.start for r in DIVIDEND_TAX_REGIMES]).values,
                            record_dates.values, side="right") - 1
    table = np.array([(r.withheld, r.within_month - r.withheld, r.within_year - r.withheld)
                      for r in DIVIDEND_TAX_REGIMES])[np.clip(index, 0, None)]
    return {"withheld": table[:, 0], "due_within_month": table[:, 1], "due_within_year": table[:, 2]}


def holding_period_ends(dates) -> dict[str, np.ndarray]:
    """For lots bought on ``dates``: the last sale date (as a day number, `numpy` days since
    1970-01-01) that still counts as held one month or less, and one year or less (calendar
    months, month ends clamped: bought 01-31, a month ends 02-28), with each date's own day number."""
    dates = pd.DatetimeIndex(dates).normalize()
    day_number = lambda d: d.values.astype("datetime64[D]").astype(np.int64)  # noqa: E731
    return {"day": day_number(dates), "month_end": day_number(dates + pd.DateOffset(months=1)),
            "year_end": day_number(dates + pd.DateOffset(years=1))}


def apply_corporate_action(cash, holdings, ratio, reference_price, dividend=None):
    """Holdings follow a corporate action on its ex-day: each share held pays ``dividend`` yuan in
    cash (pre-tax; the pay date is taken to be the ex-day), then shares × ``ratio`` (bonus and
    transfer shares), whole shares kept and the fraction paid out in cash at the ex-rights
    reference price. Wealth is unchanged at the reference: ``ratio × reference + dividend`` is
    the previous close.

    The individual dividend tax, which depends on each lot's holding period and is mostly
    settled when the shares are sold, is `DIVIDEND_TAX_REGIMES` (`EnvConfig.dividend_tax`; the
    env's per-lot ledger is `finrl_tutorial.envs.lots`): this function pays the pre-tax amount.
    """
    if dividend is not None:
        cash = cash + (holdings * dividend).sum(-1)
    scaled = holdings * ratio
    whole = torch.floor(scaled + 1e-6)
    cash = cash + ((scaled - whole).clamp(min=0) * reference_price).sum(-1)
    return cash, whole


def execute_orders(cash, holdings, sellable, wanted, price, can_buy, can_sell,
                   fees: FeeSchedule, rates: DayRates, *, lot_minimum=LOT_SIZE, lot_step=LOT_SIZE,
                   max_shares=None, buy_price=None, sell_price=None, cash_margin: float = 1e-5,
                   max_buy_shares=None, sale_tax=None):
    """Fill one day's orders: sells first, then buys scaled down to fit cash, in board lots.

    ``wanted`` is the signed number of shares asked for per stock: negative sells, positive
    buys. Lots (`LOT_RULES`, per stock ``lot_minimum``/``lot_step``): an order is at least
    ``lot_minimum`` shares in steps of ``lot_step``; a sell of at least the sellable position
    sells all of it, and an odd remainder (under one step) sells on its own or with whole lots
    when the order covers it (hold 150, sell 50: 50 sell). ``max_shares`` caps each stock's fill (the
    volume-participation cap) and ``max_buy_shares`` each buy (the ST daily buy cap). Buys fill at ``buy_price`` and sells at ``sell_price`` (slippage;
    default ``price``). If cash (after sells) cannot pay for all buys including fees, every buy
    is scaled by the same factor and rounded down to its lot rule, which keeps cash ≥ 0 even
    with the ¥5 minimum commission and fees rounded to the fen. A sell worth less than its own
    fees is not placed. No short selling. ``sale_tax`` (a function of the shares sold per stock,
    returning yuan per account) is withheld from the sales' cash before the buys are sized: the
    dividend tax of `DIVIDEND_TAX_REGIMES`.

    Returns ``cash, holdings, bought_shares, fee_paid, traded_value``.
    """
    zero = torch.zeros_like(price)
    buy_price = price if buy_price is None else buy_price
    sell_price = price if sell_price is None else sell_price
    cap = torch.full_like(price, float("inf")) if max_shares is None else max_shares

    sell_wanted = torch.where(can_sell, (-wanted).clamp(min=0.0), zero)
    # The odd remainder (the part of the position under one lot, e.g. 50 of 150 shares on the
    # main board) may be sold on its own or with whole lots, never split (余额不足1手部分一次性卖出).
    odd = sellable - torch.floor(sellable / lot_step + 1e-9) * lot_step
    limit = torch.minimum(sell_wanted, cap)
    sell_steps = torch.floor(torch.minimum(limit, sellable - odd) / lot_step + 1e-9) * lot_step
    sell_steps = torch.where(sell_steps >= lot_minimum, sell_steps, zero)
    with_odd = torch.where((odd > 0) & (sell_steps + odd <= limit), sell_steps + odd, sell_steps)
    sell_qty = torch.where((sell_wanted >= sellable) & (sellable <= cap), sellable, with_odd)
    sell_value = sell_qty * sell_price
    sell_fee = order_fees(sell_value, sell_qty, fees, rates.stamp_sell, rates)
    # A sell whose proceeds would not cover its fees (a tiny odd lot under the ¥5 minimum) is not
    # placed: it could only overdraw the account.
    sell_qty = torch.where(sell_value > sell_fee, sell_qty, zero)
    sell_value = sell_qty * sell_price
    sell_fee = torch.where(sell_qty > 0, sell_fee, zero)
    cash = cash + (sell_value - sell_fee).sum(-1)
    if sale_tax is not None:
        cash = cash - sale_tax(sell_qty)
    holdings = holdings - sell_qty

    buy_wanted = torch.where(can_buy, wanted.clamp(min=0.0), zero)
    buy_cap = cap if max_buy_shares is None else torch.minimum(cap, max_buy_shares)
    buy_units = torch.floor(torch.minimum(buy_wanted, buy_cap) / lot_step)
    buy_units = torch.where(buy_units * lot_step >= lot_minimum, buy_units, zero)
    unit_cost = lot_step * (buy_price * (1.0 + fees.commission_rate + rates.stamp_buy + rates.transfer_value)
                            + rates.transfer_per_share)
    # Cost of the buys ≤ Σ value × (1 + commission + stamp + transfer) + (¥5 + rounding) × orders
    # (commission is max(rate × value, ¥5) ≤ rate × value + ¥5). Scaling shrinks the value part
    # only, and never adds orders, so this factor keeps cash ≥ 0.
    variable_cost = (buy_units * unit_cost).sum(-1)
    fixed_cost = (fees.min_commission + FEE_ROUNDING_SLACK) * (buy_units > 0).sum(-1)
    affordable = torch.where(variable_cost > 0,
                             (cash * (1.0 - cash_margin) - fixed_cost) / variable_cost.clamp(min=1e-9),
                             torch.ones_like(cash)).clamp(min=0.0, max=1.0)  # cash < fixed cost buys nothing
    buy_qty = torch.floor(buy_units * affordable.unsqueeze(-1)) * lot_step
    buy_qty = torch.where(buy_qty >= lot_minimum, buy_qty, zero)
    buy_value = buy_qty * buy_price
    buy_fee = order_fees(buy_value, buy_qty, fees, rates.stamp_buy, rates)
    cash = cash - (buy_value + buy_fee).sum(-1)
    holdings = holdings + buy_qty

    fee_paid = (sell_fee + buy_fee).sum(-1)
    traded_value = (sell_value + buy_value).sum(-1)
    return cash, holdings, buy_qty, fee_paid, traded_value
