"""The yardstick of learning on a synthetic market: oracles through the real env, and the
fraction of their excess return over buy-and-hold that an agent captures.

Two yardsticks. The **signal rule** (`oracle_record`; formerly called the simple oracle) is the
market's own rule (equal weight in every stock whose expected return is >= 0;
`finrl_tutorial.data.synthetic`): a baseline that knows the sign of each expected return, not a
ceiling: it ignores costs and persistence, so a learner can beat it. The **informed oracle**
(`informed_oracle`) is the best, *on the validation split*, of a family of rules that know the
truth (the generator's expected returns) and trade through the same env with full costs:

* ``top_k``: hold the k stocks with the highest expected return, bought at equal weight; a held
  stock is sold only when its rank falls beyond ``k + band`` (a holding band: no trade while the
  rank moves less), and held stocks are not rebalanced, so only a change of membership trades;
* ``mean_variance``: each day, the long-only portfolio (weights >= 0, sum <= 1, the rest cash)
  that maximises ``μ'w − (risk_aversion / 2) w'Σw − turnover_cost · |w − w_now|₁``, with μ the true
  expected returns, Σ the covariance of daily returns estimated on the *training* split and
  ``w_now`` the weights held (a quadratic programme solved by OSQP, warm-started day to day);
* ``simple`` (alias ``signal``): the signal rule itself, so that the informed oracle earns at least as much on
  validation.

The test split chooses nothing: the rule and its parameters are picked on validation (by the
validation Sharpe ratio, as the agent's checkpoint is), then run once on test. Capture against the informed oracle is therefore expected to stay below 1 (a
learner can still exceed it on one market by luck: the family is rich, not Bayes-optimal).
The market and the expected returns are data; running rules through the env with full costs is
a backtest, so it lives here, above the envs.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd
import scipy.sparse as sparse
import torch

from ..data.synthetic import SyntheticMarket
from ..envs import EnvConfig, VecStockTradingEnv
from ..metrics import cumulative_return, sharpe_ratio
from .runner import EpisodeRecord, buy_and_hold_baseline, run_policy


def oracle_record(synthetic: SyntheticMarket, split: str = "test", env_config: EnvConfig | None = None,
                  **kwargs) -> EpisodeRecord:
    """The oracle of ``synthetic`` through the real env on ``split`` with full costs (``action_mode``
    forced to ``weights``; everything else from ``env_config``). ``kwargs`` go to ``run_policy``."""
    config = replace(env_config or EnvConfig(), action_mode="weights")
    return run_policy(synthetic.oracle(split), synthetic.market.splits[split], config, **kwargs)


def excess_return(record: EpisodeRecord, baseline_record: EpisodeRecord) -> float:
    """``R_record - R_baseline``: the difference of the two cumulative returns over the split."""
    return cumulative_return(record.wealth) - cumulative_return(baseline_record.wealth)


def oracle_capture(agent_record: EpisodeRecord, oracle_record: EpisodeRecord,
                   baseline_record: EpisodeRecord) -> float:
    """Fraction of the oracle's excess return the agent captures: ``(R_agent - R_bh) / (R_oracle - R_bh)``.

    ``R`` is each record's cumulative return over the split; the baseline is normally
    ``buy_and_hold_baseline`` on the same split. 1 = as good as the oracle, 0 = no better than
    buy-and-hold, negative = worse. ``nan`` when the oracle does not beat the baseline (there is
    no excess to capture, e.g. on the ``none`` market), rather than a meaningless ratio.
    """
    excess = excess_return(oracle_record, baseline_record)
    if not excess > 0:
        return float("nan")
    return excess_return(agent_record, baseline_record) / excess


RULE_KINDS = ("top_k", "mean_variance", "simple")
RULE_ALIASES = {"signal": "simple"}
"""Other names a kind is accepted under: ``signal`` is the signal rule, stored as ``simple`` (the
name the stored records use)."""

RISK_AVERSIONS = (0.25, 1.0, 4.0, 16.0)
"""``mean_variance`` grid: risk aversion λ (daily returns; λ = 4 and a stock's variance of 5e-4
turn an expected return of 0.1 % into a 50 % weight before the budget binds)."""
TURNOVER_COSTS = (0.0, 0.0005, 0.001, 0.002)
"""``mean_variance`` grid: penalty per unit of turnover, in daily return (the env's round trip
costs about 0.1-0.2 %: 5 bp slippage each way, stamp duty on the sale, commission)."""


@dataclass(frozen=True)
class InformedRule:
    """One member of the informed family: ``kind`` and its parameters."""

    kind: str
    """``top_k``, ``mean_variance`` or ``simple`` (the signal rule; ``signal`` is accepted and
    stored as ``simple``)."""
    k: int = 0
    """``top_k``: stocks held."""
    band: int = 0
    """``top_k``: a held stock is sold only once its rank is beyond ``k + band`` (0: at ``k``)."""
    risk_aversion: float = 0.0
    """``mean_variance``: λ."""
    turnover_cost: float = 0.0
    """``mean_variance``: the penalty per unit of turnover."""

    def __post_init__(self):
        object.__setattr__(self, "kind", RULE_ALIASES.get(self.kind, self.kind))

    @property
    def name(self) -> str:
        if self.kind == "top_k":
            return f"top_k(k={self.k}, band={self.band})"
        if self.kind == "mean_variance":
            return f"mean_variance(risk_aversion={self.risk_aversion:g}, turnover_cost={self.turnover_cost:g})"
        return "simple"


def top_k_sizes(num_stocks: int) -> list[int]:
    """The k tried: 1, 2, 3, 5, 8, 13, ... (roughly ×1.6) up to and including ``num_stocks``."""
    sizes, k = [], 1
    while k < num_stocks:
        sizes.append(k)
        k = max(k + 1, round(k * 1.6))
    return sizes + [num_stocks]


def informed_rules(num_stocks: int) -> list[InformedRule]:
    """The whole family for a market of ``num_stocks``: every k of `top_k_sizes` with bands 0,
    k/2, k and 2k (as far as the universe allows), the mean-variance grid, and the signal rule."""
    rules = []
    for k in top_k_sizes(num_stocks):
        bands = sorted({min(band, num_stocks - k) for band in (0, math.ceil(k / 2), k, 2 * k)})
        rules += [InformedRule("top_k", k=k, band=band) for band in bands]
    rules += [InformedRule("mean_variance", risk_aversion=risk, turnover_cost=cost)
              for risk in RISK_AVERSIONS for cost in TURNOVER_COSTS]
    return rules + [InformedRule("simple")]


def _held_weights(obs: torch.Tensor, num_stocks: int) -> np.ndarray:
    """The weights held at the close the observation describes (the first entry of each stock's block)."""
    blocks = obs[0, 1:].reshape(num_stocks, -1)
    return blocks[:, 0].detach().cpu().numpy().astype(np.float64)


class _DailyRule:
    """A `Policy` that reads one row of expected returns per call (a fresh one per episode)."""

    def __init__(self, expected: np.ndarray):
        self.expected = expected
        """[decision days, S] E[r_{t+1} | close t]."""
        self.calls = 0

    def __call__(self, obs: torch.Tensor) -> torch.Tensor:
        if self.calls >= len(self.expected):
            raise RuntimeError(f"informed rule called {self.calls + 1} times on a split with "
                               f"{len(self.expected)} decision days: use a fresh one per episode")
        held = _held_weights(obs, self.expected.shape[1])
        target = self.target(self.expected[self.calls], held)
        self.calls += 1
        return torch.as_tensor(target, dtype=obs.dtype, device=obs.device).unsqueeze(0).expand(obs.shape[0], -1)


class TopKPolicy(_DailyRule):
    """``top_k`` with a holding band (see the module docstring)."""

    def __init__(self, expected: np.ndarray, k: int, band: int = 0):
        super().__init__(expected)
        self.k, self.band = k, band
        self.members = np.zeros(expected.shape[1], dtype=bool)

    def target(self, expected: np.ndarray, held: np.ndarray) -> np.ndarray:
        order = np.argsort(-expected, kind="stable")  # ties broken by column
        rank = np.empty_like(order)
        rank[order] = np.arange(len(order))
        keep = self.members & (rank < self.k + self.band)
        if keep.sum() > self.k:  # a wide band can keep more than k: the best k of them stay
            keep &= rank < np.sort(rank[keep])[self.k - 1] + 1
        entrants = [i for i in order if not keep[i]][:self.k - int(keep.sum())]
        target = np.where(keep, held, 0.0)  # members stay as they are: no rebalancing trades
        if entrants:
            target[entrants] = max(0.0, 1.0 - target.sum()) / len(entrants)
        self.members = keep.copy()
        self.members[entrants] = True
        return target


class MeanVariancePolicy(_DailyRule):
    """``mean_variance`` with a turnover penalty, solved by OSQP (see the module docstring).

    Variables ``x = [w, buy, sell]`` (each ``S``): minimise ``½ λ w'Σw − μ'w + c·1'(buy + sell)``
    subject to ``w − buy + sell = w_now``, ``w, buy, sell >= 0`` and ``1'w <= 1``."""

    def __init__(self, expected: np.ndarray, covariance: np.ndarray, risk_aversion: float, turnover_cost: float):
        super().__init__(expected)
        import osqp  # a run-time dependency of this rule only

        stocks = expected.shape[1]
        eye = sparse.identity(stocks, format="csc")
        zero = sparse.csc_matrix((stocks, stocks))
        objective = sparse.block_diag([sparse.csc_matrix(risk_aversion * covariance), zero, zero], format="csc")
        self.linear = np.concatenate([np.zeros(stocks), np.full(2 * stocks, turnover_cost)])
        constraints = sparse.vstack([sparse.hstack([eye, -eye, eye]),  # w − buy + sell = w_now
                                     sparse.identity(3 * stocks),  # all >= 0
                                     sparse.csc_matrix(np.concatenate([np.ones(stocks), np.zeros(2 * stocks)])[None, :])],
                                    format="csc")
        self.lower = np.concatenate([np.zeros(stocks), np.zeros(3 * stocks), [-np.inf]])
        self.upper = np.concatenate([np.zeros(stocks), np.full(3 * stocks, np.inf), [1.0]])
        self.stocks = stocks
        self.solver = osqp.OSQP()
        self.solver.setup(P=sparse.triu(objective, format="csc"), q=self.linear, A=constraints, l=self.lower,
                          u=self.upper, verbose=False, eps_abs=1e-6, eps_rel=1e-6, max_iter=10_000, polishing=True)

    def target(self, expected: np.ndarray, held: np.ndarray) -> np.ndarray:
        self.linear[:self.stocks] = -expected
        self.lower[:self.stocks] = held
        self.upper[:self.stocks] = held
        self.solver.update(q=self.linear, l=self.lower, u=self.upper)
        solution = self.solver.solve(raise_error=False)  # a failed day keeps what is held (below)
        if solution.x is None or not np.all(np.isfinite(solution.x)):
            return held  # no solution this day: keep what is held
        weights = np.clip(solution.x[:self.stocks], 0.0, None)
        weights[np.abs(weights - held) < 1e-4] = held[np.abs(weights - held) < 1e-4]  # solver dust: no trade
        return weights / max(1.0, weights.sum())


def training_covariance(synthetic: SyntheticMarket) -> np.ndarray:
    """Covariance of the daily close-to-close returns on the *training* split (what a trader could
    estimate before validation), with a tiny ridge so that the QP is strictly convex."""
    close = synthetic.market.train.close.to(torch.float64).numpy()
    returns = close[1:] / close[:-1] - 1.0
    covariance = np.atleast_2d(np.cov(returns, rowvar=False))
    return covariance + 1e-8 * np.eye(len(covariance))


def _expected_rows(synthetic: SyntheticMarket, split: str) -> np.ndarray:
    start = synthetic.split_offset(split)
    days = synthetic.market.splits[split].num_days
    return synthetic.expected_return.to_numpy()[start:start + days - 1]


def informed_policy(synthetic: SyntheticMarket, rule: InformedRule, split: str,
                    covariance: np.ndarray | None = None):
    """A fresh `Policy` of ``rule`` on ``split`` (run it with ``action_mode="weights"``)."""
    if rule.kind == "simple":
        return synthetic.oracle(split)
    expected = _expected_rows(synthetic, split)
    if rule.kind == "top_k":
        return TopKPolicy(expected, rule.k, rule.band)
    if rule.kind == "mean_variance":
        covariance = training_covariance(synthetic) if covariance is None else covariance
        return MeanVariancePolicy(expected, covariance, rule.risk_aversion, rule.turnover_cost)
    raise ValueError(f"unknown informed rule kind {rule.kind!r}: use top_k, mean_variance or simple (signal)")


def informed_record(synthetic: SyntheticMarket, rule: InformedRule, split: str = "test",
                    env_config: EnvConfig | None = None, covariance: np.ndarray | None = None) -> EpisodeRecord:
    """``rule`` through the real env on ``split`` with full costs (``action_mode`` forced to ``weights``)."""
    config = replace(env_config or EnvConfig(), action_mode="weights")
    return run_policy(informed_policy(synthetic, rule, split, covariance), synthetic.market.splits[split], config)


@dataclass
class InformedOracle:
    """The informed oracle of a market: the rule chosen on validation, and every rule's score there."""

    rule: InformedRule
    """The member of the family that is best on validation (by ``criterion``)."""
    valid_excess: float
    """Its validation excess return."""
    scores: dict[str, float] = field(default_factory=dict)
    """Rule name → validation excess return, for every member tried."""
    best_of_kind: dict[str, str] = field(default_factory=dict)
    """Kind → the name of that kind's best member on validation (by the criterion)."""
    sharpes: dict[str, float] = field(default_factory=dict)
    """Rule name → validation Sharpe ratio."""
    criterion: str = "sharpe"
    """What chose the rule: ``sharpe`` or ``excess`` (see `informed_oracle`)."""
    window: str = "valid"
    """Where it was chosen: ``valid`` or ``train+valid`` (`SELECTION_WINDOWS`)."""

    def record(self, synthetic: SyntheticMarket, split: str = "test", env_config: EnvConfig | None = None):
        """The chosen rule on ``split`` (normally the test split, which chose nothing)."""
        return informed_record(synthetic, self.rule, split, env_config)


def wealth_curves(synthetic: SyntheticMarket, rules: list[InformedRule], split: str,
                  env_config: EnvConfig | None = None, covariance: np.ndarray | None = None) -> np.ndarray:
    """[days, rules] each rule's wealth at every close of ``split``, all rules run side by side in
    one batched env (one account per rule; the accounts never interact, so each column is the run
    `informed_record` makes, at a fraction of the cost)."""
    market = synthetic.market.splits[split]
    config = replace(env_config or EnvConfig(), action_mode="weights", random_start=False, episode_days=None,
                     ruin_fraction=0.0)  # as `run_policy`: one whole-split episode per account
    covariance = training_covariance(synthetic) if covariance is None else covariance
    policies = [informed_policy(synthetic, rule, split, covariance) for rule in rules]
    env = VecStockTradingEnv(market, len(rules), config, dtype=torch.float64)
    obs, _ = env.reset()
    wealth = [torch.full((len(rules),), config.initial_cash, dtype=torch.float64)]
    for _ in range(market.num_days - 1):
        action = torch.cat([policy(obs[i:i + 1]) for i, policy in enumerate(policies)])
        obs, _, _, _, info = env.step(action)
        wealth.append(info["wealth"].clone())
    return torch.stack(wealth).numpy()


def final_wealth(synthetic: SyntheticMarket, rules: list[InformedRule], split: str,
                 env_config: EnvConfig | None = None, covariance: np.ndarray | None = None) -> np.ndarray:
    """Each rule's wealth at the last close of ``split`` (`wealth_curves`' last row)."""
    return wealth_curves(synthetic, rules, split, env_config, covariance)[-1]


SELECTION_CRITERIA = ("sharpe", "excess")
SELECTION_WINDOWS = ("valid", "train+valid")
"""Where the informed oracle is chosen. ``valid``: the validation split alone, as the agent's
checkpoint is. ``train+valid``: the training and the validation splits, one after the other. The
rules fit nothing to returns (top-k reads the true expected returns; only mean-variance's covariance
comes from the training split), so the training split is out of sample for their choice, and four
years choose among 43 rules with half the noise of one."""


def _window_returns(synthetic: SyntheticMarket, rules: list[InformedRule], window: str,
                    env_config: EnvConfig) -> tuple[np.ndarray, np.ndarray]:
    """[days, rules] daily returns of every rule over ``window``, and [days] those of equal-weight
    buy-and-hold; each split is its own episode, started in cash."""
    rule_returns, baseline_returns = [], []
    for split in ("train", "valid") if window == "train+valid" else ("valid",):
        curves = wealth_curves(synthetic, rules, split, env_config)
        baseline = np.asarray(buy_and_hold_baseline(synthetic.market.splits[split], env_config).wealth, dtype=float)
        rule_returns.append(curves[1:] / curves[:-1] - 1.0)
        baseline_returns.append(baseline[1:] / baseline[:-1] - 1.0)
    return np.concatenate(rule_returns), np.concatenate(baseline_returns)


def informed_oracle(synthetic: SyntheticMarket, env_config: EnvConfig | None = None,
                    rules: list[InformedRule] | None = None, criterion: str = "sharpe",
                    window: str = "valid") -> InformedOracle:
    """Choose the informed oracle of ``synthetic`` on ``window`` (`SELECTION_WINDOWS`; default the
    *validation* split): every rule of ``rules`` (default `informed_rules`) through the env with
    full costs; the best one by ``criterion`` wins (ties: the first). ``sharpe`` (default): the
    Sharpe ratio over the window, as the trainer chooses the agent's checkpoint. ``excess``: the
    excess compounded return over equal-weight buy-and-hold, which favours concentrated rules whose
    window was lucky (on 30-stock markets at ic 0.05 it chose near top-1 portfolios that lost on
    test). ``scores`` and ``valid_excess`` are the excess returns over the window whatever the
    criterion; ``sharpes`` the Sharpe ratios. The test split chooses nothing."""
    if criterion not in SELECTION_CRITERIA:
        raise ValueError(f"unknown criterion {criterion!r}: use one of {', '.join(SELECTION_CRITERIA)}")
    if window not in SELECTION_WINDOWS:
        raise ValueError(f"unknown selection window {window!r}: use one of {', '.join(SELECTION_WINDOWS)}")
    env_config = env_config or EnvConfig()
    rules = list(rules or informed_rules(synthetic.market.full.num_stocks))
    if not rules:
        raise ValueError("informed_oracle needs at least one rule")
    returns, baseline = _window_returns(synthetic, rules, window, env_config)
    excess = np.prod(1.0 + returns, axis=0) - np.prod(1.0 + baseline)
    sharpe = np.array([sharpe_ratio(pd.Series(np.cumprod(np.r_[1.0, 1.0 + column]))) for column in returns.T])
    merit = sharpe if criterion == "sharpe" else excess
    best = int(np.argmax(merit))  # the first of equals
    best_of_kind = {}
    for kind in dict.fromkeys(rule.kind for rule in rules):
        members = [i for i, rule in enumerate(rules) if rule.kind == kind]
        best_of_kind[kind] = rules[max(members, key=lambda i: (merit[i], -i))].name
    return InformedOracle(rules[best], float(excess[best]), {r.name: float(v) for r, v in zip(rules, excess)},
                          best_of_kind, {r.name: float(v) for r, v in zip(rules, sharpe)}, criterion, window)


__all__ = ["InformedOracle", "InformedRule", "MeanVariancePolicy", "SELECTION_CRITERIA", "SELECTION_WINDOWS", "TopKPolicy", "excess_return", "final_wealth",
           "informed_oracle", "informed_policy", "informed_record", "informed_rules", "oracle_capture",
           "oracle_record", "top_k_sizes", "training_covariance", "wealth_curves"]
