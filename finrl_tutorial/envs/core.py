"""The trading simulator as pure functions of (account state, action, market arrays).

One step function serves every env: `StockTradingEnv` calls it on one account (``[S]``),
`VecStockTradingEnv` on a batch (``[N, S]``) and `VmapStockTradingEnv` through
``torch.func.vmap``. It is made of tensor ops only: no ``.item()``, no Python branch on a
tensor, no data-dependent shape, so a batched step can be captured in a CUDA graph.

Timing (no look-ahead): an observation describes the close of day ``t``. The action decided on
it fills at the open of day ``t+1`` (``execution="open"``, the default) or, like FinRL and
ElegantRL, at the close of day ``t`` (``execution="close"``). The reward is the change in
wealth from the close of ``t`` to the close of ``t+1``, net of fees, divided by the initial
cash and multiplied by ``reward_scale``.
"""
from __future__ import annotations

import warnings
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
import pandas as pd
import torch

from .. import rules
from ..data.market import MarketData
from .lots import Lots, TaxDays, receive_dividend, record_purchases, sell_first_in_first_out
from ..errors import (ConfigError, DataWarning, InputError, check_bool, check_choice, check_int, check_positive,
                      check_real, strict_fields)


@strict_fields
@dataclass
class EnvConfig:
    """Settings of the A-share trading simulator."""

    initial_cash: float = 1_000_000.0
    """Starting cash in yuan; every episode starts all in cash."""
    max_lots: int = 100
    """Largest trade per stock per day in the ``shares`` action mode, in lots of 100 shares."""
    action_mode: str = "weights"
    """``weights`` (default): the positive part of the action, normalised to sum ≤ 1, is the target
    portfolio weight of each stock (the rest stays in cash), whatever the prices. ``shares``:
    action ±1 trades up to ``max_lots`` lots per stock (FinRL-style; ±1 is then worth more in an
    expensive stock, so a near-uniform policy is weighted by price)."""
    episode_days: int | None = 250
    """Episode length in trading days (truncation); None runs to the end of the data."""
    random_start: bool = True
    """Start each episode on a random day of the data (per env); False starts on day 0."""
    execution: str = "open"
    """``open``: fill at the next day's open (default, no look-ahead). ``close``: fill at the
    decision day's close, as FinRL/ElegantRL do (for comparisons)."""
    reward_scale: float = 100.0
    """Reward = Δwealth / initial_cash × reward_scale (100 makes a 1 % day a reward of 1)."""
    ruin_fraction: float = 0.1
    """The episode *terminates* (ruin) when wealth falls below this fraction of initial cash."""
    fees: rules.FeeSchedule = field(default_factory=rules.FeeSchedule)
    """Commission, stamp duty and transfer fee; stamp duty and transfer fee follow the date and exchange."""
    slippage: float = 0.0005
    """Fill price moves this fraction against the trader (buys higher, sells lower, never beyond
    the day's limits): 5 bp, half a one-tick spread on a ¥10 stock, zipline's default."""
    impact: float = 0.0
    """Extra slippage ``impact × participation²`` (participation = order / the day's volume),
    zipline's ``VolumeShareSlippage`` form (it uses 0.1); 0 by default."""
    max_participation: float = 0.1
    """At most this share of the volume traded where the order fills, per stock and day (zipline's
    default 10 %); ``inf`` turns the cap off. At the open that volume is the opening auction's
    (the data's ``open_volume``, else ``open_auction_share`` × the day's volume); at the close,
    the day's."""
    open_auction_share: float = rules.OPEN_AUCTION_SHARE
    """Share of the day's volume taken to trade in the opening auction when the data lacks
    ``open_volume`` (`rules.OPEN_AUCTION_SHARE`, 1/48; 1.0 restores the whole day's volume)."""
    fill_on_tick: bool = False
    """Round each fill price to the 0.01 tick against the trader (buys up, sells down), as single
    orders are priced. Off by default: ``slippage`` is an average cost, and the average price of an
    order filled in parts lies between ticks; on, every trade with slippage pays at least one tick
    (6.9 bp on a ¥14.5 stock instead of 5 bp), which the README sizes."""
    dividend_tax: bool = False
    """Withhold the individual dividend tax, China's differentiated rates by holding period
    (`rules.DIVIDEND_TAX_REGIMES`: 财税〔2015〕101号 from 2015-09-08, 20 % / 10 % / 0 for lots held up
    to a month / a year / longer; 财税〔2012〕85号 from 2013-01-01, 20 / 10 / 5 %; flat rates withheld
    at payment before): at payment where the regime says so, the rest from the sale's cash, lot by
    lot, first in first out. Off: dividends are paid pre-tax (the env as before)."""
    tax_lots: int = 8
    """Purchase lots kept per stock for ``dividend_tax`` (older than a year they leave the ledger;
    when all are taken two adjacent lots merge, those that received the same dividends first,
    under the later date and the larger tax per share: it errs towards more tax, never less;
    `finrl_tutorial.envs.lots`). Each lot costs state and time: see the README for the cost."""

    def __post_init__(self):
        owner = "EnvConfig"
        check_real(owner, "initial_cash", self.initial_cash, low=0, low_open=True)
        check_int(owner, "max_lots", self.max_lots, minimum=1)
        check_choice(owner, "action_mode", self.action_mode, ("shares", "weights"))
        if self.episode_days is not None:
            check_int(owner, "episode_days", self.episode_days, minimum=1)
        check_bool(owner, "random_start", self.random_start)
        check_choice(owner, "execution", self.execution, ("open", "close"))
        check_real(owner, "reward_scale", self.reward_scale, low=0, low_open=True)
        check_real(owner, "ruin_fraction", self.ruin_fraction, low=0, high=1, high_open=True)
        _check_fees(f"{owner}.fees", self.fees)
        check_real(owner, "slippage", self.slippage, low=0, high=0.1, high_open=True)
        check_real(owner, "impact", self.impact, low=0)
        check_positive(owner, "max_participation", self.max_participation, allow_inf=True)  # inf: no cap
        check_real(owner, "open_auction_share", self.open_auction_share, low=0, high=1, low_open=True)
        check_bool(owner, "fill_on_tick", self.fill_on_tick)
        check_bool(owner, "dividend_tax", self.dividend_tax)
        check_int(owner, "tax_lots", self.tax_lots, minimum=1)

    @property
    def ledger_size(self) -> int:
        """Purchase lots per stock in the account's state (0 without the dividend tax)."""
        return self.tax_lots if self.dividend_tax else 0


