"""`SAC`: soft actor-critic (Haarnoja et al., 2018) on flywheel's runners, replay buffers and learners."""

from __future__ import annotations

from flywheel.algorithms.dqn.dqn import DQN


class SAC(DQN):
    """Off-policy like DQN, with the same loop (sample into the replay buffer, update on replayed
    batches, sync weights); the losses and the policy (squashed Gaussian for Box actions,
    Categorical for Discrete ones) are SAC's (`SACTorchLearner`, `DefaultSACTorchRLModule`).
    Exploration is the policy's own sampling."""
