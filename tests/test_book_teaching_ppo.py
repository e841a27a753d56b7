"""Chapter 3's readings (`finrl_tutorial.book.teaching_ppo`): every number a table, folded note or box
states is the one computed from its inputs (the stored ``bench learn``, sweep and walk-forward
records, or small hand-made tensors), and the figures draw what their docstrings promise. The
chapter's prose is Markdown, checked by its own hidden cells. No timing."""
from __future__ import annotations

import copy
import inspect
import math
import re
from pathlib import Path
from types import SimpleNamespace

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

import finrl_tutorial as ft  # noqa: E402
from finrl_tutorial.book import teaching, teaching_ppo  # noqa: E402

PPO_VS_A2C = (("ppo", 300_000, "best"), ("a2c", 300_000, "best"))


def _text(shown) -> str:
    return getattr(shown, "data", shown)


def _numbers(text: str) -> list[float]:
    return [float(n.replace(",", "")) for n in re.findall(r"[-+]?\d[\d,]*(?:\.\d+)?", text)]





@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


# --------------------------------------------------------------------------- 3.0

def test_line_counts_count_the_installed_source():
    table = teaching_ppo.line_counts([ft.agents.a2c])
    lines = inspect.getsource(ft.agents.a2c).splitlines()
    assert list(table.index) == ["agents/a2c.py"]
    assert table.loc["agents/a2c.py", "lines"] == len(lines)
    blank = sum(not line.strip() or line.strip().startswith("#") for line in lines)
    assert table.loc["agents/a2c.py", "blank or comment"] == blank < len(lines)
    # functions and classes are named as the chapter lists them, counted the same way
    parts = teaching_ppo.line_counts([ft.agents.compute_gae, ft.agents.A2CConfig])
    assert list(parts.index) == ["compute_gae()", "A2CConfig"]
    assert parts.loc["compute_gae()", "lines"] == len(inspect.getsource(ft.agents.compute_gae).splitlines())
    assert parts.loc["A2CConfig", "lines"] < table.loc["agents/a2c.py", "lines"]


def test_finite_difference_is_the_directional_derivative_and_restores_the_parameters():
    theta = [torch.tensor([1.0, 2.0], dtype=torch.float64), torch.tensor([[3.0]], dtype=torch.float64)]
    before = [p.clone() for p in theta]
    flat = torch.cat([p.reshape(-1) for p in theta])
    direction = flat / flat.norm()
    objective = lambda: float(sum((p ** 2).sum() for p in theta))  # noqa: E731  J = |θ|², ∇J = 2θ
    assert teaching_ppo.finite_difference(objective, theta, direction) == pytest.approx(2 * float(flat.norm()))
    assert all(torch.equal(p, b) for p, b in zip(theta, before))


def _hand_estimates():
    exact = torch.tensor([2.0, 0.0])
    estimates = {teaching_ppo.NO_BASELINE: torch.tensor([[0.0, 1.0], [4.0, -1.0], [3.0, 2.0], [1.0, -2.0]]),
                 teaching_ppo.WITH_BASELINE: torch.tensor([[1.5, 0.5], [2.5, -0.5], [2.0, 0.5], [2.0, -0.5]])}
    return estimates, exact


def test_estimator_table_reads_each_estimator_against_the_exact_gradient():
    estimates, exact = _hand_estimates()
    table = teaching_ppo.estimator_table(estimates, exact, exact_se=0.3)
    for name, g in estimates.items():
        along = g[:, 0]  # the exact gradient points along the first axis
        mean, se = float(along.mean()), float(along.std() / 2)
        row = table.loc[name]
        assert row["mean, along the exact gradient"] == pytest.approx(mean)
        assert row["its standard error"] == pytest.approx(se)
        assert row["z (mean − exact, in standard errors)"] == pytest.approx((mean - 2.0) / math.hypot(se, 0.3))
        assert row["variance per batch (trace)"] == pytest.approx(float(g.var(0).sum()))
        rms = math.sqrt(float(((g - exact) ** 2).sum(1).mean())) / 2.0
        assert row["RMS error per batch / |exact|"] == pytest.approx(rms)
    # the chapter's hidden check reads the variance ratio by position: first without, then with the baseline
    column = table["variance per batch (trace)"]
    assert teaching_ppo.variance_ratio(table) == pytest.approx(column.iloc[1] / column.iloc[0])
    assert teaching_ppo.variance_ratio(table) < 1