def _check_fees(owner: str, fees) -> None:
    """Every rate a finite fraction in [0, 1), every schedule (date, rate) pairs with real dates."""
    if not isinstance(fees, rules.FeeSchedule):
        raise ConfigError(f"{owner} must be a FeeSchedule, got {type(fees).__name__}")
    for name in ("commission_rate", "min_commission", "transfer_fee_sh_per_share", "transfer_fee_sz_rate"):
        check_real(owner, name, getattr(fees, name), low=0, high=None if name == "min_commission" else 1,
                   high_open=name != "min_commission")
    for name in ("stamp_duty", "stamp_duty_buy", "transfer_fee"):
        schedule = getattr(fees, name)
        if isinstance(schedule, (str, bytes)) or not isinstance(schedule, Sequence) or not schedule:
            raise ConfigError(f"{owner}.{name} must be a non-empty list of (date, rate) pairs, got {schedule!r}")
        for step in schedule:
            if isinstance(step, (str, bytes)) or not isinstance(step, Sequence) or len(step) != 2:
                raise ConfigError(f"{owner}.{name} must be (date, rate) pairs, got {step!r}")
            try:
                pd.Timestamp(step[0])
            except (TypeError, ValueError, OverflowError):
                raise ConfigError(f"{owner}.{name}: {step[0]!r} is not a date (write YYYY-MM-DD)") from None
            check_real(owner, name, step[1], low=0, high=1, high_open=True)


