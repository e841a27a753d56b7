"""Reliability: no bad input passes silently, no run overwrites another, a checkpoint carries its
whole pipeline (issue 12).

- A table of bad inputs (data, options, configs, actions, checkpoints), each with the fragment its
  one-line message must contain; a representative subset goes through the CLI in a subprocess.
- Property tests (hypothesis): the schema never lets a non-finite or inconsistent bar through
  and never rejects a valid one.
- Run folders: a second run is refused, ``--resume`` continues bit-exactly, a concurrent run is
  refused, the default name moves on to a fresh folder.
- A backtest on a shifted window sees exactly the features the agent was trained on.
"""
import dataclasses
import functools
import json
import os
import pickle
import stat
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from finrl_tutorial import cli
from finrl_tutorial.agents import PPOConfig, make_config
from finrl_tutorial.atomic import atomic_open
from finrl_tutorial.data import DataError, load_market, prepare_market, validate_bars
from finrl_tutorial.data.clean import check_split_lengths
from finrl_tutorial.data.schema import canonical_ticker, parse_dates
from finrl_tutorial.backtest.runner import agent_policy, backtest, run_policy
from finrl_tutorial.bench import market_with_stocks, measure_env, timed
from finrl_tutorial.envs import EnvConfig, StockTradingEnv, VecStockTradingEnv, VmapStockTradingEnv
from finrl_tutorial.errors import ConfigError, DataWarning, InputError, RunFolderError
from finrl_tutorial.rules import FeeSchedule
from finrl_tutorial.training import load_checkpoint, runs
from finrl_tutorial.agents import ppo as ppo_module
from finrl_tutorial.training import trainer as trainer_module

torch.set_num_threads(1)
ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.filterwarnings("ignore:The inplace keyword in DataFrame.set_index")
TINY = ["--total-steps", "1024", "--num-envs", "8", "--horizon-len", "32", "--eval-every", "2", "--no-progress"]


def bars(days=30, start="2020-01-02", tickers=("600000.SH", "600036.SH"), seed=0):
    """A small valid bar table (random walks inside the limits), as a user would write it."""
    rng = np.random.default_rng(seed)
    dates = pd.bdate_range(start, periods=days)
    parts = []
    for j, tic in enumerate(tickers):
        close = np.round(10.0 * (1 + j) * np.cumprod(1 + rng.uniform(-0.03, 0.03, days)), 2)
        open_ = np.round(close * (1 + rng.uniform(-0.01, 0.01, days)), 2)
        parts.append(pd.DataFrame({"date": dates.strftime("%Y-%m-%d"), "tic": tic, "open": open_,
                                   "high": np.maximum(open_, close) + 0.05, "low": np.minimum(open_, close) - 0.05,
                                   "close": close, "volume": rng.integers(1, 100, days) * 1e4}))
    return pd.concat(parts, ignore_index=True)


def _cell(column, value, row=3):
    def change(frame):
        frame = frame.astype({column: object}) if column in frame and isinstance(value, str) else frame
        frame.loc[row, column] = value
        return frame
    return change


def _dates(fmt, start="2020-01-02", days=30):
    """The dates rewritten in another format (``start``/``days`` pick which dates)."""
    return lambda frame: bars(days=days, start=start).assign(
        date=lambda f: pd.to_datetime(f["date"]).dt.strftime(fmt))


def _factor(values):
    return lambda frame: frame.assign(f=np.resize(np.asarray(values, dtype=object), len(frame)))


normal = np.random.default_rng(1).normal(size=60)

# (what, change(frame) -> frame, fragment of the one-line message); validated by validate_bars
BAD_BARS = [
    ("missing column", lambda f: f.drop(columns=["close"]), "missing required column(s): close"),
    ("duplicate column after lower-casing", lambda f: f.assign(Close=f["close"]), "duplicate column name"),
    ("no rows", lambda f: f.iloc[:0], "no rows"),
    ("NaN price", _cell("close", np.nan), "NaN in price column 'close'"),
    ("inf price", _cell("high", np.inf), "non-finite price in column 'high'"),
    ("zero price", _cell("open", 0.0), "price <= 0 in column 'open'"),
    ("negative price", _cell("low", -1.0), "price <= 0 in column 'low'"),
    ("text in a price", _cell("close", "n/a"), "non-numeric value(s) in column 'close'"),
    ("high below low", lambda f: f.assign(high=np.where(f.index == 4, f["low"] - 1, f["high"])), "high < low"),
    ("open above high", lambda f: f.assign(open=np.where(f.index == 4, f["high"] + 1, f["open"])),
     "open outside [low, high]"),
    ("close below low", lambda f: f.assign(close=np.where(f.index == 5, f["low"] - 0.5, f["close"])),
     "close outside [low, high]"),
    ("missing volume", _cell("volume", np.nan), "missing volume"),
    ("negative volume", _cell("volume", -5.0), "negative volume"),
    ("inf volume", _cell("volume", np.inf), "non-finite volume"),
    ("ambiguous day-first dates", _dates("%d/%m/%Y", start="2020-03-02", days=8), "ambiguous dates"),
    ("mixed date formats", lambda f: f.assign(date=f["date"].where(f.index != 2, "03/01/2020")), "mix formats"),
    ("unparseable date", _cell("date", "2016-13-45"), "unparseable date(s) in column 'date': '2016-13-45'"),
    ("missing date", _cell("date", None), "missing date(s)"),
    ("Excel serial dates", lambda f: f.assign(date=43831 + f.index), "not YYYYMMDD"),
    ("time zone on some dates only", lambda f: f.assign(date=f["date"].where(f.index != 1, "2020-01-03 09:30:00+08:00")),
     "mix time zones"),
    ("ticker without an exchange", _cell("tic", "123456"), "cannot tell the exchange"),
    ("missing ticker", _cell("tic", None), "missing ticker"),
    ("one stock spelled two ways on one day", lambda f: pd.concat([f, f.iloc[[0]].assign(tic="sh.600000")]),
     "spelled"),
    ("duplicate row", lambda f: pd.concat([f, f.iloc[[7]]], ignore_index=True), "duplicate (date, tic)"),
    ("intraday bars", lambda f: pd.concat([f.assign(date=f["date"] + " 09:30:00"), f.assign(date=f["date"] + " 10:30:00")],
                                          ignore_index=True), "the bars must be daily"),
    ("too little history", lambda f: pd.concat([f, f.iloc[[0]].assign(tic="600519.SH")], ignore_index=True),
     "too little history"),
    ("text cell in a user factor", _factor([1.0, 2.0, "oops", 3.0]), "non-numeric value(s) in user factor 'f'"),
    ("inf in a user factor", _factor([1.0, np.inf, 2.0]), "non-finite value in user factor 'f'"),
    ("an empty user factor", lambda f: f.assign(f=np.nan), "has no values at all"),
    ("one huge value in a user factor", lambda f: f.assign(f=np.r_[1e12, normal[:len(f) - 1]]), "swamps"),
    ("a user factor beyond 1e100", lambda f: f.assign(f=np.r_[1e300, normal[:len(f) - 1]]), "beyond"),
    ("a factor named like the cleaning's own columns", lambda f: f.assign(split_ratio=1.0),
     "name the cleaning uses"),
    ("pre_close <= 0", lambda f: f.assign(pre_close=f["close"].where(f.index != 3, -1.0)), "pre_close <= 0"),
    ("pre_close in fen", lambda f: f.assign(pre_close=f["close"] * 100), "pre_close far from"),
    ("inf pre_close", lambda f: f.assign(pre_close=f["close"].where(f.index != 3, np.inf)),
     "non-finite value in column 'pre_close'"),
    ("amount in thousands of yuan", lambda f: f.assign(amount=f["close"] * f["volume"] / 1000), "amount / volume"),
    ("volume in lots", lambda f: f.assign(amount=f["close"] * f["volume"], volume=f["volume"] / 100),
     "amount / volume"),
    ("adj_factor <= 0", lambda f: f.assign(adj_factor=0.0), "adj_factor <= 0"),
    ("high above up_limit", lambda f: f.assign(up_limit=f["high"] - 0.02), "high above up_limit"),
    ("down_limit above up_limit", lambda f: f.assign(up_limit=f["high"] + 1, down_limit=f["high"] + 2),
     "down_limit > up_limit"),
    ("is_st not a flag", lambda f: f.assign(is_st=2), "is_st not 0 or 1"),
]


