"""RLlib 2.60's documented `SingleAgentEpisode` behaviour, one test per RLlib unit test
(rllib/env/tests/test_single_agent_episode.py), written for flywheel.

Documented differences (docs/porting.md): where RLlib asserts (concat of chunks that do not fit,
an unknown extra-output key), flywheel raises `EpisodeError` (a ValueError; `EpisodeKeyError`
also a KeyError) naming the problem.
"""

import copy
import re

import gymnasium as gym
import numpy as np
import pytest

from flywheel.episodes import SingleAgentEpisode
from flywheel.errors import EpisodeError, EpisodeKeyError


class CountingEnv(gym.Env):
    """Observation, reward = t; terminates at t = 200."""

    observation_space = gym.spaces.Discrete(201)
    action_space = gym.spaces.Discrete(200)

    def reset(self, *, seed=None, options=None):
        self.t = 0
        return 0, {}

    def step(self, action):
        self.t += 1
        return self.t, self.t, self.t == 200, False, {}


def recorded(n, env=None, episode=None):
    env = env or CountingEnv()
    if episode is None:
        episode = SingleAgentEpisode()
        episode.add_env_reset(*env.reset())
    for _ in range(n):
        obs, reward, terminated, truncated, info = env.step(env.t)
        episode.add_env_step(obs, env.t - 1, reward, info, terminated=terminated, truncated=truncated)
    return episode, env


def cartpole_data(n, **kwargs):
    """An episode built from n CartPole steps with two extra-output columns (no lookback unless asked)."""
    kwargs.setdefault("len_lookback_buffer", 0)
    env = gym.make("CartPole-v1")
    obs, info = env.reset(seed=0)
    data = {"observations": [obs], "infos": [info], "actions": [], "rewards": []}
    extras = {"extra_1": [], "state_out": []}
    for _ in range(n):
        action = env.action_space.sample()
        obs, reward, terminated, truncated, info = env.step(action)
        if terminated or truncated:  # (the data only needs to look like CartPole's)
            obs, info = env.reset()
        data["observations"].append(obs)
        data["infos"].append(info)
        data["actions"].append(action)
        data["rewards"].append(reward)
        extras["extra_1"].append(np.random.random())
        extras["state_out"].append(np.random.random())
    return SingleAgentEpisode(**data, extra_model_outputs=extras, **kwargs), data


def test_init():
    assert SingleAgentEpisode().t_started == SingleAgentEpisode().t == 0
    assert (SingleAgentEpisode(t_started=10).t_started, SingleAgentEpisode(t_started=10).t) == (10, 10)
    episode, _ = cartpole_data(100, len_lookback_buffer=0)
    assert (len(episode), episode.t_started, episode.t) == (100, 0, 100)
    episode, _ = cartpole_data(100, len_lookback_buffer=10)
    assert (len(episode), episode.t_started, episode.t) == (90, 0, 90)
    assert len(episode.rewards) == 90 and len(episode.rewards.data) == 100
    episode, _ = cartpole_data(100, len_lookback_buffer=10, t_started=50)
    assert (len(episode), episode.t_started, episode.t) == (90, 50, 140)


def test_add_env_reset():
    episode = SingleAgentEpisode()
    episode.add_env_reset(observation=np.zeros(4, np.float32), infos={"x": 1})
    assert len(episode.observations) == len(episode.infos) == 1 and episode.t == episode.t_started == 0
    assert len(episode) == 0 and episode.is_reset


def test_add_env_step():
    episode = SingleAgentEpisode(len_lookback_buffer=10)  # no data: nothing to look back on
    env = gym.make("CartPole-v1")
    obs, info = env.reset(seed=0)
    episode.add_env_reset(observation=obs, infos=info)
    for i in range(100):
        obs, reward, terminated, truncated, info = env.step(i % 2)
        episode.add_env_step(
            observation=obs,
            action=i % 2,
            reward=reward,
            infos=info,
            terminated=terminated,
            truncated=truncated,
            extra_model_outputs={"extra": np.random.random(1)},
        )
        if terminated or truncated:
            break
    steps = i + 1
    assert episode.t == len(episode.observations) - 1 == steps and episode.t_started == 0
    assert len(episode.actions) == len(episode.rewards) == len(episode.infos) - 1 == steps
    assert (episode.is_terminated, episode.is_truncated, episode.is_done) == (terminated, truncated, True)