def test_rms_error_of_averages_and_the_samples_for_an_error_as_large_as_the_gradient():
    estimates, exact = _hand_estimates()
    g = estimates[teaching_ppo.NO_BASELINE]
    one, two, three = teaching_ppo.rms_error_of_averages(g, exact, (1, 2, 3))
    assert one == pytest.approx(math.sqrt(float(((g - exact) ** 2).sum(1).mean())) / 2)
    pairs = g.view(2, 2, 2).mean(1)
    assert two == pytest.approx(math.sqrt(float(((pairs - exact) ** 2).sum(1).mean())) / 2)
    assert three == pytest.approx(float((g[:3].mean(0) - exact).norm()) / 2)  # the fourth batch fills no group
    needed = teaching_ppo.samples_for_unit_error(estimates, exact, per_batch=8)
    assert needed[teaching_ppo.NO_BASELINE] == pytest.approx(float(g.var(0).sum()) * 8 / 4)
    assert needed[teaching_ppo.WITH_BASELINE] < needed[teaching_ppo.NO_BASELINE]


def test_the_two_gradient_panels_draw_every_estimator_and_the_marks():
    estimates, exact = _hand_estimates()
    fig, (left, right) = plt.subplots(1, 2)
    teaching_ppo.plot_estimates(estimates, exact, 64, left)
    labels = [t.get_text() for t in left.get_legend().get_texts()]
    assert any(label.startswith(teaching_ppo.NO_BASELINE) for label in labels)
    assert any("exact gradient (2.000)" in label for label in labels)
    assert "of 4" in left.get_ylabel() and "of 64 samples" in left.get_xlabel()
    teaching_ppo.plot_error_against_samples(estimates, exact, 64, right, marks={"PPO minibatch": 1024},
                                            group_sizes=(1, 2))
    points = [line for line in right.get_lines() if line.get_marker() == "o"]
    assert len(points) == 2 and list(points[0].get_xdata()) == [64, 128]
    assert points[0].get_ydata()[0] == pytest.approx(teaching_ppo.rms_error_of_averages(
        estimates[teaching_ppo.NO_BASELINE], exact, (1,))[0])
    assert any(list(line.get_xdata()) == [1024, 1024] for line in right.get_lines())


# --------------------------------------------------------------------------- 3.2-3.4

@pytest.fixture(scope="module")
def small_split():
    return ft.make_synthetic(ft.SyntheticSpec(num_days=120, seed=3)).market.train


def test_replay_reads_reward_fees_and_turnover_and_leaves_the_random_numbers_alone(small_split):
    torch.manual_seed(5)
    state = torch.random.get_rng_state()
    noisy = lambda obs: torch.softmax(torch.randn(obs.shape[0], 11), -1)[:, 1:]  # noqa: E731  uses the global RNG
    first = teaching_ppo.replay(small_split, noisy, days=10, num_envs=4)
    assert torch.equal(torch.random.get_rng_state(), state)
    assert teaching_ppo.replay(small_split, noisy, days=10, num_envs=4) == first  # the same days, the same draws
    assert set(first) == {"reward", "fees", "traded"} and first["fees"] > 0 and first["traded"] > 0
    # holding all cash trades nothing and pays nothing
    cash = teaching_ppo.replay(small_split, lambda obs: torch.zeros(obs.shape[0], 10), days=10, num_envs=4)
    assert cash["traded"] == 0 and cash["fees"] == 0


def test_dense_next_values_match_what_the_cpu_rollout_stored(small_split):
    """collect_rollout's sparse (CPU) branch stores the next values its dense (GPU) branch computes."""
    torch.manual_seed(0)
    env = teaching_ppo.StepRecorder(ft.VecStockTradingEnv(small_split, 4, ft.EnvConfig(episode_days=5), seed=1))
    agent = ft.agents.ActorCritic.from_config(env.observation_dim, env.action_dim, ft.make_config("ppo"), "weights")
    rollout = ft.agents.Rollout.empty(12, env.num_envs, env.observation_dim, env.action_dim, device="cpu")
    obs, _ = env.reset()
    last = ft.agents.collect_rollout(env, agent, rollout, obs)
    assert len(env.steps) == 12 and rollout.dones.sum() >= 4  # every account was cut at least once
    dense = teaching_ppo.dense_next_values(env, agent, rollout, last)
    torch.testing.assert_close(dense, rollout.next_values, rtol=1e-6, atol=1e-6)
    # a ruin (terminated) bootstraps nothing: the dense formula gives 0 there
    env.steps[0] = (torch.ones_like(env.steps[0][0]), env.steps[0][1])
    rollout.dones[0] = 1
    assert (teaching_ppo.dense_next_values(env, agent, rollout, last)[0] == 0).all()


