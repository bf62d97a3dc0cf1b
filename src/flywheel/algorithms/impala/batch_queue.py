"""`BatchQueue`: the train batches between the runners and the learners (IMPALA's learner queue,
APPO's circular buffer).

    queue = BatchQueue(capacity=8, uses_per_batch=2, random_order=True, seed=0)   # APPO's default
    dropped_steps = queue.put(episodes, num_steps)    # evicts the oldest batch when full
    while queue:
        learner_group.update(episodes=queue.get())     # each batch comes out up to 2 times

It holds at most `capacity` batches, each handed out `uses_per_batch` times (IMPALA: once; APPO's
circular buffer: K times, the "replay coefficient" of the IMPACT paper) and then forgotten. `get`
takes the oldest batch, or with `random_order` one drawn uniformly among the uses left. A batch put
into a full queue evicts the oldest, whose unused steps `put` returns (the learners fell behind the
runners: those steps are never trained on).
"""

from __future__ import annotations

from typing import Any

import numpy as np


class BatchQueue:
    """At most `capacity` batches, each handed out `uses_per_batch` times.

    Args:
        capacity: Batches held at most.
        uses_per_batch: How often `get` hands out each batch.
        random_order: Draw uniformly among the uses left (else oldest first).
        seed: Seeds the draws.
    """

    def __init__(
        self, capacity: int, uses_per_batch: int = 1, *, random_order: bool = False, seed: int | None = None
    ) -> None:
        self.capacity = capacity
        self.uses_per_batch = uses_per_batch
        self.random_order = random_order
        self._rng = np.random.default_rng(seed)
        self._entries: list[list] = []  # [batch, uses left, env steps], oldest first

    def put(self, batch: Any, num_steps: int) -> int:
        """Adds `batch` (of `num_steps` env steps); returns the env steps of the batch it evicted
        (0 when there was room)."""
        dropped = 0
        if len(self._entries) >= self.capacity:
            dropped = self._entries.pop(0)[2]
        self._entries.append([batch, self.uses_per_batch, num_steps])
        return dropped

    def get(self) -> Any:
        """The next batch (oldest first, or a uniform draw among the uses left)."""
        if not self._entries:
            raise IndexError("BatchQueue.get() on an empty queue")
        index = 0
        if self.random_order:
            uses = np.array([entry[1] for entry in self._entries], dtype=float)
            index = int(self._rng.choice(len(uses), p=uses / uses.sum()))
        entry = self._entries[index]
        entry[1] -= 1
        if entry[1] == 0:
            del self._entries[index]
        return entry[0]

    def __len__(self) -> int:
        """The uses left over all batches (how many `get` calls can follow)."""
        return sum(entry[1] for entry in self._entries)

    @property
    def num_batches(self) -> int:
        """Batches held."""
        return len(self._entries)

    def get_state(self) -> dict:
        """What `set_state` returns the queue to (the batches themselves are not copied)."""
        return {"entries": [list(entry) for entry in self._entries], "rng": self._rng.bit_generator.state}

    def set_state(self, state: dict) -> None:
        self._entries = [list(entry) for entry in state["entries"]]
        self._rng.bit_generator.state = state["rng"]
