"""mp4 files: `save_video` writes frames, `VideoWriter` the videos a training result holds.

    writer = VideoWriter("runs/pong/videos")
    writer.write(algo.train())   # evaluation/env_runners/episode_videos -> <dir>/evaluation_..._videos_0_000005.mp4

Videos are found by shape, as TensorBoard draws them (`flywheel.reporting.media`): `[N, T, C, H, W]`
or `[N, T, H, W, C]` arrays, also inside lists. Writing needs the `video` extra (imageio with its
ffmpeg); without it the writer warns once and writes nothing.
"""

from __future__ import annotations

import os
import re
import warnings
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from flywheel.errors import FlywheelError
from flywheel.reporting.media import VIDEO_FPS, to_media
from flywheel.reporting.writers import ResultWriter, flatten_result, is_plain
from flywheel.utils.frames import to_uint8

_NO_IMAGEIO = "needs imageio and imageio-ffmpeg. Fix: pip install 'flywheel[video]'."


def save_video(frames: np.ndarray, path: str | os.PathLike, *, fps: int = VIDEO_FPS) -> str:
    """Writes `frames` (`[T, H, W, C]`, C 1 or 3; uint8, or floats in [0, 1]) as an H.264 mp4 at `path`."""
    try:
        import imageio.v2 as imageio
    except ImportError as e:
        raise FlywheelError(f"Saving the video {path} {_NO_IMAGEIO}") from e
    frames = np.asarray(frames)
    if frames.ndim != 4 or frames.shape[-1] not in (1, 3):
        raise FlywheelError(
            f"save_video expects frames [T, H, W, C] with C 1 or 3, got shape {tuple(frames.shape)}. "
            "Fix: stack the RGB frames env.render() returns (render_mode='rgb_array')."
        )
    frames = to_uint8(frames)
    if frames.shape[-1] == 1:
        frames = np.repeat(frames, 3, axis=-1)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    # yuv420p (what players expect) needs even sides: pad by one row/column rather than rescale.
    pad = ((0, 0), (0, frames.shape[1] % 2), (0, frames.shape[2] % 2), (0, 0))
    imageio.mimwrite(str(path), list(np.pad(frames, pad)), fps=fps, macro_block_size=1)
    return str(path)


class VideoWriter(ResultWriter):
    """Saves each video in a result as `<video_dir>/<tag>_<step:06d>.mp4`: the tag is the flattened key
    (plus `/<i>` for the i-th video of a list) with `/` as `_`, the step the result's `step_key`.
    `paths` lists the files written so far."""

    def __init__(self, video_dir: str | os.PathLike, *, step_key: str = "training_iteration") -> None:
        self.video_dir = Path(video_dir)
        self.step_key = step_key
        self.paths: list[str] = []
        self._disabled = False

    def write(self, result: Mapping[str, object]) -> None:
        if self._disabled:
            return
        flat = flatten_result(result)
        step = int(flat.get(self.step_key, len(self.paths)))
        for key, value in flat.items():
            if is_plain(value):
                continue
            for media in to_media(key, value) or ():
                if media.kind == "video":
                    self._save(media.tag, media.data, step)

    def _save(self, tag: str, frames: np.ndarray, step: int) -> None:
        name = re.sub(r"[^\w.-]+", "_", tag.replace("/", "_"))
        path = self.video_dir / f"{name}_{step:06d}.mp4"
        try:
            self.paths.append(save_video(frames, path))
        except FlywheelError as e:
            if not isinstance(e.__cause__, ImportError):
                raise
            self._disabled = True
            warnings.warn(f"VideoWriter skips videos: writing mp4 files {_NO_IMAGEIO}", stacklevel=3)

    def close(self) -> None:
        """Nothing to flush: every video is written when its result comes."""
