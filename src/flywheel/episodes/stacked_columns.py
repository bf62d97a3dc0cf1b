"""A `VectorRecorder`'s columns stacked once into arrays, and the episodes that take their rows from them.

When `sample()` returns, the recorder stacks each column (observations, actions, rewards, every
extra model output) into one array with the sub-env first (`[num_envs, steps, ...]`, so each
episode's rows are contiguous), cast to the spaces' dtypes. Each pending episode then takes its
rows as views of those arrays:

- an episode whose whole record lies in the columns (its lookback included) keeps its rows in one
  `NumpyRows` until something reads them: its buffers, finalized as `to_numpy` would leave them,
  are built then. Until then the episode and its rows are two objects the garbage collector
  tracks, where buffers, their dict and an infos list are nine more; the collector's full passes
  over the whole process come that much less often.
- an episode that holds data of its own in front of its rows (the `stash` of an episode cut while
  something was reading it step by step) gets the rows appended to its buffers right away.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import tree

from flywheel.episodes.deferred_data import REWARD_SPACE
from flywheel.episodes.lookback_buffer import LookbackBuffer
from flywheel.episodes.space_items import map_leaves, space_struct
from flywheel.episodes.vector_rows import per_env_infos
from flywheel.utils.nested import stack

if TYPE_CHECKING:
    import gymnasium as gym

    from flywheel.episodes.single_agent_episode import SingleAgentEpisode
    from flywheel.episodes.vector_recorder import VectorRecorder, _Pending


class NumpyRows:
    """The `_pending` of a finished chunk whose rows are arrays: reading its data builds its
    (finalized) buffers. `infos` is None when all of them are empty dicts."""

    __slots__ = ("obs", "infos", "actions", "rewards", "extras", "lookback", "obs_space", "action_space")

    def __init__(
        self,
        obs: Any,
        infos: list[dict] | None,
        actions: Any,
        rewards: np.ndarray,
        extras: dict[str, Any],
        lookback: int,
        spaces: tuple[gym.Space | None, gym.Space | None],
    ) -> None:
        self.obs, self.infos, self.actions, self.rewards, self.extras = obs, infos, actions, rewards, extras
        self.lookback = lookback
        self.obs_space, self.action_space = spaces

    def realize(self, episode: SingleAgentEpisode) -> None:
        episode._pending = None
        lookback = self.lookback
        infos = self.infos
        if infos is None:
            infos = [{} for _ in range(len(self.rewards) + 1)]
        episode.observations = LookbackBuffer(self.obs, lookback, self.obs_space)
        episode.infos = LookbackBuffer(infos, lookback)
        episode.actions = LookbackBuffer(self.actions, lookback, self.action_space)
        episode.rewards = LookbackBuffer(self.rewards, lookback, REWARD_SPACE)
        episode.extra_model_outputs = {
            key: LookbackBuffer(rows, lookback) for key, rows in self.extras.items()
        }


class StackedColumns:
    """The recorder's columns stacked once (sub-env first, in the spaces' dtypes), and the
    per-sub-env infos of each observation index."""

    def __init__(self, recorder: VectorRecorder) -> None:
        self.spaces = (recorder.observation_space, recorder.action_space)
        self.num_steps = len(recorder._actions)
        self.obs = _in_dtypes(_stack_steps(recorder._obs), space_struct(self.spaces[0]))
        self.infos = [per_env_infos(infos, recorder.num_envs) for infos in recorder._infos]
        self.no_infos = all(rows is None for rows in self.infos)
        self.actions = _in_dtypes(_stack_steps(recorder._actions), space_struct(self.spaces[1]))
        self.rewards = _stack_steps(recorder._rewards).astype(np.float32)
        self.extras = {key: _stack_steps(column) for key, column in recorder._extras.items()}

    def fill(self, episode: SingleAgentEpisode) -> None:
        """Gives a pending episode its rows (it is then finalized, as `to_numpy` leaves it)."""
        pending: _Pending = episode._pending
        i, lookback = pending.index, pending.lookback
        start, first_obs = pending.step_start - lookback, pending.obs_start - lookback
        stop = self.num_steps if pending.step_stop is None else pending.step_stop
        num_obs = stop + 1 - first_obs
        obs = _rows(self.obs, i, first_obs, stop + 1)
        infos = self._infos(i, first_obs, stop + 1)
        if pending.final is not None:
            final_obs, final_info = pending.final
            obs = map_leaves(_with_last_row, obs, final_obs)
            if final_info or infos is not None:
                infos = [{} for _ in range(num_obs)] if infos is None else infos
                infos[-1] = final_info
        actions, rewards = _rows(self.actions, i, start, stop), _rows(self.rewards, i, start, stop)
        extras = {key: _rows(column, i, start, stop) for key, column in self.extras.items()}
        if pending.stash is None:
            episode.t = episode.t_started + stop - pending.step_start
            episode._pending = NumpyRows(obs, infos, actions, rewards, extras, lookback, self.spaces)
            return
        own = pending.stash
        episode._pending = None
        _append_rows(own["observations"], obs)
        own["infos"].data.extend([{} for _ in range(num_obs)] if infos is None else infos)
        _append_rows(own["actions"], actions)
        _append_rows(own["rewards"], rewards)
        outputs = own["extra_model_outputs"]
        for key, rows in extras.items():
            if key in outputs:
                _append_rows(outputs[key], rows)
            else:
                outputs[key] = LookbackBuffer(rows)
        for buffer in outputs.values():  # (outputs only the lookback holds: later steps did not return them)
            buffer.finalize()
        own["t"] += stop - pending.step_start
        for name, value in own.items():
            setattr(episode, name, value)

    def _infos(self, index: int, start: int, stop: int) -> list[dict] | None:
        """Sub-env `index`'s infos of observation indices `start:stop`, or None when all are empty."""
        if self.no_infos:
            return None
        return [{} if rows is None else rows[index] for rows in self.infos[start:stop]]


