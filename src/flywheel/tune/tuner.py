"""`Tuner`: Ray Tune's `Tuner` that also runs flywheel's algorithms as RLlib programs name them.

`flywheel port` rewrites `tune.Tuner` (and `from ray.tune import Tuner`) to this class, so RLlib's forms
run flywheel's algorithms unchanged:

    tune.Tuner(config.algo_class, param_space=config)          # the config's Algorithm class
    tune.Tuner("PPO", param_space=config.to_dict())            # a built-in algorithm's name

Anything else (a Tune Trainable, a function, a name registered with Tune) goes to Tune as given.
"""

from __future__ import annotations

from typing import Any

from ray import tune

from flywheel.algorithms.algorithm import Algorithm
from flywheel.algorithms.algorithm_config import AlgorithmConfig
from flywheel.algorithms.registry import ALGORITHMS
from flywheel.tune import trainable as flywheel_trainable
from flywheel.tune.compat import is_tune_registered_trainable


class Tuner(tune.Tuner):
    """`ray.tune.Tuner` where `trainable` may also be a flywheel Algorithm class or a built-in
    algorithm's name ("PPO"): each becomes `flywheel.tune.trainable(...)` (trials of flywheel's
    algorithm, Tune's checkpoints, results and search as usual)."""

    def __init__(self, trainable: Any = None, *args: Any, param_space: Any = None, **kwargs: Any) -> None:
        super().__init__(as_tune_trainable(trainable, param_space), *args, param_space=param_space, **kwargs)


def as_tune_trainable(trainable: Any, param_space: Any = None) -> Any:
    """`trainable` as Tune runs it: a flywheel Algorithm class or a built-in name unregistered with Tune
    becomes flywheel's trainable (with `param_space`'s config class when it is a config); else as is."""
    config_class = type(param_space) if isinstance(param_space, AlgorithmConfig) else None
    if isinstance(trainable, type) and issubclass(trainable, Algorithm):
        return flywheel_trainable(trainable, config_class=config_class)
    if isinstance(trainable, str) and trainable in ALGORITHMS and not is_tune_registered_trainable(trainable):
        return flywheel_trainable(trainable, config_class=config_class)
    return trainable
