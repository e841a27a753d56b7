"""Run folders and writers under faults: a damaged or changed run is refused in one line at resume,
no command replaces another's files, every writer is locked, a full disk leaves no half-written
result, and a run is resolved once (one lock, one device check). Tiny budgets on sse15."""
import dataclasses
import errno
import json
import os
import shutil
from pathlib import Path

import pandas as pd
import pytest
import torch

from finrl_tutorial import cli
from finrl_tutorial.agents import PPOConfig, make_config
from finrl_tutorial.atomic import append_open, written_together
from finrl_tutorial.envs import EnvConfig
from finrl_tutorial.errors import InputError, RunFolderError
from finrl_tutorial.provenance import fast_mode
from finrl_tutorial.training import agent_from_checkpoint, load_checkpoint, run_experiment, runs, train
from finrl_tutorial.training import run as run_module

torch.set_num_threads(1)
TINY = dict(num_envs=8, horizon_len=16, batch_size=64, repeat_times=1, total_steps=256)  # 2 iterations
TINY_FLAGS = ["--num-envs", "8", "--horizon-len", "16", "--batch-size", "64", "--repeat-times", "1",
              "--total-steps", "256", "--eval-every", "1", "--no-progress"]


def one_line_error(capsys, *argv) -> str:
    code = cli.main([str(a) for a in argv])
    err = capsys.readouterr().err.strip()
    assert code == 2, err
    assert len(err.splitlines()) == 1 and err.startswith("error: ") and "Traceback" not in err, err
    return err


@pytest.fixture(scope="module")
def trained(sse15, tmp_path_factory):
    """One finished tiny run (main job), copied by each test that changes it."""
    folder = tmp_path_factory.mktemp("trained") / "run"
    run_experiment(sse15, make_config("ppo", **TINY), out_dir=folder, eval_every=1, progress=False)
    return folder


@pytest.fixture
def run_copy(trained, tmp_path):
    folder = tmp_path / "run"
    shutil.copytree(trained, folder)
    return folder


def _resume(sse15, folder, market=None):
    return run_experiment(market or sse15, make_config("ppo", **TINY), out_dir=folder, eval_every=1,
                          progress=False, resume=True)


# --- resume: refused in one line when the run or its data is not what it was -------------------------------

def test_resume_refuses_data_whose_contents_changed(sse15, run_copy):
    train_split = sse15.train
    changed = dataclasses.replace(train_split, close=train_split.close * 1.01)  # same source, tickers, dates
    market = dataclasses.replace(sse15, splits=sse15.splits | {"train": changed})
    with pytest.raises(RunFolderError, match="data differs from the data the run started on") as caught:
        _resume(sse15, run_copy, market)
    assert "\n" not in str(caught.value)
    _resume(sse15, run_copy)  # the same data resumes (a finished run: nothing to do)


@pytest.mark.parametrize("damage, fragment", [
    (lambda f: (f / "checkpoints" / "last.pt").unlink(), "last.pt is missing"),
    (lambda f: (f / "config.json").write_text("{not json"), "config.json is damaged"),
    (lambda f: (f / "config.json").write_text("[1, 2]"), "config.json is damaged"),
    (lambda f: (f / "log.csv").write_text(""), "log.csv is damaged"),
    (lambda f: (f / "log.csv").write_text("a,b\n1,2\n"), "log.csv is damaged"),
])
def test_a_damaged_run_folder_is_refused_at_resume(sse15, run_copy, damage, fragment):
    damage(run_copy)
    before = {p.name: p.read_bytes() for p in run_copy.rglob("*") if p.is_file()}
    with pytest.raises(RunFolderError, match=fragment) as caught:
        _resume(sse15, run_copy)
    assert "\n" not in str(caught.value)
    assert {p.name: p.read_bytes() for p in run_copy.rglob("*") if p.is_file()} == before  # nothing changed


@pytest.mark.parametrize("field, value, fragment", [
    ("iteration", "1", "iteration is '1', not a int"),
    ("iteration", 99, "outside this run's 0..2"),
    ("best_valid_sharpe", None, "best_valid_sharpe is None"),
    ("rng_torch", [1, 2], "random states"),
])
def test_a_hand_edited_checkpoint_field_is_refused_at_resume(sse15, run_copy, field, value, fragment):
    last = run_copy / "checkpoints" / "last.pt"
    torch.save(load_checkpoint(last) | {field: value}, last)
    with pytest.raises(InputError, match=fragment):
        _resume(sse15, run_copy)


@pytest.mark.parametrize("fees, fragment", [
    ("abc", "fees is 'abc'"),
    ({"commission_rate": "x"}, "fees.commission_rate is 'x'"),
    ({"commission_rate": -0.1}, "fees.commission_rate is -0.1"),
    ({"stamp_duty": [["2020-01-01"]]}, "fees.stamp_duty"),
    ({"rebate": 0.1}, "unknown fields rebate"),
])
def test_invalid_fees_in_a_checkpoint_are_refused_not_replaced_by_defaults(trained, fees, fragment):
    state = load_checkpoint(trained / "checkpoints" / "best.pt")
    state["env_config"] = state["env_config"] | {"fees": fees}
    with pytest.raises(InputError, match=fragment):
        agent_from_checkpoint(state)
    state["config"] = state["config"] | {"num_envs": "8"}  # a config field of the wrong type
    state["env_config"].pop("fees")
    with pytest.raises(InputError, match="config cannot be used.*num_envs"):
        agent_from_checkpoint(state)


