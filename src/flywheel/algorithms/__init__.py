"""Algorithms: `AlgorithmConfig` (settings and builders) and `Algorithm` (the training loop).

Each algorithm has its own package (`flywheel.algorithms.ppo`) with its config, default module
and learner. `Algorithm` is imported on first use, so reading or building configs stays cheap.
"""

from importlib import import_module
from typing import Any

from flywheel.algorithms.algorithm_config import AlgorithmConfig

__all__ = ["Algorithm", "AlgorithmConfig"]


def __getattr__(name: str) -> Any:
    if name == "Algorithm":
        return import_module("flywheel.algorithms.algorithm").Algorithm
    raise AttributeError(f"module 'flywheel.algorithms' has no attribute {name!r}")
