"""PPO / A2C: GAE by hand, the clipped objective, the entropy bonus, the update's bookkeeping,
and a seeded run that must learn an obvious edge."""
import math
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
import torch

from finrl_tutorial.agents import (A2CConfig, ActorCritic, Collector, EnvCollector, LearnerContext, PPOConfig, Rollout,
                                   SingleProcessContext, a2c_policy_loss, collect_rollout, compute_gae, learn,
                                   make_config, make_optimizer, policy_loss_for, ppo_policy_loss, update)
from finrl_tutorial.backtest.runner import agent_policy, backtest
from finrl_tutorial.data import prepare_market
from finrl_tutorial.envs import EnvConfig, VecStockTradingEnv
from finrl_tutorial.training import DataParallelContext, DistributedContext, WorkerPool, initial_agent, train

torch.set_num_threads(1)
# stockstats (a dependency) calls set_index(inplace=True), deprecated in pandas 3.1: not our concern here
pytestmark = pytest.mark.filterwarnings("ignore:The inplace keyword in DataFrame.set_index")


# --- GAE ------------------------------------------------------------------------------------------

def test_gae_matches_hand_computation_with_truncation_and_termination():
    """T=4, N=2, γ=0.9, λ=0.8 (γλ=0.72).

    env 0 is *truncated* after t=1: next_value there is V(final obs)=10 (the bootstrap), and the
    advantage chain is cut (A_1 does not see t=2). t=3 is the rollout's end: bootstrap V=2.5.
    env 1 *terminates* after t=2: next_value 0 and the chain is cut.
    """
    gamma, lam = 0.9, 0.8
    rewards = torch.tensor([[1.0, 0.0], [2.0, 1.0], [3.0, 0.0], [4.0, 1.0]])
    values = torch.tensor([[0.5, 1.0], [1.0, 1.0], [1.5, 1.0], [2.0, 1.0]])
    next_values = torch.tensor([[1.0, 1.0],    # V(s_1)
                                [10.0, 1.0],   # env 0: V(final obs) of the truncated episode
                                [2.0, 0.0],    # env 1: terminated -> 0
                                [2.5, 0.5]])   # bootstrap at the end of the rollout
    dones = torch.tensor([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.0, 0.0]])

    # env 0: δ = r + γ V' − V
    d0 = [1 + 0.9 * 1.0 - 0.5, 2 + 0.9 * 10.0 - 1.0, 3 + 0.9 * 2.0 - 1.5, 4 + 0.9 * 2.5 - 2.0]
    assert d0 == pytest.approx([1.4, 10.0, 3.3, 4.25])
    a0 = [None] * 4
    a0[3] = 4.25
    a0[2] = 3.3 + 0.72 * 4.25          # 6.36
    a0[1] = 10.0                       # done after t=1: nothing from t=2 flows back
    a0[0] = 1.4 + 0.72 * 10.0          # 8.6
    # env 1
    a1 = [None] * 4
    a1[3] = 1 + 0.9 * 0.5 - 1          # 0.45
    a1[2] = 0 + 0.0 - 1                # -1.0, terminated: no bootstrap, chain cut
    a1[1] = (1 + 0.9 * 1 - 1) + 0.72 * -1.0   # 0.9 - 0.72 = 0.18
    a1[0] = (0 + 0.9 * 1 - 1) + 0.72 * 0.18   # -0.1 + 0.1296 = 0.0296
    expected = torch.tensor([[8.6, 0.0296], [10.0, 0.18], [6.36, -1.0], [4.25, 0.45]])
    torch.testing.assert_close(torch.tensor(list(zip(a0, a1))), expected)  # the arithmetic above, tabulated

    advantages, returns = compute_gae(rewards, values, next_values, dones, gamma, lam)
    torch.testing.assert_close(advantages, expected, rtol=0, atol=1e-6)
    torch.testing.assert_close(returns, expected + values, rtol=0, atol=1e-6)


