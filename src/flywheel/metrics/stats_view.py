"""`MetricsLogger.stats`: RLlib's view of a logger's metrics as a nested dict of per-key objects."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from flywheel.metrics.metrics_logger import MetricsLogger, Path


class StatsView:
    """One metric of a logger, as RLlib's `logger.stats["key"]` shows it (read-only).

    `peek()` is the logger's `peek(key)`; `throughputs` is the amount per second since the logger's
    last `reduce()` of a sum logged `with_throughput=True` (`has_throughputs` says whether it is one);
    `stats_cls_identifier` is the reduce mode ("mean", "ema", "sum", ...), with its `window` and
    `ema_coeff`. It reads the logger at each call, so it stays current as values are logged.
    """

    def __init__(self, logger: MetricsLogger, path: Path) -> None:
        self._logger = logger
        self._path = path

    def _stats(self) -> Any:
        return self._logger._stats[self._path]

    @property
    def stats_cls_identifier(self) -> str:
        return self._stats().mode

    @property
    def window(self) -> int | None:
        return self._stats().window

    @property
    def ema_coeff(self) -> float | None:
        return self._stats().ema_coeff

    @property
    def has_throughputs(self) -> bool:
        return bool(self._stats().with_throughput)

    @property
    def throughputs(self) -> float:
        return self._logger.peek(self._path, throughput=True)

    def peek(self, compile: bool = True) -> Any:  # noqa: A002 (RLlib's keyword)
        return self._logger.peek(self._path)

    def __repr__(self) -> str:
        return f"StatsView({'/'.join(self._path)}: {self.stats_cls_identifier}, {self.peek()!r})"
