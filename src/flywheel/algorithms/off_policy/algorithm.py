"""`OffPolicyAlgorithm`: the replay loop DQN and SAC share."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from flywheel.algorithms.algorithm import Algorithm
from flywheel.checkpoints.checkpointable import select
from flywheel.errors import LearnerError
from flywheel.metrics import keys
from flywheel.metrics.keys import ENV_RUNNER_RESULTS, TD_ERROR_KEY, TIMERS
from flywheel.replay import (
    INDICES,
    MultiAgentEpisodeReplayBuffer,
    PrioritizedEpisodeReplayBuffer,
    TransitionEpisodes,
)
from flywheel.typing import DEFAULT_MODULE_ID, ModuleID

if TYPE_CHECKING:
    from flywheel.algorithms.off_policy.config import OffPolicyConfig

REPLAY_BUFFER = "replay_buffer"
"""The key of the buffer's contents in `get_state()` (with `store_in_checkpoints`)."""
PRIORITY_EPSILON = 1e-6
"""Added to |TD error| so no transition's priority (and sampling chance) drops to zero."""


class OffPolicyAlgorithm(Algorithm):
    """Each training step samples a few env steps into a replay buffer, then (once
    `num_steps_sampled_before_learning_starts` env steps were sampled) updates the learners on
    replayed transitions and syncs the weights to the runners::

        for _ in range(sample_rounds):                   # from training_intensity
            replay_buffer.add(env_runner_group.sample())
        for _ in range(updates):
            episodes = replay_buffer.sample(n_step=..., gamma=..., beta=..., lookback=...)  # per module
            results = learner_group.update(episodes=episodes)  # as PPO's: pipeline, loss, target networks
            replay_buffer.update_priorities(|results[module][TD_ERROR_KEY]| + eps, results[module][INDICES])
        sync weights to the runners

    `replay_buffer` is built from `config.replay_buffer_config` (one buffer per module for
    multi-agent configs; only modules that train are replayed). Checkpoints leave it out unless
    `replay_buffer_config["store_in_checkpoints"]` is True (then they are as large as the buffer and
    a restored algorithm samples exactly as the saved one would); without it, a restored algorithm
    refills the buffer (with its lifetime counters intact, it learns right away).
    """

    config: OffPolicyConfig

    def setup(self, config: OffPolicyConfig) -> None:
        super().setup(config)
        self.replay_buffer = self.config.build_replay_buffer()
        self._sample_rounds, self._updates = self.config.sample_and_train_rounds()
        settings = self.config.replay_buffer_settings()
        self._beta = settings["beta"]
        self._store_buffer = settings["store_in_checkpoints"]
        self._lookback = self._replay_lookback()
        n_step = self.config.n_step
        self._n_step = n_step if isinstance(n_step, int) else tuple(n_step)
        buffer = self.replay_buffer
        if isinstance(buffer, MultiAgentEpisodeReplayBuffer):
            self._prioritized = issubclass(buffer.buffer_class, PrioritizedEpisodeReplayBuffer)
        else:
            self._prioritized = isinstance(buffer, PrioritizedEpisodeReplayBuffer)

    def _replay_lookback(self) -> int:
        """Observations before each replayed one that the learner pipeline reads (its
        `required_episode_lookback`: 3 with `FrameStacking(num_frames=4)`, as for Atari ids)."""
        pipeline = self.env_runner.env_to_module
        spaces = (
            (None, None)
            if self.config.is_multi_agent
            else (pipeline.observation_space, pipeline.action_space)
        )
        return self.config.build_learner_connector(*spaces).required_episode_lookback

    def training_step(self) -> None:
        for _ in range(self._sample_rounds):
            episodes = self.sample_episodes()
            with self.metrics.log_time((TIMERS, keys.REPLAY_BUFFER_ADD_DATA_TIMER), reduce="mean"):
                self.replay_buffer.add(episodes)
        stored = (keys.REPLAY_BUFFER_RESULTS, keys.NUM_ENV_STEPS_STORED)
        self.metrics.log_value(stored, len(self.replay_buffer), window=1)
        sampled = self.metrics.peek((ENV_RUNNER_RESULTS, keys.NUM_ENV_STEPS_SAMPLED_LIFETIME), default=0)
        if sampled < self.config.num_steps_sampled_before_learning_starts:
            return
        for _ in range(self._updates):
            with self.metrics.log_time((TIMERS, keys.REPLAY_BUFFER_SAMPLE_TIMER), reduce="mean"):
                episodes = self._replay()
            if len(episodes):
                self._update_priorities(self.update_learners(episodes))
        self.sync_runner_weights()

    def _replay(self) -> TransitionEpisodes:
        """`total_train_batch_size` transitions (of every module that trains and has stored steps)."""
        kwargs: dict[str, Any] = {
            "n_step": self._n_step,
            "gamma": self.config.gamma,
            "beta": self._beta,
            "lookback": self._lookback,
        }
        buffer = self.replay_buffer
        if isinstance(buffer, MultiAgentEpisodeReplayBuffer):
            to_train = self.config.policies_to_train
            kwargs["module_ids"] = [
                module_id
                for module_id in buffer
                if len(buffer[module_id])
                and (callable(to_train) or to_train is None or module_id in to_train)
            ]
        return buffer.sample(self.config.total_train_batch_size, **kwargs)

    def _update_priorities(self, results: dict[str, Any]) -> None:
        """Prioritized replay: each replayed module's rows get priority |TD error| + epsilon."""
        if not self._prioritized:
            return
        for module_id, module_results in results.items():
            buffer = self._module_buffer(module_id)
            if buffer is None or TD_ERROR_KEY not in module_results:
                continue
            td_errors = np.concatenate(module_results[TD_ERROR_KEY])
            indices = np.concatenate(module_results.get(INDICES, [np.zeros(0, np.int64)]))
            if td_errors.shape != indices.shape:
                raise LearnerError(
                    f"Module {module_id!r} returned {td_errors.shape[0]} TD errors for {indices.shape[0]} "
                    f"replayed rows ({INDICES!r}), expected one per row. Fix: keep the {INDICES!r} column "
                    "row for row with the batch in custom learner pieces, and log TD errors per row."
                )
            buffer.update_priorities(np.abs(td_errors) + PRIORITY_EPSILON, indices)

    def _module_buffer(self, module_id: ModuleID) -> PrioritizedEpisodeReplayBuffer | None:
        """The prioritized buffer holding `module_id`'s transitions (None for `__all_modules__` and modules
        without one)."""
        buffer = self.replay_buffer
        if isinstance(buffer, MultiAgentEpisodeReplayBuffer):
            buffer = buffer[module_id] if module_id in buffer else None  # noqa: SIM401 (no .get on the buffer)
        elif module_id != DEFAULT_MODULE_ID:
            buffer = None
        return buffer if isinstance(buffer, PrioritizedEpisodeReplayBuffer) else None

    # Checkpoints.

    def get_state(
        self,
        components: str | list[str] | None = None,
        not_components: str | list[str] | None = None,
        **kwargs: object,
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
