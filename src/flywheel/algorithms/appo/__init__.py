"""APPO: `APPOConfig`, and (imported on first use) the `APPO` algorithm, its learner and default module."""

from importlib import import_module
from typing import Any

from flywheel.algorithms.appo.config import APPOConfig

__all__ = ["APPO", "APPOConfig", "APPOTorchLearner", "DefaultAPPOTorchRLModule"]

_LAZY = {
    "APPO": "flywheel.algorithms.appo.appo",
    "APPOTorchLearner": "flywheel.algorithms.appo.learner",
    "DefaultAPPOTorchRLModule": "flywheel.algorithms.appo.rl_module",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'flywheel.algorithms.appo' has no attribute {name!r}")
