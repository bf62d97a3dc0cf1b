"""Episode videos: with ``render_env=True``, the first sub-env of a runner records its episodes.

    config.evaluation(evaluation_interval=5, evaluation_config={"render_env": True})

Runners then build every sub-env in `RecordEpisodeFrames` (only sub-env 0 renders), gymnasium ids with
``render_mode="rgb_array"``. When an episode of sub-env 0 ends, `log_episode_video` (an
``on_episode_end`` hook the config adds) logs its frames as ``episode_videos``: a list with the newest
video of each runner, each ``[1, T, H, W, C]`` uint8 (small frames enlarged to 84 pixels a side). TensorBoard draws them as GIFs, and the
`VideoWriter` of `flywheel.reporting` saves them as mp4 files.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from flywheel.errors import EnvError
from flywheel.utils.frames import enlarge, to_uint8

EPISODE_VIDEOS = "episode_videos"
"""Metric key of the recorded videos (under `env_runners`, e.g. `evaluation/env_runners/episode_videos`)."""
_POP_FRAMES = "flywheel_pop_episode_frames"


class RecordEpisodeFrames(gym.Wrapper):
    """Keeps the `render()` frames of the current episode (when `record`) and, once it ends, of the
    finished one, until `flywheel_pop_episode_frames()` takes them."""

    def __init__(self, env: gym.Env, *, record: bool) -> None:
        super().__init__(env)
        self.record = record
        self._frames: list[np.ndarray] = []
        self._finished: np.ndarray | None = None

    def reset(self, **kwargs: Any) -> tuple[Any, dict]:
        result = self.env.reset(**kwargs)
        if self.record:
            self._frames = [self._render()]
        return result

    def step(self, action: Any) -> tuple[Any, Any, bool, bool, dict]:
        result = self.env.step(action)
        if self.record:
            self._frames.append(self._render())
            if result[2] or result[3]:
                self._finished, self._frames = np.stack(self._frames), []
        return result

    def flywheel_pop_episode_frames(self, unfinished: bool = False) -> np.ndarray | None:
        """The frames `[T, H, W, C]` of the last finished episode (None if none), or with `unfinished`
        those of the current one so far; forgotten afterwards."""
        if unfinished:
            frames, self._frames = self._frames, []
            return np.stack(frames) if frames else None
        frames, self._finished = self._finished, None
        return frames

    def _render(self) -> np.ndarray:
        frame = self.env.render()
        if not isinstance(frame, np.ndarray) or frame.ndim not in (2, 3):
            raise EnvError(
                f"render_env=True records videos from env.render(), which returned {type(frame).__name__} "
                f"{getattr(frame, 'shape', '')} (render_mode={self.env.render_mode!r}); expected an RGB frame "
                "[H, W, 3]. Fix: create the env with render_mode='rgb_array' (flywheel does so for gymnasium "
                "ids; a creator or env class must pass it itself)."
            )
        return enlarge(to_uint8(frame if frame.ndim == 3 else frame[..., None]))


def record_sub_env(env: gym.Env, vector_index: int) -> RecordEpisodeFrames:
    """`env` wrapped for `render_env`: sub-env 0 records, the others only answer the frames call."""
    return RecordEpisodeFrames(env, record=vector_index == 0)


def log_episode_video(*, env: Any, env_index: int, metrics_logger: Any, **kwargs: Any) -> None:
    """``on_episode_end`` hook: logs the finished episode of sub-env 0 as ``episode_videos`` (the
    newest per runner and reduce)."""
    if env_index != 0:
        return
    frames = env.call(_POP_FRAMES)[0]
    if frames is not None:
        metrics_logger.log_value(EPISODE_VIDEOS, frames[None], reduce="item_series", window=1)
