"""Items of a gymnasium space as episodes store them: the space's plain mirror, fill items and one-hot encoding.

A `LookbackBuffer` holds one item per step (an int for ``Discrete``, an array for ``Box``, a
dict/tuple of those for ``Dict``/``Tuple`` spaces) while sampling, and stacked arrays (one per
leaf) once finalized (`flywheel.utils.nested.stack`). The helpers here work on a plain mirror of
the space (`space_struct`), because dm-tree cannot rebuild gymnasium's ``Dict``/``Tuple`` spaces.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import tree

_FLAT_SPACES = frozenset(
    (gym.spaces.Box, gym.spaces.Discrete, gym.spaces.MultiDiscrete, gym.spaces.MultiBinary)
)


def space_struct(space: gym.Space | None) -> Any:
    """Returns ``space`` as plain nested dicts/tuples of leaf spaces (``None`` stays ``None``)."""
    if space is None or type(space) in _FLAT_SPACES:  # (the common spaces, without ABC checks)
        return space
    if isinstance(space, gym.spaces.Dict):
        return {key: space_struct(sub) for key, sub in space.spaces.items()}
    if isinstance(space, gym.spaces.Tuple):
        return tuple(space_struct(sub) for sub in space.spaces)
    return space


def map_leaves(fn, data: Any, *rest: Any) -> Any:
    """Applies ``fn`` to an array, or leaf-wise to a dict/tuple of arrays."""
    if isinstance(data, np.ndarray):
        return fn(data, *rest)
    return tree.map_structure(fn, data, *rest, check_types=False)


def leaves(data: Any) -> list:
    """The leaves of nested dicts/tuples (lists and arrays are leaves)."""
    if isinstance(data, dict):
        return [leaf for value in data.values() for leaf in leaves(value)]
    if isinstance(data, tuple):
        return [leaf for value in data for leaf in leaves(value)]
    return [data]


def unstack(data: Any) -> list:
    """Stacked arrays (or a dict/tuple of them) → list of per-item values."""
    if isinstance(data, np.ndarray | list):
        return list(data)
    n = len(tree.flatten(data)[0])
    return [tree.map_structure(lambda a, i=i: a[i], data) for i in range(n)]


def fill_item(struct: Any, fill: Any, one_hot_discrete: bool = False) -> Any:
    """One item of value ``fill`` shaped like an item of the space (one-hot leaves: like their encoding)."""
    if struct is None:
        return fill

    def leaf(space: gym.Space) -> Any:
        width = _one_hot_width(space) if one_hot_discrete else None
        if width is not None:
            return np.full(width, fill, np.float32)
        return np.full(space.shape or (), fill, space.dtype)[()]

    return tree.map_structure(leaf, struct)


def one_hot(data: Any, struct: Any) -> Any:
    """``data`` (one item, or stacked items with leading batch axes) with its ``Discrete`` and
    ``MultiDiscrete`` leaves one-hot encoded as float32 (``MultiDiscrete``: the encodings of its
    components concatenated)."""

    def leaf(space: gym.Space, value: Any) -> Any:
        if isinstance(space, gym.spaces.Discrete):
            return np.eye(space.n, dtype=np.float32)[np.asarray(value) - space.start]
        if isinstance(space, gym.spaces.MultiDiscrete):
            value = np.asarray(value)
            batch_shape = value.shape[: value.ndim - space.nvec.ndim]
            value = (value - space.start).reshape(*batch_shape, -1)
            eyes = [np.eye(n, dtype=np.float32) for n in space.nvec.reshape(-1)]
            return np.concatenate([eye[value[..., i]] for i, eye in enumerate(eyes)], axis=-1)
        return value

    return tree.map_structure_up_to(struct, leaf, struct, data)


def _one_hot_width(space: gym.Space) -> int | None:
    if isinstance(space, gym.spaces.Discrete):
        return int(space.n)
    if isinstance(space, gym.spaces.MultiDiscrete):
        return int(space.nvec.sum())
    return None
