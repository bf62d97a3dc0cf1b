"""`ReducedMetrics`: what `MetricsLogger.reduce()` returns, and how `aggregate` reads what it is given."""

from collections.abc import Mapping

from flywheel.errors import MetricsError

THROUGHPUT_SUFFIX = "_throughput"


class ReducedMetrics(dict):
    """What `MetricsLogger.reduce()` returns: the nested dict of reduced values.

    It also remembers what the reduce handed over (`state`, in `get_state()`'s format), so another
    logger merges it exactly with `aggregate([reduced])`, RLlib's pattern for runner and learner
    results. Keys removed from the dict before that are not merged.
    """

    def __init__(self, values: dict, state: dict) -> None:
        super().__init__(values)
        self.state = state


def stat_states(item: object) -> list[tuple[str, dict]]:
    """The (name, stats state) pairs `aggregate` merges from one element of its list."""
    if isinstance(item, ReducedMetrics):
        return _still_present(item)
    if isinstance(item, Mapping) and isinstance(item.get("stats"), Mapping):
        return list(item["stats"].items())
    raise MetricsError(
        "aggregate merges other loggers' reduce() results (or get_state() / reduce_to_state() outputs); "
        f"got a {type(item).__name__} with keys {sorted(map(str, item)) if isinstance(item, Mapping) else '-'}. "
        "A dict of plain numbers has lost how each value reduces. Fix: pass what reduce() returned, or "
        "log the numbers with log_dict."
    )


def _still_present(reduced: ReducedMetrics) -> list[tuple[str, dict]]:
    """The reduced keys still in `reduced` (a caller may have removed some); an added one is an error."""
    states = reduced.state["stats"]
    present: list[str] = []

    def walk(values: Mapping, prefix: str) -> None:
        for part, value in values.items():
            name = f"{prefix}{part}"
            if name in states:
                present.append(name)
            elif isinstance(value, Mapping):
                walk(value, f"{name}/")
            elif not (name.endswith(THROUGHPUT_SUFFIX) and name[: -len(THROUGHPUT_SUFFIX)] in states):
                raise MetricsError(
                    f"aggregate: {name!r} in the reduce() result was added after reduce(), so nothing "
                    "says how it reduces. Fix: log it into the logger (log_value) before reduce(), or "
                    "remove it from the result before aggregating."
                )

    walk(reduced, "")
    return [(name, states[name]) for name in present]


def without_item_series(item: object) -> dict:
    """One element of `aggregate`'s list as a state without the metrics logged with
    `reduce="item_series"` (per-row lists, e.g. a learner's TD errors, that the result of one update
    carries for its caller but that an iteration's metrics should not accumulate)."""
    return {"stats": {name: state for name, state in stat_states(item) if state["reduce"] != "item_series"}}
