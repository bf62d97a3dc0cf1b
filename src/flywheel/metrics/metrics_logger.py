"""`MetricsLogger`: collect metrics where they happen, reduce them once per iteration (RLlib 2.60's API)."""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from flywheel.errors import MetricKeyError, MetricsError
from flywheel.metrics.reduced import THROUGHPUT_SUFFIX, ReducedMetrics, stat_states
from flywheel.metrics.settings import make_stats, make_stats_like, resolve_reduce, warn_deprecated_args
from flywheel.metrics.stats import Number, Stats, SumStats, to_number
from flywheel.metrics.stats_view import StatsView

Key = str | tuple[str, ...] | list[str]
Path = tuple[str, ...]


_MISSING = object()  # peek's default when the caller gives none
_ABSENT = object()  # what __contains__ asks peek to return for a missing key


_PATHS: dict[Key, Path] = {}
"""Keys seen so far and their paths: the same few dozen keys are logged every step."""


def _path(key: Key) -> Path:
    """`"timers/update"` and `("timers", "update")` are the same key; parts never contain "/"."""
    try:
        return _PATHS[key]
    except (KeyError, TypeError):  # new, or not hashable (a list)
        path = None
    if type(key) is str:
        path = tuple(key.split("/"))
    elif isinstance(key, tuple | list) and key and all(type(part) is str for part in key):
        path = tuple("/".join(key).split("/"))
    if path is None:
        raise MetricsError(
            f"Metric keys are strings ('timers/update') or tuples of strings (('timers', 'update')); got {key!r}."
        )
    if type(key) is not list and len(_PATHS) < 100_000:  # bounded, for keys built from ever-new ids
        _PATHS[key] = path
    return path


_NAMES: dict[Path, str] = {}


def _name(path: Path) -> str:
    name = _NAMES.get(path)
    if name is None:
        name = "/".join(path)
        if len(_NAMES) < 100_000:
            _NAMES[path] = name
    return name


def _set_nested(out: dict, path: Path, value: object) -> None:
    for part in path[:-1]:
        out = out.setdefault(part, {})
    out[path[-1]] = value


def _throughput_path(path: Path) -> Path:
    return (*path[:-1], path[-1] + THROUGHPUT_SUFFIX)


def _rate(amount: Number, seconds: float) -> float:
    return amount / seconds if seconds > 0 else float("nan")


