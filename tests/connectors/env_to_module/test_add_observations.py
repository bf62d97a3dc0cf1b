"""AddObservationsFromEpisodesToBatch: the newest observation of each episode, in episode order."""

import numpy as np

from flywheel.columns import Columns
from flywheel.connectors.env_to_module import AddObservationsFromEpisodesToBatch

from ..conftest import episode_from


def test_adds_each_episodes_newest_observation_in_order(obs_rows):
    episodes = [episode_from(obs_rows, actions=[0, 1]), episode_from(obs_rows[:1])]
    batch = AddObservationsFromEpisodesToBatch()(rl_module=None, batch={}, episodes=episodes)
    assert len(batch[Columns.OBS]) == 2
    np.testing.assert_array_equal(batch[Columns.OBS][0], [5.0, 6.0])
    np.testing.assert_array_equal(batch[Columns.OBS][1], [1.0, 2.0])


def test_skips_when_an_earlier_piece_set_obs(obs_rows):
    batch = {Columns.OBS: "set by FrameStacking"}
    out = AddObservationsFromEpisodesToBatch()(rl_module=None, batch=batch, episodes=[episode_from(obs_rows)])
    assert out == {Columns.OBS: "set by FrameStacking"}
