"""Episode properties on random step sequences: `cut`, `concat_episode`, slicing and the getters keep
lengths, returns, time steps and lookback consistent (single-agent and multi-agent).

Rewards are small integers (as floats), so sums are exact and returns compare with ==.
"""

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from flywheel import MultiAgentEpisode, SingleAgentEpisode
from flywheel.errors import EpisodeIndexError

pytestmark = pytest.mark.chaos

OBS_SPACE = gym.spaces.Box(-1e6, 1e6, (1,), np.float32)
ACT_SPACE = gym.spaces.Discrete(3)
REWARDS = st.lists(st.integers(-5, 5).map(float), min_size=0, max_size=12)
AGENTS = ("a0", "a1")


def _obs(t: int) -> np.ndarray:
    return np.array([float(t)], np.float32)


def _single(rewards: list[float], *, terminated: bool = False, start: int = 0, episode=None):
    """Steps from obs [start]: after step t the observation is [t], the action t % 3, the reward rewards[...]."""
    if episode is None:
        episode = SingleAgentEpisode(observation_space=OBS_SPACE, action_space=ACT_SPACE)
        episode.add_env_reset(_obs(start))
    for reward in rewards:
        t = episode.t + 1
        last = terminated and t == start + len(rewards)
        episode.add_env_step(_obs(t), t % 3, reward, terminated=last, extra_model_outputs={"vf": float(t)})
    return episode


def _flat(data) -> list[float]:
    return np.asarray(data, dtype=np.float64).reshape(len(data), -1)[:, 0].tolist() if len(data) else []


@given(rewards=REWARDS, data=st.data(), lookback=st.integers(0, 4), numpy=st.booleans())
def test_cut_and_concat_keep_lengths_returns_and_lookback(rewards, data, lookback, numpy):
    n = len(rewards)
    k = data.draw(st.integers(0, n), label="cut at")
    first = _single(rewards[:k])
    if numpy:
        first.to_numpy()
    second = first.cut(len_lookback_buffer=lookback)
    _single(rewards[k:], start=k, episode=second)
    assert (second.id_, second.t_started, len(first), len(second)) == (first.id_, k, k, n - k)
    assert first.get_return() + second.get_return() == sum(rewards)
    assert _flat(second.get_observations(slice(0, 1))) == [float(k)]
    # Lookback: the last `lookback` rewards and actions of `first`, read with negative indices.
    for i in range(1, min(lookback, k) + 1):
        assert second.get_rewards(-i, neg_index_as_lookback=True) == rewards[k - i]
        assert second.get_actions(-i, neg_index_as_lookback=True) == (k - i + 1) % 3
    if lookback > k:
        with pytest.raises(EpisodeIndexError):
            second.get_rewards(-(k + 1), neg_index_as_lookback=True)
    if k == 0:
        return  # a chunk without steps has recorded no extra outputs to concat to (RLlib asserts there too)
    first.concat_episode(second)
    whole = _single(rewards)
    assert (len(first), first.t, first.get_return()) == (n, n, sum(rewards))
    assert _flat(first.get_rewards()) == _flat(whole.get_rewards()) == rewards
    assert (
        _flat(first.get_observations()) == _flat(whole.get_observations()) == [float(t) for t in range(n + 1)]
    )
    assert _flat(first.get_extra_model_outputs("vf")) == [float(t) for t in range(1, n + 1)]
    first.validate()


@given(rewards=REWARDS, start=st.integers(-14, 14) | st.none(), stop=st.integers(-14, 14) | st.none())
def test_slices_hold_the_steps_python_slicing_gives(rewards, start, stop):
    episode = _single(rewards, terminated=bool(rewards)).to_numpy()
    steps = list(range(len(rewards)))[start:stop]
    part = episode[start:stop]
    assert len(part) == len(steps)
    assert _flat(part.get_rewards()) == [rewards[t] for t in steps]
    assert part.get_return() == sum(rewards[t] for t in steps)
    if steps:
        assert part.t_started == steps[0] and part.t == steps[-1] + 1
        assert _flat(part.get_observations()) == [float(t) for t in [*steps, steps[-1] + 1]]
        assert part.is_terminated == (steps[-1] == len(rewards) - 1)
    part.validate()


