"""Trading envs: gymnasium API, equivalence of the single / batched / vmap envs, A-share invariants
(the batched envs as gymnasium vector envs: tests/test_gym_vector.py)."""
import numpy as np
import pandas as pd
import pytest
import torch
from gymnasium.utils.env_checker import check_env
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from finrl_tutorial import rules
from finrl_tutorial.envs import (Account, EnvConfig, MarketArrays, StockTradingEnv, VecStockTradingEnv,
                                 VmapStockTradingEnv, observation_size)

# stockstats (a dependency) calls set_index(inplace=True), deprecated in pandas 3.1: not our concern here
pytestmark = pytest.mark.filterwarnings("ignore:The inplace keyword in DataFrame.set_index")
F64 = torch.float64
HALF_TICK = rules.TICK / 2


def _day(market, date: str) -> int:
    return int(pd.DatetimeIndex(market.dates).get_loc(pd.Timestamp(date)))


def _clone(account: Account) -> Account:
    return Account(*(field.clone() for field in account))


def _batched(account: Account) -> Account:
    """A single env's account ([S] holdings) as a batch of one."""
    return Account(*(field.unsqueeze(0) for field in account))


# --- the invariant checker (shared by the random-batch test and the hypothesis test) ----------------

class Invariants:
    """Checks one step of N accounts against the A-share rules, from the outside.

    ``prev`` is the account before the step, ``new`` the stepped account (rows where ``valid`` is
    False -- envs that were reset in the same step -- are skipped for state checks).
    """

    def __init__(self, arrays: MarketArrays, config: EnvConfig):
        self.arrays, self.config = arrays, config
        self.counts = dict(steps=0, orders=0, buys=0, sells=0, odd_lot_sells=0, corporate_actions=0,
                           locked_wanted=0, suspended_wanted=0)

    def check(self, prev: Account, action, new: Account, reward, fee, traded, wealth, valid):
        a, cfg = self.arrays, self.config
        nxt = prev.day + 1
        ratio, ref = a.split_ratio[nxt], a.pre_close[nxt]
        if cfg.execution == "open":
            fill = nxt
            base = torch.floor(prev.holdings * ratio + 1e-6)
            ca_cash = ((prev.holdings * ratio - base).clamp(min=0) * ref).sum(-1) \
                + (prev.holdings * a.dividend[nxt]).sum(-1)
            exact = torch.ones_like(prev.cash, dtype=torch.bool)
            known = torch.ones_like(prev.holdings, dtype=torch.bool)
        else:  # close: orders fill before the corporate action of the next day
            fill = prev.day
            base = prev.holdings
            ca_cash = torch.zeros_like(prev.cash)
            known = (ratio == 1.0) & (a.dividend[nxt] == 0)  # trades on a stock with an action that night
            # are not separable from it
            exact = known.all(-1)
        price = a.open[fill] if cfg.execution == "open" else a.close[fill]
        tradable = a.tradable[fill]
        can_buy = tradable & (price < a.up_limit[fill] - HALF_TICK)
        can_sell = tradable & (price > a.down_limit[fill] + HALF_TICK)
        # fills pay the fixed slippage against the trader (on the fen with fill_on_tick: buys up, sells
        # down), never beyond the day's limits
        assert cfg.impact == 0.0, "the checker models the fixed slippage only"
        buy_price, sell_price = price * (1 + cfg.slippage), price * (1 - cfg.slippage)
        if cfg.fill_on_tick:
            buy_price, sell_price = torch.ceil(buy_price * 100 - 1e-6) / 100, torch.floor(sell_price * 100 + 1e-6) / 100
        buy_price = torch.minimum(buy_price, a.up_limit[fill])
        sell_price = torch.maximum(sell_price, a.down_limit[fill])
        cap = torch.floor(a.fill_volume[fill] * cfg.max_participation)
        n = valid.sum()

        # every step: reward is the change in wealth, wealth >= 0
        expected_reward = (wealth - prev.wealth) * (cfg.reward_scale / cfg.initial_cash)
        torch.testing.assert_close(reward, expected_reward, rtol=1e-9, atol=1e-9)
        assert (wealth >= 0).all()
        assert (fee >= 0).all() and (traded >= 0).all()

        v = valid
        cash, holdings = new.cash[v], new.holdings[v]
        assert (cash >= -1e-9).all(), "cash < 0"
        assert (holdings >= 0).all(), "negative holdings"
        assert torch.equal(holdings, torch.round(holdings)), "fractional shares"
        assert torch.equal(new.day[v], nxt[v])
        # wealth == cash + sum(holdings x close), to 1e-6 relative
        torch.testing.assert_close(wealth[v], cash + (holdings * a.close[nxt[v]]).sum(-1), rtol=1e-6, atol=1e-6)

        delta = (new.holdings - base)[v]
        known_v = known[v]
        bought, sold = (delta > 0) & known_v, (delta < 0) & known_v
        assert torch.all(torch.remainder(delta[bought], rules.LOT_SIZE) == 0), "buy not in whole lots"
        assert can_buy[v][bought].all(), "bought a suspended or limit-up stock"
        assert can_sell[v][sold].all(), "sold a suspended or limit-down stock"
        whole_lots = torch.remainder(-delta, rules.LOT_SIZE) == 0
        # an odd-lot sell is the position's odd remainder (with or without whole lots), or all of it
        odd_part = torch.remainder(-delta, rules.LOT_SIZE) == torch.remainder(base[v], rules.LOT_SIZE)
        assert (whole_lots | odd_part | (new.holdings[v] == 0))[sold].all(), "odd-lot sell that split the remainder"
        # no trade at all on a stock that cannot trade that day
        assert (delta[known_v & ~tradable[v]] == 0).all()
        assert (delta[known_v & ~can_buy[v]] <= 0).all() and (delta[known_v & ~can_sell[v]] >= 0).all()

        # fees: >= 5 per order that traded, 0 without trades; traded value and cash add up
        orders = ((delta != 0) | ~known_v).sum(-1)
        exact_v = exact[v]
        orders_known = ((delta != 0) & known_v).sum(-1)
        assert (fee[v] >= cfg.fees.min_commission * orders_known - 1e-9).all(), "an order paid < the minimum fee"
        assert (fee[v][orders == 0] == 0).all() and (traded[v][orders == 0] == 0).all()
        assert (delta.abs()[known_v] <= cap[v][known_v]).all(), "filled more than the participation cap"
        paid = delta.clamp(min=0) * buy_price[v] + delta.clamp(max=0) * sell_price[v]  # signed cash flow
        traded_value = paid.abs().sum(-1)
        torch.testing.assert_close(traded[v][exact_v], traded_value[exact_v], rtol=1e-9, atol=1e-6)
        expected_cash = prev.cash[v] + ca_cash[v] - paid.sum(-1) - fee[v]
        torch.testing.assert_close(cash[exact_v], expected_cash[exact_v], rtol=1e-9, atol=1e-6)

        held = prev.holdings > 0
        wants = action.clamp(-1, 1) != 0
        self.counts["steps"] += int(n)
        self.counts["orders"] += int(orders_known.sum())
        self.counts["buys"] += int(bought.sum())
        self.counts["sells"] += int(sold.sum())
        self.counts["odd_lot_sells"] += int((sold & ~whole_lots).sum())
        self.counts["corporate_actions"] += int(((ratio != 1.0) & held)[v].sum())
        self.counts["locked_wanted"] += int((tradable & ~(can_buy & can_sell) & wants)[v].sum())
        self.counts["suspended_wanted"] += int((~tradable & wants)[v].sum())