def test_getters():
    episode = SingleAgentEpisode(
        observations=[0, 1, 2, 3, 4, 5, 6],
        actions=[0, 1, 2, 3, 4, 5],
        rewards=[0.0, 0.1, 0.2, 0.3, 0.4, 0.5],
        len_lookback_buffer=0,
    )
    reads = [0, [0, 1], [-1], -2, slice(1, 3), slice(-3, None)]
    assert [episode.get_observations(i) for i in reads] == [0, [0, 1], [6], 5, [1, 2], [4, 5, 6]]
    assert [episode.get_actions(i) for i in reads] == [0, [0, 1], [5], 4, [1, 2], [3, 4, 5]]
    assert [episode.get_rewards(i) for i in reads] == [
        0.0,
        [0.0, 0.1],
        [0.5],
        0.4,
        [0.1, 0.2],
        [0.3, 0.4, 0.5],
    ]
    assert episode.observations[-1] == 6 and episode.actions[1:3] == [1, 2]


def test_cut():
    first, env = recorded(100)
    second = first.cut()
    assert second.id_ == first.id_ and first.t == second.t == second.t_started == 100
    assert second.observations[0] == first.observations[-1] and second.infos[0] == first.infos[-1]
    recorded(1, env, second)
    assert (len(first.observations), len(second.observations)) == (101, 2)  # the chunks share no lists


def test_slice():
    observations = list(range(10))
    episode = SingleAgentEpisode(
        observations=observations, actions=observations[:-1], rewards=[o / 10 for o in observations[:-1]],
        len_lookback_buffer=0,
    )  # fmt: skip

    def content(piece):
        assert not piece.is_done
        return len(piece), list(piece.observations), list(piece.actions), [round(r, 1) for r in piece.rewards]

    for whole in (slice(None), slice(-100, None), slice(None, 1000), slice(-1000, 1000)):
        assert content(episode[whole]) == (9, observations, observations[:-1], [o / 10 for o in range(9)])
    cases = {
        (2, None): (7, [2, 3, 4, 5, 6, 7, 8, 9], [2, 3, 4, 5, 6, 7, 8], [0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8]),
        (None, 1): (1, [0, 1], [0], [0.0]),
        (None, -4): (5, [0, 1, 2, 3, 4, 5], [0, 1, 2, 3, 4], [0.0, 0.1, 0.2, 0.3, 0.4]),
        (-2, None): (2, [7, 8, 9], [7, 8], [0.7, 0.8]),
        (-4, -2): (2, [5, 6, 7], [5, 6], [0.5, 0.6]),
        (-4, 6): (1, [5, 6], [5], [0.5]),
        (1, 3): (2, [1, 2, 3], [1, 2], [0.1, 0.2]),
    }
    assert {k: content(episode[k[0] : k[1]]) for k in cases} == cases
    with_lookback = SingleAgentEpisode(
        observations=observations, actions=observations[:-1], rewards=[o / 10 for o in observations[:-1]],
        len_lookback_buffer=4,
    )  # fmt: skip
    assert content(with_lookback[:]) == (5, [4, 5, 6, 7, 8, 9], [4, 5, 6, 7, 8], [0.4, 0.5, 0.6, 0.7, 0.8])
    cases = {(2, None): (3, [6, 7, 8, 9], [6, 7, 8], [0.6, 0.7, 0.8]), (-4, 2): (1, [5, 6], [5], [0.5])}
    cases[(1, 3)] = (2, [5, 6, 7], [5, 6], [0.5, 0.6])
    assert {k: content(with_lookback[k[0] : k[1]]) for k in cases} == cases


@pytest.mark.parametrize(
    ("n", "split", "lookback", "t_started"), [(100, 50, 0, None), (99, 33, 0, None), (60, 20, 10, 15)]
)
def test_slice_numpy_episode_in_two(n, split, lookback, t_started):
    episode, data = cartpole_data(n, len_lookback_buffer=lookback, t_started=t_started)
    episode.to_numpy()
    first, second = episode[:split], episode.slice(slice(split, None))
    start = t_started or 0
    assert first.is_numpy and second.is_numpy and first.id_ == second.id_
    assert (len(first), len(second)) == (split, n - lookback - split)
    assert (first.t_started, first.t, second.t_started, second.t) == (
        start,
        start + split,
        start + split,
        episode.t,
    )
    assert np.array_equal(first.get_observations(-1), second.get_observations(0))
    assert not np.array_equal(first.observations[4], second.observations[4])
    if lookback:  # Both chunks still look back into the data before them.
        obs, actions, rewards = data["observations"], data["actions"], data["rewards"]
        assert np.array_equal(first.get_observations(-1, neg_index_as_lookback=True), obs[lookback - 1])
        assert first.get_actions(-1, neg_index_as_lookback=True) == actions[lookback - 1]
        looked = second.get_observations([-5, -2], neg_index_as_lookback=True)
        assert np.array_equal(looked, [obs[split + lookback - 5], obs[split + lookback - 2]])
        expected = [rewards[split + lookback - 5], rewards[split + lookback - 2]]
        assert second.get_rewards([-5, -2], neg_index_as_lookback=True).tolist() == expected


