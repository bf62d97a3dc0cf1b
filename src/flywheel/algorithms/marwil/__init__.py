"""MARWIL: `MARWILConfig` and (imported on first use) the `MARWIL` algorithm."""

from importlib import import_module
from typing import Any

from flywheel.algorithms.marwil.config import MARWILConfig

__all__ = ["MARWIL", "MARWILConfig"]


def __getattr__(name: str) -> Any:
    if name == "MARWIL":
        return import_module("flywheel.algorithms.marwil.marwil").MARWIL
    raise AttributeError(f"module 'flywheel.algorithms.marwil' has no attribute {name!r}")