@pytest.mark.parametrize("what,change,fragment", BAD_BARS, ids=[case[0] for case in BAD_BARS])
def test_bad_bars_are_refused_in_one_line(what, change, fragment):
    frame = change(bars())
    with pytest.raises(DataError) as caught:
        validate_bars(frame)
    message = str(caught.value)
    assert fragment in message and "\n" not in message, message
    with pytest.raises(DataError, match=None):  # the API entry refuses them alike
        load_market(frame)


def test_messages_name_row_and_value():
    with pytest.raises(DataError) as caught:
        validate_bars(_factor([1.0, 2.0, 3.0, "oops"])(bars()))
    assert "600000.SH 2020-01-07 (row 3): 'oops'" in str(caught.value)
    with pytest.raises(DataError) as caught:
        validate_bars(_cell("low", -1.0, row=5)(bars()))
    assert "(row 5): -1.0" in str(caught.value)


def _built_in_clash():
    prepare_market(bars().assign(macd=1.0))


def _short_split():
    check_split_lengths(prepare_market(bars(days=40), indicators=()), minimum=20)


def _step(env_factory, action):
    env = env_factory()
    env.reset()
    env.step(action)


def _single_env():
    return StockTradingEnv(prepare_market(bars(), indicators=()).full, EnvConfig(random_start=False))


def _vec_env():
    return VecStockTradingEnv(prepare_market(bars(), indicators=()).full, 4, EnvConfig())


def _other_shape_checkpoint(tmp_path):
    from finrl_tutorial.training.checkpoint import agent_from_checkpoint
    from finrl_tutorial.training.trainer import train

    market = prepare_market(bars(days=60), indicators=())
    train(market, make_config("ppo", num_envs=4, horizon_len=8, total_steps=64), out_dir=tmp_path / "run",
          eval_every=1, progress=False)
    state = load_checkpoint(tmp_path / "run" / "checkpoints" / "best.pt")
    state["config"]["hidden_sizes"] = [32]  # as if written by another version of the network
    agent_from_checkpoint(state)


def _pickle_that_runs_code(tmp_path):
    class Evil:
        def __reduce__(self):
            return (os.system, ("echo pwned",))
    path = tmp_path / "evil.pt"
    torch.save({"model": Evil(), "config": {}}, path)
    load_checkpoint(path)


# (what, call(tmp_path), fragment): configs, the loader, the env boundary, checkpoints
BAD_CALLS = [
    ("a factor with a built-in's name", lambda _: _built_in_clash(), "built-in feature"),
    ("a split too short for the main job", lambda _: _short_split(), "split 'valid' has only 8 trading days"),
    ("start after end", lambda _: load_market(start="2019-01-01", end="2018-01-01"), "is after end"),
    ("a window with no bars", lambda _: load_market(start="2030-01-01"), "no bars between 2030-01-01"),
    ("an ambiguous --start", lambda _: load_market(start="01/02/2019"), "start date '01/02/2019' is not a date"),
    ("an impossible --end", lambda _: load_market(end="2019-13-01"), "end date '2019-13-01' is not a date"),
    ("a ticker not in the data", lambda _: load_market(tickers=["601398"]), "601398.SH"),
    ("a source of the wrong type", lambda _: load_market(123), "source must be"),
    ("a date format that does not fit", lambda _: validate_bars(bars(), date_format="%d/%m/%Y"),
     "do not match the format"),
    ("EnvConfig(initial_cash=nan)", lambda _: EnvConfig(initial_cash=float("nan")), "initial_cash must be a finite"),
    ("EnvConfig(ruin_fraction=5)", lambda _: EnvConfig(ruin_fraction=5), "ruin_fraction must be < 1"),
    ("EnvConfig(max_lots=1.5)", lambda _: EnvConfig(max_lots=1.5), "max_lots must be an integer"),
    ("EnvConfig(reward_scale=-1)", lambda _: EnvConfig(reward_scale=-1), "reward_scale must be > 0"),
    ("PPOConfig(clip_range=-1)", lambda _: PPOConfig(clip_range=-1), "clip_range must be > 0"),
    ("PPOConfig(learning_rate=inf)", lambda _: PPOConfig(learning_rate=float("inf")), "learning_rate must be a finite"),
    ("PPOConfig(num_envs=0)", lambda _: PPOConfig(num_envs=0), "num_envs must be >= 1"),
    ("PPOConfig(hidden_sizes=())", lambda _: PPOConfig(hidden_sizes=()), "hidden_sizes"),
    ("A2C with an unknown device", lambda _: make_config("a2c", device="foo"), "unknown device 'foo'"),
    ("train(eval_every=-1)", lambda _: trainer_module.train(None, PPOConfig(), eval_every=-1), "eval_every must be >= 0"),
    ("a wrong-length action", lambda _: _step(_single_env, np.zeros(3)), "action has shape (3,), expected (2,)"),
    ("a NaN action", lambda _: _step(_single_env, np.array([np.nan, 0.0])), "non-finite"),
    ("a batched action of the wrong shape", lambda _: _step(_vec_env, torch.zeros(4, 3)), "expected (4, 2)"),
    ("an inf batched action", lambda _: _step(_vec_env, torch.full((4, 2), float("inf"))), "non-finite action"),
    ("a checkpoint of another network shape", _other_shape_checkpoint, "network of another shape"),
    ("a checkpoint that would run code", _pickle_that_runs_code, "GLOBAL posix.system"),
]


@pytest.mark.parametrize("what,call,fragment", BAD_CALLS, ids=[case[0] for case in BAD_CALLS])
def test_bad_calls_are_refused_in_one_line(tmp_path, what, call, fragment):
    with pytest.raises(InputError) as caught:
        call(tmp_path)
    message = str(caught.value)
    assert fragment in message and "\n" not in message, message


@pytest.mark.parametrize("command", [["data", "--out", ""], ["train", "--out", ""],
                                     ["backtest", "--checkpoint", "x.pt", "--out", ""]])
