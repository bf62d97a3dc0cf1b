"""The numeric reducers behind `MetricsLogger`: one small class per family of reduce modes.

Each `Stats` holds one metric key. `push` is the hot path (an append or an add), `peek` reads the
current value without changing anything, `reduce` reads it and clears what the mode says, and
`merge` folds in another logger's state of the same key exactly. States are plain data (lists,
numbers, strings, None) so they travel between processes and into checkpoints as they are.

What "new" means: every stats object knows how much of its data arrived since its last
`reduce` (`num_new` values, or the `new` amount of a sum). `merge` takes only that part of the
incoming state, so a consumer that aggregates a producer's state once per producer reduce never
counts a value twice, even when the producer keeps a window of older values.

NaN values are ignored by every reduction, as RLlib's nan-aware reducers do: a sum skips them, a
mean / min / max is taken over the other values (NaN when there are none), an ema skips them.
"""

import math
import numbers
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable
from itertools import islice
from typing import Any

import numpy as np

from flywheel.errors import MetricsError

Number = int | float

DEFAULT_EMA_COEFF = 0.01
DEFAULT_PERCENTILES = (0, 50, 75, 90, 95, 99, 100)


def to_number(value: object, key: str) -> Number:
    """Turns a logged value (Python, numpy or torch scalar) into a plain int or float.

    Converting at log time keeps every state plain data; `key` only names the metric in errors.
    """
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    item = getattr(value, "item", None)
    if item is not None:
        try:
            number = item()
        except (ValueError, RuntimeError):
            raise MetricsError(
                f"Metric {key!r} expects a single number; got a {type(value).__name__} of shape "
                f"{tuple(getattr(value, 'shape', ()))}. Log a scalar (e.g. `x.mean()`), give each "
                "element its own key, or log it with reduce='item' or 'item_series' to keep it as it is."
            ) from None
        if isinstance(number, bool | int | float):
            return int(number) if isinstance(number, bool) else number
    elif isinstance(value, numbers.Real):
        return float(value)
    raise MetricsError(
        f"Metric {key!r} expects a number (int, float, or a numpy/torch scalar); got "
        f"{type(value).__name__} {value!r:.60}. Log numbers here; other values (lists, arrays, "
        "images) with reduce='item' or 'item_series'."
    )


class Stats(ABC):
    """What the logger needs from a reducer; subclasses implement one family of modes."""

    __slots__ = ("mode",)
    window: int | None = None
    ema_coeff: float | None = None
    percentiles: list | None = None
    with_throughput: bool = False
    numeric: bool = True
    """Whether logged values are turned into plain numbers (`to_number`) before `push`."""

    @abstractmethod
    def push(self, value: object) -> None:
        """Adds one logged value (the hot path: an append or an add)."""

    @abstractmethod
    def peek(self) -> Any:
        """The current value, changing nothing."""

    @abstractmethod
    def reduce(self) -> Any:
        """The current value; clears what the mode says (see the class docstring)."""

    @abstractmethod
    def merge(self, state: dict) -> None:
        """Folds in the part of another logger's state of this key that is new since its last reduce."""

    @abstractmethod
    def get_state(self, new_only: bool = False) -> dict:
        """Plain-data state; `new_only` keeps only what arrived since the last reduce (for handing over)."""

    @abstractmethod
    def set_state(self, state: dict) -> None:
        """Restores a `get_state` output into this (freshly built) object."""


def _without_nan(values) -> list:
    return [v for v in values if v == v]


def _mean(values) -> float:
    result = sum(values) / len(values)
    if result != result:  # a NaN among the values (the only way a finite count gives NaN)
        values = _without_nan(values)
        return sum(values) / len(values) if values else math.nan
    return result


def _extreme(pick):
    def reduce(values) -> float:
        # Python's min/max skip a NaN unless it comes first; then the slow path drops them.
        result = pick(values)
        if result != result:
            values = _without_nan(values)
            return float(pick(values)) if values else math.nan
        return float(result)

    return reduce


def _sum(values) -> Number:
    result = sum(values)
    return sum(_without_nan(values)) if result != result else result


class SeriesStats(Stats):
    """mean / min / max / sum over raw values.

    With a window: over the last `window` values ever pushed, kept across reduces. Without: over
    the values pushed since the last reduce, which clears them; with none pushed the previous
    reduced value is kept, so a result key does not flicker away. Never any value: NaN (a windowed
    sum: 0). Raw values (not partial means) are kept so that merging gives the true mean of the
    union. "sum" is a series only with a window (else `SumStats`).
    """

    __slots__ = ("window", "_fn", "_values", "_num_new", "_last")
    _fn: Callable[[Any], Any]

    def __init__(self, mode: str, window: int | None = None) -> None:
        self.mode = mode
        self.window = window
        fn = _SERIES_FNS.get(mode)
        if fn is not None:  # else a subclass sets its own reduction (percentiles)
            self._fn = fn
        self._values: deque | list = deque(maxlen=window) if window else []
        self._num_new = 0
        self._last: Any = None

    def push(self, value: Number) -> None:
        self._values.append(value)
        self._num_new += 1

    def peek(self) -> Any:
        if self._values:
            return self._fn(self._values)
        return self._empty() if self._last is None else self._last

    def reduce(self) -> Any:
        value = self.peek()
        if self.window is None:
            self._values = []
        self._last = value
        self._num_new = 0
        return value

    def merge(self, state: dict) -> None:
        values, num_new = state["values"], state["num_new"]
        if num_new:
            self._values.extend(values[len(values) - num_new :])
            self._num_new += num_new

    def get_state(self, new_only: bool = False) -> dict:
        values = self._values
        size = len(values)
        num_new = min(self._num_new, size)
        if new_only and self.window is None:
            pass  # `reduce` (the only caller) replaces this list right after: no copy needed
        elif new_only and num_new < size:  # the newest few of a window
            values = list(islice(reversed(values), num_new))
            values.reverse()
        else:
            values = list(values)
        return {
            "reduce": self.mode,
            "window": self.window,
            "values": values,
            "num_new": num_new,
            "last": self._last,
        }

    def set_state(self, state: dict) -> None:
        self._values.extend(state["values"])
        self._num_new = state["num_new"]
        self._last = state["last"]

    def _empty(self) -> Any:
        return 0 if self.mode == "sum" else math.nan