def test_gae_lambda_zero_is_one_step_td_and_lambda_one_is_monte_carlo():
    rewards = torch.tensor([[1.0], [1.0], [1.0]])
    values = torch.zeros(3, 1)
    next_values = torch.zeros(3, 1)
    dones = torch.tensor([[0.0], [0.0], [1.0]])  # terminated at the end
    td, _ = compute_gae(rewards, values, next_values, dones, 0.5, 0.0)
    torch.testing.assert_close(td, torch.ones(3, 1))
    mc, _ = compute_gae(rewards, values, next_values, dones, 0.5, 1.0)
    torch.testing.assert_close(mc, torch.tensor([[1.75], [1.5], [1.0]]))  # 1 + .5 + .25, 1 + .5, 1


class _ScriptedEnv:
    """Two envs, obs_dim 1: env 0 is truncated at step 1, env 1 terminates at step 2."""

    num_envs, observation_dim, action_dim = 2, 1, 1

    def __init__(self):
        self.t = 0

    def step(self, action):
        self.t += 1
        terminated = torch.tensor([False, self.t == 2])
        truncated = torch.tensor([self.t == 1, False])
        final_obs = torch.full((2, 1), float(self.t))
        final_obs[0] = 100.0 + self.t  # a distinct final observation for env 0
        next_obs = torch.where((terminated | truncated).unsqueeze(-1), torch.zeros(2, 1), final_obs)
        info = {"final_obs": final_obs, "wealth": torch.ones(2), "market_reward": torch.zeros(2),
                "overnight_reward": torch.zeros(2), "reward_per_weight": torch.zeros(2, 1)}
        return next_obs, torch.ones(2), terminated, truncated, info


def test_collect_rollout_bootstraps_truncations_and_zeroes_terminations():
    torch.manual_seed(0)
    agent = ActorCritic(1, 1, (8,), init_log_std=-0.5, network="mlp", portfolio=False)
    rollout = Rollout.empty(3, 2, 1, 1, "cpu")
    env = _ScriptedEnv()
    collect_rollout(env, agent, rollout, torch.zeros(2, 1))
    def v(x):
        with torch.no_grad():
            return float(agent.value(torch.tensor([[x]])))
    # step 0 (t=1): env 0 truncated -> V(final obs 101); env 1 ongoing -> V(next obs 1)
    assert float(rollout.next_values[0, 0]) == pytest.approx(v(101.0), abs=1e-6)
    assert float(rollout.next_values[0, 1]) == pytest.approx(v(1.0), abs=1e-6)
    # step 1 (t=2): env 1 terminated -> 0
    assert float(rollout.next_values[1, 1]) == 0.0
    assert rollout.dones[:, 0].tolist() == [1.0, 0.0, 0.0]
    assert rollout.dones[:, 1].tolist() == [0.0, 1.0, 0.0]
    assert float(rollout.stats["episodes"]) == 2


def test_collect_rollout_takes_ongoing_next_values_from_the_next_step_and_bootstraps_the_last():
    """Ongoing episodes' next value is the following step's own value; after the last step it is
    the critic's value of the observation the rollout returns."""
    torch.manual_seed(1)
    agent = ActorCritic(1, 1, (8,), init_log_std=-0.5, network="mlp", portfolio=False)
    rollout = Rollout.empty(3, 2, 1, 1, "cpu")
    last_obs = collect_rollout(_ScriptedEnv(), agent, rollout, torch.zeros(2, 1))
    with torch.no_grad():
        torch.testing.assert_close(rollout.next_values[2], agent.value(last_obs), rtol=0, atol=1e-6)
        assert last_obs[:, 0].tolist() == [103.0, 3.0]  # both episodes ongoing after the last step
    # env 1 is ongoing after step 0: its next value is step 1's value of the same observation
    assert float(rollout.next_values[0, 1]) == pytest.approx(float(rollout.values[1, 1]), abs=1e-6)


def test_in_place_tanh_is_tanh_forward_and_backward_and_leaves_views_alone():
    from finrl_tutorial.agents.fast import InPlaceTanh
    x = torch.cat([torch.linspace(-30, 30, 2001), torch.tensor([0.0, -1e-8, 1e-8, 88.0, -88.0])])
    expected = torch.tanh(x)
    leaf = x.clone().requires_grad_()
    got = InPlaceTanh()(leaf * 1.0)  # the input of a layer: a fresh tensor
    torch.testing.assert_close(got, expected, rtol=0, atol=4e-7)
    got.backward(torch.ones_like(got))
    torch.testing.assert_close(leaf.grad, 1 - expected ** 2, rtol=0, atol=1e-6)
    base = x.reshape(2, -1).clone()
    viewed = InPlaceTanh()(base[0])
    torch.testing.assert_close(viewed, expected[:base.shape[1]], rtol=0, atol=4e-7)
    torch.testing.assert_close(base, x.reshape(2, -1))  # a view's base is not written over


