"""The individual dividend tax (`EnvConfig.dividend_tax`): one table row per case through the
public API (`prepare_market` with a dividend table, the envs), an independent first-in first-out
reference in plain Python, the single, batched and vmap envs agreeing, and resume."""
from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
import torch
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from finrl_tutorial import rules
from finrl_tutorial.agents.collect import EnvCollector
from finrl_tutorial.data import prepare_market
from finrl_tutorial.envs import EnvConfig, StockTradingEnv, VecStockTradingEnv, VmapStockTradingEnv
from finrl_tutorial.errors import ConfigError

F64 = torch.float64
TAXED = EnvConfig(episode_days=None, random_start=False, action_mode="shares", dividend_tax=True)


def _market(start, end, actions, tickers=("600000.SH",)):
    """Flat prices on exchange days; ``actions`` = {ex-date: (cash per share, bonus shares per
    share)} of the first stock, announced (a provider's dividend table), the price stepping to the
    ex-rights reference on each."""
    dates = rules.exchange_sessions(start, end)
    frames = []
    for j, tic in enumerate(tickers):
        price, cash, bonus = np.full(len(dates), 10.0 * (1 + j)), np.zeros(len(dates)), np.zeros(len(dates))
        for date, (dividend, shares) in (actions.items() if j == 0 else ()):
            i = dates.get_loc(pd.Timestamp(date))
            price[i:] = np.round((price[i - 1] - dividend) / (1 + shares), 2)
            cash[i], bonus[i] = dividend, shares
        frames.append(pd.DataFrame({"date": dates, "tic": tic, "open": price, "high": price + 0.02,
                                    "low": price - 0.02, "close": price, "volume": 1e7, "cash_dividend": cash,
                                    "bonus_shares": bonus}))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return prepare_market(pd.concat(frames, ignore_index=True), indicators=(),
                              splits={"train": (start, end)}).full


def _trade(market, orders, config=TAXED):
    """Fill ``orders`` ({fill date: shares-mode action of the first stock}; 0.1 = 1,000 shares,
    -1 = sell all) from day 0 to the end: the env and each step's info."""
    env = StockTradingEnv(market, config)
    env.reset(options={"start_day": 0})
    dates = pd.DatetimeIndex(market.dates)
    infos = []
    for day in range(market.num_days - 1):
        action = np.zeros(market.num_stocks)
        action[0] = orders.get(str(dates[day + 1].date()), 0.0)
        infos.append(env.step(action)[4])
    return env, infos


def _taxes(infos):
    return {info["date"]: round(info["dividend_tax"], 6) for info in infos if info["dividend_tax"]}