def _random_actions(generator, shape, dtype=F64):
    """Mixed actions: uniform, many exact zeros, some ±1, and some tiny orders (odd lots, minimum fee)."""
    action = torch.rand(shape, generator=generator, dtype=dtype) * 2 - 1
    u = torch.rand(shape, generator=generator, dtype=dtype)
    action = torch.where(u < 0.3, torch.zeros_like(action), action)
    action = torch.where(u > 0.92, action.sign(), action)
    small = torch.rand(shape[:-1] + (1,), generator=generator, dtype=dtype) < 0.25
    return torch.where(small, action * 0.02, action)


# --- gymnasium API --------------------------------------------------------------------------------

def test_check_env(sse15):
    env = StockTradingEnv(sse15.train)
    check_env(env, skip_render_check=True)
    check_env(StockTradingEnv(sse15.train, EnvConfig(action_mode="weights", execution="close")),
              skip_render_check=True)


def test_spaces_and_observation(sse15):
    env = StockTradingEnv(sse15.train)
    obs, info = env.reset(seed=3)
    size = observation_size(15, sse15.train.num_features)
    assert env.observation_space.shape == obs.shape == (size,)
    assert env.action_space.shape == (15,)
    assert obs.dtype == np.float32 and env.observation_space.contains(obs)
    assert obs[0] == 1.0  # all cash
    assert info["wealth"] == env.config.initial_cash and info["date"] == str(sse15.train.dates[info["day"]])
    with pytest.raises(RuntimeError):
        StockTradingEnv(sse15.train).step(np.zeros(15))


