"""The one place flywheel relies on private parts of Ray Tune.

`Tuner(param_space=...)` turns configs into dicts only when they are instances of Tune's private
`_Config` ABC (RLlib's AlgorithmConfig subclasses it). flywheel's configs cannot subclass it without
importing ray, so they are registered as virtual subclasses: Tune then calls `config.to_dict()`.

`ray.tune.register_env` and `register_trainable` keep their entries in Tune's private `_global_registry`
(in the cluster's key-value store once Ray is up), which has no public lookup that leaves RLlib alone:
`tune_registered_env` and `is_tune_registered_trainable` read it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ray.tune.registry import ENV_CREATOR, TRAINABLE_CLASS, _global_registry
from ray.tune.tune import _Config


def accept_configs_as_param_space(config_class: type) -> None:
    """Makes `Tuner(param_space=config)` take `config_class` instances (through their `to_dict()`)."""
    _Config.register(config_class)


def tune_registered_env(name: str) -> Callable[..., Any] | None:
    """The creator given to `ray.tune.register_env(name, creator)`, or None when Tune has no such env."""
    if not _global_registry.contains(ENV_CREATOR, name):
        return None
    return _global_registry.get(ENV_CREATOR, name)


def is_tune_registered_trainable(name: str) -> bool:
    """Whether `name` was registered with Tune (`register_trainable`); unlike Tune's `get_trainable_cls`,
    never imports RLlib to register its algorithms."""
    return _global_registry.contains(TRAINABLE_CLASS, name)