# --- a run's files are its own; every writer is locked ------------------------------------------------

def test_backtest_into_a_training_run_folder_is_refused(capsys, run_copy):
    plot = (run_copy / "equity.png").read_bytes()
    err = one_line_error(capsys, "backtest", "--checkpoint", run_copy / "checkpoints" / "best.pt", "--out", run_copy,
                         "--overwrite")
    assert "training run's folder" in err and "backtest" in err
    assert (run_copy / "equity.png").read_bytes() == plot and not (run_copy / "backtest.json").exists()


def test_a_second_backtest_on_one_out_is_refused_while_the_first_writes(capsys, trained, tmp_path):
    out = tmp_path / "bt"
    with runs.RunLock(out):  # the first backtest holds the folder
        err = one_line_error(capsys, "backtest", "--checkpoint", trained / "checkpoints" / "best.pt", "--out", out)
    assert "in use by another process" in err
    assert not (out / "backtest.json").exists() and not (out / "equity.png").exists()


def test_bench_out_files_are_locked(tmp_path):
    target = tmp_path / "records.json"
    with runs.file_lock(target):
        with pytest.raises(RunFolderError, match="records.json is in use by another process"):
            with runs.file_lock(target):
                pass
    with runs.file_lock(target):  # released: free again, and no lock file is left behind
        pass
    assert list(tmp_path.iterdir()) == []


def test_a_dangling_symlink_as_out_is_one_line(capsys, trained, tmp_path):
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "nowhere")
    err = one_line_error(capsys, "backtest", "--checkpoint", trained / "checkpoints" / "best.pt", "--out", link)
    assert "which does not exist" in err
    err = one_line_error(capsys, "train", *TINY_FLAGS, "--out", link)
    assert "which does not exist" in err and not (tmp_path / "nowhere").exists()


# --- a full disk: one line, nothing half-written ---------------------------------------------------------

def _full_disk(*args, **kwargs):
    raise OSError(errno.ENOSPC, "No space left on device")


def test_a_full_disk_during_a_backtest_leaves_neither_file(capsys, monkeypatch, trained, tmp_path):
    import matplotlib.figure
    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", _full_disk)  # the plot, after the JSON
    out = tmp_path / "bt"
    err = one_line_error(capsys, "backtest", "--checkpoint", trained / "checkpoints" / "best.pt", "--out", out)
    assert "No space left on device" in err
    assert not out.exists() or [p.name for p in out.iterdir()] == []  # no JSON without its plot, no temp file


def test_a_full_disk_during_training_is_one_line_and_keeps_the_log_whole(capsys, monkeypatch, tmp_path):
    import finrl_tutorial.atomic as atomic
    monkeypatch.setattr(atomic.torch, "save", _full_disk)  # the first checkpoint
    out = tmp_path / "run"
    err = one_line_error(capsys, "train", *TINY_FLAGS, "--out", out)
    assert "No space left on device" in err
    assert not any(p.name.endswith((".tmp", ".tmp.png")) for p in out.rglob("*"))
    assert not (out / "checkpoints" / "last.pt").exists()


def test_an_append_that_fails_half_way_is_cut_off(tmp_path):
    path = tmp_path / "log.csv"
    path.write_text("a,b\n1,2\n")
    with pytest.raises(OSError):
        with append_open(path) as stream:
            stream.write("3,")
            stream.flush()
            raise OSError(errno.ENOSPC, "No space left on device")
    assert path.read_text() == "a,b\n1,2\n"


def test_files_written_together_appear_together_or_not_at_all(tmp_path):
    with pytest.raises(KeyError):
        with written_together(tmp_path / "a.json", tmp_path / "b.png") as (a, b):
            a.write_text("{}")
            raise KeyError("the plot failed")
    assert list(tmp_path.iterdir()) == []
    with written_together(tmp_path / "a.json", tmp_path / "b.png") as (a, b):
        a.write_text("{}")
        b.write_bytes(b"png")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json", "b.png"]
    assert (tmp_path / "a.json").stat().st_mode & 0o777 == 0o666 & ~_umask()


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


# --- one run, resolved once ---------------------------------------------------------------------------------

def test_an_experiment_claims_its_folder_once_and_checks_the_device_once(sse15, tmp_path, monkeypatch):
    calls = {"claim": 0, "device": 0}
    real_claim, real_device = runs.claim, run_module.require_device

    def counting_claim(*args, **kwargs):
        calls["claim"] += 1
        return real_claim(*args, **kwargs)

    def counting_device(device):
        calls["device"] += 1
        return real_device(device)

    monkeypatch.setattr(runs, "claim", counting_claim)
    monkeypatch.setattr(run_module, "require_device", counting_device)
    run_experiment(sse15, make_config("ppo", **TINY | {"total_steps": 128}), out_dir=tmp_path / "run", seeds=2,
                   eval_every=0, progress=False)
    assert calls == {"claim": 1, "device": 1}
    assert not hasattr(runs, "_held")  # no process-wide registry of held folders