def check_env_arguments(owner: str, market, config, dtype=None) -> "EnvConfig":
    """The arguments every env constructor takes, checked before anything is built: ``market``
    a `MarketData` with at least 2 days and one stock, with data (not on the meta device);
    ``config`` an `EnvConfig` or None (the defaults); ``dtype`` a floating torch dtype; and at
    least one stock whose smallest order the initial cash can pay. Returns the config."""
    if not isinstance(market, MarketData):
        hint = ": pass one split, e.g. prepared.train" if hasattr(market, "splits") and hasattr(market, "full") \
            else " (e.g. load_market().train)"
        raise InputError(f"{owner} needs a MarketData{hint}, got {type(market).__name__}")
    if config is None:
        config = EnvConfig()
    elif not isinstance(config, EnvConfig):
        raise ConfigError(f"{owner}: config must be an EnvConfig (or None for the defaults), "
                          f"got {type(config).__name__} {str(config)[:40]!r}")
    if dtype is not None and not (isinstance(dtype, torch.dtype) and dtype.is_floating_point):
        raise ConfigError(f"{owner}: dtype must be a floating torch dtype (torch.float32 or torch.float64), "
                          f"got {dtype!r}")
    if market.close.device.type == "meta":
        raise InputError(f"{owner}: the market is on the meta device (it holds no data): build it on cpu or cuda")
    if market.close.dim() != 2 or market.num_days < 2 or market.num_stocks < 1:
        raise InputError(f"{owner} needs a market of at least 2 trading days and 1 stock, "
                         f"got {tuple(market.close.shape)} (days, stocks)")
    _check_affordable(owner, market, config)
    return config


def _check_affordable(owner: str, market: MarketData, config: "EnvConfig") -> None:
    """The initial cash must pay for the smallest order of at least one stock: otherwise every
    episode holds cash only and every report is all zeros (which would read as a tie). Stocks
    whose smallest order never fits are named in a warning (they are never held)."""
    minimum = np.array([rules.lot_rule(t).minimum for t in market.tickers], dtype=float)
    cheapest = market.close.detach().to("cpu", torch.float64).amin(dim=0).numpy() * minimum
    never = cheapest > config.initial_cash
    if never.all():
        i = int(np.argmin(cheapest))
        raise ConfigError(f"{owner}: initial_cash ¥{config.initial_cash:,.2f} cannot pay for one order of any stock "
                          f"(the cheapest, {market.tickers[i]}, costs ¥{cheapest[i]:,.2f} for {minimum[i]:.0f} shares "
                          "at its lowest close): raise EnvConfig.initial_cash, or check the prices are yuan per share")
    if never.any():
        names = [t for t, n in zip(market.tickers, never) if n]
        warnings.warn(f"{owner}: initial_cash ¥{config.initial_cash:,.2f} never pays for one order of "
                      f"{', '.join(names[:5])}{' …' if len(names) > 5 else ''}: the agent cannot hold them",
                      DataWarning, stacklevel=3)


def check_action_tensor(action) -> None:
    """An action tensor must hold real numbers with data: a meta tensor has none, a complex one
    would lose its imaginary part without a word."""
    if isinstance(action, torch.Tensor):
        if action.device.type == "meta":
            raise InputError("the action is a meta tensor (it holds no data): give real numbers on cpu or cuda")
        if action.is_complex():
            raise InputError(f"the action is complex ({action.dtype}): give real numbers in [-1, 1]")
    elif np.iscomplexobj(action):
        raise InputError("the action is complex: give real numbers in [-1, 1]")


class Account(NamedTuple):
    """The state of one account (or a batch: leading dims on every field)."""

    cash: torch.Tensor        # [...] yuan
    holdings: torch.Tensor    # [..., S] shares
    wealth: torch.Tensor      # [...] cash + holdings at the close of `day`
    day: torch.Tensor         # [...] long: the observation is at the close of this day
    start_day: torch.Tensor   # [...] long: the episode's first day
    bought: torch.Tensor      # [..., S] shares bought at the last fill (T+1 lock)
    bought_day: torch.Tensor  # [...] long: the day of that fill
    lot_shares: torch.Tensor     # [..., S, K] purchase lots for the dividend tax (K = 0 without it;
    lot_month_end: torch.Tensor  # [..., S, K] long   see `finrl_tutorial.envs.lots`)
    lot_year_end: torch.Tensor   # [..., S, K] long
    lot_due_month: torch.Tensor  # [..., S, K]
    lot_due_year: torch.Tensor   # [..., S, K]

    @property
    def lots(self) -> Lots:
        return Lots(self.lot_shares, self.lot_month_end, self.lot_year_end, self.lot_due_month, self.lot_due_year)