def test_fast_code_computes_what_its_plain_code_computes():
    """agents/fast.py: each speed-only function against the plain code its docstring names."""
    from finrl_tutorial.agents import fast, ppo

    assert ppo.InPlaceTanh is fast.InPlaceTanh and ppo.keep_freed_memory is fast.keep_freed_memory
    torch.manual_seed(0)
    agent = ActorCritic(1 + 4 * 3, 4, (16, 16), init_log_std=0.0, network="stockwise", portfolio=True)
    final_obs = torch.randn(6, 13)
    terminated = torch.tensor([False, True, False, False, False, False])
    truncated = torch.tensor([True, False, False, True, False, False])
    with torch.no_grad():
        dense = agent.value(final_obs) * (~terminated)
        sparse = fast.bootstrap_values(agent, final_obs, terminated, truncated)
    ended = terminated | truncated
    torch.testing.assert_close(sparse[ended], dense[ended], rtol=0, atol=1e-6)
    assert (sparse[~ended] == 0).all()
    assert (fast.bootstrap_values(agent, final_obs, terminated, torch.zeros(6, dtype=torch.bool)) == 0).all()
    # fast.adam: one step of (fused) Adam is plain Adam's to float rounding
    nets = [ActorCritic(1 + 4 * 3, 4, (16, 16), 0.0, "mlp", True) for _ in range(2)]
    nets[1].load_state_dict(nets[0].state_dict())
    for net, optimizer in zip(nets, (fast.adam(nets[0].parameters(), lr=1e-3, eps=1e-5),
                                     torch.optim.Adam(nets[1].parameters(), lr=1e-3, eps=1e-5))):
        _, log_prob, _, value, _ = net(final_obs, torch.ones(6, 4))  # the same actions for both
        (value.square().mean() - log_prob.mean()).backward()
        optimizer.step()
    for a, b in zip(nets[0].parameters(), nets[1].parameters()):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-6)
    assert fast.keep_freed_memory("meta") == fast.keep_freed_memory("meta")  # no device but the CPU's is touched
    # the rollout (bootstrap_values) and the optimizer (adam) have tried it on the CPU, once per process
    assert fast._freed_memory_kept is not None and fast.keep_freed_memory() == fast._freed_memory_kept


def test_mean_and_value_equal_mean_and_value_apart():
    torch.manual_seed(0)
    for network in ("stockwise", "mlp"):
        agent = ActorCritic(1 + 4 * 3, 4, (16, 16), init_log_std=-0.5, network=network, portfolio=True)
        obs = torch.randn(5, 1 + 4 * 3)
        with torch.no_grad():
            mean, value = agent.mean_and_value(obs)
            assert torch.equal(mean, agent.mean(obs)) and torch.equal(value, agent.value(obs))


# --- the clipped objective ------------------------------------------------------------------------

def test_clipped_objective_has_no_gradient_outside_the_clip_range():
    eps = 0.2
    #        ratio: 1.5 (A>0, clipped)  0.5 (A<0, clipped)  1.1 (A>0, inside)  0.9 (A<0, inside)
    #               1.5 (A<0: the unclipped, worse term is chosen -> gradient)  0.5 (A>0, same)
    ratios = torch.tensor([1.5, 0.5, 1.1, 0.9, 1.5, 0.5], dtype=torch.float64)
    advantages = torch.tensor([1.0, -1.0, 1.0, -1.0, -1.0, 1.0], dtype=torch.float64)
    old = torch.zeros(6, dtype=torch.float64)
    new = ratios.log().requires_grad_()
    loss = ppo_policy_loss(new, old, advantages, eps)
    loss.backward()
    grad = new.grad
    assert grad[0] == 0 and grad[1] == 0
    for i in (2, 3, 4, 5):  # d/dlogp of -ρA/n = -ρA/n
        assert float(grad[i]) == pytest.approx(-float(ratios[i] * advantages[i]) / 6)
    # and the value of the loss: -mean(min(ρA, clip(ρ)A))
    expected = -np.mean([1.2, -0.8 * 1, 1.1, -0.9, -1.5, 0.5])
    assert float(loss.detach()) == pytest.approx(expected)


