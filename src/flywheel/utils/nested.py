"""Nested columns: the one place that walks flywheel's nested data (dicts and tuples of arrays, as
Dict and Tuple spaces give them) leaf by leaf.

Leaves are numpy arrays or torch tensors (and, in rows to stack, numbers); an index may be either
kind and is converted to the leaf's (a numpy index of a tensor moves to the tensor's device). Lists
are leaves here, not structure (a column of infos stays one list; a row that is a list is one
leaf), as in RLlib's `batch()`. dm-tree would walk into lists, so the walks are written here.

- `stack(rows, struct=None)`: rows (one item per step or per episode) → one array per leaf with a
  new leading axis.
- `concat(parts)`: columns of the same structure joined along their first axis.
- `take(data, index)`: rows of a column.
- `first_leaf(data)` / `num_rows(data)`: the first array, and its length (a batch's row count).
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
import tree

from flywheel.errors import ArgumentError

_STRUCTURES = (dict, tuple)  # (a tuple, not `dict | tuple`: isinstance is faster with it)


def stack(rows: Any, struct: Any = None) -> Any:
    """A list of rows (each a value, or dicts/tuples of values, all of the same structure) as one
    array per leaf with a new leading axis; anything that is not a list is taken as stacked
    already and returned as it is (finalized episodes hold arrays where running ones hold lists).

    `struct` is a space as `flywheel.episodes.space_items.space_struct` mirrors it (plain
    dicts/tuples of leaf spaces): the arrays get the space's dtypes, and an empty list stacks to
    zero rows of the space's shapes. Without it numpy infers each leaf's dtype, and an empty list
    stacks as numpy infers it too: zero float64 rows. Tensor leaves stack to a tensor.
    """
    if type(rows) is not list:
        return rows
    if struct is None:
        if rows and isinstance(rows[0], _STRUCTURES):
            return _stack_nested(rows, None)
        return np.asarray(rows)  # flat rows: one call, several times faster than np.stack
    if not rows:
        return tree.map_structure(lambda space: np.zeros((0, *(space.shape or ())), space.dtype), struct)
    if isinstance(struct, _STRUCTURES):
        return _stack_nested(rows, struct)
    return np.asarray(rows, dtype=struct.dtype)


def concat(parts: list[Any]) -> Any:
    """The leaves of `parts` (all with the same structure) concatenated along their first axis
    (parts may also be lists of rows); an array or tensor leaf of a single part is returned as it is,
    not copied."""
    if not parts:
        raise ArgumentError("concat() got no parts to join. Fix: pass a list of at least one column.")
    first = parts[0]
    if isinstance(first, dict):
        return {key: concat([part[key] for part in parts]) for key in first}
    if isinstance(first, tuple):
        return tuple(concat([part[i] for part in parts]) for i in range(len(first)))
    if len(parts) == 1 and (isinstance(first, np.ndarray) or _is_tensor(first)):
        return first
    if _is_tensor(first):
        return sys.modules["torch"].cat(parts)
    return np.concatenate(parts)


def take(data: Any, index: Any) -> Any:
    """`leaf[index]` for every leaf of `data` (rows of a column: an int, a slice or an index array)."""
    if isinstance(data, dict):
        return {key: take(value, index) for key, value in data.items()}
    if isinstance(data, tuple):
        return tuple(take(value, index) for value in data)
    return data[_index_for(data, index)]


def first_leaf(data: Any) -> Any:
    """The first leaf of nested dicts/tuples (`data` itself when it is a leaf)."""
    while isinstance(data, _STRUCTURES):
        data = next(iter(data.values())) if isinstance(data, dict) else data[0]
    return data


def num_rows(data: Any) -> int:
    """The leading dimension of a column (of its first leaf), or of a dict of columns' first one."""
    return len(first_leaf(data))


def _stack_nested(rows: list[Any], struct: Any) -> Any:
    """`stack` leaf by leaf: the structure is the first row's (or `struct`'s, which gives the dtypes)."""
    shape = rows[0] if struct is None else struct
    if isinstance(shape, dict):
        stacked = {}
        for key in shape:
            try:
                column = [row[key] for row in rows]
            except (KeyError, TypeError, IndexError) as error:
                raise _mismatch(rows, shape) from error
            stacked[key] = _stack_nested(column, None if struct is None else struct[key])
        return stacked
    if isinstance(shape, tuple):
        if not all(isinstance(row, tuple | list) and len(row) == len(shape) for row in rows):
            raise _mismatch(rows, shape)
        return tuple(
            _stack_nested([row[i] for row in rows], None if struct is None else struct[i])
            for i in range(len(shape))
        )
    if _is_tensor(rows[0]):
        return sys.modules["torch"].stack(rows)
    return np.asarray(rows, dtype=None if struct is None else struct.dtype)


def _mismatch(rows: list[Any], shape: Any) -> ArgumentError:
    expected = f"dicts with keys {list(shape)}" if isinstance(shape, dict) else f"tuples of {len(shape)}"
    odd = next(row for row in rows if not _like(row, shape))
    return ArgumentError(
        f"stack() needs rows of one structure: expected {expected}, got a row {odd!r}. Fix: give every "
        "row the same keys (or tuple length) as the first row (or the space)."
    )


def _like(row: Any, shape: Any) -> bool:
    if isinstance(shape, dict):
        return isinstance(row, dict) and all(key in row for key in shape)
    return isinstance(row, tuple | list) and len(row) == len(shape)


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
