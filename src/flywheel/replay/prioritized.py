"""`PrioritizedEpisodeReplayBuffer`: replay ∝ priority^alpha, with importance weights.

Prioritized experience replay (Schaul et al., 2016) draws stored step ``i`` with probability
``P(i) = p_i^α / Σ_k p_k^α`` and corrects the bias this adds with the importance weight
``w_i = (N · P(i))^-β / max_k w_k``; since the largest weight belongs to the smallest
priority, ``w_i = (p_i^α / min_k p_k^α)^-β``. New steps get the largest priority seen so far,
so each is likely to be replayed at least once before its TD error is known::

    episodes = buffer.sample(n_step=3, beta=0.4)    # WEIGHTS and INDICES are extra model outputs
    results = learner.update(episodes=episodes)     # DQN / SAC: per-row TD errors and INDICES per module
    module = results["default_policy"]
    buffer.update_priorities(np.abs(np.concatenate(module[TD_ERROR_KEY])) + 1e-6, np.concatenate(module[INDICES]))
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flywheel.errors import ConfigError
from flywheel.replay.episode_buffer import EpisodeReplayBuffer
from flywheel.replay.sum_tree import MinTree, SumTree


class PrioritizedEpisodeReplayBuffer(EpisodeReplayBuffer):
    """`EpisodeReplayBuffer` that samples steps ∝ ``priority ** alpha``.

    Args:
        capacity: Maximum number of env steps stored.
        batch_size_B: Default number of transitions per `sample` call.
        alpha: How strongly priorities shape sampling (0 = uniform, 1 = proportional).
        seed: Seed of the buffer's random generator.
    """

    def __init__(
        self, capacity: int = 10_000, *, batch_size_B: int = 16, alpha: float = 0.6, seed: Any = None
    ):
        super().__init__(capacity, batch_size_B=batch_size_B, seed=seed)
        if not isinstance(alpha, int | float) or alpha < 0:
            raise ConfigError(f"Expected alpha to be a number >= 0, got {alpha!r}.")
        self.alpha = float(alpha)
        self._max_priority = 1.0
        self._sum_tree = SumTree(self.capacity)
        self._min_tree = MinTree(self.capacity)

    def _on_rows_changed(self, evicted: np.ndarray, written: np.ndarray) -> None:
        if len(evicted):
            self._sum_tree.set(evicted, 0.0)
            self._min_tree.set(evicted, np.inf)
        value = self._max_priority**self.alpha
        self._sum_tree.set(written, value)
        self._min_tree.set(written, value)

    def _draw(self, size: int, beta: float) -> tuple[np.ndarray, np.ndarray]:
        """Row positions drawn ∝ priority^alpha and their importance weights for ``beta``."""
        if not isinstance(beta, int | float) or beta < 0:
            raise ConfigError(f"Expected beta to be a number >= 0, got {beta!r}.")
        mass = self._rng.random(size) * self._sum_tree.total()
        positions = self._sum_tree.find_prefix(mass)
        weights = (self._sum_tree.get(positions) / self._min_tree.min()) ** -beta
        return positions, weights.astype(np.float32)

    def update_priorities(self, priorities: np.ndarray, indices: np.ndarray) -> None:
        """Sets the priorities (e.g. ``|TD error| + eps``) of the sampled rows ``indices`` (``batch[INDICES]``).

        Rows evicted since they were sampled are skipped; the largest priority seen becomes
        the priority of steps added from now on.
        """
        priorities = np.asarray(priorities, np.float64).reshape(-1)
        indices = np.asarray(indices, np.int64).reshape(-1)
        storage = self._storage
        if len(priorities) != len(indices):
            raise ConfigError(
                f"Expected one priority per index, got {len(priorities)} priorities for {len(indices)} "
                f"indices; pass the batch's INDICES with the priorities computed from that batch."
            )
        if not np.all(np.isfinite(priorities) & (priorities > 0)):
            bad = priorities[~(np.isfinite(priorities) & (priorities > 0))][:3].tolist()
            raise ConfigError(
                f"Expected finite priorities > 0, got {bad}; use np.abs(td_error) + a small epsilon."
            )
        if len(indices) and (indices.min() < 0 or indices.max() >= storage.next_id):
            raise ConfigError(
                f"Expected indices this buffer returned (ids in [0, {storage.next_id})), got values in "
                f"[{indices.min()}, {indices.max()}]; pass batch[INDICES] of a sample() from this buffer."
            )
        live = indices >= storage.first_id
        positions = indices[live] % self.capacity
        values = priorities[live] ** self.alpha
        self._sum_tree.set(positions, values)
        self._min_tree.set(positions, values)
        if live.any():
            self._max_priority = max(self._max_priority, float(priorities[live].max()))

    def get_state(self) -> dict[str, Any]:
        storage = self._storage
        positions = np.arange(storage.first_id, storage.next_id) % self.capacity
        return {
            **super().get_state(),
            "priorities": self._sum_tree.get(positions),
            "max_priority": self._max_priority,
        }

    def set_state(self, state: dict[str, Any]) -> None:
        super().set_state(state)
        storage = self._storage
        positions = np.arange(storage.first_id, storage.next_id) % self.capacity
        self._sum_tree = SumTree(self.capacity)
        self._min_tree = MinTree(self.capacity)
        self._sum_tree.set(positions, state["priorities"])
        self._min_tree.set(positions, state["priorities"])
        self._max_priority = float(state["max_priority"])


__all__ = ["PrioritizedEpisodeReplayBuffer"]