def test_config_validation():
    with pytest.raises(ValueError):
        EnvConfig(execution="vwap")
    with pytest.raises(ValueError):
        EnvConfig(action_mode="orders")
    with pytest.raises(ValueError):
        EnvConfig(episode_days=0)
    with pytest.raises(ValueError):
        EnvConfig(initial_cash=0)
    for bad in (dict(slippage=-0.001), dict(slippage=0.5), dict(impact=-1.0), dict(max_participation=0.0),
                dict(max_participation=float("nan"))):
        with pytest.raises(ValueError):
            EnvConfig(**bad)
    EnvConfig(slippage=0.0, max_participation=float("inf"))  # costs of size switched off


# --- equivalence of the three envs ----------------------------------------------------------------

@pytest.mark.parametrize("execution, action_mode, dividend_tax", [
    ("open", "shares", False), ("open", "weights", False), ("close", "shares", False), ("close", "weights", False),
    ("open", "weights", True), ("close", "shares", True)])
def test_single_vec_vmap_agree(sse15, execution, action_mode, dividend_tax):
    full = sse15.full
    start, steps, row = _day(full, "2017-03-31"), 260, 5   # crosses suspensions and ex-rights days
    config = EnvConfig(random_start=False, episode_days=None, execution=execution, action_mode=action_mode,
                       dividend_tax=dividend_tax, tax_lots=4)
    generator = torch.Generator().manual_seed(11)
    actions = _random_actions(generator, (steps, 64, 15))

    single = StockTradingEnv(full, config)
    single.reset(options={"start_day": start})
    market = full.slice_days(start, full.num_days)
    batched = {
        "vec1": VecStockTradingEnv(market, 1, config, dtype=F64),
        "vec64": VecStockTradingEnv(market, 64, config, dtype=F64),
        "vmap64": VmapStockTradingEnv(market, 64, config, dtype=F64),
        "vmap1": VmapStockTradingEnv(market, 1, config, dtype=F64),
    }
    for env in batched.values():
        env.reset()
    traded_any = taxed_any = 0.0
    for step in range(steps):
        obs, reward, terminated, truncated, info = single.step(actions[step, row].numpy())
        assert not terminated and not truncated
        traded_any += info["traded_value"]
        for name, env in batched.items():
            batch = actions[step] if env.num_envs == 64 else actions[step, row:row + 1]
            i = row if env.num_envs == 64 else 0
            b_obs, b_reward, b_term, b_trunc, b_info = env.step(batch)
            ctx = f"{name} step {step}"
            torch.testing.assert_close(env.account.cash[i], single.account.cash, rtol=1e-12, atol=1e-6, msg=ctx)
            assert torch.equal(env.account.holdings[i], single.account.holdings), ctx
            assert float(b_reward[i]) == pytest.approx(reward, rel=1e-9, abs=1e-9), ctx
            assert float(b_info["fee"][i]) == pytest.approx(info["fee"], rel=1e-12, abs=1e-9), ctx
            assert float(b_info["dividend_tax"][i]) == pytest.approx(info["dividend_tax"], rel=1e-12, abs=1e-9), ctx
            taxed_any += float(b_info["dividend_tax"].sum()) if name == "vec64" else 0.0
            assert float(b_info["wealth"][i]) == pytest.approx(info["wealth"], rel=1e-12), ctx
            np.testing.assert_allclose(b_obs[i].numpy().astype(np.float32), obs, rtol=1e-5, atol=1e-6)
            assert not bool(b_term[i]) and not bool(b_trunc[i])
    assert traded_any > 0 and (taxed_any > 0) == dividend_tax
    # the vec and the vmap env agree on every row, not just the one compared with the single env
    torch.testing.assert_close(batched["vec64"].account.cash, batched["vmap64"].account.cash, rtol=1e-12, atol=1e-6)
    assert torch.equal(batched["vec64"].account.holdings, batched["vmap64"].account.holdings)
    assert torch.equal(batched["vec64"].account.lot_year_end, batched["vmap64"].account.lot_year_end)


# --- invariants -------------------------------------------------------------------------------------

