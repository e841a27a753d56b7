"""`bench walkforward`: folds that never overlap and never look ahead, and a tiny run end to end."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from finrl_tutorial import cli
from finrl_tutorial.bench.walkforward import MIN_VALID_DAYS, chain, fold_splits, walk_forward_folds
from finrl_tutorial.data import load_market, load_sample
from finrl_tutorial.errors import InputError

TICKERS = ["600000.SH", "600036.SH", "600519.SH"]


@st.composite
def calendars(draw):
    """A trading calendar: weekdays from a random start, with random holidays removed."""
    start = draw(st.dates(min_value=pd.Timestamp("2005-01-01").date(), max_value=pd.Timestamp("2020-01-01").date()))
    days = pd.bdate_range(start, periods=draw(st.integers(100, 2500)))
    seed = draw(st.integers(0, 2**32 - 1))
    keep = np.random.default_rng(seed).random(len(days)) > draw(st.floats(0.0, 0.2))
    return days[keep]


@settings(max_examples=60, deadline=None)
@given(dates=calendars(), valid_months=st.integers(1, 18), min_train=st.integers(20, 400),
       min_test=st.integers(20, 250))
def test_folds_never_overlap_and_never_look_ahead(dates, valid_months, min_train, min_test):
    try:
        folds = walk_forward_folds(dates, valid_months=valid_months, min_train_days=min_train, min_test_days=min_test)
    except InputError:
        return  # a calendar too short for any fold (checked below)
    years = [fold["year"] for fold in folds]
    assert years == sorted(set(years))
    for fold in folds:
        train, valid, test = (tuple(map(pd.Timestamp, fold[name])) for name in ("train", "valid", "test"))
        # in time order, no day shared: training ends before validation, validation before the test year
        assert train[0] <= train[1] < valid[0] <= valid[1] < test[0] <= test[1]
        year_start = pd.Timestamp(year=fold["year"], month=1, day=1)
        assert test[0].year == test[1].year == fold["year"]
        assert year_start - pd.DateOffset(months=valid_months) <= valid[0] and valid[1] < year_start
        inside = lambda part: dates[(dates >= part[0]) & (dates <= part[1])]  # noqa: E731
        assert len(inside(train)) >= min_train and len(inside(valid)) >= MIN_VALID_DAYS
        assert len(inside(test)) >= min_test
        # every trading day before the validation period trains, every day of the test year tests
        assert inside(train).equals(dates[dates < valid[0]]) and inside(test).equals(dates[dates.year == fold["year"]])


def test_sse15_gives_three_test_years_and_refuses_the_others():
    dates = pd.DatetimeIndex(sorted(load_sample()["date"].unique()))
    folds = walk_forward_folds(dates)
    assert [f["year"] for f in folds] == [2017, 2018, 2019]
    assert folds[-1] == {"year": 2019, "train": ("2015-01-05", "2017-12-29"), "valid": ("2018-01-02", "2018-12-28"),
                         "test": ("2019-01-02", "2019-12-31")}
    with pytest.raises(InputError, match="2016, 2020.*choose from 2017, 2018, 2019"):
        walk_forward_folds(dates, [2016, 2019, 2020])
    # half a year of validation: 2016 would train on 2015's first half, 117 days
    assert [f["year"] for f in walk_forward_folds(dates, valid_months=6)] == [2017, 2018, 2019]
    assert [f["year"] for f in walk_forward_folds(dates, valid_months=6, min_train_days=100)] == [2016, 2017, 2018, 2019]
    with pytest.raises(InputError, match="allows no walk-forward"):
        walk_forward_folds(dates[:300])


def test_a_fold_learns_nothing_from_its_validation_or_test_days():
    """Change every bar from the validation period on: the fold's normalisation statistics and
    training features stay the same; change only the test year: validation stays the same too."""
    bars = load_sample()
    bars = bars[bars["tic"].isin(TICKERS)].reset_index(drop=True)
    fold = walk_forward_folds(pd.DatetimeIndex(sorted(bars["date"].unique())), [2018])[0]
    splits = fold_splits(fold)
    before = load_market(bars, splits=splits)

    def shaken(first_day: str) -> pd.DataFrame:
        changed = bars.copy()
        later = pd.to_datetime(changed["date"]) >= pd.Timestamp(first_day)
        for column in ("open", "high", "low", "close"):
            changed.loc[later, column] *= np.where(changed.loc[later, "tic"] == TICKERS[0], 1.5, 0.7)
        changed.loc[later, "volume"] *= 3
        return changed

    after_valid = load_market(shaken(fold["valid"][0]), splits=splits)
    assert after_valid.train.info["feature_mean"] == before.train.info["feature_mean"]
    assert after_valid.train.info["feature_std"] == before.train.info["feature_std"]
    assert np.array_equal(after_valid.train.features.numpy(), before.train.features.numpy())
    assert not np.array_equal(after_valid.valid.features.numpy(), before.valid.features.numpy())  # the shake bites
    after_test = load_market(shaken(fold["test"][0]), splits=splits)
    assert np.array_equal(after_test.valid.features.numpy(), before.valid.features.numpy())
    assert np.array_equal(after_test.valid.close.numpy(), before.valid.close.numpy())


def test_chain_compounds_consecutive_periods():
    first = pd.Series([100.0, 110.0], index=pd.to_datetime(["2020-12-30", "2020-12-31"]))
    second = pd.Series([50.0, 55.0, 44.0], index=pd.to_datetime(["2021-01-04", "2021-01-05", "2021-01-06"]))
    chained = chain([first, second])
    assert chained.tolist() == pytest.approx([100.0, 110.0, 121.0, 96.8])
    assert list(chained.index) == list(first.index) + list(second.index[1:])


def test_bench_walkforward_end_to_end(tmp_path, capsys):
    """Two test years, one seed, a tiny budget on three sample stocks: the record holds every
    run, every policy per year and the intervals per year and pooled; --merge of its parts and
    --summarize give the same summary back."""
    bars = load_sample()
    bars[bars["tic"].isin(TICKERS) & (bars["date"] >= "2016-01-01")].to_csv(tmp_path / "bars.csv", index=False)
    out = tmp_path / "wf.json"
    code = cli.main(["bench", "walkforward", "--data", str(tmp_path / "bars.csv"), "--years", "2018", "2019",
                     "--seeds", "1", "--total-steps", "4096", "--eval-every", "1", "--out", str(out),
                     "--set", "gae_lambda=0.95", "market_baseline=false", "pathwise=false"])  # the plain learner
    assert code == 0
    record = json.loads(out.read_text())
    # --set reaches every run and the record: its config and its command say which learner ran
    assert {k: record["config"][k] for k in ("gae_lambda", "market_baseline", "pathwise")} == {
        "gae_lambda": 0.95, "market_baseline": False, "pathwise": False}
    assert "--set gae_lambda=0.95 market_baseline=false pathwise=false" in record["command"]
    assert out.with_suffix(".png").stat().st_size > 0
    assert sorted((r["year"], r["seed"]) for r in record["runs"]) == [(2018, 0), (2019, 0)]
    assert record["loadavg_start"] and record["machine"]["cpu_count"] >= 1 and "--years 2018 2019" in record["command"]
    years = record["summary"]["years"]
    assert [row["year"] for row in years] == [2018, 2019]
    for row in years:
        assert row["splits"]["valid"][1] < row["splits"]["test"][0]
        assert len(row["agent"]["sharpe_ratio"]["values"]) == 1 and row["days"]["test"] > 200
        for name in ("agent_vs_equal_weight", "agent_vs_equal_shares", "untrained_vs_equal_weight"):
            ci = row["intervals"][name]
            assert ci["low"] <= ci["difference"] <= ci["high"] and ci["curves"] == 1
    pooled = record["summary"]["pooled"]
    assert pooled["years"] == [2018, 2019] and pooled["days"] == sum(r["days"]["test"] - 1 for r in years)
    for year in (2018, 2019):
        part = dict(record, runs=[r for r in record["runs"] if r["year"] == year])
        (tmp_path / f"part{year}.json").write_text(json.dumps(part))
    assert cli.main(["bench", "walkforward", "--merge", str(tmp_path / "part2018.json"), str(tmp_path / "part2019.json"),
                     "--out", str(tmp_path / "merged.json")]) == 0
    assert json.loads((tmp_path / "merged.json").read_text())["summary"] == record["summary"]
    assert cli.main(["bench", "walkforward", "--summarize", str(out), "--out", str(tmp_path / "again.json")]) == 0
    again = json.loads((tmp_path / "again.json").read_text())
    assert again["summary"] == record["summary"] and again["date"] == record["date"] and "summarized" in again
    capsys.readouterr()
    assert cli.main(["bench", "walkforward", "--years", "2016", "--out", str(tmp_path / "no.json")]) == 2
    assert "choose from 2017, 2018, 2019" in capsys.readouterr().err
    # a bad --set, a field the benchmark sets itself, and a resume with another learner: one line each, exit 2
    for wrong, said in ((["--set", "no_such_field=1"], "--set:"), (["--set", "seed=3"], "--set seed"),
                        (["--resume"], "--resume: ")):
        assert cli.main(["bench", "walkforward", "--data", str(tmp_path / "bars.csv"), "--years", "2018",
                         "--seeds", "1", "--total-steps", "4096", "--out", str(out), *wrong]) == 2, wrong
        assert said in capsys.readouterr().err, wrong
