"""`DQN`: deep Q-learning (Mnih et al., 2015) with Rainbow options, and the off-policy loop SAC reuses."""

from __future__ import annotations

from typing import Any

import numpy as np

from flywheel.algorithms.algorithm import Algorithm
from flywheel.checkpoints.checkpointable import select
from flywheel.metrics import keys
from flywheel.metrics.keys import TIMERS
from flywheel.replay import INDICES, PrioritizedEpisodeReplayBuffer
from flywheel.typing import DEFAULT_MODULE_ID

REPLAY_BUFFER = "replay_buffer"
"""The key of the buffer's contents in `DQN.get_state()` (with `store_in_checkpoints`)."""
PRIORITY_EPSILON = 1e-6
"""Added to |TD error| so no transition's priority (and sampling chance) drops to zero."""


class DQN(Algorithm):
    """Off-policy: each training step samples a few env steps into a replay buffer, then (once
    `num_steps_sampled_before_learning_starts` env steps were sampled) takes gradient steps on
    replayed batches and syncs the weights to the runners::

        for _ in range(sample_rounds):                  # from training_intensity
            replay_buffer.add(env_runner_group.sample())
        for _ in range(updates):
            batch = replay_buffer.sample(n_step=..., gamma=..., beta=...)
            learner.update_from_batch(batch)            # loss, target networks
            replay_buffer.update_priorities(|td errors|)   # prioritized replay
        sync weights (and epsilon) to the runners

    `replay_buffer` is built from `config.replay_buffer_config`. Checkpoints leave it out unless
    `replay_buffer_config["store_in_checkpoints"]` is True (then they are as large as the buffer and
    a restored algorithm samples exactly as the saved one would); without it, a restored algorithm
    refills the buffer (with its lifetime counters intact, it learns right away).
    """

    def __init__(self, config: Any, **kwargs: Any) -> None:
        super().__init__(config, **kwargs)
        self.replay_buffer = self.config.build_replay_buffer()
        self._sample_rounds, self._updates = self.config.sample_and_train_rounds()
        settings = self.config.replay_buffer_settings()
        self._beta = settings["beta"]
        self._store_buffer = settings["store_in_checkpoints"]
        self._n_step = (
            self.config.n_step if isinstance(self.config.n_step, int) else tuple(self.config.n_step)
        )

    def training_step(self) -> None:
        for _ in range(self._sample_rounds):
            episodes = self._sample()
            with self.metrics.log_time((TIMERS, keys.REPLAY_BUFFER_ADD_DATA_TIMER), reduce="mean"):
                self.replay_buffer.add(episodes)
        stored = (keys.REPLAY_BUFFER_RESULTS, keys.NUM_ENV_STEPS_STORED)
        self.metrics.log_value(stored, len(self.replay_buffer), window=1)
        if self._lifetime_env_steps() < self.config.num_steps_sampled_before_learning_starts:
            return
        for _ in range(self._updates):
            self._update_from_replay()
        self._sync_weights()

    def _update_from_replay(self) -> None:
        """One learner update on a replayed batch; feeds its TD errors back as priorities."""
        config = self.config
        with self.metrics.log_time((TIMERS, keys.REPLAY_BUFFER_SAMPLE_TIMER), reduce="mean"):
            batch = self.replay_buffer.sample(
                config.total_train_batch_size, n_step=self._n_step, gamma=config.gamma, beta=self._beta
            )
        indices = batch.pop(INDICES)
        timesteps = {keys.NUM_ENV_STEPS_SAMPLED_LIFETIME: self._lifetime_env_steps()}
        with self.metrics.log_time((TIMERS, keys.LEARNER_UPDATE_TIMER), reduce="mean"):
            # One local learner for now; remote learners would each take a shard of the batch.
            results, td_errors = self.learner_group.foreach_learner(
                lambda learner: (
                    learner.update_from_batch({DEFAULT_MODULE_ID: batch}, timesteps=timesteps),
                    learner.td_errors,
                )
            )[0]
        self._log_learner_results(results)
        self.metrics.log_value(keys.NUM_ENV_STEPS_TRAINED_LIFETIME, len(indices), reduce="lifetime_sum")
        if isinstance(self.replay_buffer, PrioritizedEpisodeReplayBuffer):
            priorities = np.abs(td_errors[DEFAULT_MODULE_ID]) + PRIORITY_EPSILON
            self.replay_buffer.update_priorities(priorities, indices)

    # Checkpoints.

    def get_state(
        self,
        components: str | list[str] | None = None,
        not_components: str | list[str] | None = None,
        **kwargs: Any,
    ) -> dict[str, Any]:
        """`Algorithm.get_state`, plus `replay_buffer` when the config stores it in checkpoints."""
        state = super().get_state(components, not_components, **kwargs)
        if self._store_buffer and select(REPLAY_BUFFER, components, not_components)[0]:
            state[REPLAY_BUFFER] = self.replay_buffer.get_state()
        return state

    def set_state(self, state: dict[str, Any]) -> None:
        super().set_state(state)
        if REPLAY_BUFFER in state:
            self.replay_buffer.set_state(state[REPLAY_BUFFER])
