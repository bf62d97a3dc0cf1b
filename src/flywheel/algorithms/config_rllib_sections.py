"""RLlib 2.60's config settings that mean less (or nothing) in flywheel, and how each is taken.

RLlib code calls `config.checkpointing(...)`, `config.experimental(...)` and
`config.python_environment(...)` for things flywheel does differently or not at all (native model
files, TensorFlow switches, old-stack preprocessors, per-process environment variables). These
methods accept every RLlib keyword at RLlib's default value, so such code runs unchanged, and raise
a `ConfigError` naming the keyword and what to do instead for any other value (nothing is stored:
`to_dict()` is unchanged). The exception is `experimental(_torch_lr_scheduler_classes=...)`, which
flywheel's torch learners implement (`flywheel.core.learner.torch_lr_schedulers`).

Settings of the other sections that RLlib programs pass for RLlib's machinery (aggregator actors, Ray
Data's `map_batches`, list-based episodes, the old stack's `model` dict and `exploration` section)
are accepted and say once, as a logged warning, what flywheel does instead. docs/porting.md lists them.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Self, cast

from flywheel.errors import ConfigError

if TYPE_CHECKING:
    from flywheel.algorithms.algorithm_config import AlgorithmConfig

logger = logging.getLogger(__name__)
_WARNED: set[str] = set()  # each warning is given once per process

_CHECKPOINTING = {
    "export_native_model_files": (False, "flywheel checkpoints hold the module's weights as safetensors"),
    "checkpoint_trainable_policies_only": (False, "flywheel checkpoints every module"),
}
_EXPERIMENTAL = {
    "_validate_config": (True, "flywheel always validates the config in build_algo()"),
    "_use_msgpack_checkpoints": (False, "flywheel's checkpoints are JSON metadata plus safetensors"),
    "_torch_grad_scaler_class": (None, "override TorchLearner.compute_gradients to scale losses"),
    "_tf_policy_handles_more_than_one_loss": (False, "flywheel is torch-only"),
    "_disable_preprocessor_api": (False, "flywheel has no old-stack preprocessors"),
    "_disable_action_flattening": (False, "flywheel has no old-stack action flattening"),
    "_disable_initialize_loss_from_dummy_batch": (False, "flywheel builds no dummy batches"),
}
_PYTHON_ENVIRONMENT = {
    "extra_python_environs_for_driver": ({}, "set os.environ before building the algorithm"),
    "extra_python_environs_for_worker": ({}, "pass env_vars in ray.init(runtime_env=...)"),
}


class RLlibOnlySections:
    """Mixin of `AlgorithmConfig`: RLlib's sections without a flywheel meaning."""

    def checkpointing(self, **kwargs: object) -> Self:
        """RLlib's `checkpointing()`: accepted at its defaults (export_native_model_files=False,
        checkpoint_trainable_policies_only=False)."""
        return self._only_defaults("checkpointing", _CHECKPOINTING, kwargs)

    def experimental(self, **kwargs: object) -> Self:
        """RLlib's `experimental()`: `_torch_lr_scheduler_classes` (torch lr schedulers, a list of classes
        or partials, or `{module_id: [...]}`) is a setting; the other keywords are accepted at their
        defaults (e.g. `_validate_config=True`)."""
        schedulers = {key: kwargs.pop(key) for key in _STORED_EXPERIMENTAL if key in kwargs}
        self._only_defaults("experimental", _EXPERIMENTAL, kwargs)
        cast("AlgorithmConfig", self)._section("experimental", schedulers)
        return self

    def python_environment(self, **kwargs: object) -> Self:
        """RLlib's `python_environment()`: accepted with empty dicts."""
        return self._only_defaults("python_environment", _PYTHON_ENVIRONMENT, kwargs)

    def _only_defaults(self, section: str, known: Mapping[str, tuple], kwargs: Mapping[str, object]) -> Self:
        for key, value in kwargs.items():
            if key not in known:
                valid = [*known, *(_STORED_EXPERIMENTAL if section == "experimental" else ())]
                raise TypeError(
                    f"{type(self).__name__}.{section}() got an unexpected keyword {key!r}. "
                    f"Valid keywords: {', '.join(map(repr, valid))}."
                )
            default, instead = known[key]
            if value != default:
                raise ConfigError(
                    f"{section}({key}={value!r}) has no meaning in flywheel, which accepts only RLlib's default "
                    f"{default!r} here. Fix: drop the argument ({instead})."
                )
        return self


_STORED_EXPERIMENTAL = ("_torch_lr_scheduler_classes",)

# Settings accepted for RLlib code whose RLlib machinery flywheel does not have: the value that
# changes nothing here, and what is said once when another value is set.
_NO_OP_VALUES: dict[str, tuple[Callable[[Any], bool], str]] = {
    "num_aggregator_actors_per_learner": (
        lambda value: value == 0,
        "learners(num_aggregator_actors_per_learner={value!r}): flywheel starts no aggregator actors; each "
        "learner runs its learner pipeline (episodes to train batch) itself, with the same result. Fix: drop "
        "the argument to silence this warning.",
    ),
    "episodes_to_numpy": (
        lambda value: value is True,
        "env_runners(episodes_to_numpy={value!r}): flywheel's runners always return numpy'ized episodes (they "
        "are built from the vector env's arrays), so connectors and callbacks read the same values either way. "
        "Fix: drop the argument to silence this warning.",
    ),
    "map_batches_kwargs": (
        lambda value: not value,
        "offline_data(map_batches_kwargs={value!r}): flywheel has no Ray Data map_batches stage (each learner "
        "turns the rows it reads into episodes), so these keywords tune nothing. Fix: tune the read with "
        "input_read_method_kwargs / iter_batches_kwargs, and drop map_batches_kwargs.",
    ),
}