D = 0.5  # cash dividend per share
CASES = [
    # (case, period, ex-days, orders, tax withheld by date)
    ("held 25 days: all of it at 20 %", ("2019-01-02", "2020-06-30"), {"2019-03-15": (D, 0)},
     {"2019-02-25": 0.1, "2019-03-22": -1}, {"2019-03-22": 1000 * D * 0.20}),
    ("held 3 months: half at 20 %", ("2019-01-02", "2020-06-30"), {"2019-03-15": (D, 0)},
     {"2019-02-25": 0.1, "2019-05-27": -1}, {"2019-05-27": 1000 * D * 0.10}),
    ("held 400 days: exempt", ("2019-01-02", "2020-06-30"), {"2019-03-15": (D, 0)},
     {"2019-02-25": 0.1, "2020-03-31": -1}, {}),
    ("bought 01-31, sold 02-28: one month", ("2019-01-02", "2019-06-28"), {"2019-02-15": (D, 0)},
     {"2019-01-31": 0.1, "2019-02-28": -1}, {"2019-02-28": 1000 * D * 0.20}),
    ("bought 01-31, sold 03-01: over a month", ("2019-01-02", "2019-06-28"), {"2019-02-15": (D, 0)},
     {"2019-01-31": 0.1, "2019-03-01": -1}, {"2019-03-01": 1000 * D * 0.10}),
    ("bought 2019-02-25, sold 2020-02-25: one year", ("2019-01-02", "2020-06-30"), {"2019-03-15": (D, 0)},
     {"2019-02-25": 0.1, "2020-02-25": -1}, {"2020-02-25": 1000 * D * 0.10}),
    ("bought 2019-02-25, sold 2020-02-26: over a year", ("2019-01-02", "2020-06-30"), {"2019-03-15": (D, 0)},
     {"2019-02-25": 0.1, "2020-02-26": -1}, {}),
    ("no dividend received: no tax", ("2019-01-02", "2019-12-31"), {"2019-03-15": (D, 0)},
     {"2019-03-18": 0.1, "2019-03-25": -1}, {}),
    ("FIFO: the older lot sells first", ("2019-01-02", "2019-12-31"), {"2019-03-15": (D, 0)},
     {"2019-03-01": 0.1, "2019-03-20": 0.1, "2019-03-27": -0.15}, {"2019-03-27": 1000 * D * 0.20}),
    ("FIFO: across two lots, one over a month", ("2019-01-02", "2019-12-31"), {"2019-03-15": (D, 0)},
     {"2019-02-01": 0.1, "2019-03-11": 0.1, "2019-03-27": -0.15},
     {"2019-03-27": 1000 * D * 0.10 + 500 * D * 0.20}),
    ("bonus shares follow their lot (10送5)", ("2019-01-02", "2019-12-31"), {"2019-03-15": (D, 0.5)},
     {"2019-03-01": 0.1, "2019-03-22": -1}, {"2019-03-22": 1000 * D * 0.20}),
    ("85号 (2014): 5 % at payment, 15 % more at a sale within a month", ("2014-01-02", "2015-06-30"),
     {"2014-03-14": (D, 0)}, {"2014-03-03": 0.1, "2014-03-21": -1},
     {"2014-03-14": 1000 * D * 0.05, "2014-03-21": 1000 * D * 0.15}),
    ("85号 (2014): held 400 days, 5 % at payment only", ("2014-01-02", "2015-06-30"), {"2014-03-14": (D, 0)},
     {"2014-03-03": 0.1, "2015-04-09": -1}, {"2014-03-14": 1000 * D * 0.05}),
    ("ex-day 2015-09-08: record date 09-07, still 85号", ("2015-08-03", "2016-12-30"), {"2015-09-08": (D, 0)},
     {"2015-08-05": 0.1, "2016-09-06": -1}, {"2015-09-08": 1000 * D * 0.05}),
    ("ex-day 2015-09-09: record date 09-08, 101号", ("2015-08-03", "2016-12-30"), {"2015-09-09": (D, 0)},
     {"2015-08-05": 0.1, "2016-09-06": -1}, {}),
    ("2012: 10 % at payment, nothing at the sale", ("2012-01-04", "2012-12-31"), {"2012-06-15": (D, 0)},
     {"2012-06-01": 0.1, "2012-06-20": -1}, {"2012-06-15": 1000 * D * 0.10}),
]


@pytest.mark.parametrize("case, period, ex_days, orders, expected", CASES, ids=[c[0] for c in CASES])
def test_dividend_tax_table(case, period, ex_days, orders, expected):
    market = _market(*period, ex_days)
    env, infos = _trade(market, orders)
    assert _taxes(infos) == pytest.approx({k: round(v, 6) for k, v in expected.items()}, abs=1e-6)
    # the tax leaves the cash, and nothing else changes (no buy after the sale here)
    untaxed, plain = _trade(market, orders, replace(TAXED, dividend_tax=False))
    assert sum(i["dividend"] for i in infos) == pytest.approx(sum(i["dividend"] for i in plain))
    assert torch.equal(env.account.holdings, untaxed.account.holdings)
    assert untaxed.account.cash.item() - env.account.cash.item() == pytest.approx(sum(expected.values()), abs=1e-6)
    assert all(i["dividend_tax"] == 0.0 for i in plain)