@pytest.mark.parametrize("execution, action_mode", [("open", "shares"), ("close", "shares"), ("open", "weights")])
def test_invariants_random_batch(sse15, execution, action_mode):
    """>= 1e5 random env-steps on the whole sample: the rules hold on every step."""
    config = EnvConfig(episode_days=120, execution=execution, action_mode=action_mode)
    num_envs, steps = 256, 400
    env = VecStockTradingEnv(sse15.full, num_envs, config, dtype=F64, seed=1)
    checker = Invariants(env.arrays, config)
    generator = torch.Generator().manual_seed(2)
    obs, _ = env.reset()
    done_total = 0
    for _ in range(steps):
        prev = _clone(env.account)
        action = _random_actions(generator, (num_envs, 15))
        obs, reward, terminated, truncated, info = env.step(action)
        done = terminated | truncated
        done_total += int(done.sum())
        checker.check(prev, action, env.account, reward, info["fee"], info["traded_value"], info["wealth"],
                      valid=~done)
        assert torch.isfinite(obs).all() and obs.abs().max() <= 10.0
        assert torch.equal(obs[~done], info["final_obs"][~done])
        if done.any():  # reset rows start over in cash
            assert (env.account.cash[done] == config.initial_cash).all()
            assert (env.account.holdings[done] == 0).all()
            assert torch.equal(env.account.day[done], env.account.start_day[done])
    counts = checker.counts
    assert counts["steps"] + done_total == num_envs * steps >= 100_000
    assert done_total > 0
    # the run exercised the interesting cases
    for name in ("buys", "sells", "corporate_actions", "locked_wanted", "suspended_wanted"):
        assert counts[name] > 0, (name, counts)
    if action_mode == "shares":
        assert counts["odd_lot_sells"] > 0, counts


_ENVS = {}


def _env(market, execution, action_mode):
    key = (execution, action_mode)
    if key not in _ENVS:
        _ENVS[key] = StockTradingEnv(market, EnvConfig(episode_days=None, execution=execution, action_mode=action_mode))
    return _ENVS[key]


_EVENT_DATES = ["2016-06-23", "2017-05-25", "2018-07-05", "2018-05-30", "2017-05-18", "2019-08-20",
                "2019-05-15", "2017-12-05", "2018-06-04", "2017-04-05", "2017-08-21"]
_action = st.floats(-1.0, 1.0, allow_nan=False) | st.sampled_from([0.0, 1.0, -1.0, 0.01, -0.01])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), execution=st.sampled_from(["open", "close"]),
       action_mode=st.sampled_from(["shares", "weights"]),
       actions=st.lists(st.lists(_action, min_size=15, max_size=15), min_size=1, max_size=25))
def test_invariants_hypothesis(sse15, data, execution, action_mode, actions):
    full = sse15.full
    near_event = st.sampled_from(_EVENT_DATES).map(lambda d: _day(full, d)).flatmap(
        lambda d: st.integers(max(0, d - 10), d))
    start = data.draw(st.integers(0, full.num_days - 2) | near_event, label="start_day")
    env = _env(full, execution, action_mode)
    checker = Invariants(env.arrays, env.config)
    env.reset(options={"start_day": start})
    for action in actions:
        prev = _clone(env.account)
        action = torch.tensor(action, dtype=F64)
        obs, reward, terminated, truncated, info = env.step(action.numpy())
        assert env.observation_space.contains(obs)
        checker.check(_batched(prev), action.unsqueeze(0), _batched(env.account), torch.tensor([reward], dtype=F64),
                      torch.tensor([info["fee"]], dtype=F64), torch.tensor([info["traded_value"]], dtype=F64),
                      torch.tensor([info["wealth"]], dtype=F64), valid=torch.tensor([True]))
        assert not terminated
        if truncated:
            assert int(env.account.day) == full.num_days - 1
            break


# --- corporate actions in the env -------------------------------------------------------------------

@pytest.mark.parametrize("execution", ["open", "close"])
@pytest.mark.parametrize("tic, ex_date", [("600276.SH", "2018-05-30"), ("600000.SH", "2017-05-25"),
                                          ("600547.SH", "2019-08-20")])
