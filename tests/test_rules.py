"""A-share trading rules, checked on hand-computed cases."""
import numpy as np
import pandas as pd
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from finrl_tutorial import rules
from finrl_tutorial.rules import FeeSchedule

FEES = FeeSchedule()


def t(*values):
    return torch.tensor(values, dtype=torch.float64)


def fill(cash, holdings, wanted, price, *, can_buy=None, can_sell=None, sellable=None, date="2020-06-01",
         fees=FEES):
    """Run `execute_orders` for one account on ``date``; returns plain Python numbers/lists."""
    holdings, wanted, price = t(*holdings), t(*wanted), t(*price)
    every = torch.ones_like(price, dtype=torch.bool)
    stamp, transfer = fees.rates_on([date])
    out = rules.execute_orders(
        torch.tensor(float(cash), dtype=torch.float64), holdings,
        holdings.clone() if sellable is None else t(*sellable), wanted, price,
        every if can_buy is None else torch.tensor(can_buy), every if can_sell is None else torch.tensor(can_sell),
        fees, torch.tensor(stamp[0], dtype=torch.float64), torch.tensor(transfer[0], dtype=torch.float64))
    cash, holdings, bought, fee, traded = out
    return float(cash), holdings.tolist(), bought.tolist(), float(fee), float(traded)


# --- price limits ---------------------------------------------------------------------------------

def test_board_of():
    assert rules.board_of("600000.SH") == "main"
    assert rules.board_of("000001.SZ") == "main"
    assert rules.board_of("300750.SZ") == "chinext"
    assert rules.board_of("301001.SZ") == "chinext"
    assert rules.board_of("688981.SH") == "star"
    assert rules.board_of("830799.BJ") == "bse"


def test_limit_rate_by_board_date_and_st():
    before, after = ["2020-08-21"], ["2020-08-24"]
    assert rules.limit_rate("600000.SH", before).tolist() == [0.10]
    assert rules.limit_rate("000001.SZ", after).tolist() == [0.10]
    assert rules.limit_rate("600000.SH", before + after, is_st=[1, 1]).tolist() == [0.05, 0.05]
    assert rules.limit_rate("600000.SH", before + after, is_st=[0, 1]).tolist() == [0.10, 0.05]
    assert rules.limit_rate("300750.SZ", before + after).tolist() == [0.10, 0.20]
    assert rules.limit_rate("300750.SZ", ["2020-08-21", "2020-08-24"], is_st=[1, 1]).tolist() == [0.05, 0.20]
    assert rules.limit_rate("688981.SH", ["2019-07-22", "2023-01-03"]).tolist() == [0.20, 0.20]
    assert rules.limit_rate("688981.SH", ["2023-01-03"], is_st=[1]).tolist() == [0.20]
    assert rules.limit_rate("830799.BJ", ["2023-01-03"]).tolist() == [0.30]


@pytest.mark.parametrize("close, rate, up, down", [
    (4.85, 0.10, 5.34, 4.37),     # 5.335 rounds half up to 5.34; 4.365 -> 4.37
    (7.16, 0.10, 7.88, 6.44),     # 7.876 -> 7.88; 6.444 -> 6.44
    (10.05, 0.10, 11.06, 9.05),   # 11.055 -> 11.06 (half up, despite binary floating point)
    (10.00, 0.05, 10.50, 9.50),
    (3.33, 0.20, 4.00, 2.66),     # 3.996 -> 4.00; 2.664 -> 2.66
    (1.15, 0.10, 1.27, 1.04),     # 1.265 -> 1.27; 1.035 -> 1.04
])
def test_limit_prices_round_half_up(close, rate, up, down):
    got_up, got_down = rules.limit_prices([close], rate)
    assert got_up[0] == pytest.approx(up, abs=1e-9)
    assert got_down[0] == pytest.approx(down, abs=1e-9)


def test_round_to_tick():
    np.testing.assert_allclose(rules.round_to_tick([2.345, 2.344, 2.3449999, 0.005, 12.0]),
                               [2.35, 2.34, 2.34, 0.01, 12.0], atol=1e-12)


# --- fees -----------------------------------------------------------------------------------------