def warn_if_no_op(kwargs: Mapping[str, object]) -> None:
    """Logs, once per setting and process, that a setting of `_NO_OP_VALUES` was given a value whose
    RLlib machinery flywheel does not have."""
    for key, value in kwargs.items():
        entry = _NO_OP_VALUES.get(key)
        if entry is not None and not entry[0](value) and key not in _WARNED:
            _WARNED.add(key)
            logger.warning(entry[1].format(value=value))


def drop_old_stack_model(kwargs: dict[str, Any]) -> None:
    """Removes `model` (RLlib's old-stack model dict, which RLlib 2.60's new stack ignores) from
    `training()`'s keywords, saying once where the new stack's model settings go."""
    if "model" not in kwargs:
        return
    value = kwargs.pop("model")
    if "model" not in _WARNED:
        _WARNED.add("model")
        logger.warning(
            "training(model=%r): the old API stack's model dict, which RLlib 2.60's new stack and flywheel "
            "ignore. Fix: pass model settings (fcnet_hiddens, use_lstm, ...) as "
            "config.rl_module(model_config={...}).",
            value,
        )


def drop_exploration(kwargs: dict[str, Any]) -> None:
    """Removes `exploration` from `overrides()`'s keywords: RLlib 2.60 takes the key (it names a removed
    section method) and it changes nothing there; said once, with the setting meant most likely."""
    if "exploration" not in kwargs:
        return
    value = kwargs.pop("exploration")
    if "exploration" not in _WARNED:
        _WARNED.add("exploration")
        logger.warning(
            "overrides(exploration=%r): `exploration` is no setting (RLlib 2.60 accepts the key and ignores it, "
            "so its evaluation still explores); flywheel ignores it too. Fix: overrides(explore=False) samples "
            "deterministic actions.",
            value,
        )


def rllib_setting_problems(config: AlgorithmConfig) -> list[str]:
    """The problems of the RLlib settings above (one line each, with its fix)."""
    from flywheel.algorithms import config_validation as v

    problems = [
        v.check_int(config, "num_aggregator_actors_per_learner", 0),
        v.check_bool(config, "episodes_to_numpy"),
        v.check_bool(config, "output_write_remaining_data"),
        _check_prelearner(config),
        _check_lr_schedulers(config),
    ]
    if not isinstance(config.map_batches_kwargs, Mapping):
        problems.append(
            f"map_batches_kwargs={config.map_batches_kwargs!r} must be a dict. Fix: pass a dict (or nothing) "
            "to config.offline_data(map_batches_kwargs=...)."
        )
    return [problem for problem in problems if problem]


def _check_prelearner(config: AlgorithmConfig) -> str | None:
    if config.prelearner_class is None:
        return None
    return (
        f"prelearner_class={config.prelearner_class!r}: flywheel has no OfflinePreLearner; each learner turns "
        "the rows it reads into episodes and its learner pipeline builds the train batch. Fix: move the "
        "transformation into a learner connector piece (config.learners(learner_connector=lambda obs_space, "
        "act_space: MyPiece())) and drop prelearner_class."
    )


def _check_lr_schedulers(config: AlgorithmConfig) -> str | None:
    classes = config._torch_lr_scheduler_classes
    if classes is None:
        return None
    fix = (
        "Fix: pass a list of torch lr scheduler classes or functools.partial(Scheduler, ...) taking the optimizer, "
        "or {module_id: [...]}, to config.experimental(_torch_lr_scheduler_classes=...)."
    )
    lists = classes.values() if isinstance(classes, Mapping) else [classes]
    if not all(isinstance(each, list | tuple) and all(map(callable, each)) for each in lists):
        return f"_torch_lr_scheduler_classes={classes!r} is not a list of callables (or a dict of such lists). {fix}"
    if isinstance(config.lr, list | tuple):
        return (
            f"lr={config.lr!r} is a schedule, and _torch_lr_scheduler_classes also sets the learning rate (RLlib "
            "2.60 then ignores the schedule after its first value). Fix: pass a number as lr (the schedulers' "
            "starting value), or drop _torch_lr_scheduler_classes."
        )
    return None


def old_stack_resources(kwargs: Mapping[str, object]) -> dict[str, Any]:
    """`kwargs` of `resources()` without RLlib's old API stack GPU keywords, which RLlib 2.60 ignores on the
    new stack: `num_gpus` (0 or None silently, more with a warning naming the new stack's setting) and
    `_fake_gpus` (False; True simulated tf GPU towers, which flywheel cannot do)."""
    kwargs = dict(kwargs)
    num_gpus = kwargs.pop("num_gpus", None)
    if num_gpus:
        warnings.warn(
            f"resources(num_gpus={num_gpus!r}) is RLlib's old API stack setting and has no effect on the new "
            "stack (RLlib 2.60 ignores it too). Fix: train on GPUs with "
            "config.learners(num_gpus_per_learner=1) (and num_learners=<your number of GPUs>).",
            UserWarning,
            stacklevel=4,
        )
    if kwargs.pop("_fake_gpus", False):
        raise ConfigError(
            "resources(_fake_gpus=True) simulates TensorFlow GPU towers of RLlib's old API stack, which "
            "flywheel (torch, new stack) does not have. Fix: drop the argument."
        )
    return kwargs
