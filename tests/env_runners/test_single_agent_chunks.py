"""Chunks of episodes that outlive several `sample()` calls: exact steps, lookback and infos, whether
or not anything read the episodes while they ran; copies; the objects a sample keeps alive."""

import copy
import gc
import pickle

import gymnasium as gym
import numpy as np
import pytest

from flywheel import AlgorithmConfig, Columns, PPOConfig
from flywheel.testing import CountingEnv

from .conftest import counting_config, obs_of, rewards_of


class InfoCountingEnv(CountingEnv):
    """`CountingEnv` whose info after reset and after each step is `{"t": t}`."""

    def reset(self, *, seed=None, options=None):
        obs, _ = super().reset(seed=seed, options=options)
        return obs, {"t": 0}

    def step(self, action):
        obs, reward, terminated, truncated, _ = super().step(action)
        return obs, reward, terminated, truncated, {"t": self.t}


def _read_every_step(episode, **kwargs):
    episode.get_observations(-1)


def _copies(episode):
    return [episode, copy.deepcopy(episode), pickle.loads(pickle.dumps(episode))]


@pytest.mark.parametrize("horizon", [1, 3])
@pytest.mark.parametrize("read", [False, True], ids=["unread", "read_every_step"])
def test_chunks_over_many_samples_hold_exact_steps_lookback_and_infos(make_runner, horizon, read):
    config = counting_config(env=InfoCountingEnv, num_envs=2, episode_len=7, episode_lookback_horizon=horizon)
    if read:
        config.callbacks(on_episode_step=_read_every_step)
    runner = make_runner(config)
    actions_so_far = {}  # episode id -> its actions, over all chunks
    chunks = [c for _ in range(6) for c in runner.sample(num_timesteps=6, random_actions=True)]

    assert [(c.t_started, len(c)) for c in chunks[:4]] == [(0, 3), (0, 3), (3, 3), (3, 3)]
    assert sum(map(len, chunks)) == 36
    for chunk in chunks:
        t0, t1 = chunk.t_started, chunk.t
        lookback = min(horizon, t0)
        assert chunk.is_terminated == (t1 == 7) and not chunk.is_truncated and chunk.is_numpy
        assert obs_of(chunk) == [float(t) for t in range(t0, t1 + 1)]
        assert rewards_of(chunk) == [float(t) for t in range(t0 + 1, t1 + 1)]
        assert chunk.get_infos() == [{"t": t} for t in range(t0, t1 + 1)]  # the final info included
        assert chunk.get_observations().dtype == np.float32 and chunk.get_rewards().dtype == np.float32
        before = actions_so_far.get(chunk.id_, [])
        assert len(before) == t0
        actions = chunk.get_actions().tolist()
        actions_so_far[chunk.id_] = before + actions
        for c in _copies(chunk):
            history = slice(-lookback, 0) if lookback else slice(0, 0)
            assert c.get_observations(history, neg_index_as_lookback=True).ravel().tolist() == [
                float(t) for t in range(t0 - lookback, t0)
            ]
            assert c.get_rewards(history, neg_index_as_lookback=True).tolist() == [
                float(t) for t in range(t0 - lookback + 1, t0 + 1)
            ]
            assert c.get_infos(history, neg_index_as_lookback=True) == [
                {"t": t} for t in range(t0 - lookback, t0)
            ]
            assert c.get_actions(history, neg_index_as_lookback=True).tolist() == before[t0 - lookback :]
            seq_nos = c.get_extra_model_outputs(Columns.WEIGHTS_SEQ_NO, history, neg_index_as_lookback=True)
            assert seq_nos.tolist() == [0] * lookback
            # Nothing older than the horizon is kept.
            assert c.get_rewards(-lookback - 1, neg_index_as_lookback=True, fill=-1.0) == -1.0
            assert (c.id_, c.t_started, c.t, c.get_actions().tolist()) == (chunk.id_, t0, t1, actions)