def test_an_empty_out_is_refused_in_one_line(capsys, command):
    assert cli.main(command) == 2
    err = capsys.readouterr().err.strip()
    assert err == "error: --out is empty: give a file or folder name, or leave the option out"


def test_configs_raise_config_errors_that_are_value_errors():
    with pytest.raises(ConfigError):
        EnvConfig(episode_days=0)
    assert issubclass(ConfigError, ValueError) and issubclass(DataError, ValueError)


# --- third round: inputs nobody listed (dividends, tick, lots, splits, factors, API arguments, bench) ------

PRICES = ["open", "high", "low", "close"]


def _scaled(factor):
    return lambda f: f.assign(**{column: f[column] * factor for column in PRICES})


def _columns(**columns):
    """Assign whole columns: each value a function of the frame, or a constant."""
    return lambda f: f.assign(**{name: value(f) if callable(value) else value for name, value in columns.items()})


def _on_row(row, value):
    return lambda f: pd.Series(np.where(f.index == row, value, np.nan), index=f.index)


BAD_BARS_3 = [
    ("negative cash_dividend", _cell("cash_dividend", -0.2, row=5), "negative cash_dividend"),
    ("a tiny negative cash_dividend", _cell("cash_dividend", -0.001, row=5), "negative cash_dividend"),
    ("negative bonus_shares", _cell("bonus_shares", -0.5, row=5), "negative bonus_shares"),
    ("cash_dividend of 50 on a ¥10 stock", _cell("cash_dividend", 50.0, row=5),
     "cash_dividend at or above the previous close"),
    ("cash_dividend equal to the price", lambda f: f.assign(cash_dividend=_on_row(5, f.loc[4, "close"])(f)),
     "cash_dividend at or above"),
    ("cash_dividend per 10 shares", _cell("cash_dividend", 5.0, row=5), "far from the ex-rights price"),
    ("bonus_shares per 10 shares (10送3 as 3)", _cell("bonus_shares", 3.0, row=5), "far from the ex-rights price"),
    ("bonus_shares of 20 per share", _cell("bonus_shares", 20.0, row=5), "bonus_shares above 10"),
    ("text in cash_dividend", _cell("cash_dividend", "0.5元", row=5),
     "non-numeric value(s) in column 'cash_dividend'"),
    ("inf cash_dividend", _cell("cash_dividend", np.inf, row=5), "non-finite value in column 'cash_dividend'"),
    ("inf bonus_shares", _cell("bonus_shares", np.inf, row=5), "non-finite value in column 'bonus_shares'"),
    ("prices of ¥0.001", _scaled(1e-4), "price below ¥0.10"),
    ("prices of ¥0.05", _scaled(5e-3), "price below ¥0.10"),
    ("one low of ¥0.09", _cell("low", 0.09, row=7), "price below ¥0.10 in column 'low'"),
    ("prices of ¥1e9", _scaled(1e8), "price above ¥100,000"),
    ("prices in fen of a ¥2,000 stock", _scaled(200 * 100), "price above ¥100,000"),
    ("one high of ¥1e12", _cell("high", 1e12, row=7), "price above ¥100,000 in column 'high'"),
    ("a factor named dividend", _columns(dividend=lambda f: np.linspace(0, 1, len(f))), "name the cleaning uses itself"),
    ("a factor named Dividend", _columns(Dividend=lambda f: np.linspace(0, 1, len(f))), "'dividend' has a name"),
    ("a factor named adj_close", _columns(adj_close=lambda f: f["close"]), "name the cleaning uses itself"),
    ("a factor named tradable", _columns(tradable=1.0), "name the cleaning uses itself"),
    ("a factor named ref_close", _columns(ref_close=lambda f: f["close"]), "name the cleaning uses itself"),
    ("volume 0 on every row", _columns(volume=0.0), "volume is 0 on every row"),
    ("down_limit negative", _columns(down_limit=-1.0), "down_limit < 0"),
    ("up_limit 0", _columns(up_limit=0.0), "up_limit <= 0"),
    ("adj_factor negative", _columns(adj_factor=-1.0), "adj_factor <= 0"),
    ("amount negative", _columns(amount=lambda f: -f["close"] * f["volume"]), "negative amount"),
    ("is_st -1", _columns(is_st=-1), "is_st not 0 or 1"),
    ("is_st as text", _cell("is_st", "yes"), "non-numeric value(s) in column 'is_st'"),
    ("a ticker that is a word", _cell("tic", ""), "not an A-share ticker"),
]


@pytest.mark.parametrize("what,change,fragment", BAD_BARS_3, ids=[case[0] for case in BAD_BARS_3])
def test_bad_bars_of_the_third_round_are_refused_in_one_line(what, change, fragment):
    frame = change(bars())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)  # prices off the tick, here beside the point
        with pytest.raises(DataError) as caught:
            validate_bars(frame)
        message = str(caught.value)
        assert fragment in message and "\n" not in message, message
        with pytest.raises(DataError):
            load_market(frame)


@functools.lru_cache(maxsize=None)
def _tiny():
    return prepare_market(bars(), indicators=())


def _env_step(env, action):
    env.reset()
    env.step(action)


def _factor_only_in_test():
    frame = bars(days=60)
    late = pd.to_datetime(frame["date"]) >= pd.to_datetime(frame["date"]).quantile(0.85)
    prepare_market(frame.assign(f=np.where(late, np.arange(len(frame), dtype=float), np.nan)), indicators=())


SPLIT = {"train": ("2020-01-02", "2020-01-20"), "valid": ("2020-01-21", "2020-01-31"),
         "test": ("2020-02-03", "2020-02-12")}

