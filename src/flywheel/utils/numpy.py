"""NumPy helpers with RLlib's names and behaviour (`ray.rllib.utils.numpy`).

Importing this module does not import torch: a tensor can only exist once torch is imported, so
`convert_to_numpy` looks torch up in `sys.modules`.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
import tree

from flywheel.errors import ArgumentError

SMALL_NUMBER = 1e-6
LARGE_INTEGER = 100_000_000
MIN_LOG_NN_OUTPUT = -5
MAX_LOG_NN_OUTPUT = 2


def convert_to_numpy(x: Any, reduce_type: bool = True) -> Any:
    """`x` (any nesting of dicts, lists and tuples) with every torch tensor made numpy, on CPU.

    A 0-d tensor becomes a Python number, any other tensor a numpy array (detached). With
    `reduce_type` (the default), float arrays become float32 and int64 arrays int32, as RLlib does;
    other leaves stay as they are.

        convert_to_numpy({"a": torch.ones(2, dtype=torch.float64), "b": torch.tensor(3)})
        # {"a": array([1., 1.], dtype=float32), "b": 3}
    """
    torch = sys.modules.get("torch")

    def leaf(item: Any) -> Any:
        if torch is not None and isinstance(item, torch.Tensor):
            item = item.item() if item.dim() == 0 else item.detach().cpu().numpy()
        if reduce_type and isinstance(item, np.ndarray):
            if np.issubdtype(item.dtype, np.floating):
                return item.astype(np.float32)
            if item.dtype == np.int64:
                return item.astype(np.int32)
        return item

    return tree.map_structure(leaf, x)


def one_hot(
    x: Any,
    depth: int = 0,
    on_value: float = 1.0,
    off_value: float = 0.0,
    dtype: Any = np.float32,
) -> np.ndarray:
    """One-hot encodes the ints in `x` (any shape) along a new last axis of size `depth`.

    `depth=0` infers it as `max(x) + 1`; a bool array always gets depth 2.

        one_hot(np.array([0, 2]), depth=3)  # [[1, 0, 0], [0, 0, 1]] as float32
    """
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(x, torch.Tensor):
        x = x.detach().cpu().numpy()
    x = np.asarray(x)
    if x.dtype == np.bool_:
        x, depth = x.astype(np.int64), 2
    if depth == 0:
        depth = int(np.max(x)) + 1
    if x.size and (np.max(x) >= depth or np.min(x) < 0):
        raise ArgumentError(
            f"one_hot: every index must be in [0, {depth}); got values from {np.min(x)} to {np.max(x)}. "
            "Fix: pass depth=<number of classes> (or check the indices)."
        )
    out = np.full((*x.shape, depth), off_value, dtype=dtype)
    np.put_along_axis(out, x[..., None].astype(np.intp), on_value, axis=-1)
    return out


def softmax(x: Any, axis: int = -1, epsilon: float | None = None) -> np.ndarray:
    """`exp(x) / sum(exp(x))` along `axis`, floored at `epsilon` (default `SMALL_NUMBER`), as RLlib's.

    Shifted by the max before `exp`, so large inputs do not overflow (RLlib's does not shift; the
    result is the same wherever RLlib's is finite).
    """
    x = np.asarray(x)
    if x.dtype.kind in "biu":
        x = x.astype(np.float64)
    exp = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return np.maximum(exp / np.sum(exp, axis=axis, keepdims=True), epsilon or SMALL_NUMBER)
