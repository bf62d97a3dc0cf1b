"""`LookbackBuffer` (RLlib's `InfiniteLookbackBuffer`): one column of episode data plus the history in front of it.

An episode chunk that continues an earlier chunk still needs a little of the past (the
previous action for ``PrevActionsPrevRewards``, the last frames for ``FrameStacking``). The
buffer keeps that past in front of the chunk's own data: ``data[:lookback]`` is history,
``data[lookback:]`` belongs to the chunk. This module is the one place where the index
arithmetic lives (chunk-relative indices, ``neg_index_as_lookback``, ``fill`` padding,
``one_hot_discrete``); episodes only delegate to it.

While sampling, ``data`` is a Python list (appends are O(1)); `finalize` stacks it once into
an array, or, for ``Dict``/``Tuple`` spaces, a dict/tuple of arrays (leaf-wise).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.utils.env_checker import data_equivalence

from flywheel.episodes.space_items import fill_item, leaves, map_leaves, one_hot, space_struct, unstack
from flywheel.errors import EpisodeError, EpisodeIndexError
from flywheel.utils.nested import first_leaf, stack

Indices = int | slice | list[int] | None


class LookbackBuffer:
    """One column of an episode: ``lookback`` items of history, then the chunk's items.

    Indices are chunk-relative: ``0`` is the chunk's first item, ``-1`` the newest one. Negative
    indices normally count back from the newest item (and may run on into the history); with
    ``neg_index_as_lookback=True`` they count back from the chunk's start instead (``-1`` = the
    last history item). Slices may step backwards (``buffer[3:0:-1]``). Positions outside the
    stored data raise `EpisodeIndexError` for ints and lists, and are left out of slices,
    unless ``fill`` is given: then they read as ``fill`` shaped like one item (from the space,
    or, once finalized, from the stored arrays). ``one_hot_discrete=True`` returns the
    ``Discrete``/``MultiDiscrete`` parts of the items one-hot encoded (fill items: all ``fill``).

    ``buffer[i]``, ``buffer[a:b]`` and ``buffer[i] = x`` are `get` and `set`; ``len(buffer)``
    and iteration cover the chunk's items only.
    """

    __slots__ = ("data", "lookback", "_space", "_struct")

    def __init__(self, data: Any = None, lookback: int = 0, space: gym.Space | None = None):
        self.data = data = [] if data is None else data
        if lookback:  # (no min(): runners build buffers at every reset and cut)
            total = len(data) if type(data) is list else self.len_incl_lookback()
            if lookback > total:
                lookback = total
        self.lookback = lookback
        self.space = space

    # ------------------------------------------------------------------------ properties

    @property
    def space(self) -> gym.Space | None:
        """The space one item belongs to (used for finalized dtypes, ``fill`` items and one-hot)."""
        return self._space

    @space.setter
    def space(self, value: gym.Space | None) -> None:
        self._space = value
        self._struct = space_struct(value)

    @property
    def space_struct(self) -> Any:
        """The space as plain nested dicts/tuples of leaf spaces."""
        return self._struct

    @property
    def finalized(self) -> bool:
        """Whether `finalize` stacked ``data`` into arrays (appends then concatenate)."""
        return type(self.data) is not list

    def len_incl_lookback(self) -> int:
        """Number of stored items, history included."""
        data = self.data
        if type(data) is list or isinstance(data, np.ndarray):
            return len(data)
        return len(first_leaf(data))

    def __len__(self) -> int:
        """Number of the chunk's own items (without the lookback)."""
        data = self.data
        return (len(data) if type(data) is list else self.len_incl_lookback()) - self.lookback

    def __iter__(self) -> Iterator[Any]:
        return (self.get(i) for i in range(len(self)))

    def __getitem__(self, indices: Indices) -> Any:
        return self.get(indices)

    def __setitem__(self, indices: Indices, value: Any) -> None:
        self.set(value, at_indices=indices)

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, LookbackBuffer)
            and self.lookback == other.lookback
            and self.finalized == other.finalized
            and self._space == other._space
            and data_equivalence(self.data, other.data)
        )

    # Mutable and compared by value: with `__eq__` defined here and no `__hash__`, Python makes it unhashable.

    def __repr__(self) -> str:
        return f"LookbackBuffer(len={len(self)}, lookback={self.lookback}, finalized={self.finalized})"

    # ---------------------------------------------------------------------- growing

    def append(self, item: Any) -> None:
        """Appends one item (to a finalized buffer by concatenating, which copies)."""
        if type(self.data) is list:
            self.data.append(item)
        else:
            self.extend(stack([item], self._struct))

    def extend(self, items: Any) -> None:
        """Appends several items: a list of items, or stacked arrays (a dict/tuple of them for nested items)."""
        if type(self.data) is list:
            self.data.extend(items if type(items) is list else unstack(map_leaves(np.array, items)))
            return
        if type(items) is list:
            if not items:
                return
            items = stack(items, self._struct)
        self.data = map_leaves(lambda a, b: np.concatenate([a, np.asarray(b, a.dtype)]), self.data, items)

    def concat(self, other: LookbackBuffer) -> None:
        """Appends ``other``'s chunk items (not its lookback)."""
        self.extend(other.get())

    def pop(self, index: int = -1) -> Any:
        """Removes and returns the item at ``index`` (chunk-relative, as in `get`)."""
        total = self.len_incl_lookback()
        position = self._position(index, False, total)
        if not 0 <= position < total:
            self._raise_out_of_range(index, "pop")
        item = self._take(position)
        if type(self.data) is list:
            del self.data[position]
        else:
            last = position == total - 1  # the last item: a view of the rest, no copy
            self.data = map_leaves(
                lambda a: a[:position] if last else np.delete(a, position, axis=0), self.data
            )
        if position < self.lookback:
            self.lookback -= 1
        return item

    def finalize(self) -> None:
        """Stacks the list into arrays using the space's dtypes; a no-op when already finalized."""
        if type(self.data) is list:
            self.data = stack(self.data, self._struct)

    # ---------------------------------------------------------------------- reading

    def get(
        self,
        indices: Indices = None,
        neg_index_as_lookback: bool = False,
        fill: Any = None,
        one_hot_discrete: bool = False,
    ) -> Any:
        """Returns one item (int index) or several (slice, list of ints, None = the whole chunk).

        Several items come as a list from a list-based buffer, stacked arrays from a finalized one.
        (RLlib takes the options as keywords only; episodes pass them by position, which is faster.)
        """
        data = self.data
        if (
            type(indices) is int
            and type(data) is list
            and fill is None
            and not (neg_index_as_lookback or one_hot_discrete)
        ):
            # The per-step path (e.g. ``get_observations(-1)``): a plain list index.
            try:
                return data[indices + self.lookback if indices >= 0 else indices]
            except IndexError:
                pass  # Out of range: the general path below raises the explanatory error.
        if one_hot_discrete:
            return self._get_one_hot(indices, neg_index_as_lookback, fill)
        total = self.len_incl_lookback()
        if indices is None:
            return self._take(slice(self.lookback, total))
        if isinstance(indices, slice):
            front, valid, back = self._slice_parts(indices, neg_index_as_lookback, total)
            items = self._take(_python_slice(valid))
            if fill is None or not (front or back):
                return items
            return self._pad(items, front, back, fill)
        if isinstance(indices, int | np.integer):
            return self._item_or_fill(
                self._position(int(indices), neg_index_as_lookback, total), fill, indices
            )
        items = [
            self._item_or_fill(self._position(int(i), neg_index_as_lookback, total), fill, i) for i in indices
        ]
        return stack(items) if self.finalized else items

    # ---------------------------------------------------------------------- writing

    def set(self, new_data: Any, at_indices: Indices = None, neg_index_as_lookback: bool = False) -> None:
        """Overwrites stored items in place (positions as in `get`; no ``fill``, no growing).

        An int index takes one item; a slice, list of ints or None (the whole chunk) takes one
        item per position (a list, or stacked arrays on a finalized buffer).
        """
        data = self.data
        if type(at_indices) is int and type(data) is list and not neg_index_as_lookback:
            # The per-step path (e.g. a connector rewriting the newest observation): a plain list index.
            try:
                data[at_indices + self.lookback if at_indices >= 0 else at_indices] = new_data
                return
            except IndexError:
                pass  # Out of range: the general path below raises the explanatory error.
        total = self.len_incl_lookback()
        if isinstance(at_indices, int | np.integer):
            position = self._position(int(at_indices), neg_index_as_lookback, total)
            if not 0 <= position < total:
                self._raise_out_of_range(at_indices, "set")
            if type(self.data) is list or isinstance(self.data, np.ndarray):
                self.data[position] = new_data
            else:
                map_leaves(lambda a, v: a.__setitem__(position, v), self.data, new_data)
            return
        if at_indices is None or isinstance(at_indices, slice):
            slc = slice(None) if at_indices is None else at_indices
            front, valid, back = self._slice_parts(slc, neg_index_as_lookback, total)
            if front or back:
                self._raise_out_of_range(at_indices, "set")
            where: slice | list[int] = _python_slice(valid)
            n = len(valid)
        else:
            where = [self._position(int(i), neg_index_as_lookback, total) for i in at_indices]
            if any(not 0 <= p < total for p in where):
                self._raise_out_of_range(at_indices, "set")
            n = len(where)
        self._set_many(where, n, new_data, at_indices)

    # ------------------------------------------------------------- flywheel extras

    def tail(self, n: int) -> list:
        """Returns the last ``n`` stored items (fewer if there are fewer) as a fresh list.

        Finalized data is copied first, so the returned items do not keep the big arrays alive.
        """
        data = self.data
        if type(data) is list:
            return data[-n:] if n else []
        start = max(self.len_incl_lookback() - n, 0)
        return unstack(map_leaves(lambda a: a[start:].copy(), data))

    def sliced(self, start: int, stop: int, lookback: int | None = None) -> LookbackBuffer:
        """Returns a new buffer with the chunk items ``[start, stop)`` (``0 <= start <= stop``).

        Up to ``lookback`` items before ``start`` (default: this buffer's lookback) become the
        new buffer's history. Lists are copied shallowly, arrays fully, so setters on the new
        buffer never write into this one.
        """
        wanted = self.lookback if lookback is None else lookback
        new_lookback = min(wanted, self.lookback + start)
        data = self._take(slice(self.lookback + start - new_lookback, self.lookback + stop))
        if type(data) is not list:
            data = map_leaves(np.copy, data)
        return LookbackBuffer(data, new_lookback, self._space)

    def with_item(self, item: Any) -> LookbackBuffer:
        """A new buffer viewing this one's data with ``item`` appended (this buffer is unchanged)."""
        view = LookbackBuffer(
            list(self.data) if type(self.data) is list else self.data, self.lookback, self._space
        )
        view.append(item)  # (Appending to a finalized buffer makes new arrays.)
        return view

    # ------------------------------------------------------------------------ state

    def get_state(self) -> dict[str, Any]:
        """Plain data (a copy of the list, or the arrays) and the space, for transport and checkpoints."""
        data = list(self.data) if type(self.data) is list else self.data
        return {"data": data, "lookback": self.lookback, "finalized": self.finalized, "space": self._space}

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> LookbackBuffer:
        """Rebuilds a buffer from `get_state` output."""
        return cls(data=state["data"], lookback=state["lookback"], space=state.get("space"))

    # --------------------------------------------------------------------- internals

    def _position(self, index: int, neg_index_as_lookback: bool, total: int) -> int:
        """Chunk-relative index → position in ``data`` (may lie outside the data)."""
        if index >= 0 or neg_index_as_lookback:
            return self.lookback + index
        return total + index

    def _slice_parts(self, slc: slice, neg_index_as_lookback: bool, total: int) -> tuple[int, range, int]:
        """(positions before the data, the positions inside it, positions after it) of ``slc``.

        "Before" and "after" follow the slice's direction: a backwards slice starts on the right.
        A slice wholly outside the data counts its span as fill, in either direction.
        """
        step = 1 if slc.step is None else slc.step
        if step == 0:
            raise EpisodeError(f"Expected a slice with a non-zero step, got {slc}.")
        if slc.start is None:
            start = self.lookback if step > 0 else total - 1
        else:
            start = self._position(slc.start, neg_index_as_lookback, total)
        if slc.stop is None:
            stop = total if step > 0 else self.lookback - 1
        else:
            stop = self._position(slc.stop, neg_index_as_lookback, total)
        if (start < 0 and stop < 0) or (start >= total and stop >= total):
            # Wholly outside the data: every position is fill, whichever way the slice points
            # (RLlib reads `buffer.get(slice(-10, -12), fill=0)` as two fill items too).
            return len(range(min(start, stop), max(start, stop), abs(step))), range(0), 0
        if step > 0:
            front = len(range(start, min(stop, 0), step)) if start < 0 else 0
            first = start + front * step
            valid = range(first, min(stop, total), step) if first < total else range(0)
        else:
            front = len(range(start, max(stop, total - 1), step)) if start >= total else 0
            first = start + front * step
            valid = range(first, max(stop, -1), step) if first >= 0 else range(0)
        return front, valid, len(range(start, stop, step)) - front - len(valid)

    def _take(self, where: int | slice) -> Any:
        """The stored item(s) at a position or a (Python) slice of positions inside the data."""
        data = self.data
        if type(data) is list or isinstance(data, np.ndarray):
            return data[where]
        return map_leaves(lambda a: a[where], data)

    def _item_or_fill(self, position: int, fill: Any, index: Any) -> Any:
        if 0 <= position < self.len_incl_lookback():
            return self._take(position)
        if fill is None:
            self._raise_out_of_range(index, "get")
        return self._fill_item(fill)

    def _fill_item(self, fill: Any) -> Any:
        """One item of value ``fill``, shaped like the space's (or the stored arrays') items."""
        if type(self.data) is list:
            return fill_item(self._struct, fill)
        return map_leaves(lambda a: np.full(a.shape[1:], fill, a.dtype)[()], self.data)

    def _pad(self, items: Any, front: int, back: int, fill: Any) -> Any:
        if type(items) is list:
            item = self._fill_item(fill)
            return [item] * front + items + [item] * back
        return map_leaves(
            lambda a: np.concatenate(
                [
                    np.full((front, *a.shape[1:]), fill, a.dtype),
                    a,
                    np.full((back, *a.shape[1:]), fill, a.dtype),
                ]
            ),
            items,
        )

    def _get_one_hot(self, indices: Indices, neg_index_as_lookback: bool, fill: Any) -> Any:
        if self._struct is None:
            raise EpisodeError(
                "get(..., one_hot_discrete=True) needs the buffer's space to know each Discrete's size, but "
                "this buffer has none; give the episode an observation_space/action_space (or the buffer a space)."
            )
        total = self.len_incl_lookback()
        if isinstance(indices, int | np.integer):
            return self._one_hot_at(self._position(int(indices), neg_index_as_lookback, total), fill, indices)
        if indices is None or isinstance(indices, slice):
            slc = slice(None) if indices is None else indices
            front, valid, back = self._slice_parts(slc, neg_index_as_lookback, total)
            positions = [-1] * front + list(valid) + [total] * back if fill is not None else list(valid)
        else:
            positions = [self._position(int(i), neg_index_as_lookback, total) for i in indices]
        items = [self._one_hot_at(p, fill, p - self.lookback) for p in positions]
        return stack(items) if self.finalized else items

    def _one_hot_at(self, position: int, fill: Any, index: Any) -> Any:
        if 0 <= position < self.len_incl_lookback():
            return one_hot(self._take(position), self._struct)
        if fill is None:
            self._raise_out_of_range(index, "get")
        return fill_item(self._struct, fill, one_hot_discrete=True)

    def _set_many(self, where: slice | list[int], n: int, new_data: Any, at_indices: Indices) -> None:
        if type(self.data) is list:
            new_items = list(new_data) if type(new_data) is list else unstack(new_data)
            if len(new_items) != n:
                self._raise_wrong_count(n, len(new_items), at_indices)
            if isinstance(where, slice):
                self.data[where] = new_items
            else:
                for position, item in zip(where, new_items):
                    self.data[position] = item
            return
        for leaf in leaves(new_data):
            got = len(leaf) if np.ndim(leaf) else 1
            if got != n:
                self._raise_wrong_count(n, got, at_indices)
        map_leaves(lambda a, v: a.__setitem__(where, v), self.data, new_data)

    def _raise_out_of_range(self, index: Any, what: str) -> None:
        fix = (
            "pass fill=... to pad positions outside the data"
            if what == "get"
            else "only stored items can change"
        )
        raise EpisodeIndexError(
            f"Cannot {what} at index {index!r}: out of range of the buffer's {self.lookback} lookback and "
            f"{len(self)} chunk items (indices count from the chunk start, negative ones from its end, or "
            f"into the lookback with neg_index_as_lookback=True); {fix}."
        )

    @staticmethod
    def _raise_wrong_count(n: int, got: int, at_indices: Indices) -> None:
        raise EpisodeIndexError(
            f"Cannot set {got} new items at {at_indices!r}, which covers {n} positions; pass exactly one item "
            f"per position (setters never change a buffer's length)."
        )


InfiniteLookbackBuffer = LookbackBuffer
"""RLlib's name for `LookbackBuffer` (the same class)."""


def _python_slice(valid: range) -> slice:
    if not valid:
        return slice(0, 0)
    return slice(valid.start, valid.stop if valid.stop >= 0 else None, valid.step)
