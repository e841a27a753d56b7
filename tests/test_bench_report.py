"""The readings of chapters 4-8 (finrl_tutorial.book.report) on small hand-made records with known answers."""
from __future__ import annotations

import pytest

from finrl_tutorial.bench import command_line, scale_label
from finrl_tutorial.book import (
    full_run_commentary,
    loop_cost_lines,
    peer_ratio_table,
    peer_table,
    peer_target_lines,
    provenance,
    scale_findings,
    scale_spread,
)

MACHINE = {"cpu_count": 2, "platform": "Linux-x", "torch": "2.13.0+cpu", "threads": 1}


def test_provenance_reads_flat_and_nested_machine_fields():
    flat = [MACHINE | {"date": "2026-12-01T10:00:00+00:00"}, MACHINE | {"date": "2026-12-01T10:30:00+00:00"}]
    assert provenance(flat) == {"records": 2, "measured": "2026-12-01 10:00 .. 10:30 UTC", "CPU cores": "2",
                                "torch threads": "1", "torch": "2.13.0+cpu", "GPU": "none", "platform": "Linux-x"}
    nested = [{"machine": MACHINE | {"date": "2026-12-01T09:00:00+00:00", "gpu": "H200"}}]
    facts = provenance(nested)
    assert facts["GPU"] == "H200" and facts["measured"].startswith("2026-12-01 09:00")


def test_loop_cost_is_the_update_share_of_the_loop_time():
    train = [{"algo": "ppo", "num_envs": 64, "rollout_env_steps_per_s": 10.0, "samples_per_s": 5.0},
             {"algo": "ppo", "num_envs": 1024, "rollout_env_steps_per_s": 100.0, "samples_per_s": 25.0}]
    env = [{"env": "vec", "num_envs": 1024, "env_steps_per_s": 400.0}]
    # per sample: rollout 1/100 s, loop 1/25 s, so the update is 3/4 of the time; rollout = 25 % of bare
    assert loop_cost_lines(train, env) == [
        "PPO with 1,024 envs: rollout 100/s (25% of the bare env), whole loop 25/s: the update takes 75% of the time"]
    assert "of the bare env" not in loop_cost_lines(train, [{"env": "vec", "num_envs": 64, "env_steps_per_s": 1.0}])[0]


def _scale(layout, processes, num_envs, **rates):
    return {"layout": layout, "processes": processes, "num_envs": num_envs, **rates}


def test_scale_findings_compare_two_processes_with_one_and_batched_with_subproc():
    records = [
        _scale("subproc", 2, 2, env_steps_per_s=100.0),
        _scale("vec", 1, 1024, env_steps_per_s=5000.0),
        _scale("ddp", 1, 256, env_steps_per_s=1000.0, samples_per_s=100.0, envs_per_process=256,
               runs=[{"samples_per_s": 100.0}, {"samples_per_s": 90.0}]),
        _scale("ddp", 2, 512, env_steps_per_s=1800.0, samples_per_s=150.0, envs_per_process=256,
               runs=[{"samples_per_s": 150.0}, {"samples_per_s": 180.0}]),
    ]
    lines = scale_findings(records)
    assert lines[0] == ("* DDP, 2 ranks vs 1: 1.50× the training samples/s (256 envs per rank); "
                        "env-steps/s of the two ranks together 1.80× one rank's.")
    assert lines[1] == "* ddp: 2 vs 1 run by run (interleaved pairs): 1.50×, 2.00×"
    assert lines[-1] == "* One batched env at its best: 5,000 env-steps/s, 50× the best subprocess VecEnv."
    assert [scale_label(r) for r in records] == ["subproc ×2", "vec 1,024", "ddp ×1 (256 envs)", "ddp ×2 (512 envs)"]
    assert scale_spread(records) == pytest.approx({"ddp ×1 (256 envs)": 10 / 95, "ddp ×2 (512 envs)": 30 / 165})
    # an older record without repeats or the workers layout is still read
    assert len(scale_findings([{k: v for k, v in r.items() if k != "runs"} for r in records])) == 2


