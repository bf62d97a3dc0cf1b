"""PrevActionsPrevRewards: obs + last n actions (one-hot / raw) + last n rewards, zeros before the start."""

import gymnasium as gym
import numpy as np
import pytest

from flywheel.columns import Columns
from flywheel.connectors import ConnectorPipelineV2
from flywheel.connectors.env_to_module import PrevActionsPrevRewards
from flywheel.errors import ConnectorError
from flywheel.typing import DEFAULT_MODULE_ID

from ..conftest import episode_from

OBS_SPACE = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)


def obs(t):
    return np.array([t, -t], np.float32)


def episode(actions, rewards=None):
    return episode_from([obs(t) for t in range(len(actions) + 1)], actions=actions, rewards=rewards)


def call(piece, episodes):
    return piece(rl_module=None, batch={}, episodes=episodes)


def test_output_space_appends_actions_and_rewards():
    piece = PrevActionsPrevRewards(OBS_SPACE, gym.spaces.Discrete(3), n_prev_actions=2, n_prev_rewards=1)
    space = piece.observation_space
    assert space.shape == (9,) and space.dtype == np.float32
    np.testing.assert_array_equal(space.low, [-1, -1] + [-np.inf] * 7)
    np.testing.assert_array_equal(space.high, [1, 1] + [np.inf] * 7)


def test_discrete_actions_are_one_hot_and_zero_before_the_start():
    piece = PrevActionsPrevRewards(OBS_SPACE, gym.spaces.Discrete(3), n_prev_actions=2, n_prev_rewards=1)
    episodes = [episode([]), episode([2]), episode([0, 1, 2], rewards=[1.0, 2.0, 3.5])]
    batch = call(piece, episodes)
    assert batch[Columns.OBS].dtype == np.float32
    np.testing.assert_array_equal(
        batch[Columns.OBS],
        [
            [0, 0, 0, 0, 0, 0, 0, 0, 0],
            [1, -1, 0, 0, 0, 0, 0, 1, 1.0],
            [3, -3, 0, 1, 0, 0, 0, 1, 3.5],
        ],
    )


def test_discrete_with_a_start_offset():
    piece = PrevActionsPrevRewards(
        OBS_SPACE, gym.spaces.Discrete(2, start=5), n_prev_actions=2, n_prev_rewards=0
    )
    batch = call(piece, [episode([6])])
    np.testing.assert_array_equal(batch[Columns.OBS], [[1, -1, 0, 0, 0, 1]])


def test_box_actions_are_raw_and_several_rewards():
    piece = PrevActionsPrevRewards(
        OBS_SPACE, gym.spaces.Box(-1.0, 1.0, (2,), np.float32), n_prev_actions=1, n_prev_rewards=2
    )
    action = np.array([0.5, -0.25], np.float32)
    batch = call(piece, [episode([action], rewards=[4.0])])
    np.testing.assert_array_equal(batch[Columns.OBS], [[1, -1, 0.5, -0.25, 0, 4]])


def test_continued_chunk_reads_actions_and_rewards_from_its_lookback():
    chunk = episode([0, 1, 2], rewards=[1.0, 2.0, 3.0]).cut(len_lookback_buffer=2)
    piece = PrevActionsPrevRewards(OBS_SPACE, gym.spaces.Discrete(3), n_prev_actions=2, n_prev_rewards=2)
    np.testing.assert_array_equal(call(piece, [chunk])[Columns.OBS], [[3, -3, 0, 1, 0, 0, 0, 1, 2, 3]])


def test_learner_mode_gives_one_row_per_step():
    piece = PrevActionsPrevRewards(
        OBS_SPACE, gym.spaces.Discrete(2), n_prev_actions=2, n_prev_rewards=1, as_learner_connector=True
    )
    first = episode([1, 0, 1], rewards=[1.0, 2.0, 3.0]).to_numpy()
    chunk = episode([0, 1, 1], rewards=[4.0, 5.0, 6.0]).cut(len_lookback_buffer=1)
    chunk.add_env_step(obs(4), 0, 7.0)
    batch = call(piece, [first, chunk, episode([])])
    np.testing.assert_array_equal(
        batch[DEFAULT_MODULE_ID][Columns.OBS],
        [
            [0, 0, 0, 0, 0, 0, 0],  # obs 0: nothing before the start
            [1, -1, 0, 0, 0, 1, 1],  # obs 1: actions [-, 1], reward 1
            [2, -2, 0, 1, 1, 0, 2],  # obs 2: actions [1, 0], reward 2
            [3, -3, 0, 0, 0, 1, 6],  # chunk obs 0 (t 3): lookback holds one action (1) and reward 6
        ],
    )


def test_output_space_waits_for_the_action_space():
    pipeline = ConnectorPipelineV2(OBS_SPACE, None, connectors=[PrevActionsPrevRewards()])
    assert pipeline.observation_space is None
    pipeline.input_action_space = gym.spaces.Discrete(2)
    assert pipeline.observation_space.shape == (5,)


def test_invalid_spaces():
    with pytest.raises(
        ConnectorError, match=r"PrevActionsPrevRewards needs Box observations, got Discrete\(2\)"
    ):
        PrevActionsPrevRewards(gym.spaces.Discrete(2), gym.spaces.Discrete(2))
    with pytest.raises(
        ConnectorError,
        match=r"PrevActionsPrevRewards needs a Discrete or Box action space, got MultiDiscrete",
    ):
        PrevActionsPrevRewards(OBS_SPACE, gym.spaces.MultiDiscrete([2, 2]))
