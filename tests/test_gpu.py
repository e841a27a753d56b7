"""GPU checks (skipped without CUDA): graph replay equals eager execution, the device env equals
the CPU env, and random numbers advance on every replay. Run them on the GPU machine together
with `python -m finrl_tutorial bench gpu`."""
import pytest
import torch

from finrl_tutorial import VecStockTradingEnv
from finrl_tutorial.agents import ActorCritic, GraphedRollout, Rollout, collect_rollout
from finrl_tutorial.bench.gpu import graph_matches_eager

pytestmark = pytest.mark.gpu


def test_graph_replay_equals_eager(sse15):
    assert graph_matches_eager(sse15.train.to("cuda", torch.float32), torch.device("cuda"), num_envs=512, steps=40)


def test_cuda_env_equals_cpu_env(sse15):
    cpu = VecStockTradingEnv(sse15.train, 64, dtype=torch.float64, seed=5)
    gpu = VecStockTradingEnv(sse15.train, 64, device="cuda", dtype=torch.float64, seed=5)
    cpu.reset()
    gpu.reset()
    gpu.account = type(cpu.account)(*(t.to("cuda") for t in cpu.account))  # same start days
    generator = torch.Generator().manual_seed(1)
    for _ in range(100):
        action = torch.rand(64, cpu.action_dim, generator=generator, dtype=torch.float64) * 2 - 1
        _, reward_cpu, *_ = cpu.step(action)
        _, reward_gpu, *_ = gpu.step(action.cuda())
        torch.testing.assert_close(reward_gpu.cpu(), reward_cpu, rtol=1e-9, atol=1e-9)
    torch.testing.assert_close(gpu.account.cash.cpu(), cpu.account.cash, rtol=1e-9, atol=1e-6)


def test_graphed_rollout_noise_advances(sse15):
    torch.manual_seed(0)
    env = VecStockTradingEnv(sse15.train, 256, device="cuda", seed=0)
    agent = ActorCritic(env.observation_dim, env.action_dim, (128, 128), init_log_std=-0.5, network="mlp", portfolio=False).cuda()
    rollout = Rollout.empty(8, 256, env.observation_dim, env.action_dim, "cuda")
    obs, _ = env.reset()
    graphed = GraphedRollout(env, agent, rollout, obs)
    first = graphed.collect().actions.clone()
    second = graphed.collect().actions.clone()
    assert not torch.equal(first, second)  # a frozen noise would collapse exploration
    # the policy's spread is what the agent's std says, not zero
    assert (second - agent.actor_mean(rollout.obs)).std().item() > 0.5 * agent.log_std.exp().mean().item()


def test_eager_rollout_on_cuda_runs(sse15):
    env = VecStockTradingEnv(sse15.train, 128, device="cuda", seed=0)
    agent = ActorCritic(env.observation_dim, env.action_dim, (128, 128), init_log_std=-0.5, network="mlp", portfolio=False).cuda()
    rollout = Rollout.empty(16, 128, env.observation_dim, env.action_dim, "cuda")
    obs, _ = env.reset()
    collect_rollout(env, agent, rollout, obs)
    assert torch.isfinite(rollout.rewards).all()