@given(rewards=REWARDS.filter(bool), data=st.data())
def test_slices_concat_back_into_the_episode(rewards, data):
    n = len(rewards)
    m = data.draw(st.integers(0, n - 1), label="split at")  # a head reaching the end is done: nothing follows
    episode = _single(rewards, terminated=True)
    head, tail = episode[:m], episode[m:]
    head.concat_episode(tail)
    assert (len(head), head.get_return(), head.is_terminated) == (n, sum(rewards), True)
    assert _flat(head.get_rewards()) == rewards


@given(rewards=REWARDS, index=st.integers(-15, 15), numpy=st.booleans())
def test_getters_index_like_lists_or_raise_episode_index_errors(rewards, index, numpy):
    episode = _single(rewards)
    if numpy:
        episode.to_numpy()
    n = len(rewards)
    if -n <= index < n:
        assert episode.get_rewards(index) == rewards[index]
        assert episode.get_actions(index) == (range(1, n + 1)[index]) % 3
    else:
        with pytest.raises(EpisodeIndexError):
            episode.get_rewards(index)
        assert episode.get_rewards(index, fill=-99.0) == -99.0
    if -(n + 1) <= index <= n:
        assert _flat([episode.get_observations(index)]) == [float(range(n + 1)[index])]


# Multi-agent: at each env step a random non-empty set of agents observes; the agents that observed
# last act; every agent that acted gets a reward.


def _schedule():
    return st.lists(st.sampled_from([("a0",), ("a1",), AGENTS]), min_size=0, max_size=10)


def _multi(schedule, rewards, *, episode=None, offset=0):
    if episode is None:
        episode = MultiAgentEpisode(
            observation_space=dict.fromkeys(AGENTS, OBS_SPACE), action_space=dict.fromkeys(AGENTS, ACT_SPACE)
        )
        episode.add_env_reset(observations={a: _obs(0) for a in AGENTS})
    for i, observing in enumerate(schedule):
        t = episode.env_t + 1
        acting = sorted(episode.get_agents_to_act())
        episode.add_env_step(
            {a: _obs(t) for a in observing},
            {a: t % 3 for a in acting},
            {a: rewards[(offset + i) % len(rewards)] for a in acting},
        )
    return episode


@given(schedule=_schedule(), rewards=REWARDS.filter(bool), data=st.data(), lookback=st.integers(0, 3))
def test_multi_agent_cut_and_concat_keep_lengths_and_returns(schedule, rewards, data, lookback):
    n = len(schedule)
    k = data.draw(st.integers(0, n), label="cut at")
    whole = _multi(schedule, rewards)
    first = _multi(schedule[:k], rewards)
    second = first.cut(len_lookback_buffer=lookback)
    _multi(schedule[k:], rewards, episode=second, offset=k)
    assert (second.id_, second.env_t_started, len(first), len(second)) == (first.id_, k, k, n - k)
    assert first.agent_steps() + second.agent_steps() == whole.agent_steps()
    assert first.get_return() + second.get_return() == whole.get_return()
    first.concat_episode(second)
    assert (len(first), first.env_t, first.agent_steps()) == (n, n, whole.agent_steps())
    assert first.get_return() == whole.get_return()
    for agent in AGENTS:
        assert _agent_rewards(first, agent) == _agent_rewards(whole, agent)
    first.validate()


def _agent_rewards(episode: MultiAgentEpisode, agent: str) -> list[float]:
    return _flat(episode.get_rewards(agent_ids=[agent]).get(agent, []))


@given(
    schedule=_schedule(), rewards=REWARDS.filter(bool), start=st.integers(0, 10), length=st.integers(0, 10)
)
def test_multi_agent_slices_count_env_steps_and_agent_steps(schedule, rewards, start, length):
    episode = _multi(schedule, rewards)
    n = len(schedule)
    stop = min(start + length, n)
    part = episode[start:stop]
    assert len(part) == len(range(n)[start:stop])
    assert part.env_t_started == min(start, n)
    assert part.agent_steps() <= episode.agent_steps()
    part.validate()
