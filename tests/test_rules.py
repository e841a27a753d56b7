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
         fees=FEES, tic="600000.SH", max_shares=None, slippage=0.0):
    """Run `execute_orders` for one account on ``date`` (every stock on ``tic``'s board and
    exchange); returns plain Python numbers/lists."""
    holdings, wanted, price = t(*holdings), t(*wanted), t(*price)
    every = torch.ones_like(price, dtype=torch.bool)
    day = fees.day_rates([date], [tic] * len(price))
    rates = rules.DayRates(*(torch.tensor(day[name][0], dtype=torch.float64) for name in rules.DayRates._fields))
    lot = rules.lot_rule(tic)
    buy_price, sell_price = rules.fill_prices(price, torch.full_like(price, float("inf")), torch.zeros_like(price),
                                              slippage)
    out = rules.execute_orders(
        torch.tensor(float(cash), dtype=torch.float64), holdings,
        holdings.clone() if sellable is None else t(*sellable), wanted, price,
        every if can_buy is None else torch.tensor(can_buy), every if can_sell is None else torch.tensor(can_sell),
        fees, rates, lot_minimum=lot.minimum, lot_step=lot.step,
        max_shares=None if max_shares is None else t(*max_shares), buy_price=buy_price, sell_price=sell_price)
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
    # every prefix of the exchanges' code plans
    assert rules.board_of("689009.SH") == "star"      # STAR depositary receipts (CDR)
    assert rules.board_of("302132.SZ") == "chinext"   # ChiNext's third code range
    assert rules.board_of("601398.SH") == rules.board_of("603288.SH") == rules.board_of("605499.SH") == "main"
    assert rules.board_of("001979.SZ") == rules.board_of("002594.SZ") == rules.board_of("003816.SZ") == "main"
    assert rules.board_of("430047.BJ") == rules.board_of("873223.BJ") == rules.board_of("920002.BJ") == "bse"
    assert rules.exchange_of("689009.SH") == "SH" and rules.exchange_of("920002.BJ") == "BJ"


def test_lot_rules_by_board():
    assert rules.lot_rule("600000.SH") == rules.lot_rule("300750.SZ") == rules.LotRule(100.0, 100.0)
    assert rules.lot_rule("688981.SH") == rules.lot_rule("689009.SH") == rules.LotRule(200.0, 1.0)
    assert rules.lot_rule("830799.BJ") == rules.LotRule(100.0, 1.0)


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


def test_main_board_st_limit_widens_in_2026():
    dates = ["2026-07-03", "2026-07-06"]
    assert rules.limit_rate("600000.SH", dates, is_st=[1, 1]).tolist() == [0.05, 0.10]
    assert rules.limit_rate("000001.SZ", dates, is_st=[1, 1]).tolist() == [0.05, 0.10]
    assert rules.limit_rate("300750.SZ", dates, is_st=[1, 1]).tolist() == [0.20, 0.20]


@pytest.mark.parametrize("tic, list_date, issue, up, down", [
    # registration system: no limit on days 1..5, the ordinary limit (NaN) from day 6
    ("688981.SH", "2020-07-16", None, [np.inf] * 5 + [np.nan], [0.0] * 5 + [np.nan]),
    ("301001.SZ", "2020-08-24", None, [np.inf] * 5 + [np.nan], [0.0] * 5 + [np.nan]),
    ("603000.SH", "2023-04-10", None, [np.inf] * 5 + [np.nan], [0.0] * 5 + [np.nan]),
    # approval system from 2014: day 1 within 64 %..144 % of the issue price (¥10.00), then ordinary
    ("603000.SH", "2019-01-02", 10.0, [14.40] + [np.nan] * 5, [6.40] + [np.nan] * 5),
    ("300999.SZ", "2020-08-21", 7.77, [11.19] + [np.nan] * 5, [4.97] + [np.nan] * 5),  # 11.1888, 4.9728
    # issue price unknown: day 1 unlimited
    ("603000.SH", "2019-01-02", None, [np.inf] + [np.nan] * 5, [0.0] + [np.nan] * 5),
    # Beijing: day 1 unlimited
    ("830799.BJ", "2021-11-15", 5.0, [np.inf] + [np.nan] * 5, [0.0] + [np.nan] * 5),
])
def test_listing_limits(tic, list_date, issue, up, down):
    dates = pd.bdate_range(list_date, periods=6)
    got_up, got_down = rules.listing_limits(tic, dates, np.arange(1, 7), list_date, issue)
    np.testing.assert_allclose(got_up, up, atol=1e-9)
    np.testing.assert_allclose(got_down, down, atol=1e-9)


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
    stamp, transfer = FEES.rates_on(["2015-08-03", "2020-06-01", "2022-04-28", "2022-04-29", "2024-01-02"])
    assert transfer.tolist() == [0.00002, 0.00002, 0.00002, 0.00001, 0.00001]
    assert stamp.tolist() == [0.001] * 4 + [0.0005]
    with pytest.raises(ValueError, match="fee schedule starts after"):
        FEES.rates_on(["1899-12-29"])


