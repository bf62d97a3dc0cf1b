"""`StepStorage`: the episodes of a replay buffer, laid out as a ring of env steps.

Each stored env step is one row: the observation it started from, its action, reward and
extra model outputs, the episode it belongs to and its timestep there. Rows are written in
the order chunks arrive and evicted in the same order, so the rows form a ring of ``capacity``
rows and a row's position is ``row_id % capacity`` (``row_id`` counts every step ever added).

Episodes are kept in a small table of *slots*: where they end (``t`` of the newest
observation), whether they terminated or were truncated, their newest observation (it has no
row, being no step's start) and their newest row, which links to the first row of the next
chunk when the episode continues. ``row_next`` links the rows of one episode across chunks, so
an n-step window is a few vectorized hops, whatever other episodes were written in between.
"""

from __future__ import annotations

from collections import deque
from typing import Any

import numpy as np
import tree

from flywheel.checkpoints import codec
from flywheel.episodes.single_agent_episode import SingleAgentEpisode
from flywheel.episodes.space_items import space_struct
from flywheel.errors import CheckpointError, EpisodeError
from flywheel.replay.column_store import ColumnStore, take
from flywheel.utils.nested import stack


class StepStorage:
    """Rows of env steps (a ring of ``capacity``) plus the table of the episodes they belong to."""

    def __init__(self, capacity: int, *, store_extras: bool = True):
        self.capacity = capacity
        self.store_extras = store_extras  # False: the chunks' extra model outputs are not kept
        self.num_steps = 0  # live rows: ids [next_id - num_steps, next_id)
        self.next_id = 0  # rows ever written (= env steps ever added)
        self._chunks: deque[tuple[int, int]] = deque()  # (slot, length) in the order added
        self.row_slot = np.zeros(capacity, np.int64)
        self.row_t = np.zeros(capacity, np.int64)
        self.row_next = np.full(capacity, -1, np.int64)
        self.row_prev = np.full(capacity, -1, np.int64)
        self.rewards = np.zeros(capacity, np.float32)
        self.obs: ColumnStore | None = None
        self.actions: ColumnStore | None = None
        self.extras: dict[str, ColumnStore] = {}
        self.extra_present: dict[str, np.ndarray] = {}
        self.extra_count: dict[str, int] = {}
        self._slot_of: dict[str, int] = {}
        self._slot_ids: list[str | None] = []
        self._free_slots: list[int] = []
        self.ep_end_t = np.zeros(0, np.int64)
        self.ep_terminated = np.zeros(0, bool)
        self.ep_truncated = np.zeros(0, bool)
        self.ep_last_pos = np.zeros(0, np.int64)
        self.ep_num_steps = np.zeros(0, np.int64)
        self.final_obs: ColumnStore | None = None
        self.spaces: tuple[Any, Any] = (None, None)  # (observation, action) space of the first chunk

    # ------------------------------------------------------------------ bookkeeping

    @property
    def first_id(self) -> int:
        """Id of the oldest live row."""
        return self.next_id - self.num_steps

    @property
    def num_episodes(self) -> int:
        return len(self._slot_of)

    def episode_ids(self, slots: np.ndarray) -> np.ndarray:
        """The ids of the episodes in ``slots`` (an object array)."""
        ids = self._slot_ids
        return np.array([ids[slot] for slot in slots.tolist()], dtype=object)

    def positions_to_ids(self, positions: np.ndarray) -> np.ndarray:
        first = self.first_id
        return first + (positions - first) % self.capacity

    # ------------------------------------------------------------------------- add

    def add_chunk(self, episode: SingleAgentEpisode) -> tuple[np.ndarray, np.ndarray]:
        """Stores ``episode``'s own steps (not its lookback); returns (evicted, written) row positions.

        A chunk whose ``id_`` is stored continues that episode; the oldest chunks are evicted
        first until the new one fits. A chunk that cannot be stored changes nothing.
        """
        n = len(episode)
        self._check_chunk(episode, n)
        columns = self._chunk_columns(episode)
        evicted = [self._evict_oldest() for _ in range(self._chunks_to_evict(n))]
        written = (self.next_id + np.arange(n)) % self.capacity
        slot = self._slot_of.get(episode.id_)
        previous = -1 if slot is None else self.ep_last_pos[slot]
        if slot is None:
            slot = self._new_slot(episode.id_)
        else:
            self.row_next[previous] = written[0]
        self._write_rows(episode, columns, written, slot)
        self.row_prev[written[0]] = previous
        self.ep_end_t[slot] = episode.t
        self.ep_terminated[slot] = episode.is_terminated
        self.ep_truncated[slot] = episode.is_truncated
        self.ep_last_pos[slot] = written[-1]
        self.ep_num_steps[slot] += n
        self._chunks.append((slot, n))
        self.next_id += n
        self.num_steps += n
        return (np.concatenate(evicted) if evicted else np.zeros(0, np.int64)), written

    def _chunk_columns(self, episode: SingleAgentEpisode) -> dict[str, Any]:
        """The chunk's data as stacked arrays, checked against what the storage holds."""
        columns = {
            "obs": stack(episode.get_observations(), space_struct(episode.observation_space)),
            "actions": stack(episode.get_actions(), space_struct(episode.action_space)),
            "rewards": stack(episode.get_rewards()),
            "extras": (
                {key: stack(items) for key, items in episode.get_extra_model_outputs().items()}
                if self.store_extras
                else {}
            ),
        }
        if self.obs is None:
            self.obs = ColumnStore("observation", columns["obs"], self.capacity)
            self.actions = ColumnStore("action", columns["actions"], self.capacity)
            self.final_obs = ColumnStore("observation", columns["obs"], len(self.ep_end_t))
            self.spaces = (episode.observation_space, episode.action_space)
        assert self.obs is not None and self.actions is not None  # set up by the first episode
        self.obs.check(columns["obs"])
        self.actions.check(columns["actions"])
        for key, data in columns["extras"].items():
            if key in self.extras:
                self.extras[key].check(data)
        return columns

    def _check_chunk(self, episode: SingleAgentEpisode, n: int) -> None:
        if n > self.capacity:
            raise EpisodeError(
                f"Episode {episode.id_} brings {n} env steps in one chunk, more than the buffer's capacity "
                f"of {self.capacity}; raise the capacity or sample fewer steps per chunk."
            )
        slot = self._slot_of.get(episode.id_)
        if slot is None:
            return
        if self.ep_terminated[slot] or self.ep_truncated[slot]:
            raise EpisodeError(
                f"Episode {episode.id_} is stored and already done at t={self.ep_end_t[slot]}, so it cannot "
                f"take the chunk starting at t_started={episode.t_started}; add each chunk only once."
            )
        if episode.t_started != self.ep_end_t[slot]:
            raise EpisodeError(
                f"Episode {episode.id_} is stored up to t={self.ep_end_t[slot]}, but the new chunk starts at "
                f"t_started={episode.t_started}; add an episode's chunks in order, each exactly once."
            )

    def _chunks_to_evict(self, n: int) -> int:
        free, count = self.capacity - self.num_steps, 0
        while free < n:
            free += self._chunks[count][1]
            count += 1
        return count

    def _evict_oldest(self) -> np.ndarray:
        slot, n = self._chunks.popleft()
        positions = (self.first_id + np.arange(n)) % self.capacity
        following = self.row_next[positions[-1]]
        if following >= 0:  # the episode's next chunk stays: its first row is now the oldest one
            self.row_prev[following] = -1
        self.num_steps -= n
        self.ep_num_steps[slot] -= n
        for key, present in self.extra_present.items():
            self.extra_count[key] -= int(present[positions].sum())
        if self.ep_num_steps[slot] == 0:
            episode_id = self._slot_ids[slot]
            assert episode_id is not None  # the slot held this chunk's episode
            del self._slot_of[episode_id]
            self._slot_ids[slot] = None
            self._free_slots.append(slot)
        return positions

    def _new_slot(self, episode_id: str) -> int:
        if self._free_slots:
            slot = self._free_slots.pop()
            self._slot_ids[slot] = episode_id
        else:
            slot = len(self._slot_ids)
            self._slot_ids.append(episode_id)
            self._grow_slots(slot + 1)
        self._slot_of[episode_id] = slot
        self.ep_num_steps[slot] = 0
        return slot

    def _grow_slots(self, needed: int) -> None:
        size = len(self.ep_end_t)
        if needed <= size:
            return
        size = max(2 * size, needed, 16)
        for name in ("ep_end_t", "ep_terminated", "ep_truncated", "ep_last_pos", "ep_num_steps"):
            old = getattr(self, name)
            new = np.zeros(size, old.dtype)
            new[: len(old)] = old
            setattr(self, name, new)
        if self.final_obs is not None:
            self.final_obs.resize(size)

    def _write_rows(
        self, episode: SingleAgentEpisode, columns: dict[str, Any], rows: np.ndarray, slot: int
    ) -> None:
        n = len(rows)
        obs = columns["obs"]
        assert self.obs is not None and self.actions is not None and self.final_obs is not None
        # (all set up by `_chunk_columns` for the first episode)
        self.obs.write(rows, take(obs, slice(0, n)))
        self.final_obs.write(np.array([slot]), take(obs, slice(n, n + 1)))
        self.actions.write(rows, columns["actions"])
        self.rewards[rows] = columns["rewards"]
        self.row_slot[rows] = slot
        self.row_t[rows] = np.arange(episode.t_started, episode.t)
        self.row_next[rows[:-1]] = rows[1:]
        self.row_next[rows[-1]] = -1
        self.row_prev[rows[1:]] = rows[:-1]
        self._write_extras(columns["extras"], rows)

    def _write_extras(self, extras: dict[str, Any], rows: np.ndarray) -> None:
        for key, data in extras.items():
            if key not in self.extras:
                self.extras[key] = ColumnStore(f"extra model output {key!r}", data, self.capacity)
                self.extra_present[key] = np.zeros(self.capacity, bool)
                self.extra_count[key] = 0
            self.extras[key].write(rows, data)
        for key, present in self.extra_present.items():
            present[rows] = key in extras
            self.extra_count[key] += len(rows) if key in extras else 0

    # ---------------------------------------------------------------------- read

    def n_step(self, positions: np.ndarray, n_step: int | np.ndarray, gamma: float) -> dict[str, np.ndarray]:
        """The n-step transitions that start at the rows ``positions``.

        A window stops early at its episode's newest stored observation: at a termination or
        truncation, or (for an ongoing episode) where the stored data ends. ``"n_step"`` holds
        the steps actually used; ``"before_next"`` the row of the observation before ``"next_obs"``.
        """
        slots = self.row_slot[positions]
        t = self.row_t[positions]
        end = self.ep_end_t[slots]
        n = np.minimum(n_step, end - t)
        returns = np.zeros(len(positions), np.float64)
        current = positions
        for j in range(int(n.max())):
            active = j < n
            returns += np.where(active, self.rewards[current] * gamma**j, 0.0)
            following = self.row_next[current]
            current = np.where(active & (following >= 0), following, current)
        at_end = t + n == end
        assert self.obs is not None and self.final_obs is not None  # rows are stored
        next_obs = self.obs.read(current)
        if at_end.any():
            final = self.final_obs.read(slots[at_end])
            for leaf, final_leaf in zip(tree.flatten(next_obs), tree.flatten(final)):
                leaf[at_end] = final_leaf
        return {
            "next_obs": next_obs,
            "before_next": np.where(at_end, current, self.row_prev[current]),
            "returns": returns.astype(np.float32),
            "terminateds": at_end & self.ep_terminated[slots],
            "truncateds": at_end & self.ep_truncated[slots],
            "n_step": n,
            "t": t,
            "slots": slots,
        }

    def history(self, positions: np.ndarray, length: int) -> np.ndarray:
        """``[len(positions), length]`` rows: the ``length`` rows up to each of ``positions`` in its
        episode, oldest first (the last column is ``positions``). Before an episode's first stored row
        that row repeats, as `FrameStacking` repeats an episode's first frame."""
        rows = np.empty((len(positions), length), np.int64)
        current = positions
        for j in range(length - 1, -1, -1):
            rows[:, j] = current
            previous = self.row_prev[current]
            current = np.where(previous >= 0, previous, current)
        return rows

    def read_extras(self, positions: np.ndarray) -> dict[str, Any]:
        """Every live extra model output at ``positions``; all of them must have every output."""
        out = {}
        for key, store in self.extras.items():
            if self.extra_count[key] == 0:
                continue
            missing = int((~self.extra_present[key][positions]).sum())
            if missing:
                raise EpisodeError(
                    f"Expected every sampled step to have the extra model output {key!r}, but {missing} of "
                    f"{len(positions)} have none; record the same outputs at every step, or sample with "
                    f"include_extra_model_outputs=False."
                )
            out[key] = store.read(positions)
        return out

    # ---------------------------------------------------------------------- state

    def get_state(self) -> dict[str, Any]:
        """Live rows in id order and the live episodes (numpy and plain data)."""
        ids = np.arange(self.first_id, self.next_id)
        positions = ids % self.capacity
        live = [slot for slot, id_ in enumerate(self._slot_ids) if id_ is not None]
        compact = np.full(len(self._slot_ids), -1, np.int64)
        compact[live] = np.arange(len(live))
        following = self.row_next[positions]
        live_slots = np.asarray(live, np.int64)
        return {
            "next_id": self.next_id,
            "spaces": codec.encode(self.spaces, "the replay buffer's spaces"),
            "rows": {
                "obs": self.obs.read(positions) if self.obs else None,
                "actions": self.actions.read(positions) if self.actions else None,
                "rewards": self.rewards[positions],
                "t": self.row_t[positions],
                "slot": compact[self.row_slot[positions]],
                "next_id": np.where(following >= 0, self.positions_to_ids(following), -1),
                "extras": {
                    key: (store.read(positions), self.extra_present[key][positions])
                    for key, store in self.extras.items()
                    if self.extra_count[key]
                },
            },
            "chunks": [(int(compact[slot]), n) for slot, n in self._chunks],
            "episodes": {
                "ids": [self._slot_ids[slot] for slot in live],
                "end_t": self.ep_end_t[live_slots],
                "terminated": self.ep_terminated[live_slots],
                "truncated": self.ep_truncated[live_slots],
                "last_id": self.positions_to_ids(self.ep_last_pos[live_slots]),
                "num_steps": self.ep_num_steps[live_slots],
                "final_obs": self.final_obs.read(live_slots) if self.final_obs else None,
            },
        }

    @classmethod
    def from_state(cls, state: dict[str, Any], capacity: int) -> StepStorage:
        """Rebuilds a storage of ``capacity`` rows from `get_state` output."""
        rows, episodes = state["rows"], state["episodes"]
        n = len(rows["rewards"])
        if n > capacity:
            raise CheckpointError(
                f"The replay state holds {n} env steps, more than this buffer's capacity of {capacity}; "
                f"build the buffer with capacity >= {n} to restore it."
            )
        storage = cls(capacity)
        storage.next_id, storage.num_steps = state["next_id"], n
        storage.spaces = tuple(codec.decode(state["spaces"], "the replay buffer state"))
        positions = np.arange(storage.next_id - n, storage.next_id) % capacity
        storage._restore_episodes(episodes, capacity)
        if n:
            storage.obs = ColumnStore("observation", rows["obs"], capacity)
            storage.actions = ColumnStore("action", rows["actions"], capacity)
            storage.obs.write(positions, rows["obs"])
            storage.actions.write(positions, rows["actions"])
        storage.rewards[positions] = rows["rewards"]
        storage.row_t[positions] = rows["t"]
        storage.row_slot[positions] = rows["slot"]
        storage.row_next[positions] = np.where(rows["next_id"] >= 0, rows["next_id"] % capacity, -1)
        linked = positions[storage.row_next[positions] >= 0]
        storage.row_prev[storage.row_next[linked]] = linked
        for key, (data, present) in rows["extras"].items():
            storage.extras[key] = ColumnStore(f"extra model output {key!r}", data, capacity)
            storage.extras[key].write(positions, data)
            storage.extra_present[key] = np.zeros(capacity, bool)
            storage.extra_present[key][positions] = present
            storage.extra_count[key] = int(np.sum(present))
        storage._chunks = deque((int(slot), int(n)) for slot, n in state["chunks"])
        return storage

    def _restore_episodes(self, episodes: dict[str, Any], capacity: int) -> None:
        ids = list(episodes["ids"])
        self._slot_ids = ids
        self._slot_of = {id_: slot for slot, id_ in enumerate(ids)}
        self._grow_slots(len(ids))
        k = len(ids)
        self.ep_end_t[:k] = episodes["end_t"]
        self.ep_terminated[:k] = episodes["terminated"]
        self.ep_truncated[:k] = episodes["truncated"]
        self.ep_last_pos[:k] = np.asarray(episodes["last_id"], np.int64) % capacity
        self.ep_num_steps[:k] = episodes["num_steps"]
        if k:
            self.final_obs = ColumnStore("observation", episodes["final_obs"], len(self.ep_end_t))
            self.final_obs.write(np.arange(k), episodes["final_obs"])
