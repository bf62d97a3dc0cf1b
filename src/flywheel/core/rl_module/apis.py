"""Capability APIs: mixins a module implements so that learners can rely on them.

A learner checks `isinstance(module, ValueFunctionAPI)` once when it is built and raises a
clear error if its loss needs values the module cannot give, instead of failing mid-update.
"""

from __future__ import annotations

import abc
from typing import Any

import torch

from flywheel.errors import LearnerError

TARGET_NETWORK_ACTION_DIST_INPUTS = "target_network_action_dist_inputs"
"""Output key of `TargetNetworkAPI.forward_target` for policy networks (APPO's old policy), as in RLlib."""


class ValueFunctionAPI(abc.ABC):
    """A module that estimates state values (needed by PPO's GAE and value loss)."""

    @abc.abstractmethod
    def compute_values(self, batch: dict, embeddings: torch.Tensor | None = None) -> torch.Tensor:
        """Values of `batch[OBS]`: shape `[B]`, or `[B, T]` for `[B, T, ...]` sequence batches.

        Args:
            batch: The train batch (stateful modules also read `STATE_IN`).
            embeddings: `EMBEDDINGS` from this module's `forward_train` output on the same
                batch; when given, the value branch reuses them instead of encoding again.
        """


TARGET_NETWORK_ACTION_DIST_INPUTS = "target_network_action_dist_inputs"
"""Output key of `forward_target` for the target networks' action distribution inputs (APPO)."""


class InferenceOnlyAPI(abc.ABC):
    """A module whose `get_non_inference_attributes()` names the parts runners do not need.

    As in RLlib, a `TorchRLModule` with this API built with `inference_only=True` deletes those
    attributes after `setup()` (dotted names reach sub-attributes), and `get_state(inference_only=True)`
    leaves their weights out. (Every flywheel module may name such parts; only modules with this
    API have them deleted.)
    """

    @abc.abstractmethod
    def get_non_inference_attributes(self) -> list[str]:
        """Attribute names (or `"a.b"` paths) of the parts not used to compute actions."""


class TargetNetworkAPI(abc.ABC):
    """A module with slowly updated copies of some of its networks (DQN, SAC)."""

    @abc.abstractmethod
    def make_target_networks(self) -> None:
        """Creates the target copies (called once, after `setup()`, on learners only)."""

    @abc.abstractmethod
    def get_target_network_pairs(self) -> list[tuple[torch.nn.Module, torch.nn.Module]]:
        """`(main, target)` pairs the learner syncs (hard or Polyak updates)."""

    @abc.abstractmethod
    def forward_target(self, batch: dict) -> dict:
        """The forward pass through the target networks (no gradients needed)."""


class SelfSupervisedLossAPI(abc.ABC):
    """A module that brings its own loss (e.g. a curiosity model trained next to a policy).

    The learner calls `compute_self_supervised_loss` for such a module instead of its own
    `compute_loss_for_module`, and algorithms do not require their own APIs of it (a PPO learner
    trains it without `compute_values`).
    """

    @abc.abstractmethod
    def compute_self_supervised_loss(
        self, *, learner: Any, module_id: str, config: Any, batch: dict, fwd_out: dict, **kwargs: Any
    ) -> torch.Tensor:
        """The module's scalar loss on one minibatch (`learner.metrics` logs its terms)."""


def require_value_function(learner: Any, module_id: str, algorithm: str) -> None:
    """Raises `LearnerError` unless `learner.module[module_id]` computes values (learners call it when
    built). Modules the learner does not train, or that bring their own loss, need none."""
    sub = learner.module[module_id]
    if isinstance(sub, SelfSupervisedLossAPI) or not learner.should_module_be_updated(module_id):
        return
    if not hasattr(sub, "compute_values"):
        raise LearnerError(
            f"{algorithm} needs a value function, but module {module_id!r} ({type(sub).__name__}) has no "
            "compute_values. Fix: inherit from flywheel.ValueFunctionAPI and implement compute_values."
        )