def test_noise_cost_table_says_what_the_replays_measured():
    sampled, held = {"reward": -0.09, "fees": 0.111, "traded": 1.43}, {"reward": -0.008, "fees": 0.002, "traded": 0.02}
    table = teaching_ppo.noise_cost_table(sampled, held)
    assert table.iloc[0].tolist() == [-0.09, 0.111, 0.021, 143.0] and table.iloc[1].tolist() == [-0.008, 0.002, -0.006, 2.0]
    # one unit for every column, said in the header: the reward's own (1.0 = 1 % of the initial cash)
    assert table.columns.tolist() == ["reward", "fees", "reward before fees", "traded"]
    assert table.columns.name == "per account and day, % of initial cash"


def test_gae_reach_days_is_the_first_day_below_the_level():
    for gamma, lam in ((0.9, 0.95), (0.99, 0.95), (0.5, 1.0)):
        days = teaching_ppo.gae_reach_days(gamma, lam)
        assert (gamma * lam) ** days < 0.1 <= (gamma * lam) ** (days - 1)
    assert teaching_ppo.gae_reach_days(0.9, 0.95) == 15  # 0.855^15 = 0.096, 0.855^14 = 0.112


def test_the_intro_reads_the_walk_forward_as_its_record_does(walkforward):
    """The plain learner's walk-forward: no test year separates the agent from buy-and-hold; pooled, a tie at ±0.25,
    and every seed's pooled Sharpe ended below buy-and-hold's. book/intro.md says no year shows the agent ahead."""
    reading = ft.book.learning.walkforward_reading(walkforward)
    verdicts = teaching.walkforward_verdicts(walkforward)
    assert verdicts["pooled"] == "tie" and reading["pooled"]["margin"] == 0.25
    assert all(verdicts[year] == "inconclusive" for year in ("2017", "2018", "2019"))
    assert all(ci["low"] < 0 < ci["high"] for ci in reading["intervals"].values())
    assert len(reading["seed_differences"]["pooled"]) == len(walkforward["seeds"]) == 3
    assert all(d < 0 for d in reading["seed_differences"]["pooled"])
    intro = (Path(__file__).resolve().parents[1] / "book" / "intro.md").read_text(encoding="utf-8")
    assert "a walk-forward over three test years finds no year in which the agent beats buy-and-hold" in intro
    assert "±0.25 Sharpe" in intro


def test_the_intro_reads_ours_against_sb3_as_its_record_does(learn_default):
    """book/intro.md's chapter-3 row reads chapter 3.8's record, the default learner's: ours ahead of SB3's PPO
    on all six markets (after Holm's correction over every row, as chapter 3.8 reads it, decided pooled, each
    family alone not); the intro calls it a comparison of two whole setups and quotes no interval for it."""
    pairs = ft.book.learning.paired_excess(learn_default, "ppo", "sb3_ppo", 100_000, "last")
    test = ft.book.learning.paired_test(pairs["difference"])
    assert len(pairs) == test["positive"] == 6
    by_family = teaching.differences_by_family({"ppo − a2c": ft.book.learning.paired_excess(learn_default, "ppo", "a2c"),
                                                 "ours − sb3": pairs})  # Holm over every row, as chapter 3 does
    ours = by_family.loc["ours − sb3"]
    assert ours["verdict"].to_dict() == {"factor": "inconclusive", "momentum": "inconclusive",
                                         "all families": "first ahead"}
    intro = (Path(__file__).resolve().parents[1] / "book" / "intro.md").read_text(encoding="utf-8")
    row = next(line for line in intro.splitlines() if line.startswith("| {doc}`03_single_file_ppo`") and "six markets" in line)
    assert "ours earned more on all six markets: a comparison of two whole setups" in row and "+51.0" not in row


