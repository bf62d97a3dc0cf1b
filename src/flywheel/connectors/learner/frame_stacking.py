"""`FrameStacking` for the learner pipeline: the stacks the env-to-module piece gave the module."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from flywheel.columns import Columns
from flywheel.connectors.env_to_module.frame_stacking import StackedFrames, pad_front
from flywheel.connectors.learner.module_episodes import module_episodes
from flywheel.episodes.transition_episodes import TransitionBlock, TransitionEpisodes
from flywheel.errors import ConnectorError
from flywheel.typing import DEFAULT_MODULE_ID

if TYPE_CHECKING:
    from flywheel.core.rl_module.rl_module import RLModule
    from flywheel.metrics.metrics_logger import MetricsLogger
    from flywheel.typing import EpisodeType


class FrameStacking(StackedFrames):
    """The learner side of `flywheel.connectors.env_to_module.FrameStacking` (RLlib's
    `FrameStackingLearner`, or RLlib's `FrameStacking(as_learner_connector=True)`).

    Sets `batch[module_id][OBS]` to one row per step of each chunk (of every agent's chunk,
    multi-agent), the last `num_frames` observations up to that step stacked as the env-to-module
    piece stacks them: the frames ending at observations `0 .. len(chunk) - 1` (the observations the
    actions were taken at; with `AddOneTsToEpisodesAndTruncate` earlier, PPO's pipeline, the last of
    them is the bootstrap timestep it appended). Chunks are concatenated
    in the learner pipeline's order, one module batch per module.

    Replayed transitions (`TransitionEpisodes`, DQN and SAC) get `OBS` and `NEXT_OBS`: the frames
    ending at `o_t` and at `o_{t+n}`, the earlier ones from the `lookback` the replay buffer read
    when the batch was sampled (off-policy algorithms sample with this piece's
    `required_episode_lookback`), so the buffer stores each frame once.
    """

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
        if isinstance(episodes, TransitionEpisodes):
            return self._stack_transitions(batch, episodes)
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

    def _stack_transitions(
        self, batch: dict[str, dict[str, np.ndarray]], episodes: TransitionEpisodes
    ) -> dict[str, dict[str, np.ndarray]]:
        """`OBS` and `NEXT_OBS` of replayed transitions: each block's lookback frames, then `o_t` (or
        `o_{t+n}`) from the block's columns, or from the episode objects once a piece asked for them."""
        current = self._transition_observations(episodes)
        for block_index, block in enumerate(episodes.blocks):
            module_id = block.module_id or DEFAULT_MODULE_ID
            for column in (Columns.OBS, Columns.NEXT_OBS):
                frames = self._stacks(self._lookback(block, column), current[block_index][column])
                columns = batch.setdefault(module_id, {})
                columns[column] = np.concatenate([columns[column], frames]) if column in columns else frames
        return batch

    def _transition_observations(self, episodes: TransitionEpisodes) -> list[dict[str, np.ndarray]]:
        """Per block, `{OBS: o_t, NEXT_OBS: o_{t+n}}` of its rows."""
        blocks = episodes.blocks
        if not episodes.touched:
            return [
                {column: block.columns[column] for column in (Columns.OBS, Columns.NEXT_OBS)}
                for block in blocks
            ]
        out, start = [], 0
        for block in blocks:
            rows = episodes[start : start + len(block)]
            start += len(block)
            out.append(
                {
                    Columns.OBS: np.stack([episode.get_observations(0) for episode in rows]),
                    Columns.NEXT_OBS: np.stack([episode.get_observations(-1) for episode in rows]),
                }
            )
        return out

    def _lookback(self, block: TransitionBlock, column: str) -> np.ndarray:
        """The `num_frames - 1` frames before `column`'s observations in `block`."""
        need = self.num_frames - 1
        lookback = None if block.lookback is None else block.lookback.get(column)
        have = 0 if lookback is None else np.shape(lookback)[1]
        if have < need:
            raise ConnectorError(
                f"learner.FrameStacking(num_frames={self.num_frames}) needs the {need} observations before each "
                f"replayed {column!r}, but the replayed transitions hold {have}. Fix: sample the replay buffer "
                f"with lookback={need} (off-policy algorithms do: it is the learner pipeline's "
                "required_episode_lookback)."
            )
        return np.asarray(lookback)[:, have - need :]

    def _stacks(self, lookback: np.ndarray, current: np.ndarray) -> np.ndarray:
        """`[B, L, ..., C]` earlier frames and `[B, ..., C]` current ones as `[B, ..., (L + 1) * C]` stacks."""
        frames = np.concatenate([lookback, np.asarray(current)[:, None]], axis=1)  # [B, k, ..., C]
        stacked = np.moveaxis(frames, 1, -2)
        return stacked.reshape(*stacked.shape[:-2], -1)

    def __repr__(self) -> str:
        return f"learner.FrameStacking(num_frames={self.num_frames})"