class MarketArrays(NamedTuple):
    """The market tensors a step reads, plus per-day fee rates and per-stock lot rules (a plain
    tuple, vmap-friendly)."""

    open: torch.Tensor
    close: torch.Tensor
    pre_close: torch.Tensor
    split_ratio: torch.Tensor
    dividend: torch.Tensor
    volume: torch.Tensor
    up_limit: torch.Tensor
    down_limit: torch.Tensor
    tradable: torch.Tensor
    features: torch.Tensor
    stamp_buy: torch.Tensor           # [D, S]
    stamp_sell: torch.Tensor          # [D, S]
    transfer_value: torch.Tensor      # [D, S]
    transfer_per_share: torch.Tensor  # [D, S]
    lot_minimum: torch.Tensor         # [S]
    lot_step: torch.Tensor            # [S]
    fill_volume: torch.Tensor         # [D, S] volume where orders fill (the open's auction, or the day)
    buy_cap: torch.Tensor             # [D, S] most shares one account may buy that day (ST cap; inf)
    tax_days: TaxDays                 # [D] each: holding-period ends and dividend tax rates

    @classmethod
    def from_market(cls, market: MarketData, fees: rules.FeeSchedule,
                    config: "EnvConfig | None" = None) -> "MarketArrays":
        config = config or EnvConfig()
        if not market.close.is_floating_point():
            raise InputError(f"the env's dtype must be a floating-point torch dtype, got {market.close.dtype}")
        fee_rates = fees.day_rates(market.dates, market.tickers)
        as_float = lambda a: torch.as_tensor(a, dtype=market.close.dtype, device=market.device)  # noqa: E731
        lots = [rules.lot_rule(t) for t in market.tickers]
        if config.execution == "open":
            open_volume = market.open_volume.to(market.close.dtype)
            fill_volume = torch.where(open_volume < 0, market.volume * config.open_auction_share, open_volume)
        else:
            fill_volume = market.volume
        buy_cap = torch.where(market.is_st, torch.full_like(market.close, rules.ST_DAILY_BUY_CAP),
                              torch.full_like(market.close, float("inf")))
        dates = pd.DatetimeIndex(market.dates)
        ends = rules.holding_period_ends(dates)
        # an ex-day's record date (股权登记日) is the trading day before it
        rates = rules.dividend_tax_rates(dates[np.maximum(np.arange(len(dates)) - 1, 0)])
        as_long = lambda a: torch.as_tensor(a, dtype=torch.long, device=market.device)  # noqa: E731
        tax_days = TaxDays(as_long(ends["day"]), as_long(ends["month_end"]), as_long(ends["year_end"]),
                           as_float(rates["withheld"]), as_float(rates["due_within_month"]),
                           as_float(rates["due_within_year"]))
        return cls(market.open, market.close, market.pre_close, market.split_ratio, market.dividend,
                   market.volume, market.up_limit, market.down_limit, market.tradable, market.features,
                   as_float(fee_rates["stamp_buy"]), as_float(fee_rates["stamp_sell"]),
                   as_float(fee_rates["transfer_value"]), as_float(fee_rates["transfer_per_share"]),
                   as_float([lot.minimum for lot in lots]), as_float([lot.step for lot in lots]), fill_volume, buy_cap,
                   tax_days)

    @property
    def num_days(self) -> int:
        return int(self.close.shape[0])

    def rates_on(self, day) -> rules.DayRates:
        """The fee rates of trading day ``day`` (an index tensor of any leading shape)."""
        return rules.DayRates(self.stamp_buy[day], self.stamp_sell[day], self.transfer_value[day],
                              self.transfer_per_share[day])


OBSERVATION_BOUND = 10.0
"""Every observation entry lies in ±this: features are clipped to ±5, the cash share and the
weights lie in [0, 1] (the observation spaces of every env)."""


def observation_size(num_stocks: int, num_features: int) -> int:
    """Length of the flat observation: cash share, then per stock weight, features, tradable flag
    and limit state."""
    return 1 + num_stocks * (num_features + 3)


def initial_account(start_day: torch.Tensor, num_stocks: int, config: EnvConfig, dtype) -> Account:
    """All cash, no holdings, at ``start_day`` (any leading shape)."""
    cash = torch.full(start_day.shape, config.initial_cash, dtype=dtype, device=start_day.device)
    holdings = torch.zeros(start_day.shape + (num_stocks,), dtype=dtype, device=start_day.device)
    lots = torch.zeros(start_day.shape + (num_stocks, config.ledger_size), dtype=dtype, device=start_day.device)
    return Account(cash, holdings, cash.clone(), start_day.clone(), start_day.clone(), holdings.clone(),
                   torch.full_like(start_day, -1), lots, torch.zeros_like(lots, dtype=torch.long),
                   torch.zeros_like(lots, dtype=torch.long), lots.clone(), lots.clone())


