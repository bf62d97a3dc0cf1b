"""IMPALA: `IMPALAConfig`, and (imported on first use) the `IMPALA` algorithm, its learner and `vtrace_torch`."""

from importlib import import_module
from typing import Any

from flywheel.algorithms.impala.config import IMPALAConfig

__all__ = ["IMPALA", "IMPALAConfig", "IMPALATorchLearner", "vtrace_torch"]

_LAZY = {
    "IMPALA": "flywheel.algorithms.impala.impala",
    "IMPALATorchLearner": "flywheel.algorithms.impala.learner",
    "vtrace_torch": "flywheel.algorithms.impala.vtrace",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'flywheel.algorithms.impala' has no attribute {name!r}")