def test_lots_over_a_year_leave_the_ledger_and_one_lot_per_purchase():
    market = _market("2019-01-02", "2020-06-30", {"2019-03-15": (D, 0)})
    env, _ = _trade(market, {"2019-02-25": 0.1, "2019-03-04": 0.1, "2020-03-02": 0.1})
    shares, year_end = env.account.lot_shares[0], env.account.lot_year_end[0]
    # the two 2019 lots are over a year old by the end: only the 2020 purchase is left
    assert shares.tolist()[:2] == [1000.0, 0.0]
    assert int(year_end[0]) == (pd.Timestamp("2021-03-02") - pd.Timestamp("1970-01-01")).days
    assert float(env.account.holdings[0]) == 3000.0


@pytest.mark.parametrize("lots, tax", [(3, 1000 * 2 * D * 0.10 + 1000 * D * 0.10), (2, 2000 * 2 * D * 0.10)])
def test_merged_lots_err_towards_more_tax(lots, tax):
    """Three purchases with an ex-day between each: with room for 3 lots the tax is exact (A
    received two dividends, B one, C none; A and B held over a month: 10 %); with 2, A and B
    (the closer pair) merge under B's date and A's larger tax per share: ¥50 (33 %) too much."""
    market = _market("2019-01-02", "2019-12-31", {"2019-03-15": (D, 0), "2019-04-15": (D, 0)})
    orders = {"2019-03-01": 0.1, "2019-03-20": 0.1, "2019-04-22": 0.1, "2019-04-26": -1}
    _, infos = _trade(market, orders, replace(TAXED, tax_lots=lots))
    assert _taxes(infos) == pytest.approx({"2019-04-26": tax}, abs=1e-6)


# --- an independent reference: plain Python lots, pandas dates ----------------------------------------

def _reference_tax(market, history):
    """The tax of a trajectory, lot by lot in plain Python: ``history`` is per step (day index,
    holdings before, holdings after, shares bought) of open-execution steps. Returns the tax per step."""
    dates = pd.DatetimeIndex(market.dates)
    rates = rules.dividend_tax_rates(dates[np.maximum(np.arange(len(dates)) - 1, 0)])
    dividend, ratio = market.dividend.numpy(), market.split_ratio.numpy()
    lots = [[] for _ in range(market.num_stocks)]  # [shares, buy date, due within a month, within a year]
    taxes = []
    for day, before, after, bought in history:
        tax = 0.0
        for s, stock_lots in enumerate(lots):
            held = before[s]
            tax += held * dividend[day, s] * rates["withheld"][day]
            whole = np.floor(held * ratio[day, s] + 1e-6)
            factor = whole / held if held > 0 else 0.0
            for lot in stock_lots:
                lot[2] += dividend[day, s] * rates["due_within_month"][day]
                lot[3] += dividend[day, s] * rates["due_within_year"][day]
                lot[0] *= factor
                lot[2], lot[3] = (lot[2] / factor, lot[3] / factor) if factor > 0 else (0.0, 0.0)
            to_sell = whole - (after[s] - bought[s])
            for lot in stock_lots:
                take = min(lot[0], max(to_sell, 0.0))
                if take <= 0:
                    break
                sale = dates[day]
                if sale <= lot[1] + pd.DateOffset(months=1):
                    tax += take * lot[2]
                elif sale <= lot[1] + pd.DateOffset(years=1):
                    tax += take * lot[3]
                lot[0] -= take
                to_sell -= take
            lots[s] = [lot for lot in stock_lots if lot[0] > 1e-6] if after[s] > 0 else []
            if bought[s] > 0:
                lots[s].append([bought[s], dates[day], 0.0, 0.0])
        taxes.append(tax)
    return np.array(taxes)