def test_peer_tables_and_targets():
    records = [
        {"measurement": "summary", "ratios": {"ours/peer": 4.0},
         "targets": {"ours_vs_peer": {"target": 100.0, "best": "ours", "ratio": 4.0, "met": False}}, "skipped": {}},
        {"label": "ours", "library": "finrl_tutorial", "env_steps_per_s": 40.0, "runs": [40.0, 60.0],
         "spread": 0.5, "repeats": 2},
        {"label": "peer", "library": "finrl", "env_steps_per_s": 10.0, "runs": [10.0, 20.0], "spread": 1.0,
         "repeats": 2, "imported": "package"},
    ]
    table = peer_table(records)
    assert list(table["what"]) == ["ours", "peer"] and list(table["max"]) == [60.0, 20.0]
    ratios = peer_ratio_table(records)
    assert ratios.loc["ours/peer"].tolist() == [4.0, 3.0, 4.0]  # rounds: 40/10, 60/20
    lines = peer_target_lines(records)
    assert lines[0] == "* `ours_vs_peer`: 4.0× with `ours` (round by round 3.0× .. 4.0×; target 100×): **not met**."
    assert lines[-1].startswith("* ElegantRL's vectorised env ran on the CPU only")  # no GPU record of it
    records[2]["label"] = "finrl_env"
    assert "* FinRL's env was imported from its package." in peer_target_lines(records[:2] + [records[2]] + [
        dict(records[2], label="peer")])


def _metrics(sharpe, ret=0.1, turnover=0.01):
    return {"sharpe_ratio": sharpe, "cumulative_return": ret, "turnover": turnover}


def test_full_run_commentary_is_computed_from_the_report():
    report = {"seeds": [0, 1], "agent": _metrics(1.0), "agent_std": _metrics(0.1, 0.01, 0.0),
              "agent_per_seed": {"0": _metrics(0.9), "1": _metrics(1.1)},
              "baselines": {"equal_weight_buy_and_hold": _metrics(1.5, 0.2, 0.001), "random": _metrics(0.95)},
              "sharpe_vs_buy_and_hold": {"difference": -0.5, "low": -0.9, "high": -0.1, "verdict": "loses"},
              "valid_sharpe_per_seed": {"0": -0.2, "1": 0.3}}
    lines = full_run_commentary(report)
    assert lines[0] == ("* Test Sharpe of the agent: 1.00 ± 0.10 over 2 seeds (seeds range 0.90 .. 1.10); "
                        "equal-weight buy-and-hold 1.50.")
    assert "[-0.90, -0.10]: **loses**." in lines[1]
    assert "within one seed-std of the agent: random" in lines[2]
    assert lines[-1].endswith("of both signs across seeds.")


def test_command_line_names_the_package_module():
    assert command_line(["/x/finrl_tutorial/__main__.py", "bench", "env", "--env", "vec"]) == \
        "python -m finrl_tutorial bench env --env vec"
    assert command_line(["finrl-tutorial", "bench", "scale", "--out", "a b"]) == "finrl-tutorial bench scale --out 'a b'"


def test_bench_run_puts_the_command_into_every_record_and_keeps_one_a_bench_wrote(monkeypatch):
    import argparse

    import finrl_tutorial.bench as bench
    from finrl_tutorial.bench import env as env_bench

    written = []

    def fake_run(args):  # like bench gpu/scale: yield the records, then write the same dicts to --out
        records = [{"bench": "env", "x": 1}, {"bench": "env", "command": "its own"}]
        for record in records:
            yield record
        written.extend(dict(r) for r in records)

    monkeypatch.setattr(env_bench, "run", fake_run)
    monkeypatch.setattr("sys.argv", ["/site/finrl_tutorial/__main__.py", "bench", "env", "--num-envs", "4"])
    yielded = list(bench.run(argparse.Namespace(bench="env", threads=1)))
    assert [r["command"] for r in yielded] == ["python -m finrl_tutorial bench env --num-envs 4", "its own"]
    assert [r["command"] for r in written] == [r["command"] for r in yielded]  # the file gets it too
