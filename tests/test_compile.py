"""The batched step is pure tensor code: it compiles whole (``fullgraph=True``: any host sync,
``.item()``, data-dependent branch or unsupported object would break the graph and fail here),
and its random draws are a tested SplitMix64."""
import torch

from finrl_tutorial import VecStockTradingEnv
from finrl_tutorial.envs.core import counter_uniform, seed_counters, splitmix64

UINT64 = (1 << 64) - 1


def reference_splitmix64(z: int) -> int:
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9 & UINT64
    z = (z ^ (z >> 27)) * 0x94D049BB133111EB & UINT64
    return z ^ (z >> 31)


def test_splitmix64_matches_unsigned_reference():
    values = [0, 1, 12345, (1 << 63) + 5, UINT64, 0x9E3779B97F4A7C15]
    signed = torch.tensor([v - (1 << 64) if v >= 1 << 63 else v for v in values], dtype=torch.int64)
    assert [int(v) & UINT64 for v in splitmix64(signed)] == [reference_splitmix64(v) for v in values]


def test_counter_uniform_is_uniform_and_distinct_per_env():
    counters = seed_counters(7, 20_000, "cpu")
    counters, first = counter_uniform(counters)
    _, second = counter_uniform(counters)
    for draws in (first, second):
        assert 0.0 <= draws.min() and draws.max() < 1.0
        assert abs(draws.mean().item() - 0.5) < 0.01
        assert abs(draws.var().item() - 1 / 12) < 0.005
    assert not torch.equal(first, second)
    assert first.unique().numel() == first.numel()


def test_env_step_compiles_as_one_graph_and_matches_eager(sse15):
    compiled_env = VecStockTradingEnv(sse15.train, 16, dtype=torch.float64, seed=1)
    eager_env = VecStockTradingEnv(sse15.train, 16, dtype=torch.float64, seed=1)
    compiled_env.reset(), eager_env.reset()
    step = torch.compile(compiled_env.step, backend="eager", fullgraph=True, dynamic=False)
    generator = torch.Generator().manual_seed(0)
    for _ in range(300):  # long enough for several episodes to end and auto-reset
        action = torch.rand(16, eager_env.action_dim, generator=generator, dtype=torch.float64) * 2 - 1
        got, want = step(action), eager_env.step(action)
        for a, b in zip(got[:4], want[:4]):
            assert torch.equal(a, b)
    for a, b in zip(compiled_env.account, eager_env.account):
        assert torch.equal(a, b)
