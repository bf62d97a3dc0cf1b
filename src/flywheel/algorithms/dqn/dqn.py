"""`DQN`: deep Q-learning (Mnih et al., 2015) with Rainbow options, on the off-policy replay loop."""

from __future__ import annotations

from flywheel.algorithms.off_policy.algorithm import OffPolicyAlgorithm


class DQN(OffPolicyAlgorithm):
    """Samples into a replay buffer and updates on replayed n-step transitions
    (`OffPolicyAlgorithm.training_step`); the loss is `DQNTorchLearner`'s, the module
    `DefaultDQNTorchRLModule` (epsilon-greedy exploration, its epsilon scheduled by the learner
    and synced to the runners with the weights)."""