def test_fee_schedule_rates_on():
    stamp, transfer = FEES.rates_on(["2023-08-25", "2023-08-28"])
    assert stamp.tolist() == [0.001, 0.0005]
    stamp, transfer = FEES.rates_on(["2015-01-05", "2020-06-01", "2022-04-28", "2022-04-29", "2024-01-02"])
    assert transfer.tolist() == [0.00002, 0.00002, 0.00002, 0.00001, 0.00001]
    assert stamp.tolist() == [0.001] * 4 + [0.0005]
    with pytest.raises(ValueError, match="fee schedule starts after"):
        FEES.rates_on(["1899-12-29"])


def test_order_commission_minimum():
    value, quantity = t(1000.0, 100_000.0, 0.0), t(100.0, 1000.0, 0.0)
    assert rules.order_commission(value, quantity, 0.00025, 5.0).tolist() == [5.0, 25.0, 0.0]


# --- execution ------------------------------------------------------------------------------------

def test_sell_fees_by_hand():
    cash, holdings, bought, fee, traded = fill(0.0, [1000], [-1000], [10.0])
    # commission max(0.00025 * 10,000, 5) = 5, stamp 0.1 % = 10, transfer 0.002 % = 0.2
    assert fee == pytest.approx(15.2)
    assert cash == pytest.approx(10_000 - 15.2)
    assert holdings == [0.0] and bought == [0.0] and traded == 10_000.0


def test_sell_fees_after_stamp_cut():
    cash, _, _, fee, _ = fill(0.0, [1000], [-1000], [10.0], date="2023-08-28")
    assert fee == pytest.approx(5 + 5 + 0.1)  # stamp 0.05 %, transfer 0.001 %
    assert cash == pytest.approx(10_000 - 10.1)


def test_large_sell_commission_above_minimum():
    _, _, _, fee, _ = fill(0.0, [100_000], [-100_000], [10.0])
    assert fee == pytest.approx(250 + 1000 + 20)


def test_small_buy_pays_minimum_commission():
    cash, holdings, bought, fee, traded = fill(10_000.0, [0], [100], [10.0])
    assert holdings == [100.0] and bought == [100.0]
    assert fee == pytest.approx(5 + 0.02)  # 0.00025 * 1000 = 0.25 < 5; transfer 0.002 % of 1000
    assert cash == pytest.approx(10_000 - 1000 - 5.02)
    assert traded == 1000.0


def test_tradable_sides():
    price, up, down = t(11.0, 9.0, 10.0, 10.0), t(11.0, 11.0, 11.0, 11.0), t(9.0, 9.0, 9.0, 9.0)
    tradable = torch.tensor([True, True, True, False])
    can_buy, can_sell = rules.tradable_sides(price, up, down, tradable)
    assert can_buy.tolist() == [False, True, True, False]   # locked at the up limit / suspended
    assert can_sell.tolist() == [True, False, True, False]  # locked at the down limit / suspended


def test_buy_at_up_limit_refused():
    can_buy, can_sell = rules.tradable_sides(t(11.0), t(11.0), t(9.0), torch.tensor([True]))
    cash, holdings, _, fee, traded = fill(100_000.0, [500], [1000], [11.0],
                                          can_buy=can_buy.tolist(), can_sell=can_sell.tolist())
    assert (cash, holdings, fee, traded) == (100_000.0, [500.0], 0.0, 0.0)
    # selling at the up limit is allowed
    cash, holdings, _, fee, _ = fill(100_000.0, [500], [-500], [11.0],
                                     can_buy=can_buy.tolist(), can_sell=can_sell.tolist())
    assert holdings == [0.0] and fee > 0


def test_sell_at_down_limit_refused():
    can_buy, can_sell = rules.tradable_sides(t(9.0), t(11.0), t(9.0), torch.tensor([True]))
    cash, holdings, _, fee, traded = fill(100_000.0, [500], [-500], [9.0],
                                          can_buy=can_buy.tolist(), can_sell=can_sell.tolist())
    assert (cash, holdings, fee, traded) == (100_000.0, [500.0], 0.0, 0.0)
    _, holdings, _, _, _ = fill(100_000.0, [500], [500], [9.0], can_buy=can_buy.tolist(), can_sell=can_sell.tolist())
    assert holdings == [1000.0]