def test_stamp_duty_history_both_sides():
    dates = ["2005-01-21", "2005-01-24", "2007-05-29", "2007-05-30", "2008-04-23", "2008-04-24",
             "2008-09-18", "2008-09-19", "2023-08-25", "2023-08-28"]
    rates = FEES.day_rates(dates, ["600000.SH"])
    assert rates["stamp_sell"][:, 0].tolist() == [0.002, 0.001, 0.001, 0.003, 0.003, 0.001, 0.001, 0.001,
                                                  0.001, 0.0005]
    assert rates["stamp_buy"][:, 0].tolist() == [0.002, 0.001, 0.001, 0.003, 0.003, 0.001, 0.001, 0.0, 0.0, 0.0]


def test_transfer_fee_by_exchange_before_2015():
    rates = FEES.day_rates(["2015-07-31", "2015-08-03"], ["600000.SH", "000001.SZ"])
    assert rates["transfer_per_share"].tolist() == [[0.0003, 0.0], [0.0, 0.0]]
    assert rates["transfer_value"].tolist() == [[0.0, 0.0000255], [0.00002, 0.00002]]


def test_2007_stamp_duty_on_both_sides_by_hand():
    # 2007-06-01: 0.3 % on the buyer and the seller. Buy 1,000 at 10.00 in Shanghai: commission 5,
    # stamp 30, transfer 1,000 shares x ¥0.0003 = 0.30
    cash, holdings, _, fee, _ = fill(20_000.0, [0], [1000], [10.0], date="2007-06-01")
    assert holdings == [1000.0] and fee == pytest.approx(35.30) and cash == pytest.approx(20_000 - 10_000 - 35.30)
    # the same sell in Shenzhen: transfer 0.0255 ‰ x 10,000 = 0.255 -> 0.26 (half up)
    cash, holdings, _, fee, _ = fill(0.0, [1000], [-1000], [10.0], date="2007-06-01", tic="000001.SZ")
    assert holdings == [0.0] and fee == pytest.approx(35.26) and cash == pytest.approx(10_000 - 35.26)
    # 2008-09-19: the buyer pays no stamp duty any more
    _, _, _, fee, _ = fill(20_000.0, [0], [1000], [10.0], date="2008-09-19")
    assert fee == pytest.approx(5.30)


def test_fees_rounded_to_the_fen():
    # sell 1,000 at 10.13: commission max(2.5325, 5) = 5.00, stamp 10.13, transfer 0.2026 -> 0.20
    cash, _, _, fee, _ = fill(0.0, [1000], [-1000], [10.13])
    assert fee == pytest.approx(15.33, abs=1e-9) and cash == pytest.approx(10_114.67, abs=1e-9)
    # sell 30,000 at 10.13 (303,900): commission 75.975 -> 75.98, stamp 303.90, transfer 6.078 -> 6.08
    _, _, _, fee, _ = fill(0.0, [30_000], [-30_000], [10.13])
    assert fee == pytest.approx(75.98 + 303.90 + 6.08, abs=1e-9)


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


@pytest.mark.parametrize("asked, sold", [(150, 150), (151, 150), (10_000, 150), (149, 100), (120, 100), (50, 50), (49, 0),
                                         (100, 100), (99, 50), (0, 0)])
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
            assert ok_sell and want < 0 and (-delta % 100 in (0, old % 100) or new == 0) and -delta <= -want + 1e-9
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


# --- board lots, participation cap, slippage ------------------------------------------------------

@pytest.mark.parametrize("asked, bought", [(150, 0), (199.9, 0), (200, 200), (250, 250), (1234.5, 1234)])
def test_star_buys_at_least_200_then_single_shares(asked, bought):
    _, holdings, got, fee, _ = fill(1_000_000.0, [0], [asked], [10.0], tic="688981.SH")
    assert holdings == [float(bought)] and got == [float(bought)]
    assert (fee >= 5.0) if bought else fee == 0.0


@pytest.mark.parametrize("held, asked, sold", [(250, 100, 0), (250, 220, 220), (250, 250, 250), (250, 999, 250),
                                               (150, 150, 150), (150, 100, 0), (150, 999, 150)])
def test_star_sells_balance_under_200_in_one_order(held, asked, sold):
    _, holdings, _, _, traded = fill(0.0, [held], [-asked], [10.0], tic="688981.SH")
    assert holdings == [float(held - sold)] and traded == pytest.approx(10.0 * sold)


@pytest.mark.parametrize("asked, bought", [(99, 0), (100, 100), (101, 101), (150.7, 150)])
def test_beijing_buys_at_least_100_then_single_shares(asked, bought):
    _, holdings, _, _, _ = fill(1_000_000.0, [0], [asked], [10.0], tic="830799.BJ")
    assert holdings == [float(bought)]


def test_scaled_star_buy_never_falls_below_200():
    # cash for ~199 shares at 10.00: the scaled order would be under the 200-share minimum
    cash, holdings, _, fee, _ = fill(2_000.0, [0], [1000], [10.0], tic="688981.SH")
    assert holdings == [0.0] and fee == 0.0 and cash == 2_000.0
    _, holdings, _, _, _ = fill(2_100.0, [0], [1000], [10.0], tic="688981.SH")
    assert holdings == [209.0]  # (2,100 x (1 - 1e-5) - 5.015) / 10.0027 = 209.4 shares