BAD_CALLS_3 = [
    ("EnvConfig(max_participation='x')", lambda: EnvConfig(max_participation="x"), "max_participation must be"),
    ("EnvConfig(max_participation=nan)", lambda: EnvConfig(max_participation=float("nan")), "max_participation must be"),
    ("EnvConfig(max_participation=0)", lambda: EnvConfig(max_participation=0), "max_participation must be > 0"),
    ("EnvConfig(max_participation=-inf)", lambda: EnvConfig(max_participation=-float("inf")), "max_participation must be"),
    ("EnvConfig(foo=1)", lambda: EnvConfig(foo=1), "EnvConfig has no field(s) foo"),
    ("PPOConfig(foo=1)", lambda: PPOConfig(foo=1), "PPOConfig has no field(s) foo"),
    ("make_config('a2c', bar=2)", lambda: make_config("a2c", bar=2), "A2CConfig has no field(s) bar"),
    ("FeeSchedule(foo=1)", lambda: FeeSchedule(foo=1), "FeeSchedule has no field(s) foo"),
    ("make_config('sac')", lambda: make_config("sac"), "unknown algo 'sac'"),
    ("EnvConfig(initial_cash=..., initial_cash by position)", lambda: EnvConfig(1e6, initial_cash=2e6), "twice"),
    ("EnvConfig with one positional value too many",
     lambda: EnvConfig(*range(len(dataclasses.fields(EnvConfig)) + 1)), f"at most {len(dataclasses.fields(EnvConfig))} values"),
    ("replace(EnvConfig(), foo=1)", lambda: dataclasses.replace(EnvConfig(), foo=1), "has no field(s) foo"),
    ("EnvConfig(slippage='5bp')", lambda: EnvConfig(slippage="5bp"), "slippage must be a finite number"),
    ("EnvConfig(impact=None)", lambda: EnvConfig(impact=None), "impact must be a finite number"),
    ("EnvConfig(initial_cash='1e6')", lambda: EnvConfig(initial_cash="1e6"), "initial_cash must be a finite number"),
    ("EnvConfig(initial_cash=True)", lambda: EnvConfig(initial_cash=True), "initial_cash must be a finite number"),
    ("EnvConfig(episode_days=2.5)", lambda: EnvConfig(episode_days=2.5), "episode_days must be an integer"),
    ("EnvConfig(random_start=1)", lambda: EnvConfig(random_start=1), "random_start must be True or False"),
    ("EnvConfig(execution='mid')", lambda: EnvConfig(execution="mid"), "execution must be one of"),
    ("EnvConfig(action_mode=None)", lambda: EnvConfig(action_mode=None), "action_mode must be one of"),
    ("EnvConfig(fees=None)", lambda: EnvConfig(fees=None), "fees must be a FeeSchedule"),
    ("EnvConfig(fees={...})", lambda: EnvConfig(fees={"commission_rate": 0.0}), "fees must be a FeeSchedule"),
    ("a negative commission", lambda: EnvConfig(fees=FeeSchedule(commission_rate=-1)), "commission_rate must be >= 0"),
    ("stamp duty as one number", lambda: EnvConfig(fees=FeeSchedule(stamp_duty=0.001)), "stamp_duty must be a non-empty list"),
    ("stamp duty with a bad date", lambda: EnvConfig(fees=FeeSchedule(stamp_duty=(("soon", 0.001),))), "'soon' is not a date"),
    ("buyer stamp duty of 200 %", lambda: EnvConfig(fees=FeeSchedule(stamp_duty_buy=(("2020-01-01", 2.0),))),
     "stamp_duty_buy must be < 1"),
    ("a NaN Shenzhen transfer fee", lambda: EnvConfig(fees=FeeSchedule(transfer_fee_sz_rate=float("nan"))),
     "transfer_fee_sz_rate must be a finite number"),
    ("StockTradingEnv(None)", lambda: StockTradingEnv(None), "StockTradingEnv needs a MarketData"),
    ("StockTradingEnv(m, config='abc')", lambda: StockTradingEnv(_tiny().full, config="abc"), "config must be an EnvConfig"),
    ("StockTradingEnv(m, config={...})", lambda: StockTradingEnv(_tiny().full, config={"initial_cash": 1}),
     "config must be an EnvConfig"),
    ("StockTradingEnv(prepared market)", lambda: StockTradingEnv(_tiny()), "pass one split, e.g. prepared.train"),
    ("StockTradingEnv(m, dtype=int64)", lambda: StockTradingEnv(_tiny().full, dtype=torch.int64), "floating torch dtype"),
    ("StockTradingEnv on one day", lambda: StockTradingEnv(_tiny().full.slice_days(0, 1)), "at least 2 trading days"),
    ("VecStockTradingEnv(None, 4)", lambda: VecStockTradingEnv(None, 4), "VecStockTradingEnv needs a MarketData"),
    ("VecStockTradingEnv(m, 4, config='abc')", lambda: VecStockTradingEnv(_tiny().full, 4, "abc"), "config must be an EnvConfig"),
    ("VecStockTradingEnv on the meta device", lambda: VecStockTradingEnv(_tiny().full, 4, device="meta"),
     "device 'meta' is not supported"),
    ("VmapStockTradingEnv(m, 0)", lambda: VmapStockTradingEnv(_tiny().full, 0), "num_envs must be >= 1"),
    ("initial cash that buys no lot", lambda: StockTradingEnv(_tiny().full, EnvConfig(initial_cash=100.0)),
     "cannot pay for one order of any stock"),
    ("a meta-device action", lambda: _env_step(StockTradingEnv(_tiny().full), torch.empty(2, device="meta")), "meta tensor"),
    ("a meta-device batched action", lambda: _env_step(VecStockTradingEnv(_tiny().full, 4), torch.empty(4, 2, device="meta")),
     "meta tensor"),
    ("a complex action", lambda: _env_step(StockTradingEnv(_tiny().full), np.array([1j, 0])), "complex"),
    ("a complex batched action", lambda: _env_step(VecStockTradingEnv(_tiny().full, 4), torch.zeros(4, 2, dtype=torch.cfloat)),
     "complex"),
    ("a batched action of text", lambda: _env_step(VecStockTradingEnv(_tiny().full, 4), "buy"), "actions must be numbers"),
    ("reset(seed='a')", lambda: StockTradingEnv(_tiny().full).reset(seed="a"), "seed must be an integer"),
    ("reset(seed=-1)", lambda: StockTradingEnv(_tiny().full).reset(seed=-1), "seed must be >= 0"),
    ("load_market(splits='abc')", lambda: load_market(splits="abc"), "splits must be a dict"),
    ("load_market(splits={})", lambda: load_market(splits={}), "splits must be a dict"),
    ("a test period before train", lambda: load_market(bars(), splits={"train": SPLIT["test"], "test": SPLIT["train"]}),
     "must start after split 'train' ends"),
    ("valid overlapping train", lambda: load_market(bars(), splits={**SPLIT, "valid": ("2020-01-15", "2020-01-31")}),
     "split 'valid' (2020-01-15..) must start after"),
    ("an unknown split name", lambda: load_market(bars(), splits={**SPLIT, "validation": SPLIT["valid"]}),
     "unknown split name(s) 'validation'"),
    ("splits without train", lambda: load_market(bars(), splits={"valid": SPLIT["valid"]}), "need a 'train' entry"),
    ("a split that is one date", lambda: load_market(bars(), splits={"train": "2020-01-02"}), "(start, end) pair"),
    ("a split that ends before it starts", lambda: load_market(bars(), splits={"train": ("2020-01-20", "2020-01-02")}),
     "starts (2020-01-20) after it ends"),
    ("a split date that is not a date", lambda: load_market(bars(), splits={"train": ("2020-01-02", "soon")}),
     "split 'train' end date 'soon' is not a date"),
    ("load_market(tickers=123)", lambda: load_market(tickers=123), "tickers must be a list of names"),
    ("load_market(tickers=[1.5])", lambda: load_market(tickers=[1.5]), "tickers must be names"),
    ("load_market(indicators=5)", lambda: load_market(bars(), indicators=5), "indicators must be a list"),
    ("load_market(feature_stats={})", lambda: load_market(bars(), feature_stats={}), "feature_stats must be a dict"),
    ("a factor only in the test split", _factor_only_in_test, "no value in the training split"),
    ("backtest(None, None)", lambda: backtest(None, None), "backtest needs a MarketData"),
    ("backtest(policy, m, 'abc')", lambda: backtest(None, _tiny().full, "abc"), "config must be an EnvConfig"),
    ("backtest on a prepared market", lambda: backtest(None, _tiny()), "pass one split"),
    ("run_policy(5, m)", lambda: run_policy(5, _tiny().full), "policy must be a function"),
    ("a backtest in which nothing can be bought", lambda: backtest(None, dataclasses.replace(
        _tiny().full, volume=torch.zeros_like(_tiny().full.volume))), "could not buy a single lot"),
    ("timed(step, nan)", lambda: timed(lambda: None, float("nan")), "seconds must be a finite number"),
    ("market_with_stocks(m, 0)", lambda: market_with_stocks(_tiny().full, 0), "stocks must be >= 1"),
    ("measure_env(single, m, 0 envs)", lambda: measure_env("single", _tiny().full, 0), "num_envs must be >= 1"),
    ("measure_env(unknown kind)", lambda: measure_env("fast", _tiny().full, 1), "kind must be one of"),
    ("measure_env(seconds=-1)", lambda: measure_env("vec", _tiny().full, 1, seconds=-1), "seconds must be > 0"),
]