def test_buy_and_hold_through_ex_rights_day(sse15, tic, ex_date, execution):
    full = sse15.full
    col, ex = full.tickers.index(tic), _day(full, ex_date)
    ratio = float(full.split_ratio[ex, col])
    assert ratio > 1.1 and float(full.close[ex, col] / full.close[ex - 1, col]) < 0.9  # a raw drop > 10 %
    # max_lots large enough that the buy is scaled to (almost) all the cash
    # (the whole day's volume as the open's, so that the open-auction cap does not bind here)
    env = StockTradingEnv(full, EnvConfig(episode_days=None, execution=execution, max_lots=100_000, action_mode="shares",
                                          open_auction_share=1.0))
    env.reset(options={"start_day": ex - 4})
    buy = np.zeros(15)
    buy[col] = 1.0
    env.step(buy)  # fills at the open of ex-3 (or the close of ex-4)
    while int(env.account.day) < ex - 1:
        env.step(np.zeros(15))
    held = float(env.account.holdings[col])
    assert held >= 1000 and held % 100 == 0
    before = env.account.wealth.item()
    cash_before = env.account.cash.item()
    _, reward, _, _, info = env.step(np.zeros(15))
    assert info["traded_value"] == 0 and info["fee"] == 0
    close_before, close_after = float(full.close[ex - 1, col]), float(full.close[ex, col])
    pre_close = float(full.pre_close[ex, col])
    assert held * close_before / before > 0.95  # (almost) all in the stock
    # holdings follow the action: the bonus shares at the close plus the cash paid, within a tick
    # (and a holder loses nothing at the reference price: ratio x reference + cash = last close)
    dividend = float(full.dividend[ex, col])
    assert ratio * pre_close + dividend == pytest.approx(close_before)
    true_value = held * (ratio * close_after + dividend)
    after_value = float(env.account.holdings[col]) * close_after + (env.account.cash.item() - cash_before)
    assert abs(after_value - true_value) <= close_after + held * ratio * rules.TICK
    assert float(env.account.holdings[col]) == np.floor(held * ratio + 1e-6)
    move = info["wealth"] - before
    assert abs(move - (true_value - held * close_before)) <= close_after + held * ratio * rules.TICK
    assert move / before > -0.11  # no fake -20 % loss
    assert reward == pytest.approx(move * env.config.reward_scale / env.config.initial_cash)


# --- truncation, termination, auto-reset -----------------------------------------------------------

def test_horizon_truncation(sse15):
    env = StockTradingEnv(sse15.train, EnvConfig(episode_days=5))
    env.reset(options={"start_day": 10})
    flags = [env.step(env.action_space.sample())[2:4] for _ in range(5)]
    assert flags == [(False, False)] * 4 + [(False, True)]
    assert int(env.account.day) == 15


def test_truncation_at_the_last_day(sse15):
    market = sse15.test
    env = StockTradingEnv(market, EnvConfig(episode_days=250))
    env.reset(options={"start_day": market.num_days - 3})
    assert env.step(np.zeros(15))[3] is False
    _, _, terminated, truncated, info = env.step(np.zeros(15))
    assert (terminated, truncated) == (False, True)
    assert info["day"] == market.num_days - 1 and info["date"] == market.last_date
    env.reset(options={"start_day": market.num_days - 2})
    assert env.step(np.zeros(15))[3] is True


def test_random_start_days_stay_inside_the_data(sse15):
    env = StockTradingEnv(sse15.valid)
    days = {env.reset(seed=s)[1]["day"] for s in range(200)}
    assert min(days) >= 0 and max(days) <= sse15.valid.num_days - 2 and len(days) > 50
    assert env.reset(seed=5)[1]["day"] == env.reset(seed=5)[1]["day"]
    assert StockTradingEnv(sse15.valid, EnvConfig(random_start=False)).reset(seed=5)[1]["day"] == 0


def test_vec_auto_reset(sse15):
    config = EnvConfig(episode_days=3)
    env = VecStockTradingEnv(sse15.train, 8, config, dtype=F64, seed=4)
    env.reset()
    starts = env.account.start_day.clone()
    action = torch.zeros(8, 15, dtype=F64)
    action[:, :] = 0.5
    for step in range(3):
        obs, reward, terminated, truncated, info = env.step(action)
        if step < 2:
            assert not (terminated | truncated).any()
            assert torch.equal(obs, info["final_obs"])
    assert truncated.all() and not terminated.any()
    assert (info["wealth"] != config.initial_cash).all()  # the finished episodes traded
    assert not torch.equal(obs, info["final_obs"])
    for i in range(8):
        assert not torch.equal(obs[i], info["final_obs"][i])
    assert (env.account.cash == config.initial_cash).all()
    assert (env.account.wealth == config.initial_cash).all()
    assert (env.account.holdings == 0).all()
    assert torch.equal(env.account.day, env.account.start_day)
    assert not torch.equal(env.account.start_day, starts)  # fresh random start days
    assert torch.allclose(obs[:, 0], torch.ones(8, dtype=F64))  # the new episodes start in cash


