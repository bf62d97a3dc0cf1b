"""`TorchRLModule`: an `RLModule` that is a `torch.nn.Module`."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from torch import nn

from flywheel.core.rl_module.apis import InferenceOnlyAPI
from flywheel.core.rl_module.rl_module import RLModule
from flywheel.errors import ModuleError


class TorchRLModule(nn.Module, RLModule):
    """An RLModule whose layers are torch modules.

    `forward_inference` / `forward_exploration` run in eval mode without gradients;
    `forward_train` runs in train mode. The mode is only switched when it is wrong, so
    calling the same phase every step costs one attribute check. The acting passes also take
    numpy arrays wherever they take tensors.

    State is a flat dict `{parameter or buffer name: numpy array}` (names as in
    `state_dict()`), which is what runners receive as weights and checkpoints store.
    """

    def __init__(
        self,
        observation_space: gym.Space | None = None,
        action_space: gym.Space | None = None,
        inference_only: bool | None = False,
        model_config: dict | None = None,
        **kwargs: Any,
    ):
        nn.Module.__init__(self)
        RLModule.__init__(self, observation_space, action_space, inference_only, model_config, **kwargs)
        if self.inference_only and isinstance(self, InferenceOnlyAPI):
            for path in self.get_non_inference_attributes():
                _delete_attribute(self, path)

    def forward_inference(self, batch: dict, **kwargs) -> dict:
        if self.training:
            self.eval()
        batch = self._tensors(batch)
        if torch.is_grad_enabled():
            return without_grad(self._forward_inference, batch, **kwargs)
        return self._forward_inference(batch, **kwargs)  # (runners act under inference mode)

    def forward_exploration(self, batch: dict, **kwargs) -> dict:
        if self.training:
            self.eval()
        batch = self._tensors(batch)
        if torch.is_grad_enabled():
            return without_grad(self._forward_exploration, batch, **kwargs)
        return self._forward_exploration(batch, **kwargs)  # (runners act under inference mode)

    def _tensors(self, batch: dict) -> dict:
        """`batch` with its numpy arrays (nested dicts too) as tensors on the module's device, float64
        as float32 (as `NumpyToTensor` makes them); the batch itself, after one loop, when it holds
        no arrays (the runners' case)."""
        for value in batch.values():
            if isinstance(value, _ARRAY_OR_DICT) and _holds_array(value):
                break
        else:
            return batch
        device = next(self.parameters(), torch.empty(0)).device
        return {key: _to_tensors(value, device) for key, value in batch.items()}

    def forward_train(self, batch: dict, **kwargs) -> dict:
        if not self.training:
            self.train()
        return self._forward_train(batch, **kwargs)

    def forward(self, batch: dict, **kwargs) -> dict:
        """torch's entry point (used by wrappers such as DDP): the training pass."""
        return self._forward_train(batch, **kwargs)

    def get_state(
        self,
        components: str | list[str] | None = None,
        not_components: str | list[str] | None = None,
        *,
        inference_only: bool = False,
    ) -> dict[str, np.ndarray]:
        """Copies of the weights as numpy arrays, keyed by `state_dict()` name.

        Args:
            components: Only names under these sub-module names (e.g. `"encoder"`).
            not_components: Leave out names under these sub-module names.
            inference_only: Leave out `get_non_inference_attributes()` (what runners don't need).
        """
        keep = _prefixes(components)
        drop = _prefixes(not_components)
        if inference_only:
            drop += _prefixes(self.get_non_inference_attributes())
        return {
            name: tensor.detach().cpu().numpy().copy()
            for name, tensor in self.state_dict().items()
            if _selected(name, keep, drop)
        }

    def set_state(self, state: dict[str, Any]) -> None:
        """Loads weights (numpy arrays or tensors) by name; names not given keep their values.

        An `inference_only` module ignores the names of its non-inference attributes, so it
        accepts a full learner state. Unknown names, values that are not arrays and wrong shapes
        raise a ModuleError before any weight changes (a state loads whole or not at all).
        """
        own = self.state_dict(keep_vars=True)
        skip = _prefixes(self.get_non_inference_attributes()) if self.inference_only else ()
        unknown = [name for name in state if name not in own and not _under(name, skip)]
        if unknown:
            raise ModuleError(
                f"{type(self).__name__}.set_state() got weights this module does not have: {unknown}. "
                f"Expected names among {sorted(own)}. Fix: pass a state from a module built with "
                "the same class, spaces and model_config."
            )
        loads = [(name, own[name], value) for name, value in state.items() if name in own]
        for name, target, value in loads:
            self._check_weight(name, value, target)
        with torch.no_grad():
            for _, target, value in loads:
                target.copy_(_as_tensor(value))

    def _check_weight(self, name: str, value: Any, target: torch.Tensor) -> None:
        numeric = isinstance(value, torch.Tensor) or (
            isinstance(value, np.ndarray) and value.dtype.kind in "biuf"
        )
        if not numeric:
            raise ModuleError(
                f"{type(self).__name__}.set_state(): weight {name!r} is a {type(value).__name__}, expected a numpy "
                f"array or tensor of shape {tuple(target.shape)}. Fix: pass a state get_state() returned."
            )
        if tuple(target.shape) != tuple(value.shape):
            raise ModuleError(
                f"{type(self).__name__}.set_state(): weight {name!r} has shape "
                f"{tuple(value.shape)}, expected {tuple(target.shape)}. Fix: pass a state "
                "from a module built with the same spaces and model_config."
            )


def _delete_attribute(owner: Any, path: str) -> None:
    """Deletes the attribute at dotted `path` below `owner`; a path that does not exist is skipped."""
    *parents, name = path.split(".")
    for part in parents:
        owner = getattr(owner, part, None)
        if owner is None:
            return
    if hasattr(owner, name):
        delattr(owner, name)


def without_grad(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """`fn(*args, **kwargs)` with autograd off, as under `torch.no_grad()`.

    Runners call a forward pass every step on small batches, where `no_grad()`'s context manager
    (~2 us) is a visible share; `set_grad_enabled` called as a function costs half that, and
    nothing is switched when autograd is already off (e.g. inside a `MultiRLModule`'s pass).
    """
    if not torch.is_grad_enabled():
        return fn(*args, **kwargs)
    torch.set_grad_enabled(False)
    try:
        return fn(*args, **kwargs)
    finally:
        torch.set_grad_enabled(True)


_ARRAY_OR_DICT = (np.ndarray, dict)  # (a tuple: isinstance is faster with it than with a union)


def _holds_array(value: Any) -> bool:
    return isinstance(value, np.ndarray) or (
        isinstance(value, dict) and any(map(_holds_array, value.values()))
    )


def _to_tensors(value: Any, device: torch.device) -> Any:
    if isinstance(value, dict):
        return {key: _to_tensors(item, device) for key, item in value.items()}
    if not isinstance(value, np.ndarray):
        return value
    return _as_tensor(value.astype(np.float32) if value.dtype == np.float64 else value).to(device)


def _as_tensor(value: Any) -> torch.Tensor:
    """A tensor of `value`; read-only arrays (weights from Ray's object store) are copied first,
    since torch cannot share their memory and warns about it."""
    if isinstance(value, np.ndarray) and not value.flags.writeable:
        value = value.copy()
    return torch.as_tensor(value)


def _prefixes(names: str | list[str] | None) -> tuple[str, ...]:
    if not names:
        return ()
    if isinstance(names, str):
        names = [names]
    return tuple(names)


@functools.lru_cache(maxsize=65_536)
def _selected(name: str, keep: tuple[str, ...], drop: tuple[str, ...]) -> bool:
    """Whether `get_state` includes weight `name` (cached: runners get weights after every update)."""
    return (not keep or _under(name, keep)) and not _under(name, drop)


def _under(name: str, prefixes: tuple[str, ...]) -> bool:
    """Whether `name` is one of `prefixes` or a weight inside one of them."""
    return any(name == p or name.startswith(p + ".") for p in prefixes)