def _stack_steps(batches: list) -> Any:
    """Per-step batches (`[num_envs, ...]`, nested leaf-wise, or one scalar for all rows) as one array
    `[num_envs, steps, ...]` (scalars: `[steps]`)."""
    if not batches:
        return None
    if isinstance(batches[0], dict | tuple):
        return tree.map_structure(lambda *leaves: _sub_env_first(leaves), *batches)
    return _sub_env_first(batches)


def _sub_env_first(batches: list | tuple) -> np.ndarray:
    # One C loop builds `[steps, num_envs, ...]` (np.stack takes several Python steps per array);
    # one more copy makes each sub-env's rows contiguous.
    stacked = np.asarray(batches)
    return stacked if stacked.ndim == 1 else np.ascontiguousarray(stacked.swapaxes(0, 1))


def _in_dtypes(stacked: Any, struct: Any) -> Any:
    """`stacked` in the dtypes of the space `struct` mirrors (as `LookbackBuffer.finalize` gives them)."""
    if stacked is None or struct is None:
        return stacked
    return map_leaves(lambda a, space: a.astype(space.dtype, copy=False), stacked, struct)


def _with_last_row(rows: np.ndarray, last: Any) -> np.ndarray:
    """A copy of `rows` whose last row is `last` (the view's own last row belongs to the next episode)."""
    rows = rows.copy()
    rows[-1] = last
    return rows


def _rows(stacked: Any, index: int, start: int, stop: int) -> Any:
    """Sub-env `index`'s rows `start:stop` of a `_stack_steps` result."""
    if isinstance(stacked, np.ndarray):
        return stacked[start:stop] if stacked.ndim == 1 else stacked[index, start:stop]
    return tree.map_structure(lambda leaf: leaf[index, start:stop], stacked)


def _append_rows(buffer: LookbackBuffer, rows: Any) -> None:
    """Finalizes a list-based buffer with `rows` (in its space's dtypes) appended; the items it held
    stay in front (its lookback stays lookback)."""
    if buffer.data:
        head = stack(buffer.data, buffer.space_struct)
        rows = map_leaves(lambda a, b: np.concatenate([a, np.asarray(b, a.dtype)]), head, rows)
    buffer.data = rows
