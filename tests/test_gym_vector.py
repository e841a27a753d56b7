"""The batched envs are gymnasium vector envs: spaces, seeding, same-step autoreset, wrappers, by id.

The reference for the autoreset convention is gymnasium's own ``SyncVectorEnv`` in
``SAME_STEP`` mode over the one-account `StockTradingEnv`: with fixed start days both must give
the same numbers, read through the same loop that uses only the ``VectorEnv`` API.
"""
import gymnasium as gym
import numpy as np
import pytest
import torch
from gymnasium.utils.env_checker import check_env
from gymnasium.vector import AutoresetMode, SyncVectorEnv, VectorEnv
from gymnasium.vector.utils import batch_space, iterate

from finrl_tutorial.envs import ENV_ID, EnvConfig, StockTradingEnv, VecStockTradingEnv, VmapStockTradingEnv
from finrl_tutorial.errors import InputError

# stockstats (a dependency) calls set_index(inplace=True), deprecated in pandas 3.1: not our concern here
pytestmark = pytest.mark.filterwarnings("ignore:The inplace keyword in DataFrame.set_index")
F64 = torch.float64
SHORT = EnvConfig(episode_days=7)  # episodes end (and auto-reset) often


def _actions(generator, shape, dtype=torch.float32):
    return torch.rand(shape, generator=generator, dtype=dtype) * 2 - 1


@pytest.mark.parametrize("cls", [VecStockTradingEnv, VmapStockTradingEnv])
@pytest.mark.parametrize("dtype, np_dtype", [(torch.float32, np.float32), (F64, np.float64)])
def test_is_a_vector_env_with_gymnasium_spaces(sse15, cls, dtype, np_dtype):
    env = cls(sse15.train, 6, SHORT, dtype=dtype, seed=2)
    single = StockTradingEnv(sse15.train)
    assert isinstance(env, VectorEnv) and env.num_envs == 6 and env.unwrapped is env
    assert env.metadata["autoreset_mode"] is AutoresetMode.SAME_STEP
    assert env.render_mode is None and env.spec is None and not env.closed
    for space, single_space in ((env.single_observation_space, single.observation_space),
                                (env.single_action_space, single.action_space)):
        assert isinstance(space, gym.spaces.Box) and space.dtype == np_dtype
        assert space.shape == single_space.shape
        assert np.array_equal(space.low, single_space.low) and np.array_equal(space.high, single_space.high)
    assert env.single_observation_space.shape == (env.observation_dim,)
    assert env.single_action_space.shape == (env.action_dim,) == (15,)
    assert env.observation_space == batch_space(env.single_observation_space, 6)
    assert env.action_space == batch_space(env.single_action_space, 6)
    env.action_space.seed(0)
    obs, info = env.reset(seed=1)
    assert info == {} and obs.dtype == dtype and obs.device == env.device
    for _ in range(20):  # over several auto-resets
        assert env.observation_space.contains(obs.numpy())
        actions = env.action_space.sample()  # a numpy batch from the space is a valid action
        assert all(env.single_action_space.contains(a) for a in iterate(env.action_space, actions))
        obs, reward, terminated, truncated, info = env.step(actions)
        for flag in (terminated, truncated):
            assert flag.dtype == torch.bool and flag.shape == (6,)
        assert reward.dtype == dtype and reward.shape == (6,)
        assert env.observation_space.contains(info["final_obs"].numpy())
    assert info["final_info"]["wealth"] is info["wealth"]


def test_one_account_env_passes_gymnasium_check_env_by_id(sse15):
    check_env(gym.make(ENV_ID, market=sse15.train).unwrapped, skip_render_check=True)


def test_seeding(sse15):
    def episodes(env, seed, steps=25):
        obs, _ = env.reset(seed=seed)
        generator = torch.Generator().manual_seed(0)
        out = [obs, env.account.start_day.clone()]
        for _ in range(steps):
            obs, reward, *_ = env.step(_actions(generator, (8, 15), F64))
            out += [obs, reward, env.account.start_day.clone()]
        return out

    built_with_3 = VecStockTradingEnv(sse15.train, 8, SHORT, dtype=F64, seed=3)
    built_with_9 = VecStockTradingEnv(sse15.train, 8, SHORT, dtype=F64, seed=9)
    first = episodes(built_with_3, seed=42)
    assert built_with_3.np_random_seed == 42
    # the seed on reset decides, whatever the constructor's seed and whatever ran before
    for again in (episodes(built_with_9, seed=42), episodes(built_with_3, seed=42)):
        assert all(torch.equal(a, b) for a, b in zip(first, again))
    other = episodes(built_with_3, seed=43)
    assert not torch.equal(first[1], other[1])
    # reset() without a seed continues the stream: new start days, not a replay
    built_with_3.reset()
    assert not torch.equal(built_with_3.account.start_day, first[1])
    # negative seeds work as they always did (the counters take the seed modulo 2**64)
    built_with_3.reset(seed=-1)
    for bad in (1.5, "7", True):
        with pytest.raises(InputError, match="seed"):
            built_with_3.reset(seed=bad)


