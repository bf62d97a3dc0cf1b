"""`ColumnStore`: preallocated numpy rows for one column of replay data.

A replay buffer keeps observations, actions and extra model outputs of many episodes in
fixed-size arrays, so that a sampled batch is one fancy-index per array instead of one slice
per episode. Items may be nested (``Dict``/``Tuple`` spaces): each leaf gets its own array.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import tree

from flywheel.errors import EpisodeError


def take(data: object, index: Any) -> Any:
    """``data[index]`` for an array, or leaf-wise for a dict/tuple of arrays."""
    if isinstance(data, np.ndarray):
        return data[index]
    return tree.map_structure(lambda leaf: leaf[index], data)


class ColumnStore:
    """``size`` rows of one (possibly nested) column, shaped and typed like a first example.

    ``example`` holds stacked items (leading dimension = items); only its structure, trailing
    shapes and dtypes are used. Untouched rows cost no memory (``np.zeros`` pages lazily).
    """

    __slots__ = ("name", "_struct", "_leaves")

    def __init__(self, name: str, example: Any, size: int):
        self.name = name
        self._struct = tree.map_structure(lambda _: None, example)
        self._leaves = [
            np.zeros((size, *np.shape(leaf)[1:]), np.asarray(leaf).dtype) for leaf in tree.flatten(example)
        ]

    @property
    def size(self) -> int:
        return len(self._leaves[0])

    def check(self, data: object) -> None:
        """Raises `EpisodeError` unless stacked items ``data`` have the stored items' structure and shapes."""
        leaves = tree.flatten(data)
        if len(leaves) != len(self._leaves) or any(
            np.shape(new)[1:] != old.shape[1:] for new, old in zip(leaves, self._leaves)
        ):
            raise EpisodeError(
                f"Expected {self.name} items shaped like the stored ones "
                f"{[old.shape[1:] for old in self._leaves]}, got {[np.shape(new)[1:] for new in leaves]}; "
                f"one replay buffer holds one observation/action layout (use one buffer per module)."
            )

    def write(self, rows: np.ndarray, data: object) -> None:
        """Writes stacked items ``data`` (leading dimension ``len(rows)``, checked by `check`) into ``rows``."""
        for store, new in zip(self._leaves, tree.flatten(data)):
            store[rows] = new

    def read(self, rows: np.ndarray) -> Any:
        """The items at ``rows``, stacked (a copy), nested like the example."""
        leaves = [store[rows] for store in self._leaves]
        return leaves[0] if self._struct is None else tree.unflatten_as(self._struct, leaves)

    def resize(self, size: int) -> None:
        """Grows (or shrinks) to ``size`` rows, keeping the first rows' contents."""
        resized = []
        for store in self._leaves:
            new = np.zeros((size, *store.shape[1:]), store.dtype)
            n = min(size, len(store))
            new[:n] = store[:n]
            resized.append(new)
        self._leaves = resized
