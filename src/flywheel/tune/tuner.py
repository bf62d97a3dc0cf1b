"""`Tuner`: Ray Tune's `Tuner` that also runs flywheel's algorithms as RLlib programs name them.

`flywheel port` rewrites `tune.Tuner` (and `from ray.tune import Tuner`) to this class, so RLlib's forms
run flywheel's algorithms unchanged:

    tune.Tuner(config.algo_class, param_space=config)          # the config's Algorithm class
    tune.Tuner("PPO", param_space=config.to_dict())            # a built-in algorithm's name

Anything else (a Tune Trainable, a function, a name registered with Tune) goes to Tune as given.
`Tuner.restore(path, trainable=...)` takes the same forms.

`fit()` refuses a config whose trials ask for more GPUs than this machine has when Tune would start
Ray here (no `RAY_ADDRESS`, Ray not started): its trials would stay PENDING forever, as RLlib's do.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import ray
from ray import tune

from flywheel.algorithms.algorithm import Algorithm
from flywheel.algorithms.algorithm_config import AlgorithmConfig
from flywheel.algorithms.registry import ALGORITHMS
from flywheel.compat import is_tune_registered_trainable
from flywheel.errors import ConfigError
from flywheel.tune.algorithm_trainable import trainable as flywheel_trainable

if TYPE_CHECKING:
    import pyarrow.fs


class Tuner(tune.Tuner):
    """`ray.tune.Tuner` where `trainable` may also be a flywheel Algorithm class or a built-in
    algorithm's name ("PPO"): each becomes `flywheel.tune.trainable(...)` (trials of flywheel's
    algorithm, Tune's checkpoints, results and search as usual)."""

    def __init__(
        self, trainable: Any = None, *args: object, param_space: Any = None, **kwargs: object
    ) -> None:
        super().__init__(as_tune_trainable(trainable, param_space), *args, param_space=param_space, **kwargs)
        self._flywheel_param_space = param_space

    def fit(self) -> tune.ResultGrid:
        """Tune's `fit()`, after `check_gpus_here` on the param space."""
        check_gpus_here(self._flywheel_param_space)
        return super().fit()

    @classmethod
    def restore(
        cls,
        path: str,
        trainable: object,
        resume_unfinished: bool = True,
        resume_errored: bool = False,
        restart_errored: bool = False,
        param_space: dict[str, object] | None = None,
        storage_filesystem: pyarrow.fs.FileSystem | None = None,
    ) -> tune.Tuner:
        """Tune's `restore`, with `trainable` taken as `Tuner(...)` takes it: RLlib's
        `tune.Tuner.restore(path, trainable=config.algo_class)` (or `trainable="PPO"`) resumes the
        experiment with flywheel's trainable, named as the one that started it."""
        return super().restore(
            path, as_tune_trainable(trainable, param_space), resume_unfinished, resume_errored, restart_errored,
            param_space, storage_filesystem,
        )  # fmt: skip


def check_gpus_here(param_space: object) -> None:
    """Raises a ConfigError when one trial of `param_space` (a config or its dict) asks for more learner
    GPUs than torch sees on this machine and the Ray cluster would be this machine alone (no
    `RAY_ADDRESS`, Ray not started yet). A cluster Tune connects to may have or add GPUs: not checked."""
    if os.environ.get("RAY_ADDRESS") or ray.is_initialized() or param_space is None:
        return
    per_learner, learners = (_setting(param_space, n) for n in ("num_gpus_per_learner", "num_learners"))
    if not isinstance(per_learner, int | float) or not isinstance(learners, int) or not per_learner:
        return  # a search space over the resources: Tune's placement decides
    import torch

    wanted, available = per_learner * max(learners, 1), torch.cuda.device_count()
    if wanted > available:
        raise ConfigError(
            f"Each trial asks for {wanted:g} GPU(s) (num_gpus_per_learner={per_learner:g}, "
            f"num_learners={learners}), but this machine has {available}, so Tune would keep the trials "
            "PENDING forever (RLlib's too). Fix: config.learners(num_gpus_per_learner=0) to train on the "
            "CPU (an example script: --num-gpus-per-learner=0), or connect to a cluster with GPUs "
            "(RAY_ADDRESS or ray.init(address=...))."
        )


def as_tune_trainable(trainable: Any, param_space: Any = None) -> Any:
    """`trainable` as Tune runs it: a flywheel Algorithm class or a built-in name unregistered with Tune
    becomes flywheel's trainable (with `param_space`'s config class when it is a config); else as is."""
    config_class = type(param_space) if isinstance(param_space, AlgorithmConfig) else None
    if isinstance(trainable, type) and issubclass(trainable, Algorithm):
        return flywheel_trainable(trainable, config_class=config_class)
    if isinstance(trainable, str) and trainable in ALGORITHMS and not is_tune_registered_trainable(trainable):
        return flywheel_trainable(trainable, config_class=config_class)
    return trainable


def _setting(param_space: object, name: str) -> object:
    return param_space.get(name, 0) if isinstance(param_space, Mapping) else getattr(param_space, name, 0)
