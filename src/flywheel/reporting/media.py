"""What a result leaf that is not a number shows as in TensorBoard: an image, images, a video, a histogram.

The shapes follow RLlib's and Ray Tune's convention (numpy arrays, uint8 in [0, 255] or float in
[0, 1]; the channel axis C holds 1, 3 or 4 channels, first or last)::

    [H, W]              one grayscale image
    [C, H, W] [H, W, C] one image
    [N, C, H, W] ...    a batch of images (shown side by side)
    [N, T, C, H, W] ... N videos of T frames (each an animated GIF, `<key>/<n>` when N > 1)
    [k] (numbers)       a histogram; so is a list of numbers

A single video therefore needs its leading axis: `video[None]`. A list (e.g. an "item_series" of
videos) shows each element under `<key>/<i>`.
"""

from __future__ import annotations

import io
import numbers
from typing import NamedTuple

import numpy as np

from flywheel.utils.frames import to_uint8

VIDEO_FPS = 20
_CHANNELS = (1, 3, 4)


class Media(NamedTuple):
    """One thing to draw: `kind` is "image" ([H, W, C]), "images" ([N, H, W, C]), "video" ([T, H, W, C],
    uint8) or "histogram" (1-D)."""

    tag: str
    kind: str
    data: np.ndarray


def to_media(tag: str, value: object) -> list[Media] | None:
    """What `value` draws as under `tag` (several for lists and video batches), or None if nothing."""
    if isinstance(value, list | tuple):
        if value and all(_is_number(v) for v in value):
            return [Media(tag, "histogram", np.asarray(value, dtype=np.float64))]
        parts = [to_media(f"{tag}/{i}", item) for i, item in enumerate(value)]
        if not parts or None in parts:
            return None
        return [m for part in parts if part is not None for m in part]
    if not isinstance(value, np.ndarray) or value.size == 0 or value.dtype.kind not in "biuf":
        return None
    if value.ndim == 1:
        return [Media(tag, "histogram", value.astype(np.float64))]
    if value.ndim == 2:
        return [Media(tag, "image", value[..., None])]
    if value.ndim == 3:
        image = _channels_last(value, axis=0)
        return None if image is None else [Media(tag, "image", image)]
    if value.ndim == 4:
        images = _channels_last(value, axis=1)
        return None if images is None else [Media(tag, "images", images)]
    if value.ndim == 5:
        videos = _channels_last(value, axis=2)
        if videos is None:
            return None
        tags = [tag] if len(videos) == 1 else [f"{tag}/{n}" for n in range(len(videos))]
        return [Media(t, "video", to_uint8(video)) for t, video in zip(tags, videos)]
    return None


def gif_bytes(frames: np.ndarray, fps: int = VIDEO_FPS) -> bytes:
    """`frames` ([T, H, W, C] uint8, C in 1, 3, 4) as an animated, looping GIF."""
    from PIL import Image  # Pillow comes with tensorboard

    channels = frames.shape[-1]
    pictures = [
        Image.fromarray(
            frame[..., 0] if channels == 1 else frame[..., :3], mode="L" if channels == 1 else "RGB"
        )
        for frame in frames
    ]
    buffer = io.BytesIO()
    pictures[0].save(
        buffer, format="GIF", save_all=True, append_images=pictures[1:], duration=1000 / fps, loop=0
    )
    return buffer.getvalue()


def _channels_last(array: np.ndarray, axis: int) -> np.ndarray | None:
    """`array` with its channel axis last: channels first at `axis` if that axis has 1, 3 or 4
    entries (RLlib's convention), else already last if the last one does; else None."""
    if array.shape[axis] in _CHANNELS:
        return np.moveaxis(array, axis, -1)
    return array if array.shape[-1] in _CHANNELS else None


def _is_number(value: object) -> bool:
    return isinstance(value, numbers.Real)