def test_reset_start_day_option(sse15):
    env = VecStockTradingEnv(sse15.train, 4, SHORT, dtype=F64, seed=0)
    obs, _ = env.reset(seed=5, options={"start_day": 10})
    assert env.account.start_day.tolist() == [10] * 4 and torch.allclose(obs[:, 0], torch.ones(4, dtype=F64))
    env.reset(options={"start_day": [3, 4, 5, 6]})
    assert env.account.day.tolist() == [3, 4, 5, 6]
    # the option does not shift the random stream: the episodes after the first are the same
    plain = VecStockTradingEnv(sse15.train, 4, SHORT, dtype=F64, seed=0)
    plain.reset(seed=5)
    env.reset(seed=5, options={"start_day": 0})
    assert torch.equal(env.rng_state, plain.rng_state)
    last = sse15.train.num_days - 2
    state = env.rng_state.clone()
    for bad, message in (({"start_day": last + 1}, "must lie in"), ({"start_day": -1}, "must lie in"),
                         ({"start_day": [1, 2]}, "one per env"), ({"start_day": 2.5}, "integer"),
                         ({"start_day": "x"}, "integer"), ({"reset_mask": None}, "unknown reset option")):
        with pytest.raises(InputError, match=message):
            env.reset(seed=1, options=bad)
    assert torch.equal(env.rng_state, state)  # a refused reset changes nothing


def test_close(sse15):
    env = VecStockTradingEnv(sse15.train, 2)
    env.reset()
    env.close()
    env.close()  # closing twice is allowed
    assert env.closed
    with pytest.raises(RuntimeError, match="reset"):
        env.step(torch.zeros(2, 15))


def test_bad_dtype_is_one_line(sse15):
    for dtype in (torch.bfloat16, torch.int64):
        with pytest.raises(InputError, match="dtype"):
            VecStockTradingEnv(sse15.train, 2, dtype=dtype)


def vector_env_loop(envs: VectorEnv, steps: int, seed: int) -> dict:
    """A CleanRL-style collection loop written against the ``VectorEnv`` API alone (torch in, torch out).

    Actions follow a fixed pattern, so every env gets the same actions in every implementation.
    Returns what PPO needs from the env: observations, rewards, done flags and the observation
    to bootstrap from (the final observation where an episode ended), plus episode counts.
    """
    assert envs.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP
    obs_dim, = envs.single_observation_space.shape
    action_dim, = envs.single_action_space.shape
    generator = torch.Generator().manual_seed(seed)
    obs, _ = envs.reset(seed=seed)
    record = {"obs": [], "rewards": [], "terminated": [], "truncated": [], "bootstrap_obs": [], "final_wealth": []}
    for _ in range(steps):
        actions = _actions(generator, (envs.num_envs, action_dim))
        next_obs, rewards, terminated, truncated, infos = envs.step(actions)
        bootstrap = torch.as_tensor(next_obs).clone()
        finished = torch.as_tensor(np.asarray(infos.get("_final_obs", np.zeros(envs.num_envs, bool))))
        for i in torch.nonzero(finished).flatten().tolist():
            bootstrap[i] = torch.as_tensor(infos["final_obs"][i])
        final_wealth = torch.full((envs.num_envs,), float("nan"), dtype=torch.float64)
        if "final_info" in infos:
            for i in np.flatnonzero(np.asarray(infos["_final_info"])):
                final_wealth[i] = float(infos["final_info"]["wealth"][i])
        assert bootstrap.shape == (envs.num_envs, obs_dim)
        for name, value in (("obs", obs), ("rewards", rewards), ("terminated", terminated),
                            ("truncated", truncated), ("bootstrap_obs", bootstrap), ("final_wealth", final_wealth)):
            record[name].append(torch.as_tensor(np.asarray(value) if not isinstance(value, torch.Tensor) else value))
        obs = next_obs
    return {name: torch.stack(values) for name, values in record.items()}


