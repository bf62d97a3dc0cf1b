"""The one place flywheel calls other libraries' private APIs, each behind a small function.

- torch's `_foreach_*` kernels: one fused call per list of tensors instead of one per tensor; for
  the small networks of RL the per-tensor Python loop costs more than the arithmetic (gradient
  clipping, target-network updates).
- gymnasium's `VectorEnv._add_info`: how a vector env merges one sub-env's info dict into the batch's
  infos (`FastSyncVectorEnv` builds the same infos as gymnasium's own `SyncVectorEnv`).
- torch's `nn.Module` internals on a runner's acting pass (`forward_of`, `child`): calling a small
  layer through `Module.__call__` costs ~0.9 us of Python, and reading a child module as an attribute
  ~1 us (Python 3.11 builds and drops an AttributeError before `Module.__getattr__` finds it); a
  default PPO module acting on CartPole makes six calls and three reads a step, where the hand-written
  loop's network makes the six calls only.
- Ray Tune's `_Config` ABC: `Tuner(param_space=...)` turns configs into dicts only when they are its
  instances (RLlib's AlgorithmConfig subclasses it). flywheel's configs cannot subclass it without
  importing ray, so they are registered as virtual subclasses: Tune then calls `config.to_dict()`.
- Ray Tune's `_global_registry`: `ray.tune.register_env` and `register_trainable` keep their entries
  there (in the cluster's key-value store once Ray is up), and it has no public lookup that leaves
  RLlib alone: `tune_registered_env` and `is_tune_registered_trainable` read it. These three import
  ray when called; nothing else here does.

`tests/test_compat.py` pins each function against the public formula it stands for, so a release
of torch or gymnasium that changes or drops one fails there first, and only this file changes.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch


def _torch() -> Any:
    # Imported by the functions that use it, so gymnasium's helper below costs no torch import
    # (building and validating configs imports no torch); tensors exist only once torch is imported.
    import torch

    return torch


def foreach_norm(tensors: list[torch.Tensor]) -> list[torch.Tensor]:
    """`[torch.linalg.vector_norm(t) for t in tensors]`."""
    return list(_torch()._foreach_norm(tensors))


def foreach_clamp_(tensors: list[torch.Tensor], low: float, high: float) -> None:
    """`t.clamp_(low, high)` for every tensor."""
    _torch()._foreach_clamp_min_(tensors, low)
    _torch()._foreach_clamp_max_(tensors, high)


def foreach_mul_(tensors: list[torch.Tensor], factors: torch.Tensor | list[torch.Tensor]) -> None:
    """`t.mul_(f)` for every tensor: one factor for all, or one per tensor."""
    _torch()._foreach_mul_(tensors, factors)


def foreach_copy_(targets: list[torch.Tensor], sources: list[torch.Tensor]) -> None:
    """`target.copy_(source)` for every pair."""
    _torch()._foreach_copy_(targets, sources)


def foreach_lerp_(targets: list[torch.Tensor], sources: list[torch.Tensor], weight: float) -> None:
    """`target.lerp_(source, weight)` (`target + weight * (source - target)`) for every pair."""
    _torch()._foreach_lerp_(targets, sources, weight)


def add_vector_info(
    vector_env: Any, infos: dict[str, Any], info: dict[str, Any], index: int
) -> dict[str, Any]:
    """`infos` with sub-env `index`'s `info` merged in, as gymnasium's vector envs build them (each key
    an array over the sub-envs plus a `_key` mask of the sub-envs that set it)."""
    return vector_env._add_info(infos, info, index)


def forward_of(module: torch.nn.Module) -> Callable[..., Any]:
    """What `module(...)` runs: the bound `module.forward` when calling the module would run only that
    (no forward or backward hooks on it or on all modules, not compiled by `module.compile()`, not
    traced by `torch.jit`: the shortcut torch's `Module._call_impl` takes), else the module itself, so
    hooks and the rest run as ever."""
    torch_modules = _torch_module_globals()
    if (
        module._forward_hooks
        or module._forward_pre_hooks
        or module._backward_hooks
        or module._backward_pre_hooks
        or module._compiled_call_impl is not None
        or torch_modules._global_forward_hooks
        or torch_modules._global_forward_pre_hooks
        or torch_modules._global_backward_hooks
        or torch_modules._global_backward_pre_hooks
        or torch_modules.torch._C._get_tracing_state()
    ):
        return module
    return module.forward


def child(module: torch.nn.Module, name: str) -> Any:
    """`getattr(module, name)`, read straight from the registered children when `name` is one."""
    found = module._modules.get(name)
    return getattr(module, name) if found is None else found


@functools.cache
def _torch_module_globals() -> Any:
    """`torch.nn.modules.module`, which holds the hooks registered for all modules."""
    import torch.nn.modules.module

    return torch.nn.modules.module


def accept_configs_as_param_space(config_class: type) -> None:
    """Makes `Tuner(param_space=config)` take `config_class` instances (through their `to_dict()`)."""
    from ray.tune.tune import _Config

    _Config.register(config_class)


def tune_registered_env(name: str) -> Callable[..., Any] | None:
    """The creator given to `ray.tune.register_env(name, creator)`, or None when Tune has no such env."""
    from ray.tune.registry import ENV_CREATOR, _global_registry

    if not _global_registry.contains(ENV_CREATOR, name):
        return None
    return _global_registry.get(ENV_CREATOR, name)


def is_tune_registered_trainable(name: str) -> bool:
    """Whether `name` was registered with Tune (`register_trainable`); unlike Tune's `get_trainable_cls`,
    never imports RLlib to register its algorithms."""
    from ray.tune.registry import TRAINABLE_CLASS, _global_registry

    return _global_registry.contains(TRAINABLE_CLASS, name)
