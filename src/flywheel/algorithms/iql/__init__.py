"""IQL: `IQLConfig` and (imported on first use) the `IQL` algorithm, its learner and default module."""

from importlib import import_module
from typing import Any

from flywheel.algorithms.iql.config import IQLConfig

__all__ = ["IQL", "IQLConfig", "IQLTorchLearner", "DefaultIQLTorchRLModule"]

_LAZY = {
    "IQL": "flywheel.algorithms.iql.iql",
    "IQLTorchLearner": "flywheel.algorithms.iql.learner",
    "DefaultIQLTorchRLModule": "flywheel.algorithms.iql.rl_module",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'flywheel.algorithms.iql' has no attribute {name!r}")
