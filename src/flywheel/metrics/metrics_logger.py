"""`MetricsLogger`: collect metrics where they happen, reduce them to plain numbers once per iteration."""

import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from flywheel.metrics.stats import Number, Stats, make_stats, make_stats_like, to_number

Key = str | tuple[str, ...]
Path = tuple[str, ...]

_THROUGHPUT = "_throughput"
_MISSING = object()


_PATHS: dict[Key, Path] = {}
"""Keys seen so far and their paths: the same few dozen keys are logged every step."""


def _path(key: Key) -> Path:
    """`"timers/update"` and `("timers", "update")` are the same key; parts never contain "/"."""
    try:
        return _PATHS[key]
    except (KeyError, TypeError):  # new, or not hashable (and then not a valid key)
        path = None
    if type(key) is str:
        path = tuple(key.split("/"))
    elif isinstance(key, tuple) and all(type(part) is str for part in key):
        path = tuple("/".join(key).split("/"))
    if path is not None:
        if len(_PATHS) < 100_000:  # bounded, for programs that build keys from ever-new ids
            _PATHS[key] = path
        return path
    raise TypeError(
        f"Metric keys are strings ('timers/update') or tuples of strings (('timers', 'update')); got {key!r}."
    )


def _name(path: Path) -> str:
    return "/".join(path)


def _set_nested(out: dict, path: Path, value: Any) -> None:
    for part in path[:-1]:
        out = out.setdefault(part, {})
    out[path[-1]] = value


def _throughput_path(path: Path) -> Path:
    return (*path[:-1], path[-1] + _THROUGHPUT)


def _rate(amount: Number, seconds: float) -> float:
    return amount / seconds if seconds > 0 else float("nan")


