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
import json
import os
import pickle
import stat
import subprocess
import sys
import time
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
from finrl_tutorial.envs import EnvConfig, StockTradingEnv, VecStockTradingEnv
from finrl_tutorial.errors import ConfigError, InputError, RunFolderError
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


def test_configs_raise_config_errors_that_are_value_errors():
    with pytest.raises(ConfigError):
        EnvConfig(episode_days=0)
    assert issubclass(ConfigError, ValueError) and issubclass(DataError, ValueError)


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