def test_terminated_only_on_ruin(sse15):
    # a 20 % commission costs more than any one-day move inside the ±10 % limit can give back
    config = EnvConfig(ruin_fraction=0.999999, episode_days=10, random_start=False,
                       fees=rules.FeeSchedule(commission_rate=0.2))
    env = StockTradingEnv(sse15.train, config)
    env.reset(options={"start_day": 0})
    for _ in range(3):  # no trade: wealth stays at the initial cash, no ruin
        _, _, terminated, truncated, info = env.step(np.zeros(15))
        assert (terminated, truncated) == (False, False) and info["wealth"] == config.initial_cash
    _, _, terminated, truncated, info = env.step(np.ones(15))
    assert info["fee"] > 0 and info["wealth"] < config.initial_cash * config.ruin_fraction
    assert (terminated, truncated) == (True, False)

    vec = VecStockTradingEnv(sse15.train, 4, config, dtype=F64)
    vec.reset()
    action = torch.zeros(4, 15, dtype=F64)
    action[:2] = 1.0
    _, _, terminated, truncated, info = vec.step(action)
    assert terminated.tolist() == [True, True, False, False] and not truncated.any()
    assert (vec.account.cash[:2] == config.initial_cash).all() and (vec.account.holdings[:2] == 0).all()
    assert (vec.account.wealth[2:] == config.initial_cash).all()


# --- reproducibility ---------------------------------------------------------------------------------

def _trajectory(market, seed, steps=30):
    env = VecStockTradingEnv(market, 16, EnvConfig(episode_days=12), dtype=F64, seed=seed)
    obs, _ = env.reset()
    starts = [env.account.start_day.clone()]
    generator = torch.Generator().manual_seed(0)
    out = [obs]
    for _ in range(steps):
        obs, reward, terminated, truncated, info = env.step(_random_actions(generator, (16, 15)))
        out += [obs, reward, terminated, truncated, info["fee"]]
        starts.append(env.account.start_day.clone())
    return out, starts


def test_vec_reproducible_with_seed(sse15):
    first, starts_a = _trajectory(sse15.train, seed=7)
    second, starts_b = _trajectory(sse15.train, seed=7)
    assert all(torch.equal(a, b) for a, b in zip(first, second))
    assert all(torch.equal(a, b) for a, b in zip(starts_a, starts_b))
    _, starts_c = _trajectory(sse15.train, seed=8)
    assert not torch.equal(starts_a[0], starts_c[0])
    # reset(seed=...) reseeds
    env = VecStockTradingEnv(sse15.train, 16, EnvConfig(), dtype=F64, seed=123)
    env.reset(seed=7)
    assert torch.equal(env.account.start_day, starts_a[0])


# --- execution timing and action modes --------------------------------------------------------------

def _fen(amount: float) -> float:
    return float(np.floor(amount * 100 + 0.5 + 1e-7) / 100)


def test_open_execution_fills_at_next_open(sse15):
    full = sse15.full
    col, start = full.tickers.index("600000.SH"), 200
    assert full.tradable[start + 1, col] and full.open[start + 1, col] < full.up_limit[start + 1, col] - 0.005
    env = StockTradingEnv(full, EnvConfig(episode_days=None, execution="open", action_mode="shares"))
    env.reset(options={"start_day": start})
    action = np.zeros(15)
    action[col] = 1.0
    _, reward, _, _, info = env.step(action)
    # 5 bp against the buyer (an average price: off the tick unless EnvConfig.fill_on_tick)
    price = float(full.open[start + 1, col]) * (1 + env.config.slippage)
    shares = 100 * 100  # max_lots lots of 100
    # far below the participation cap at the open (10 % of the opening auction's share of the day)
    assert shares <= 0.1 * env.config.open_auction_share * float(full.volume[start + 1, col])
    assert float(env.account.holdings[col]) == shares
    assert info["traded_value"] == pytest.approx(shares * price)
    _, transfer = env.config.fees.rates_on([full.dates[start + 1]])
    fee = _fen(max(shares * price * 0.00025, 5.0)) + _fen(shares * price * transfer[0])
    assert info["fee"] == pytest.approx(fee, abs=1e-9)
    assert env.account.cash.item() == pytest.approx(1_000_000 - shares * price - fee)
    assert info["wealth"] == pytest.approx(env.account.cash.item() + shares * float(full.close[start + 1, col]))
    assert reward == pytest.approx((info["wealth"] - 1_000_000) / 1_000_000 * 100)
    assert info["day"] == start + 1 and info["dividend"] == 0.0