def test_concat_episode():
    first, env = recorded(100)
    second, _ = recorded(100, env, first.cut())
    assert (second.t_started, second.t) == (100, 200) and second.is_terminated
    second.id_ = "wrong"
    with pytest.raises(
        EpisodeError, match="Cannot concat episode wrong to episode .*: expected the same id_"
    ):
        first.concat_episode(second)
    second.id_ = first.id_
    second.t_started += 1
    with pytest.raises(EpisodeError, match="starting at t_started=101 to the chunk ending at t=100"):
        first.concat_episode(second)
    second.t_started -= 1
    first.is_terminated = True
    with pytest.raises(EpisodeError, match="it is already done at t=100"):
        first.concat_episode(second)
    first.is_terminated = False
    first.concat_episode(second)
    assert (first.t_started, first.t, first.is_terminated) == (0, 200, True)
    assert (
        len(first.actions) == len(first.rewards) == len(first.observations) - 1 == len(first.infos) - 1 == 200
    )
    assert second.observations[5] == first.observations[105] == 105


def test_concat_episode_with_complex_obs():
    space = gym.spaces.Dict(a=gym.spaces.Discrete(10), b=gym.spaces.Box(0, 1, shape=(1,)))
    episode = SingleAgentEpisode(observation_space=space)
    episode.add_env_reset(space.sample())
    for i in range(4):
        episode.add_env_step(space.sample(), i, 0.0)
    successor = episode.cut()
    for i in range(6):
        successor.add_env_step(space.sample(), i, 0.0)
    episode.concat_episode(successor)
    assert len(episode) == 10 and episode.get_actions() == [0, 1, 2, 3, 0, 1, 2, 3, 4, 5]


def test_get_and_from_state():
    episode, _ = cartpole_data(100)
    episode.custom_data["note"] = {"x": 1}
    restored = SingleAgentEpisode.from_state(episode.get_state())
    same = ("id_", "agent_id", "multi_agent_episode_id", "t", "t_started", "is_terminated", "is_truncated")
    assert all(getattr(restored, name) == getattr(episode, name) for name in same)
    assert restored.observations == episode.observations and restored.actions == episode.actions
    assert restored.rewards[5] == episode.rewards[5] and restored.infos[5] == episode.infos[5]
    assert restored.extra_model_outputs == episode.extra_model_outputs
    assert restored.custom_data == {"note": {"x": 1}} and restored.get_duration_s() == 0.0


@pytest.mark.parametrize("numpy", [False, True])
@pytest.mark.parametrize(
    ("new_data", "indices"),
    [
        (7353.0, 0),
        (7353.0, 2),
        (7353.0, -1),
        ([7353.0], [1]),
        ([73.0, 53.0, 35.0, 53.0], [1, 2, 3, 4]),
        ([7353.0], slice(2, 3)),
        ([7.0, 3.0, 5.0, 3.0], slice(2, 6)),
    ],
)
def test_setters(numpy, new_data, indices):
    episode = SingleAgentEpisode(
        observations=[100, 101, 102, 103, 104, 105, 106],
        actions=[1, 2, 3, 4, 5, 6],
        rewards=[0.1, 0.2, 0.3, 0.4, 0.5, 0.6],
        extra_model_outputs={"some_key": [0.01, 0.02, 0.03, 0.04, 0.05, 0.06]},
        len_lookback_buffer=0,
    )
    if numpy:
        episode = copy.deepcopy(episode).to_numpy()
    written = np.array(new_data) if numpy and isinstance(new_data, list) else new_data
    for what in ("observations", "actions", "rewards"):
        getattr(episode, "set_" + what)(new_data=written, at_indices=indices)
        assert np.asarray(getattr(episode, "get_" + what)(indices)).tolist() == new_data
    episode.set_extra_model_outputs(key="some_key", new_data=written, at_indices=indices)
    assert np.asarray(episode.get_extra_model_outputs("some_key", indices)).tolist() == new_data


def test_setters_error_cases():
    episode, _ = cartpole_data(100)
    with pytest.raises(
        IndexError, match=re.escape("Cannot set 4 new items at slice(0, 2, None), which covers 2")
    ):
        episode.set_observations(new_data=[7, 3, 5, 3], at_indices=slice(0, 2))
    with pytest.raises(
        EpisodeKeyError,
        match=r"has no extra model output 'nonexistent_key'; it has \['extra_1', 'state_out'\]",
    ):
        episode.set_extra_model_outputs(key="nonexistent_key", new_data=999, at_indices=0)


def test_slice_syntax_takes_slices_only():
    episode, _ = recorded(3)
    with pytest.raises(
        EpisodeError, match=r"Episodes can only be sliced \(episode\[a:b\]\), got episode\[1\]"
    ):
        episode[1]
    with pytest.raises(EpisodeError, match=r"Expected a slice with step 1, got slice\(None, None, 2\)"):
        episode[::2]