def test_suspended_stock_does_not_trade():
    can_buy, can_sell = rules.tradable_sides(t(10.0, 10.0), t(11.0, 11.0), t(9.0, 9.0), torch.tensor([False, True]))
    cash, holdings, _, fee, traded = fill(100_000.0, [500, 500], [-500, 0], [10.0, 10.0],
                                          can_buy=can_buy.tolist(), can_sell=can_sell.tolist())
    assert (cash, holdings, fee, traded) == (100_000.0, [500.0, 500.0], 0.0, 0.0)
    cash, holdings, _, fee, traded = fill(100_000.0, [500, 500], [500, 0], [10.0, 10.0],
                                          can_buy=can_buy.tolist(), can_sell=can_sell.tolist())
    assert (cash, holdings, fee, traded) == (100_000.0, [500.0, 500.0], 0.0, 0.0)


@pytest.mark.parametrize("asked, sold", [(150, 150), (151, 150), (10_000, 150), (149, 100), (120, 100),
                                         (100, 100), (99, 0), (0, 0)])
def test_odd_lot_sell(asked, sold):
    cash, holdings, _, fee, traded = fill(0.0, [150], [-asked], [10.0])
    assert holdings == [150.0 - sold]
    assert traded == pytest.approx(10.0 * sold)
    assert (fee >= 5.0) if sold else (fee == 0.0 and cash == 0.0)


@pytest.mark.parametrize("asked, bought", [(250, 200), (100, 100), (199.9, 100), (99, 0), (0.5, 0), (1000, 1000)])
def test_buys_round_down_to_lots(asked, bought):
    cash, holdings, got, fee, _ = fill(1_000_000.0, [0], [asked], [10.0])
    assert holdings == [float(bought)] and got == [float(bought)]
    assert (fee >= 5.0) if bought else (fee == 0.0 and cash == 1_000_000.0)


def test_buys_scaled_down_to_fit_cash():
    cash, holdings, _, fee, traded = fill(10_000.0, [0, 0], [5000, 5000], [10.0, 20.0])
    assert cash >= 0.0
    assert all(h % 100 == 0 for h in holdings)
    assert holdings[0] > 0 and holdings[1] > 0
    assert traded + fee == pytest.approx(10_000.0 - cash)
    # one scale for both orders: 10,000 / (50 lots x 1,000.27 + 50 lots x 2,000.54 + 2 x 5) = 6.66 %,
    # so 3.33 lots of each, rounded down to 3 lots
    assert holdings == [300.0, 300.0]


def test_buy_refused_when_fees_do_not_fit():
    # 100 shares at 10.00 cost 1,000 + 5 commission + 0.02 transfer = 1,005.02
    cash, holdings, _, fee, _ = fill(1005.0, [0], [100], [10.0])
    assert (cash, holdings, fee) == (1005.0, [0.0], 0.0)
    cash, holdings, _, fee, _ = fill(1006.0, [0], [100], [10.0])
    assert holdings == [100.0] and cash == pytest.approx(0.98)


def test_sells_fund_buys_on_the_same_day():
    cash, holdings, _, _, _ = fill(0.0, [1000, 0], [-1000, 1000], [10.0, 10.0])
    assert holdings[0] == 0.0 and holdings[1] == 900.0  # 9,984.80 after sell fees buys 9 lots
    assert cash >= 0.0


def test_no_short_selling():
    cash, holdings, _, fee, _ = fill(100_000.0, [0, 200], [-500, -500], [10.0, 10.0])
    assert holdings == [0.0, 0.0]
    assert cash == pytest.approx(100_000 + 2000 - 5 - 2 - 0.04)


def test_negative_cash_never_turns_buys_into_short_sales():
    # A negative cash balance (not reachable through the rules, but possible from a bad state)
    # must refuse the buy, never turn it into a negative (fee-free) "buy" that shorts the stock.
    cash, holdings, _, _, _ = fill(-3.0, [0, 0], [0, 100], [1.0, 10.0])
    assert holdings == [0.0, 0.0]
    assert cash == -3.0


def test_sellable_shares_t_plus_1():
    holdings, bought = t(300.0, 200.0, 0.0), t(100.0, 200.0, 0.0)
    assert rules.sellable_shares(holdings, bought, torch.tensor(True)).tolist() == [200.0, 0.0, 0.0]
    assert rules.sellable_shares(holdings, bought, torch.tensor(False)).tolist() == [300.0, 200.0, 0.0]
    batch = rules.sellable_shares(holdings.expand(2, 3), bought.expand(2, 3), torch.tensor([True, False]))
    assert batch.tolist() == [[200.0, 0.0, 0.0], [300.0, 200.0, 0.0]]
    # shares bought on the fill day cannot be sold that day
    sellable = rules.sellable_shares(t(300.0), t(100.0), torch.tensor(True))
    _, holdings, _, _, _ = fill(0.0, [300], [-300], [10.0], sellable=sellable.tolist())
    assert holdings == [100.0]


