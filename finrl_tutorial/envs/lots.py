"""The purchase-lot ledger behind the individual dividend tax (`EnvConfig.dividend_tax`).

China withholds most of the dividend tax when shares are sold, at the rate of each lot's
holding period, first in first out (`rules.DIVIDEND_TAX_REGIMES`). So each account keeps, per
stock, up to ``K`` lots (`EnvConfig.tax_lots`) in purchase order: shares, the last days (day
numbers) on which a sale still counts as held one month or less and one year or less, and the
tax per share that would still be due if the lot were sold by then (dividends it received × the
rates of their record dates).

Static shapes: ``[..., S, K]`` always, so the batched, vmap and CUDA-graph steps keep working.
Shares not in the ledger (holdings minus the lots' sum) are the oldest and owe nothing: a lot
leaves the ledger once it is over a year old (nothing more can be due on it). When all ``K``
slots are taken and a new lot arrives, two adjacent lots merge: the pair closest in buy date
among pairs that received the same dividends (bought between the same ex-days), else the
closest pair; the merged lot takes the *later* date and the larger tax per share of the two.
Its shares then look younger (a higher bracket, never a lower one) and, for a pair with unlike
dividends, as if all had the larger dividend: the ledger errs towards too much tax, never too
little (`tests/test_dividend_tax.py` checks it against a plain-Python ledger with room for
every lot; the README gives the size for a daily rebalancer).
"""
from __future__ import annotations

from typing import NamedTuple

import torch

EMPTY = 1e-6
"""A lot with fewer shares than this is an empty slot (bonus shares make lots fractional)."""

UNLIKE_PENALTY = 1 << 40
"""Added to the date gap of two lots that received different dividends: they merge last."""


class TaxDays(NamedTuple):
    """Per market day ``[D]``: its day number, the last day number a lot bought on it is held
    one month or less / one year or less (`rules.holding_period_ends`), and the dividend tax
    rates of a record date the day before it (`rules.dividend_tax_rates`)."""

    day: torch.Tensor
    month_end: torch.Tensor
    year_end: torch.Tensor
    withheld: torch.Tensor
    due_within_month: torch.Tensor
    due_within_year: torch.Tensor


class Lots(NamedTuple):
    shares: torch.Tensor     # [..., S, K]
    month_end: torch.Tensor  # [..., S, K] long: last day number of a sale within a month of the purchase
    year_end: torch.Tensor   # [..., S, K] long: ... within a year (the lot leaves the ledger after it)
    due_month: torch.Tensor  # [..., S, K] tax per share due on a sale by month_end
    due_year: torch.Tensor   # [..., S, K] ... by year_end


def _per_lot(x):
    """A per-account value (``[...]``) against per-lot tensors (``[..., S, K]``)."""
    return x.unsqueeze(-1).unsqueeze(-1)


def receive_dividend(lots: Lots, holdings, whole, dividend, paid, days: TaxDays, ex_day):
    """A corporate action on ``ex_day``: each lot accrues the tax its dividend may owe at a sale,
    then follows the bonus shares (``holdings`` → ``whole``; the lot's shares scale, its tax per
    share shrinks, so its total is kept). ``paid``: the dividend paid on every share held (yuan,
    per account). Returns ``lots, withheld`` (the tax withheld at payment, yuan)."""
    withheld = paid * days.withheld[ex_day]
    per_share = dividend.unsqueeze(-1)
    due_month = lots.due_month + per_share * _per_lot(days.due_within_month[ex_day])
    due_year = lots.due_year + per_share * _per_lot(days.due_within_year[ex_day])
    factor = torch.where(holdings > 0, whole / holdings.clamp(min=EMPTY), torch.zeros_like(holdings)).unsqueeze(-1)
    inverse = torch.where(factor > 0, 1.0 / factor.clamp(min=EMPTY), torch.zeros_like(factor))
    return lots._replace(shares=lots.shares * factor, due_month=due_month * inverse,
                         due_year=due_year * inverse), withheld