def test_a2c_loss_is_the_plain_policy_gradient():
    new = torch.tensor([-1.0, -2.0], requires_grad=True)
    adv = torch.tensor([2.0, -1.0])
    loss = a2c_policy_loss(new, torch.zeros(2), adv)
    loss.backward()
    assert float(loss.detach()) == pytest.approx(-((-1.0 * 2.0) + (-2.0 * -1.0)) / 2)
    torch.testing.assert_close(new.grad, -adv / 2)
    assert policy_loss_for(make_config("a2c")) is a2c_policy_loss


# --- update bookkeeping on synthetic rollouts -----------------------------------------------------

def _synthetic_rollout(agent, horizon, num_envs, obs_dim, action_dim, seed=0, zero=False):
    generator = torch.Generator().manual_seed(seed)
    rollout = Rollout.empty(horizon, num_envs, obs_dim, action_dim, "cpu")
    rollout.obs.copy_(torch.randn(horizon, num_envs, obs_dim, generator=generator))
    with torch.no_grad():
        action, log_prob, _, value, _ = agent(rollout.obs)
    rollout.actions.copy_(action)
    rollout.log_probs.copy_(log_prob)
    if not zero:
        rollout.values.copy_(value)
        rollout.rewards.copy_(torch.randn(horizon, num_envs, generator=generator))
        rollout.next_values.copy_(torch.randn(horizon, num_envs, generator=generator))
    return rollout


def _fresh(seed=0, obs_dim=4, action_dim=2, **config):
    torch.manual_seed(seed)
    agent = ActorCritic(obs_dim, action_dim, (16, 16), init_log_std=-0.5, network="mlp", portfolio=False)
    cfg = PPOConfig(**config)
    return agent, torch.optim.Adam(agent.parameters(), lr=cfg.learning_rate, eps=1e-5), cfg


@pytest.mark.parametrize("horizon,num_envs,batch,repeat", [(8, 5, 16, 3), (4, 4, 16, 2), (4, 4, 1000, 3),
                                                            (3, 7, 5, 1)])
def test_update_makes_repeat_times_passes_of_ceil_rollout_over_batch_minibatches(horizon, num_envs, batch, repeat):
    agent, optimizer, cfg = _fresh(num_envs=num_envs, horizon_len=horizon, batch_size=batch, repeat_times=repeat)
    rollout = _synthetic_rollout(agent, horizon, num_envs, 4, 2)
    losses = update(agent, optimizer, rollout, cfg, generator=torch.Generator().manual_seed(0))
    size = horizon * num_envs
    expected = repeat * math.ceil(size / min(batch, size))
    assert losses["loss/minibatches"] == expected
    assert cfg.num_minibatches * repeat == expected
    assert set(losses) == {"loss/policy", "loss/value", "loss/entropy", "loss/approx_kl", "loss/clip_fraction",
                           "loss/pathwise", "loss/minibatches"}
    assert all(math.isfinite(v) for v in losses.values())


def test_target_kl_stops_the_epochs_early():
    def run(target_kl):
        agent, optimizer, cfg = _fresh(num_envs=4, horizon_len=8, batch_size=8, repeat_times=4, target_kl=target_kl)
        rollout = _synthetic_rollout(agent, 8, 4, 4, 2)
        rollout.log_probs += 0.5  # old policy far from the current one: approx KL ≈ e^-0.5 - 1 + 0.5 ≈ 0.107
        return update(agent, optimizer, rollout, cfg, generator=torch.Generator().manual_seed(0))

    full = run(None)
    early = run(0.01)
    assert full["loss/minibatches"] == 4 * 4
    assert early["loss/minibatches"] == 4  # one epoch, then the KL check stops it
    assert early["loss/approx_kl"] > 0.01
    assert run(10.0)["loss/minibatches"] == 16  # a loose target never stops it