@pytest.mark.parametrize("what,call,fragment", BAD_CALLS_3, ids=[case[0] for case in BAD_CALLS_3])
def test_bad_calls_of_the_third_round_are_refused_in_one_line(what, call, fragment):
    with pytest.raises(InputError) as caught:
        call()
    message = str(caught.value)
    assert fragment in message and "\n" not in message, message


def _bad_files(tmp_path):
    files = {
        "dividend_50.csv": _cell("cash_dividend", 50.0, row=5)(bars()),
        "negative_bonus.csv": _cell("bonus_shares", -0.3, row=5)(bars()),
        "tiny_prices.csv": _scaled(1e-4)(bars()),
        "huge_prices.csv": _scaled(1e8)(bars()),
        "dividend_factor.csv": bars().assign(dividend=np.linspace(0, 1, 60)),
        "no_volume.csv": bars().assign(volume=0),
    }
    for name, frame in files.items():
        frame.to_csv(tmp_path / name, index=False)


CLI_3 = [
    (["bench", "env", "--seconds", "nan"], "--seconds: must be a finite number of seconds > 0, got 'nan'"),
    (["bench", "env", "--seconds", "inf"], "got 'inf'"),
    (["bench", "env", "--seconds", "0"], "got '0'"),
    (["bench", "env", "--seconds", "-2"], "got '-2'"),
    (["bench", "env", "--seconds", "soon"], "expected a number of seconds"),
    (["bench", "env", "--stocks", "0"], "--stocks: must be >= 1, got 0"),
    (["bench", "env", "--stocks", "-5"], "--stocks: must be >= 1"),
    (["bench", "env", "--num-envs", "64", "0"], "--num-envs: must be >= 1, got 0"),
    (["bench", "env", "--threads", "0"], "--threads: must be >= 1"),
    (["bench", "env", "--device", "meta", "--seconds", "0.01"], "device 'meta' is not supported"),
    (["data", "--source", "dividend_50.csv"], "cash_dividend at or above the previous close"),
    (["data", "--source", "negative_bonus.csv"], "negative bonus_shares"),
    (["data", "--source", "tiny_prices.csv"], "price below ¥0.10"),
    (["data", "--source", "huge_prices.csv"], "price above ¥100,000"),
    (["data", "--source", "dividend_factor.csv"], "'dividend' has a name the cleaning uses itself"),
    (["data", "--source", "no_volume.csv"], "volume is 0 on every row"),
    (["data", "--tickers", "600000.SH,12345X"], "not in the data"),
]


@pytest.mark.parametrize("argv,fragment", CLI_3, ids=[" ".join(case[0]) for case in CLI_3])
def test_bad_input_of_the_third_round_through_the_cli(capsys, tmp_path, monkeypatch, argv, fragment):
    _bad_files(tmp_path)
    monkeypatch.chdir(tmp_path)
    try:
        code = cli.main(argv)
    except SystemExit as stop:  # argparse's own refusal
        code = stop.code
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and err[0].startswith("error: ") and fragment in err[0], (code, err)


def test_a_look_ahead_factor_is_a_loud_one_line_warning_on_the_cli(capsys, tmp_path, monkeypatch):
    frame = bars(days=60).sort_values(["tic", "date"])
    frame["peek"] = frame.groupby("tic")["close"].shift(-1) / frame["close"] - 1  # tomorrow's return, today
    frame.to_csv(tmp_path / "peek.csv", index=False)
    monkeypatch.chdir(tmp_path)
    assert cli.main(["data", "--source", "peek.csv"]) == 0
    warned = [line for line in capsys.readouterr().err.splitlines() if line.startswith("warning: LOOK-AHEAD")]
    assert len(warned) == 1 and "'peek'" in warned[0] and "rank IC of +1.00" in warned[0], warned


def test_data_out_compresses_as_its_name_says(capsys, tmp_path):
    out = tmp_path / "clean.csv.gz"
    assert cli.main(["data", "--source", "sample", "--tickers", "600000.SH", "--out", str(out)]) == 0
    assert out.read_bytes()[:2] == b"\x1f\x8b"  # gzip's magic number, not plain text
    assert pd.read_csv(out)["tic"].unique().tolist() == ["600000.SH"]


def test_a_one_stock_market_trains_and_backtests(tmp_path):
    from finrl_tutorial.training.checkpoint import agent_from_checkpoint
    from finrl_tutorial.training.trainer import train

    market = prepare_market(bars(days=60, tickers=("600519.SH",)), indicators=())
    train(market, make_config("ppo", num_envs=4, horizon_len=8, total_steps=64), out_dir=tmp_path / "run",
          eval_every=1, progress=False)
    agent = agent_from_checkpoint(load_checkpoint(tmp_path / "run" / "checkpoints" / "best.pt"))[0]
    result = backtest(agent_policy(agent), market.test)
    weights = result.records["agent"].weights
    assert list(weights.columns) == ["600519.SH"] and ((weights >= 0) & (weights <= 1 + 1e-9)).all().all()
    held = result.records["equal_weight_buy_and_hold"]
    assert held.weights.iloc[-1, 0] > 0 and np.isfinite(held.wealth).all()  # it bought the stock and holds it


def test_a_stock_whose_lot_never_fits_is_named_in_a_warning():
    frame = bars(tickers=("600000.SH", "600519.SH"))
    frame.loc[frame["tic"] == "600519.SH", PRICES] *= 200  # a ¥2,000+ stock: a lot costs over ¥200,000
    market = prepare_market(frame, indicators=()).full
    with pytest.warns(DataWarning, match="never pays for one order of 600519.SH"):
        StockTradingEnv(market, EnvConfig(initial_cash=50_000.0))


# --- what used to go wrong silently now reads right ---------------------------------------------------