class MetricsLogger:
    """Collects metrics where they happen and reduces them to plain numbers once per iteration.

    The loop that drives it (runner → algorithm)::

        runner:    logger.log_value("episode_return_mean", ret, window=100)   # per finished episode
                   logger.log_value("num_env_steps_sampled", n, reduce="sum")  # once per sample()
                   state = logger.reduce_to_state()      # hand over what is new, then clear
        algorithm: algo_logger.aggregate(states, key="env_runners")           # exact merge
                   result = algo_logger.reduce()         # nested dict of plain numbers

    Reduce modes (fixed by the first log of a key):

    - "mean" / "min" / "max" with `window=N`: over the last N values ever logged (kept across
      `reduce()`); without a window: over the values logged since the last `reduce()`, which clears
      them; with none logged the previous reduced value is kept. No value ever: NaN. Always float.
    - "sum": the sum since the last `reduce()` (then 0). "lifetime_sum": running total, never cleared.
      Sums of ints stay ints. `with_throughput=True` adds `<leaf>_throughput`: the amount added since
      the previous `reduce()` of this logger divided by the seconds since then (NaN if none passed).
    - "ema": `ema = (1 - c) * ema + c * value` with `c = ema_coeff` (default 0.01), kept across reduces.

    Keys are strings or tuples of strings; "a/b" is the same as ("a", "b"), and `reduce()` / `peek()`
    return nested dicts for them. A key cannot be both a value and a group of values.
    """

    def __init__(self) -> None:
        self._stats: dict[Path, Stats] = {}
        self._last_reduce_time = time.perf_counter()

    def log_value(
        self,
        key: Key,
        value: Any,
        *,
        reduce: str = "mean",
        window: int | None = None,
        ema_coeff: float | None = None,
        with_throughput: bool = False,
    ) -> None:
        """Logs one number (int, float, numpy or torch scalar) under `key`.

        The first log of a key fixes its reduce mode and settings; a later log that names a different
        reduce, window, ema_coeff or asks for throughput the key lacks raises ValueError.
        """
        path = _path(key)
        stats = self._stats.get(path)
        if stats is None:
            stats = self._create(path, reduce, window, ema_coeff, with_throughput)
        elif (
            reduce != stats.mode
            or (window is not None and window != stats.window)
            or (ema_coeff is not None and ema_coeff != stats.ema_coeff)
            or (with_throughput and not stats.with_throughput)
        ):
            self._raise_settings_mismatch(path, stats, reduce, window, ema_coeff)
        stats.push(value if type(value) is float or type(value) is int else to_number(value, _name(path)))

    def log_dict(
        self,
        d: Mapping[str, Any],
        *,
        key: Key | None = None,
        reduce: str = "mean",
        window: int | None = None,
        ema_coeff: float | None = None,
        with_throughput: bool = False,
    ) -> None:
        """Logs every leaf of the nested dict `d` under its path (prefixed by `key` when given)."""
        prefix = () if key is None else _path(key)
        settings = {
            "reduce": reduce,
            "window": window,
            "ema_coeff": ema_coeff,
            "with_throughput": with_throughput,
        }
        for name, value in d.items():
            path = (*prefix, *_path(name))
            if isinstance(value, Mapping):
                self.log_dict(value, key=path, **settings)
            else:
                self.log_value(path, value, **settings)

    @contextmanager
    def log_time(self, key: Key, *, reduce: str = "mean", window: int | None = None) -> Iterator[None]:
        """Context manager that logs the seconds its block took (`time.perf_counter`).

        Nothing is logged when the block raises: a failed run's time is not the operation's time.
        """
        start = time.perf_counter()
        yield
        self.log_value(key, time.perf_counter() - start, reduce=reduce, window=window)

    def peek(self, key: Key, default: Any = None) -> Any:
        """The current reduced value of `key` (a nested dict for a group) without clearing anything.

        `key + "_throughput"` gives the current throughput of a sum logged `with_throughput=True`.
        """
        path = _path(key)
        stats = self._stats.get(path)
        if stats is not None:
            return stats.peek()
        depth = len(path)
        group: dict = {}
        seconds = time.perf_counter() - self._last_reduce_time
        for other, stats in self._stats.items():
            if len(other) > depth and other[:depth] == path:
                _set_nested(group, other[depth:], stats.peek())
                if stats.with_throughput:
                    _set_nested(group, _throughput_path(other[depth:]), _rate(stats.increment, seconds))
        if group:
            return group
        if path[-1].endswith(_THROUGHPUT):
            base = self._stats.get((*path[:-1], path[-1][: -len(_THROUGHPUT)]))
            if base is not None and base.with_throughput:
                return _rate(base.increment, seconds)
        return default

    def reduce(self) -> dict:
        """Returns every metric as a nested dict of plain numbers and clears what the modes say."""
        now = time.perf_counter()
        seconds, self._last_reduce_time = now - self._last_reduce_time, now
        result: dict = {}
        for path, stats in self._stats.items():
            rate = _rate(stats.increment, seconds) if stats.with_throughput else None
            _set_nested(result, path, stats.reduce())
            if rate is not None:
                _set_nested(result, _throughput_path(path), rate)
        return result

    def reduce_to_state(self) -> dict:
        """Hands over what was logged since the last reduce as a compact state, then reduces.

        The producer side of `aggregate`: windows carry only their new values (not the whole
        window), so a runner can call this every iteration and a consumer aggregating the results
        counts every value exactly once. The producer's own reduced numbers are discarded.
        """
        state = self._state(new_only=True)
        self.reduce()
        return state

    def aggregate(self, states: list[dict], key: Key | None = None) -> None:
        """Merges other loggers' `get_state()` (or `reduce_to_state()`) outputs into this one exactly.

        Only what each state logged since its own last reduce is merged, and it counts as if logged
        here since this logger's last reduce: sums and lifetime sums add their increments; means,
        mins and maxes take the raw values (so a mean is the true mean of the union, appended in the
        order of `states`); an ema becomes the mean of the emas merged since the last reduce.
        Keys missing here are created with the producer's settings (under `key` if given).
        """
        prefix = () if key is None else _path(key)
        for state in states:
            for name, stat_state in state["stats"].items():
                path = (*prefix, *_path(name))
                stats = self._stats.get(path)
                if stats is None:
                    self._check_new_key(path)
                    stats = self._stats[path] = make_stats_like(_name(path), stat_state)
                elif stats.mode != stat_state["reduce"]:
                    raise ValueError(
                        f"Metric {_name(path)!r} is reduced with {stats.mode!r} here but the state to "
                        f"aggregate has {stat_state['reduce']!r}. Log the key with the same reduce "
                        "everywhere, or aggregate under a different key."
                    )
                stats.merge(stat_state)

    def get_state(self) -> dict:
        """Plain data (lists, numbers, strings, None): msgpack-friendly and restorable by `set_state`."""
        return self._state(new_only=False)

    def set_state(self, state: dict) -> None:
        """Replaces every metric with those in `state` (a `get_state()` output)."""
        restored: dict[Path, Stats] = {}
        for name, stat_state in state["stats"].items():
            stats = restored[_path(name)] = make_stats_like(name, stat_state)
            stats.set_state(stat_state)
        self._stats = restored
        # Clock readings do not survive a process; throughput restarts from the restore.
        self._last_reduce_time = time.perf_counter()

    def delete(self, key: Key) -> None:
        """Removes the metric `key`, or every metric under it when it names a group."""
        path = _path(key)
        doomed = [other for other in self._stats if other[: len(path)] == path]
        if not doomed:
            raise KeyError(
                f"No metric {_name(path)!r} to delete; logged keys are {sorted(map(_name, self._stats))}."
            )
        for other in doomed:
            del self._stats[other]

    def reset(self) -> None:
        """Forgets every metric, as if the logger were new."""
        self._stats = {}
        self._last_reduce_time = time.perf_counter()

    def __contains__(self, key: Key) -> bool:
        return self.peek(key, _MISSING) is not _MISSING

    def _state(self, *, new_only: bool) -> dict:
        return {"stats": {_name(path): stats.get_state(new_only) for path, stats in self._stats.items()}}

    def _create(
        self, path: Path, reduce: str, window: int | None, ema_coeff: float | None, with_throughput: bool
    ) -> Stats:
        self._check_new_key(path)
        stats = self._stats[path] = make_stats(_name(path), reduce, window, ema_coeff, with_throughput)
        return stats

    def _check_new_key(self, path: Path) -> None:
        if "" in path:
            raise ValueError(f"Metric key {_name(path)!r} has an empty part; use names like 'timers/update'.")
        for other in self._stats:
            depth = min(len(other), len(path))
            if other[:depth] == path[:depth]:
                raise ValueError(
                    f"Metric {_name(path)!r} cannot be created: {_name(other)!r} already exists, and a key "
                    "cannot be both a value and a group of values. Rename one of them."
                )

    @staticmethod
    def _raise_settings_mismatch(
        path: Path, stats: Stats, reduce: str, window: int | None, ema_coeff: float | None
    ) -> None:
        fixed = {"reduce": stats.mode, "window": stats.window, "ema_coeff": stats.ema_coeff}
        asked = {"reduce": reduce, "window": window, "ema_coeff": ema_coeff}
        for name, value in asked.items():
            if value is not None and value != fixed[name]:
                raise ValueError(
                    f"Metric {_name(path)!r} was first logged with {name}={fixed[name]!r}; got {name}={value!r}. "
                    f"The first log fixes a key's settings: log it with {name}={fixed[name]!r} or use another key."
                )
        raise ValueError(
            f"Metric {_name(path)!r} was first logged without with_throughput; got with_throughput=True. "
            "The first log fixes a key's settings: ask for throughput on the first log or use another key."
        )