_SERIES_FNS = {"mean": _mean, "min": _extreme(min), "max": _extreme(max), "sum": _sum}


class PercentilesStats(SeriesStats):
    """A series reduced to `{p: value}` for each requested p in [0, 100] (RLlib's "percentiles").

    Values between the sorted samples are interpolated linearly (`numpy.percentile`'s default);
    never any value: `{p: None}`. Windows and merging work as for the other series; NaN values are
    refused (a percentile of NaN means nothing), as RLlib does.
    """

    __slots__ = ("percentiles", "_key")
    percentiles: list

    def __init__(self, key: str, window: int | None = None, percentiles: list | None = None) -> None:
        super().__init__("percentiles", window)
        self.percentiles = list(percentiles or DEFAULT_PERCENTILES)
        self._key = key
        self._fn = self._reduce_values

    def push(self, value: Number) -> None:
        if value != value:
            raise MetricsError(
                f"Metric {self._key!r}: percentiles cannot hold NaN. Skip the value, or log it under a "
                "key with reduce='mean' (which ignores NaN)."
            )
        super().push(value)

    def get_state(self, new_only: bool = False) -> dict:
        return {**super().get_state(new_only), "percentiles": self.percentiles}

    def _reduce_values(self, values) -> dict:
        found = np.percentile(sorted(values), self.percentiles)
        return {p: float(v) for p, v in zip(self.percentiles, found)}

    def _empty(self) -> dict:
        return dict.fromkeys(self.percentiles)


class SumStats(Stats):
    """sum (of the values since the last reduce) or lifetime_sum (a running total on a root logger).

    On a root logger a lifetime sum is never cleared. Elsewhere (runners, learners) its `reduce`
    returns and clears the amount added since the last reduce, as RLlib's non-root loggers do: the
    root adds up what each producer hands over. Ints stay ints; NaN values are skipped. The amount
    added since the last reduce (`increment`) is what merging passes on and what throughput
    divides by the elapsed time.
    """

    __slots__ = ("with_throughput", "_keeps_total", "_total", "_new")

    def __init__(self, mode: str, with_throughput: bool = False, root: bool = False) -> None:
        self.mode = mode
        self.with_throughput = with_throughput
        self._keeps_total = mode == "lifetime_sum" and root
        self._total: Number = 0  # the lifetime total as of the last reduce; stays 0 unless kept
        self._new: Number = 0

    @property
    def increment(self) -> Number:
        """The amount added since the last reduce."""
        return self._new

    def push(self, value: Number) -> None:
        if value == value:
            self._new += value

    def peek(self) -> Number:
        return self._total + self._new

    def reduce(self) -> Number:
        value = self._total + self._new
        if self._keeps_total:
            self._total = value
        # A key that ever summed floats keeps reporting floats (0.0, not 0) for empty periods.
        self._new = 0.0 if isinstance(value, float) else 0
        return value

    def merge(self, state: dict) -> None:
        self._new += state["new"]

    def get_state(self, new_only: bool = False) -> dict:
        return {
            "reduce": self.mode,
            "with_throughput": self.with_throughput,
            "total": self._total,
            "new": self._new,
        }

    def set_state(self, state: dict) -> None:
        self._total = state["total"] if self._keeps_total else 0
        self._new = state["new"]


class EmaStats(Stats):
    """Exponential moving average: `ema = (1 - c) * ema + c * value`, the first value taken as is.

    Kept across reduces; NaN values are skipped. Merging sets the value to the mean of the emas
    merged since the last reduce (each producer already smoothed its own values; smoothing their
    emas again would lag).
    """

    __slots__ = ("ema_coeff", "_value", "_merged")
    ema_coeff: float

    def __init__(self, ema_coeff: float = DEFAULT_EMA_COEFF) -> None:
        self.mode = "ema"
        self.ema_coeff = ema_coeff
        self._value: Number | None = None
        self._merged: list[Number] = []

    def push(self, value: Number) -> None:
        if value != value:
            return
        if self._value is None:
            self._value = value
        else:
            self._value = (1.0 - self.ema_coeff) * self._value + self.ema_coeff * value

    def peek(self) -> float:
        return math.nan if self._value is None else float(self._value)

    def reduce(self) -> float:
        self._merged = []
        return self.peek()

    def merge(self, state: dict) -> None:
        if state["value"] is not None:
            self._merged.append(state["value"])
            self._value = sum(self._merged) / len(self._merged)

    def get_state(self, new_only: bool = False) -> dict:
        return {
            "reduce": "ema",
            "ema_coeff": self.ema_coeff,
            "value": self._value,
            "merged": list(self._merged),
        }

    def set_state(self, state: dict) -> None:
        self._value = state["value"]
        self._merged = list(state["merged"])