def test_plot_gae_reach_draws_the_weights_of_each_lambda():
    fig, ax = plt.subplots()
    teaching_ppo.plot_gae_reach(0.9, 0.95, ax, days=20)
    curves = [line for line in ax.get_lines() if len(line.get_xdata()) == 21]
    assert [line.get_label() for line in curves] == ["λ = 0.0", "λ = 0.9", "λ = 0.95  (this package's default)", "λ = 1.0"]
    np.testing.assert_allclose(curves[2].get_ydata(), (0.9 * 0.95) ** np.arange(21))


def test_gamma_records_table_reads_gamma_from_each_committed_record(sweep, walkforward, learn):
    table = teaching_ppo.gamma_records_table(sweep, walkforward, learn)
    assert table.loc["chapter 2's sweep", "γ"] == sweep["base_config"]["gamma"]
    assert table.loc["walk-forward, plain learner (its reference page)", "γ"] == walkforward["config"]["gamma"]
    knobs = {knob for change in sweep["variants"].values() for knob in change}
    assert all(knob in table.loc["chapter 2's sweep", "changes from the defaults"] for knob in knobs)
    assert "gamma" not in table.loc["chapter 2's sweep", "changes from the defaults"]
    assert not any(run["arguments"]["set"] for run in learn["runs"])  # what the "none" row says
    assert table.loc["learning benchmark", "changes from the defaults"] == f"none, in each of its {len(learn['runs'])} parts"
    assert table.loc["learning benchmark", "γ"] == ft.agents.PPOConfig().gamma
    # the three records were made before 2026-12-06: the plain learner's defaults
    assert (table["learner"] == "plain (λ 0.95, neither baseline)").all()


def test_gamma_records_table_names_an_override_and_a_changed_config(sweep, walkforward, learn):
    learn2, walk2 = copy.deepcopy(learn), copy.deepcopy(walkforward)
    learn2["runs"][0]["arguments"]["set"] = ["gamma=0.99"]
    walk2["config"]["gamma"] = 0.95
    table = teaching_ppo.gamma_records_table(sweep, walk2, learn2)
    assert table.loc["learning benchmark", "γ"] == "0.99"
    assert table.loc["learning benchmark", "changes from the defaults"] == "gamma=0.99"
    assert table.loc["walk-forward, plain learner (its reference page)", "changes from the defaults"] == "gamma=0.95"


def test_plot_objectives_draws_each_objective_on_each_advantage():
    fig, axes = plt.subplots(1, 2)
    objectives = {"first": lambda r, a: r * a, "second": lambda r, a: math.log(r) * a}
    teaching_ppo.plot_objectives(axes, objectives, advantages=(1.0, -1.0), clip_range=0.2, ratios=[0.5, 1.0, 2.0])
    for ax, advantage in zip(axes, (1.0, -1.0)):
        first, second = ax.get_lines()[:2]
        assert list(first.get_ydata()) == [0.5 * advantage, 1.0 * advantage, 2.0 * advantage]
        assert second.get_linestyle() == "--" and ax.get_title() == f"advantage A = {advantage:+.0f}"
    assert [t.get_text() for t in axes[0].get_legend().get_texts()] == ["first", "second"]


# --------------------------------------------------------------------------- 3.8

def test_run_row_reads_the_log_and_the_config():
    config = ft.make_config("a2c", total_steps=4096)
    result = SimpleNamespace(log=pd.DataFrame({"loss/minibatches": [1, 1]}), wall_seconds=3.5, best_valid_sharpe=0.7)
    row = teaching_ppo.run_row("a2c", config, result, 0.25)
    assert row == {"algo": "A2C", "iterations": config.iterations, "samples / iteration": config.rollout_size,
                   "grad steps / iteration": 1, "wall s": 3.5, "best valid Sharpe": 0.7,
                   "test: signal rule's excess captured": 0.25}


def test_plot_validation_curves_draws_each_learner_and_the_signal_rule():
    fig, ax = plt.subplots()
    curves = {"PPO": pd.Series([0.1, 0.4], index=[100, 200]), "A2C": pd.Series([0.2], index=[100])}
    teaching_ppo.plot_validation_curves(curves, 1.234, ax, title="t")
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["PPO", "A2C", "signal rule (1.23)"]
    assert list(ax.get_lines()[0].get_ydata()) == [0.1, 0.4]