def test_ticker_spellings_become_one_canonical_code_and_board():
    for spelling in ("600000", "sh.600000", "SH600000", "600000.XSHG", "600000.sh", " 600000.SS "):
        assert canonical_ticker(spelling) == "600000.SH", spelling
    assert canonical_ticker("688981") == "688981.SH" and canonical_ticker("sz300750") == "300750.SZ"
    from finrl_tutorial.rules import limit_rate
    assert limit_rate(canonical_ticker("688981.XSHG"), ["2021-01-04"])[0] == 0.20  # STAR keeps ±20 %
    frame = bars(tickers=("600000.SH",))
    half = len(frame) // 2
    frame.loc[half:, "tic"] = "sh.600000"  # one stock, two spellings on different days
    clean = validate_bars(frame)
    assert clean["tic"].unique().tolist() == ["600000.SH"] and len(clean) == len(frame)
    numeric = bars(tickers=("000001.SZ", "600000.SH")).assign(tic=lambda f: f["tic"].str[:6].astype(int))
    assert sorted(validate_bars(numeric)["tic"].unique()) == ["000001.SZ", "600000.SH"]  # 1 is 000001


def test_dates_are_read_strictly():
    day_first = parse_dates(pd.Series(["13/01/2020", "02/01/2020"]))  # 13 cannot be a month
    assert list(day_first.dt.strftime("%Y-%m-%d")) == ["2020-01-13", "2020-01-02"]
    chosen = parse_dates(pd.Series(["03/04/2020"]), date_format="%m/%d/%Y")
    assert str(chosen.iloc[0].date()) == "2020-03-04"
    # 16:00 UTC on 2 January is 00:00 on 3 January in Beijing: the exchange's date
    zoned = parse_dates(pd.Series(pd.to_datetime(["2020-01-02 16:00"]).tz_localize("UTC")))
    assert str(zoned.iloc[0].date()) == "2020-01-03"
    text = parse_dates(pd.Series(["2020-01-02T16:00:00Z", "2020-01-03T10:00:00+08:00"]))
    assert list(text.dt.strftime("%Y-%m-%d")) == ["2020-01-03", "2020-01-03"]
    assert str(parse_dates(pd.Series([20200102])).iloc[0].date()) == "2020-01-02"


def test_saved_index_is_not_a_feature_and_text_columns_are_not_either(tmp_path):
    frame = bars()
    frame["name"] = "浦发银行"
    path = tmp_path / "with_index.csv"
    frame.to_csv(path)  # index=True: an "Unnamed: 0" column
    market = load_market(path, splits=None)
    assert "unnamed: 0" not in market.full.feature_names and "name" not in market.full.feature_names
    assert market.full.feature_names == load_market(frame).full.feature_names


def test_load_market_takes_a_dataframe_and_a_path(tmp_path):
    frame = bars(days=60)
    path = tmp_path / "bars.csv"
    frame.to_csv(path, index=False)
    from_frame, from_path = load_market(frame), load_market(path)
    assert torch.equal(from_frame.full.features, from_path.full.features)
    assert from_path.full.source == str(path) and from_frame.full.source == "dataframe"


def test_atomic_files_keep_the_umask_mode(tmp_path):
    old = os.umask(0o027)
    try:
        with atomic_open(tmp_path / "a.json") as stream:
            stream.write("{}")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "a.json").stat().st_mode) == 0o640
    os.chmod(tmp_path / "a.json", 0o604)
    with atomic_open(tmp_path / "a.json") as stream:  # a replaced file keeps its mode
        stream.write("[]")
    assert stat.S_IMODE((tmp_path / "a.json").stat().st_mode) == 0o604


# --- property tests of the schema -------------------------------------------------------------------------

_price = st.integers(10, 7_000_000).map(lambda fen: fen / 100)  # ¥0.10 .. ¥70,000 on the 0.01 tick


@st.composite
def valid_bars(draw):
    days = draw(st.integers(2, 8))
    tickers = draw(st.lists(st.sampled_from(["600000.SH", "000001.SZ", "688981.SH", "830799.BJ"]),
                            min_size=1, max_size=3, unique=True))
    rows = []
    for tic in tickers:
        for day in pd.bdate_range("2021-03-01", periods=days):
            low = draw(_price)
            high = round(low * (1 + draw(st.floats(0, 0.3))), 2)
            open_, close = (round(low + (high - low) * draw(st.floats(0, 1)), 2) for _ in range(2))
            rows.append({"date": day.strftime("%Y-%m-%d"), "tic": tic, "open": min(max(open_, low), high),
                         "high": high, "low": low, "close": min(max(close, low), high),
                         "volume": draw(st.floats(0, 1e10))})
    rows[0]["volume"] = max(rows[0]["volume"], 100.0)  # volume 0 on every row is refused: nothing could trade
    return pd.DataFrame(rows)


def _consistent(clean: pd.DataFrame) -> bool:
    prices = clean[["open", "high", "low", "close"]].to_numpy()
    slack = 1e-9 * clean["high"]
    return bool(np.isfinite(prices).all() and (prices > 0).all() and (clean["low"] <= clean["high"]).all()
                and (clean["open"] <= clean["high"] + slack).all() and (clean["open"] >= clean["low"] - slack).all()
                and (clean["close"] <= clean["high"] + slack).all() and (clean["close"] >= clean["low"] - slack).all()
                and np.isfinite(clean["volume"]).all() and (clean["volume"] >= 0).all())


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(valid_bars())
def test_schema_never_rejects_a_valid_table(frame):
    clean = validate_bars(frame)
    assert len(clean) == len(frame) and _consistent(clean)


_defects = st.sampled_from(["nan", "inf", "-inf", "zero", "negative", "open>high", "close<low", "high<low",
                            "volume nan", "volume -1", "volume inf"])


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(valid_bars(), _defects, st.data())
def test_schema_never_lets_a_bad_bar_through(frame, defect, data):
    row = data.draw(st.integers(0, len(frame) - 1))
    column = data.draw(st.sampled_from(["open", "high", "low", "close"]))
    value = {"nan": np.nan, "inf": np.inf, "-inf": -np.inf, "zero": 0.0, "negative": -frame.loc[row, column]}
    if defect in value:
        frame.loc[row, column] = value[defect]
    elif defect == "open>high":
        frame.loc[row, "open"] = frame.loc[row, "high"] * 1.01 + 0.01
    elif defect == "close<low":
        frame.loc[row, "close"] = frame.loc[row, "low"] * 0.99 - 0.001
    elif defect == "high<low":
        frame.loc[row, "high"] = frame.loc[row, "low"] * 0.9
    else:
        frame.loc[row, "volume"] = {"volume nan": np.nan, "volume -1": -1.0, "volume inf": np.inf}[defect]
    with pytest.raises(DataError):
        validate_bars(frame)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(valid_bars(), st.lists(st.tuples(st.integers(0, 1000), st.sampled_from(["open", "high", "low", "close"]),
                                        st.floats(allow_nan=True, allow_infinity=True)), max_size=3))
def test_whatever_goes_in_what_comes_out_is_finite_and_consistent(frame, edits):
    for row, column, value in edits:
        frame.loc[row % len(frame), column] = value
    try:
        clean = validate_bars(frame)
    except DataError:
        return
    assert _consistent(clean)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.dates(min_value=pd.Timestamp("1991-01-01").date(), max_value=pd.Timestamp("2099-12-31").date()),
                min_size=1, max_size=20, unique=True),
       st.sampled_from(["%Y-%m-%d", "%Y%m%d", "%Y/%m/%d", "%Y-%m-%d %H:%M:%S"]))
