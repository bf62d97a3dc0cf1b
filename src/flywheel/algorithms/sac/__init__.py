"""SAC: `SACConfig`, and (imported on first use) the `SAC` algorithm, its learner and default module."""

from importlib import import_module
from typing import Any

from flywheel.algorithms.sac.config import SACConfig

__all__ = ["SAC", "SACConfig", "SACTorchLearner", "DefaultSACTorchRLModule"]

_LAZY = {
    "SAC": "flywheel.algorithms.sac.sac",
    "SACTorchLearner": "flywheel.algorithms.sac.learner",
    "DefaultSACTorchRLModule": "flywheel.algorithms.sac.rl_module",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'flywheel.algorithms.sac' has no attribute {name!r}")
