"""`LayerInit`: how the default models initialize a linear layer, from `model_config`'s initializer keys.

    model_config = {
        "fcnet_kernel_initializer": "orthogonal_",          # encoder layers
        "fcnet_kernel_initializer_kwargs": {"gain": 2**0.5},
        "fcnet_bias_initializer": "zeros_",
        "head_fcnet_kernel_initializer": "orthogonal_",     # head layers (hidden and output)
        "pi_output_kernel_initializer_kwargs": {"gain": 0.01},
        "vf_output_kernel_initializer_kwargs": {"gain": 1.0},
    }

As in RLlib, an initializer is a `torch.nn.init` in-place function named by its name ("orthogonal_",
"xavier_uniform_", ...) or any callable, called as `init(tensor, **kwargs)`; None leaves the layer
as it was built.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

import torch
from torch import nn

from flywheel.errors import ModuleError


@dataclasses.dataclass(frozen=True)
class LayerInit:
    """Kernel and bias initializers with their kwargs; `prefix` names the keys in error messages."""

    prefix: str = "fcnet"
    kernel: Any = None
    kernel_kwargs: Mapping[str, object] | None = None
    bias: Any = None
    bias_kwargs: Mapping[str, object] | None = None

    @classmethod
    def from_model_config(cls, model_config: Mapping[str, Any], prefix: str) -> LayerInit:
        """The `<prefix>_kernel_initializer(_kwargs)` and `<prefix>_bias_initializer(_kwargs)` keys."""
        return cls(
            prefix,
            model_config.get(f"{prefix}_kernel_initializer"),
            model_config.get(f"{prefix}_kernel_initializer_kwargs"),
            model_config.get(f"{prefix}_bias_initializer"),
            model_config.get(f"{prefix}_bias_initializer_kwargs"),
        )

    def with_kernel_kwargs(self, kwargs: Mapping[str, object] | None, key: str) -> LayerInit:
        """This init with `kwargs` (the model_config value of `key`) for the kernel, unless None."""
        if kwargs is None:
            return self
        return dataclasses.replace(
            self, prefix=key.removesuffix("_kernel_initializer_kwargs"), kernel_kwargs=kwargs
        )

    def __call__(self, layer: nn.Linear) -> nn.Linear:
        """Initializes `layer`'s weight and bias in place (each only if its initializer is set)."""
        with torch.no_grad():
            _apply(self.kernel, layer.weight, self.kernel_kwargs, f"{self.prefix}_kernel_initializer")
            if layer.bias is not None:
                _apply(self.bias, layer.bias, self.bias_kwargs, f"{self.prefix}_bias_initializer")
        return layer


def _apply(init: Any, tensor: torch.Tensor, kwargs: Mapping[str, object] | None, key: str) -> None:
    if init is None:
        return
    fn = _resolve(init, key)
    try:
        fn(tensor, **(kwargs or {}))
    except (TypeError, ValueError, RuntimeError) as e:
        raise ModuleError(
            f"model_config[{key!r}]={init!r} failed on a tensor of shape {tuple(tensor.shape)} with "
            f"kwargs {dict(kwargs or {})!r}: {e}. Fix: pass the kwargs that initializer takes "
            f"(model_config[{(key + '_kwargs')!r}]), or another initializer."
        ) from e


def _resolve(init: Any, key: str) -> Callable:
    if callable(init):
        return init
    fn = getattr(nn.init, init, None) if isinstance(init, str) and init.endswith("_") else None
    if fn is None:
        raise ModuleError(
            f"model_config[{key!r}]={init!r} is not one of torch.nn.init's in-place initializers (names end "
            "in '_', e.g. 'orthogonal_'), nor a callable. Fix: use e.g. 'orthogonal_' or 'xavier_uniform_'."
        )
    return fn