def observe(account: Account, market: MarketArrays) -> torch.Tensor:
    """The observation at the close of ``account.day``: all finite, roughly unit scale.

    cash / wealth, then for each stock: its weight in the portfolio, its normalised features,
    1 if it traded that day, and +1/-1 if it closed at its up/down limit.
    """
    day = account.day
    close = market.close[day]
    wealth = account.wealth.clamp(min=1e-6)
    weights = account.holdings * close / wealth.unsqueeze(-1)
    at_limit = ((close >= market.up_limit[day] - rules.TICK / 2).to(close.dtype)
                - (close <= market.down_limit[day] + rules.TICK / 2).to(close.dtype))
    per_stock = torch.cat([weights.unsqueeze(-1), market.features[day],
                           market.tradable[day].to(close.dtype).unsqueeze(-1), at_limit.unsqueeze(-1)], dim=-1)
    return torch.cat([(account.cash / wealth).unsqueeze(-1), per_stock.flatten(-2)], dim=-1)


def wanted_shares(action, account: Account, price, config: EnvConfig):
    """Turn an action into a signed number of shares wanted per stock (before the rules)."""
    action = action.clamp(-1.0, 1.0)
    if config.action_mode == "shares":
        return action * (config.max_lots * rules.LOT_SIZE)
    target = action.clamp(min=0.0)
    target = target / target.sum(-1, keepdim=True).clamp(min=1.0)
    wealth_now = account.cash + (account.holdings * price).sum(-1)
    return (target * wealth_now.unsqueeze(-1) - account.holdings * price) / price


def step_account(account: Account, action: torch.Tensor, market: MarketArrays, config: EnvConfig):
    """Advance one trading day. Returns ``account, reward, terminated, truncated, fee, traded,
    dividend, dividend_tax`` (``dividend``: cash dividends received, pre-tax, yuan;
    ``dividend_tax``: the dividend tax withheld on the step, at payment or at a sale, with
    `EnvConfig.dividend_tax`, else 0).

    Order of events in ``execution="open"`` mode: the corporate action effective on day t+1
    (cash dividend paid, bonus shares added) adjusts the account, orders fill at t+1's open under
    t+1's limits, then the account is valued at t+1's close. In ``close`` mode orders fill at t's
    close under t's limits first. Fills pay slippage and are capped by the fill day's volume
    (`EnvConfig.slippage`, `EnvConfig.max_participation`).
    """
    next_day = account.day + 1
    cash, holdings = account.cash, account.holdings
    taxed = config.dividend_tax
    lots, tax_paid = account.lots, torch.zeros_like(cash)

    def corporate_action(cash, holdings, lots, tax_paid):
        dividend = market.dividend[next_day]
        paid = (holdings * dividend).sum(-1)
        cash, whole = rules.apply_corporate_action(cash, holdings, market.split_ratio[next_day],
                                                   market.pre_close[next_day], dividend)
        if taxed:
            lots, withheld = receive_dividend(lots, holdings, whole, dividend, paid, market.tax_days, next_day)
            cash, tax_paid = cash - withheld, tax_paid + withheld
        return cash, whole, lots, tax_paid, paid

    if config.execution == "open":
        cash, holdings, lots, tax_paid, dividend_paid = corporate_action(cash, holdings, lots, tax_paid)
        fill_day = next_day
        price = market.open[fill_day]
    else:
        fill_day = account.day
        price = market.close[fill_day]
    up_limit, down_limit = market.up_limit[fill_day], market.down_limit[fill_day]
    can_buy, can_sell = rules.tradable_sides(price, up_limit, down_limit, market.tradable[fill_day])
    moved = account._replace(cash=cash, holdings=holdings)
    sellable = rules.sellable_shares(holdings, account.bought, account.bought_day == fill_day)
    wanted = wanted_shares(action, moved, price, config)
    volume = market.fill_volume[fill_day]
    max_shares = rules.participation_cap(volume, config.max_participation)
    participation = torch.minimum(wanted.abs(), max_shares) / volume.clamp(min=1.0)
    buy_price, sell_price = rules.fill_prices(price, up_limit, down_limit, config.slippage, config.impact,
                                              participation, on_tick=config.fill_on_tick)
    sale = {}

    def tax_on_sale(sold):  # called by execute_orders between the sells and the buys
        sale["lots"], tax = sell_first_in_first_out(lots, holdings, sold, market.tax_days, fill_day)
        sale["tax"] = tax.sum(-1)
        return sale["tax"]

    cash, holdings, bought, fee, traded = rules.execute_orders(
        cash, holdings, sellable, wanted, price, can_buy, can_sell, config.fees, market.rates_on(fill_day),
        lot_minimum=market.lot_minimum, lot_step=market.lot_step, max_shares=max_shares,
        buy_price=buy_price, sell_price=sell_price, max_buy_shares=market.buy_cap[fill_day],
        sale_tax=tax_on_sale if taxed else None)
    if taxed:
        lots = record_purchases(sale["lots"], bought, market.tax_days, fill_day)
        tax_paid = tax_paid + sale["tax"]
    if config.execution == "close":
        cash, holdings, lots, tax_paid, dividend_paid = corporate_action(cash, holdings, lots, tax_paid)
    wealth = cash + (holdings * market.close[next_day]).sum(-1)
    reward = (wealth - account.wealth) * (config.reward_scale / config.initial_cash)
    terminated = wealth < config.ruin_fraction * config.initial_cash
    truncated = next_day >= market.num_days - 1
    if config.episode_days is not None:
        truncated = truncated | (next_day - account.start_day >= config.episode_days)
    truncated = truncated & ~terminated
    new_account = Account(cash, holdings, wealth, next_day, account.start_day, bought,
                          torch.full_like(account.bought_day, 0) + fill_day, *lots)
    return new_account, reward, terminated, truncated, fee, traded, dividend_paid, tax_paid


