"""What DQN and SAC share: `OffPolicyConfig`, and (imported on first use) the replay loop
`OffPolicyAlgorithm` and the target-network learner `OffPolicyTorchLearner`."""

from importlib import import_module
from typing import Any

from flywheel.algorithms.off_policy.config import OffPolicyConfig

__all__ = ["OffPolicyAlgorithm", "OffPolicyConfig", "OffPolicyTorchLearner"]

_LAZY = {
    "OffPolicyAlgorithm": "flywheel.algorithms.off_policy.algorithm",
    "OffPolicyTorchLearner": "flywheel.algorithms.off_policy.learner",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'flywheel.algorithms.off_policy' has no attribute {name!r}")
