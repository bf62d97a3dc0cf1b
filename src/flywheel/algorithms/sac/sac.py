"""`SAC`: soft actor-critic (Haarnoja et al., 2018) on the off-policy replay loop."""

from __future__ import annotations

from typing import TYPE_CHECKING

from flywheel.algorithms.off_policy.algorithm import OffPolicyAlgorithm

if TYPE_CHECKING:
    from flywheel.algorithms.sac.config import SACConfig


class SAC(OffPolicyAlgorithm):
    """Samples into a replay buffer and updates on replayed n-step transitions
    (`OffPolicyAlgorithm.training_step`); the losses and the policy (squashed Gaussian for Box
    actions, Categorical for Discrete ones) are SAC's (`SACTorchLearner`, `DefaultSACTorchRLModule`).
    Exploration is the policy's own sampling."""

    config: SACConfig
