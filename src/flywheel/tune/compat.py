"""The one place flywheel relies on a private part of Ray Tune.

`Tuner(param_space=...)` turns configs into dicts only when they are instances of Tune's private
`_Config` ABC (RLlib's AlgorithmConfig subclasses it). flywheel's configs cannot subclass it without
importing ray, so they are registered as virtual subclasses: Tune then calls `config.to_dict()`.
"""

from __future__ import annotations

from ray.tune.tune import _Config


def accept_configs_as_param_space(config_class: type) -> None:
    """Makes `Tuner(param_space=config)` take `config_class` instances (through their `to_dict()`)."""
    _Config.register(config_class)
