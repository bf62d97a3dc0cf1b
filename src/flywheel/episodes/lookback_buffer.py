"""`LookbackBuffer`: one column of episode data plus the history in front of it.

An episode chunk that continues an earlier chunk still needs a little of the past (the
previous action for ``PrevActionsPrevRewards``, the last frames for ``FrameStacking``). The
buffer keeps that past in front of the chunk's own data: ``data[:lookback]`` is history,
``data[lookback:]`` belongs to the chunk. This module is the one place where the index
arithmetic lives (chunk-relative indices, ``neg_index_as_lookback``, ``fill`` padding);
episodes only delegate to it.

While sampling, ``data`` is a Python list (appends are O(1)); ``to_numpy()`` stacks it once
into an array, or, for ``Dict``/``Tuple`` spaces, a dict/tuple of arrays (leaf-wise).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import tree

from flywheel.errors import EpisodeError

Indices = int | slice | list[int] | None


_FLAT_SPACES = frozenset(
    (gym.spaces.Box, gym.spaces.Discrete, gym.spaces.MultiDiscrete, gym.spaces.MultiBinary)
)


def space_struct(space: gym.Space | None) -> Any:
    """Returns ``space`` as plain nested dicts/tuples of leaf spaces (``None`` stays ``None``).

    dm-tree cannot rebuild gymnasium's ``Dict``/``Tuple`` spaces, so stacking and fill items
    work on this plain mirror of the space instead.
    """
    if space is None or type(space) in _FLAT_SPACES:  # (the common spaces, without ABC checks)
        return space
    if isinstance(space, gym.spaces.Dict):
        return {key: space_struct(sub) for key, sub in space.spaces.items()}
    if isinstance(space, gym.spaces.Tuple):
        return tuple(space_struct(sub) for sub in space.spaces)
    return space


def stack_items(items: list, struct: Any = None) -> Any:
    """Stacks a list of items into one array (nested items: one array per leaf).

    With a (plain, see `space_struct`) space the arrays get the space's dtypes and an empty
    list still gets the right trailing shape; without one numpy infers both.
    """
    if struct is None:
        if items and _is_nested(items[0]):
            return tree.map_structure(lambda *leaves: np.asarray(leaves), *items, check_types=False)
        return np.asarray(items)
    if not items:
        return tree.map_structure(lambda sp: np.zeros((0, *(sp.shape or ())), sp.dtype), struct)
    if isinstance(struct, dict | tuple):  # `space_struct` output: nested exactly when a dict/tuple
        return tree.map_structure(
            lambda sp, *leaves: np.asarray(leaves, dtype=sp.dtype), struct, *items, check_types=False
        )
    return np.asarray(items, dtype=struct.dtype)


def _is_nested(item: Any) -> bool:
    """`tree.is_nested`, answered without a call into dm-tree for the common flat items (to_numpy
    asks once per column of every finished episode)."""
    if isinstance(item, np.ndarray | np.generic | float | int):
        return False
    return tree.is_nested(item)


def _map(fn, data: Any, *rest: Any) -> Any:
    """Applies ``fn`` to an array, or leaf-wise to a dict/tuple of arrays."""
    if isinstance(data, np.ndarray):
        return fn(data, *rest)
    return tree.map_structure(fn, data, *rest, check_types=False)


def _unstack(data: Any) -> list:
    """Stacked arrays (or a dict/tuple of them) → list of per-item values."""
    if isinstance(data, np.ndarray):
        return list(data)
    n = len(tree.flatten(data)[0])
    return [tree.map_structure(lambda a, i=i: a[i], data) for i in range(n)]


class LookbackBuffer:
    """One column of an episode: ``lookback`` items of history, then the chunk's items.

    Indices are chunk-relative: ``0`` is the chunk's first item, ``-1`` the newest one. Negative
    indices normally count back from the newest item (and may run on into the history); with
    ``neg_index_as_lookback=True`` they count back from the chunk's start instead (``-1`` = the
    last history item). Positions outside the stored data raise `EpisodeError`, unless ``fill``
    is given: then they are padded with ``fill`` shaped like one item (from the space, or, once
    numpy'd, from the stored arrays). Slices clip to the stored data when ``fill`` is None,
    like Python slices do.
    """

    __slots__ = ("data", "lookback", "_space", "_struct")

    def __init__(self, data: Any = None, lookback: int = 0, space: gym.Space | None = None):
        self.data = [] if data is None else data
        self.lookback = lookback
        self.space = space

    @property
    def space(self) -> gym.Space | None:
        """The space one item belongs to (used for `to_numpy` dtypes and ``fill`` items)."""
        return self._space

    @space.setter
    def space(self, value: gym.Space | None) -> None:
        self._space = value
        self._struct = space_struct(value)

    @property
    def is_numpy(self) -> bool:
        """Whether ``data`` has been stacked into arrays (then it can no longer grow)."""
        return not isinstance(self.data, list)

    def total_len(self) -> int:
        """Number of stored items, history included."""
        data = self.data
        if type(data) is list or isinstance(data, np.ndarray):
            return len(data)
        return len(tree.flatten(data)[0])

    def __len__(self) -> int:
        """Number of the chunk's own items (without the lookback)."""
        return self.total_len() - self.lookback

    def __repr__(self) -> str:
        return f"LookbackBuffer(len={len(self)}, lookback={self.lookback}, numpy={self.is_numpy})"

    def append(self, item: Any) -> None:
        """Appends one item (list-based buffers only)."""
        self.data.append(item)

    def to_numpy(self) -> None:
        """Stacks the list into arrays using the space's dtypes; a no-op when already numpy'd."""
        if isinstance(self.data, list):
            self.data = stack_items(self.data, self._struct)

    def get(self, indices: Indices = None, neg_index_as_lookback: bool = False, fill: Any = None) -> Any:
        """Returns one item (int index) or several (slice, list of ints, None = whole chunk).

        Several items come as a list from a list-based buffer, stacked arrays from a numpy'd one.
        """
        data = self.data
        if type(indices) is int and type(data) is list and fill is None and not neg_index_as_lookback:
            # The per-step path (e.g. ``get_observations(-1)``): a plain list index.
            try:
                return data[indices + self.lookback if indices >= 0 else indices]
            except IndexError:
                pass  # Out of range: the general path below raises the explanatory error.
        if indices is None:
            return self._range(self.lookback, self.total_len(), None)
        if isinstance(indices, slice):
            start, stop, step = self._slice_bounds(indices, neg_index_as_lookback)
            items = self._range(start, stop, fill)
            if step == 1:
                return items
            return _map(lambda a: a[::step], items) if self.is_numpy else items[::step]
        if isinstance(indices, int | np.integer):
            return self._item(self._position(int(indices), neg_index_as_lookback), fill)
        items = [self._item(self._position(int(i), neg_index_as_lookback), fill) for i in indices]
        return stack_items(items) if self.is_numpy else items

    def set(self, new_data: Any, at_indices: Indices = None, neg_index_as_lookback: bool = False) -> None:
        """Overwrites stored items in place (positions as in `get`; no ``fill``, no growing).

        An int index takes one item; a slice, list of ints or None (whole chunk) takes one
        item per position (a list, or stacked arrays on a numpy'd buffer).
        """
        total = self.total_len()
        if isinstance(at_indices, int | np.integer):
            position = self._position(int(at_indices), neg_index_as_lookback)
            self._check_inside(position, position, total, at_indices)
            self._set_item(position, new_data)
            return
        if at_indices is None or isinstance(at_indices, slice):
            slc = slice(None) if at_indices is None else at_indices
            start, stop, step = self._slice_bounds(slc, neg_index_as_lookback)
            where = slice(start, stop, step)
            first, last, n = start, stop - 1, len(range(start, stop, step))
        else:
            where = [self._position(int(i), neg_index_as_lookback) for i in at_indices]
            first, last, n = min(where, default=0), max(where, default=0), len(where)
        if n:
            self._check_inside(first, last, total, at_indices)
        self._set_many(where, n, new_data)

    def tail(self, n: int) -> list:
        """Returns the last ``n`` stored items (fewer if there are fewer) as a fresh list.

        Numpy'd data is copied first, so the returned items do not keep the big arrays alive.
        """
        start = max(self.total_len() - n, 0)
        if isinstance(self.data, list):
            return self.data[start:]
        return _unstack(_map(lambda a: a[start:].copy(), self.data))

    def sliced(self, start: int, stop: int, lookback: int | None = None) -> LookbackBuffer:
        """Returns a new buffer with the chunk items ``[start, stop)`` (``0 <= start <= stop``).

        Up to ``lookback`` items before ``start`` (default: this buffer's lookback) become the
        new buffer's history. Lists are copied shallowly, arrays fully, so setters on the new
        buffer never write into this one.
        """
        wanted = self.lookback if lookback is None else lookback
        new_lookback = min(wanted, self.lookback + start)
        data = self._range(self.lookback + start - new_lookback, self.lookback + stop, None)
        if not isinstance(data, list):
            data = _map(np.copy, data)
        return LookbackBuffer(data, new_lookback, self._space)

    def extend_from(self, other: LookbackBuffer, skip: int = 0) -> None:
        """Appends ``other``'s chunk items (without its lookback and first ``skip`` items)."""
        start = other.lookback + skip
        if isinstance(self.data, list):
            self.data.extend(other.tail(other.total_len() - start))
            return
        items = other._range(start, other.total_len(), None)
        if isinstance(items, list):
            items = stack_items(items, self._struct)
        self.data = _map(lambda a, b: np.concatenate([a, b]), self.data, items)

    def get_state(self) -> dict[str, Any]:
        """Plain data (a copy of the list, or the arrays) for transport and checkpoints."""
        data = list(self.data) if isinstance(self.data, list) else self.data
        return {"data": data, "lookback": self.lookback}

    @classmethod
    def from_state(cls, state: dict[str, Any], space: gym.Space | None = None) -> LookbackBuffer:
        """Rebuilds a buffer from `get_state` output."""
        return cls(data=state["data"], lookback=state["lookback"], space=space)

    def _position(self, index: int, neg_index_as_lookback: bool) -> int:
        """Chunk-relative index → position in ``data`` (may lie outside the data)."""
        if index >= 0 or neg_index_as_lookback:
            return self.lookback + index
        return self.total_len() + index

    def _slice_bounds(self, slc: slice, neg_index_as_lookback: bool) -> tuple[int, int, int]:
        step = 1 if slc.step is None else slc.step
        if step < 1:
            raise EpisodeError(
                f"Expected a slice with a positive step, got {slc}; reverse the result instead."
            )
        start = self.lookback if slc.start is None else self._position(slc.start, neg_index_as_lookback)
        stop = self.total_len() if slc.stop is None else self._position(slc.stop, neg_index_as_lookback)
        return start, max(stop, start), step

    def _range(self, start: int, stop: int, fill: Any) -> Any:
        """Items at positions ``[start, stop)``: clipped to the data, or padded with ``fill``."""
        total = self.total_len()
        lo, hi = min(max(start, 0), total), min(max(stop, 0), total)
        left, right = max(min(stop, 0) - start, 0), max(stop - max(start, total), 0)
        data = self.data
        if isinstance(data, list):
            items = data[lo:hi]
            if fill is not None and (left or right):
                item = self._fill_item(fill)
                items = [item] * left + items + [item] * right
            return items
        items = _map(lambda a: a[lo:hi], data)
        if fill is None or not (left or right):
            return items
        return _map(
            lambda a: np.concatenate(
                [
                    np.full((left, *a.shape[1:]), fill, a.dtype),
                    a,
                    np.full((right, *a.shape[1:]), fill, a.dtype),
                ]
            ),
            items,
        )

    def _item(self, position: int, fill: Any) -> Any:
        if 0 <= position < self.total_len():
            data = self.data
            return (
                data[position] if isinstance(data, list | np.ndarray) else _map(lambda a: a[position], data)
            )
        if fill is None:
            raise EpisodeError(
                f"Index out of range: position {position - self.lookback} relative to the chunk start, but "
                f"the buffer holds {self.lookback} lookback and {len(self)} chunk items; pass fill=... to "
                f"pad, or neg_index_as_lookback=True to count negative indices into the lookback."
            )
        return self._fill_item(fill)

    def _fill_item(self, fill: Any) -> Any:
        """One item of value ``fill``, shaped like the space's (or the stored arrays') items."""
        if isinstance(self.data, list):
            if self._struct is None:
                return fill
            return tree.map_structure(lambda sp: np.full(sp.shape or (), fill, sp.dtype)[()], self._struct)
        return _map(lambda a: np.full(a.shape[1:], fill, a.dtype)[()], self.data)

    def _check_inside(self, first: int, last: int, total: int, at_indices: Indices) -> None:
        if first < 0 or last >= total:
            raise EpisodeError(
                f"Cannot set at {at_indices!r}: it reaches positions {first - self.lookback} to "
                f"{last - self.lookback} relative to the chunk start, but the buffer holds {self.lookback} "
                f"lookback and {len(self)} chunk items; setters only overwrite existing items."
            )

    def _set_item(self, position: int, new_data: Any) -> None:
        if isinstance(self.data, list | np.ndarray):
            self.data[position] = new_data
        else:
            _map(lambda a, v: a.__setitem__(position, v), self.data, new_data)

    def _set_many(self, where: slice | list[int], n: int, new_data: Any) -> None:
        if isinstance(self.data, list):
            new_items = list(new_data)
            if len(new_items) != n:
                raise EpisodeError(
                    f"Expected {n} new items for {n} positions, got {len(new_items)}; pass exactly one item "
                    f"per position (setters never change an episode's length)."
                )
            if isinstance(where, slice):
                self.data[where] = new_items
            else:
                for position, item in zip(where, new_items):
                    self.data[position] = item
            return
        try:
            _map(lambda a, v: a.__setitem__(where, v), self.data, new_data)
        except ValueError as error:
            raise EpisodeError(
                f"Expected new data for {n} positions shaped like the stored items; numpy said: {error}"
            ) from error
