"""Adding and removing modules of a built learner (league play, self-play snapshots).

`Learner` inherits these: the module, its optimizers, the learner's config (`policies`,
`policies_to_train`) and the module spec its checkpoints rebuild from change together, with
RLlib 2.60's keywords.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from flywheel.core.rl_module.spec import MultiRLModuleSpec, RLModuleSpec
from flywheel.errors import ConfigError
from flywheel.typing import ModuleID

if TYPE_CHECKING:
    from flywheel.algorithms.algorithm_config import AlgorithmConfig
    from flywheel.core.rl_module.multi_rl_module import MultiRLModule
    from flywheel.metrics.metrics_logger import MetricsLogger


class ModuleChanges:
    """`add_module` / `remove_module` for `Learner` (which provides the module, config, optimizers)."""

    if TYPE_CHECKING:  # what `Learner` provides
        config: AlgorithmConfig
        metrics: MetricsLogger
        _module_spec: RLModuleSpec | MultiRLModuleSpec | None

        @property
        def module(self) -> MultiRLModule: ...
        def remove_optimizers(self, module_id: ModuleID) -> None: ...
        def should_module_be_updated(self, module_id: ModuleID, multi_agent_batch: Any = None) -> bool: ...
        def configure_optimizers_for_module(
            self, module_id: ModuleID, config: AlgorithmConfig | None = None
        ) -> None: ...

    def add_module(
        self,
        *,
        module_id: ModuleID,
        module_spec: RLModuleSpec,
        config_overrides: dict | None = None,
        new_should_module_be_updated: Any = None,
    ) -> MultiRLModuleSpec:
        """Builds `module_spec` (not inference-only) as `module_id`, replacing a module of that id, and
        its optimizers if it trains. Adds `module_id` to `config.policies`; `new_should_module_be_updated`
        (ids, or a callable `(module_id, batch) -> bool`) replaces `policies_to_train` when given.
        Returns the spec of the whole module after the change (what checkpoints rebuild)."""
        _refuse_overrides(config_overrides)
        spec = copy.copy(module_spec)
        spec.inference_only = False
        if module_id in self.module:
            self.remove_optimizers(module_id)
        self.module.add_module(module_id, spec.build(), override=True)
        policies = self.config.policies
        policies = (
            {**policies, module_id: module_spec} if isinstance(policies, dict) else {*policies, module_id}
        )
        module_spec_after = self._reconfigure(policies, new_should_module_be_updated)
        if self.should_module_be_updated(module_id):
            self.configure_optimizers_for_module(module_id=module_id, config=self.config)
        return module_spec_after

    def remove_module(
        self, module_id: ModuleID, *, new_should_module_be_updated: Any = None
    ) -> MultiRLModuleSpec:
        """Drops `module_id`, its optimizers and its metrics; returns the spec of the remaining module."""
        self.module.remove_module(module_id)
        self.remove_optimizers(module_id)
        if module_id in self.metrics:  # its results are not reported again
            self.metrics.delete(module_id)
        policies = self.config.policies
        if isinstance(policies, dict):
            policies = {mid: spec for mid, spec in policies.items() if mid != module_id}
        else:
            policies = set(policies) - {module_id}
        return self._reconfigure(policies, new_should_module_be_updated)

    def _reconfigure(self, policies: Any, policies_to_train: Any) -> MultiRLModuleSpec:
        """A config with the new module ids (and `policies_to_train`, when given), frozen like the
        old one; the module spec checkpoints rebuild from follows the module (and is returned)."""
        config = self.config.copy()
        config.multi_agent(policies=policies)
        if policies_to_train is not None:
            config.multi_agent(policies_to_train=policies_to_train)
        if self.config.is_frozen:
            config.freeze()
        self.config = config
        self._module_spec = spec = MultiRLModuleSpec.from_module(self.module)
        return spec


def _refuse_overrides(config_overrides: dict | None) -> None:
    if config_overrides:
        raise ConfigError(
            f"add_module(config_overrides={config_overrides!r}): flywheel has no per-module config "
            "overrides; every module trains with the learner's config. Fix: leave config_overrides out, "
            "or give the module its own learner settings through a custom Learner."
        )
