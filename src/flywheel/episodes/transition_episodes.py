"""`TransitionEpisodes`: n-step transitions replayed from a buffer, as RLlib's one-step episodes, held as columns.

A replay buffer's `sample()` returns them and the learner pipeline turns them into the train batch::

    episodes = replay_buffer.sample(num_items=32, n_step=3, gamma=0.99)   # TransitionEpisodes
    results = learner_group.update(episodes=episodes)    # AddObservations..., AddNextObservations..., ...

Transition `i` is the one-step `SingleAgentEpisode` RLlib 2.60's buffers sample: observations
`[o_t, o_{t+n}]`, the action `a_t`, one reward (the discounted sum of the window's rewards),
the done flags of the window's end, the stored episode's `id_` and `t_started = t`, and the extra
model outputs `n_step`, `weights` (importance weights) and `replay_indices` (row ids for
`update_priorities`). They are stored as one array per column and module (`blocks`), so the
default learner pieces build the batch with one slice per column instead of one call per episode.

Episode objects are built only when code asks for them (iterating, indexing): a custom learner
piece sees real `SingleAgentEpisode`s and may change them. From then on (`touched`) the episode
objects are the data, and the default pieces read them as they read any episodes.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any, overload

import numpy as np

from flywheel.columns import Columns
from flywheel.episodes.single_agent_episode import SingleAgentEpisode
from flywheel.errors import EpisodeError
from flywheel.typing import ModuleID
from flywheel.utils.nested import take

EPISODE_COLUMNS = (
    Columns.OBS,
    Columns.NEXT_OBS,
    Columns.ACTIONS,
    Columns.REWARDS,
    Columns.TERMINATEDS,
    Columns.TRUNCATEDS,
)
"""The columns every block holds; any other column of a block is an extra model output."""


@dataclass(frozen=True)
class TransitionBlock:
    """The transitions of one module: one row per transition in every column.

    `columns` holds `EPISODE_COLUMNS` (observations and actions may be nested dicts/tuples of
    arrays) plus the extra model outputs; `episode_ids` and `t_started` say where each row comes
    from; `module_id` None means the default policy. `lookback`, when the buffer was sampled with
    one, maps `OBS` and `NEXT_OBS` to the L observations before each row's `o_t` and `o_{t+n}`
    (`[rows, L, ...]`, oldest first): the frames the learner's `FrameStacking` stacks in front.
    """

    columns: dict[str, Any]
    episode_ids: np.ndarray
    t_started: np.ndarray
    module_id: ModuleID | None = None
    observation_space: Any = None
    action_space: Any = None
    lookback: dict[str, np.ndarray] | None = None

    def __len__(self) -> int:
        return len(self.columns[Columns.REWARDS])

    def rows(self, start: int, stop: int) -> TransitionBlock:
        """Rows `start:stop` of every column (views, no copies)."""
        return replace(
            self,
            columns={key: take(value, slice(start, stop)) for key, value in self.columns.items()},
            episode_ids=self.episode_ids[start:stop],
            t_started=self.t_started[start:stop],
            lookback=None
            if self.lookback is None
            else {key: take(value, slice(start, stop)) for key, value in self.lookback.items()},
        )

    def episode(self, i: int) -> SingleAgentEpisode:
        """Row `i` as RLlib's one-step episode (numpy'd)."""
        columns = self.columns
        extras = {key: [take(value, i)] for key, value in columns.items() if key not in EPISODE_COLUMNS}
        return SingleAgentEpisode(
            str(self.episode_ids[i]),
            observations=[take(columns[Columns.OBS], i), take(columns[Columns.NEXT_OBS], i)],
            observation_space=self.observation_space,
            actions=[take(columns[Columns.ACTIONS], i)],
            action_space=self.action_space,
            rewards=[columns[Columns.REWARDS][i]],
            extra_model_outputs=extras,
            terminated=bool(columns[Columns.TERMINATEDS][i]),
            truncated=bool(columns[Columns.TRUNCATEDS][i]),
            t_started=int(self.t_started[i]),
            len_lookback_buffer=0,
            module_id=self.module_id,
        ).to_numpy()


class TransitionEpisodes(Sequence[SingleAgentEpisode]):
    """A sequence of one-step `SingleAgentEpisode`s (see the module docstring), block after block."""

    def __init__(self, blocks: Sequence[TransitionBlock]) -> None:
        self._blocks = tuple(block for block in blocks if len(block))
        self._starts = np.cumsum([0, *(len(block) for block in self._blocks)])
        self._episodes: list[SingleAgentEpisode | None] = [None] * int(self._starts[-1])
        self._touched = False

    @property
    def blocks(self) -> tuple[TransitionBlock, ...]:
        """The columns, one block per module (what the default learner pieces read while not `touched`)."""
        return self._blocks

    @property
    def touched(self) -> bool:
        """Whether an episode object was handed out (it may have been changed since)."""
        return self._touched

    def __len__(self) -> int:
        return len(self._episodes)

    @overload
    def __getitem__(self, index: int) -> SingleAgentEpisode: ...

    @overload
    def __getitem__(self, index: slice) -> list[SingleAgentEpisode]: ...

    def __getitem__(self, index: int | slice) -> SingleAgentEpisode | list[SingleAgentEpisode]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if not isinstance(index, int | np.integer):
            raise EpisodeError(
                f"TransitionEpisodes are a sequence of episodes, indexed by int or slice; got {index!r}. "
                "Fix: read a column of module i's transitions as episodes.blocks[i].columns[column], or "
                "run the episodes through a learner pipeline for a train batch."
            )
        n = len(self)
        if not -n <= index < n:
            raise EpisodeError(f"Transition index {index} is out of range for {n} transitions.")
        index %= n
        self._touched = True
        episode = self._episodes[index]
        if episode is None:
            b = int(np.searchsorted(self._starts, index, side="right")) - 1
            episode = self._episodes[index] = self._blocks[b].episode(index - int(self._starts[b]))
        return episode

    def __iter__(self) -> Iterator[SingleAgentEpisode]:
        for i in range(len(self)):
            yield self[i]

    def env_steps(self) -> int:
        """Steps these episodes hold: one per transition (built episodes are not needed to count)."""
        return len(self)

    def split(self, num_shards: int) -> Sequence[Sequence[SingleAgentEpisode]]:
        """`num_shards` parts, each with a near-equal consecutive share of every block's rows (one part
        per learner; once `touched`, lists of the episode objects). When a part would be empty, every
        part gets all transitions, so that every learner takes part in every gradient exchange."""
        if self._touched:
            return _split_list(list(self), num_shards)
        shards: list[list[TransitionBlock]] = [[] for _ in range(num_shards)]
        for block in self._blocks:
            bounds = np.linspace(0, len(block), num_shards + 1).astype(int)
            for shard, start, stop in zip(shards, bounds[:-1], bounds[1:], strict=True):
                if stop > start:
                    shard.append(block.rows(int(start), int(stop)))
        if not all(shards):
            return [TransitionEpisodes(self._blocks) for _ in range(num_shards)]
        return [TransitionEpisodes(blocks) for blocks in shards]

    def __repr__(self) -> str:
        modules = [block.module_id for block in self._blocks]
        return f"TransitionEpisodes({len(self)} one-step episodes of modules {modules})"


def num_env_steps(episodes: Sequence[Any]) -> int:
    """Env steps in `episodes` (`len` summed over them), counted for `TransitionEpisodes` without
    building their episode objects."""
    if isinstance(episodes, TransitionEpisodes):
        return episodes.env_steps()
    return sum(len(episode) for episode in episodes)


def _split_list(items: list, num_shards: int) -> list[list]:
    if len(items) < num_shards:  # as for any episodes: every learner must take part
        return [list(items) for _ in range(num_shards)]
    bounds = np.linspace(0, len(items), num_shards + 1).astype(int)
    return [items[a:b] for a, b in zip(bounds[:-1], bounds[1:], strict=True)]


__all__ = ["EPISODE_COLUMNS", "TransitionBlock", "TransitionEpisodes", "num_env_steps"]
