"""Video frames as uint8 pictures: shared by the episode recorder, TensorBoard's GIFs and mp4 files."""

from __future__ import annotations

import math

import numpy as np

MIN_VIDEO_SIDE = 84
"""Frames whose shorter side is smaller (e.g. MinAtar's 10x10) are enlarged to at least this, pixel by pixel."""


def to_uint8(frames: np.ndarray) -> np.ndarray:
    """`frames` as uint8: unchanged if they are, else floats in [0, 1] scaled to [0, 255] (clipped)."""
    if frames.dtype == np.uint8:
        return frames
    return (np.clip(frames.astype(np.float64), 0.0, 1.0) * 255.0).round().astype(np.uint8)


def enlarge(frame: np.ndarray, min_side: int = MIN_VIDEO_SIDE) -> np.ndarray:
    """`frame` ([H, W, C]) with every pixel repeated k x k times, k the smallest integer making the
    shorter side at least `min_side` (1: unchanged)."""
    factor = math.ceil(min_side / max(1, min(frame.shape[0], frame.shape[1])))
    if factor <= 1:
        return frame
    return np.repeat(np.repeat(frame, factor, axis=0), factor, axis=1)
