"""Proximal Policy Optimisation in one file: config, actor-critic, rollout, GAE, clipped update.

Read it top to bottom; it ends, as CleanRL's file does, with the loop itself (`learn`):
rollout → GAE → update, iteration after iteration. `finrl_tutorial.training.train` runs that same
loop and adds validation, logging and checkpoints; the scale-out paths plug into it as a
`Collector` (where rollouts come from) and a `LearnerContext` (where the update runs), the
plumbing in `collect.py`. Code that is there only for speed lives in `fast.py`. A2C
(`a2c.py`) is this file with its own defaults and `a2c_policy_loss`. References: Schulman et
al. 2017 (PPO), 2016 (GAE); CleanRL's ppo_continuous_action.

Sizes: each iteration collects ``num_envs × horizon_len`` samples, then makes ``repeat_times``
passes (epochs) over all of them in minibatches of ``batch_size``: every sample is used
``repeat_times`` times, whatever the number of envs.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import torch
from torch import nn
from torch.distributions import Normal

from ..errors import ConfigError, check_bool, check_choice, check_device, check_int, check_real, strict_fields
from . import fast
from .collect import Collector, EnvCollector, LearnerContext, Rollout, SingleProcessContext
from .fast import InPlaceTanh, keep_freed_memory  # noqa: F401  (keep_freed_memory: still importable from here)


@strict_fields
@dataclass
class PPOConfig:
    """Hyperparameters of PPO (and, with other defaults, of A2C)."""

    algo: str = "ppo"
    """``ppo`` (clipped surrogate) or ``a2c`` (plain policy gradient, one pass)."""
    num_envs: int = 64
    """Parallel sub-envs in the batched env."""
    horizon_len: int = 64
    """Rollout steps per env per iteration."""
    batch_size: int = 1024
    """Minibatch size of the update (capped at the rollout size)."""
    repeat_times: int = 4
    """Epochs over the whole rollout per iteration (each sample is used this many times)."""
    learning_rate: float = 3e-4
    """Adam step size."""
    anneal_lr: bool = True
    """Decay the learning rate linearly to 0 over the run."""
    gamma: float = 0.9
    """Discount factor per trading day. A target portfolio is rebalanced every day, so an action's
    effect on the return is mostly the next day's; 0.9 still counts about ten days of trading
    costs. (No stored record compares other values; `bench learn --set gamma=0.99` measures one.)"""
    gae_lambda: float = 0.2
    """GAE λ: 0 is one-step TD, 1 is Monte Carlo. Low, because with ``pathwise`` the day's own
    reward reaches the policy through its pathwise gradient and the later days' rewards add mostly
    noise to the advantage; the critic carries the future (trading costs to come) instead. On one
    synthetic market (100 stocks, factor ic 0.05, seed 0, one run each, 2026-12-06), the trained
    mean portfolio's expected daily edge over equal weight after 135,168 env steps was 3.8 bp at
    λ 0.95, 7.8 bp at 0.5, 9.0 bp at 0.2 and 9.2 bp at 0."""
    clip_range: float = 0.2
    """PPO's ratio clip ε."""
    entropy_coef: float = 0.0
    """Weight of the entropy *bonus* (added to the objective; it keeps exploration up)."""
    value_coef: float = 0.5
    """Weight of the value loss."""
    max_grad_norm: float = 0.5
    """Gradient-norm clip."""
    target_kl: float | None = None
    """Stop an iteration's epochs early once the approximate KL exceeds this (None: never)."""
    normalize_advantages: bool = True
    """Standardise advantages per minibatch."""
    market_baseline: bool = True
    """Subtract the env's ``market_reward`` (what ``initial_cash`` spread equally over the stocks
    earned that day) from every reward before GAE. It depends on the day's prices alone, never on
    an action, so the policy gradient keeps its expectation (an *input-driven baseline*, Mao et
    al. 2019), while the market's common move, which no critic can foresee, leaves the advantages."""
    pathwise: bool = True
    """With the portfolio head: split the one-day frictionless reward out of the score-function
    estimate and take its gradient pathwise instead (a control variate). The advantage loses the
    sampled portfolio's luck (its frictionless reward minus the policy's average portfolio's,
    `Rollout.sampling_luck`); the loss gains minus the average frictionless reward of the current
    policy, differentiated through the softmax (chapter 3.4). Unbiased: what is taken out of the
    advantage has expectation 0 under the policy, and its gradient is added back exactly."""

    network: str = "stockwise"
    """``stockwise``: one network shared by all stocks (see `StockwiseEncoder`); ``mlp``: one MLP
    over the flat observation."""
    portfolio_head: bool = True
    """In the env's ``weights`` action mode, sample scores and trade their softmax as target weights
    (see `ActorCritic`); False passes the Gaussian sample to the env as it is."""
    hidden_sizes: tuple[int, ...] = (64, 64)
    """Hidden layers of the actor and of the critic networks (per stock for ``stockwise``)."""
    init_log_std: float = 1.0
    """Initial log standard deviation of the Gaussian policy. With the portfolio head the Gaussian
    is over softmax scores: a wide start (std e ≈ 2.7) tries portfolios far apart, which makes the
    reward differences, and so the gradient, large against the market's noise. One record compares
    0 at 100 stocks, `book/data/bench_learn_init_spread100.json`: 5.9 points less test excess, an
    inconclusive difference (chapter 1.12)."""
    total_steps: int = 300_000
    """Env steps to train for (all envs together): about a minute or two on one CPU core at 15 stocks
    (chapter 1.7 prints the time), longer for larger universes (chapter 1.11)."""
    seed: int = 0
    """Seeds torch, the env's start days and the minibatch order."""
    device: str = "cpu"
    """Where the env and the networks live: ``cpu``, ``cuda``, ``cuda:1`` ..."""

    def __post_init__(self):
        owner = type(self).__name__
        check_choice(owner, "algo", self.algo, ("ppo", "a2c"))
        for name in ("num_envs", "horizon_len", "batch_size", "repeat_times", "total_steps"):
            check_int(owner, name, getattr(self, name), minimum=1)
        check_int(owner, "seed", self.seed)
        check_real(owner, "learning_rate", self.learning_rate, low=0, low_open=True)
        check_real(owner, "gamma", self.gamma, low=0, high=1, low_open=True)
        check_real(owner, "gae_lambda", self.gae_lambda, low=0, high=1)
        check_real(owner, "clip_range", self.clip_range, low=0, low_open=True)
        for name in ("entropy_coef", "value_coef", "max_grad_norm"):
            check_real(owner, name, getattr(self, name), low=0, low_open=name == "max_grad_norm")
        if self.target_kl is not None:
            check_real(owner, "target_kl", self.target_kl, low=0, low_open=True)
        check_bool(owner, "anneal_lr", self.anneal_lr)
        check_bool(owner, "normalize_advantages", self.normalize_advantages)
        check_bool(owner, "market_baseline", self.market_baseline)
        check_bool(owner, "pathwise", self.pathwise)
        check_choice(owner, "network", self.network, ("stockwise", "mlp"))
        check_bool(owner, "portfolio_head", self.portfolio_head)
        check_real(owner, "init_log_std", self.init_log_std)
        if isinstance(self.hidden_sizes, (int, str)) or not len(tuple(self.hidden_sizes)):
            raise ConfigError(f"{owner}.hidden_sizes must be a non-empty sequence of layer widths, "
                              f"got {self.hidden_sizes!r}")
        self.hidden_sizes = tuple(check_int(owner, "hidden_sizes", h, minimum=1) for h in self.hidden_sizes)
        self.device = check_device(owner, "device", self.device)

    @property
    def rollout_size(self) -> int:
        return self.num_envs * self.horizon_len

    @property
    def num_minibatches(self) -> int:
        return max(1, math.ceil(self.rollout_size / min(self.batch_size, self.rollout_size)))

    def iterations_for(self, world_size: int = 1) -> int:
        """Iterations of a run on ``world_size`` data-parallel ranks: ``total_steps`` counts the env
        steps of all ranks together, so K ranks make 1/K as many iterations."""
        return max(1, self.total_steps // (self.rollout_size * world_size))

    @property
    def iterations(self) -> int:
        """Iterations of a one-process run (``iterations_for(1)``)."""
        return self.iterations_for(1)


LUCK_DRAWS = 8
"""Draws of the policy's noise that estimate its average portfolio's frictionless reward each step
(`ActorCritic.sampling_luck`): 8 add an eighth of the luck's own variance to the estimate."""


def mlp(sizes, out_gain: float) -> nn.Sequential:
    """Tanh MLP with orthogonal init (gain √2 inside, ``out_gain`` on the last layer). Its tanh is
    `fast.InPlaceTanh`: ``nn.Tanh`` to within 4e-7, faster on some CPUs (chapter 3.2 times it)."""
    layers = []
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
        linear = nn.Linear(a, b)
        last = i == len(sizes) - 2
        nn.init.orthogonal_(linear.weight, out_gain if last else math.sqrt(2))
        nn.init.zeros_(linear.bias)
        layers += [linear] if last else [linear, InPlaceTanh()]
    return nn.Sequential(*layers)


class StockwiseEncoder(nn.Module):
    """One small network shared by every stock (Deep Sets / EIIE-style, Jiang et al. 2017).

    The flat observation is ``[cash share, stock 1 block, …, stock S block]`` (see
    `finrl_tutorial.envs.observe`). Each stock's block is read together with its cross-sectional
    z-score (deviation from the mean over stocks, divided by their spread) and the cash share, by
    the *same* weights, so what is learned about one stock serves all of them (S times the data
    per weight) and the output is permutation-equivariant: relabelling the stocks relabels the
    outputs. Returns ``[..., S, H]``.
    """

    def __init__(self, num_stocks: int, per_stock: int, hidden_sizes):
        super().__init__()
        self.num_stocks, self.per_stock = num_stocks, per_stock
        self.body = nn.Sequential(mlp((2 * per_stock + 1, *hidden_sizes), out_gain=math.sqrt(2)), InPlaceTanh())

    def blocks(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``cash [..., 1]`` and the per-stock blocks ``[..., S, per_stock]`` of a flat observation."""
        return obs[..., :1], obs[..., 1:].unflatten(-1, (self.num_stocks, self.per_stock))

    def inputs(self, obs: torch.Tensor) -> torch.Tensor:
        """What the shared network reads for each stock, ``[..., S, 2 per_stock + 1]``: the stock's
        block, its cross-sectional z-score and the cash share (the same for the actor's and the
        critic's encoder: `ActorCritic` computes it once for both)."""
        cash, stocks = self.blocks(obs)
        # each entry's cross-sectional z-score (as quants rank factors): a signal that only says
        # which stock beats which keeps unit scale even when a common move dominates its level
        relative = fast.cross_sectional_zscore(stocks)
        return torch.cat([stocks, relative, cash.unsqueeze(-2).expand(*stocks.shape[:-1], 1)], -1)

    def forward(self, obs: torch.Tensor, inputs: torch.Tensor | None = None) -> torch.Tensor:
        inputs = self.inputs(obs) if inputs is None else inputs
        # one row per (sample, stock): the layers' outputs are whole matrices, not views of one
        return self.body(inputs.reshape(-1, inputs.shape[-1])).view(*inputs.shape[:-1], -1)


class ActorCritic(nn.Module):
    """Gaussian policy (state-dependent mean, learned state-independent std) and a value net.

    ``network``: ``stockwise`` shares one network across stocks (`StockwiseEncoder`); ``mlp`` reads
    the flat observation with one MLP (CleanRL's layout). ``portfolio=True`` (the env's
    ``weights`` action mode) makes the Gaussian's sample a vector of per-stock *scores* relative to
    cash, and the env action the softmax over ``[cash, stocks]`` without the cash entry: target
    weights that are ≥ 0 and sum to ≤ 1 by construction, so no action is wasted on the clip at
    ±1 and every score moves the portfolio. The log-probability is that of the scores (the map
    to weights is a fixed part of the environment as far as the gradient is concerned).
    """

    def __init__(self, obs_dim: int, action_dim: int, hidden_sizes, init_log_std: float, network: str,
                 portfolio: bool):
        # no defaults here: they, and the check of ``network``, are PPOConfig's (build with `from_config`)
        super().__init__()
        self.network, self.portfolio = network, portfolio
        if network == "stockwise":
            per_stock, remainder = divmod(obs_dim - 1, action_dim)
            if remainder or per_stock < 1:
                raise ValueError(f"obs_dim {obs_dim} is not 1 + {action_dim} stocks x a per-stock block")
            width = hidden_sizes[-1]
            self.actor_encoder = StockwiseEncoder(action_dim, per_stock, hidden_sizes)
            self.actor_head = mlp((width, 1), out_gain=0.01)
            self.critic_encoder = StockwiseEncoder(action_dim, per_stock, hidden_sizes)
            # value of the portfolio: the average stock, the held stocks (weighted by weight), the cash share
            self.critic_head = mlp((2 * width + 1, width, 1), out_gain=1.0)
        else:
            self.actor_mean = mlp((obs_dim, *hidden_sizes, action_dim), out_gain=0.01)
            self.critic = mlp((obs_dim, *hidden_sizes, 1), out_gain=1.0)
        self.log_std = nn.Parameter(torch.full((action_dim,), float(init_log_std)))

    @classmethod
    def from_config(cls, obs_dim: int, action_dim: int, config: "PPOConfig", action_mode: str):
        """The agent a `PPOConfig` describes, for an env with the given ``action_mode``: the one way
        to build an agent (its sizes, initial std and network are the config's)."""
        return cls(obs_dim, action_dim, config.hidden_sizes, config.init_log_std, network=config.network,
                   portfolio=action_mode == "weights" and config.portfolio_head)

    def value(self, obs: torch.Tensor) -> torch.Tensor:
        if self.network == "mlp":
            return self.critic(obs).squeeze(-1)
        return self._stockwise_value(obs, self.critic_encoder(obs))

    def _stockwise_value(self, obs: torch.Tensor, hidden: torch.Tensor) -> torch.Tensor:
        cash, stocks = self.critic_encoder.blocks(obs)
        # the block's first entry is the stock's weight: Σ_s weight_s · hidden_s (a product and a sum:
        # on the CPU a batched matmul of [1, S] @ [S, H] runs as one small matmul per sample)
        held = (stocks[..., :1] * hidden).sum(-2)
        return self.critic_head(torch.cat([hidden.mean(-2), held, cash], -1)).squeeze(-1)

    def mean(self, obs: torch.Tensor) -> torch.Tensor:
        if self.network == "mlp":
            return self.actor_mean(obs)
        return self.actor_head(self.actor_encoder(obs)).squeeze(-1)

    def mean_and_value(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``mean(obs), value(obs)``; the stockwise encoders share one computation of their input."""
        if self.network == "mlp":
            return self.actor_mean(obs), self.critic(obs).squeeze(-1)
        inputs = self.actor_encoder.inputs(obs)
        mean = self.actor_head(self.actor_encoder(obs, inputs)).squeeze(-1)
        return mean, self._stockwise_value(obs, self.critic_encoder(obs, inputs))

    def distribution(self, obs: torch.Tensor, mean: torch.Tensor | None = None) -> Normal:
        mean = self.mean(obs) if mean is None else mean
        # No argument validation: non-finite weights must surface as a non-finite loss (which
        # `update` reports), not as a ValueError from the distribution halfway through an update.
        return Normal(mean, self.log_std.expand_as(mean).exp(), validate_args=False)

    def env_action(self, action: torch.Tensor) -> torch.Tensor:
        """What the env receives for a sampled ``action``: softmax target weights (``portfolio``)
        or the action itself (the env clips it to [-1, 1])."""
        if not self.portfolio:
            return action
        scores = torch.cat([torch.zeros_like(action[..., :1]), action], -1)  # cash's score is 0
        return torch.softmax(scores, -1)[..., 1:]

    def frictionless_reward(self, scores: torch.Tensor, reward_per_weight: torch.Tensor) -> torch.Tensor:
        """The one-day reward of the portfolio the ``scores`` trade, without fees, lots or limits:
        ``Σ_i w_i × reward_per_weight_i`` (the env's ``reward_per_weight``)."""
        return (self.env_action(scores) * reward_per_weight).sum(-1)

    def forward(self, obs: torch.Tensor, action: torch.Tensor | None = None,
                reward_per_weight: torch.Tensor | None = None):
        """Sample (or score) an action: returns ``action, log_prob, entropy, value, expected``.

        ``expected`` (with ``reward_per_weight`` and the portfolio head, else None) is the
        frictionless reward of one fresh draw of the policy, ``μ_θ(s) + σ_θ ε``: differentiable in
        θ through the mean and the std (the pathwise gradient of `PPOConfig.pathwise`)."""
        mean, value = self.mean_and_value(obs)
        dist = self.distribution(obs, mean)
        if action is None:
            action = dist.sample()
        expected = None
        if reward_per_weight is not None and self.portfolio:
            expected = self.frictionless_reward(dist.rsample(), reward_per_weight)
        return action, dist.log_prob(action).sum(-1), dist.entropy().sum(-1), value, expected

    @torch.no_grad()
    def sampling_luck(self, dist: Normal, action: torch.Tensor, reward_per_weight: torch.Tensor,
                      draws: int) -> tuple[torch.Tensor, torch.Tensor]:
        """``luck, average``: the frictionless reward of the sampled ``action`` minus ``average``, the
        policy's average one (the mean over ``draws`` fresh draws). The luck's expectation over the
        policy is 0 whatever the day brings. Both 0 without the portfolio head."""
        if not self.portfolio:
            zero = torch.zeros(action.shape[:-1], device=action.device, dtype=action.dtype)
            return zero, zero
        average = self.frictionless_reward(dist.sample((draws,)), reward_per_weight).mean(0)
        return self.frictionless_reward(action, reward_per_weight) - average, average

    @torch.no_grad()
    def act(self, obs: torch.Tensor, deterministic: bool = True) -> torch.Tensor:
        """The env action to trade with: from the mean for evaluation, from a sample otherwise."""
        dist = self.distribution(obs)
        return self.env_action(dist.mean if deterministic else dist.sample())


def make_optimizer(agent: nn.Module, config: PPOConfig) -> torch.optim.Optimizer:
    """Adam for ``agent`` with ``config.learning_rate`` (`fast.adam`: torch's fused kernel where there is one)."""
    return fast.adam(agent.parameters(), lr=config.learning_rate, eps=1e-5)


@torch.no_grad()
def collect_rollout(env, agent: ActorCritic, rollout: Rollout, obs: torch.Tensor):
    """Step the batched env ``horizon_len`` times with the current policy, filling ``rollout``.

    Time limits: where an episode was *truncated*, the return continues beyond the cut, so the
    next value is the critic's estimate of the final observation; where it *terminated*, it is 0.
    Where the episode goes on, the next value is the next step's own value (the env's final
    observation is the next observation there), so the critic reads only finished episodes' final
    observations. Returns the observation to continue from. Episode statistics stay on the device
    (no sync).
    """
    finished = torch.zeros((), device=obs.device)
    final_wealth = torch.zeros((), device=obs.device)
    for t in range(rollout.obs.shape[0]):
        mean, value = agent.mean_and_value(obs)
        dist = agent.distribution(obs, mean)
        action = dist.sample()
        next_obs, reward, terminated, truncated, info = env.step(agent.env_action(action))
        done = terminated | truncated
        rollout.obs[t] = obs
        rollout.actions[t] = action
        rollout.log_probs[t] = dist.log_prob(action).sum(-1)
        rollout.values[t] = value
        rollout.rewards[t] = reward
        rollout.dones[t] = done
        # the parts of the reward the day's prices set (`PPOConfig.market_baseline`, `pathwise`)
        rollout.market_rewards[t] = info["market_reward"]
        rollout.reward_per_weight[t] = info["reward_per_weight"]
        luck, average = agent.sampling_luck(dist, action, info["reward_per_weight"], LUCK_DRAWS)
        rollout.sampling_luck[t] = luck
        rollout.average_rewards[t] = info["overnight_reward"] + average
        # V(final obs) where the episode was truncated, 0 where it terminated: value(final_obs) * ~terminated
        rollout.next_values[t] = fast.bootstrap_values(agent, info["final_obs"], terminated, truncated)
        finished += done.sum()
        final_wealth += (info["wealth"] * done).sum()
        obs = next_obs
    # where the episode goes on, V(s_{t+1}) is step t+1's value, and the next rollout's first one
    dones = rollout.dones.bool()
    following = torch.cat([rollout.values[1:], agent.value(obs).unsqueeze(0)])
    rollout.next_values.copy_(torch.where(dones, rollout.next_values, following))
    rollout.stats = {"episodes": finished, "final_wealth_sum": final_wealth}
    return obs


def compute_gae(rewards, values, next_values, dones, gamma: float, gae_lambda: float):
    """Generalised advantage estimation as a reverse scan over time ([T, N] tensors).

    δ_t = r_t + γ V(s_{t+1}) − V(s_t), with V(s_{t+1}) from ``next_values`` (which already holds
    the bootstrap of a truncated episode and 0 for a terminated one);
    A_t = δ_t + γ λ (1 − done_t) A_{t+1}. Returns ``advantages, returns`` (returns = A + V).
    """
    deltas = rewards + gamma * next_values - values
    advantages = torch.zeros_like(rewards)
    running = torch.zeros_like(rewards[0])
    for t in reversed(range(rewards.shape[0])):
        running = deltas[t] + gamma * gae_lambda * (1.0 - dones[t]) * running
        advantages[t] = running
    return advantages, advantages + values


def ppo_policy_loss(new_log_prob, old_log_prob, advantages, clip_range: float):
    """PPO's clipped surrogate: −E[min(ρ A, clip(ρ, 1−ε, 1+ε) A)], ρ = π_new / π_old."""
    ratio = (new_log_prob - old_log_prob).exp()
    unclipped = ratio * advantages
    clipped = ratio.clamp(1.0 - clip_range, 1.0 + clip_range) * advantages
    return -torch.min(unclipped, clipped).mean()


def a2c_policy_loss(new_log_prob, old_log_prob, advantages):
    """A2C's loss, −E[log π(a|s) A]: the policy gradient with no ratio and no clipping."""
    return -(new_log_prob * advantages).mean()


def policy_loss_for(config: PPOConfig) -> Callable:
    """The policy loss of ``config.algo`` as ``loss(new_log_prob, old_log_prob, advantages)``."""
    if config.algo == "a2c":
        return a2c_policy_loss
    return lambda new, old, adv: ppo_policy_loss(new, old, adv, config.clip_range)


def learning_rewards(rollout: Rollout, config: PPOConfig) -> torch.Tensor:
    """The rewards GAE and the critic see: the env's, less what the day's prices set whatever the
    action (`PPOConfig.market_baseline`) and less the sampled portfolio's luck, whose gradient
    the update takes pathwise instead (`PPOConfig.pathwise`)."""
    rewards = rollout.rewards
    if config.market_baseline:
        rewards = rewards - rollout.market_rewards
    if config.pathwise:
        rewards = rewards - rollout.sampling_luck
    return rewards


def advantages_and_returns(rollout: Rollout, config: PPOConfig) -> tuple[torch.Tensor, torch.Tensor]:
    """GAE on `learning_rewards`; then, with ``pathwise``, each step's advantage less what the
    policy's average action earned that day (``average_rewards``, net of the market's reward where
    that was taken out). It is known once the day's prices are and is the same whatever action was
    sampled: a baseline for that step's action. (Not for the later steps' actions: the account an
    action leaves behind changes it, so it stays in their rewards.)"""
    advantages, returns = compute_gae(learning_rewards(rollout, config), rollout.values, rollout.next_values,
                                      rollout.dones, config.gamma, config.gae_lambda)
    if config.pathwise:
        own_day = rollout.average_rewards - (rollout.market_rewards if config.market_baseline else 0.0)
        advantages = advantages - own_day
    return advantages, returns


def update(agent: ActorCritic, optimizer: torch.optim.Optimizer, rollout: Rollout, config: PPOConfig,
           policy_loss: Callable | None = None, generator: torch.Generator | None = None,
           all_reduce_mean: Callable[[torch.Tensor], torch.Tensor] = lambda x: x) -> dict[str, float]:
    """``repeat_times`` epochs of minibatch gradient steps on one rollout.

    ``policy_loss(new_log_prob, old_log_prob, advantages)`` defaults to the loss of
    ``config.algo`` (`policy_loss_for`). ``all_reduce_mean`` averages a scalar across
    data-parallel ranks (identity in one process), so an early stop on ``target_kl`` is decided
    on the global value by every rank alike. With ``pathwise`` the loss also holds minus the
    frictionless reward of a fresh draw of the current policy, on the advantages' scale: its
    gradient, taken through the draw, adds back what `learning_rewards` took out as luck (chapter 3.4).
    """
    policy_loss = policy_loss_for(config) if policy_loss is None else policy_loss
    advantages, returns = advantages_and_returns(rollout, config)
    flat = lambda x: x.reshape(-1, *x.shape[2:])  # noqa: E731
    obs, actions, old_log_probs = flat(rollout.obs), flat(rollout.actions), flat(rollout.log_probs)
    reward_per_weight = flat(rollout.reward_per_weight) if config.pathwise else None
    advantages, returns = flat(advantages), flat(returns)
    size = obs.shape[0]
    batch = min(config.batch_size, size)
    names = ("loss/policy", "loss/value", "loss/entropy", "loss/approx_kl", "loss/clip_fraction", "loss/pathwise")
    totals = torch.zeros(len(names), device=obs.device)  # summed on the device: one sync at the end
    steps = 0
    for _ in range(config.repeat_times):
        order = torch.randperm(size, generator=generator, device="cpu").to(obs.device)
        approx_kl = torch.zeros((), device=obs.device)
        for start in range(0, size, batch):
            index = order[start:start + batch]
            _, new_log_prob, entropy, value, expected = agent(
                obs[index], actions[index], None if reward_per_weight is None else reward_per_weight[index])
            adv, scale = advantages[index], 1.0
            if config.normalize_advantages and adv.numel() > 1:
                scale = adv.std() + 1e-8
                adv = (adv - adv.mean()) / scale
            pg_loss = policy_loss(new_log_prob, old_log_probs[index], adv)
            # the pathwise part of the gradient, on the advantages' scale (0 without it)
            pathwise_loss = -expected.mean() / scale if expected is not None else torch.zeros((), device=obs.device)
            value_loss = 0.5 * (value - returns[index]).pow(2).mean()
            entropy_mean = entropy.mean()
            loss = pg_loss + pathwise_loss - config.entropy_coef * entropy_mean + config.value_coef * value_loss
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            nn.utils.clip_grad_norm_(agent.parameters(), config.max_grad_norm)
            optimizer.step()
            with torch.no_grad():
                log_ratio = new_log_prob - old_log_probs[index]
                approx_kl = ((log_ratio.exp() - 1) - log_ratio).mean()
                clip_fraction = ((log_ratio.exp() - 1.0).abs() > config.clip_range).float().mean()
            totals += torch.stack([pg_loss.detach(), value_loss.detach(), entropy_mean.detach(), approx_kl,
                                   clip_fraction, pathwise_loss.detach()])
            steps += 1
        if config.target_kl is not None and float(all_reduce_mean(approx_kl.detach())) > config.target_kl:
            break
    means = (totals / max(steps, 1)).tolist()
    finite_weights = bool(torch.stack([p.detach().isfinite().all() for p in agent.parameters()]).all())
    if not all(math.isfinite(v) for v in means) or not finite_weights:
        raise FloatingPointError(f"non-finite {'loss' if finite_weights else 'weights'} in the update "
                                 f"({dict(zip(names, means))}): lower the learning rate or check the data "
                                 "for extreme values")
    return dict(zip(names, means)) | {"loss/minibatches": steps}


def learn(env, agent: ActorCritic, config: PPOConfig, iterations: int | None = None,
          optimizer: torch.optim.Optimizer | None = None,
          on_iteration: Callable[[int, Rollout, dict], None] | None = None, *,
          context: LearnerContext | None = None, start_iteration: int = 0,
          minibatch_order: torch.Generator | None = None) -> ActorCritic:
    """Train ``agent`` with ``config.algo``: rollout → GAE → update, ``iterations`` times.

    ``env``: a batched env (e.g. ``VecStockTradingEnv(market, config.num_envs)``) or any
    `Collector` (e.g. a `finrl_tutorial.training.WorkerPool`). ``iterations`` defaults to the
    config's budget (``total_steps`` over all ranks). ``on_iteration(iteration, rollout, losses)``
    runs after each update (`finrl_tutorial.training.train` logs, validates and checkpoints
    there). ``context``: where the update runs (default: this process, `SingleProcessContext`).
    ``start_iteration`` and ``minibatch_order`` continue a run: the learning-rate schedule and
    the minibatch order carry on from there. Returns the agent, trained in place.
    """
    collector = env if isinstance(env, Collector) else EnvCollector(env, collect_rollout)
    context = SingleProcessContext(config.device) if context is None else context
    iterations = config.iterations_for(context.world_size) if iterations is None else iterations
    optimizer = make_optimizer(agent, config) if optimizer is None else optimizer
    minibatch_order = torch.Generator().manual_seed(config.seed) if minibatch_order is None else minibatch_order
    learner = context.wrap(agent)  # what the gradients flow through (DDP averages them over ranks)
    policy_loss = policy_loss_for(config)
    for iteration in range(start_iteration, iterations):
        if config.anneal_lr:  # linearly to 0 at the end of the run
            optimizer.param_groups[0]["lr"] = config.learning_rate * (1.0 - iteration / iterations)
        agent.eval()
        rollout = collector.collect(agent, config.horizon_len)  # 1. experience with the current policy
        agent.train()
        with collector.update_threads():  # 2. GAE, then repeat_times epochs of minibatch steps
            losses = update(learner, optimizer, rollout, config, policy_loss, minibatch_order,
                            context.all_reduce_mean)
        if on_iteration is not None:
            on_iteration(iteration, rollout, losses)
    return agent
