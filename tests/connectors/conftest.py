"""Shared helpers for connector tests: real episodes built by hand, a minimal module stand-in."""

import numpy as np
import pytest

from flywheel.episodes import SingleAgentEpisode


def episode_from(
    observations, actions=(), rewards=None, *, observation_space=None, action_space=None, **kwargs
):
    """A list-based episode: reset with observations[0], then one step per action."""
    episode = SingleAgentEpisode(observation_space=observation_space, action_space=action_space, **kwargs)
    episode.add_env_reset(observations[0])
    rewards = [float(i + 1) for i in range(len(actions))] if rewards is None else rewards
    for obs, action, reward in zip(observations[1:], actions, rewards):
        episode.add_env_step(obs, action, reward)
    return episode


class StubModule:
    """Just what the connector pieces ask a module for."""

    def __init__(self, initial_state=None, dist_cls=None):
        self.initial_state = initial_state or {}
        self.dist_cls = dist_cls

    def is_stateful(self):
        return bool(self.initial_state)

    def get_initial_state(self):
        return self.initial_state

    def get_exploration_action_dist_cls(self):
        return self.dist_cls

    def get_inference_action_dist_cls(self):
        return self.dist_cls


@pytest.fixture
def obs_rows():
    """Three distinct float32 observations of shape (2,)."""
    return [
        np.array([1.0, 2.0], np.float32),
        np.array([3.0, 4.0], np.float32),
        np.array([5.0, 6.0], np.float32),
    ]
