"""`bench peers`: peers missing (simulated) skip in one line; SB3's PPO on our env; the records;
the CLI end to end at a tiny size. Tests that need a peer import it with `pytest.importorskip`."""
from __future__ import annotations

import importlib.metadata
import json
import sys
import textwrap

import pytest
import torch

from finrl_tutorial import cli
from finrl_tutorial.bench import peers
from finrl_tutorial.envs import EnvConfig

TINY = ["--stocks", "3", "--num-envs", "4", "--seconds", "0.05", "--repeats", "2", "--loop-envs", "4",
        "--iterations", "1"]


def run_cli(capsys, *argv) -> tuple[int, list[dict], str]:
    code = cli.main(["bench", "peers", *argv])
    captured = capsys.readouterr()
    return code, [json.loads(line) for line in captured.out.splitlines() if line.strip()], captured.err


@pytest.fixture
def no_peers(monkeypatch):
    """Every peer looks uninstalled, whatever this machine has."""
    real = peers.peer_installed
    monkeypatch.setattr(peers, "peer_installed",
                        lambda top: False if top in peers.PEER_DISTRIBUTIONS else real(top))


def test_missing_peers_skip_in_one_line_and_the_rest_is_measured(no_peers, capsys, tmp_path):
    out = tmp_path / "peers.jsonl"
    code, records, _ = run_cli(capsys, "--measure", "finrl_env", "elegantrl_env", "sb3_ppo_finrl_env",
                               "sb3_ppo_our_env", "our_env", *TINY, "--out", str(out))
    assert code == 0
    skipped = [r for r in records if "skipped" in r and r["measurement"] != "summary"]
    assert {r["measurement"] for r in skipped} == {"finrl_env", "elegantrl_env", "sb3_ppo_finrl_env",
                                                    "sb3_ppo_our_env"}
    for record in skipped:
        assert "\n" not in record["skipped"] and "not installed" in record["skipped"]
    ours = [r for r in records if r["measurement"] == "our_env" and "skipped" not in r]
    assert {r["label"] for r in ours} == {"our_env_single", "our_env_vec_4"}
    assert all(r["env_steps_per_s"] > 0 and len(r["runs"]) == 2 for r in ours)
    summary = records[-1]
    assert summary["measurement"] == "summary" and set(summary["skipped"]) >= {"finrl_env", "sb3_ppo_our_env"}
    assert summary["ratios"] == {} and summary["targets"] == {}  # nothing to compare ours with
    # the file holds the same records as stdout, one per line
    assert [json.loads(line) for line in out.read_text().splitlines()] == records


def test_records_carry_date_machine_versions_and_command(capsys):
    code, records, _ = run_cli(capsys, "--measure", "our_env", "our_ppo", *TINY)
    assert code == 0
    for record in records:
        assert {"date", "cpu_count", "platform", "torch", "threads", "versions", "command"} <= set(record)
        assert set(record["versions"]) >= {"stable-baselines3", "finrl", "elegantrl", "torch"}
        assert record["versions"]["torch"] == importlib.metadata.version("torch")
        assert record["command"].startswith("python -m finrl_tutorial bench peers --measure our_env our_ppo")
    measured = {r["label"]: r for r in records[:-1]}
    assert measured["our_ppo_4"]["samples_per_s"] > 0 and measured["our_ppo_4"]["repeats"] == 2
    spread = measured["our_env_vec_4"]
    runs = spread["runs"]
    assert spread["spread"] == pytest.approx((max(runs) - min(runs)) / spread["env_steps_per_s"])


def test_set_times_a_variant_of_our_loop_beside_its_defaults(capsys):
    code, records, _ = run_cli(capsys, "--measure", "our_ppo", *TINY, "--set", "hidden_sizes=8,8", "repeat_times=1")
    assert code == 0
    loops = {r["label"]: r for r in records if r["measurement"] == "our_ppo"}
    assert set(loops) == {"our_ppo_4", "our_ppo_4_set"}
    assert loops["our_ppo_4_set"]["overrides"] == {"hidden_sizes": [8, 8], "repeat_times": 1}
    assert loops["our_ppo_4_set"]["hidden_sizes"] == [8, 8] and loops["our_ppo_4"]["overrides"] == {}
    assert run_cli(capsys, "--measure", "our_ppo", *TINY, "--set", "no_such_field=1")[0] == 2  # one line, exit 2


def test_summary_ratios_and_targets():
    make = lambda label, runs: peers.Measurement(label, "x", label, "u", lambda: 0.0, runs=runs)  # noqa: E731
    measured = [make("finrl_env", [1.0, 2.0, 3.0]), make("our_env_vec_1024", [300.0, 200.0, 250.0]),
                make("elegantrl_env_1024", [10.0, 10.0, 10.0]), make("sb3_ppo_finrl_env", [4.0]),
                make("sb3_ppo_our_env", [10.0]), make("our_ppo_64", [100.0])]
    result = peers.summary(measured, stocks=30)
    assert result["ratios"]["our_env_vec_1024/finrl_env"] == pytest.approx(125.0)
    assert result["ratios"]["our_env_vec_1024/elegantrl_env_1024"] == pytest.approx(25.0)
    assert result["ratios"]["our_ppo_64/sb3_ppo_finrl_env"] == pytest.approx(25.0)
    target = result["targets"]["batched_env_vs_finrl_env"]
    assert target["met"] is True and target["best"] == "our_env_vec_1024"
    assert result["targets"]["our_ppo_vs_sb3_ppo_our_env"]["met"] is False
    assert peers.summary(measured, stocks=15)["targets"]["batched_env_vs_finrl_env"]["met"] is None
    # a loop timed with --set overrides gets its ratio, but the target is the default agent's
    variant = peers.summary(measured + [make("our_ppo_64_set", [1000.0])], stocks=30)
    assert variant["ratios"]["our_ppo_64_set/sb3_ppo_finrl_env"] == pytest.approx(250.0)
    assert variant["targets"]["our_ppo_vs_sb3_ppo_finrl_env"]["best"] == "our_ppo_64"
    assert variant["targets"]["our_ppo_vs_sb3_ppo_finrl_env"]["met"] is False