def test_same_step_autoreset_matches_gymnasiums_sync_vector_env(sse15):
    """Fixed start days (day 0, 9-day episodes): our batched envs and gymnasium's SyncVectorEnv of
    one-account envs in SAME_STEP mode agree on every observation, reward, flag, final observation
    and final info, read through the same VectorEnv-only loop."""
    config = EnvConfig(random_start=False, episode_days=9)
    num_envs, steps = 3, 30
    reference = SyncVectorEnv([lambda: StockTradingEnv(sse15.train, config) for _ in range(num_envs)],
                              autoreset_mode=AutoresetMode.SAME_STEP)
    want = vector_env_loop(reference, steps, seed=0)
    assert want["truncated"].any(dim=1).sum() == steps // 9  # the loop crossed three auto-resets
    for cls in (VecStockTradingEnv, VmapStockTradingEnv):
        got = vector_env_loop(cls(sse15.train, num_envs, config, dtype=F64), steps, seed=0)
        for name in ("terminated", "truncated"):
            assert torch.equal(got[name], want[name]), name
        # the one-account env hands out float32 observations and Python-float rewards
        torch.testing.assert_close(got["obs"].float(), want["obs"], rtol=1e-6, atol=1e-6)
        torch.testing.assert_close(got["bootstrap_obs"].float(), want["bootstrap_obs"], rtol=1e-6, atol=1e-6)
        torch.testing.assert_close(got["rewards"], want["rewards"], rtol=1e-9, atol=1e-9)
        torch.testing.assert_close(got["final_wealth"], want["final_wealth"], rtol=1e-12, atol=0.0, equal_nan=True)


def test_gymnasium_torch_numpy_wrappers_round_trip(sse15):
    """Through gymnasium's array-conversion wrappers (torch → numpy → torch) and its
    RecordEpisodeStatistics (which reads ``metadata["autoreset_mode"]``): same numbers, and the
    episode statistics match the returns and lengths counted by hand."""
    pytest.importorskip("array_api_compat", reason="gymnasium's array wrappers need gymnasium[torch]")
    from gymnasium.wrappers.vector import ArrayConversion, NumpyToTorch, RecordEpisodeStatistics

    num_envs, steps = 4, 40
    bare = VecStockTradingEnv(sse15.train, num_envs, SHORT, dtype=F64, seed=1)
    as_numpy = RecordEpisodeStatistics(ArrayConversion(VecStockTradingEnv(sse15.train, num_envs, SHORT, dtype=F64,
                                                                          seed=1), env_xp=torch, target_xp=np))
    wrapped = NumpyToTorch(as_numpy)
    assert wrapped.single_observation_space == bare.single_observation_space and wrapped.num_envs == num_envs
    obs, _ = wrapped.reset(seed=4)
    assert torch.equal(obs, bare.reset(seed=4)[0])
    generator = torch.Generator().manual_seed(0)
    returns, lengths, episodes = torch.zeros(num_envs, dtype=F64), torch.zeros(num_envs, dtype=torch.long), 0
    for _ in range(steps):
        actions = _actions(generator, (num_envs, 15), F64)
        got, want = wrapped.step(actions), bare.step(actions)
        for a, b in zip(got[:4], want[:4]):
            assert isinstance(a, torch.Tensor) and torch.equal(a, b)
        info, want_info = got[4], want[4]
        for key in ("wealth", "fee", "final_obs", "_final_obs", "_final_info"):
            assert torch.equal(info[key], want_info[key]), key
        assert torch.equal(info["final_info"]["dividend"], want_info["final_info"]["dividend"])
        returns += want[1]
        lengths += 1
        done = want[2] | want[3]
        if done.any():
            episodes += int(done.sum())
            assert torch.equal(info["_episode"], done)
            torch.testing.assert_close(info["episode"]["r"][done], returns[done], rtol=1e-12, atol=1e-12)
            assert torch.equal(info["episode"]["l"][done], lengths[done])
            returns[done], lengths[done] = 0.0, 0
        else:
            assert "episode" not in info
    assert episodes == len(as_numpy.return_queue) >= num_envs * (steps // 7)


def test_make_vec_by_id_builds_our_batched_env(sse15):
    envs = gym.make_vec(ENV_ID, num_envs=5, market=sse15.train, config=SHORT, seed=3)
    assert type(envs) is VecStockTradingEnv and envs.spec.id == ENV_ID and envs.num_envs == 5
    direct = VecStockTradingEnv(sse15.train, 5, SHORT, seed=3)
    assert torch.equal(envs.reset(seed=8)[0], direct.reset(seed=8)[0])
    envs.close()
    one = gym.make(ENV_ID, market=sse15.train)
    assert isinstance(one.unwrapped, StockTradingEnv) and one.spec.id == ENV_ID


def test_one_account_env_checks_its_reset_options(sse15):
    env = StockTradingEnv(sse15.train)
    last = sse15.train.num_days - 2
    assert env.reset(options={"start_day": np.int64(last)})[1]["day"] == last
    for bad, message in (({"start_day": last + 1}, "must lie in"), ({"start_day": [1, 2]}, "integer"),
                         ({"start_day": 3.0}, "integer"), ({"start": 3}, "unknown reset option")):
        with pytest.raises(InputError, match=message):
            env.reset(options=bad)
