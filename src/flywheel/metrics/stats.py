"""The reducers behind `MetricsLogger`: one small class per family of reduce modes.

Each `Stats` holds one metric key. `push` is the hot path (an append or an add), `peek` reads the
current value without changing anything, `reduce` reads it and clears what the mode says, and
`merge` folds in another logger's state of the same key exactly. States are plain data (lists,
numbers, strings, None) so they travel between processes and into checkpoints as they are.

What "new" means: every stats object knows how much of its data arrived since its last
`reduce` (`num_new` values, or the `new` amount of a sum). `merge` takes only that part of the
incoming state, so a consumer that aggregates a producer's state once per producer reduce never
counts a value twice, even when the producer keeps a window of older values.
"""

import math
import numbers
from abc import ABC, abstractmethod
from collections import deque
from typing import Any

Number = int | float

SERIES_MODES = ("mean", "min", "max")
SUM_MODES = ("sum", "lifetime_sum")
REDUCE_MODES = (*SERIES_MODES, *SUM_MODES, "ema")
DEFAULT_EMA_COEFF = 0.01


def to_number(value: Any, key: str) -> Number:
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
            raise TypeError(
                f"Metric {key!r} expects a single number; got a {type(value).__name__} of shape "
                f"{tuple(getattr(value, 'shape', ()))}. Log a scalar (e.g. `x.mean()`) or give each "
                "element its own key."
            ) from None
        if isinstance(number, bool | int | float):
            return int(number) if isinstance(number, bool) else number
    elif isinstance(value, numbers.Real):
        return float(value)
    raise TypeError(
        f"Metric {key!r} expects a number (int, float, or a numpy/torch scalar); got "
        f"{type(value).__name__} {value!r:.60}. Log numbers only; use log_dict for nested dicts."
    )


class Stats(ABC):
    """What the logger needs from a reducer; subclasses implement one family of modes."""

    __slots__ = ("mode",)
    window: int | None = None
    ema_coeff: float | None = None
    with_throughput: bool = False

    @abstractmethod
    def push(self, value: Number) -> None:
        """Adds one logged value (the hot path: an append or an add)."""

    @abstractmethod
    def peek(self) -> Number:
        """The current value, changing nothing."""

    @abstractmethod
    def reduce(self) -> Number:
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


def _mean(values) -> float:
    return sum(values) / len(values)


def _min(values) -> float:
    return float(min(values))


def _max(values) -> float:
    return float(max(values))


_SERIES_FNS = {"mean": _mean, "min": _min, "max": _max}


class SeriesStats(Stats):
    """mean / min / max over raw values.

    With a window: over the last `window` values ever pushed, kept across reduces. Without: over
    the values pushed since the last reduce, which clears them; with none pushed the previous
    reduced value is kept, so a result key does not flicker away. Never any value: NaN.
    Raw values (not partial means) are kept so that merging gives the true mean of the union.
    """

    __slots__ = ("window", "_fn", "_values", "_num_new", "_last")

    def __init__(self, mode: str, window: int | None = None) -> None:
        self.mode = mode
        self.window = window
        self._fn = _SERIES_FNS[mode]
        self._values: deque | list = deque(maxlen=window) if window else []
        self._num_new = 0
        self._last: float | None = None

    def push(self, value: Number) -> None:
        self._values.append(value)
        self._num_new += 1

    def peek(self) -> float:
        if self._values:
            return self._fn(self._values)
        return math.nan if self._last is None else self._last

    def reduce(self) -> float:
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
        values = list(self._values)
        num_new = min(self._num_new, len(values))
        if new_only:
            values = values[len(values) - num_new :]
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


class SumStats(Stats):
    """sum (of the values since the last reduce) or lifetime_sum (running total, never cleared).

    Ints stay ints; the amount added since the last reduce (`increment`) is what merging passes
    on and what throughput divides by the elapsed time.
    """

    __slots__ = ("with_throughput", "_total", "_new")

    def __init__(self, mode: str, with_throughput: bool = False) -> None:
        self.mode = mode
        self.with_throughput = with_throughput
        self._total: Number = 0  # the lifetime total as of the last reduce; stays 0 for "sum"
        self._new: Number = 0

    @property
    def increment(self) -> Number:
        """The amount added since the last reduce."""
        return self._new

    def push(self, value: Number) -> None:
        self._new += value

    def peek(self) -> Number:
        return self._total + self._new

    def reduce(self) -> Number:
        value = self._total + self._new
        if self.mode == "lifetime_sum":
            self._total = value
        # A key that ever summed floats keeps reporting floats (0.0, not 0) for empty periods.
        self._new = 0.0 if isinstance(self._new, float) else 0
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
        self._total = state["total"]
        self._new = state["new"]


class EmaStats(Stats):
    """Exponential moving average: `ema = (1 - c) * ema + c * value`, the first value taken as is.

    Kept across reduces. Merging sets the value to the mean of the emas merged since the last
    reduce (each producer already smoothed its own values; smoothing their emas again would lag).
    """

    __slots__ = ("ema_coeff", "_value", "_merged")

    def __init__(self, ema_coeff: float = DEFAULT_EMA_COEFF) -> None:
        self.mode = "ema"
        self.ema_coeff = ema_coeff
        self._value: Number | None = None
        self._merged: list[Number] = []

    def push(self, value: Number) -> None:
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


def make_stats(
    key: str, mode: str, window: int | None, ema_coeff: float | None, with_throughput: bool
) -> Stats:
    """Validates one metric's settings (once, when its key is first logged) and builds its stats."""
    if mode not in REDUCE_MODES:
        raise ValueError(
            f"Metric {key!r}: reduce must be one of {', '.join(map(repr, REDUCE_MODES))}; got {mode!r}. "
            "Use 'mean' for averages, 'sum' for per-iteration counts, 'lifetime_sum' for running totals."
        )
    if window is not None and mode not in SERIES_MODES:
        raise ValueError(
            f"Metric {key!r}: window only applies to reduce='mean', 'min' or 'max'; got window={window!r} "
            f"with reduce={mode!r}. Drop window, or use reduce='mean'."
        )
    if window is not None and (isinstance(window, bool) or not isinstance(window, int) or window < 1):
        raise ValueError(f"Metric {key!r}: window must be a positive int or None; got {window!r}.")
    if ema_coeff is not None and mode != "ema":
        raise ValueError(
            f"Metric {key!r}: ema_coeff only applies to reduce='ema'; got ema_coeff={ema_coeff!r} with "
            f"reduce={mode!r}. Drop ema_coeff, or use reduce='ema'."
        )
    if ema_coeff is not None and not 0.0 < ema_coeff <= 1.0:
        raise ValueError(f"Metric {key!r}: ema_coeff must be in (0, 1]; got {ema_coeff!r}.")
    if with_throughput and mode not in SUM_MODES:
        raise ValueError(
            f"Metric {key!r}: with_throughput only applies to reduce='sum' or 'lifetime_sum'; got "
            f"reduce={mode!r}. Log the amount as a sum to get its rate."
        )
    if mode in SERIES_MODES:
        return SeriesStats(mode, window)
    if mode in SUM_MODES:
        return SumStats(mode, with_throughput)
    return EmaStats(DEFAULT_EMA_COEFF if ema_coeff is None else ema_coeff)


def make_stats_like(key: str, state: dict) -> Stats:
    """Builds an empty stats object with the settings recorded in `state` (a `get_state` output)."""
    return make_stats(
        key, state["reduce"], state.get("window"), state.get("ema_coeff"), state.get("with_throughput", False)
    )
