"""`PPO`: proximal policy optimization (Schulman et al., 2017) on flywheel's runners and learners."""

from __future__ import annotations

from typing import TYPE_CHECKING

from flywheel.algorithms.algorithm import Algorithm

if TYPE_CHECKING:
    from flywheel.algorithms.ppo.config import PPOConfig


class PPO(Algorithm):
    """On-policy: each step samples a fresh train batch, updates the learners on it, syncs weights."""

    config: PPOConfig

    reconfigurable_settings = Algorithm.reconfigurable_settings | {
        "train_batch_size",
        "train_batch_size_per_learner",
    }

    def training_step(self) -> None:
        """Sample `train_batch_size` env steps with the current policy, run `num_epochs` of minibatch
        SGD on PPO's loss over them (`PPOTorchLearner`), send the new weights to the runners."""
        episodes = self.sample_episodes(num_timesteps=self.config.total_train_batch_size)
        self.update_learners(episodes)
        self.sync_runner_weights()
