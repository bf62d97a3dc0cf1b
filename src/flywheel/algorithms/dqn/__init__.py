"""DQN: `DQNConfig`, and (imported on first use) the `DQN` algorithm, its learner and default module."""

from importlib import import_module
from typing import Any

from flywheel.algorithms.dqn.config import DQNConfig

__all__ = ["DQN", "DQNConfig", "DQNTorchLearner", "DefaultDQNTorchRLModule"]

_LAZY = {
    "DQN": "flywheel.algorithms.dqn.dqn",
    "DQNTorchLearner": "flywheel.algorithms.dqn.learner",
    "DefaultDQNTorchRLModule": "flywheel.algorithms.dqn.rl_module",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'flywheel.algorithms.dqn' has no attribute {name!r}")
