"""`FrameStacking`: the module sees the last `num_frames` observations, stacked along the last axis."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import gymnasium as gym
import numpy as np

from flywheel.columns import Columns
from flywheel.connectors.connector import ConnectorV2
from flywheel.errors import ConnectorError

if TYPE_CHECKING:
    from flywheel.core.rl_module.rl_module import RLModule
    from flywheel.metrics.metrics_logger import MetricsLogger
    from flywheel.typing import EpisodeType


class StackedFrames(ConnectorV2):
    """What both `FrameStacking` pieces (env-to-module and learner) share: `num_frames`, the stacked
    observation space, and the `num_frames - 1` frames of lookback a continuing chunk needs."""

    def __init__(
        self,
        input_observation_space: gym.Space | None = None,
        input_action_space: gym.Space | None = None,
        *,
        num_frames: int = 4,
        **kwargs: object,
    ):
        self.num_frames = checked_num_frames(num_frames)
        super().__init__(input_observation_space, input_action_space, **kwargs)

    def recompute_output_observation_space(
        self, input_observation_space: gym.Space, input_action_space: gym.Space | None
    ) -> gym.Space:
        return stacked_space(input_observation_space, self.num_frames)

    @property
    def required_episode_lookback(self) -> int:
        """The `num_frames - 1` frames before a continuing chunk's first observation."""
        return self.num_frames - 1


class FrameStacking(StackedFrames):
    """Stacks each episode's last `num_frames` observations into one (oldest first).

    A Box observation of shape `(..., C)` becomes `(..., num_frames * C)`: frame `f` occupies
    `[f * C, (f + 1) * C)` of the last axis. Before the episode start the first frame is repeated.
    Frames come from the episode (its lookback buffer included), so a chunk continuing an earlier one
    stacks exactly only if it was cut with `len_lookback_buffer >= num_frames - 1`; runners do so
    (`required_episode_lookback`). With less history the oldest stored frame is repeated.

    The episodes are not rewritten (they keep single frames, which is cheaper to store); the piece
    sets `batch[OBS]` itself, so the default observation piece skips. The learner therefore needs the
    same stacking: add `flywheel.connectors.learner.FrameStacking(num_frames=...)` (RLlib's
    `FrameStackingLearner`) to the learner pipeline. RLlib's `FrameStacking(as_learner_connector=...)`
    is `flywheel.connectors.common.FrameStacking`, which builds one of the two.
    """

    def __init__(
        self,
        input_observation_space: gym.Space | None = None,
        input_action_space: gym.Space | None = None,
        *,
        num_frames: int = 4,
        **kwargs: object,
    ):
        if kwargs.pop("as_learner_connector", False):
            raise ConnectorError(
                "flywheel.connectors.env_to_module.FrameStacking(as_learner_connector=True): this class is the "
                "env-to-module piece. Fix: use flywheel.connectors.learner.FrameStacking(num_frames=...) "
                "(RLlib's FrameStackingLearner), or flywheel.connectors.common.FrameStacking(..., "
                "as_learner_connector=True), RLlib's spelling, which builds it."
            )
        super().__init__(input_observation_space, input_action_space, num_frames=num_frames, **kwargs)

    def __call__(
        self,
        *,
        rl_module: RLModule,
        batch: dict[str, Any],
        episodes: list[EpisodeType],
        explore: bool | None = None,
        shared_data: dict | None = None,
        metrics: MetricsLogger | None = None,
        **kwargs: object,
    ) -> dict[str, Any]:
        if episodes:
            k = self.num_frames
            frames = np.asarray(
                [pad_front(episode.get_observations(slice(-k, None)), k) for episode in episodes]
            )
            # [B, k, ..., C] -> [B, ..., k, C] -> [B, ..., k * C]: frame-major along the last axis.
            stacked = np.moveaxis(frames, 1, -2)
            batch[Columns.OBS] = stacked.reshape(*stacked.shape[:-2], -1)
        return batch

    def __repr__(self) -> str:
        return f"FrameStacking(num_frames={self.num_frames})"


def checked_num_frames(num_frames: int) -> int:
    """`num_frames`, if at least 1 (both pipelines' `FrameStacking` take it)."""
    if num_frames < 1:
        raise ConnectorError(f"FrameStacking needs num_frames >= 1, got {num_frames}.")
    return num_frames


def stacked_space(space: gym.Space, num_frames: int) -> gym.Space:
    """The Box `space` with its last axis `num_frames` times as long (the stacked frames' space)."""
    if not isinstance(space, gym.spaces.Box) or not space.shape:
        raise ConnectorError(
            f"FrameStacking stacks Box observations with at least one dimension, got {space}. Put "
            f"FlattenObservations before it for other spaces."
        )
    low = np.concatenate([space.low] * num_frames, axis=-1)
    high = np.concatenate([space.high] * num_frames, axis=-1)
    return gym.spaces.Box(low, high, low.shape, space.dtype)


def pad_front(frames: Any, length: int) -> np.ndarray:
    """`frames` as an array of `length` frames, the first one repeated in front when there are fewer."""
    frames = np.asarray(frames)
    missing = length - len(frames)
    if missing <= 0:
        return frames
    return np.concatenate([np.repeat(frames[:1], missing, axis=0), frames])