def reward_references(account: Account, market: MarketArrays, config: EnvConfig):
    """The parts of the coming step's reward that the day's prices set, whatever the action.

    Returns ``market_reward [...], overnight_reward [...], reward_per_weight [..., S]``:

    * ``market_reward``: the reward of ``initial_cash`` held in every stock in equal parts over the
      step, ``reward_scale × mean_i(close_{t+1,i} / pre_close_{t+1,i} − 1)`` (``pre_close`` is the
      last close adjusted for the day's corporate action): the same for every account on the same
      day, whatever any account holds or does.
    * ``overnight_reward``: what the account's holdings gain from the close of ``t`` to the open of
      ``t+1``, before any order fills (0 with ``execution="close"``, which fills at the close).
    * ``reward_per_weight``: what a unit of target weight in stock i earns from the fill to the next
      close with no fees, lots or limits, ``reward_scale × wealth_t / initial_cash × (close_{t+1,i}
      / fill price_i − 1)``; so the frictionless reward of target weights w is ``Σ_i w_i ×
      reward_per_weight_i``.

    So a step's reward is ``overnight_reward + Σ_i w_i × reward_per_weight_i`` less the fees,
    slippage and lot rounding of the fill. The learners use these parts to take out of the
    reward, before the policy gradient, what no choice of the action changes
    (`finrl_tutorial.agents.PPOConfig`'s ``market_baseline`` and ``pathwise``).
    """
    next_day = account.day + 1
    close, reference = market.close[next_day], market.pre_close[next_day]
    scale = config.reward_scale / config.initial_cash
    market_reward = (close / reference - 1).mean(-1) * config.reward_scale
    if config.execution == "open":
        fill = market.open[next_day]
        # the held shares after the day's bonus shares, from the adjusted last close to the open
        overnight = (account.holdings * market.split_ratio[next_day] * (fill - reference)).sum(-1) * scale
    else:
        fill, overnight = reference, torch.zeros_like(account.wealth)
    return market_reward, overnight, (close / fill - 1) * (account.wealth * scale).unsqueeze(-1)


def _int64(constant: int) -> int:
    """A 64-bit constant as the signed int64 torch stores (the bits are what matter)."""
    return constant - (1 << 64) if constant >= 1 << 63 else constant


def _shift_right(x: torch.Tensor, bits: int) -> torch.Tensor:
    """Logical (unsigned) right shift of int64 bits: torch's ``>>`` is arithmetic."""
    return (x >> bits) & ((1 << (64 - bits)) - 1)


SPLITMIX_GAMMA = _int64(0x9E3779B97F4A7C15)


def splitmix64(state: torch.Tensor) -> torch.Tensor:
    """SplitMix64's output function (Steele et al. 2014) on int64 tensors, wrapping like uint64.

    The batched env draws its random start days with it from a per-env counter, in plain tensor
    ops: unlike a ``torch.Generator`` this compiles with ``fullgraph=True`` and replays in a CUDA
    graph with no generator registration, and it gives the same numbers on every device.
    """
    z = (state ^ _shift_right(state, 30)) * _int64(0xBF58476D1CE4E5B9)
    z = (z ^ _shift_right(z, 27)) * _int64(0x94D049BB133111EB)
    return z ^ _shift_right(z, 31)


