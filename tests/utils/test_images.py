"""flywheel.utils.images (RLlib's ray.rllib.utils.images): area resize and RGB luma, dtypes kept."""

import numpy as np

from flywheel.utils.images import resize, rgb2gray


def test_resize_shrinks_by_block_means_to_height_by_width():
    image = np.arange(24, dtype=np.float32).reshape(4, 6)
    small = resize(image, height=2, width=3)
    assert small.shape == (2, 3) and small.dtype == np.float32
    # Each output pixel is the mean of its 2x2 block.
    np.testing.assert_allclose(small, [[3.5, 5.5, 7.5], [15.5, 17.5, 19.5]])


def test_resize_keeps_uint8_and_channels():
    image = np.zeros((8, 4, 3), np.uint8)
    image[:, :2] = 200
    small = resize(image, 2, 2)
    assert small.shape == (2, 2, 3) and small.dtype == np.uint8
    assert small[:, :, 0].tolist() == [[200, 0], [200, 0]]


def test_rgb2gray_weights_red_green_blue_as_luma():
    pixels = np.array([[[255, 0, 0], [0, 255, 0], [0, 0, 255], [100, 100, 100]]], np.uint8)
    gray = rgb2gray(pixels)
    assert gray.shape == (1, 4) and gray.dtype == np.uint8
    assert gray.tolist() == [[76, 150, 29, 100]]
