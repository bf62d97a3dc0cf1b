"""`IMPALA`: importance-weighted actor-learner architecture (Espeholt et al., 2018), and the loop APPO reuses.

One training step (with remote runners)::

    batches = env_runner_group.sample_async(block=queue is empty)   # finished fragments; runners go on
    queue.put(fragments grouped into train batches)                  # full queue: the oldest is dropped
    learner_group.update(episodes=queue.get())                       # V-trace corrects for the lag
    every broadcast_interval updates: weights go with each runner's next sample()

Runners never wait for the learners: each always has a `sample()` in flight. With
`num_env_runners=0` a step samples one train batch on the local runner and trains on it (each use
the queue grants) before sampling again, as RLlib does.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from flywheel.algorithms.algorithm import Algorithm
from flywheel.columns import Columns
from flywheel.metrics import keys
from flywheel.metrics.keys import ALL_MODULES, ENV_RUNNER_RESULTS, LEARNER_RESULTS, TIMERS

if TYPE_CHECKING:
    from flywheel.algorithms.impala.config import IMPALAConfig
    from flywheel.typing import EpisodeType

_LEARNERS = (LEARNER_RESULTS, ALL_MODULES)


class IMPALA(Algorithm):
    """Asynchronous sampling, a queue of train batches, V-trace learners (see the module docstring)."""

    config: IMPALAConfig

    reconfigurable_settings = Algorithm.reconfigurable_settings | {"broadcast_interval"}

    def setup(self, config: IMPALAConfig) -> None:
        super().setup(config)
        self.learner_queue = self.config.build_learner_queue()
        self._forming: list = []  # fragments of the next train batch
        self._forming_steps = 0
        self._updates_since_broadcast = 0

    def training_step(self) -> None:
        if not self.env_runner_group.num_remote_env_runners():
            self._enqueue(self.sample_episodes(num_timesteps=self.config.total_train_batch_size))
            while self.learner_queue:
                self._learn()
            return
        self._collect(block=False)
        while not self.learner_queue:
            self._collect(block=True)
        self._learn()

    def _collect(self, block: bool) -> None:
        """Takes the runners' finished fragments (waiting for one when `block`) into train batches."""
        with self.metrics.log_time((TIMERS, keys.ENV_RUNNER_SAMPLING_TIMER), reduce="mean"):
            fragments = self.env_runner_group.sample_async(block=block)
        self.metrics.aggregate(self.env_runner_group.get_metrics_states(), key=ENV_RUNNER_RESULTS)
        for episodes in fragments:
            self._enqueue(episodes)

    def _enqueue(self, episodes: list) -> None:
        """Adds `episodes` to the forming train batch; a full one goes to the queue."""
        self._forming.extend(episodes)
        self._forming_steps += sum(len(e) for e in episodes)
        if self._forming_steps < self.config.total_train_batch_size:
            return
        dropped = self.learner_queue.put(_QueuedBatch.of(self._forming), self._forming_steps)
        self.metrics.log_value(_LEARNERS + (keys.NUM_ENV_STEPS_DROPPED,), dropped, reduce="sum")
        self.metrics.log_value(
            _LEARNERS + (keys.NUM_ENV_STEPS_DROPPED_LIFETIME,), dropped, reduce="lifetime_sum"
        )
        self._forming, self._forming_steps = [], 0

    def _learn(self) -> None:
        """One learner update on the next train batch; logs its weights lag; broadcasts when due."""
        batch = self.learner_queue.get()
        self._log_weights_lag(batch)
        self.update_learners(batch.episodes)
        queue_size = self.learner_queue.num_batches
        self.metrics.log_value(_LEARNERS + (keys.LEARNER_QUEUE_SIZE,), queue_size, reduce="mean")
        self._updates_since_broadcast += 1
        if self._updates_since_broadcast >= self.config.broadcast_interval:
            self.sync_runner_weights()
            self._updates_since_broadcast = 0

    def _log_weights_lag(self, batch: _QueuedBatch) -> None:
        """How many updates behind the learners the weights that sampled `batch` are, per step."""
        seq_no = self.learner_group.weights_seq_no
        lag_mean = seq_no - batch.seq_no_sum / max(1, batch.num_steps)
        self.metrics.log_value(_LEARNERS + (keys.WEIGHTS_LAG_MEAN,), lag_mean, reduce="mean")
        self.metrics.log_value(_LEARNERS + (keys.WEIGHTS_LAG_MAX,), seq_no - batch.seq_no_min, reduce="max")

    @contextlib.contextmanager
    def all_or_nothing(self) -> Iterator[None]:
        """Also returns the queue and the forming train batch to their state before a failed iteration
        (whatever it sampled is dropped with its metrics)."""
        saved = (self.learner_queue.get_state(), list(self._forming), self._forming_steps)
        saved_updates = self._updates_since_broadcast
        try:
            with super().all_or_nothing():
                yield
        except BaseException:
            queue, self._forming, self._forming_steps = saved
            self.learner_queue.set_state(queue)
            self._updates_since_broadcast = saved_updates
            raise


class _QueuedBatch(NamedTuple):
    """A train batch in the queue, with the `weights_seq_no` sum and minimum over its steps (taken
    once, not on each of the circular buffer's uses)."""

    episodes: list
    seq_no_sum: int
    seq_no_min: int
    num_steps: int

    @classmethod
    def of(cls, episodes: list) -> _QueuedBatch:
        seq_nos = np.concatenate([_seq_nos(episode) for episode in episodes])
        seq_no_min = int(seq_nos.min()) if len(seq_nos) else 0
        return cls(episodes, int(seq_nos.sum()), seq_no_min, len(seq_nos))


def _seq_nos(episode: EpisodeType) -> np.ndarray:
    """The `weights_seq_no` of each step of `episode` (each agent's, for multi-agent episodes)."""
    agents = getattr(episode, "agent_episodes", None)
    if agents is not None:
        parts = [_seq_nos(agent) for agent in agents.values() if len(agent)]
        return np.concatenate(parts) if parts else np.zeros(0, np.int64)
    return np.asarray(episode.get_extra_model_outputs(Columns.WEIGHTS_SEQ_NO), dtype=np.int64).reshape(-1)
