"""`BatchMemo`: a learner's train batches of the episode lists it is handed again.

APPO's circular buffer hands each train batch (a list of episodes) to `learner.update` up to K
times. The learner pipeline's output for a list does not change between its uses, so the learner
keeps it and runs the pipeline once per list (as RLlib, whose learner holds the buffer of
processed batches), together with what the loss computes per batch that stays valid across
uses (APPO: the target network's outputs, until the target network moves)::

    memo = BatchMemo(uses_per_batch=2, capacity=8)
    entry = memo.get(episodes)                  # None the first time this list comes
    if entry is None:
        entry = memo.put(episodes, learner_pipeline(episodes))
    train_on(entry.batch)                       # after its last use, the entry is dropped

A list is recognised by identity and by the episode objects it holds (a list changed in place
is a new batch). Entries leave after their last use, or the oldest first beyond `capacity` (the
buffer evicted a batch before its last use).
"""

from __future__ import annotations

import dataclasses
from collections import OrderedDict
from collections.abc import Sequence


@dataclasses.dataclass(eq=False)
class MemoEntry:
    """One episode list's train batch, and the version of what the learner added to it."""

    members: tuple  # the episode objects of the list (holding them keeps their ids unique)
    batch: dict  # {module_id: {column: tensor}}
    uses_left: int
    derived_version: int | None = None  # the learner's: of the columns it derived (None: none yet)


class BatchMemo:
    """The train batches of at most `capacity` episode lists, each kept for `uses_per_batch` uses.

    Args:
        uses_per_batch: How often the same list comes (its first use included).
        capacity: Lists kept at most (the buffer's batches).
    """

    def __init__(self, uses_per_batch: int, capacity: int) -> None:
        self.uses_per_batch = uses_per_batch
        self.capacity = capacity
        self._entries: OrderedDict[int, MemoEntry] = OrderedDict()

    def get(self, episodes: Sequence) -> MemoEntry | None:
        """The entry of `episodes` (counting one use), or None when this list is new or changed."""
        entry = self._entries.get(id(episodes))
        if entry is None:
            return None
        if len(entry.members) != len(episodes) or any(a is not b for a, b in zip(entry.members, episodes)):
            del self._entries[id(episodes)]
            return None
        self._use(id(episodes), entry)
        return entry

    def put(self, episodes: Sequence, batch: dict) -> MemoEntry:
        """Keeps `batch` as the train batch of `episodes` (its first use); returns its entry."""
        entry = MemoEntry(tuple(episodes), batch, self.uses_per_batch)
        self._entries[id(episodes)] = entry
        self._use(id(episodes), entry)
        while len(self._entries) > self.capacity:
            self._entries.popitem(last=False)
        return entry

    def _use(self, key: int, entry: MemoEntry) -> None:
        entry.uses_left -= 1
        if entry.uses_left <= 0:
            del self._entries[key]

    def clear(self) -> None:
        """Forgets every batch (the pipeline, the modules or the weights changed)."""
        self._entries.clear()

    def __len__(self) -> int:
        """Episode lists kept."""
        return len(self._entries)
