"""`DQN`: deep Q-learning (Mnih et al., 2015) with Rainbow options, on the off-policy replay loop."""

from __future__ import annotations

from typing import TYPE_CHECKING

from flywheel.algorithms.off_policy.algorithm import OffPolicyAlgorithm

if TYPE_CHECKING:
    from flywheel.algorithms.dqn.config import DQNConfig


class DQN(OffPolicyAlgorithm):
    """Samples into a replay buffer and updates on replayed n-step transitions
    (`OffPolicyAlgorithm.training_step`); the loss is `DQNTorchLearner`'s, the module
    `DefaultDQNTorchRLModule` (epsilon-greedy exploration, its epsilon scheduled by the learner
    and synced to the runners with the weights)."""

    config: DQNConfig