@pytest.mark.parametrize("entropy_coef", [0.0, 0.05])
def test_entropy_bonus_raises_the_policy_entropy(entropy_coef):
    """Zero advantages (and value_coef 0): only the entropy bonus can move the policy."""
    agent, optimizer, cfg = _fresh(num_envs=4, horizon_len=8, batch_size=16, repeat_times=2,
                                   entropy_coef=entropy_coef, value_coef=0.0, learning_rate=1e-2)
    rollout = _synthetic_rollout(agent, 8, 4, 4, 2, zero=True)  # rewards = values = next_values = 0
    before = {k: v.clone() for k, v in agent.state_dict().items()}
    with torch.no_grad():
        entropy_before = float(agent(rollout.obs, rollout.actions)[2].mean())
    losses = update(agent, optimizer, rollout, cfg, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        entropy_after = float(agent(rollout.obs, rollout.actions)[2].mean())
    assert losses["loss/policy"] == 0.0
    if entropy_coef > 0:
        assert (agent.log_std > before["log_std"]).all()
        assert entropy_after > entropy_before + 1e-3
    else:
        torch.testing.assert_close(agent.log_std.detach(), before["log_std"], rtol=0, atol=0)
        assert entropy_after == pytest.approx(entropy_before, abs=1e-7)
    for name, value in agent.state_dict().items():  # the mean never moves without advantages
        if name.startswith("actor_mean"):
            torch.testing.assert_close(value, before[name], rtol=0, atol=0)


def test_stored_log_probs_equal_recomputed_ones_before_the_first_update(sse15):
    torch.manual_seed(0)
    env = VecStockTradingEnv(sse15.train, 6, EnvConfig(), seed=1)
    agent = ActorCritic(env.observation_dim, env.action_dim, (128, 128), init_log_std=-0.5, network="mlp", portfolio=False)
    rollout = Rollout.empty(20, 6, env.observation_dim, env.action_dim, "cpu")
    obs, _ = env.reset()
    collect_rollout(env, agent, rollout, obs)
    flat = lambda x: x.reshape(-1, *x.shape[2:])  # noqa: E731
    with torch.no_grad():
        _, log_prob, _, value, _ = agent(flat(rollout.obs), flat(rollout.actions))
    torch.testing.assert_close(log_prob, flat(rollout.log_probs), rtol=0, atol=1e-5)
    torch.testing.assert_close(value, flat(rollout.values), rtol=0, atol=1e-6)
    # ratio 1 everywhere: the first minibatch of an update starts with zero KL and nothing clipped
    ratio = (log_prob - flat(rollout.log_probs)).exp()
    assert float((ratio - 1).abs().max()) < 1e-4


def test_update_defaults_to_the_loss_of_the_configs_algo():
    """One loss selector: update() without a loss uses `policy_loss_for(config)`, A2C's for A2C."""
    def run(config, loss):
        torch.manual_seed(0)
        agent = ActorCritic(4, 2, (16, 16), init_log_std=-0.5, network="mlp", portfolio=False)
        rollout = _synthetic_rollout(agent, 8, 4, 4, 2)
        rollout.log_probs -= 0.5  # ratio e^0.5, outside PPO's clip: there the two losses' gradients differ
        update(agent, make_optimizer(agent, config), rollout, config, loss, torch.Generator().manual_seed(0))
        return agent.state_dict()

    a2c, ppo = make_config("a2c", num_envs=4, horizon_len=8), make_config("ppo", num_envs=4, horizon_len=8)
    for config in (a2c, ppo):
        default, chosen = run(config, None), run(config, policy_loss_for(config))
        assert all(torch.equal(default[k], chosen[k]) for k in default)
    plain, clipped = run(a2c, a2c_policy_loss), run(a2c, policy_loss_for(ppo))
    assert not all(torch.equal(plain[k], clipped[k]) for k in plain)  # the two losses do differ


# --- the loop: learn() --------------------------------------------------------------------------------

def test_learn_is_the_loop_train_runs(sse15):
    """The bare loop on a batched env, seeded as train() seeds it, ends with train()'s weights and
    calls ``on_iteration`` with train()'s losses, iteration by iteration."""
    config = make_config("ppo", num_envs=8, horizon_len=16, batch_size=64, repeat_times=2, total_steps=512, seed=4)
    trained = train(sse15, config, EnvConfig(), eval_every=0, progress=False)

    agent = initial_agent(sse15.train, config, EnvConfig())  # seeded with config.seed
    torch.manual_seed(config.seed)  # the rollout's action noise
    env = VecStockTradingEnv(sse15.train, config.num_envs, EnvConfig(), seed=config.seed, check_actions=False)
    seen = []
    learn(env, agent, config, on_iteration=lambda iteration, rollout, losses: seen.append((iteration, losses)))
    assert [iteration for iteration, _ in seen] == [0, 1, 2, 3]  # config.iterations
    for (_, losses), (_, row) in zip(seen, trained.log.iterrows()):
        assert losses == pytest.approx({k: row[k] for k in losses}, rel=0, abs=1e-7)
    assert all(torch.equal(v, trained.agent.state_dict()[k]) for k, v in agent.state_dict().items())


def test_the_iteration_count_counts_all_ranks():
    config = make_config("ppo", num_envs=8, horizon_len=16, total_steps=1000)  # 128 samples per rank
    assert config.iterations == config.iterations_for(1) == 7
    assert config.iterations_for(2) == 3 and config.iterations_for(16) == 1


def test_both_collectors_and_all_learner_contexts_satisfy_their_protocols(sse15):
    config = make_config("ppo", num_envs=4, horizon_len=8)
    env = VecStockTradingEnv(sse15.train, 4, EnvConfig(), seed=0)
    assert not isinstance(env, Collector)  # an env is wrapped by learn(), not used as it is
    in_process = EnvCollector(env, collect_rollout)
    assert isinstance(in_process, Collector)
    torch.manual_seed(0)
    agent = ActorCritic.from_config(env.observation_dim, env.action_dim, config, env.config.action_mode)
    with WorkerPool(sse15.train, config, EnvConfig(), num_workers=2, seed=0) as pool:
        assert isinstance(pool, Collector)
        for collector in (in_process, pool):
            collector.reset(seed=3)
            rollout = collector.collect(agent, 8)
            assert rollout.rewards.shape == (8, 4) and rollout.obs.shape == (8, 4, env.observation_dim)
            state, noise = collector.state_dict(), torch.get_rng_state()  # (in-process actions use this RNG)
            after = collector.collect(agent, 8).rewards.clone()
            collector.load_state_dict(state)  # back to the saved accounts and random states: the same steps again
            torch.set_rng_state(noise)
            torch.testing.assert_close(collector.collect(agent, 8).rewards, after, rtol=0, atol=0)
            assert not torch.equal(collector.collect(agent, 8).rewards, after)  # and on from there
            with collector.update_threads():
                pass
    assert pool.num_workers == 2 and in_process.num_workers == 0
    for context in (SingleProcessContext("cpu"), DataParallelContext("cpu"),
                    DistributedContext(0, 1, 0, torch.device("cpu"))):
        assert isinstance(context, LearnerContext) and context.is_main and context.rank == 0


# --- configs ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("overrides,match", [
    ({"num_envs": 0}, "num_envs"), ({"horizon_len": 0}, "horizon_len"), ({"batch_size": 0}, "batch_size"),
    ({"repeat_times": 0}, "repeat_times"), ({"total_steps": 0}, "total_steps"), ({"algo": "x"}, "algo"),
    ({"gamma": 0.0}, "gamma"), ({"gae_lambda": 1.5}, "gae_lambda"),
])
def test_ppo_config_rejects_bad_values(overrides, match):
    with pytest.raises(ValueError, match=match):
        PPOConfig(**overrides)


