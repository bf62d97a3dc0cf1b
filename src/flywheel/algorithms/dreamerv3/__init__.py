"""DreamerV3 (Hafner et al., 2023): a world model learned from replayed sequences, and an actor and a
critic trained on rollouts imagined in it. `DreamerV3Config`, and (imported on first use) the
`DreamerV3` algorithm, its learner and module; the math pieces the paper names live one to a module here."""

from importlib import import_module
from typing import Any

from flywheel.algorithms.dreamerv3.config import DreamerV3Config

__all__ = ["DreamerV3", "DreamerV3Config", "DreamerV3TorchLearner", "DreamerV3TorchRLModule"]

_LAZY = {
    "DreamerV3": "flywheel.algorithms.dreamerv3.dreamerv3",
    "DreamerV3TorchLearner": "flywheel.algorithms.dreamerv3.learner",
    "DreamerV3TorchRLModule": "flywheel.algorithms.dreamerv3.rl_module",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'flywheel.algorithms.dreamerv3' has no attribute {name!r}")
