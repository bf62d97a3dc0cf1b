"""Nested columns: the one place that walks flywheel's nested data (dicts and tuples of arrays, as
Dict and Tuple spaces give them) leaf by leaf.

Leaves are numpy arrays or torch tensors; an index may be either kind and is converted to the
leaf's (a numpy index of a tensor moves to the tensor's device). Lists are leaves here, not
structure (a column of infos stays one list).
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np


def take(data: Any, index: Any) -> Any:
    """`leaf[index]` for every leaf of `data` (rows of a column: an int, a slice or an index array)."""
    if isinstance(data, dict):
        return {key: take(value, index) for key, value in data.items()}
    if isinstance(data, tuple):
        return tuple(take(value, index) for value in data)
    return data[_index_for(data, index)]


def concat(parts: list[Any]) -> Any:
    """The leaves of `parts` (all with the same structure) concatenated along their first axis."""
    first = parts[0]
    if isinstance(first, dict):
        return {key: concat([part[key] for part in parts]) for key in first}
    if isinstance(first, tuple):
        return tuple(concat([part[i] for part in parts]) for i in range(len(first)))
    if _is_tensor(first):
        return sys.modules["torch"].cat(parts)
    return np.concatenate(parts)


def _index_for(leaf: Any, index: Any) -> Any:
    if _is_tensor(leaf) and isinstance(index, np.ndarray):
        return sys.modules["torch"].from_numpy(index).to(leaf.device)
    if isinstance(leaf, np.ndarray) and _is_tensor(index):
        return index.cpu().numpy()
    return index


def _is_tensor(value: Any) -> bool:
    # Without importing torch: no tensor exists before torch is imported.
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.Tensor)
