"""CQL: `CQLConfig` and (imported on first use) the `CQL` algorithm and its learner."""

from importlib import import_module
from typing import Any

from flywheel.algorithms.cql.config import CQLConfig

__all__ = ["CQL", "CQLConfig", "CQLTorchLearner"]

_LAZY = {
    "CQL": "flywheel.algorithms.cql.cql",
    "CQLTorchLearner": "flywheel.algorithms.cql.learner",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'flywheel.algorithms.cql' has no attribute {name!r}")
