"""`RLModuleSpec` / `MultiRLModuleSpec`: how to build a module, without building it.

Configs, runners and learners pass specs around and build the module where it lives (a
runner builds an `inference_only` module, a learner the full one), so no module is ever
pickled between processes.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import gymnasium as gym

from flywheel.checkpoints.registry import checkpoint_class
from flywheel.core.rl_module.multi_rl_module import MultiRLModule
from flywheel.core.rl_module.rl_module import RLModule
from flywheel.errors import ModuleError
from flywheel.typing import ModuleID


@checkpoint_class
@dataclass
class RLModuleSpec:
    """Everything needed to build one RLModule: `module_class(**the other fields)`.

    Fields left `None` are filled by the algorithm config (default module class, the env's
    spaces after the env-to-module pipeline, merged `model_config`).
    """

    module_class: type[RLModule] | None = None
    observation_space: gym.Space | None = None
    action_space: gym.Space | None = None
    inference_only: bool = False
    model_config: dict | None = None

    def build(self) -> RLModule:
        """Builds the module (ModuleError if the class or a space is missing)."""
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
        return self.module_class(
            observation_space=self.observation_space,
            action_space=self.action_space,
            inference_only=self.inference_only,
            model_config=self.model_config,
        )

    def update(self, other: RLModuleSpec) -> RLModuleSpec:
        """Overrides this spec's fields with `other`'s fields that are not None (in place)."""
        for f in dataclasses.fields(self):
            value = getattr(other, f.name)
            if value is not None:
                setattr(self, f.name, value)
        return self


@checkpoint_class
@dataclass
class MultiRLModuleSpec:
    """How to build a `MultiRLModule`: one `RLModuleSpec` per module id."""

    multi_rl_module_class: type[MultiRLModule] = MultiRLModule
    rl_module_specs: dict[ModuleID, RLModuleSpec] = field(default_factory=dict)

    def build(self) -> MultiRLModule:
        """Builds every sub-module, then the container."""
        modules = {module_id: spec.build() for module_id, spec in self.rl_module_specs.items()}
        return self.multi_rl_module_class(rl_modules=modules)