def test_close_execution_fills_at_decision_close(sse15):
    full = sse15.full
    col, start = full.tickers.index("600000.SH"), 200
    env = StockTradingEnv(full, EnvConfig(episode_days=None, execution="close", action_mode="shares"))
    env.reset(options={"start_day": start})
    action = np.zeros(15)
    action[col] = 1.0
    _, _, _, _, info = env.step(action)
    price = float(full.close[start, col])
    assert info["traded_value"] == pytest.approx(10_000 * price * 1.0005)
    env = StockTradingEnv(full, EnvConfig(episode_days=None, execution="close", slippage=0.0, action_mode="shares"))
    env.reset(options={"start_day": start})
    _, _, _, _, info = env.step(action)
    assert info["traded_value"] == pytest.approx(10_000 * float(full.close[start, col]))


def test_weights_action_invests_in_one_stock(sse15):
    full = sse15.full
    col, start = full.tickers.index("600036.SH"), 300
    assert full.tradable[start + 1, col]
    for execution in ("open", "close"):
        env = StockTradingEnv(full, EnvConfig(action_mode="weights", execution=execution, episode_days=None,
                                              open_auction_share=1.0))  # the open-auction cap would bind
        env.reset(options={"start_day": start})
        action = -np.ones(15, dtype=np.float32)
        action[col] = 1.0
        obs, _, _, _, info = env.step(action)
        weight = float(env.account.holdings[col] * full.close[start + 1, col]) / info["wealth"]
        assert weight > 0.9, execution
        assert obs[1 + col * (full.num_features + 3)] == pytest.approx(weight, rel=1e-5)
        assert float(env.account.holdings.sum()) == float(env.account.holdings[col])
        # a zero action in weights mode means "all cash": the position is sold the next day
        env.step(np.zeros(15))
        assert float(env.account.holdings[col]) == 0.0


def test_vec_float32_default_runs(sse15):
    env = VecStockTradingEnv(sse15.valid, 32, EnvConfig(episode_days=20))
    obs, _ = env.reset()
    assert obs.dtype == torch.float32 and obs.shape == (32, env.observation_dim)
    generator = torch.Generator().manual_seed(0)
    for _ in range(40):
        obs, reward, terminated, truncated, info = env.step(_random_actions(generator, (32, 15), torch.float32))
        assert torch.isfinite(obs).all() and (env.account.cash >= 0).all() and (env.account.holdings >= 0).all()
    with pytest.raises(ValueError):
        VecStockTradingEnv(sse15.valid, 0)
    with pytest.raises(RuntimeError):
        VecStockTradingEnv(sse15.valid, 2).step(torch.zeros(2, 15))


# --- dividends, the detected ex-rights reference, the participation cap --------------------------------

def _dividend_market(synthetic_bars, dividend=0.30):
    from finrl_tutorial.data import prepare_market

    bars = synthetic_bars(tickers=("600000.SH", "600036.SH", "601398.SH", "600519.SH"), days=40, seed=9)
    bars["pre_close"] = bars.groupby("tic")["close"].shift(1)
    rows = bars.index[bars["tic"] == "600000.SH"]
    ex = rows[20]
    bars.loc[ex, "pre_close"] = round(float(bars.loc[rows[19], "close"]) - dividend, 2)
    market = prepare_market(bars, indicators=(), splits={"train": ("2020-01-01", "2020-12-31")}).full
    return market, int(pd.DatetimeIndex(market.dates).get_loc(bars.loc[ex, "date"]))


@pytest.mark.parametrize("execution", ["open", "close"])
def test_cash_dividend_paid_on_the_ex_day(synthetic_bars, execution):
    """Ex-dividend day: cash up by shares × ¥0.30, shares unchanged, wealth moves only with the
    price net of the dividend (no fake loss); the backtest record shows the dividend."""
    from finrl_tutorial.backtest.runner import run_policy

    market, ex = _dividend_market(synthetic_bars)
    env = StockTradingEnv(market, EnvConfig(episode_days=None, execution=execution, action_mode="shares"))
    env.reset(options={"start_day": ex - 5})
    buy = np.zeros(4)
    buy[0] = 0.1  # 10 lots
    env.step(buy)
    while int(env.account.day) < ex - 1:
        env.step(np.zeros(4))
    held, cash, wealth = float(env.account.holdings[0]), env.account.cash.item(), env.account.wealth.item()
    assert held == 1000
    _, _, _, _, info = env.step(np.zeros(4))
    assert info["dividend"] == pytest.approx(1000 * 0.30, abs=1e-9)
    assert float(env.account.holdings[0]) == held
    assert env.account.cash.item() == pytest.approx(cash + 300.0, abs=1e-9)
    reference = float(market.pre_close[ex, 0])
    assert reference == pytest.approx(float(market.close[ex - 1, 0]) - 0.30, abs=1e-9)
    assert info["wealth"] - wealth == pytest.approx(held * (float(market.close[ex, 0]) - reference), abs=1e-6)
    # in a backtest record
    calls = [0]

    def policy(obs):
        calls[0] += 1
        return torch.tensor([buy]) if calls[0] == 1 else torch.zeros(1, 4)

    record = run_policy(policy, market.slice_days(ex - 5, market.num_days), EnvConfig(execution=execution, action_mode="shares"))
    assert record.dividends.sum() == pytest.approx(300.0, abs=1e-9)
    assert record.dividends[pd.Timestamp(market.dates[ex])] == pytest.approx(300.0, abs=1e-9)


