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


def require_value_function(module: Any, module_id: str, algorithm: str) -> None:
    """Raises `LearnerError` unless `module[module_id]` computes values (learners call it when built)."""
    sub = module[module_id]
    if not hasattr(sub, "compute_values"):
        raise LearnerError(
            f"{algorithm} needs a value function, but module {module_id!r} ({type(sub).__name__}) has no "
            "compute_values. Fix: inherit from flywheel.ValueFunctionAPI and implement compute_values."
        )