def test_unambiguous_dates_always_read_back(days, fmt):
    texts = pd.Series([pd.Timestamp(d).strftime(fmt) for d in days])
    assert list(parse_dates(texts).dt.date) == days


@settings(max_examples=60, deadline=None)
@given(st.sampled_from("6034"), st.integers(0, 99999))
def test_every_spelling_of_a_code_is_one_ticker(first, rest):
    code = f"{first}{rest:05d}"
    canonical = canonical_ticker(code)
    exchange = canonical[-2:]
    mic = {"SH": "XSHG", "SZ": "XSHE", "BJ": "BJSE"}[exchange]
    for spelling in (canonical, canonical.lower(), f"{exchange.lower()}.{code}", f"{exchange}{code}", f"{code}.{mic}"):
        assert canonical_ticker(spelling) == canonical, spelling


# --- the CLI: bad input in a real process --------------------------------------------------------------

def _process(argv, cwd, **env):
    environment = {k: v for k, v in os.environ.items() if k != "TUSHARE_TOKEN"} | {
        "FINRL_TUTORIAL_FAST": "1", "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"} | env
    return subprocess.run([sys.executable, "-m", "finrl_tutorial", *map(str, argv)], cwd=cwd, env=environment,
                          capture_output=True, text=True, timeout=300)


def assert_one_line(done, *fragments):
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, (done.returncode, done.stderr[-2000:])
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in done.stderr, done.stderr
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])


def _cli_cases(tmp_path: Path):
    bars(days=8, start="2020-03-02").assign(date=lambda f: pd.to_datetime(f["date"]).dt.strftime("%d/%m/%Y")) \
        .to_csv(tmp_path / "ambiguous.csv", index=False)
    bars().to_csv(tmp_path / "mine.csv", index=False)
    (tmp_path / "a_file").write_text("not a folder")
    with open(tmp_path / "evil.pt", "wb") as stream:
        pickle.dump({"model": "x"}, stream, protocol=4)
    return [
        (["train", "--seeds", "0"], ["--seeds", "must be >= 1"]),
        (["train", "--threads", "0"], ["--threads"]),
        (["train", "--device", "foo"], ["unknown device 'foo'"]),
        (["train", "--eval-every", "-1"], ["--eval-every"]),
        (["train", "--out", "a_file", *TINY], ["is a file"]),
        (["train", "--out", "a_file/run", *TINY], ["a_file is a file"]),
        (["train", "--num-envs", "1000000000", "--out", "huge", "--no-progress"], ["GiB", "lower --num-envs"]),
        (["train", "--lr", "nan", "--out", "nan_lr"], ["learning_rate must be a finite number"]),
        (["data", "--source", "mine.csv", "--out", "mine.csv"], ["is the input file itself"]),
        (["data", "--source", "ambiguous.csv"], ["ambiguous dates", "--date-format"]),
        (["data", "--start", "2019-01-01", "--end", "2018-01-01"], ["is after end"]),
        (["backtest", "--checkpoint", "evil.pt"], ["evil.pt", "not a readable finrl_tutorial checkpoint"]),
        (["backtest", "--checkpoint", "."], ["is a folder, not a checkpoint"]),
    ]


