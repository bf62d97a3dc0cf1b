"""The built-in algorithms by name: "PPO" -> `PPOConfig` (and so -> `PPO`).

The command line (`flywheel train --algo PPO`) and Ray Tune (`flywheel.tune.trainable("PPO")`) look
names up here. Nothing heavy is imported up front (no torch, no ray); a config module is imported when
its name is asked for.
"""

from __future__ import annotations

from importlib import import_module
from importlib.util import find_spec

from flywheel.errors import ConfigError

ALGORITHMS: dict[str, str] = {
    "PPO": "flywheel.algorithms.ppo:PPOConfig",
    "DQN": "flywheel.algorithms.dqn:DQNConfig",
    "SAC": "flywheel.algorithms.sac:SACConfig",
    "IMPALA": "flywheel.algorithms.impala:IMPALAConfig",
    "APPO": "flywheel.algorithms.appo:APPOConfig",
    "BC": "flywheel.algorithms.bc:BCConfig",
    "MARWIL": "flywheel.algorithms.marwil:MARWILConfig",
    "CQL": "flywheel.algorithms.cql:CQLConfig",
    "IQL": "flywheel.algorithms.iql:IQLConfig",
    "TQC": "flywheel.algorithms.tqc:TQCConfig",
    "DreamerV3": "flywheel.algorithms.dreamerv3:DreamerV3Config",
}
"""Algorithm name -> "module:ConfigClass"; names whose module is not installed are not offered."""


def available_algorithms() -> list[str]:
    """The names whose config module exists (found without importing it)."""
    return [name for name, target in ALGORITHMS.items() if find_spec(target.partition(":")[0]) is not None]


def config_class(algo: str) -> type:
    """The config class registered for `algo` (e.g. "PPO" -> PPOConfig)."""
    if algo not in ALGORITHMS:
        raise ConfigError(
            f"Unknown algorithm {algo!r}. Fix: use one of {available_algorithms()}, or pass the Algorithm "
            "class itself."
        )
    module, _, name = ALGORITHMS[algo].partition(":")
    return getattr(import_module(module), name)


def algorithm_name(config_cls: type) -> str:
    """The name registered for `config_cls` (else its class name without "Config")."""
    registered = (name for name, target in ALGORITHMS.items() if target.endswith(f":{config_cls.__name__}"))
    return next(registered, config_cls.__name__.removesuffix("Config"))


def config_class_of(algo_class: type) -> type:
    """The registered config class whose algorithm `algo_class` is or derives from (the closest one)."""
    by_algorithm = {config_class(name)().algo_class: config_class(name) for name in available_algorithms()}
    for base in algo_class.__mro__:
        if base in by_algorithm:
            return by_algorithm[base]
    raise ConfigError(
        f"{algo_class.__name__} derives from none of the registered algorithms {available_algorithms()}, so "
        "its config class is unknown. Fix: pass config_class=<your AlgorithmConfig subclass>."
    )


def get_trainable_cls(name: str) -> type:
    """The Algorithm class registered as `name` ("PPO" -> flywheel's PPO), as Ray Tune's
    `get_trainable_cls` returns RLlib's: `get_trainable_cls("PPO").get_default_config()` is a PPOConfig."""
    return config_class(name)().algo_class