def _random_run(market, actions, config):
    env = StockTradingEnv(market, config)
    env.reset(options={"start_day": 0})
    history, taxes, dividends = [], [], []
    for action in actions:
        before = env.account.holdings.numpy().copy()
        info = env.step(action)[4]
        history.append((info["day"], before, env.account.holdings.numpy().copy(), env.account.bought.numpy().copy()))
        taxes.append(info["dividend_tax"])
        dividends.append(info["dividend"])
    return np.array(taxes), np.array(dividends), history


# three ex-days (one with bonus shares) on stock 0 and one on stock 1, in 2018-2019
_EX_DAYS = {"2018-03-15": (0.4, 0.0), "2018-06-15": (0.3, 0.3), "2018-09-14": (0.2, 0.0), "2019-01-18": (0.5, 0.0)}


@pytest.fixture(scope="module")
def dividend_market():
    return _market("2018-01-02", "2019-06-28", _EX_DAYS, tickers=("600000.SH", "600036.SH"))


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**31 - 1), trade_probability=st.floats(0.05, 0.8))
@example(seed=54862698, trade_probability=0.5)  # a cash-bound buy that the merged ledger's extra tax shrinks
def test_tax_matches_the_reference_and_stays_within_20_percent(dividend_market, seed, trade_probability):
    """Random buys and sells (each day a stock trades with some probability): the env's tax is the
    plain-Python reference's, every step; never negative; in total at most 20 % of the dividends
    received; with K = 2 lots the merges err towards more tax, never less."""
    rng = np.random.default_rng(seed)
    steps = dividend_market.num_days - 1
    actions = np.where(rng.random((steps, 2)) < trade_probability, rng.uniform(-0.3, 0.3, (steps, 2)), 0.0)
    config = replace(TAXED, tax_lots=64)
    taxes, dividends, history = _random_run(dividend_market, actions, config)
    np.testing.assert_allclose(taxes, _reference_tax(dividend_market, history), atol=1e-6)
    assert (taxes >= 0).all() and taxes.sum() <= 0.2 * dividends.sum() + 1e-6
    merged, _, merged_history = _random_run(dividend_market, actions, replace(TAXED, tax_lots=2))
    # the extra tax can shrink a cash-bound buy, so the trades may differ: compare each run with the
    # exact tax of its own trades
    assert merged.sum() >= _reference_tax(dividend_market, merged_history).sum() - 1e-6 and (merged >= 0).all()


def test_without_dividends_the_tax_changes_nothing(synthetic_bars):
    """On a market with no dividend, the env with the tax on steps exactly as with it off."""
    bars = synthetic_bars(tickers=("600000.SH", "600036.SH", "601398.SH"), days=60, seed=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (weekday dates, some of them holidays)
        market = prepare_market(bars, indicators=(), splits={"train": ("2020-01-01", "2020-12-31")}).full
    actions = torch.rand(59, 3, generator=torch.Generator().manual_seed(0), dtype=F64) * 2 - 1
    runs = []
    for tax in (False, True):
        env = StockTradingEnv(market, EnvConfig(episode_days=None, dividend_tax=tax))
        env.reset(options={"start_day": 0})
        runs.append([(env.step(a.numpy())[1], env.account.cash.item(), env.account.holdings.clone()) for a in actions])
    for (r0, c0, h0), (r1, c1, h1) in zip(*runs):
        assert r0 == r1 and c0 == c1 and torch.equal(h0, h1)


# --- the three envs agree; resume -------------------------------------------------------------------

@pytest.mark.parametrize("execution", ["open", "close"])
def test_single_vec_vmap_agree_with_the_tax(dividend_market, execution):
    config = replace(TAXED, execution=execution, tax_lots=3)
    steps = 180  # three ex-days, one with bonus shares, and the sales after them
    generator = torch.Generator().manual_seed(5)
    actions = (torch.rand(steps, 4, 2, generator=generator, dtype=F64) * 0.6 - 0.3)
    actions = torch.where(torch.rand(steps, 4, 2, generator=generator, dtype=F64) < 0.3, actions, 0.0)
    single = StockTradingEnv(dividend_market, config)
    single.reset(options={"start_day": 0})
    batched = [cls(dividend_market, 4, config, dtype=F64) for cls in (VecStockTradingEnv, VmapStockTradingEnv)]
    for env in batched:
        env.reset(options={"start_day": 0})
    total = 0.0
    for step in range(steps):
        info = single.step(actions[step, 1].numpy())[4]
        total += info["dividend_tax"]
        for env in batched:
            binfo = env.step(actions[step])[4]
            assert float(binfo["dividend_tax"][1]) == pytest.approx(info["dividend_tax"], abs=1e-9)
            assert float(env.account.cash[1]) == pytest.approx(single.account.cash.item(), abs=1e-6)
            assert torch.equal(env.account.holdings[1], single.account.holdings)
            assert torch.equal(env.account.lot_year_end[1], single.account.lot_year_end)
            torch.testing.assert_close(env.account.lot_shares[1], single.account.lot_shares)
    assert total > 0
    for a, b in zip(*(env.account for env in batched)):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-9)


