"""Episode data built when first read: the `_pending` of a `SingleAgentEpisode`.

An episode may lack its data attributes (`RECORDED_ATTRIBUTES`) while something else holds its
data; reading one of them (`SingleAgentEpisode.__getattr__`) calls `episode._pending.realize(episode)`,
which sets them all. Three kinds of `_pending` exist:

- `Unread` (here): the episode was built empty and nothing has read it; it gets empty buffers.
- `_Pending` (`flywheel.episodes.vector_recorder`): a running episode whose steps are rows of a
  `VectorRecorder`'s columns.
- `NumpyRows` (`flywheel.episodes.stacked_columns`): a chunk the recorder handed out, whose rows
  are arrays.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import gymnasium as gym
import numpy as np

from flywheel.episodes.lookback_buffer import LookbackBuffer

if TYPE_CHECKING:
    from flywheel.episodes.single_agent_episode import SingleAgentEpisode

# Rewards have no space of their own; this one gives them float32 when stacked and a scalar fill.
REWARD_SPACE = gym.spaces.Box(-np.inf, np.inf, (), np.float32)

RECORDED_ATTRIBUTES = ("observations", "infos", "actions", "rewards", "extra_model_outputs", "t")
"""The data attributes an episode with a `_pending` lacks until first read."""


def empty_data(observation_space: gym.Space | None, action_space: gym.Space | None, t: int) -> dict[str, Any]:
    """The `RECORDED_ATTRIBUTES` of an episode without steps, at timestep `t`."""
    return {
        "observations": LookbackBuffer([], 0, observation_space),
        "infos": LookbackBuffer([]),
        "actions": LookbackBuffer([], 0, action_space),
        "rewards": LookbackBuffer([], 0, REWARD_SPACE),
        "extra_model_outputs": {},
        "t": t,
    }


class Unread:
    """The `_pending` of an episode built empty that nothing has read yet (a `VectorRecorder`
    starting it replaces this)."""

    __slots__ = ("observation_space", "action_space")

    def __init__(self, observation_space: gym.Space | None, action_space: gym.Space | None) -> None:
        self.observation_space = observation_space
        self.action_space = action_space

    def realize(self, episode: SingleAgentEpisode) -> None:
        episode._pending = None
        for name, value in empty_data(self.observation_space, self.action_space, episode.t_started).items():
            setattr(episode, name, value)


def is_unread(episode: SingleAgentEpisode) -> bool:
    """Whether `episode` was built empty and nothing has read its data yet (it holds none)."""
    return type(episode._pending) is Unread
