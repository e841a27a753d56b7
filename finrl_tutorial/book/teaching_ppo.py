"""Chapter 3's readings: the tables and figures around the single-file PPO and A2C.

The chapter keeps the ideas in its own cells (the reward of one trading day, the exact gradient, the
score-function estimator, the clipped objective, the training loop) and its prose in Markdown; this
module holds what turns their tensors and the stored ``bench learn`` record into a table, a
folded method note, the measured box or a figure. Each function reads numbers the chapter has in
hand and returns a DataFrame, a dict or a folded block, or draws on a matplotlib Axes passed in;
none trains.
"""
from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd
import torch
from .folded import MethodNote, how_measured
from .teaching import points, points_text

__all__ = ["line_counts", "finite_difference", "estimator_table", "rms_error_of_averages",
           "samples_for_unit_error", "variance_ratio", "plot_estimates", "plot_error_against_samples",
           "replay", "StepRecorder", "dense_next_values", "noise_cost_table", "gae_reach_days",
           "plot_gae_reach", "gamma_records_table",
           "plot_objectives", "run_row", "plot_validation_curves", "sb3_steps", "sb3_families", "learner_rows",
           "record_columns", "record_side_by_side", "style_side_by_side", "interval_table", "MethodNote",
           "learn_method_note", "chapter_box"]

NO_BASELINE, WITH_BASELINE = "no baseline", "baseline b(s) = V(s)"
"""The two estimators of 3.0, as the chapter names them (the rows of `estimator_table`)."""


# --------------------------------------------------------------------------- 3.0 the policy gradient

def line_counts(objects: Iterable) -> pd.DataFrame:
    """The installed source of each object: its lines, and how many of them are blank or a comment.
    A module (e.g. ``agents/ppo.py``) is indexed ``agents/<file>.py``, a function or class by its
    name (a function's with ``()``). Columns ``lines``, ``blank or comment``."""
    rows = {}
    for obj in objects:
        lines = inspect.getsource(obj).splitlines()
        if inspect.ismodule(obj):
            name = f"agents/{obj.__name__.rsplit('.', 1)[-1]}.py"
        else:
            name = obj.__name__ + ("()" if inspect.isfunction(obj) else "")
        rows[name] = {
            "lines": len(lines),
            "blank or comment": sum(not line.strip() or line.strip().startswith("#") for line in lines)}
    return pd.DataFrame(rows).T


def finite_difference(objective: Callable[[], float], params: Sequence[torch.Tensor], direction: torch.Tensor,
                      h: float = 1e-3) -> float:
    """The central difference ``(J(θ + h u) − J(θ − h u)) / 2h`` of ``objective`` (a function of no
    argument that reads ``params``) along the unit vector ``direction`` (flat, over all of ``params``
    in order). The parameters are shifted in place and restored before it returns."""
    sides = []
    steps = direction.split([p.numel() for p in params])
    with torch.no_grad():
        start = [p.clone() for p in params]
        try:
            for shift in (h, -h):
                for p, p0, step in zip(params, start, steps):
                    p.copy_(p0 + shift * step.view_as(p))
                sides.append(float(objective()))
        finally:
            for p, p0 in zip(params, start):
                p.copy_(p0)
    return (sides[0] - sides[1]) / (2 * h)


def estimator_table(estimates: Mapping[str, torch.Tensor], exact: torch.Tensor, exact_se: float) -> pd.DataFrame:
    """Each estimator of the gradient against the exact gradient: ``estimates`` maps a name to a
    tensor of shape (batches, parameters), one estimate per batch; ``exact`` is the exact gradient
    and ``exact_se`` the standard error of its length. One row per estimator: the mean of its
    estimates projected on the exact gradient's direction and that mean's standard error; ``z``, how
    far the mean lies from the exact length in the two standard errors together; the variance per
    batch (the trace of the covariance) and the RMS error of one batch relative to ``|exact|``."""
    length, direction = float(exact.norm()), exact / exact.norm()
    rows = {}
    for name, g in estimates.items():
        along = g @ direction
        mean, se = float(along.mean()), float(along.std() / math.sqrt(len(g)))
        rows[name] = {"mean, along the exact gradient": mean, "its standard error": se,
                      "z (mean − exact, in standard errors)": (mean - length) / math.hypot(se, exact_se),
                      "variance per batch (trace)": float(g.var(0).sum()),
                      "RMS error per batch / |exact|": float((g - exact).norm(dim=1).pow(2).mean().sqrt() / length)}
    return pd.DataFrame(rows).T