def test_participation_cap_limits_the_fill():
    # the day traded 10,500 shares; 10 % = 1,050, rounded down to a 100-share lot
    cap = rules.participation_cap(t(10_500.0), 0.1)
    assert cap.tolist() == [1050.0]
    _, holdings, _, _, traded = fill(1_000_000.0, [0], [5000], [10.0], max_shares=cap.tolist())
    assert holdings == [1000.0] and traded == 10_000.0
    # a sell above the cap sells only up to it, even when it asks for the whole position
    _, holdings, _, _, _ = fill(0.0, [5000], [-5000], [10.0], max_shares=cap.tolist())
    assert holdings == [4000.0]
    # STAR: 1-share steps, so the cap itself fills
    _, holdings, _, _, _ = fill(1_000_000.0, [0], [5000], [10.0], max_shares=cap.tolist(), tic="688981.SH")
    assert holdings == [1050.0]


def test_slippage_moves_fills_against_the_trader():
    buy, sell = rules.fill_prices(t(10.0, 10.99), t(11.0, 11.0), t(9.0, 9.0), 0.0005)
    # on the 0.01 tick, rounded against the trader: 10.005 -> 10.01, 10.9955 -> 11.00; 9.995 -> 9.99
    assert buy.tolist() == [pytest.approx(10.01), pytest.approx(11.0)]
    assert sell.tolist() == [pytest.approx(9.99), pytest.approx(10.98)]
    buy, sell = rules.fill_prices(t(10.99, 9.01), t(11.0, 11.0), t(9.0, 9.0), 0.005)
    assert buy.tolist()[0] == 11.0 and sell.tolist()[1] == 9.0  # never beyond the day's limits
    # the participation term: 0.1 x (10 %)^2 = 0.1 %
    buy, _ = rules.fill_prices(t(10.0), t(11.0), t(9.0), 0.0, impact=0.1, participation=t(0.1))
    assert float(buy) == pytest.approx(10.01)
    # a buy of 1,000 at 10.00 with 5 bp fills at 10.01: pays 10,010 + 5.00 commission + 0.20 transfer
    cash, holdings, _, fee, traded = fill(20_000.0, [0], [1000], [10.0], slippage=0.0005)
    assert holdings == [1000.0] and traded == pytest.approx(10_010.0)
    assert fee == pytest.approx(5.20) and cash == pytest.approx(20_000 - 10_010 - 5.20)


# --- corporate actions ----------------------------------------------------------------------------

def test_ex_rights_reference():
    np.testing.assert_allclose(rules.ex_rights_reference([10.00, 20.00, 9.87], [0.30, 0.50, 0.0], [0.0, 0.3, 0.5]),
                               [9.70, 15.00, 6.58], atol=1e-12)  # 9.87 / 1.5 = 6.58


def test_split_corporate_action():
    ratio, dividend = rules.split_corporate_action([10.00, 20.00, 30.00, 10.00], [9.70, 15.00, 24.83, 10.00])
    # a plain cash dividend; 10送3派5; 10送2派2 ((30.00 - 0.20) / 1.2 = 24.833 -> 24.83); nothing
    np.testing.assert_allclose(ratio, [1.0, 1.3, 1.2, 1.0], atol=1e-12)
    np.testing.assert_allclose(dividend, [0.30, 0.50, 30.00 - 1.2 * 24.83, 0.0], atol=1e-9)
    # a reference rounded to the fen: 10送10 on 20.01 -> 10.01 (not 10.005) stays all shares
    ratio, dividend = rules.split_corporate_action([20.01], [10.01])
    assert dividend.tolist() == [0.0] and ratio[0] == pytest.approx(20.01 / 10.01)
    # holders keep their wealth at the reference price
    prev, ref = np.array([10.0, 20.0, 31.7]), np.array([9.7, 15.0, 22.41])
    ratio, dividend = rules.split_corporate_action(prev, ref)
    np.testing.assert_allclose(ratio * ref + dividend, prev, atol=1e-12)


def test_cash_dividend_on_the_ex_day():
    """1,000 shares, ¥0.30 cash per share, reference 9.70 after a 10.00 close: cash +300, wealth
    unchanged at the reference."""
    cash, holdings = rules.apply_corporate_action(torch.tensor(50.0, dtype=torch.float64), t(1000.0), t(1.0),
                                                  t(9.70), t(0.30))
    assert holdings.tolist() == [1000.0] and float(cash) == pytest.approx(350.0)
    assert float(cash) + 1000 * 9.70 == pytest.approx(50.0 + 1000 * 10.00)
    # 10送3派5 on 20.00 (reference 15.00): 150 shares -> 195 shares and ¥75 cash
    cash, holdings = rules.apply_corporate_action(torch.tensor(0.0, dtype=torch.float64), t(150.0), t(1.3),
                                                  t(15.00), t(0.50))
    assert holdings.tolist() == [195.0] and float(cash) == pytest.approx(75.0)
    assert float(cash) + 195 * 15.00 == pytest.approx(150 * 20.00)
