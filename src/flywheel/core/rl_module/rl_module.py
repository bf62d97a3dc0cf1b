"""`RLModule`: the neural-network part of a policy, free of any framework.

An RLModule maps a batch dict to an output dict, in three phases that may differ::

    out = module.forward_exploration({OBS: obs})   # runners, explore=True
    out = module.forward_inference({OBS: obs})     # runners, explore=False; evaluation
    out = module.forward_train(train_batch)        # learners, with gradients

Each returns at least `Columns.ACTION_DIST_INPUTS`; the module's distribution classes
(`get_*_action_dist_cls()`) turn those into actions, log-probabilities and entropies.
Subclasses build their layers in `setup()` and override `_forward` (all phases) or the
phase methods they need. `TorchRLModule` adds torch: modes, no-grad, weights as state.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import gymnasium as gym

from flywheel.checkpoints.checkpointable import Checkpointable
from flywheel.core.distributions import Distribution, distribution_for_space
from flywheel.core.rl_module.default_model_config import as_model_config_dict
from flywheel.errors import ModuleError
from flywheel.typing import DEFAULT_MODULE_ID

if TYPE_CHECKING:
    from flywheel.core.rl_module.multi_rl_module import MultiRLModule


class RLModule(Checkpointable):
    """Base class of all modules; see the module docstring for the forward protocol.

    Args:
        observation_space: Space of the observations the module receives (the output space of
            the env-to-module pipeline).
        action_space: Space of the actions the module's distributions produce.
        inference_only: Build only what runners need to act (e.g. no value branch); None counts as False.
        model_config: Free-form settings for `setup()` (default `{}`); a `DefaultModelConfig` counts as
            the dict of its fields.
        learner_only: Whether the module lives on learners only (RLlib's keyword; kept as an attribute).
        catalog_class: RLlib's model catalog; flywheel has none, so only None, or the class's
            `default_catalog_class` (the name of what its `setup()` builds), is accepted.

    Attributes `setup()` may set: `action_dist_cls`, the distribution class of all three phases
    (default None: the action space's default, see `get_inference_action_dist_cls`).
    """

    default_catalog_class: type | None = None
    """RLlib's catalog class whose networks this module's `setup()` builds (e.g. `PPOCatalog`), which
    `catalog_class=` may name; None: no catalog may be named."""

    def __init__(
        self,
        observation_space: gym.Space | None = None,
        action_space: gym.Space | None = None,
        inference_only: bool | None = False,
        model_config: dict | None = None,
        *,
        learner_only: bool = False,
        catalog_class: Any = None,
        **kwargs: Any,
    ):
        foreign_catalog = catalog_class not in (None, self.default_catalog_class)
        if foreign_catalog or kwargs:
            given = ["catalog_class"] * foreign_catalog + sorted(kwargs)
            raise ModuleError(
                f"{type(self).__name__}() got {given}, which flywheel's RLModule does not take (it has no "
                "model catalog). Fix: build the layers in setup() from self.observation_space, "
                "self.action_space and self.model_config, and leave catalog_class unset."
            )
        self.observation_space = observation_space
        self.action_space = action_space
        self.inference_only = bool(inference_only)
        self.learner_only = learner_only
        self.model_config = dict(as_model_config_dict(model_config)) if model_config else {}
        self.catalog = None  # RLlib's catalog attribute: flywheel modules build their layers in setup()
        self.action_dist_cls: type[Distribution] | None = None
        self._default_dist_cls: type[Distribution] | None = None
        self._is_stateful: bool | None = None
        self.setup()

    def setup(self) -> None:
        """Builds the module's layers from the spaces and `model_config` (override this)."""

    # Forward passes. The public methods are the stable entry points; subclasses override the
    # private ones. `TorchRLModule` wraps them in the right torch mode and grad context.

    def forward_inference(self, batch: dict, **kwargs) -> dict:
        """Greedy acting (no exploration): evaluation and `explore=False` sampling."""
        return self._forward_inference(batch, **kwargs)

    def forward_exploration(self, batch: dict, **kwargs) -> dict:
        """Acting while collecting experience (`explore=True`)."""
        return self._forward_exploration(batch, **kwargs)

    def forward_train(self, batch: dict, **kwargs) -> dict:
        """The pass a learner differentiates through."""
        return self._forward_train(batch, **kwargs)

    def _forward_inference(self, batch: dict, **kwargs) -> dict:
        return self._forward(batch, **kwargs)

    def _forward_exploration(self, batch: dict, **kwargs) -> dict:
        return self._forward(batch, **kwargs)

    def _forward_train(self, batch: dict, **kwargs) -> dict:
        return self._forward(batch, **kwargs)

    def _forward(self, batch: dict, **kwargs) -> dict:
        raise NotImplementedError(
            f"{type(self).__name__} overrides none of _forward, _forward_inference, "
            "_forward_exploration, _forward_train. Fix: override _forward (used by all three "
            "phases) or the phase methods the module is used with."
        )

    # Recurrent state.

    def get_initial_state(self) -> dict:
        """The state at an episode's start, without batch dimension (`{}`: not stateful).

        Stateful modules read `batch[STATE_IN]` (this structure with a leading batch
        dimension) and return `STATE_OUT` of the same structure.
        """
        return {}

    def is_stateful(self) -> bool:
        """Whether the module carries recurrent state (asked every step: cached)."""
        if self._is_stateful is None:
            self._is_stateful = bool(self.get_initial_state())
        return self._is_stateful

    def as_multi_rl_module(self) -> MultiRLModule:
        """A `MultiRLModule` holding this module under "default_policy".

        It holds this very module (its weights and state), where RLlib builds a fresh copy from the
        module's spec (new weights); see docs/porting.md.
        """
        from flywheel.core.rl_module.multi_rl_module import MultiRLModule  # (that module imports this one)

        return MultiRLModule({DEFAULT_MODULE_ID: self})

    def unwrapped(self) -> RLModule:
        """The module itself (RLlib's name: there, for a module wrapped for distributed training)."""
        return self

    # Action distributions.

    def get_inference_action_dist_cls(self) -> type[Distribution]:
        """Distribution class for `forward_inference` outputs: `self.action_dist_cls` when `setup()` set
        one, else the action space's default (`distribution_for_space`)."""
        if self.action_dist_cls is not None:
            return self.action_dist_cls
        # (Read here once known: GetActions asks every step, a call costs a tenth of a microsecond.)
        return self._default_dist_cls or self._default_action_dist_cls()

    def get_exploration_action_dist_cls(self) -> type[Distribution]:
        """Distribution class for `forward_exploration` outputs (default: the inference one, as in RLlib)."""
        return self.get_inference_action_dist_cls()

    def get_train_action_dist_cls(self) -> type[Distribution]:
        """Distribution class for `forward_train` outputs (default: the inference one, as in RLlib)."""
        return self.get_inference_action_dist_cls()

    def _default_action_dist_cls(self) -> type[Distribution]:
        if self._default_dist_cls is None:
            if self.action_space is None:
                raise ModuleError(
                    f"{type(self).__name__} has no action_space, so it has no default action "
                    "distribution. Fix: build the module with an action_space, or override its "
                    "get_*_action_dist_cls() methods."
                )
            self._default_dist_cls = distribution_for_space(self.action_space)
        return self._default_dist_cls

    # State (weights). Framework subclasses implement these.

    def get_non_inference_attributes(self) -> list[str]:
        """Names of sub-modules that runners do not need (left out when `inference_only`)."""
        return []

    def get_state(
        self,
        components: str | list[str] | None = None,
        not_components: str | list[str] | None = None,
        *,
        inference_only: bool = False,
    ) -> dict[str, Any]:
        """The module's weights by name (see `TorchRLModule.get_state`); `{}` for a module without
        weights (e.g. a heuristic `RLModule` that is not a `TorchRLModule`), as in RLlib."""
        return {}

    def set_state(self, state: dict[str, Any]) -> None:
        """Loads weights produced by `get_state` (see `TorchRLModule.set_state`); a module without
        weights has nothing to load."""

    def get_ctor_args_and_kwargs(self) -> tuple[tuple, dict[str, Any]]:
        """The constructor arguments (`RLModule.from_checkpoint` rebuilds the module with them)."""
        return (), {
            "observation_space": self.observation_space,
            "action_space": self.action_space,
            "inference_only": self.inference_only,
            "model_config": self.model_config,
        }

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(observation_space={self.observation_space}, "
            f"action_space={self.action_space}, inference_only={self.inference_only})"
        )