def test_a_cut_chunk_read_later_continues_with_the_same_lookback(make_runner):
    runner = make_runner(counting_config(episode_len=20, episode_lookback_horizon=2))
    (first,) = runner.sample(num_timesteps=1, random_actions=True)
    (second,) = runner.sample(num_timesteps=4, random_actions=True)
    (third,) = runner.sample(num_timesteps=3, random_actions=True)

    assert [(c.t_started, len(c)) for c in (first, second, third)] == [(0, 1), (1, 4), (5, 3)]
    assert second.get_observations(slice(-2, 0), neg_index_as_lookback=True).ravel().tolist() == [0.0]
    assert third.get_observations(slice(-2, 0), neg_index_as_lookback=True).ravel().tolist() == [3.0, 4.0]
    assert (
        third.get_actions(slice(-2, 0), neg_index_as_lookback=True).tolist()
        == second.get_actions()[-2:].tolist()
    )
    assert third.get_rewards(slice(-2, 0), neg_index_as_lookback=True).tolist() == [4.0, 5.0]


def _tracked_objects_held(episodes):
    """The objects the garbage collector tracks that `episodes` hold (the spaces they share with the
    runner, and classes, not counted)."""
    seen, todo = set(), list(episodes)
    while todo:
        obj = todo.pop()
        if id(obj) in seen or not gc.is_tracked(obj) or isinstance(obj, type | gym.Space):
            continue
        seen.add(id(obj))
        todo.extend(gc.get_referents(obj))
    return len(seen)


def test_a_64_env_sample_keeps_two_tracked_objects_per_episode_until_read(make_runner):
    # Python's full garbage collections scan every tracked object of the process; they come after a
    # number of new long-lived tracked objects, which per returned episode used to be 11.
    config = PPOConfig().environment("CartPole-v1").env_runners(num_envs_per_env_runner=64).debugging(seed=0)
    runner = make_runner(config)
    runner.sample(num_timesteps=1024)
    episodes = runner.sample(num_timesteps=1024)

    assert len(episodes) > 64  # finished episodes and the 64 cut chunks
    assert _tracked_objects_held(episodes) == 2 * len(episodes)
    assert sum(len(e.get_observations()) - len(e) for e in episodes) == len(episodes)  # read: all there


class DictObsEnv(CountingEnv):
    """`CountingEnv` with `Dict` observations `{"t": [t], "twice": [2t]}` and an info only at the end."""

    def __init__(self, config=None):
        super().__init__(config)
        box = gym.spaces.Box(0.0, 1000.0, (1,), np.float32)
        self.observation_space = gym.spaces.Dict({"t": box, "twice": box})

    def _obs(self):
        return {"t": np.array([self.t], np.float32), "twice": np.array([2 * self.t], np.float32)}

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed, options=options)
        return self._obs(), {}

    def step(self, action):
        _, reward, terminated, truncated, _ = super().step(action)
        return self._obs(), reward, terminated, truncated, ({"done_at": self.t} if terminated else {})


def test_dict_observations_and_a_final_info_over_many_samples(make_runner):
    # No algorithm: no module to build for these observations, random actions only.
    config = (
        AlgorithmConfig()
        .environment(DictObsEnv, env_config={"episode_len": 4})
        .env_runners(num_envs_per_env_runner=2, episode_lookback_horizon=2)
    )
    runner = make_runner(config)
    chunks = [c for _ in range(5) for c in runner.sample(num_timesteps=6, random_actions=True)]

    assert sum(map(len, chunks)) == 30
    for chunk in chunks:
        t0, t1 = chunk.t_started, chunk.t
        lookback = min(2, t0)
        for c in _copies(chunk):
            obs = c.get_observations(slice(-lookback - (t1 - t0) - 1, None))
            assert obs["t"].ravel().tolist() == [float(t) for t in range(t0 - lookback, t1 + 1)]
            assert obs["twice"].ravel().tolist() == [2.0 * t for t in range(t0 - lookback, t1 + 1)]
            assert c.get_infos() == [{}] * (t1 - t0) + [{"done_at": 4} if t1 == 4 else {}]
            assert len(c.get_infos(slice(-lookback, 0), neg_index_as_lookback=True)) == lookback