def test_detected_ex_rights_day_keeps_the_holder_at_the_reference(sse15):
    """600276.SH 2018-05-30, from bars alone: the reference is estimated from the ex-day's open
    (net of the market's opening move) inside the range the day's prices allow under the ±10 %
    limit, split into whole bonus shares per 10 and cash; the holder's ex-day change is then the
    stock's own close over that reference, and the day's prices lie inside its limits."""
    full = sse15.full
    col, ex = full.tickers.index("600276.SH"), _day(full, "2018-05-30")
    (evidence,) = [e for e in full.info["detected_actions"] if (e["tic"], e["date"]) == ("600276.SH", "2018-05-30")]
    close = full.close.numpy()
    reference, ratio, dividend = (float(full.pre_close[ex, col]), float(full.split_ratio[ex, col]),
                                  float(full.dividend[ex, col]))
    low, high = evidence["feasible_reference"]
    assert low <= reference <= high and reference == evidence["reference"]
    assert round(ratio - 1, 10) * 10 == int(round((ratio - 1) * 10))  # whole shares per 10
    assert ratio * reference + dividend == pytest.approx(close[ex - 1, col])
    assert float(full.down_limit[ex, col]) <= evidence["low"] and evidence["high"] <= float(full.up_limit[ex, col])
    env = StockTradingEnv(full, EnvConfig(episode_days=None, random_start=False, action_mode="shares"))
    env.reset(options={"start_day": ex - 4})
    buy = np.zeros(15)
    buy[col] = 1.0  # 100 lots
    env.step(buy)
    while int(env.account.day) < ex - 1:
        env.step(np.zeros(15))
    held = float(env.account.holdings[col])
    value_before = held * close[ex - 1, col]
    cash_before = env.account.cash.item()
    env.step(np.zeros(15))
    value_after = float(env.account.holdings[col]) * close[ex, col] + env.account.cash.item() - cash_before
    own_move = (ratio * close[ex, col] + dividend) / close[ex - 1, col] - 1
    # within the fraction of one share paid out at the reference price
    assert value_after / value_before - 1 == pytest.approx(own_move, abs=close[ex, col] / value_before)


def test_participation_cap_in_the_env(synthetic_bars):
    from finrl_tutorial.data import prepare_market

    bars = synthetic_bars(days=20, seed=10)
    bars["volume"] = 25_000.0  # 10 % = 2,500 shares a day
    market = prepare_market(bars, indicators=()).full
    env = StockTradingEnv(market, EnvConfig(episode_days=None, action_mode="shares", open_auction_share=1.0))
    env.reset(options={"start_day": 2})
    env.step(np.array([1.0, 0.0]))  # asks for 100 lots = 10,000 shares
    assert float(env.account.holdings[0]) == 2_500
    env.step(np.array([1.0, 0.0]))
    assert float(env.account.holdings[0]) == 5_000
    # at the open only the auction's share of the day trades: 10 % of 1/48 of 25,000 = 52 shares, under a lot
    auction = StockTradingEnv(market, EnvConfig(episode_days=None, action_mode="shares"))
    auction.reset(options={"start_day": 2})
    auction.step(np.array([1.0, 0.0]))
    assert float(auction.account.holdings[0]) == 0
    bars["open_volume"] = 50_000.0  # the data's own auction volume wins: 5,000 shares
    with_open = prepare_market(bars, indicators=()).full
    assert "open_volume" not in with_open.feature_names
    auction = StockTradingEnv(with_open, EnvConfig(episode_days=None, action_mode="shares"))
    auction.reset(options={"start_day": 2})
    auction.step(np.array([1.0, 0.0]))
    assert float(auction.account.holdings[0]) == 5_000
    uncapped = StockTradingEnv(market, EnvConfig(episode_days=None, max_participation=float("inf"), action_mode="shares"))
    uncapped.reset(options={"start_day": 2})
    uncapped.step(np.array([1.0, 0.0]))
    assert float(uncapped.account.holdings[0]) == 10_000
