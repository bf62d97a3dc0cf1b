"""TransitionEpisodes: replayed transitions as a sequence of RLlib's one-step episodes, built on demand."""

import gymnasium as gym
import numpy as np
import pytest

from flywheel import Columns
from flywheel.episodes.transition_episodes import TransitionBlock, TransitionEpisodes, num_env_steps
from flywheel.errors import EpisodeError

OBS = gym.spaces.Box(-9.0, 9.0, (2,), np.float32)


def block(n, module_id=None, start=0):
    rows = np.arange(start, start + n)
    columns = {
        Columns.OBS: np.stack([rows, -rows], 1).astype(np.float32),
        Columns.NEXT_OBS: np.stack([rows + 2, -rows - 2], 1).astype(np.float32),
        Columns.ACTIONS: rows % 2,
        Columns.REWARDS: rows.astype(np.float32) / 2,
        Columns.TERMINATEDS: rows % 3 == 0,
        Columns.TRUNCATEDS: np.zeros(n, bool),
        Columns.N_STEP: np.full(n, 2),
        Columns.WEIGHTS: np.ones(n, np.float32),
    }
    ids = np.array([f"e{row}" for row in rows], dtype=object)
    return TransitionBlock(columns, ids, rows * 10, module_id, OBS, gym.spaces.Discrete(2))


def test_each_transition_is_a_one_step_episode():
    episodes = TransitionEpisodes([block(3, "p0"), block(2, "p1", start=3)])
    assert len(episodes) == episodes.env_steps() == num_env_steps(episodes) == 5 and not episodes.touched
    episode = episodes[4]
    assert episodes.touched
    assert (episode.id_, len(episode), episode.t_started, episode.module_id) == ("e4", 1, 40, "p1")
    assert episode.get_observations().tolist() == [[4.0, -4.0], [6.0, -6.0]]
    assert (episode.get_actions(0), episode.get_rewards(0), episode.is_terminated) == (0, 2.0, False)
    assert episode.get_extra_model_outputs(Columns.N_STEP).tolist() == [2]
    assert episode.observation_space == OBS and episode.is_numpy
    assert episodes[-1] is episode and [e.id_ for e in episodes[1:3]] == ["e1", "e2"]
    assert [e.is_terminated for e in episodes] == [True, False, False, True, False]
    assert repr(episodes) == "TransitionEpisodes(5 one-step episodes of modules ['p0', 'p1'])"


def test_counting_needs_no_episode_objects():
    episodes = TransitionEpisodes([block(4)])
    assert num_env_steps(episodes) == 4 and not episodes.touched
    assert num_env_steps([episodes[0], episodes[1]]) == 2  # any episodes: len summed


def test_split_gives_consecutive_rows_of_every_block():
    episodes = TransitionEpisodes([block(5, "p0"), block(2, "p1")])
    first, second = episodes.split(2)
    assert [len(b) for b in first.blocks] == [2, 1] and [len(b) for b in second.blocks] == [3, 1]
    np.testing.assert_array_equal(second.blocks[0].columns[Columns.ACTIONS], [0, 1, 0])
    assert second.blocks[0].episode_ids.tolist() == ["e2", "e3", "e4"]
    assert [len(part) for part in episodes.split(3)] == [1, 3, 3]  # p0: 1, 2, 2 rows; p1: 0, 1, 1
    touched = TransitionEpisodes([block(3)])
    built = list(touched)
    assert touched.split(2) == [built[:1], built[1:]]  # the (possibly changed) episode objects


def test_bad_indices_say_how_to_read_columns():
    episodes = TransitionEpisodes([block(2)])
    with pytest.raises(
        EpisodeError, match=r"indexed by int or slice; got 'obs'. Fix: read a column .* as episodes\.blocks"
    ):
        episodes["obs"]
    with pytest.raises(EpisodeError, match="Transition index 2 is out of range for 2 transitions"):
        episodes[2]
    assert len(TransitionEpisodes([block(0)])) == 0 and TransitionEpisodes([block(0)]).blocks == ()
