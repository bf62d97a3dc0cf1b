"""`MultiRLModule`: several RLModules under module ids, as one torch module and one dict."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Self

import gymnasium as gym
from torch import nn

from flywheel.checkpoints.checkpointable import Checkpointable
from flywheel.core.rl_module.rl_module import RLModule
from flywheel.core.rl_module.torch_rl_module import without_grad
from flywheel.errors import ModuleError
from flywheel.typing import ModuleID

if TYPE_CHECKING:
    from flywheel.checkpoints.registry import Allowed
    from flywheel.checkpoints.tree import Node
    from flywheel.core.rl_module.spec import RLModuleSpec


class MultiRLModule(nn.Module, Checkpointable):
    """Maps module ids to RLModules (a learner's `module`; one entry per policy).

    It is an `nn.Module` holding its torch modules in a `ModuleDict`, so `.parameters()` spans every
    sub-module and one optimizer or DDP wrapper can cover them all; modules that are plain `RLModule`s
    (no weights, e.g. heuristic policies) are held beside them. It also reads like a dict:
    `multi["p0"]`, `"p0" in multi`, `keys()`, `items()`, `values()`, `len(multi)` (in insertion order).

    Forward passes take and return `{module_id: ...}`: each sub-batch goes to its module.

    Subclasses (RLlib's pattern, e.g. modules sharing an encoder) override `setup()`, which runs
    once the sub-modules are in `self._rl_modules`, and `_forward_inference` /
    `_forward_exploration` / `_forward_train`, which the public passes call (by default each
    sub-module's public pass on its sub-batch). `MultiRLModuleSpec(multi_rl_module_class=...)`
    builds such a container on runners and learners.
    """

    def __init__(
        self,
        rl_modules: dict[ModuleID, RLModule] | None = None,
        *,
        rl_module_specs: dict[ModuleID, RLModuleSpec] | None = None,
        observation_space: gym.Space | None = None,
        action_space: gym.Space | None = None,
        inference_only: bool | None = None,
        learner_only: bool | None = None,
        model_config: dict | None = None,
    ):
        """Holds `rl_modules` (built modules), or builds one module per spec of `rl_module_specs`
        (RLlib's keyword) with `inference_only=True` forced on every spec when given; None means
        "True only if every spec is inference_only". The global spaces and `model_config` are kept
        as attributes for subclasses' `setup()`; `learner_only` is accepted and ignored, as in RLlib.
        """
        super().__init__()
        self._rl_modules = nn.ModuleDict()  # the torch modules (their parameters, state_dict names)
        self._by_id: dict[ModuleID, RLModule] = {}  # every module, torch or not
        self.observation_space = observation_space
        self.action_space = action_space
        self.model_config = model_config
        if rl_module_specs is not None:
            rl_modules = _build_from_specs(rl_modules, rl_module_specs, inference_only)
        for module_id, module in (rl_modules or {}).items():
            self.add_module(module_id, module)
        self.setup()

    @property
    def inference_only(self) -> bool:
        """True if every sub-module is inference_only (an empty container is not)."""
        return bool(self._by_id) and all(module.inference_only for module in self._by_id.values())

    def as_multi_rl_module(self) -> MultiRLModule:
        """This container (RLlib's `RLModule.as_multi_rl_module()` returns a multi-module as it is)."""
        return self

    def setup(self) -> None:  # noqa: B027 (optional hook)
        """Runs after the sub-modules are added (subclasses keep references to them here)."""

    # Dict behaviour.

    def __getitem__(self, module_id: ModuleID) -> RLModule:
        try:
            return self._by_id[module_id]
        except KeyError:
            raise KeyError(
                f"No module with id {module_id!r} in this MultiRLModule; it has {list(self.keys())}."
            ) from None

    def __contains__(self, module_id: object) -> bool:
        return module_id in self._by_id

    def __len__(self) -> int:
        return len(self._by_id)

    def __iter__(self) -> Iterator[ModuleID]:
        return iter(self._by_id)

    def keys(self):
        return self._by_id.keys()

    def items(self):
        return self._by_id.items()

    def values(self):
        return self._by_id.values()

    def add_module(self, module_id: ModuleID, module: RLModule, *, override: bool = False) -> None:
        """Adds `module` under `module_id` (ModuleError if taken, unless `override`)."""
        if not isinstance(module, RLModule):
            raise ModuleError(
                f"MultiRLModule holds RLModules, got {type(module).__name__} for {module_id!r}. "
                "Fix: pass an RLModule (e.g. RLModuleSpec(...).build())."
            )
        if module_id in self._by_id and not override:
            raise ModuleError(
                f"Module id {module_id!r} is already in this MultiRLModule. "
                "Fix: pass override=True to replace it, or choose another id."
            )
        if isinstance(module, nn.Module):
            try:
                self._rl_modules[module_id] = module
            except KeyError as e:
                raise ModuleError(
                    f"{module_id!r} cannot be a module id: {e}. Fix: use a plain name such as 'p0' "
                    "(no dots, not an attribute name of torch.nn.Module)."
                ) from e
        elif module_id in self._rl_modules:  # a torch module replaced by a weightless one
            del self._rl_modules[module_id]
        self._by_id[module_id] = module

    def remove_module(self, module_id: ModuleID, *, raise_err_if_not_found: bool = True) -> None:
        """Removes `module_id` (KeyError if missing, unless `raise_err_if_not_found=False`)."""
        if module_id in self._by_id:
            del self._by_id[module_id]
            if module_id in self._rl_modules:
                del self._rl_modules[module_id]
        elif raise_err_if_not_found:
            raise KeyError(
                f"No module with id {module_id!r} to remove; this MultiRLModule has {list(self.keys())}. "
                "Fix: pass raise_err_if_not_found=False to ignore missing ids."
            )

    def foreach_module(self, func: Callable[[RLModule], Any]) -> list:
        """`[func(module) for each module]`, in insertion order."""
        return [func(module) for module in self._by_id.values()]

    # Forward passes.

    def forward_inference(self, batch: dict[ModuleID, dict], **kwargs) -> dict[ModuleID, dict]:
        """`_forward_inference` (each module's `forward_inference`), with autograd off once for all."""
        return without_grad(self._forward_inference, batch, **kwargs)

    def forward_exploration(self, batch: dict[ModuleID, dict], **kwargs) -> dict[ModuleID, dict]:
        """`_forward_exploration` (each module's `forward_exploration`), with autograd off once for all."""
        return without_grad(self._forward_exploration, batch, **kwargs)

    def forward_train(self, batch: dict[ModuleID, dict], **kwargs) -> dict[ModuleID, dict]:
        """`_forward_train` (each module's `forward_train`)."""
        return self._forward_train(batch, **kwargs)

    def forward(self, batch: dict[ModuleID, dict], **kwargs) -> dict[ModuleID, dict]:
        """torch's entry point (used by wrappers such as DDP): the training pass."""
        return self._forward_train(batch, **kwargs)

    def _forward_inference(self, batch: dict[ModuleID, dict], **kwargs) -> dict[ModuleID, dict]:
        return {mid: self[mid].forward_inference(sub, **kwargs) for mid, sub in batch.items()}

    def _forward_exploration(self, batch: dict[ModuleID, dict], **kwargs) -> dict[ModuleID, dict]:
        return {mid: self[mid].forward_exploration(sub, **kwargs) for mid, sub in batch.items()}

    def _forward_train(self, batch: dict[ModuleID, dict], **kwargs) -> dict[ModuleID, dict]:
        return {mid: self[mid].forward_train(sub, **kwargs) for mid, sub in batch.items()}

    # State.

    def get_state(
        self,
        components: ModuleID | list[ModuleID] | None = None,
        not_components: ModuleID | list[ModuleID] | None = None,
        *,
        inference_only: bool = False,
    ) -> dict[ModuleID, dict]:
        """`{module_id: module.get_state(inference_only=...)}` for the selected module ids."""
        keep = [components] if isinstance(components, str) else components
        drop = [not_components] if isinstance(not_components, str) else (not_components or [])
        return {
            mid: module.get_state(inference_only=inference_only)
            for mid, module in self._by_id.items()
            if (keep is None or mid in keep) and mid not in drop
        }

    def set_state(self, state: dict[ModuleID, dict]) -> None:
        """Loads `{module_id: module_state}`; ids not given keep their weights."""
        for module_id, module_state in state.items():
            self[module_id].set_state(module_state)

    # Checkpoints: one sub-directory per module id.

    def get_checkpointable_components(self) -> list[tuple[str, RLModule]]:
        return list(self._by_id.items())

    def get_ctor_args_and_kwargs(self) -> tuple[tuple, dict[str, Any]]:
        return (), {}

    @classmethod
    def _from_metadata(cls, node: Node, allowed: Allowed) -> Self:
        """The container built with every module rebuilt from its sub-directory (weights come after)."""
        modules = {
            module_id: RLModule._construct_from(child, allowed) for module_id, child in node.children.items()
        }
        return cls(rl_modules=modules)


def _build_from_specs(
    rl_modules: dict | None, specs: dict[ModuleID, RLModuleSpec], inference_only: bool | None
) -> dict[ModuleID, RLModule]:
    """One built module per spec (`MultiRLModule(rl_module_specs=...)`, RLlib's form)."""
    if rl_modules:
        raise ModuleError(
            "MultiRLModule() takes built modules (rl_modules=) or specs to build (rl_module_specs=), not "
            f"both; got modules {sorted(rl_modules)} and specs {sorted(specs)}. Fix: pass one of them."
        )
    wrong = {mid: type(spec).__name__ for mid, spec in specs.items() if not hasattr(spec, "build")}
    if not isinstance(specs, dict) or wrong:
        raise ModuleError(
            "MultiRLModule(rl_module_specs=...) takes a dict mapping module ids to RLModuleSpecs; got "
            f"{wrong or type(specs).__name__}. Fix: pass {{'p0': RLModuleSpec(module_class=..., ...)}}."
        )
    if inference_only:
        specs = {mid: dataclasses.replace(spec, inference_only=True) for mid, spec in specs.items()}
    return {mid: spec.build() for mid, spec in specs.items()}
