"""`VectorRecorder`: records a vector env's steps into one `SingleAgentEpisode` per sub-env, column-wise.

Writing each vector step into each sub-env's episode costs a chain of Python calls per sub-env and
step, which at 64 sub-envs is more than the env step itself. The recorder instead appends each step's
batches (observations, infos, actions, rewards, every extra model output) to one list per column: a
constant number of Python operations per vector step. The episodes it fills this way are *pending*:
their steps are rows of those columns, and their data attributes are absent. A pending episode
becomes an ordinary one in one of two ways:

- `end_sample` (when `sample()` returns): each column is stacked once into one array, and every
  pending episode takes its rows from it as numpy arrays, finalized as `to_numpy` would leave it
  (see `flywheel.episodes.stacked_columns`); a running episode is cut there by starting its
  successor on the same columns, its lookback being the rows in front of its own;
- `realize`, as soon as anything reads its data (`SingleAgentEpisode.__getattr__`): a connector piece
  calling `episode.get_observations(-1)`, a callback, a `len(episode)`. Its rows are appended to its
  list-based buffers, and from then on the recorder appends each new step to it, one call per step.

So whoever looks at an episode sees all of it, and episodes nobody looks at cost nothing per step.
While no episode of the current vector step has been looked at, their newest observations are
exactly the env's observation batch: `newest_observations` hands that batch to
`AddObservationsFromEpisodesToBatch`, which is how the default env-to-module pipeline passes the
env's observations straight through, and why a custom piece anywhere (or a callback) that reads or
rewrites episodes simply turns the pass-through off for the steps it touches.

Column layout: `_obs[k]` / `_infos[k]` are the batches seen before step `k` (index 0: the oldest
row a pending episode still needs), `_actions[k]`, `_rewards[k]` and `_extras[key][k]` belong to step `k`.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from flywheel.episodes import chunks
from flywheel.episodes.deferred_data import RECORDED_ATTRIBUTES, empty_data, is_unread
from flywheel.episodes.lookback_buffer import LookbackBuffer
from flywheel.episodes.single_agent_episode import SingleAgentEpisode
from flywheel.episodes.space_items import map_leaves
from flywheel.episodes.stacked_columns import StackedColumns
from flywheel.episodes.vector_rows import info_row, row
from flywheel.utils.nested import stack


class _Pending:
    """Where a pending episode's rows are: sub-env `index`, observations from `obs_start`, steps from
    `step_start` up to `step_stop` (None while it runs), after `lookback` rows of history (a cut's
    successor: the rows in front of its own); what it held before (`stash`: its data attributes,
    e.g. the lookback of a chunk cut outside the columns; None when the rows are all it holds) and
    the final observation and info of a `SAME_STEP` ending."""

    __slots__ = ("recorder", "index", "obs_start", "step_start", "lookback", "step_stop", "stash", "final")

    def __init__(
        self,
        recorder: VectorRecorder,
        index: int,
        stash: dict | None,
        obs_start: int,
        step_start: int,
        lookback: int = 0,
    ):
        self.recorder = recorder
        self.index = index
        self.stash = stash
        self.obs_start = obs_start
        self.step_start = step_start
        self.lookback = lookback
        self.step_stop: int | None = None
        self.final: tuple[Any, dict] | None = None

    def realize(self, episode: SingleAgentEpisode) -> None:
        self.recorder.realize(episode)

    def newest_observation(self) -> Any:
        if self.final is not None:
            return self.final[0]
        recorder = self.recorder
        stop = len(recorder._obs) if self.step_stop is None else self.step_stop + 1
        if stop > self.obs_start:
            return row(recorder._obs[stop - 1], self.index)
        assert self.stash is not None  # no rows yet: a cut, whose first observation its buffer carries
        return self.stash["observations"].data[-1]


class VectorRecorder:
    """Holds the current episode of each of `num_envs` sub-envs and records vector steps into them.

    A runner calls `reset` after the env's reset, `start` for each new episode, `add_step` after each
    `env.step`, and `end_sample` when `sample()` returns; `episodes` is the list of current episodes
    (one per sub-env, in order) it passes to its pipelines.
    """

    def __init__(self, num_envs: int, observation_space: Any, action_space: Any) -> None:
        self.num_envs = num_envs
        self.observation_space = observation_space
        self.action_space = action_space
        self.episodes: list[SingleAgentEpisode | None] = [None] * num_envs
        self._eager: set[int] = set()  # sub-envs whose current episode holds its own data (not pending)
        self._finished: list[SingleAgentEpisode] = []  # episodes that ended since the last end_sample
        self._restart_columns([], [])

    def _restart_columns(self, obs: list, infos: list, extra_keys: tuple = ()) -> None:
        self._obs, self._infos = obs, infos
        self._actions: list = []
        self._rewards: list = []
        self._extras: dict[str, list] = {key: [] for key in extra_keys}

    # ------------------------------------------------------------------ recording

    def reset(self, obs: Any, infos: dict) -> None:
        """Drops every episode and starts the columns from the env's reset batches."""
        self.episodes = [None] * self.num_envs
        self._eager.clear()
        self._finished = []
        self._restart_columns([obs], [infos])

    def start(self, index: int, episode: SingleAgentEpisode) -> None:
        """Makes `episode` the current one of sub-env `index`. A fresh episode begins with the newest
        observation and info of that sub-env; a cut's successor already holds its first one."""
        unread = is_unread(episode)  # built empty and never read: it holds no buffers to drop
        fresh = unread or not episode.is_reset
        if fresh:
            episode._start_time = time.perf_counter()
        # A fresh episode's empty buffers are dropped and made anew when needed: a pending episode
        # and its `_Pending` are then 2 objects the garbage collector tracks instead of 11 (the
        # collector's full passes over the process come that much less often).
        stash = None if fresh else {name: getattr(episode, name) for name in RECORDED_ATTRIBUTES}
        if not unread:
            for name in RECORDED_ATTRIBUTES:
                delattr(episode, name)
        newest = len(self._obs) - 1
        episode._pending = _Pending(self, index, stash, newest if fresh else newest + 1, len(self._actions))
        self.episodes[index] = episode
        self._eager.discard(index)

    def drop(self, index: int) -> int:
        """Forgets sub-env `index`'s current episode (its env failed mid-episode); returns the steps
        its chunk had recorded."""
        episode = self.episodes[index]
        assert episode is not None  # sub-env `index` runs one
        steps = self.steps_of(episode)
        self.episodes[index] = None
        self._eager.discard(index)
        return steps

    def add_step(
        self,
        obs: Any,
        infos: dict,
        actions: Any,
        rewards: np.ndarray,
        terminateds: np.ndarray,
        truncateds: np.ndarray,
        extras: dict[str, Any],
        final_obs: Any = None,
    ) -> list[int]:
        """Records one vector step for every sub-env whose episode runs (row `i` is sub-env `i`'s
        action, reward, next observation and info; `extras` every other column: an array with one row
        per sub-env, or one value for all). `final_obs` (`infos["final_obs"]` of a `SAME_STEP`
        autoreset) holds the last observation of the episodes that ended, whose row in `obs` is then a
        reset observation; without it that row is their last observation. Returns the sub-envs whose
        episode ended."""
        if extras.keys() != self._extras.keys():
            self._use_extra_keys(tuple(extras))
        self._obs.append(obs)
        self._infos.append(infos)
        self._actions.append(actions)
        self._rewards.append(rewards)
        for key, value in extras.items():
            self._extras[key].append(value)
        ended = (terminateds | truncateds).nonzero()[0].tolist()
        finished = [i for i in ended if (e := self.episodes[i]) is not None and not e.is_done]
        for i in self._eager:
            self._add_eager(i, obs, infos, actions, rewards, terminateds, truncateds, extras, final_obs)
        for i in finished:
            self._finish(i, terminateds[i], truncateds[i], final_obs, infos)
        return finished

    def _add_eager(
        self, i: int, obs, infos, actions, rewards, terminateds, truncateds, extras, final_obs
    ) -> None:
        episode = self.episodes[i]
        assert episode is not None  # eager sub-envs run an episode
        if episode.is_done:
            return
        final = final_obs is not None and (terminateds[i] or truncateds[i])
        episode.add_env_step(
            final_obs[i] if final and final_obs is not None else row(obs, i), row(actions, i), rewards[i],
            infos=info_row(infos["final_info"], i) if final else info_row(infos, i),
            terminated=bool(terminateds[i]), truncated=bool(truncateds[i]),
            extra_model_outputs={key: row(value, i) for key, value in extras.items()},
        )  # fmt: skip

    def _finish(self, i: int, terminated: bool, truncated: bool, final_obs: Any, infos: dict) -> None:
        episode = self.episodes[i]
        assert episode is not None  # only running episodes finish
        pending = episode._pending
        if type(pending) is _Pending:
            episode.is_terminated, episode.is_truncated = bool(terminated), bool(truncated)
            pending.step_stop = len(self._actions)
            if final_obs is not None:
                pending.final = (final_obs[i], info_row(infos["final_info"], i))
        episode._end_time = time.perf_counter()
        self._finished.append(episode)

    def _use_extra_keys(self, keys: tuple) -> None:
        """New extra columns (a sample with other settings): episodes pending in the current columns
        are realized first, and the columns start anew from the newest batches."""
        if self._actions:
            for episode in [*self.episodes, *self._finished]:
                if episode is not None and type(episode._pending) is _Pending:
                    self.realize(episode)
            self._obs, self._infos = self._obs[-1:], self._infos[-1:]
        self._restart_columns(self._obs, self._infos, keys)

    def _held(self, pending: _Pending, episode: SingleAgentEpisode) -> dict[str, Any]:
        """The data attributes a pending episode held before its rows (empty buffers for a fresh one)."""
        if pending.stash is not None:
            return pending.stash
        return empty_data(self.observation_space, self.action_space, episode.t_started)

    def steps_of(self, episode: SingleAgentEpisode) -> int:
        """The steps of `episode`'s chunk, without reading (and so realizing) a pending episode."""
        pending = episode._pending
        if type(pending) is not _Pending:
            return len(episode)
        stop = len(self._actions) if pending.step_stop is None else pending.step_stop
        return stop - pending.step_start

    # ------------------------------------------------------------------ reading

    def newest_observations(self, episodes: list[SingleAgentEpisode]) -> Any:
        """The newest observation of each of `episodes`, batched, when all of them are pending in this
        recorder (nothing has read or rewritten them since their steps were recorded); else None.
        The batch is the caller's own (a copy of the env's), so changing it leaves the episodes be."""
        if episodes is self.episodes:
            return None if self._eager else map_leaves(np.ndarray.copy, self._obs[-1])
        rows = []
        for episode in episodes:
            pending = episode._pending
            if type(pending) is not _Pending or pending.recorder is not self:
                return None
            rows.append(pending.newest_observation())
        return stack(rows)

    def realize(self, episode: SingleAgentEpisode) -> None:
        """Hands a pending episode its recorded rows (list items, one per step); from then on, while
        it runs, `add_step` appends to it directly."""
        pending = episode._pending
        episode._pending = None
        for name, value in self._held(pending, episode).items():
            setattr(episode, name, value)
        i, lookback = pending.index, pending.lookback
        step_stop = len(self._actions) if pending.step_stop is None else pending.step_stop
        for k in range(pending.obs_start - lookback, step_stop + 1):
            episode.observations.data.append(row(self._obs[k], i))
            episode.infos.data.append(info_row(self._infos[k], i))
        if pending.final is not None:
            episode.observations.data[-1], episode.infos.data[-1] = pending.final
        outputs = episode.extra_model_outputs
        for key in self._extras:
            outputs.setdefault(key, LookbackBuffer())
        for k in range(pending.step_start - lookback, step_stop):
            episode.actions.data.append(row(self._actions[k], i))
            episode.rewards.data.append(self._rewards[k][i])
            for key, column in self._extras.items():
                outputs[key].data.append(row(column[k], i))
        if lookback:
            for buffer in (episode.observations, episode.infos, episode.actions, episode.rewards):
                buffer.lookback = lookback
            for buffer in outputs.values():
                buffer.lookback = lookback
        episode.t += step_stop - pending.step_start
        if self.episodes[i] is episode:
            self._eager.add(i)

    # ------------------------------------------------------------------ ending a sample

    def end_sample(self, cut_lookback: int | None) -> list[SingleAgentEpisode]:
        """Turns every episode that ended since the last call into numpy and, with `cut_lookback`,
        cuts each running episode that has steps: returns those chunks (numpy) and continues each
        with its successor (as `cut(len_lookback_buffer=cut_lookback)` makes it). Episodes that keep
        running uncut stay pending, and the columns keep only the rows they still need."""
        to_cut = []
        if cut_lookback is not None:
            to_cut = [
                (i, e)
                for i, e in enumerate(self.episodes)
                if e is not None and not e.is_done and self.steps_of(e)
            ]
            for i, episode in to_cut:
                if _in_columns(episode):
                    self._cut(i, episode, cut_lookback)
        to_fill = [e for e in [*self._finished, *(e for _, e in to_cut)] if type(e._pending) is _Pending]
        if to_fill:
            columns = StackedColumns(self)
            for episode in to_fill:
                columns.fill(episode)
        for episode in self._finished:
            if episode._pending is None:  # (else it holds its rows as arrays already)
                episode.to_numpy()
        self._finished = []
        for i, episode in to_cut:
            if self.episodes[i] is episode:  # (not cut on the columns above)
                assert cut_lookback is not None  # episodes are cut only with it
                successor = episode.cut(len_lookback_buffer=cut_lookback)
                episode.to_numpy()
                self.start(i, successor)
        self._eager = {i for i, e in enumerate(self.episodes) if e is not None and e._pending is None}
        self._trim_columns()
        return [episode for _, episode in to_cut]

    def _cut(self, index: int, episode: SingleAgentEpisode, lookback: int) -> None:
        """Cuts a running episode whose rows are all in the columns: it ends at the newest step, and
        its successor, now sub-env `index`'s episode, starts on the same rows, with up to `lookback`
        of the rows before as history."""
        pending = episode._pending
        pending.step_stop = len(self._actions)
        steps = pending.step_stop - pending.step_start
        episode._end_time = time.perf_counter()
        successor = chunks.successor(episode, episode.t_started + steps)
        successor._start_time = episode._end_time
        successor._pending = _Pending(
            self, index, None, len(self._obs) - 1, pending.step_stop, min(lookback, pending.lookback + steps)
        )
        self.episodes[index] = successor

    def _trim_columns(self) -> None:
        """Drops the rows no pending episode needs any more (keeping the newest batches)."""
        pending = [e._pending for e in self.episodes if e is not None and type(e._pending) is _Pending]
        keep = min([p.step_start - p.lookback for p in pending] + [len(self._obs) - 1])
        if keep <= 0:
            return
        self._obs, self._infos = self._obs[keep:], self._infos[keep:]
        self._actions, self._rewards = self._actions[keep:], self._rewards[keep:]
        self._extras = {key: column[keep:] for key, column in self._extras.items()}
        for p in pending:
            p.obs_start -= keep
            p.step_start -= keep


def _in_columns(episode: SingleAgentEpisode) -> bool:
    """Whether all of a running episode's data (lookback included) are rows of its recorder's columns."""
    pending = episode._pending
    return type(pending) is _Pending and pending.stash is None


def newest_observations(episodes: list[Any]) -> Any:
    """The newest observation of each of `episodes`, batched as the env returned it, when a
    `VectorRecorder` holds all of them untouched (see the module docstring); else None."""
    if not episodes or not isinstance(episodes[0], SingleAgentEpisode):
        return None
    pending = episodes[0]._pending
    return pending.recorder.newest_observations(episodes) if type(pending) is _Pending else None
