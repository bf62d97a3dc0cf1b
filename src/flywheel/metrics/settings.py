"""A metric key's logging settings: RLlib 2.60's defaults, their checks, and the stats they build.

`resolve_reduce` turns what a `log_value` call asked for into a reduce mode (RLlib's defaults:
no `reduce` means "mean" with a window, else "ema"); `make_stats` validates the settings once,
when a key is first logged, and builds its reducer; `make_stats_like` rebuilds one from a state.
"""

import warnings

from flywheel.errors import MetricsError
from flywheel.metrics.item_stats import ItemSeriesStats, ItemStats
from flywheel.metrics.stats import DEFAULT_EMA_COEFF, EmaStats, PercentilesStats, SeriesStats, Stats, SumStats

REDUCE_MODES = ("mean", "ema", "min", "max", "sum", "lifetime_sum", "percentiles", "item", "item_series")
WINDOW_MODES = ("mean", "min", "max", "sum", "percentiles", "item_series")
THROUGHPUT_MODES = ("sum", "lifetime_sum")

_warned: set[str] = set()


def warn_deprecated(name: str, message: str) -> None:
    """One FutureWarning per process and deprecated argument."""
    if name not in _warned:
        _warned.add(name)
        warnings.warn(message, FutureWarning, stacklevel=4)


def warn_deprecated_args(clear_on_reduce: bool | None, reduce_per_index_on_aggregate: bool | None) -> None:
    """Warns (once per process each) about the `log_*` arguments RLlib 2.60 deprecated, if given."""
    if clear_on_reduce is not None:
        warn_deprecated(
            "clear_on_reduce",
            "MetricsLogger: clear_on_reduce is deprecated (as in RLlib 2.60) and has no effect, except that "
            "reduce='sum' with clear_on_reduce=False means reduce='lifetime_sum'. Use reduce='lifetime_sum' "
            "for running totals and drop clear_on_reduce.",
        )
    if reduce_per_index_on_aggregate is not None:
        warn_deprecated(
            "reduce_per_index_on_aggregate",
            "MetricsLogger: reduce_per_index_on_aggregate is deprecated (as in RLlib 2.60) and has no "
            "effect: aggregate() merges every producer's values with equal weight. Drop it.",
        )


def resolve_reduce(
    reduce: str | None,
    window: int | None,
    percentiles: object,
    clear_on_reduce: bool | None,
    default: str | None,
) -> str:
    """The reduce mode RLlib 2.60 gives a key for these `log_*` arguments.

    Without `reduce`: "percentiles" when percentiles are asked for, else `default` if given (log_dict
    passes "mean"), else "mean" with a window and "ema" without (log_value, log_time).
    """
    if reduce == "sum" and clear_on_reduce is False:
        return "lifetime_sum"
    if reduce is not None:
        return reduce
    if percentiles not in (None, False):
        return "percentiles"  # RLlib's docstring: percentiles are computed when reduce is None
    if default is not None:
        return default
    return "mean" if window is not None else "ema"


def make_stats(
    key: str,
    mode: str,
    window: int | None = None,
    ema_coeff: float | None = None,
    with_throughput: bool = False,
    percentiles: object = None,
    root: bool = False,
) -> Stats:
    """Validates one metric's settings (once, when its key is first logged) and builds its stats."""
    _check(key, mode, window, ema_coeff, with_throughput)
    if mode == "percentiles":
        return PercentilesStats(key, window, _percentiles(key, percentiles))
    if percentiles not in (None, False):
        raise MetricsError(
            f"Metric {key!r}: percentiles only apply to reduce='percentiles'; got percentiles="
            f"{percentiles!r} with reduce={mode!r}. Drop percentiles, or use reduce='percentiles'."
        )
    if mode in ("mean", "min", "max") or (mode == "sum" and window is not None):
        return SeriesStats(mode, window)
    if mode in THROUGHPUT_MODES:
        return SumStats(mode, with_throughput, root)
    if mode == "ema":
        return EmaStats(DEFAULT_EMA_COEFF if ema_coeff is None else ema_coeff)
    return ItemStats() if mode == "item" else ItemSeriesStats(window)


def make_stats_like(key: str, state: dict, root: bool = False) -> Stats:
    """Builds an empty stats object with the settings recorded in `state` (a `get_state` output)."""
    return make_stats(
        key,
        state["reduce"],
        state.get("window"),
        state.get("ema_coeff"),
        state.get("with_throughput", False),
        state.get("percentiles"),
        root,
    )


def _check(key: str, mode: str, window: object, ema_coeff: object, with_throughput: bool) -> None:
    if mode not in REDUCE_MODES:
        raise MetricsError(
            f"Metric {key!r}: reduce must be one of {', '.join(map(repr, REDUCE_MODES))}; got {mode!r}. "
            "Use 'mean' for averages, 'sum' for per-iteration counts, 'lifetime_sum' for running totals, "
            "'item' / 'item_series' for values kept as they are (e.g. images)."
        )
    if window is not None and mode not in WINDOW_MODES:
        raise MetricsError(
            f"Metric {key!r}: window does not apply to reduce={mode!r} (only to "
            f"{', '.join(map(repr, WINDOW_MODES))}); got window={window!r}. Drop window, or use "
            "reduce='mean'."
        )
    if window is not None and (isinstance(window, bool) or not isinstance(window, int) or window < 1):
        raise MetricsError(f"Metric {key!r}: window must be a positive int or None; got {window!r}.")
    if ema_coeff is not None and mode != "ema":
        raise MetricsError(
            f"Metric {key!r}: ema_coeff only applies to reduce='ema'; got ema_coeff={ema_coeff!r} with "
            f"reduce={mode!r}. Drop ema_coeff (or window), or use reduce='ema'."
        )
    if ema_coeff is not None and not (isinstance(ema_coeff, int | float) and 0.0 < ema_coeff <= 1.0):
        raise MetricsError(f"Metric {key!r}: ema_coeff must be in (0, 1]; got {ema_coeff!r}.")
    if with_throughput and (mode not in THROUGHPUT_MODES or window is not None):
        raise MetricsError(
            f"Metric {key!r}: with_throughput only applies to reduce='sum' (without window) or "
            f"'lifetime_sum'; got reduce={mode!r}, window={window!r}. Log the amount as a sum to get its rate."
        )


def _percentiles(key: str, percentiles: object) -> list | None:
    if percentiles in (None, True):
        return None  # the defaults
    if (
        isinstance(percentiles, list | tuple)
        and percentiles
        and all(isinstance(p, int | float) and not isinstance(p, bool) and 0 <= p <= 100 for p in percentiles)
    ):
        return list(percentiles)
    raise MetricsError(
        f"Metric {key!r}: percentiles must be True (for [0, 50, 75, 90, 95, 99, 100]) or a list of numbers "
        f"in [0, 100]; got {percentiles!r}."
    )