def test_make_config_defaults_and_unknown_algo():
    with pytest.raises(ValueError, match="unknown algo 'x'"):
        make_config("x")
    a2c = make_config("a2c", num_envs=16)
    assert isinstance(a2c, A2CConfig) and a2c.algo == "a2c" and a2c.repeat_times == 1 and a2c.num_envs == 16
    assert a2c.num_minibatches == 1
    ppo = make_config("ppo", num_envs=8, horizon_len=16, total_steps=1000)
    assert ppo.rollout_size == 128 and ppo.iterations == 7
    assert make_config("ppo", num_envs=8, horizon_len=16, total_steps=10).iterations == 1


def test_a2c_runs_with_many_envs_and_one_pass(sse15):
    config = make_config("a2c", num_envs=128, horizon_len=4, total_steps=128 * 4 * 3, seed=0)
    result = train(sse15, config, EnvConfig(), eval_every=0, progress=False)
    assert len(result.log) == 3
    assert (result.log["loss/minibatches"] == 1).all()
    assert result.log["loss/clip_fraction"].notna().all()
    assert result.env_steps == 128 * 4 * 3
    assert np.isfinite(result.log[["loss/policy", "loss/value", "loss/entropy"]].to_numpy()).all()


# --- learning an obvious edge -----------------------------------------------------------------------