class MetricsLogger:
    """Collects metrics where they happen and reduces them once per iteration, as RLlib 2.60's.

    The loop that drives it (runner → algorithm)::

        runner:    logger.log_value("episode_return_mean", ret, window=100)   # per finished episode
                   logger.log_value("num_env_steps_sampled", n, reduce="sum")  # once per sample()
                   results = logger.reduce()       # plain values; clears what the modes say
        algorithm: algo_logger.aggregate([results, ...], key="env_runners")   # exact merge
                   result = algo_logger.compile()   # nested dict of plain values

    `root=True` marks the logger at the top of such a tree (the algorithm's): only there do
    lifetime sums keep their totals across `reduce()`; elsewhere `reduce()` hands over and clears
    the amount added since the last one. See docs/concepts/metrics.md for every reduce mode.
    """

    def __init__(self, root: bool = False) -> None:
        self._root = bool(root)
        self._stats: dict[Path, Stats] = {}
        self._last_reduce_time = time.perf_counter()

    @property
    def root(self) -> bool:
        """Whether this is a root logger (lifetime sums keep their totals across `reduce()`)."""
        return self._root

    def log_value(
        self,
        key: Key,
        value: object,
        *,
        reduce: str | None = None,
        window: int | None = None,
        ema_coeff: float | None = None,
        percentiles: list | bool | None = None,
        clear_on_reduce: bool | None = None,
        with_throughput: bool = False,
        reduce_per_index_on_aggregate: bool | None = None,
    ) -> None:
        """Logs one value under `key`; the first log of a key fixes its settings.

        Without `reduce`, a new key is reduced with "mean" when a `window` is given, else with "ema"
        (RLlib 2.60's defaults). A later log that names a different reduce, window, ema_coeff or
        percentiles, or asks for throughput the key lacks, raises `MetricsError`; leaving them out is
        fine. RLlib 2.60's deprecated `clear_on_reduce=` and `reduce_per_index_on_aggregate=` are
        accepted with one warning each (`reduce="sum", clear_on_reduce=False` means "lifetime_sum").
        """
        path = _path(key)
        stats = self._stats.get(path)
        if (  # the hot path skips this: a known key logged with its own settings (or none)
            stats is None
            or (reduce is not None and reduce != stats.mode)
            or (window is not None and window != stats.window)
            or (ema_coeff is not None and ema_coeff != stats.ema_coeff)
            or percentiles is not None
            or (with_throughput and not stats.with_throughput)
            or clear_on_reduce is not None
            or reduce_per_index_on_aggregate is not None
        ):
            warn_deprecated_args(clear_on_reduce, reduce_per_index_on_aggregate)
            settings = (reduce, window, ema_coeff, percentiles, with_throughput, clear_on_reduce)
            stats = self._stats_for(path, stats, None, *settings)
        if type(value) is not float and type(value) is not int and stats.numeric:
            value = to_number(value, _name(path))
        stats.push(value)

    def log_dict(
        self,
        value_dict: Mapping[str, object],
        *,
        key: Key | None = None,
        reduce: str | None = None,
        window: int | None = None,
        ema_coeff: float | None = None,
        percentiles: list | bool | None = None,
        clear_on_reduce: bool | None = None,
        with_throughput: bool = False,
        reduce_per_index_on_aggregate: bool | None = None,
    ) -> None:
        """Logs every leaf of the nested dict `value_dict` under its path (prefixed by `key` if given).

        The settings apply to each leaf as in `log_value`, except that a new key without `reduce`
        is reduced with "mean" (RLlib's `log_dict` default).
        """
        if not isinstance(value_dict, Mapping):
            raise MetricsError(
                f"log_dict expects a (nested) dict of values; got a {type(value_dict).__name__}. "
                "Fix: log single values with log_value."
            )
        warn_deprecated_args(clear_on_reduce, reduce_per_index_on_aggregate)
        prefix = () if key is None else _path(key)
        settings = (reduce, window, ema_coeff, percentiles, with_throughput, clear_on_reduce)
        self._log_leaves(value_dict, prefix, settings)

    def _log_leaves(self, value_dict: Mapping, prefix: Path, settings: tuple) -> None:
        for name, value in value_dict.items():
            path = (*prefix, *_path(name))
            if isinstance(value, Mapping):
                self._log_leaves(value, path, settings)
                continue
            stats = self._stats_for(path, self._stats.get(path), "mean", *settings)
            stats.push(to_number(value, _name(path)) if stats.numeric else value)

    @contextmanager
    def log_time(
        self,
        key: Key,
        *,
        reduce: str | None = None,
        window: int | None = None,
        ema_coeff: float | None = None,
        percentiles: list | bool | None = None,
        clear_on_reduce: bool | None = None,
        with_throughput: bool = False,
        reduce_per_index_on_aggregate: bool | None = None,
    ) -> Iterator[None]:
        """Context manager that logs the seconds its block took (`time.perf_counter`).

        The settings are those of `log_value` (checked when the block starts). Nothing is logged
        when the block raises: a failed run's time is not the operation's time.
        """
        warn_deprecated_args(clear_on_reduce, reduce_per_index_on_aggregate)
        path = _path(key)
        settings = (reduce, window, ema_coeff, percentiles, with_throughput, clear_on_reduce)
        stats = self._stats_for(path, self._stats.get(path), None, *settings)
        start = time.perf_counter()
        yield
        stats.push(time.perf_counter() - start)

    @property
    def stats(self) -> dict:
        """RLlib's view of the metrics: a nested dict (as `peek()` nests) of one `StatsView` per key,
        with `peek()` and, for sums logged `with_throughput=True`, `throughputs`."""
        view: dict = {}
        for path in self._stats:
            _set_nested(view, path, StatsView(self, path))
        return view

    def peek(
        self,
        key: Key | None = None,
        default: object = _MISSING,
        *,
        throughput: bool = False,
        compile: bool = True,
    ) -> Any:
        """The current reduced value of `key` without clearing anything; no key: everything.

        A group gives a nested dict, as `reduce()` would return it. `throughput=True` gives the
        throughput (amount per second since the last `reduce()`) of a sum logged
        `with_throughput=True`, or of every such sum in a group; `peek("<leaf>_throughput")` does the
        same. A missing key returns `default`, or raises `MetricKeyError` (a `KeyError`) without one.
        RLlib's `compile=` is accepted: values here are always the reduced (compiled) ones.
        """
        if key is None:
            return self._peek_group((), throughput)
        path = _path(key)
        stats = self._stats.get(path)
        if stats is not None:
            return self._throughput_of(path, stats) if throughput else stats.peek()
        group = self._peek_group(path, throughput)
        if group:
            return group
        base = self._stats.get((*path[:-1], path[-1][: -len(THROUGHPUT_SUFFIX)]))
        if path[-1].endswith(THROUGHPUT_SUFFIX) and isinstance(base, SumStats) and base.with_throughput:
            return _rate(base.increment, time.perf_counter() - self._last_reduce_time)
        if default is not _MISSING:
            return default
        raise MetricKeyError(
            f"No metric {_name(path)!r} to peek; logged keys are {sorted(map(_name, self._stats))}. "
            "Fix: pass default=... for keys that may not be logged yet."
        )

    def reduce(self, compile: bool = True) -> ReducedMetrics:
        """Every metric as a nested dict of reduced values; clears what each reduce mode says.

        Sums logged `with_throughput=True` also get `<leaf>_throughput`: the amount added since the
        previous `reduce()` over the seconds since then. The result can be aggregated elsewhere, with
        or without RLlib's `compile=` (RLlib's uncompiled result is what its `aggregate` takes; this
        one is both).
        """
        now = time.perf_counter()
        seconds, self._last_reduce_time = now - self._last_reduce_time, now
        result: dict = {}
        handed_over: dict[str, dict] = {}
        for path, stats in self._stats.items():
            handed_over[_name(path)] = stats.get_state(new_only=True)
            rate = (
                _rate(stats.increment, seconds)
                if isinstance(stats, SumStats) and stats.with_throughput
                else None
            )
            _set_nested(result, path, stats.reduce())
            if rate is not None:
                _set_nested(result, _throughput_path(path), rate)
        return ReducedMetrics(result, {"stats": handed_over})

    def compile(self) -> ReducedMetrics:
        """RLlib's name for the algorithm's end-of-iteration `reduce()` (values and throughputs)."""
        return self.reduce()

    def reduce_to_state(self) -> dict:
        """`reduce()`, returning only what it handed over, as a state for `aggregate` elsewhere.

        Windows carry only their new values (not the whole window), so a runner can call this
        every iteration and a consumer aggregating the results counts every value exactly once.
        """
        return self.reduce().state

    def aggregate(self, stats_dicts: list, *, key: Key | None = None) -> None:
        """Merges other loggers' results into this one exactly.

        Each element is a `reduce()` result of another logger (RLlib's pattern), or a
        `get_state()` / `reduce_to_state()` output. Only what each logged since its own last reduce
        is merged, as if logged here since this logger's last reduce: sums and lifetime sums add
        their increments; mean / min / max / percentiles take the raw values (so a mean is the
        true mean of the union, appended in list order); an ema becomes the mean of the emas merged
        since the last reduce; an item is replaced, an item series extended. Keys missing here are
        created with the producer's settings (under `key` if given).
        """
        if not isinstance(stats_dicts, list | tuple):
            raise MetricsError(
                f"aggregate expects a list of other loggers' reduce() results or states; got a "
                f"{type(stats_dicts).__name__}. Fix: wrap a single one in a list: aggregate([results])."
            )
        prefix = () if key is None else _path(key)
        for item in stats_dicts:
            for name, stat_state in stat_states(item):
                path = (*prefix, *_path(name))
                stats = self._stats.get(path)
                if stats is None:
                    self._check_new_key(path)
                    stats = self._stats[path] = make_stats_like(_name(path), stat_state, self._root)
                elif stats.mode != stat_state["reduce"]:
                    raise MetricsError(
                        f"Metric {_name(path)!r} is reduced with {stats.mode!r} here but the results to "
                        f"aggregate have {stat_state['reduce']!r}. Log the key with the same reduce "
                        "everywhere, or aggregate under a different key."
                    )
                stats.merge(stat_state)

    def get_state(self) -> dict:
        """Plain data (lists, numbers, strings, None; items as logged): restorable by `set_state`."""
        return self._state(new_only=False)

    def set_state(self, state: dict) -> None:
        """Replaces every metric with those in `state` (a `get_state()` output)."""
        restored: dict[Path, Stats] = {}
        for name, stat_state in state["stats"].items():
            stats = restored[_path(name)] = make_stats_like(name, stat_state, self._root)
            stats.set_state(stat_state)
        self._stats = restored
        # Clock readings do not survive a process; throughput restarts from the restore.
        self._last_reduce_time = time.perf_counter()

    def delete(self, *key: Key, key_error: bool = True) -> None:
        """Removes the metric `key`, or every metric under it when it names a group.

        `delete("a", "b")` is `delete(("a", "b"))` (RLlib's form). A missing key raises
        `MetricKeyError` (a `KeyError`) unless `key_error=False`.
        """
        parts = [part for k in key for part in (k if isinstance(k, tuple | list) else (k,))]
        path = _path(tuple(parts))
        doomed = [other for other in tuple(self._stats) if other[: len(path)] == path]
        if not doomed and key_error:
            raise MetricKeyError(
                f"No metric {_name(path)!r} to delete; logged keys are {sorted(map(_name, self._stats))}."
            )
        for other in doomed:
            del self._stats[other]

    def reset(self) -> None:
        """Forgets every metric, as if the logger were new."""
        self._stats = {}
        self._last_reduce_time = time.perf_counter()

    def __contains__(self, key: Key) -> bool:
        return self.peek(key, _ABSENT) is not _ABSENT

    def _peek_group(self, path: Path, throughput_only: bool) -> dict:
        depth = len(path)
        group: dict = {}
        seconds = time.perf_counter() - self._last_reduce_time
        for other, stats in tuple(self._stats.items()):
            if len(other) > depth and other[:depth] == path:
                if not throughput_only:
                    _set_nested(group, other[depth:], stats.peek())
                if isinstance(stats, SumStats) and stats.with_throughput:
                    _set_nested(group, _throughput_path(other[depth:]), _rate(stats.increment, seconds))
        return group

    def _throughput_of(self, path: Path, stats: Stats) -> float:
        if not (isinstance(stats, SumStats) and stats.with_throughput):  # only sums have throughputs
            raise MetricsError(
                f"Metric {_name(path)!r} has no throughput: it was not logged with with_throughput=True "
                "(only sums can be). Fix: log it with reduce='sum' or 'lifetime_sum' and with_throughput=True."
            )
        return _rate(stats.increment, time.perf_counter() - self._last_reduce_time)

    def _state(self, *, new_only: bool) -> dict:
        return {"stats": {_name(path): stats.get_state(new_only) for path, stats in self._stats.items()}}

    def _stats_for(
        self,
        path: Path,
        stats: Stats | None,
        default_reduce: str | None,
        reduce: str | None,
        window: int | None,
        ema_coeff: float | None,
        percentiles: Any,
        with_throughput: bool,
        clear_on_reduce: bool | None,
    ) -> Stats:
        """The stats of `path`: created with these settings if new, else checked against them."""
        mode = resolve_reduce(reduce, window, percentiles, clear_on_reduce, default_reduce)
        name = _name(path)
        if stats is None:
            self._check_new_key(path)
            stats = make_stats(name, mode, window, ema_coeff, with_throughput, percentiles, self._root)
            self._stats[path] = stats
            return stats
        if reduce is not None and mode != stats.mode:
            _raise_mismatch(name, "reduce", stats.mode, mode)
        if window is not None and window != stats.window:
            _raise_mismatch(name, "window", stats.window, window)
        if ema_coeff is not None and ema_coeff != stats.ema_coeff:
            _raise_mismatch(name, "ema_coeff", stats.ema_coeff, ema_coeff)
        if percentiles not in (None, True, False) and list(percentiles) != stats.percentiles:
            _raise_mismatch(name, "percentiles", stats.percentiles, percentiles)
        if with_throughput and not stats.with_throughput:
            _raise_mismatch(name, "with_throughput", False, True)
        return stats

    def _check_new_key(self, path: Path) -> None:
        if "" in path:
            raise MetricsError(
                f"Metric key {_name(path)!r} has an empty part; use names like 'timers/update'."
            )
        for other in tuple(self._stats):  # a copy: another thread may add keys meanwhile
            depth = min(len(other), len(path))
            if other[:depth] == path[:depth]:
                raise MetricsError(
                    f"Metric {_name(path)!r} cannot be created: {_name(other)!r} already exists, and a key "
                    "cannot be both a value and a group of values. Rename one of them."
                )


def _raise_mismatch(name: str, setting: str, fixed: Any, asked: Any) -> None:
    raise MetricsError(
        f"Metric {name!r} was first logged with {setting}={fixed!r}; got {setting}={asked!r}. "
        f"The first log fixes a key's settings: log it with {setting}={fixed!r} (or leave {setting} "
        "out) or use another key."
    )
