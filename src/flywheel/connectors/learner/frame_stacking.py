"""`FrameStacking` for the learner pipeline: the stacks the env-to-module piece gave the module."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import gymnasium as gym
import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from flywheel.columns import Columns
from flywheel.connectors.connector import ConnectorV2
from flywheel.connectors.env_to_module.frame_stacking import checked_num_frames, pad_front, stacked_space
from flywheel.connectors.learner.module_episodes import module_episodes

if TYPE_CHECKING:
    from flywheel.core.rl_module.rl_module import RLModule
    from flywheel.metrics.metrics_logger import MetricsLogger
    from flywheel.typing import EpisodeType


class FrameStacking(ConnectorV2):
    """The learner side of `flywheel.connectors.env_to_module.FrameStacking` (RLlib's
    `FrameStackingLearner`, or RLlib's `FrameStacking(as_learner_connector=True)`).

    Sets `batch[module_id][OBS]` to one row per step of each chunk (of every agent's chunk,
    multi-agent), the last `num_frames` observations up to that step stacked as the env-to-module
    piece stacks them: the frames ending at observations `0 .. len(chunk) - 1` (the observations the
    actions were taken at), plus those ending at the chunk's last observation when
    `AddOneTsToEpisodesAndTruncate` added a bootstrap row (PPO's pipeline). Chunks are concatenated
    in the learner pipeline's order, one module batch per module.
    """

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
        rows: dict[str, list[np.ndarray]] = {}
        for module_id, episode in module_episodes(episodes):
            rows.setdefault(module_id, []).append(self._rows(episode, len(episode)))
        for module_id, module_rows in rows.items():
            batch.setdefault(module_id, {})[Columns.OBS] = np.concatenate(module_rows)
        return batch

    def _rows(self, episode: Any, n: int) -> np.ndarray:
        """The stacked frames ending at observations `0 .. n - 1` of `episode` (lookback included)."""
        k = self.num_frames
        history = episode.get_observations(slice(1 - k, n), neg_index_as_lookback=True)
        frames = pad_front(history, n + k - 1)
        windows = np.moveaxis(sliding_window_view(frames, k, axis=0), -1, -2)  # [n, ..., k, C]
        return windows.reshape(*windows.shape[:-2], -1)

    def __repr__(self) -> str:
        return f"learner.FrameStacking(num_frames={self.num_frames})"
