"""RLlib 2.60's config sections that have no meaning in flywheel: accepted at RLlib's defaults.

RLlib code calls `config.checkpointing(...)`, `config.experimental(...)` and
`config.python_environment(...)` for things flywheel does differently or not at all (native model
files, TensorFlow switches, old-stack preprocessors, per-process environment variables). These
methods accept every RLlib keyword at RLlib's default value, so such code runs unchanged, and raise
a `ConfigError` naming the keyword and what to do instead for any other value (nothing is stored:
`to_dict()` is unchanged). docs/porting.md lists them.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any, Self

from flywheel.errors import ConfigError

_CHECKPOINTING = {
    "export_native_model_files": (False, "flywheel checkpoints hold the module's weights as safetensors"),
    "checkpoint_trainable_policies_only": (False, "flywheel checkpoints every module"),
}
_EXPERIMENTAL = {
    "_validate_config": (True, "flywheel always validates the config in build_algo()"),
    "_use_msgpack_checkpoints": (False, "flywheel's checkpoints are JSON metadata plus safetensors"),
    "_torch_grad_scaler_class": (None, "override TorchLearner.compute_gradients to scale losses"),
    "_torch_lr_scheduler_classes": (None, "pass lr as a schedule [[step, lr], ...] to config.training()"),
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

    def checkpointing(self, **kwargs: Any) -> Self:
        """RLlib's `checkpointing()`: accepted at its defaults (export_native_model_files=False,
        checkpoint_trainable_policies_only=False)."""
        return self._only_defaults("checkpointing", _CHECKPOINTING, kwargs)

    def experimental(self, **kwargs: Any) -> Self:
        """RLlib's `experimental()`: accepted at its defaults (e.g. `_validate_config=True`)."""
        return self._only_defaults("experimental", _EXPERIMENTAL, kwargs)

    def python_environment(self, **kwargs: Any) -> Self:
        """RLlib's `python_environment()`: accepted with empty dicts."""
        return self._only_defaults("python_environment", _PYTHON_ENVIRONMENT, kwargs)

    def _only_defaults(self, section: str, known: Mapping[str, tuple], kwargs: Mapping[str, Any]) -> Self:
        for key, value in kwargs.items():
            if key not in known:
                raise TypeError(
                    f"{type(self).__name__}.{section}() got an unexpected keyword {key!r}. "
                    f"Valid keywords: {', '.join(map(repr, known))}."
                )
            default, instead = known[key]
            if value != default:
                raise ConfigError(
                    f"{section}({key}={value!r}) has no meaning in flywheel, which accepts only RLlib's default "
                    f"{default!r} here. Fix: drop the argument ({instead})."
                )
        return self


def old_stack_resources(kwargs: Mapping[str, Any]) -> dict[str, Any]:
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