def test_sb3_ppo_train_without_sb3_raises_peer_missing(no_peers):
    from finrl_tutorial.data import load_market

    with pytest.raises(peers.PeerMissing, match="stable-baselines3"):
        peers.sb3_ppo_train(load_market(tickers=["600000.SH"]), EnvConfig(), total_steps=64, seed=0)
    assert issubclass(peers.PeerMissing, RuntimeError)


@pytest.mark.slow
def test_sb3_ppo_train_returns_a_deterministic_policy_of_the_right_shape():
    pytest.importorskip("stable_baselines3")
    from finrl_tutorial.backtest.runner import run_policy
    from finrl_tutorial.data import load_market

    prepared = load_market(tickers=load_market().train.tickers[:3])
    policy, seconds = peers.sb3_ppo_train(prepared, EnvConfig(), total_steps=64, seed=0)
    assert seconds > 0
    from finrl_tutorial.envs import VecStockTradingEnv
    obs, _ = VecStockTradingEnv(prepared.valid, 1, dtype=torch.float64).reset()
    action = policy(obs)
    assert action.shape == (1, 3) and action.dtype == torch.float64
    assert torch.equal(action, policy(obs)) and bool((action.abs() <= 1).all())
    record = run_policy(policy, prepared.valid)  # the backtest runner accepts it as a Policy
    assert len(record.wealth) == prepared.valid.num_days


def test_finrl_env_falls_back_to_its_module_file(tmp_path, monkeypatch):
    """FinRL's package __init__ imports its trading/data code; the env module alone is enough."""
    package = tmp_path / "finrl"
    (package / "meta" / "env_stock_trading").mkdir(parents=True)
    (package / "__init__.py").write_text("import alpaca_trade_api_not_here\n")
    (package / "meta" / "__init__.py").write_text("")
    (package / "meta" / "env_stock_trading" / "__init__.py").write_text("")
    (package / "meta" / "env_stock_trading" / "env_stocktrading.py").write_text(textwrap.dedent("""
        class StockTradingEnv:
            pass
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in [n for n in sys.modules if n == "finrl" or n.startswith("finrl.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.delitem(sys.modules, peers._FINRL_FILE_MODULE, raising=False)
    env_class, how = peers.finrl_env_class()
    assert env_class.__name__ == "StockTradingEnv" and env_class.__module__ == peers._FINRL_FILE_MODULE
    assert how.startswith("module file") and "alpaca_trade_api_not_here" in how
    monkeypatch.delitem(sys.modules, peers._FINRL_FILE_MODULE)


def test_peer_envs_on_our_bars(capsys):
    """FinRL's and ElegantRL's envs run on the same bars and are measured with ours."""
    pytest.importorskip("stable_baselines3")
    pytest.importorskip("finrl")
    pytest.importorskip("elegantrl")
    code, records, _ = run_cli(capsys, "--measure", "finrl_env", "elegantrl_env", "our_env", *TINY)
    assert code == 0
    measured = {r["label"]: r for r in records if "label" in r}
    assert set(measured) == {"finrl_env", "elegantrl_env_4", "our_env_single", "our_env_vec_4"}
    assert all(r["env_steps_per_s"] > 0 for r in measured.values())
    assert set(records[-1]["ratios"]) >= {"our_env_vec_4/finrl_env", "our_env_vec_4/elegantrl_env_4"}


def test_finrl_frame_has_the_peer_format():
    from finrl_tutorial.bench import market_with_stocks
    from finrl_tutorial.data import load_market

    market = market_with_stocks(load_market().train.slice_days(0, 80), 4)
    frame = peers.finrl_frame(market)
    assert list(frame.columns) == ["date", "tic", "open", "high", "low", "close", *peers.FINRL_INDICATORS]
    assert frame["tic"].nunique() == 4 and frame.index.nunique() == 80  # widened columns get distinct names
    assert not frame.isna().any().any()
    day = frame.loc[10]
    assert len(day) == 4 and list(day["tic"]) == sorted(day["tic"])
    close, tech = peers.elegantrl_arrays(frame)
    assert close.shape == (80, 4) and tech.shape == (80, 4 * len(peers.FINRL_INDICATORS))


def test_bad_options_exit_2_with_one_line(capsys):
    code, records, err = run_cli(capsys, "--measure", "our_env", "--repeats", "0")
    assert code == 2 and records == [] and err.count("\n") == 1 and "--repeats" in err