def test_bad_input_through_the_cli_in_real_processes(tmp_path):
    for argv, fragments in _cli_cases(tmp_path):
        assert_one_line(_process(argv, tmp_path), *fragments)
    if not torch.cuda.is_available():
        assert_one_line(_process(["train", "--device", "cuda"], tmp_path), "CUDA is not available")
    # the ambiguous file reads once its format is given
    done = _process(["data", "--source", "ambiguous.csv", "--date-format", "%d/%m/%Y"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert "trading days:  8  (2020-03-02 .. 2020-03-11)" in done.stdout  # day first, as told
    assert not (tmp_path / "huge").exists() or not runs.has_content(tmp_path / "huge")
    assert (tmp_path / "mine.csv").read_text().startswith("date,tic")  # the input was not overwritten


def test_a_genuine_bug_still_shows_its_traceback(monkeypatch, capsys):
    def broken(*args, **kwargs):
        raise ValueError("a bug, not bad input")
    monkeypatch.setattr("finrl_tutorial.data.load_market", broken)
    with pytest.raises(ValueError, match="a bug"):
        cli.main(["data"])


# --- run folders ----------------------------------------------------------------------------------------

def run_cli(capsys, *argv):
    code = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_a_second_run_into_the_same_folder_is_refused(capsys, tmp_path):
    run = tmp_path / "run"
    code, _, err = run_cli(capsys, "train", *TINY, "--out", run)
    assert code == 0, err
    before = {p.name: p.read_bytes() for p in run.rglob("*") if p.is_file()}
    code, _, err = run_cli(capsys, "train", *TINY, "--seed", 1, "--out", run)
    assert code == 2 and "already holds a run" in err and "--resume" in err and "--overwrite" in err
    assert {p.name: p.read_bytes() for p in run.rglob("*") if p.is_file()} == before  # nothing touched
    (run / "notes.txt").write_text("mine")
    code, _, err = run_cli(capsys, "train", *TINY, "--out", run, "--overwrite")
    assert code == 2 and "notes.txt" in err and (run / "notes.txt").exists()  # not a run folder: never deleted
    (run / "notes.txt").unlink()
    code, _, err = run_cli(capsys, "train", *TINY, "--seed", 1, "--out", run, "--overwrite")
    assert code == 0, err
    assert json.loads((run / "config.json").read_text())["config"]["seed"] == 1
    assert not (run / ".lock").exists()


def test_the_default_run_name_moves_on_to_a_fresh_folder(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for _ in range(2):
        code, out, err = run_cli(capsys, "train", *TINY)
        assert code == 0, err
    assert "runs/ppo holds an earlier run: writing to runs/ppo-2" in out
    assert (tmp_path / "runs" / "ppo" / "report.json").exists() and (tmp_path / "runs" / "ppo-2" / "report.json").exists()
    assert runs.latest(Path("runs/ppo")) == Path("runs/ppo-2")


class _Crash(Exception):
    pass


def test_resume_on_the_cli_continues_bit_exactly(capsys, tmp_path, monkeypatch):
    code, _, err = run_cli(capsys, "train", *TINY, "--out", tmp_path / "whole")
    assert code == 0, err
    real_collect = ppo_module.collect_rollout  # what the loop (agents.learn) steps the env with
    calls = [0]

    def crashing_collect(*args, **kwargs):
        calls[0] += 1
        if calls[0] == 4:  # killed in iteration 3: the last checkpoint is iteration 2's
            raise _Crash
        return real_collect(*args, **kwargs)

    monkeypatch.setattr(ppo_module, "collect_rollout", crashing_collect)
    with pytest.raises(_Crash):
        cli.main(["train", *TINY, "--out", str(tmp_path / "cut")])
    monkeypatch.setattr(ppo_module, "collect_rollout", real_collect)
    capsys.readouterr()
    assert not (tmp_path / "cut" / "report.json").exists()
    code, _, err = run_cli(capsys, "train", *TINY, "--out", tmp_path / "cut")
    assert code == 2 and "already holds a run" in err
    code, _, err = run_cli(capsys, "train", *TINY, "--out", tmp_path / "cut", "--resume", "--num-envs", 16)
    assert code == 2 and "num_envs 8 -> 16" in err
    code, _, err = run_cli(capsys, "train", *TINY, "--out", tmp_path / "cut", "--resume")
    assert code == 0, err
    whole = load_checkpoint(tmp_path / "whole" / "checkpoints" / "last.pt")
    cut = load_checkpoint(tmp_path / "cut" / "checkpoints" / "last.pt")
    assert all(torch.equal(whole["model"][k], cut["model"][k]) for k in whole["model"])
    a, b = (pd.read_csv(tmp_path / name / "log.csv") for name in ("whole", "cut"))
    timing = ["wall_seconds", "samples_per_s"]
    pd.testing.assert_frame_equal(a.drop(columns=timing), b.drop(columns=timing), check_exact=True)
    report_a, report_b = (json.loads((tmp_path / name / "report.json").read_text()) for name in ("whole", "cut"))
    assert report_a["agent"] == report_b["agent"]


def test_two_runs_at_once_on_one_folder_the_second_is_refused(tmp_path):
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from pathlib import Path; from finrl_tutorial.training.runs import RunLock;"
         "lock = RunLock(Path(sys.argv[1])).acquire(); print('locked', flush=True); time.sleep(120)",
         str(tmp_path / "run")], env=os.environ | {"PYTHONPATH": str(ROOT)}, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        done = _process(["train", *TINY, "--out", "run"], tmp_path)
        assert_one_line(done, "in use by another process", f"pid {holder.pid}")
    finally:
        holder.kill()
        holder.wait()
    # and two real trainings started together: exactly one writes the folder
    started = [subprocess.Popen([sys.executable, "-m", "finrl_tutorial", "train", *TINY, "--out", "both"],
                                cwd=tmp_path, env=os.environ | {"PYTHONPATH": str(ROOT), "FINRL_TUTORIAL_FAST": "1"},
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    results = [(p.wait(timeout=300), p.stderr.read()) for p in started]
    assert sorted(code for code, _ in results) == [0, 2], results
    refused = next(err for code, err in results if code == 2)
    assert "in use by another process" in refused or "already holds a run" in refused, refused


def test_a_killed_holder_leaves_no_stale_lock(tmp_path):
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from pathlib import Path; from finrl_tutorial.training.runs import RunLock;"
         "RunLock(Path(sys.argv[1])).acquire(); print('locked', flush=True); time.sleep(120)", str(tmp_path)],
        env=os.environ | {"PYTHONPATH": str(ROOT)}, stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "locked"
    with pytest.raises(RunFolderError, match="in use"):
        runs.RunLock(tmp_path).acquire()
    holder.kill()  # like kill -9: the OS drops the lock
    holder.wait()
    time.sleep(0.1)
    lock = runs.RunLock(tmp_path).acquire()
    lock.release()
    assert not (tmp_path / ".lock").exists()


def test_data_out_never_replaces_a_file_silently(capsys, tmp_path):
    target = tmp_path / "clean.csv"
    target.write_text("keep me")
    code, _, err = run_cli(capsys, "data", "--tickers", "600000.SH", "--start", "2019-06-01", "--out", target)
    assert code == 2 and "--overwrite" in err and target.read_text() == "keep me"
    code, _, err = run_cli(capsys, "data", "--tickers", "600000.SH", "--start", "2019-06-01", "--out", target,
                           "--overwrite")
    assert code == 0, err and pd.read_csv(target)["tic"].unique().tolist() == ["600000.SH"]


def test_eval_every_0_still_leaves_checkpoints(capsys, tmp_path):
    code, _, err = run_cli(capsys, "train", *TINY[:-3], "--eval-every", 0, "--no-progress", "--out", tmp_path / "r")
    assert code == 0, err
    best = load_checkpoint(tmp_path / "r" / "checkpoints" / "best.pt")
    last = load_checkpoint(tmp_path / "r" / "checkpoints" / "last.pt")
    assert best["selected_by"].startswith("final weights") and last["iteration"] == best["iteration"] == 4


# --- a checkpoint carries its pipeline -----------------------------------------------------------------

def test_backtest_on_a_shifted_window_sees_the_training_features(capsys, tmp_path):
    run = tmp_path / "run"
    code, _, err = run_cli(capsys, "train", *TINY, "--out", run)
    assert code == 0, err
    state = load_checkpoint(run / "checkpoints" / "best.pt")
    trained = load_market()  # what the agent was trained on: the sample, its own splits
    assert state["feature_stats"]["names"] == trained.full.feature_names
    assert state["feature_stats"]["mean"] == trained.train.info["feature_mean"]
    assert state["indicators"] == list(trained.full.info["indicators"]) and state["env_config"]["episode_days"] == 250
    for start in ("2016-06-01", "2018-03-01"):
        shifted = load_market(start=start, feature_stats=state["feature_stats"], indicators=state["indicators"])
        first = int(np.searchsorted(trained.full.dates, shifted.full.dates[0]))
        assert torch.equal(shifted.full.features, trained.full.features[first:]), start  # exactly
        refit = load_market(start=start)  # what the backtest used to do: refit on the window
        assert (refit.full.features - trained.full.features[first:]).abs().max() > 0.3
    code, out, err = run_cli(capsys, "backtest", "--checkpoint", run / "checkpoints" / "best.pt", "--start",
                             "2016-06-01", "--split", "all", "--out", tmp_path / "bt")
    assert code == 0, err and "all split 2016-06-01..2020-01-03" in out
    code, _, err = run_cli(capsys, "backtest", "--checkpoint", run / "checkpoints" / "best.pt", "--out", tmp_path / "bt")
    assert code == 2 and "already holds a backtest" in err


def test_backtest_refuses_data_whose_features_differ(capsys, tmp_path):
    frame = load_market().bars
    frame = frame[frame["tic"].isin(["600000.SH", "600036.SH"])].assign(
        my_factor=lambda f: np.random.default_rng(0).normal(size=len(f)))
    path = tmp_path / "mine.csv"
    frame.to_csv(path, index=False)
    run = tmp_path / "run"
    code, _, err = run_cli(capsys, "train", "--data", path, *TINY, "--out", run)
    assert code == 0, err
    frame.drop(columns=["my_factor"]).assign(other=1.5).to_csv(tmp_path / "other.csv", index=False)
    code, _, err = run_cli(capsys, "backtest", "--data", tmp_path / "other.csv", "--checkpoint",
                           run / "checkpoints" / "best.pt")
    assert code == 2 and "missing my_factor" in err and "not in the checkpoint: other" in err


def test_a_run_that_cannot_start_leaves_no_folder(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, _, err = run_cli(capsys, "train", *TINY, "--resume")
    assert code == 2 and "nothing to resume in runs/ppo" in err
    code, _, err = run_cli(capsys, "train", *TINY, "--resume", "--overwrite", "--out", "r")
    assert code == 2 and "exclude each other" in err
    code, _, err = run_cli(capsys, "train", "--num-envs", 10**9, "--no-progress", "--out", "r")
    assert code == 2 and "GiB" in err
    assert list(tmp_path.iterdir()) == []
