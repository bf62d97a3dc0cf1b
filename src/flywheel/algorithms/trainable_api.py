"""`TrainableAPI`: the methods RLlib 2.60's `Algorithm` has from Ray Tune's `Trainable`, on flywheel's
`Algorithm` (which is no Trainable, so `import flywheel` needs no ray).

    config = PPO.get_default_config().environment("CartPole-v1")
    algo = config.build_algo()
    saved = algo.save()                     # saved.checkpoint.path: a flywheel checkpoint directory
    algo.restore(saved)                     # or a path, or saved.checkpoint
    PPO.default_resource_request(config)    # Ray Tune's PlacementGroupFactory of one trial

`save()`/`restore()` are `save_to_path()`/`restore_from_path()` in the shapes RLlib's callers pass
around: Tune's `_TrainingResult` has `.checkpoint.path` and `.metrics`, and so has `SaveResult`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from flywheel.errors import ConfigError

if TYPE_CHECKING:
    from ray.tune import PlacementGroupFactory

    from flywheel.algorithms.algorithm_config import AlgorithmConfig


@dataclass(frozen=True)
class SavedCheckpoint:
    """Where `Algorithm.save()` wrote (Tune's `Checkpoint` also has `.path`)."""

    path: str


@dataclass(frozen=True)
class SaveResult:
    """What `Algorithm.save()` returns: `.checkpoint.path` and the iteration's `.metrics`, as Tune's
    `_TrainingResult` that RLlib 2.60's `Algorithm.save()` returns."""

    checkpoint: SavedCheckpoint
    metrics: dict[str, Any] = field(default_factory=dict)


class TrainableAPI:
    """Mixin of `Algorithm`: RLlib's `get_default_config`, `default_resource_request`, `save`, `restore`,
    `training_iteration`."""

    iteration: int

    @property
    def training_iteration(self) -> int:
        """The number of `train()` calls so far (Tune's `Trainable.training_iteration`; `iteration`)."""
        return self.iteration

    @classmethod
    def get_default_config(cls) -> AlgorithmConfig:
        """A new config of this algorithm at its defaults (e.g. `PPO.get_default_config()` -> PPOConfig()),
        whose `algo_class` is `cls` (a subclass of a built-in algorithm builds itself)."""
        from flywheel.algorithms.algorithm import Algorithm
        from flywheel.algorithms.algorithm_config import AlgorithmConfig
        from flywheel.algorithms.registry import config_class_of

        assert issubclass(cls, Algorithm)  # the mixin's only user

        try:
            config_cls = config_class_of(cls)
        except ConfigError:  # the base Algorithm or another direct subclass: the base config
            config_cls = AlgorithmConfig
        return config_cls(algo_class=cls)

    @classmethod
    def default_resource_request(cls, config: AlgorithmConfig | Mapping[str, Any]) -> Any:
        """Ray Tune's `PlacementGroupFactory` for one trial of `config` (an AlgorithmConfig or its dict):
        the main process, then each remote env runner, evaluation runner and learner (imports ray)."""
        if isinstance(config, Mapping):
            config = cls.get_default_config().update_from_dict(config)
        return placement_group_factory(config)

    def save(self, checkpoint_dir: str | os.PathLike | None = None) -> SaveResult:
        """Saves a checkpoint to `checkpoint_dir` (default: a new temporary directory): `save_to_path`
        returned as RLlib 2.60's `algo.save()` returns it (`result.checkpoint.path`)."""
        path = self.save_to_path(checkpoint_dir)  # pyright: ignore[reportAttributeAccessIssue]
        return SaveResult(SavedCheckpoint(str(path)), {"training_iteration": self.iteration})

    def restore(self, checkpoint_path: Any) -> None:
        """Restores what `save()` wrote: its result, its `.checkpoint`, or a path (as RLlib 2.60 takes)."""
        checkpoint = getattr(checkpoint_path, "checkpoint", checkpoint_path)
        path = getattr(checkpoint, "path", checkpoint)
        if not isinstance(path, str | os.PathLike):
            raise ConfigError(
                f"restore() expects a checkpoint path, a Checkpoint or what save() returned, got "
                f"{type(checkpoint_path).__name__}. Fix: algo.restore(algo.save()) or algo.restore('/path')."
            )
        self.restore_from_path(path)  # pyright: ignore[reportAttributeAccessIssue]


def placement_group_factory(config: AlgorithmConfig) -> PlacementGroupFactory:
    """Tune's placement group of one trial: `resource_bundles(config)` placed by its placement strategy
    (imports ray)."""
    from ray import tune

    return tune.PlacementGroupFactory(resource_bundles(config), strategy=config.placement_strategy)


def resource_bundles(config: AlgorithmConfig) -> list[dict[str, float]]:
    """The resources of one trial, a bundle per process: first the main process (with the learner's GPU
    when it learns itself), then each remote env runner, evaluation runner and learner. Resources of 0
    are left out, and so are bundles that would be empty (an actor asking for nothing needs none)."""
    local_gpus = config.num_gpus_per_learner if config.num_learners == 0 else 0
    eval_config = config.get_evaluation_config_object()
    bundles = [
        {"CPU": config.num_cpus_for_main_process, "GPU": local_gpus},
        *[{"CPU": config.num_cpus_per_env_runner}] * config.num_env_runners,
        *[{"CPU": eval_config.num_cpus_per_env_runner}] * config.evaluation_num_env_runners,
        *[{"CPU": config.num_cpus_per_learner, "GPU": config.num_gpus_per_learner}] * config.num_learners,
    ]
    bundles = [{key: value for key, value in bundle.items() if value} for bundle in bundles]
    return [bundle for bundle in bundles if bundle]  # the main process's is never empty (validated)
