"""BC: `BCConfig` and (imported on first use) the `BC` algorithm."""

from importlib import import_module
from typing import Any

from flywheel.algorithms.bc.config import BCConfig

__all__ = ["BC", "BCConfig"]


def __getattr__(name: str) -> Any:
    if name == "BC":
        return import_module("flywheel.algorithms.bc.bc").BC
    raise AttributeError(f"module 'flywheel.algorithms.bc' has no attribute {name!r}")
