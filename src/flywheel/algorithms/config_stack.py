"""`api_stack()` and `framework()`: the two RLlib config calls that choose what flywheel always is.

flywheel is RLlib's new API stack (RLModule + Learner, EnvRunner + ConnectorV2) on torch, and
nothing else. RLlib scripts call `.api_stack(enable_rl_module_and_learner=True,
enable_env_runner_and_connector_v2=True)` and `.framework("torch")` to pick exactly that, so both
are accepted as they are; any other choice is refused with an error that says why, rather than
ignored. `framework()`'s torch tuning options are accepted too: those that have no effect on how
flywheel trains are ignored, and the two that would ask for something flywheel does not do
(`torch_compile_learner` / `torch_compile_worker` set True) warn once.
"""

from __future__ import annotations

import logging
from typing import Any, Self

from flywheel.errors import ConfigError

logger = logging.getLogger(__name__)

_TORCH_OPTIONS = (
    "eager_tracing", "eager_max_retraces", "tf_session_args", "local_tf_session_args",
    "torch_compile_learner", "torch_compile_learner_what_to_compile", "torch_compile_learner_dynamo_mode",
    "torch_compile_learner_dynamo_backend", "torch_compile_worker", "torch_compile_worker_dynamo_backend",
    "torch_compile_worker_dynamo_mode", "torch_ddp_kwargs", "torch_skip_nan_gradients",
)  # fmt: skip
_COMPILE_OPTIONS = ("torch_compile_learner", "torch_compile_worker")
_WARNED: set[str] = set()  # the warning is given once per process


class StackSettings:
    """Mixed into `AlgorithmConfig`: the new API stack and torch, as RLlib's config names them."""

    enable_rl_module_and_learner = True
    """Always True: flywheel is RLlib's new API stack (read-only, as in RLlib's new-stack configs)."""
    enable_env_runner_and_connector_v2 = True
    """Always True: flywheel is RLlib's new API stack."""
    framework_str = "torch"
    """Always "torch"."""

    def api_stack(
        self, enable_rl_module_and_learner: bool = True, enable_env_runner_and_connector_v2: bool = True
    ) -> Self:
        """Accepts RLlib's new-stack choice (both True); False raises a ConfigError."""
        off = [
            name
            for name, value in (
                ("enable_rl_module_and_learner", enable_rl_module_and_learner),
                ("enable_env_runner_and_connector_v2", enable_env_runner_and_connector_v2),
            )
            if value is not True
        ]
        if off:
            raise ConfigError(
                f"api_stack({', '.join(f'{name}=False' for name in off)}): flywheel has only RLlib's new API "
                "stack (RLModule and Learner, EnvRunner and ConnectorV2); the old stack (ModelV2, Policy, "
                "RolloutWorker) does not exist here. Fix: drop the .api_stack(...) call, or pass True."
            )
        return self

    def framework(self, framework: str | None = "torch", **options: Any) -> Self:
        """Accepts `"torch"` (flywheel's only framework) and RLlib's framework options; any other
        framework raises a ConfigError. `torch_compile_learner=True` / `torch_compile_worker=True` warn
        once (flywheel does not compile modules); the other options do not change flywheel's training."""
        if framework not in ("torch", None):
            raise ConfigError(
                f"framework({framework!r}): flywheel runs on torch only (no TensorFlow or JAX). "
                "Fix: use framework('torch') or drop the call."
            )
        unknown = sorted(set(options) - set(_TORCH_OPTIONS))
        if unknown:
            raise TypeError(
                f"{type(self).__name__}.framework() got unexpected keywords {unknown}; it accepts "
                f"{list(_TORCH_OPTIONS)}."
            )
        _warn_compile([name for name in _COMPILE_OPTIONS if options.get(name)])
        return self


def _warn_compile(requested: list[str]) -> None:
    if requested and "compile" not in _WARNED:
        _WARNED.add("compile")
        logger.warning(
            "framework(%s): flywheel does not torch.compile modules or updates; they run eagerly and "
            "the option is ignored. Fix: drop the option to silence this warning.",
            ", ".join(f"{name}=True" for name in requested),
        )
