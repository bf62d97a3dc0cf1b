"""Metrics: `MetricsLogger` collects values where they happen and reduces them once per iteration."""

from flywheel.metrics.metrics_logger import MetricsLogger

__all__ = ["MetricsLogger"]
