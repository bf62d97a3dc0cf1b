"""`AlgorithmTrainable`: a flywheel algorithm as a Ray Tune `Trainable` (`flywheel.tune.trainable` makes
one subclass per algorithm).

Tune drives it as::

    trial = Trainable(config)          # setup(): the algorithm built from the trial's settings
    trial.train()                      # step(): algo.train(), one result dict per iteration
    trial.save() / trial.restore(...)  # save_checkpoint() / load_checkpoint(): flywheel checkpoints
    trial.reset(new_config)            # reset_config(): PBT and reuse_actors=True (see below)

A reset keeps the algorithm when a restore follows (PBT: the trial takes another trial's state
and new hyperparameters) and `Algorithm.reset_config` can take the new settings in place (`lr`,
...): runners and envs are not rebuilt. When no restore follows (a reused actor starting a new
trial) the first step builds a fresh algorithm.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import cloudpickle
from ray import tune
from ray.tune.search.repeater import TRIAL_INDEX

from flywheel.algorithms.algorithm import Algorithm
from flywheel.algorithms.algorithm_config import AlgorithmConfig
from flywheel.algorithms.registry import available_algorithms, config_class_of
from flywheel.algorithms.registry import config_class as registered_config_class
from flywheel.algorithms.trainable_api import placement_group_factory
from flywheel.compat import accept_configs_as_param_space
from flywheel.env.make import register_env, registered_envs
from flywheel.errors import ConfigError
from flywheel.tune.search_spaces import check_resolved

accept_configs_as_param_space(AlgorithmConfig)


class AlgorithmTrainable(tune.Trainable):
    """Trains `algo_class` with a `config_class` config built from the trial's settings."""

    algo_class: ClassVar[type[Algorithm]]
    config_class: ClassVar[type[AlgorithmConfig]]
    env_registry: ClassVar[dict[str, bytes]]
    """The `register_env` names of the process that made the class, each with its creator pickled on its
    own: a trial unpickles only the creators its config names, so an env registered by code the trial
    process cannot import (another script, a test module) does not break unrelated trials."""

    @classmethod
    def algorithm_config(cls, settings: Mapping[str, object]) -> AlgorithmConfig:
        """The config of a trial: `settings` (Tune's resolved param space) over the defaults."""
        settings = {name: value for name, value in settings.items() if name != TRIAL_INDEX}
        check_resolved(settings)
        config = cls.config_class.from_dict(settings)
        config.algo_class = cls.algo_class
        return config

    @classmethod
    def default_resource_request(cls, config: Mapping[str, object]) -> tune.PlacementGroupFactory:
        """One placement group per trial: its main process, remote runners (training and evaluation) and
        remote learners, so a trial starts only when all of them fit (trials queue, never deadlock)."""
        return placement_group_factory(cls.algorithm_config(config))

    def setup(self, config: dict[str, Any]) -> None:
        algo_config = self.algorithm_config(config)
        evaluation_env = (algo_config.evaluation_config or {}).get("env")
        for name in {algo_config.env, evaluation_env} & self.env_registry.keys():
            register_env(name, cloudpickle.loads(self.env_registry[name]))
        self.algo = algo_config.build_algo()
        self._next_config: AlgorithmConfig | None = None

    def step(self) -> dict[str, Any]:
        if self._next_config is not None:  # a reused actor starts a new trial: from scratch
            self._rebuild(self._next_config)
        return self.algo.train()

    def save_checkpoint(self, checkpoint_dir: str) -> None:
        self.algo.save_to_path(checkpoint_dir)

    def load_checkpoint(self, checkpoint_dir: str) -> None:
        if self._next_config is not None and not self.algo.reset_config(self._next_config):
            self._rebuild(self._next_config)
        self._next_config = None
        self.algo.restore_from_path(checkpoint_dir)

    def reset_config(self, new_config: dict[str, Any]) -> bool:
        # Applied by the next load_checkpoint (in place) or step (a new algorithm), whichever comes first.
        self._next_config = self.algorithm_config(new_config)
        return True

    def cleanup(self) -> None:
        self.algo.stop()

    def _rebuild(self, config: AlgorithmConfig) -> None:
        self.algo.stop()
        self.algo = config.build_algo()
        self._next_config = None


def trainable(algo: str | type, *, config_class: type | None = None) -> type:
    """A `ray.tune.Trainable` subclass that trains `algo` (a registered name such as "PPO", or an
    `Algorithm` subclass), one algorithm per trial.

    Tune gives each trial a dict of settings (the param space with its search spaces resolved);
    the trial's config is `config_class` (default: the registered config of `algo`, e.g. PPOConfig)
    with those settings. Results are the algorithm's result dicts, checkpoints are flywheel
    checkpoints, and `default_resource_request` asks for the trial's main process, runners and
    learners as one placement group. Envs given to `flywheel.register_env` before this call are
    registered again in the trials' processes.
    """
    if isinstance(algo, str):
        config_class = config_class or registered_config_class(algo)
        return make_trainable(algo, config_class().algo_class, config_class)
    if not (isinstance(algo, type) and issubclass(algo, Algorithm)):
        raise ConfigError(
            f"trainable() expects an algorithm name such as 'PPO' or an Algorithm subclass, got {algo!r}. "
            f"Fix: pass one of {available_algorithms()} or your Algorithm class."
        )
    return make_trainable(algo.__name__, algo, config_class or config_class_of(algo))


def make_trainable(name: str, algo_class: type, config_class: type) -> type[AlgorithmTrainable]:
    """An `AlgorithmTrainable` subclass called `name` (Tune names experiments and trials after it)."""
    attributes = {
        "algo_class": algo_class,
        "config_class": config_class,
        "env_registry": _pickled_envs(),
        "__module__": __name__,
        "__qualname__": name,
        "__doc__": f"Ray Tune trainable of flywheel's {algo_class.__name__} ({config_class.__name__}).",
    }
    return type(name, (AlgorithmTrainable,), attributes)


def _pickled_envs() -> dict[str, bytes]:
    """`registered_envs()` with each creator pickled on its own (a creator that cannot be pickled stays
    unregistered in trials, which then name its env as unknown)."""
    pickled = {}
    for name, creator in registered_envs().items():
        try:
            pickled[name] = cloudpickle.dumps(creator)
        except Exception:  # any pickling failure: a closure over a lock, a socket, ...
            continue
    return pickled
