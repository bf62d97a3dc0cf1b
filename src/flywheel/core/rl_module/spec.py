"""`RLModuleSpec` / `MultiRLModuleSpec`: how to build a module, without building it.

Configs, runners and learners pass specs around and build the module where it lives (a
runner builds an `inference_only` module, a learner the full one), so no module is ever
pickled between processes. Both specs behave as RLlib 2.60's: `from_module` reads a spec back
from a built module, `update` merges specs, `to_dict` / `from_dict` round-trip them.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any, cast, overload

import gymnasium as gym

from flywheel.checkpoints.registry import checkpoint_class
from flywheel.core.rl_module.multi_rl_module import MultiRLModule
from flywheel.core.rl_module.rl_module import RLModule
from flywheel.errors import ModuleError
from flywheel.typing import DEFAULT_MODULE_ID, ModuleID


@checkpoint_class
@dataclass
class RLModuleSpec:
    """Everything needed to build one RLModule: `module_class(**the other fields)`.

    Fields left `None` are filled by the algorithm config (default module class, the env's
    spaces after the env-to-module pipeline, merged `model_config`). `learner_only` modules
    (e.g. a shared value function or a world model inside a `MultiRLModuleSpec`) are built on
    learners only, never on runners; it is not passed to the module class.
    """

    module_class: type[RLModule] | None = None
    observation_space: gym.Space | None = None
    action_space: gym.Space | None = None
    inference_only: bool = False
    model_config: dict | None = None
    # Keyword-only: RLlib places it before model_config, flywheel's positional order predates it.
    learner_only: bool = field(default=False, kw_only=True)
    catalog_class: Any = field(default=None, kw_only=True)
    """RLlib's model catalog: None, or `module_class.default_catalog_class` (the name of what the module's
    setup() builds, e.g. `PPOCatalog`); flywheel has no catalogs, modules build their layers in setup()."""
    load_state_path: str | os.PathLike | None = field(default=None, kw_only=True)
    """A module checkpoint (e.g. `<algo checkpoint>/learner_group/learner/rl_module/<module_id>`) whose
    state `build()` loads into the new module, as RLlib does: pretrained weights for a new run."""

    def build(self) -> RLModule:
        """Builds the module, and loads `load_state_path` into it (ModuleError if the class or a space
        is missing, or `catalog_class` is set)."""
        if self.catalog_class not in (None, getattr(self.module_class, "default_catalog_class", None)):
            raise ModuleError(
                f"RLModuleSpec(catalog_class={self.catalog_class!r}): flywheel has no model catalog; a module "
                "builds its layers in setup() from self.observation_space, self.action_space and "
                "self.model_config. Fix: drop catalog_class (the default modules read model_config)."
            )
        if self.module_class is None:
            raise ModuleError(
                "RLModuleSpec.build() needs a module_class, got None. Fix: pass "
                "RLModuleSpec(module_class=MyModule, ...), or get the spec from the algorithm "
                "config (config.get_rl_module_spec(...)), which fills in the default module."
            )
        if not (isinstance(self.module_class, type) and issubclass(self.module_class, RLModule)):
            raise ModuleError(
                f"RLModuleSpec.module_class must be an RLModule subclass, got {self.module_class!r}. "
                "Fix: subclass flywheel.TorchRLModule."
            )
        missing = [name for name in ("observation_space", "action_space") if getattr(self, name) is None]
        if missing:
            raise ModuleError(
                f"RLModuleSpec.build() for {self.module_class.__name__} needs {' and '.join(missing)}, "
                "got None. Fix: pass the spaces to RLModuleSpec, or get the spec with "
                "config.get_rl_module_spec(spaces=(observation_space, action_space))."
            )
        module = self.module_class(
            observation_space=self.observation_space,
            action_space=self.action_space,
            inference_only=self.inference_only,
            model_config=_plain_model_config(self.model_config),
        )
        if self.load_state_path is not None:
            module.restore_from_path(self.load_state_path)
        return module

    @classmethod
    def from_module(cls, module: RLModule) -> RLModuleSpec:
        """The spec that builds a module like `module` (its class, spaces, flags and `model_config`)."""
        if isinstance(module, MultiRLModule):
            raise ModuleError(
                f"RLModuleSpec.from_module() takes a single RLModule, got a {type(module).__name__}. "
                "Fix: use MultiRLModuleSpec.from_module(multi_module), or pass multi_module[module_id]."
            )
        return cls(
            module_class=type(module),
            observation_space=module.observation_space,
            action_space=module.action_space,
            inference_only=module.inference_only,
            learner_only=getattr(module, "learner_only", False),
            model_config=module.model_config,
        )

    def update(self, other: RLModuleSpec, override: bool = True) -> RLModuleSpec:
        """Merges `other` into this spec (in place; returns it), like `dict.update`.

        `override=True`: every field `other` sets (not None, a non-empty `model_config`) wins;
        `inference_only` becomes True if either is, `learner_only` only if both are.
        `override=False`: `other` only fills the fields this spec leaves unset; the two flags stay.
        """
        if not isinstance(other, RLModuleSpec):
            raise ModuleError(
                f"RLModuleSpec.update() takes another RLModuleSpec, got {type(other).__name__}. "
                "Fix: wrap the settings in RLModuleSpec(...)."
            )
        first, second = (other, self) if override else (self, other)
        for name in ("module_class", "observation_space", "action_space", "catalog_class", "load_state_path"):
            setattr(self, name, _first_set(getattr(first, name), getattr(second, name)))
        self.model_config = first.model_config or second.model_config
        if override:
            self.inference_only = other.inference_only or self.inference_only
            self.learner_only = other.learner_only and self.learner_only
        return self

    def as_multi_rl_module_spec(self) -> MultiRLModuleSpec:
        """A `MultiRLModuleSpec` holding this spec under "default_policy"."""
        return MultiRLModuleSpec(rl_module_specs={DEFAULT_MODULE_ID: self})

    def to_dict(self) -> dict[str, Any]:
        """The fields by name (the class and spaces stay objects; `model_config` becomes a plain dict)."""
        fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        fields["model_config"] = _plain_model_config(self.model_config)
        return fields

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> RLModuleSpec:
        """The spec `to_dict()` described (ModuleError naming an unknown key)."""
        return cls(**_known_fields(cls, d))


@checkpoint_class
@dataclass
class MultiRLModuleSpec:
    """How to build a `MultiRLModule`: one `RLModuleSpec` per module id.

    `inference_only=None` means "True only if every sub-spec is inference_only"; `True` builds
    every sub-module inference_only. `observation_space`, `action_space` and `model_config` are
    global settings the built container keeps as attributes (custom `multi_rl_module_class`es read
    them in `setup()`; the built-in container uses none of them).
    The spec reads like a dict of its sub-specs: `spec["p0"]`, `"p0" in spec`.
    """

    multi_rl_module_class: type[MultiRLModule] = MultiRLModule
    observation_space: gym.Space | None = None
    action_space: gym.Space | None = None
    inference_only: bool | None = None
    model_config: dict | None = None
    rl_module_specs: dict[ModuleID, RLModuleSpec] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.rl_module_specs, dict):
            raise ModuleError(
                "MultiRLModuleSpec.rl_module_specs must be a dict mapping module ids to RLModuleSpecs, "
                f"got {type(self.rl_module_specs).__name__}. Fix: pass {{'my_module': RLModuleSpec(...)}}, "
                "or pass a single RLModuleSpec directly to config.rl_module(rl_module_spec=...)."
            )
        if self.inference_only is None:
            self.inference_only = all(spec.inference_only for spec in self.rl_module_specs.values())

    @overload
    def build(self, module_id: None = None) -> MultiRLModule: ...
    @overload
    def build(self, module_id: ModuleID) -> RLModule: ...
    def build(self, module_id: ModuleID | None = None) -> MultiRLModule | RLModule:
        """Builds the `MultiRLModule` (every sub-module, then the container), or with `module_id`
        only that sub-module."""
        if module_id is not None:
            return self[module_id].build()
        specs = self.rl_module_specs
        if self.inference_only:
            specs = {mid: dataclasses.replace(spec, inference_only=True) for mid, spec in specs.items()}
        return self.multi_rl_module_class(
            rl_modules={mid: spec.build() for mid, spec in specs.items()},
            observation_space=self.observation_space,
            action_space=self.action_space,
            model_config=self.model_config,
        )

    @classmethod
    def from_module(cls, module: MultiRLModule) -> MultiRLModuleSpec:
        """The spec that builds a container like `module`: its class and one `RLModuleSpec.from_module`
        per sub-module."""
        if not isinstance(module, MultiRLModule):
            raise ModuleError(
                f"MultiRLModuleSpec.from_module() takes a MultiRLModule, got {type(module).__name__}. "
                "Fix: use RLModuleSpec.from_module(module) for a single module."
            )
        return cls(
            multi_rl_module_class=type(module),
            observation_space=getattr(module, "observation_space", None),
            action_space=getattr(module, "action_space", None),
            inference_only=all(sub.inference_only for sub in module.values()),
            model_config=getattr(module, "model_config", None),
            rl_module_specs={mid: RLModuleSpec.from_module(sub) for mid, sub in module.items()},
        )

    def add_modules(self, module_specs: Mapping[ModuleID, RLModuleSpec], override: bool = True) -> None:
        """Adds specs by module id. An id already present is replaced (`override=True`) or updated
        with the new spec's fields (`override=False`, see `RLModuleSpec.update`)."""
        for module_id, spec in module_specs.items():
            if override or module_id not in self.rl_module_specs:
                if not spec.inference_only:
                    self.inference_only = False
                self.rl_module_specs[module_id] = spec
            else:
                self.rl_module_specs[module_id].update(spec)

    def remove_modules(self, module_ids: ModuleID | Collection[ModuleID]) -> None:
        """Removes the given module ids (ids not present are ignored)."""
        for module_id in [module_ids] if isinstance(module_ids, str) else module_ids:
            self.rl_module_specs.pop(module_id, None)

    def update(self, other: MultiRLModuleSpec | RLModuleSpec, override: bool = False) -> None:
        """Merges `other` in: a `MultiRLModuleSpec`'s sub-specs go through `add_modules(..., override)`;
        an `RLModuleSpec` fills the unset fields of every sub-spec."""
        if isinstance(other, RLModuleSpec):
            if not other.inference_only:
                self.inference_only = False
            for spec in self.rl_module_specs.values():
                spec.update(other, override=False)
        elif isinstance(other, MultiRLModuleSpec):
            self.add_modules(other.rl_module_specs, override=override)
        else:
            raise ModuleError(
                "MultiRLModuleSpec.update() takes a MultiRLModuleSpec or an RLModuleSpec, got "
                f"{type(other).__name__}."
            )

    def as_multi_rl_module_spec(self) -> MultiRLModuleSpec:
        """This spec (so code can call it on either kind of spec)."""
        return self

    def __contains__(self, module_id: object) -> bool:
        return module_id in self.rl_module_specs

    def __getitem__(self, module_id: ModuleID) -> RLModuleSpec:
        try:
            return self.rl_module_specs[module_id]
        except KeyError:
            raise KeyError(
                f"No RLModuleSpec for module id {module_id!r}; this MultiRLModuleSpec has "
                f"{list(self.rl_module_specs)}."
            ) from None

    def __len__(self) -> int:
        return len(self.rl_module_specs)

    def to_dict(self) -> dict[str, Any]:
        """The fields by name, each sub-spec as its own `to_dict()`."""
        fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        fields["rl_module_specs"] = {mid: spec.to_dict() for mid, spec in self.rl_module_specs.items()}
        return fields

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> MultiRLModuleSpec:
        """The spec `to_dict()` described."""
        fields = _known_fields(cls, d)
        fields["rl_module_specs"] = {
            mid: RLModuleSpec.from_dict(spec) for mid, spec in fields.get("rl_module_specs", {}).items()
        }
        return cls(**fields)


def _first_set(preferred: Any, fallback: Any) -> Any:
    return fallback if preferred is None else preferred


def _plain_model_config(model_config: Any) -> dict | None:
    """A `model_config` given as a dataclass (e.g. `DefaultModelConfig`) as the dict modules read."""
    if dataclasses.is_dataclass(model_config) and not isinstance(model_config, type):
        return dataclasses.asdict(model_config)
    return cast(dict | None, model_config)  # any other model_config is a dict (or None)


def _known_fields(cls: type, d: Mapping[str, Any]) -> dict[str, Any]:
    names = [f.name for f in dataclasses.fields(cls)]
    unknown = sorted(set(d) - set(names))
    if unknown:
        raise ModuleError(f"{cls.__name__}.from_dict() got unknown keys {unknown}; the fields are {names}.")
    return dict(d)