def test_a_resolved_run_takes_no_folder_options_beside_it(sse15, tmp_path):
    config = make_config("ppo", **TINY)
    with run_module.open_run(sse15, config, EnvConfig()) as run:
        with pytest.raises(InputError, match="pass out_dir to open_run"):
            train(sse15, config, out_dir=tmp_path, run=run)
        assert run.folder is None and run.context.world_size == 1 and run.saved is None
        with pytest.raises(InputError, match="pass eval_every to open_run"):
            train(sse15, config, eval_every=3, run=run)


def test_the_validation_schedule_is_the_runs(sse15):
    """``eval_every`` is checked once, in `open_run`, and the bookkeeping follows the run's value."""
    config = make_config("ppo", **TINY | {"total_steps": 256})
    with pytest.raises(InputError, match="eval_every must be >= 0"):
        with run_module.open_run(sse15, config, EnvConfig(), eval_every=-1):
            pass
    with run_module.open_run(sse15, config, EnvConfig(), eval_every=0) as run:
        assert run.eval_every == 0
        result = train(sse15, config, progress=False, run=run)
    assert "valid/sharpe_ratio" not in result.log or result.log["valid/sharpe_ratio"].isna().all()


# --- the command line is generated from the configs ---------------------------------------------------------

def test_every_config_field_is_an_option_with_its_docstring():
    help_text = " ".join(cli.build_parser()._subparsers._group_actions[0].choices["train"].format_help().split())
    docs = cli.field_docs(PPOConfig) | cli.field_docs(EnvConfig)
    for cls in (PPOConfig, EnvConfig):
        for field in dataclasses.fields(cls):
            if field.name in ("algo", "fees"):
                continue
            assert f"--{field.name.replace('_', '-')}" in help_text, field.name
            assert " ".join(docs[field.name].split()[:4]) in help_text, field.name
    assert "(default: 64 (PPOConfig), 8 (A2CConfig))" in help_text  # horizon_len: each algorithm's own


def test_options_left_out_keep_each_algorithms_defaults_and_bad_values_name_the_option(capsys):
    args = cli.build_parser().parse_args(["train", "--algo", "a2c", "--lr", "0.001", "--no-random-start"])
    config, env_config = cli._configs(args)
    assert config.horizon_len == 8 and config.learning_rate == 0.001 and env_config.random_start is False
    assert config.seed == PPOConfig().seed and env_config.episode_days == EnvConfig().episode_days
    err = one_line_error(capsys, "train", "--network", "cnn")
    assert err.startswith("error: --network:") and "'stockwise'" in err


@pytest.mark.parametrize("value, expected", [(None, False), ("", False), ("0", False), ("false", False),
                                             ("1", True), ("TRUE", True), ("yes", True), (" on ", True)])
def test_fast_mode_has_one_parser(value, expected):
    environ = {} if value is None else {"FINRL_TUTORIAL_FAST": value}
    assert fast_mode(environ) is expected


def test_fast_mode_refuses_a_value_it_cannot_read():
    with pytest.raises(InputError, match="FINRL_TUTORIAL_FAST='2'"):
        fast_mode({"FINRL_TUTORIAL_FAST": "2"})


def test_a_report_and_config_json_share_one_data_block(trained):
    report = json.loads((trained / "report.json").read_text())
    saved = json.loads((trained / "config.json").read_text())
    assert report["data"] == saved["data"] and len(report["data"]["fingerprint"]) == 16
    assert pd.read_csv(trained / "log.csv")["iteration"].tolist() == [0, 1]
    assert Path(trained / "checkpoints" / "last.pt").is_file()


def test_train_with_workers_builds_and_closes_its_pool_on_this_ranks_shard(sse15):
    import multiprocessing

    result = train(sse15, make_config("ppo", **TINY | {"total_steps": 128}), eval_every=0, progress=False, workers=2)
    assert result.workers == 2 and result.env_steps == 128
    assert multiprocessing.active_children() == []  # the pool train built is closed with the run


def test_learner_threads_reach_the_pool_and_need_workers(sse15, monkeypatch):
    from finrl_tutorial.training import workers as workers_module

    seen = []
    real_init = workers_module.WorkerPool.__init__

    def recording_init(self, *args, **kwargs):
        real_init(self, *args, **kwargs)
        seen.append(self.learner_threads)

    monkeypatch.setattr(workers_module.WorkerPool, "__init__", recording_init)
    config = make_config("ppo", **TINY | {"total_steps": 128})
    train(sse15, config, eval_every=0, progress=False, workers=1, learner_threads=1)
    assert seen == [1]
    with pytest.raises(InputError, match="give workers >= 1"):
        train(sse15, config, eval_every=0, progress=False, learner_threads=2)
    with pytest.raises(InputError, match="learner_threads must be >= 1"):
        train(sse15, config, eval_every=0, progress=False, workers=1, learner_threads=0)
