"""The sweep's plumbing (``bench sweep``) on a tiny budget: same env-steps and the same validation
grid for every variant, a complete record, bad options in one line."""
from __future__ import annotations

import json

import pytest

from finrl_tutorial.agents import PPOConfig
from finrl_tutorial.bench.sweep import (FACTOR_NAME, common_budget, default_variants, eval_every_for, factor_bars,
                                        log_volume_ratio, plot_sweep, summarize, verdict)
from finrl_tutorial.book.sweep import summary_table
from finrl_tutorial.cli import main
from finrl_tutorial.errors import InputError


def test_variants_change_one_knob_around_the_defaults():
    base = PPOConfig()
    variants = default_variants()
    assert variants["base"] == {}
    assert variants[f"batch_size={base.batch_size // 4}"] == {"batch_size": base.batch_size // 4}
    assert variants[f"horizon_len={base.horizon_len * 2}"] == {"horizon_len": base.horizon_len * 2}
    assert variants[f"repeat_times={base.repeat_times // 2}"] == {"repeat_times": base.repeat_times // 2}
    assert all(len(change) <= 1 for change in variants.values())
    knobs = [next(iter(change)) for change in variants.values() if change]
    assert set(knobs[:3]) == {"batch_size", "horizon_len", "repeat_times"}  # one of each before any second


def test_budget_and_grid_are_common_to_every_variant():
    variants = default_variants()
    total = common_budget(300_000, variants, 12)
    assert total == 294_912  # 36 x 8,192 = 72 x 4,096 = 144 x 2,048
    for change in variants.values():
        config = PPOConfig(**change, total_steps=total)
        assert config.iterations * config.rollout_size == total
        every = eval_every_for(config, 12)
        assert every >= 2 and (config.iterations // every) == 12
    with pytest.raises(InputError, match="larger budget"):
        common_budget(100_000, variants, 12)
    with pytest.raises(InputError, match="equal parts"):
        eval_every_for(PPOConfig(total_steps=73 * 4096), 12)


def test_verdict_needs_ranges_apart_and_three_seeds():
    assert verdict([1.0, 1.1, 1.2], [0.0, 0.1, 0.2]) == "higher"
    assert verdict([-1.0, -0.9, -0.8], [0.0, 0.1, 0.2]) == "lower"
    assert verdict([0.15, 1.1, 1.2], [0.0, 0.1, 0.2]) == "inconclusive"  # overlap: no effect, no equality
    assert verdict([1.0, 1.1], [0.0, 0.1]) == "too few seeds"


def test_factor_is_the_log_of_a_past_volume_ratio():
    bars = factor_bars()
    one = bars[bars["tic"] == bars["tic"].iloc[0]]
    day = 30
    past = one["volume"].iloc[day - 20:day].mean()
    assert one[FACTOR_NAME].iloc[day] == pytest.approx(float(__import__("math").log(one["volume"].iloc[day] / past)))
    assert one[FACTOR_NAME].iloc[:5].isna().all()  # fewer than 5 past days: no value
    # no look-ahead: changing tomorrow's volume leaves today's factor alone
    changed = bars.copy()
    changed.loc[one.index[day + 1], "volume"] *= 10
    assert log_volume_ratio(changed).loc[one.index[day]] == pytest.approx(one[FACTOR_NAME].iloc[day])


def test_tiny_sweep_writes_a_complete_record(tmp_path, capsys):
    out = tmp_path / "sweep.json"
    args = ["bench", "sweep", "--markets", "synthetic", "--variants", "horizon_len=32", "--seeds", "1",
            "--total-steps", "16384", "--evaluations", "2", "--out", str(out)]
    assert main(args) == 0
    record = json.loads(out.read_text())
    assert out.with_suffix(".png").is_file()
    for key in ("date", "machine", "command", "seeds"):
        assert record[key]
    assert record["command"].startswith("python -m finrl_tutorial bench sweep") and record["seeds"] == [0]
    runs = {run["variant"]: run for run in record["runs"]}
    assert set(runs) == {"base", "horizon_len=32"}
    assert runs["base"]["rollout_size"] == 2 * runs["horizon_len=32"]["rollout_size"]
    for run in runs.values():
        assert run["env_steps"] == record["total_steps"] == 16384
        steps = [e["env_steps"] for e in run["evaluations"]]
        # after the first iteration, then every total / evaluations env-steps, and at the end
        assert steps == [run["rollout_size"], run["rollout_size"] + 8192, 16384]
        assert run["final_valid_sharpe"] == run["evaluations"][-1]["valid_sharpe"]
        assert run["best_valid_sharpe"] == max(e["valid_sharpe"] for e in run["evaluations"])
        assert len(run["training"]["reward_mean"]) == run["iterations"]
        assert run["wall_seconds"] > 0 and "oracle_valid_sharpe" in run and "best_test_capture" in run
        assert all(len(e["valid_returns"]) == run["valid_days"] - 1 for e in run["evaluations"])
    (entry,) = record["overfitting"]  # one synthetic market (seed 0): 2 variants x 3 validations
    assert entry["trials"] == 6 and entry["moments"] == "measured" and 0 <= entry["pbo"]["pbo"] <= 1
    rows = summarize(record["runs"])
    assert {row["variant"] for row in rows} == {"base", "horizon_len=32"}
    assert summary_table(record).shape[0] == 2
    plot_sweep(record)
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert sum(1 for line in lines if line.get("summary")) == 2

    # --resume keeps the finished runs: nothing is trained again
    record_before = out.read_text()
    assert main(args + ["--resume"]) == 0
    assert json.loads(out.read_text())["runs"] == json.loads(record_before)["runs"]
    # the record says which learner ran; --resume refuses to mix in runs of another one
    assert {record["base_config"][k] for k in ("market_baseline", "pathwise")} == {True}
    assert main(args + ["--resume", "--set", "gae_lambda=0.95", "market_baseline=false", "pathwise=false"]) == 2
    assert "was made with another base config (gae_lambda, market_baseline, pathwise)" in capsys.readouterr().err


def test_merge_joins_parts_of_one_sweep(tmp_path):
    from finrl_tutorial.bench.sweep import merge_records

    def part(name, runs, **header):
        record = {"bench": "sweep", "experiment": "knobs", "total_steps": 100, "evaluations": 2,
                  "base_config": {"num_envs": 64}, "base_variant": "base", "command": f"cmd {name}",
                  "date": "2026-12-01T00:00:00+00:00", "machine": {"cpu_count": 2},
                  "variants": {r[1]: {} for r in runs}, "markets": {"sample": "s"}, **header,
                  "runs": [{"market": m, "variant": v, "seed": s, "final_valid_sharpe": f, "best_valid_sharpe": f,
                            "wall_seconds": 1.0, "approx_kl_mean": 0.0, "clip_fraction_mean": 0.0,
                            "buy_and_hold_valid_sharpe": 0.0, "untrained_valid_sharpe": 0.0,
                            "evaluations": [{"env_steps": 100, "valid_sharpe": f}]} for m, v, s, f in runs]}
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(record))
        return path

    a = part("a", [("sample", "base", s, 0.1 * s) for s in range(3)])
    b = part("b", [("sample", "base", 0, 9.0)] + [("sample", "horizon_len=128", s, 1 + 0.1 * s) for s in range(3)])
    merged = merge_records([a, b], tmp_path / "m.json", "merge cmd")
    assert len(merged["runs"]) == 6  # base seed 0 once, from the first file
    assert [r["final_valid_sharpe"] for r in merged["runs"] if r["variant"] == "base"] == [0.0, 0.1, 0.2]
    assert [c["command"] for c in merged["merged_from"]] == ["cmd a", "cmd b"]
    row = next(r for r in merged["summary"] if r["variant"] == "horizon_len=128")
    assert row["final_valid_sharpe_vs_base"] == "higher"
    partial = part("p", [("sample", "batch_size=256", 0, 1.0)])
    merged = merge_records([a, b, partial], tmp_path / "m2.json")
    assert merged["incomplete_variants_left_out"] == ["batch_size=256"]
    assert "batch_size=256" not in {r["variant"] for r in merged["runs"]} | set(merged["variants"])
    other = part("c", [("sample", "base", 0, 0.0)], total_steps=200)
    with pytest.raises(InputError, match="other settings"):
        merge_records([a, other], tmp_path / "x.json")


@pytest.mark.parametrize("extra, message", [
    (["--variants", "gamma=0.5"], "unknown variant"),
    (["--seeds", "0"], "--seeds must be >= 1"),
    (["--total-steps", "1000"], "larger budget"),
    (["--set", "batch_size=256"], "--set batch_size: the sweep sets these itself"),
    (["--set", "seed=3"], "--set seed: the sweep sets these itself"),
    (["--set", "no_such_field=1"], "--set:"),
])
def test_bad_options_end_in_one_line(tmp_path, capsys, extra, message):
    code = main(["bench", "sweep", "--out", str(tmp_path / "s.json"), *extra])
    err = capsys.readouterr().err
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1


def test_a_sweep_with_set_runs_every_variant_with_the_overrides_and_records_them(tmp_path):
    out = tmp_path / "plain.json"
    args = ["bench", "sweep", "--markets", "synthetic", "--variants", "horizon_len=32", "--seeds", "1",
            "--total-steps", "16384", "--evaluations", "2", "--out", str(out),
            "--set", "gae_lambda=0.95", "market_baseline=false", "pathwise=false"]
    assert main(args) == 0
    record = json.loads(out.read_text())
    assert (record["base_config"]["gae_lambda"], record["base_config"]["market_baseline"],
            record["base_config"]["pathwise"]) == (0.95, False, False)
    assert "--set gae_lambda=0.95 market_baseline=false pathwise=false" in record["command"]
    from finrl_tutorial.book import teaching
    assert teaching.ran_plain_learner(record)  # read from the stored base config, whatever the date
    command = teaching.reader_command("python -m finrl_tutorial bench sweep --seeds 3 --out runs/s.json", plain=True)
    assert command.endswith("--set gae_lambda=0.95 market_baseline=false pathwise=false")
