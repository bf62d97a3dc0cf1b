"""Image helpers RLlib users import from `ray.rllib.utils.images`: OpenCV's area resize and grayscale.

They need OpenCV (`pip install 'flywheel[ale]'` installs `opencv-python-headless`).
"""

from __future__ import annotations

import cv2
import numpy as np


def resize(img: np.ndarray, height: int, width: int) -> np.ndarray:
    """`img` ([H, W] or [H, W, C]) resized to `height` x `width` by area averaging (OpenCV's
    `INTER_AREA`, the best for shrinking); the dtype is kept."""
    return cv2.resize(img, (width, height), interpolation=cv2.INTER_AREA)


def rgb2gray(img: np.ndarray) -> np.ndarray:
    """The [H, W] luma of an RGB image [H, W, 3]: 0.299 R + 0.587 G + 0.114 B (OpenCV's
    `COLOR_RGB2GRAY`), rounded for uint8 images."""
    return cv2.cvtColor(img, cv2.COLOR_RGB2GRAY)