def test_record_columns_read_the_committed_summary_rows(learn):
    summary = pd.DataFrame(learn["summary"])
    steps = teaching_ppo.sb3_steps(learn)
    families = teaching_ppo.sb3_families(learn)
    assert steps == int(summary.loc[summary["learner"] == "sb3_ppo", "run_steps"].max())
    assert families == sorted(summary.loc[summary["learner"] == "sb3_ppo", "family"].unique()) and families
    columns = teaching_ppo.record_columns(learn)
    assert list(columns) == ["PPO, 300,000 steps, checkpoint chosen on validation",
                             "A2C, 300,000 steps, checkpoint chosen on validation",
                             f"PPO, {steps:,} steps, latest checkpoint", f"SB3 PPO, {steps:,} steps, final model"]
    side = teaching_ppo.record_side_by_side(columns)
    for name, (learner, run_steps, select) in zip(columns, [("ppo", 300_000, "best"), ("a2c", 300_000, "best"),
                                                            ("ppo", steps, "last"), ("sb3_ppo", steps, "last")]):
        for family in families:
            row = summary[(summary["learner"] == learner) & (summary["family"] == family)
                          & (summary["run_steps"] == run_steps) & (summary["env_steps"] == run_steps)
                          & (summary["select"] == select)]
            assert len(row) == 1
            assert side.loc[name, f"captured: {family}"] == row["capture_pooled"].iloc[0]
            assert side.loc[name, "markets"] == row["seeds"].iloc[0]
    assert side.notna().all().all()
    caption = teaching_ppo.style_side_by_side(side).caption
    assert "captured on the test split" in caption and "wall seconds per run" in caption


def test_interval_table_writes_the_paired_tests_it_is_given(learn):
    from finrl_tutorial.book import learning

    pairs = learning.paired_excess(learn, "ppo", "a2c", 300_000, "best")
    test = learning.paired_test(pairs["difference"])
    table = teaching_ppo.interval_table({"PPO minus A2C": test})
    row = table.loc["PPO minus A2C"]
    assert row["(family, market) pairs"] == len(pairs) == test["n"]
    assert row["mean difference in test excess (points)"] == f"{100 * test['mean']:+.1f}"
    assert row["95 % interval (uncorrected)"] == f"[{100 * test['low']:+.1f}, {100 * test['high']:+.1f}]"
    assert (row["p (t)"], row["p (Wilcoxon)"]) == (f"{test['p (t)']:.2g}", f"{test['p (Wilcoxon)']:.2g}")
    assert row["positive"] == f"{int((pairs['difference'] > 0).sum())} of {len(pairs)}"


def test_learn_method_note_is_folded_and_states_the_record(learn):
    steps = teaching_ppo.sb3_steps(learn)
    ours_sb3 = (("ppo", steps, "last"), ("sb3_ppo", steps, "last"))
    note = teaching_ppo.learn_method_note(learn, {"PPO minus A2C": PPO_VS_A2C, "ours minus SB3 PPO": ours_sb3})
    page = note._repr_markdown_()
    assert page.startswith('<details class="how-measured">') and "How this was measured" in page
    text = str(note)
    assert learn["machine"]["date"][:10] in text and f"{learn['machine']['cpu_count']} CPU cores" in text
    assert "The record is bench_learn.json," in text  # named by the caller: the record holds no file name
    assert "The record is x.json," in str(teaching_ppo.learn_method_note(learn, record_name="x.json"))
    summary = pd.DataFrame(learn["summary"])
    for learner, who in (("ppo", "ours"), ("sb3_ppo", "SB3")):
        rows = summary[(summary["learner"] == learner) & (summary["run_steps"] == steps) & (summary["env_steps"] == steps)
                       & (summary["select"] == "last") & summary["family"].isin(teaching_ppo.sb3_families(learn))]
        assert f"{who} {rows['wall_seconds'].min():.0f}-{rows['wall_seconds'].max():.0f} s" in text
    assert "not a speed ratio" in text and "×" not in text
    gaps = teaching.capture_gaps(learn, *PPO_VS_A2C)
    assert teaching.capture_gaps_text(gaps) in text and f"{len(gaps)} pair" in text
    # without comparisons (the chapter's tests read excess returns, defined on every market): no gap paragraph
    assert teaching.capture_gaps_text(gaps) not in str(teaching_ppo.learn_method_note(learn))


