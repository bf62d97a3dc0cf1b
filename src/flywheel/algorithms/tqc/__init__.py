"""TQC: `TQCConfig`, and (imported on first use) the `TQC` algorithm, its learner and default module."""

from importlib import import_module
from typing import Any

from flywheel.algorithms.tqc.config import TQCConfig

__all__ = ["TQC", "TQCConfig", "TQCTorchLearner", "DefaultTQCTorchRLModule"]

_LAZY = {
    "TQC": "flywheel.algorithms.tqc.tqc",
    "TQCTorchLearner": "flywheel.algorithms.tqc.learner",
    "DefaultTQCTorchRLModule": "flywheel.algorithms.tqc.rl_module",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'flywheel.algorithms.tqc' has no attribute {name!r}")