def test_resume_continues_the_ledger_exactly(dividend_market):
    """A collector's state (the accounts with their lots) restored into a fresh env continues
    exactly as the uninterrupted one."""
    config = EnvConfig(action_mode="shares", dividend_tax=True, tax_lots=3, episode_days=120)
    taxes = []
    weight_columns = [1, 5]  # each stock's portfolio weight in the observation (1 feature)

    def step_rollout(env, agent, rollout, obs):  # a deterministic policy: buy when out, sell when in
        for _ in range(rollout.obs.shape[0]):
            obs, _, _, _, info = env.step(0.3 - 0.6 * (obs[:, weight_columns].to(F64) > 0.01).to(F64))
            taxes.append(info["dividend_tax"].clone())
        return obs

    def collect(c):
        taxes.clear()
        c.collect(None, 40)
        return torch.stack(taxes)

    def collector():
        c = EnvCollector(VecStockTradingEnv(dividend_market, 8, config, dtype=F64, seed=4), step_rollout)
        c.reset(seed=4)
        return c

    first = collector()
    for _ in range(3):
        collect(first)
    state = first.state_dict()
    going_on = [collect(first) for _ in range(3)]
    resumed = collector()
    resumed.load_state_dict(state)
    again = [collect(resumed) for _ in range(3)]
    assert sum(float(t.sum()) for t in going_on) > 0
    for a, b in zip(going_on, again):
        assert torch.equal(a, b)
    for a, b in zip(first.env.account, resumed.env.account):
        assert torch.equal(a, b)
    older = dict(state, env_account={k: v for k, v in state["env_account"].items() if not k.startswith("lot_")})
    with pytest.raises(ConfigError, match="lacks lot_shares.*older version"):
        collector().load_state_dict(older)  # a checkpoint written before the ledger: one line, not a KeyError


def test_the_taxed_step_compiles_as_one_graph(dividend_market):
    """The ledger is pure tensor code too: ``torch.compile(fullgraph=True)`` (the CUDA-graph and
    compile paths) takes the taxed step whole, and it matches the eager step."""
    config = EnvConfig(action_mode="shares", dividend_tax=True, tax_lots=2, episode_days=120)
    compiled_env, eager_env = (VecStockTradingEnv(dividend_market, 8, config, dtype=F64, seed=2) for _ in range(2))
    compiled_env.reset(), eager_env.reset()
    step = torch.compile(compiled_env.step, backend="eager", fullgraph=True, dynamic=False)
    generator = torch.Generator().manual_seed(0)
    taxed = 0.0
    for _ in range(80):
        action = torch.rand(8, 2, generator=generator, dtype=F64) * 0.6 - 0.3
        got, want = step(action), eager_env.step(action)
        for a, b in zip(got[:4], want[:4]):
            assert torch.equal(a, b)
        assert torch.equal(got[4]["dividend_tax"], want[4]["dividend_tax"])
        taxed += float(want[4]["dividend_tax"].sum())
    assert taxed > 0
    for a, b in zip(compiled_env.account, eager_env.account):
        assert torch.equal(a, b)