def counter_uniform(counter: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Advance a SplitMix64 counter; return ``(new_counter, uniform float64 in [0, 1))``."""
    counter = counter + SPLITMIX_GAMMA
    return counter, _shift_right(splitmix64(counter), 11).to(torch.float64) * (1.0 / (1 << 53))


def seed_counters(seed: int, num_envs: int, device) -> torch.Tensor:
    """Distinct, decorrelated per-env counters for a seed."""
    index = torch.arange(num_envs, dtype=torch.int64, device=device)
    return splitmix64(torch.full_like(index, _int64(seed % (1 << 64))) + index * SPLITMIX_GAMMA)


def start_day_range(num_days: int) -> tuple[int, int]:
    """Days ``[lo, hi)`` on which an episode may start in a market of ``num_days`` days
    (the last day has no next day to trade into)."""
    return 0, num_days - 1


def _window_key(index: int) -> int:
    return zlib.crc32(f"start-window-{index}".encode())


def shard_start_windows(num_days: int, num_shards: int,
                        window: tuple[int, int] | None = None) -> list[tuple[int, int]]:
    """The start-day window ``(lo, hi)`` of each shard (worker or rank) ``0 … num_shards-1``.

    The start days ``window`` (default: every start day of a ``num_days``-day market) are cut
    into ``num_shards`` contiguous windows of (almost) equal length, disjoint and together
    covering ``window``. Shard ``k`` gets the window whose index ranks ``k``-th by
    ``zlib.crc32`` — a fixed, platform-independent permutation, unlike ``hash()``.
    """
    lo, hi = window if window is not None else start_day_range(num_days)
    if num_shards < 1:
        raise InputError(f"num_shards must be >= 1, got {num_shards}")
    if hi - lo < num_shards:
        raise InputError(f"{hi - lo} episode start days cannot be split into {num_shards} disjoint windows: "
                         "use fewer workers/ranks or more training days")
    bounds = [lo + (hi - lo) * k // num_shards for k in range(num_shards + 1)]
    windows = [(bounds[k], bounds[k + 1]) for k in range(num_shards)]
    order = sorted(range(num_shards), key=lambda k: (_window_key(k), k))
    return [windows[k] for k in order]


def draw_start_days(uniform: torch.Tensor, num_days: int, config: EnvConfig,
                    window: tuple[int, int] | None = None) -> torch.Tensor:
    """Map uniform [0, 1) draws to episode start days in ``window`` = [lo, hi) (default: every
    day with a next day, [0, num_days - 1)); day 0 if starts are not random."""
    if not config.random_start:
        return torch.zeros(uniform.shape, dtype=torch.long, device=uniform.device)
    low, high = window if window is not None else start_day_range(num_days)
    return low + (uniform * (high - low)).long().clamp(max=high - low - 1)


def check_reset_options(options) -> None:
    """``reset(options=...)`` of every env takes ``start_day`` and nothing else."""
    unknown = sorted(set(options or {}) - {"start_day"})
    if unknown:
        raise InputError(f"unknown reset option(s) {unknown}: the only option is 'start_day'")


def start_days_option(value, count: int, num_days: int, device) -> torch.Tensor:
    """``options["start_day"]`` as ``count`` start days (one day for all, or one per env), checked
    on the host (reset only): integers on which an episode may start."""
    expected = "reset option start_day must be one integer day" + (f" or {count} (one per env)" if count > 1 else "")
    try:
        days = torch.as_tensor(value).to("cpu")
    except (TypeError, ValueError, RuntimeError):
        raise InputError(f"{expected}, got {value!r}") from None
    if days.is_floating_point() or days.is_complex() or days.dtype == torch.bool or days.dim() > 1 \
            or days.numel() not in (1, count):
        raise InputError(f"{expected}, got {value!r}")
    low, high = start_day_range(num_days)
    if not (low <= int(days.min()) and int(days.max()) < high):
        raise InputError(f"reset option start_day must lie in [{low}, {high - 1}] (the last day has no next day "
                         f"to trade into), got {days.tolist()}")
    return days.to(device=device, dtype=torch.long).expand(count).clone()