def sell_first_in_first_out(lots: Lots, holdings, sold, days: TaxDays, sale_day):
    """``sold`` shares per stock leave ``holdings`` on ``sale_day``: the untracked (oldest,
    exempt) shares first, then the lots in purchase order. Returns ``lots, tax`` (``[..., S]``
    yuan withheld from the sale)."""
    tracked = lots.shares.sum(-1)
    from_lots = (sold - (holdings - tracked).clamp(min=0.0)).clamp(min=0.0)
    before = torch.cumsum(lots.shares, dim=-1) - lots.shares
    taken = torch.minimum((from_lots.unsqueeze(-1) - before).clamp(min=0.0), lots.shares)
    today = _per_lot(days.day[sale_day])
    due = torch.where(today <= lots.month_end, lots.due_month,
                      torch.where(today <= lots.year_end, lots.due_year, torch.zeros_like(lots.due_year)))
    tax = (taken * due).sum(-1)
    shares = lots.shares - taken
    # a position sold out leaves nothing behind (float dust of bonus-scaled lots)
    shares = torch.where((holdings - sold).unsqueeze(-1) > EMPTY, shares, torch.zeros_like(shares))
    return lots._replace(shares=shares), tax


def record_purchases(lots: Lots, bought, days: TaxDays, buy_day):
    """Drop lots over a year old on ``buy_day`` (exempt for good), close the gaps, then append
    today's purchase ``bought`` as the newest lot; with every slot taken, merge an adjacent pair
    first (see the module's docstring)."""
    count = lots.shares.shape[-1]
    alive = (lots.shares > EMPTY) & (_per_lot(days.day[buy_day]) <= lots.year_end)
    slot = torch.arange(count, device=lots.shares.device)
    # lots run oldest first and leave from the front only (sold first, or a year old first), so
    # the live ones are one run: shift it to slot 0
    first = torch.argmax(alive.to(torch.int8), dim=-1, keepdim=True)
    order = (slot + first).clamp(max=count - 1)
    keep = torch.gather(alive, -1, order) & (slot + first < count)
    # (masks as multipliers: exact for finite values, and much cheaper than torch.where on CPU)
    shares, month_end, year_end, due_month, due_year = (torch.gather(x, -1, order) * keep.to(x.dtype) for x in lots)

    # the purchase goes into the first free slot of a ledger one slot longer
    used = keep.sum(-1, keepdim=True)
    new = (torch.arange(count + 1, device=lots.shares.device) == used) & (bought.unsqueeze(-1) > 0)
    pad = lambda x, value: torch.where(new, value, torch.cat([x, torch.zeros_like(x[..., :1])], dim=-1))  # noqa: E731
    shares = pad(shares, bought.unsqueeze(-1))
    month_end = pad(month_end, _per_lot(days.month_end[buy_day]))
    year_end = pad(year_end, _per_lot(days.year_end[buy_day]))
    due_month, due_year = pad(due_month, 0.0), pad(due_year, 0.0)  # a new lot has received nothing yet

    # full (K + 1 lots): merge the adjacent pair closest in date (the gap between their year ends)
    # among those that received the same dividends (bought between the same ex-days), else the
    # closest; otherwise "merge" beyond the end, i.e. not at all
    full = (shares > EMPTY).all(-1, keepdim=True)
    unlike = (due_month[..., 1:] != due_month[..., :-1]) | (due_year[..., 1:] != due_year[..., :-1])
    gaps = year_end[..., 1:] - year_end[..., :-1] + unlike.long() * UNLIKE_PENALTY
    at = torch.where(full, torch.argmin(gaps, dim=-1, keepdim=True), torch.full_like(used, count))
    # slots before `at` keep their lot, slot `at` holds the merged pair, later slots the next lot
    masks = {dtype: [(slot < at).to(dtype), (slot == at).to(dtype), (slot > at).to(dtype)]
             for dtype in (shares.dtype, year_end.dtype)}

    def merge(x, merged):
        before, here, after = masks[x.dtype]
        return x[..., :-1] * before + merged * here + x[..., 1:] * after
    return Lots(merge(shares, shares[..., :-1] + shares[..., 1:]), merge(month_end, month_end[..., 1:]),
                merge(year_end, year_end[..., 1:]),
                merge(due_month, torch.maximum(due_month[..., :-1], due_month[..., 1:])),
                merge(due_year, torch.maximum(due_year[..., :-1], due_year[..., 1:])))
