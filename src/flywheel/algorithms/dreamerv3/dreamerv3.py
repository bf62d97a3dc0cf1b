"""`DreamerV3`: sample one env step per sub-env, replay B x T sequences until the replay ratio is met.

    every training step:
        replay_buffer.add(sample rollout_fragment_length steps per sub-env)   # the acting path keeps h, z, a
        while replayed < training_ratio * env steps sampled since learning began:
            learner_group.update(batch=replay_buffer.sample_sequences(B, T))  # one step of each optimizer
            replayed += B * T
        sync weights to the runners

Learning begins once the buffer holds B x T env steps (sampled with the initial, nearly uniform
actor). From then on the replay ratio holds exactly: after every training step, replayed env steps
lie in [training_ratio * sampled, training_ratio * sampled + B * T), reported as
`actual_training_ratio` (RLlib 2.60's name) together with the two counts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from flywheel.algorithms.algorithm import Algorithm
from flywheel.algorithms.dreamerv3.rl_module import IS_FIRST
from flywheel.columns import Columns
from flywheel.metrics import keys
from flywheel.metrics.keys import LEARNER_RESULTS, TIMERS
from flywheel.replay import EpisodeReplayBuffer
from flywheel.replay.sequences import IS_TERMINATED
from flywheel.typing import DEFAULT_MODULE_ID, StateDict

if TYPE_CHECKING:
    from flywheel.algorithms.dreamerv3.config import DreamerV3Config

__all__ = ["DreamerV3"]

_COUNTERS = "dreamerv3_replay_counters"


class DreamerV3(Algorithm):
    """DreamerV3 on flywheel's runners (the module's recurrent state per sub-env) and learners."""

    config: DreamerV3Config

    def setup(self, config: DreamerV3Config) -> None:
        super().setup(config)
        capacity = int(self.config.replay_buffer_config.get("capacity", 1_000_000))
        # The runners' recurrent states (h, z, a: kilobytes per step) are recomputed from the sequences.
        self.replay_buffer = EpisodeReplayBuffer(
            capacity,
            batch_size_B=self.config.batch_size_B,
            seed=self.config.seed,
            store_extra_model_outputs=False,
        )
        self._sampled_since_learning = 0
        self._replayed = 0

    def training_step(self) -> None:
        config = self.config
        batch_steps = config.batch_size_B * config.batch_length_T
        episodes = self.sample_episodes()
        new_steps = sum(len(episode) for episode in episodes)
        with self.metrics.log_time((TIMERS, keys.REPLAY_BUFFER_ADD_DATA_TIMER), reduce="mean"):
            self.replay_buffer.add(episodes)
        self.metrics.log_value(
            (keys.REPLAY_BUFFER_RESULTS, keys.NUM_ENV_STEPS_STORED), len(self.replay_buffer), window=1
        )
        if len(self.replay_buffer) < batch_steps:
            return
        self._sampled_since_learning += new_steps
        while self._replayed < config.training_ratio * self._sampled_since_learning:
            with self.metrics.log_time((TIMERS, keys.REPLAY_BUFFER_SAMPLE_TIMER), reduce="mean"):
                batch = self._replay_batch()
            with self.metrics.log_time((TIMERS, keys.LEARNER_UPDATE_TIMER), reduce="mean"):
                results = self.learner_group.update(batch, timesteps=self.learner_timesteps())
            self.metrics.aggregate(results, key=LEARNER_RESULTS)
            self._replayed += batch_steps
        self.sync_runner_weights()
        self.metrics.log_dict(
            {
                "actual_training_ratio": self._replayed / self._sampled_since_learning,
                "num_env_steps_replayed_lifetime": self._replayed,
                "num_env_steps_sampled_since_learning_lifetime": self._sampled_since_learning,
            },
            window=1,
        )

    def _replay_batch(self) -> dict[str, dict[str, np.ndarray]]:
        """B x T replayed steps as learner rows (row-major by sequence)."""
        config = self.config
        sample = self.replay_buffer.sample_sequences(
            batch_size_B=config.batch_size_B, batch_length_T=config.batch_length_T
        )
        rows = {
            Columns.OBS: sample["obs"],
            Columns.ACTIONS: sample["actions"],
            Columns.REWARDS: sample["rewards"],
            Columns.TERMINATEDS: sample[IS_TERMINATED].astype(np.float32),
            IS_FIRST: sample[IS_FIRST].astype(np.float32),
        }
        return {DEFAULT_MODULE_ID: {key: value.reshape(-1, *value.shape[2:]) for key, value in rows.items()}}

    def get_state(
        self,
        components: str | list[str] | None = None,
        not_components: str | list[str] | None = None,
        **kwargs: object,
    ) -> StateDict:
        """`Algorithm.get_state`, plus the replay-ratio counters (the buffer itself is not stored)."""
        state = super().get_state(components, not_components, **kwargs)
        state[_COUNTERS] = {"sampled": self._sampled_since_learning, "replayed": self._replayed}
        return state

    def set_state(self, state: StateDict) -> None:
        super().set_state(state)
        if _COUNTERS in state:
            self._sampled_since_learning = int(state[_COUNTERS]["sampled"])
            self._replayed = int(state[_COUNTERS]["replayed"])