def test_chapter_box_states_this_run_and_the_committed_intervals(learn):
    estimates, exact = _hand_estimates()
    gradients = teaching_ppo.estimator_table(estimates, exact, 0.1)
    from finrl_tutorial.book import learning

    versus = {"PPO minus A2C": learning.paired_test(learning.paired_excess(learn, "ppo", "a2c", 300_000)["difference"])}
    comparison = pd.DataFrame({"test: signal rule's excess captured": {"PPO": 0.5, "A2C": -0.25}})
    file_lines = teaching_ppo.line_counts([ft.agents.ppo])
    loop_sharpe = pd.DataFrame({"validation Sharpe": [-0.37, 0.071]}, index=["untrained", "trained"])
    box = teaching_ppo.chapter_box(comparison, 49_152, file_lines, {"loss/minibatches": 16, "loss/clip_fraction": 0.04},
                                   gradients, versus, loop_sharpe)
    rows = {name: value for _, name, value in box.rows}
    assert rows["the loop on 1.9's planted edge (3.6), validation Sharpe untrained → trained"] == "-0.37 → 0.07"
    without = teaching_ppo.chapter_box(comparison, 49_152, file_lines,
                                       {"loss/minibatches": 16, "loss/clip_fraction": 0.04}, gradients, versus)
    assert len(without.rows) == len(box.rows) - 1
    assert rows["PPO vs A2C, test capture (one market, one seed)"] == "PPO 0.50, A2C -0.25"
    assert rows["agents/ppo.py, as installed"] == f"{len(inspect.getsource(ft.agents.ppo).splitlines())} lines"
    assert rows["one update on a 512-sample rollout"] == "16 gradient steps (minibatches × epochs), clip fraction 4.0e-02"
    ratio = rows["policy-gradient variance, baseline V(s) / none (one day, 64 states)"]
    assert float(ratio) == pytest.approx(teaching_ppo.variance_ratio(gradients), abs=0.005)
    z = gradients["z (mean − exact, in standard errors)"]
    assert _numbers(rows["score-function mean minus exact gradient, in standard errors (3.0)"]) == \
        pytest.approx([round(v, 1) for v in z], abs=1e-9)
    # a finite sample is "consistent with unbiased" (every |z| < 2), never shown unbiased
    assert "consistent with unbiased (each z within ±2: " in box.shows and "is unbiased" not in box.shows
    assert rows["score-function mean minus exact gradient, in standard errors (3.0)"] in box.shows
    assert "all at once" in box.does_not_show and "A2C's own defaults" in box.does_not_show
    far = gradients.copy()
    far.iloc[0, far.columns.get_loc("z (mean − exact, in standard errors)")] = 2.5
    far_box = teaching_ppo.chapter_box(comparison, 49_152, file_lines,
                                       {"loss/minibatches": 16, "loss/clip_fraction": 0.04}, far, versus)
    assert "consistent with unbiased" not in far_box.shows and "a z outside ±2" in far_box.shows
    v = versus["PPO minus A2C"]
    assert rows["PPO minus A2C, test excess (bench_learn.json, uncorrected)"] == \
        f"{100 * v['mean']:+.1f} points [{100 * v['low']:+.1f}, {100 * v['high']:+.1f}] over the {v['n']} (family, market) pairs both ran"
    named = teaching_ppo.chapter_box(comparison, 49_152, file_lines, {"loss/minibatches": 16, "loss/clip_fraction": 0.04},
                                     gradients, versus, record_name="x.json")
    assert "PPO minus A2C, test excess (x.json, uncorrected)" in {name for _, name, _ in named.rows}


def test_show_source_until_lists_a_configs_fields_without_its_checks():
    from finrl_tutorial import InputError
    from finrl_tutorial.agents import PPOConfig
    from finrl_tutorial.book import show_source

    listing = str(getattr(show_source(PPOConfig, until="def __post_init__"), "data", show_source(PPOConfig, until="def __post_init__")))
    assert "repeat_times: int = 4" in listing and "hidden_sizes" in listing
    assert "__post_init__" not in listing and "raise ConfigError" not in listing
    assert "__post_init__" in str(getattr(show_source(PPOConfig), "data", ""))
    with pytest.raises(InputError, match="not in the source"):
        show_source(PPOConfig, until="def no_such_method")
