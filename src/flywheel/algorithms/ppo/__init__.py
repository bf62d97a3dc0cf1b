"""PPO: `PPOConfig` and (imported on first use) the `PPO` algorithm."""

from importlib import import_module
from typing import Any

from flywheel.algorithms.ppo.config import PPOConfig

__all__ = ["PPO", "PPOConfig"]


def __getattr__(name: str) -> Any:
    if name == "PPO":
        return import_module("flywheel.algorithms.ppo.ppo").PPO
    raise AttributeError(f"module 'flywheel.algorithms.ppo' has no attribute {name!r}")