def _edge_market(days=300):
    """Stock A (600000.SH) rises 1 %/day, half of it overnight (open = previous close × 1.005), so
    buying at the next open still profits; stock B (600036.SH) hovers at 10 yuan."""
    dates = pd.bdate_range("2021-01-04", periods=days)
    rng = np.random.default_rng(0)
    a_close = np.round(10.0 * 1.01 ** np.arange(days), 2)
    a_open = np.round(np.concatenate([[10.0], a_close[:-1] * 1.005]), 2)
    b_close = np.round(10.0 + rng.uniform(-0.05, 0.05, days), 2)
    b_open = np.round(np.concatenate([[10.0], b_close[:-1]]), 2)
    frames = [pd.DataFrame({"date": dates, "tic": tic, "open": o, "high": np.maximum(o, c) + 0.01,
                            "low": np.minimum(o, c) - 0.01, "close": c, "volume": 1e6})
              for tic, o, c in (("600000.SH", a_open, a_close), ("600036.SH", b_open, b_close))]
    day = lambda i: str(dates[i].date())  # noqa: E731
    splits = {"train": (day(0), day(199)), "valid": (day(200), day(249)), "test": (day(250), day(days - 1))}
    return prepare_market(pd.concat(frames, ignore_index=True), splits=splits)


@pytest.fixture(scope="module")
def edge_market():
    return _edge_market()


def _final_weights(agent, market, env_config):
    """Portfolio weights at the last close of a deterministic run over ``market``."""
    env = VecStockTradingEnv(market, 1, replace(env_config, random_start=False, episode_days=None), dtype=torch.float64)
    obs, _ = env.reset()
    policy = agent_policy(agent)
    for _ in range(market.num_days - 1):
        obs, _, _, _, info = env.step(policy(obs))
    final = info["final_obs"][0]  # the env auto-resets on the last day: read the final observation
    per_stock = market.num_features + 3
    return [float(final[1 + j * per_stock]) for j in range(market.num_stocks)]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_ppo_learns_to_hold_the_rising_stock(edge_market, seed):
    env_config = EnvConfig(episode_days=50)
    untrained = ActorCritic(1 + 2 * (edge_market.test.num_features + 3), 2, (128, 128), init_log_std=-0.5, network="mlp", portfolio=False)
    assert _final_weights(untrained, edge_market.test, env_config)[0] < 0.05  # it has to learn to buy

    config = make_config("ppo", num_envs=16, horizon_len=32, batch_size=256, repeat_times=4, total_steps=8192,
                         learning_rate=1e-3, seed=seed)
    result = train(edge_market, config, env_config, eval_every=0, progress=False)
    result_bt = backtest(agent_policy(result.agent), edge_market.test, env_config, random_seed=seed)
    final = {name: record.wealth.iloc[-1] / env_config.initial_cash for name, record in result_bt.records.items()}
    # the test split's 50 days of +1 %: holding A all along gives ~1.64x
    assert final["agent"] > 1.45
    assert final["agent"] > final["random"] + 0.15
    assert final["agent"] > final["equal_weight_buy_and_hold"] + 0.15
    weight_a, weight_b = _final_weights(result.agent, edge_market.test, env_config)
    assert weight_a > 0.9 and weight_b < 0.05
