"""Metrics: `MetricsLogger` collects values where they happen and reduces them once per iteration.

Also every result key constant of `flywheel.metrics.keys` (RLlib's `ray.rllib.utils.metrics` names),
so `from flywheel.metrics import ENV_RUNNER_RESULTS, EPISODE_RETURN_MEAN` works as in RLlib.
"""

from flywheel.metrics import keys
from flywheel.metrics.keys import *  # noqa: F403 (the constants, listed in keys.__all__)
from flywheel.metrics.metrics_logger import MetricsLogger, ReducedMetrics

__all__ = ["MetricsLogger", "ReducedMetrics", *keys.__all__]
