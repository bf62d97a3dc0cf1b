"""Rows of a train batch as replayed transitions: what a replay buffer's `sample()` hands the learner."""

import numpy as np

from flywheel.columns import Columns
from flywheel.episodes.transition_episodes import TransitionBlock, TransitionEpisodes
from flywheel.replay import INDICES


def replayed(columns, observation_space=None, action_space=None, module_id=None, first_index=10):
    """`TransitionEpisodes` of `columns` (OBS, NEXT_OBS, ACTIONS, REWARDS, done flags, N_STEP, WEIGHTS),
    with replay `INDICES` first_index, first_index + 1, ..."""
    n = len(columns[Columns.REWARDS])
    columns = {**columns, INDICES: np.arange(first_index, first_index + n)}
    ids = np.array([f"episode{i}" for i in range(n)], dtype=object)
    block = TransitionBlock(columns, ids, np.zeros(n, np.int64), module_id, observation_space, action_space)
    return TransitionEpisodes([block])


def update(learner, timestep, columns, **kwargs):
    """`learner.update` on `columns` replayed, at `num_env_steps_sampled_lifetime=timestep`."""
    episodes = replayed(columns, **kwargs)
    return learner.update(episodes=episodes, timesteps={"num_env_steps_sampled_lifetime": timestep})
