"""TensorFlow-style conv padding arithmetic, as RLlib's `same_padding` / `valid_padding` helpers.

Custom modules written for RLlib (e.g. its tiny Atari CNN example) size their conv stacks with these:

    padding, out_size = same_padding((84, 84), kernel_size=4, stride_size=2)
    layers = [nn.ZeroPad2d(padding), nn.Conv2d(c_in, c_out, 4, 2)]   # out_size == (42, 42)
"""

from __future__ import annotations

import math
from collections.abc import Sequence


def _pair(value: int | float | Sequence[int]) -> tuple[int, int]:
    if isinstance(value, int | float):
        return int(value), int(value)
    return int(value[0]), int(value[1])


def same_padding(
    in_size: Sequence[int], filter_size: int | Sequence[int], stride_size: int | Sequence[int]
) -> tuple[tuple[int, int, int, int], tuple[int, int]]:
    """`((left, right, top, bottom), (out_height, out_width))`: the zero padding (for `nn.ZeroPad2d`)
    that makes a conv of `filter_size` and `stride_size` on `in_size` (height, width) output
    `ceil(in / stride)` per side, and that output size."""
    (height, width), (fh, fw), (sh, sw) = _pair(in_size), _pair(filter_size), _pair(stride_size)
    out_height, out_width = math.ceil(height / sh), math.ceil(width / sw)
    pad_h = (out_height - 1) * sh + fh - height
    pad_w = (out_width - 1) * sw + fw - width
    return (pad_w // 2, pad_w - pad_w // 2, pad_h // 2, pad_h - pad_h // 2), (out_height, out_width)


def valid_padding(
    in_size: Sequence[int], filter_size: int | Sequence[int], stride_size: int | Sequence[int]
) -> tuple[int, int]:
    """`(out_height, out_width)` of an unpadded conv of `filter_size` and `stride_size` on `in_size`."""
    (height, width), (fh, fw), (sh, sw) = _pair(in_size), _pair(filter_size), _pair(stride_size)
    return math.ceil((height - fh + 1) / sh), math.ceil((width - fw + 1) / sw)