def test_bench_env_measures_the_tax_off_and_on(capsys):
    """``bench env --dividend-tax off on``: one record per setting, in one run (the cost is their ratio)."""
    import json

    from finrl_tutorial import cli

    code = cli.main(["bench", "env", "--env", "vec", "--num-envs", "4", "--seconds", "0.1",
                     "--dividend-tax", "off", "on"])
    out, err = capsys.readouterr()
    assert code == 0, err
    records = [json.loads(line) for line in out.strip().splitlines()]
    assert [r["dividend_tax"] for r in records] == [False, True]
    assert all(r["env_steps_per_s"] > 0 for r in records)
    with pytest.raises(SystemExit) as exit_:
        cli.main(["bench", "env", "--dividend-tax", "maybe"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and len(err.strip().splitlines()) == 1 and "--dividend-tax" in err


def test_worker_processes_resume_the_ledger(dividend_market):
    """The same with rollout workers: their accounts, lots included, travel through a checkpoint
    into fresh processes, and the next rollout is the uninterrupted one's."""
    from finrl_tutorial.agents import ActorCritic, make_config
    from finrl_tutorial.training import WorkerPool

    torch.manual_seed(0)
    config = make_config("ppo", num_envs=4, horizon_len=60, batch_size=60, total_steps=480)
    env_config = EnvConfig(dividend_tax=True, tax_lots=3, episode_days=120)
    agent = ActorCritic.from_config(VecStockTradingEnv(dividend_market, 1, env_config).observation_dim, 2, config,
                                   env_config.action_mode)

    def pool():
        return WorkerPool(dividend_market, config, env_config, num_workers=2, seed=3, learner_threads=1)

    with pool() as workers:
        workers.reset(3)
        for _ in range(2):
            workers.collect(agent)
        state = workers.state_dict()
        going_on = workers.collect(agent).rewards.clone()
        ended = workers.state_dict()["workers"]
    assert any(np.asarray(w["env_account"]["lot_shares"]).any() for w in state["workers"])
    with pool() as workers:
        workers.load_state_dict(state)
        again = workers.collect(agent).rewards.clone()
        ended_again = workers.state_dict()["workers"]
    assert torch.equal(going_on, again)
    for a, b in zip(ended, ended_again):
        for name in ("lot_shares", "lot_year_end", "lot_due_month", "cash"):
            np.testing.assert_array_equal(a["env_account"][name], b["env_account"][name])


def test_the_backtest_records_the_tax_withheld(dividend_market):
    """`run_policy`'s record carries the tax of each day: zero with the option off, and with it on
    the withheld total of a policy that buys and sells around the ex-days, no more than 20 % of its
    dividends."""
    from finrl_tutorial.backtest.runner import run_policy

    flip = iter(range(10**6))
    policy = lambda obs: torch.full((1, 2), 0.3 if next(flip) % 20 < 10 else -0.3, dtype=obs.dtype)  # noqa: E731
    taxed = run_policy(policy, dividend_market, TAXED)
    flip = iter(range(10**6))
    untaxed = run_policy(policy, dividend_market, replace(TAXED, dividend_tax=False))
    assert (untaxed.dividend_tax == 0).all() and taxed.dividend_tax.index.equals(taxed.wealth.index)
    assert 0 < taxed.dividend_tax.sum() <= 0.2 * taxed.dividends.sum() + 1e-6
