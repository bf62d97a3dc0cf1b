"""NormalizeRewards: the running std of discounted returns, rewards rewritten once each, exact merging."""

import numpy as np
import pytest

from flywheel import MultiAgentEpisode, SingleAgentEpisode
from flywheel.connectors.env_to_module import NormalizeRewards
from flywheel.errors import ConnectorError


def stepper(rewards_per_call, dones=()):
    """Yields one list of episodes per pipeline call, as a runner with len(row) sub-envs passes them:
    each call adds one step (reward r) to each sub-env's episode; a sub-env listed in `dones[call]`
    ends its episode at that step (the next call starts a new one)."""
    episodes = [_new() for _ in rewards_per_call[0]]
    for call, rewards in enumerate(rewards_per_call):
        for i, reward in enumerate(rewards):
            if episodes[i].is_done:
                episodes[i] = _new()
            done = i in (dones[call] if call < len(dones) else ())
            episodes[i].add_env_step(np.zeros(2, np.float32), 0, reward, terminated=done)
        yield list(episodes)


def _new():
    episode = SingleAgentEpisode()
    episode.add_env_reset(np.zeros(2, np.float32))
    return episode


def reference(rewards_per_call, dones, gamma, clip, eps=1e-8):
    """SB3's VecNormalize reward scaling, written out: returns per sub-env, their population
    variance over everything seen (no prior), each reward divided by its root, clipped."""
    returns = np.zeros(len(rewards_per_call[0]))
    seen, out = [], []
    for call, rewards in enumerate(rewards_per_call):
        returns = returns * gamma + np.asarray(rewards)
        seen.extend(returns)
        out.append(np.clip(np.asarray(rewards) / np.sqrt(np.var(seen) + eps), -clip, clip))
        for i in dones[call] if call < len(dones) else ():
            returns[i] = 0.0
    return out


def test_rewards_match_vecnormalize_scaling_over_sub_envs_and_episode_ends():
    rng = np.random.default_rng(0)
    rewards = rng.normal(3.0, 2.0, size=(12, 2)).tolist()
    dones = [(), (), (0,), (), (), (1,), (), (0, 1)]
    piece = NormalizeRewards(gamma=0.9, clip=10.0)
    got = []
    for episodes in stepper(rewards, dones):
        piece(rl_module=None, batch={}, episodes=episodes)
        got.append([float(episode.get_rewards(-1)) for episode in episodes])
    np.testing.assert_allclose(got, reference(rewards, dones, 0.9, 10.0), rtol=1e-9)


def test_each_reward_is_normalized_once_and_clipped():
    piece = NormalizeRewards(gamma=0.99, clip=1.5)
    episode = _new()
    for reward in (1.0, -4.0, 2.0):
        episode.add_env_step(np.zeros(2, np.float32), 0, reward)
        piece(rl_module=None, batch={}, episodes=[episode])
        piece(rl_module=None, batch={}, episodes=[episode])  # no new step: nothing changes
    expected = reference([[1.0], [-4.0], [2.0]], [], 0.99, 1.5)
    np.testing.assert_allclose(episode.get_rewards(), np.ravel(expected), rtol=1e-9)
    assert min(episode.get_rewards()) == -1.5


def test_several_new_steps_in_one_call_and_a_cut_chunk_continue_the_return():
    piece = NormalizeRewards(gamma=0.5, clip=100.0)
    episode = _new()
    for reward in (1.0, 2.0, 3.0):
        episode.add_env_step(np.zeros(2, np.float32), 0, reward)
    piece(rl_module=None, batch={}, episodes=[episode])  # three rewards at once: returns 1, 2.5, 4.25
    chunk = episode.cut(len_lookback_buffer=1)
    chunk.add_env_step(np.zeros(2, np.float32), 0, 4.0)
    piece(rl_module=None, batch={}, episodes=[chunk])  # the return goes on: 6.125
    seen = [1.0, 2.5, 4.25]
    np.testing.assert_allclose(
        episode.get_rewards(), np.array([1.0, 2.0, 3.0]) / np.sqrt(np.var(seen) + 1e-8)
    )
    seen.append(6.125)
    np.testing.assert_allclose(chunk.get_rewards(-1), 4.0 / np.sqrt(np.var(seen) + 1e-8))


def test_merged_state_of_two_runners_equals_one_runner_seeing_both_streams():
    streams = [[[1.0], [2.0], [3.0]], [[-2.0], [5.0]]]
    runners = [NormalizeRewards(gamma=0.9) for _ in streams]
    for piece, stream in zip(runners, streams):
        for episodes in stepper(stream):
            piece(rl_module=None, batch={}, episodes=episodes)
    merged = runners[0].merge_states([piece.get_state() for piece in runners])
    returns = [1.0, 2.9, 5.61, -2.0, 3.2]
    assert merged["shared"]["count"] == 5
    assert merged["shared"]["mean"] == pytest.approx(np.mean(returns))
    assert merged["shared"]["var"] == pytest.approx(np.var(returns))
    assert merged["delta"] == {"count": 0, "mean": 0.0, "var": 1.0}
    # A runner taking the merged state normalizes with it and starts a new delta.
    runners[1].set_state(merged)
    assert runners[1].variance == pytest.approx(np.var(returns))
    assert runners[1].get_state()["delta"]["count"] == 0


def test_frozen_statistics_still_normalize():
    piece = NormalizeRewards(gamma=0.9, update_stats=False)
    piece.set_state(
        {"shared": {"count": 10, "mean": 0.0, "var": 4.0}, "delta": {"count": 0, "mean": 0.0, "var": 1.0}}
    )
    (episodes,) = list(stepper([[3.0]]))
    piece(rl_module=None, batch={}, episodes=episodes)
    assert episodes[0].get_rewards(-1) == pytest.approx(1.5)
    assert piece.get_state()["shared"]["count"] == 10


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"gamma": 1.5}, r"gamma=1\.5 must be a number in \[0, 1\]"),
        ({"clip": 0}, r"clip=0 must be a number > 0 \(float\('inf'\) for no clipping\)"),
        ({"epsilon": -1.0, "gamma": True}, r"gamma=True must be a number in \[0, 1\]; epsilon=-1\.0 must be"),
    ],
)
def test_bad_arguments_are_rejected(kwargs, message):
    with pytest.raises(ConnectorError, match=r"^NormalizeRewards: " + message):
        NormalizeRewards(**kwargs)


def test_multi_agent_episodes_are_rejected():
    with pytest.raises(
        ConnectorError, match=r"NormalizeRewards normalizes single-agent episodes, got MultiAgentEpisode"
    ):
        NormalizeRewards()(rl_module=None, batch={}, episodes=[MultiAgentEpisode()])
