"""Reducers that keep logged values as they are: "item" (the latest) and "item_series" (a list).

Use them for values a mean makes no sense of: images, videos, action histograms, a config string.
Values stay as logged, except torch tensors, which become numpy arrays (0-d ones plain numbers) so
states stay plain data. Both clear on `reduce`, as RLlib's do: a result shows each item once.
"""

from collections import deque
from typing import Any

from flywheel.metrics.stats import Stats
from flywheel.utils.numpy import convert_to_numpy


class ItemStats(Stats):
    """The latest logged value; `reduce` returns it and clears it (then None until the next log).

    Merging takes the newest item of the states merged since the last reduce (the last state in
    `aggregate`'s list that logged one).
    """

    __slots__ = ("_item", "_new")
    numeric = False

    def __init__(self) -> None:
        self.mode = "item"
        self._item: Any = None
        self._new = False

    def push(self, value: object) -> None:
        self._item = convert_to_numpy(value, reduce_type=False)
        self._new = True

    def peek(self) -> Any:
        return self._item

    def reduce(self) -> Any:
        item, self._item, self._new = self._item, None, False
        return item

    def merge(self, state: dict) -> None:
        if state["new"]:
            self._item = state["item"]
            self._new = True

    def get_state(self, new_only: bool = False) -> dict:
        return {"reduce": "item", "item": self._item, "new": self._new}

    def set_state(self, state: dict) -> None:
        self._item = state["item"]
        self._new = state["new"]


class ItemSeriesStats(Stats):
    """The list of values logged since the last reduce (the newest `window` of them, if given).

    `reduce` returns the list (`[]` when nothing was logged) and clears it; `peek` returns the list,
    or NaN when it is empty (RLlib's convention). Merging appends the other states' items.
    """

    __slots__ = ("window", "_items")
    numeric = False

    def __init__(self, window: int | None = None) -> None:
        self.mode = "item_series"
        self.window = window
        self._items: deque = deque(maxlen=window)

    def push(self, value: object) -> None:
        self._items.append(convert_to_numpy(value, reduce_type=False))

    def peek(self) -> Any:
        return list(self._items) if self._items else float("nan")

    def reduce(self) -> list:
        items = list(self._items)
        self._items.clear()
        return items

    def merge(self, state: dict) -> None:
        self._items.extend(state["items"])

    def get_state(self, new_only: bool = False) -> dict:
        return {"reduce": "item_series", "window": self.window, "items": list(self._items)}

    def set_state(self, state: dict) -> None:
        self._items.extend(state["items"])