def rms_error_of_averages(g: torch.Tensor, exact: torch.Tensor, group_sizes: Iterable[int]) -> list[float]:
    """For each ``m`` of ``group_sizes``: the RMS error, relative to ``|exact|``, of the average of
    ``m`` consecutive batch estimates of ``g`` (shape (batches, parameters)); the batches that do not
    fill a last group are left out."""
    errors = []
    for m in group_sizes:
        groups = g[: len(g) // m * m].view(-1, m, g.shape[1]).mean(1)
        errors.append(float((groups - exact).norm(dim=1).pow(2).mean().sqrt() / exact.norm()))
    return errors


def samples_for_unit_error(estimates: Mapping[str, torch.Tensor], exact: torch.Tensor, per_batch: int) -> dict:
    """Per estimator, the samples an average needs for an RMS error as large as the gradient itself:
    ``tr(Σ) / |∇J|²``, with Σ the covariance of one sample's estimate (a batch of ``per_batch``
    samples has ``Σ / per_batch``)."""
    return {name: float(g.var(0).sum()) * per_batch / float(exact.norm()) ** 2 for name, g in estimates.items()}


def variance_ratio(table: pd.DataFrame, with_baseline: str = WITH_BASELINE, without: str = NO_BASELINE) -> float:
    """Variance per batch with the baseline over the variance without it, from an `estimator_table`."""
    column = table["variance per batch (trace)"]
    return float(column[with_baseline] / column[without])


def plot_estimates(estimates: Mapping[str, torch.Tensor], exact: torch.Tensor, per_batch: int, ax) -> None:
    """Histogram, per estimator, of its batch estimates projected on the exact gradient's direction,
    with the exact length and 0 marked; on ``ax``."""
    direction = exact / exact.norm()
    along = {name: (g @ direction).numpy() for name, g in estimates.items()}
    bins = np.linspace(min(map(np.min, along.values())), max(map(np.max, along.values())), 50)
    for name, values in along.items():
        ax.hist(values, bins=bins, alpha=0.55, label=f"{name} (sd {values.std():.2f})")
    ax.axvline(float(exact.norm()), color="black", linewidth=1.5, label=f"exact gradient ({float(exact.norm()):.3f})")
    ax.axvline(0.0, color="grey", linewidth=0.8, linestyle=":")
    ax.set_xlabel(f"one batch's estimate (of {per_batch} samples), along the exact gradient")
    ax.set_ylabel(f"batches (of {len(next(iter(estimates.values())))})")
    ax.set_title("Each estimate scatters around the exact gradient")
    ax.legend(fontsize="small")


def plot_error_against_samples(estimates: Mapping[str, torch.Tensor], exact: torch.Tensor, per_batch: int, ax,
                               marks: Mapping[str, int] | None = None,
                               group_sizes: Sequence[int] = (1, 2, 4, 8, 16, 32, 64)) -> None:
    """Log-log plot on ``ax`` of the RMS error (relative to ``|exact|``) of an average of batches
    against the samples it holds (`rms_error_of_averages`), per estimator, with the 1/√n line through
    its first point, the level of an error as large as the gradient, and a vertical line per entry of
    ``marks`` (a name and a number of samples, e.g. PPO's minibatch)."""
    n = per_batch * np.array(group_sizes)
    for (name, g), colour in zip(estimates.items(), ("C0", "C1", "C2", "C3")):
        errors = rms_error_of_averages(g, exact, group_sizes)
        ax.loglog(n, errors, "o", color=colour, label=name)
        ax.loglog(n, errors[0] * np.sqrt(per_batch / n), "--", color=colour, linewidth=0.8)
    ax.axhline(1.0, color="black", linewidth=1, label="error as large as the gradient itself")
    for what, size in (marks or {}).items():
        ax.axvline(size, color="grey", linestyle=":", linewidth=1)
        ax.text(size, 0.98, f"{what}\n{size:,} ", transform=ax.get_xaxis_transform(), ha="right", va="top",
                fontsize="small")
    ax.set_xlabel("samples averaged (one sampled action per state)")
    ax.set_ylabel("RMS error / |exact gradient|")
    ax.set_title("The error falls as 1/√n (dashed); the baseline lowers it")
    ax.legend(fontsize="small", loc="lower left")
    ax.grid(alpha=0.3, which="both")


# --------------------------------------------------------------------------- 3.2-3.4 network, rollout, GAE

def replay(split, policy: Callable[[torch.Tensor], torch.Tensor], days: int, num_envs: int = 8, seed: int = 0) -> dict:
    """Runs ``policy`` (observations → target weights) on a fresh ``VecStockTradingEnv`` of ``split``
    (``num_envs`` accounts from the start days of ``seed``) for ``days`` days, without gradients and
    leaving the caller's random numbers as they were. Returns the mean reward per account-day, the
    fees per account-day in reward units (fees / initial cash × reward_scale) and the value traded per
    account-day as a share of the initial cash: keys ``reward``, ``fees``, ``traded``."""
    from ..envs import VecStockTradingEnv

    env = VecStockTradingEnv(split, num_envs=num_envs, seed=seed)
    state, _ = env.reset()
    rewards, fees, traded = [], [], []
    with torch.no_grad(), torch.random.fork_rng():  # leaves the chapter's random numbers as they were
        for _ in range(days):
            state, reward, _, _, info = env.step(policy(state))
            rewards.append(reward)
            fees.append(info["fee"])
            traded.append(info["traded_value"])
    cash, scale = env.config.initial_cash, env.config.reward_scale
    return {"reward": float(torch.stack(rewards).mean()), "fees": float(torch.stack(fees).mean()) / cash * scale,
            "traded": float(torch.stack(traded).mean()) / cash}


class StepRecorder:
    """A batched env that keeps, for every step, what the dense (GPU) branch of `collect_rollout`
    reads: ``terminated`` and ``info["final_obs"]`` (copies, in ``steps``). Every other attribute is
    the wrapped env's, so `collect_rollout` steps it as it steps the env."""

    def __init__(self, env):
        self.env, self.steps = env, []

    def __getattr__(self, name):
        if name == "env":  # not set yet (e.g. while unpickling): no recursion
            raise AttributeError(name)
        return getattr(self.env, name)

    def step(self, action):
        out = self.env.step(action)
        self.steps.append((out[2].clone(), out[4]["final_obs"].clone()))
        return out


def dense_next_values(recorder: StepRecorder, agent, rollout, last_obs: torch.Tensor) -> torch.Tensor:
    """The next values of ``rollout`` by the plain formula (`agents.fast.bootstrap_values` off the
    CPU): the critic on every row's final observation times ``~terminated`` (0 after a ruin), then,
    where the episode goes on, the next step's own value (after the last step, the value of
    ``last_obs``, the observation the rollout returned). ``recorder`` is the `StepRecorder` the rollout was collected on (its last
    ``horizon`` steps are read)."""
    horizon = rollout.rewards.shape[0]
    with torch.no_grad():
        bootstrap = torch.stack([agent.value(final) * (~terminated)
                                 for terminated, final in recorder.steps[-horizon:]])
        following = torch.cat([rollout.values[1:], agent.value(last_obs).unsqueeze(0)])
        return torch.where(rollout.dones.bool(), bootstrap, following)


def noise_cost_table(sampled: Mapping, held: Mapping) -> pd.DataFrame:
    """Two `replay` results side by side: the rollout's noisy samples and the mean portfolio. Every
    column is per account and day in % of the initial cash (the reward's own unit: a reward of 1.0 is
    a gain of 1 %): the reward, the fees, the reward before fees (reward + fees; slippage stays in it,
    as it is in the fill prices) and the value traded."""
    rows = {"the rollout's noisy samples": sampled, "the mean portfolio": held}
    table = pd.DataFrame({name: {"reward": r["reward"], "fees": r["fees"], "reward before fees": r["reward"] + r["fees"],
                                 "traded": 100 * r["traded"]}
                          for name, r in rows.items()}).T.round(3)
    table.columns.name = "per account and day, % of initial cash"
    return table


def gae_reach_days(gamma: float, lam: float, level: float = 0.1) -> int:
    """The first number of days ``k`` at which the weight ``(γλ)^k`` of a TD error ``k`` days ahead in
    GAE's advantage falls below ``level`` (10 %): ``ceil(log(level) / log(γλ))``."""
    return math.ceil(math.log(level) / math.log(gamma * lam))


def plot_gae_reach(gamma: float, lam: float, ax, days: int = 60, lambdas: Sequence[float] | None = None) -> None:
    """The weight ``(γλ)^k`` of the TD error ``k`` days ahead in GAE's advantage, for γ = ``gamma``
    and several λ (default 0, 0.9, ``lam`` and 1; ``lam`` is marked as this package's default), with the 10 %
    level; on ``ax``."""
    k = np.arange(0, days + 1)
    for value in lambdas if lambdas is not None else (0.0, 0.9, lam, 1.0):
        ax.plot(k, (gamma * value) ** k, label=f"λ = {value}" + ("  (this package's default)" if value == lam else ""))
    ax.axhline(0.1, color="grey", linewidth=0.6, linestyle="--")
    ax.set_xlabel("days ahead (k)")
    ax.set_ylabel("weight (γλ)$^k$ of δ$_{t+k}$ in A$_t$")
    ax.set_title(f"How far GAE looks ahead (γ = {gamma}, the default)")
    ax.legend()
    ax.grid(alpha=0.3)


def gamma_records_table(sweep: Mapping, walk: Mapping, learn: Mapping) -> pd.DataFrame:
    """The γ each recorded learning record ran with, and what it changed from the package's PPO
    defaults instead: chapter 2's sweep (``bench_sweep.json``: its base config's γ, the knobs its
    variants change), the walk-forward run (``bench_walkforward.json``: the entries of its config
    that differ from the defaults) and the learning benchmark (``bench_learn.json``: the ``--set``
    overrides of its parts; with none, every part ran the defaults, γ included). The ``learner``
    column says which learner's defaults those were (`teaching.ran_plain_learner`: the plain learner's
    for a record made before the default learner's)."""
    from ..agents import PPOConfig
    from .teaching import ran_plain_learner

    defaults = PPOConfig()
    varied = sorted({knob for change in sweep["variants"].values() for knob in change})
    walk_changes = sorted(f"{k}={v}" for k, v in walk["config"].items() if getattr(defaults, k, v) != v)
    overrides = sorted({str(override) for run in learn["runs"] for override in run["arguments"].get("set") or []})
    learn_gamma = next((o.split("=", 1)[1] for o in overrides if o.startswith("gamma=")), defaults.gamma)
    rows = {
        "chapter 2's sweep": {"γ": sweep["base_config"]["gamma"],
                              "changes from the defaults": "its variants change " + ", ".join(varied)},
        "walk-forward, plain learner (its reference page)": {"γ": walk["config"]["gamma"],
                                     "changes from the defaults": ", ".join(walk_changes) or "none"},
        "learning benchmark": {"γ": learn_gamma,
                               "changes from the defaults": ", ".join(overrides) or
                               f"none, in each of its {len(learn['runs'])} parts"},
    }
    for name, record in (("chapter 2's sweep", sweep), ("walk-forward, plain learner (its reference page)", walk), ("learning benchmark", learn)):
        rows[name]["learner"] = ("plain (λ 0.95, neither baseline)" if ran_plain_learner(record)
                                 else "default (λ 0.2, both baselines)")
    return pd.DataFrame(rows).T


def plot_objectives(axes, objectives: Mapping[str, Callable[[float, float], float]],
                    advantages: Sequence[float] = (1.0, -1.0), clip_range: float = 0.2,
                    ratios: Sequence[float] | None = None) -> None:
    """One panel per advantage (``axes[i]`` for ``advantages[i]``): each objective of ``objectives``
    (a name and a function of ratio and advantage) against the probability ratio ρ in (0, 2], the
    first drawn solid, the others dashed, with the clip range 1 ± ``clip_range`` shaded."""
    ratios = list(ratios) if ratios is not None else [float(r) for r in np.linspace(0.0, 2.0, 201)[1:]]
    for ax, advantage in zip(axes, advantages):
        for i, (name, objective) in enumerate(objectives.items()):
            ax.plot(ratios, [objective(r, advantage) for r in ratios], label=name,
                    **({"linewidth": 2} if i == 0 else {"linestyle": "--"}))
        ax.axvspan(1 - clip_range, 1 + clip_range, color="grey", alpha=0.15)
        ax.set_title(f"advantage A = {advantage:+.0f}")
        ax.set_xlabel("probability ratio ρ = π_new / π_old")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("objective (higher is better)")
    axes[0].legend(loc="lower right", fontsize="small")


# --------------------------------------------------------------------------- 3.8 PPO, A2C and SB3's PPO

def run_row(algo: str, config, result, capture: float) -> dict:
    """One row of the chapter's PPO-A2C table from a `finrl_tutorial.train` result: the algorithm,
    its iterations, samples and gradient steps per iteration (from the log), the wall seconds, the
    best validation Sharpe and ``capture`` (the test split's share of the signal rule's excess)."""
    return {"algo": algo.upper(), "iterations": config.iterations, "samples / iteration": config.rollout_size,
            "grad steps / iteration": int(result.log["loss/minibatches"].iloc[0]), "wall s": result.wall_seconds,
            "best valid Sharpe": result.best_valid_sharpe, "test: signal rule's excess captured": capture}


def plot_validation_curves(curves: Mapping[str, pd.Series], rule_sharpe: float, ax, title: str) -> None:
    """Each learner's validation Sharpe against env-steps (a Series indexed by env-steps), with the
    signal rule's validation Sharpe as a dashed line; on ``ax``."""
    for name, series in curves.items():
        ax.plot(series.index, series.to_numpy(), marker=".", label=name)
    ax.axhline(rule_sharpe, color="black", linestyle="--", linewidth=1, label=f"signal rule ({rule_sharpe:.2f})")
    ax.set_xlabel("env steps")
    ax.set_ylabel("validation Sharpe")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend()


def _summary(learn: Mapping) -> pd.DataFrame:
    return pd.DataFrame(learn["summary"])


def sb3_steps(learn: Mapping) -> int:
    """The env-steps of stable-baselines3's PPO runs in a ``bench learn`` record (their longest)."""
    table = _summary(learn)
    return int(table.loc[table["learner"] == "sb3_ppo", "run_steps"].max())


def sb3_families(learn: Mapping) -> list[str]:
    """The signal families stable-baselines3's PPO ran in a ``bench learn`` record, sorted."""
    table = _summary(learn)
    return sorted(table.loc[table["learner"] == "sb3_ppo", "family"].unique())


def learner_rows(learn: Mapping, learner: str, run_steps: int, select: str,
                 families: Sequence[str] | None = None) -> pd.DataFrame:
    """The summary rows of ``learner`` at the end of runs of ``run_steps`` env-steps, read at the
    checkpoint ``select`` ("best": chosen on validation; "last"), on ``families`` (default: those
    SB3 ran), indexed by family: each row pools the markets that learner ran."""
    table = _summary(learn)
    families = sb3_families(learn) if families is None else families
    rows = table[(table["learner"] == learner) & (table["run_steps"] == run_steps) & (table["env_steps"] == run_steps)
                 & (table["select"] == select) & table["family"].isin(families)]
    return rows.set_index("family")


def record_columns(learn: Mapping, steps: int = 300_000) -> dict[str, pd.DataFrame]:
    """The four readings the chapter sets side by side, each a `learner_rows` frame: PPO and A2C at
    ``steps`` env-steps with the checkpoint chosen on validation, and our PPO (latest checkpoint)
    and SB3's PPO (its final model) at SB3's env-steps."""
    short = sb3_steps(learn)
    return {
        f"PPO, {steps:,} steps, checkpoint chosen on validation": learner_rows(learn, "ppo", steps, "best"),
        f"A2C, {steps:,} steps, checkpoint chosen on validation": learner_rows(learn, "a2c", steps, "best"),
        f"PPO, {short:,} steps, latest checkpoint": learner_rows(learn, "ppo", short, "last"),
        f"SB3 PPO, {short:,} steps, final model": learner_rows(learn, "sb3_ppo", short, "last"),
    }


def record_side_by_side(columns: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """`record_columns` as one table: per reading, the capture pooled over the markets of each
    family, the markets it ran and its mean wall seconds per run."""
    return pd.DataFrame({
        name: {**{f"captured: {family}": rows.loc[family, "capture_pooled"] for family in rows.index},
               "markets": int(rows["seeds"].iloc[0]), "wall s per run": rows["wall_seconds"].mean()}
        for name, rows in columns.items()}).T


def style_side_by_side(table: pd.DataFrame):
    """`record_side_by_side` for the page: captures to two decimals, markets and seconds whole, and a
    caption saying what the numbers are. Returns a pandas ``Styler``."""
    formats = {c: "{:.2f}" for c in table.columns if c.startswith("captured")}
    formats |= {"markets": "{:.0f}", "wall s per run": "{:.0f}"}
    return table.style.format(formats).set_caption(
        "Fraction of the signal rule's excess return captured on the test split, pooled over the markets, and "
        "wall seconds per run on one CPU thread")


def interval_table(versus: Mapping[str, Mapping]) -> pd.DataFrame:
    """Paired comparisons in test excess over buy-and-hold as a table: ``versus`` maps a name to a
    `finrl_tutorial.book.learning.paired_test` result of the differences; per row the pairs, the
    mean difference and its uncorrected 95 % t-interval (in percentage points, with signs), the t-test's and
    Wilcoxon's p-values and how many differences are positive."""
    return pd.DataFrame({name: {"(family, market) pairs": v["n"], "mean difference in test excess (points)": points(v["mean"]),
                                "95 % interval (uncorrected)": f"[{points(v['low'])}, {points(v['high'])}]",
                                "p (t)": f"{v['p (t)']:.2g}", "p (Wilcoxon)": f"{v['p (Wilcoxon)']:.2g}",
                                "positive": f"{v['positive']} of {v['n']}"}
                         for name, v in versus.items()}).T


def learn_method_note(learn: Mapping, comparisons: Mapping[str, tuple[tuple, tuple]] | None = None,
                      record_name: str = "bench_learn.json") -> MethodNote:
    """How section 3.8's record (the file ``record_name``) was measured, read from the ``bench learn`` record: its date, cores
    and threads; the time per run of our PPO and SB3's at SB3's env-steps (a wall time, not a speed
    ratio of the two loops); and, per comparison of ``comparisons`` (a name and the ``(a, b)`` pair
    of `teaching.paired_captures`; none by default), the pairs both learners ran that are left out
    because a capture is undefined there (`teaching.capture_gaps_text`)."""
    from . import teaching

    machine, steps = learn["machine"], sb3_steps(learn)
    ours, sb3 = learner_rows(learn, "ppo", steps, "last"), learner_rows(learn, "sb3_ppo", steps, "last")
    paragraphs = [
        f"The record is {record_name}, measured on {machine['date'][:10]} on {machine['cpu_count']} CPU cores, "
        f"{machine['threads']} torch thread per run; each market of a family is built from its seed, the same for "
        "every learner.",
        f"Time per run at {steps:,} env-steps: ours {ours['wall_seconds'].min():.0f}-{ours['wall_seconds'].max():.0f} s, "
        f"SB3 {sb3['wall_seconds'].min():.0f}-{sb3['wall_seconds'].max():.0f} s (wall time, validations included: "
        "SB3 steps one env per call, ours 64 accounts per call, so this is not a speed ratio of the two PPO loops; "
        "chapter 8.8 compares those at the same accounts).",
    ]
    for name, (a, b) in (comparisons or {}).items():
        gaps = teaching.capture_gaps_text(teaching.capture_gaps(learn, a, b))
        paragraphs.append(f"{name}: {gaps or 'no pair both ran is left out'}.")
    return how_measured(*paragraphs)


def chapter_box(comparison: pd.DataFrame, budget: int, file_lines: pd.DataFrame, losses: Mapping,
                gradients: pd.DataFrame, versus: Mapping[str, Mapping], loop_sharpe: pd.DataFrame | None = None,
                record_name: str = "bench_learn.json"):
    """The box at the end of chapter 3 (`finrl_tutorial.book.measured_box`): this run's PPO-A2C test
    capture and budget, the length of ``agents/ppo.py`` (`line_counts`), one update's minibatches
    and clip fraction, the baseline's variance ratio and each estimator's z from 3.0
    (`estimator_table`), 3.6's validation Sharpe before and after the loop (``loop_sharpe``: its
    first row the untrained agent, its second the trained one, one column), and the recorded
    record's (the file ``record_name``) uncorrected paired intervals of test excess over buy-and-hold (``versus``). Its *Shows* calls the estimate "consistent
    with unbiased" only where every z lies within ±2 (a finite sample cannot show it unbiased), and
    its *Does not show* names what neither comparison isolates."""
    from . import measured_box

    capture = comparison["test: signal rule's excess captured"]
    z = gradients["z (mean − exact, in standard errors)"]
    z_text = ", ".join(f"{name} {value:+.1f}" for name, value in z.items())
    # a finite sample cannot show "unbiased": only that it is consistent with it (|z| < 2) or not
    unbiased = (f"consistent with unbiased (each z within ±2: {z_text})" if (z.abs() < 2).all()
                else f"not clearly unbiased (a z outside ±2: {z_text})")
    return measured_box(
        this_run={
            "PPO vs A2C, test capture (one market, one seed)": ", ".join(f"{a} {v:.2f}" for a, v in capture.items()),
            "env-steps per run": f"{budget:,}",
            "agents/ppo.py, as installed": f"{int(file_lines.loc['agents/ppo.py', 'lines'])} lines",
            "one update on a 512-sample rollout": f"{losses['loss/minibatches']} gradient steps (minibatches × epochs), "
                                                 f"clip fraction {losses['loss/clip_fraction']:.1e}",
            "policy-gradient variance, baseline V(s) / none (one day, 64 states)": f"{variance_ratio(gradients):.2f}",
            "score-function mean minus exact gradient, in standard errors (3.0)": z_text,
            **({} if loop_sharpe is None else {
                "the loop on 1.9's planted edge (3.6), validation Sharpe untrained → trained":
                    f"{loop_sharpe.iloc[0, 0]:.2f} → {loop_sharpe.iloc[1, 0]:.2f}"}),
        },
        recorded={f"{name}, test excess ({record_name}, uncorrected)":
                   f"{points_text(v)} over the {v['n']} (family, market) pairs both ran"
                   for name, v in versus.items()},
        shows=f"that the policy-gradient estimate is {unbiased}, and that a baseline lowers its variance; what each "
              "piece of PPO computes (run on real tensors); and how our PPO and A2C, and our PPO and SB3's PPO at its "
              "defaults, compare on planted edges at the same env-steps, on the markets both ran",
        does_not_show="that any estimate is exactly unbiased (a bias smaller than about two standard errors would go unseen); "
                      "which algorithm is better in general (live: one market and one seed; in the record: a few "
                      "markets per family); or which part of a setup makes a difference: PPO against A2C changes "
                      "the loss together with A2C's own defaults, and ours against SB3 changes the network, the map "
                      "from action to weights, the rollout layout and the other defaults all at once; nor results "
                      "free of the test year: the defaults (γ, the network, the portfolio head) were set with the "
                      "sample's years in view, its test year among them (3.4)",
    )