def test_apply_corporate_action():
    cash, holdings = rules.apply_corporate_action(torch.tensor(0.0, dtype=torch.float64), t(150.0), t(1.3), t(7.7))
    assert holdings.tolist() == [195.0] and float(cash) == 0.0
    cash, holdings = rules.apply_corporate_action(torch.tensor(50.0, dtype=torch.float64), t(100.0), t(1.125), t(8.0))
    assert holdings.tolist() == [112.0]
    assert float(cash) == pytest.approx(50.0 + 0.5 * 8.0)
    # wealth is unchanged at the reference price: 100 shares at 9.00 = 112.5 shares at 8.00
    assert float(cash) + 112.0 * 8.0 == pytest.approx(50.0 + 100 * 9.0)
    # ratio 1: nothing happens; batched leading dims broadcast
    cash, holdings = rules.apply_corporate_action(t(1.0, 2.0), t(100.0, 150.0, 7.0, 115.0).view(2, 2),
                                                  t(1.0, 1.3), t(10.0, 10.0))
    assert holdings.tolist() == [[100.0, 195.0], [7.0, 149.0]]  # 115 x 1.3 = 149.5
    assert cash.tolist() == [1.0, pytest.approx(2.0 + 0.5 * 10.0)]


@settings(max_examples=150, deadline=None)
@given(cash=st.one_of(st.floats(0.0, 50.0), st.floats(0.0, 2e6)),
       holdings=st.lists(st.integers(0, 5000), min_size=4, max_size=4),
       wanted=st.lists(st.floats(-10_000, 10_000), min_size=4, max_size=4),
       price=st.lists(st.floats(1.0, 200.0), min_size=4, max_size=4),
       can_buy=st.lists(st.booleans(), min_size=4, max_size=4),
       can_sell=st.lists(st.booleans(), min_size=4, max_size=4))
def test_execute_orders_properties(cash, holdings, wanted, price, can_buy, can_sell):
    price = [round(p, 2) for p in price]
    new_cash, new_holdings, bought, fee, traded = fill(cash, holdings, wanted, price, can_buy=can_buy,
                                                       can_sell=can_sell)
    orders = 0
    for old, new, got, want, ok_buy, ok_sell in zip(holdings, new_holdings, bought, wanted, can_buy, can_sell):
        assert new >= 0 and new == int(new)
        delta = new - old
        if delta > 0:
            assert ok_buy and want > 0 and delta % 100 == 0 and delta == got and delta <= want
        elif delta < 0:
            assert ok_sell and want < 0 and (-delta % 100 == 0 or new == 0) and -delta <= -want + 1e-9
        orders += delta != 0
    assert new_cash >= -1e-6  # sells worth less than their fees are not placed
    assert fee >= 5.0 * orders - 1e-9
    assert traded == pytest.approx(sum(abs(n - o) * p for n, o, p in zip(new_holdings, holdings, price)))
    wealth_before = cash + sum(h * p for h, p in zip(holdings, price))
    wealth_after = new_cash + sum(h * p for h, p in zip(new_holdings, price))
    assert wealth_after == pytest.approx(wealth_before - fee, rel=1e-12, abs=1e-6)


def test_sell_worth_less_than_its_fees_is_not_placed():
    """1 share at ¥1 would pay the ¥5 minimum commission: the order is not placed."""
    new_cash, new_holdings, _, fee, traded = fill(0.0, [1, 0, 0, 0], [-1, 0, 0, 0], [1.0, 10.0, 10.0, 10.0])
    assert new_holdings[0] == 1 and fee == 0.0 and traded == 0.0 and new_cash == 0.0


def test_scaled_buys_leave_the_minimum_commission_affordable():
    """Regression (found by the property test): after sells raise ¥1,001, a buy asking for 35
    lots at ¥2 must be scaled so that value + the ¥5 minimum commission fit, i.e. 4 lots, not 5."""
    cash, holdings, _, _, _ = fill(40.0, [0, 0, 872, 100], [0.0, 3500.0, -872.0, -100.0], [1.0, 2.0, 1.0, 1.0],
                                   can_buy=[False, True, False, False], can_sell=[False, False, True, True])
    assert holdings == [0.0, 400.0, 0.0, 0.0]
    assert cash >= 0.0
