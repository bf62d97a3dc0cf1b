"""Recorded rows as episode chunks (`EpisodeBuilder`), and the checks a file passes before it is read.

Both readers use these: the pyarrow one for a local learner (`reader.OfflineData`) and the Ray Data
one whose shards each remote learner reads (`ray_data.RayOfflineData`). A builder is small and
picklable: it travels to the learners with their shard.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, cast

import gymnasium as gym
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from flywheel.columns import Columns
from flywheel.connectors.module_to_env.normalize_and_clip_actions import normalized_actions, normalizes
from flywheel.episodes import SingleAgentEpisode
from flywheel.errors import OfflineDataError
from flywheel.offline.arrow_columns import (
    ACTIONS_NORMALIZED_KEY,
    FORMAT_KEY,
    SINGLE_AGENT,
    read_spaces,
    to_numpy,
)
from flywheel.utils.nested import concat, take

ROW_COLUMNS = (
    Columns.EPS_ID, Columns.T, Columns.OBS, Columns.ACTIONS, Columns.REWARDS, Columns.NEXT_OBS,
    Columns.TERMINATEDS, Columns.TRUNCATEDS,
)  # fmt: skip
"""The columns a file with one row per step must have (`output_write_episodes=False`)."""
EPISODE_COLUMNS = (
    Columns.EPS_ID, "t_started", "is_terminated", "is_truncated", Columns.OBS, Columns.ACTIONS, Columns.REWARDS,
)  # fmt: skip
"""The columns a file with one row per episode chunk must have (`output_write_episodes=True`)."""


def check_files(paths: list[str], read_episodes: bool, spaces: tuple[gym.Space, gym.Space]) -> bool | None:
    """Checks each file's layout, columns and spaces; returns whether the files say their actions are
    normalized to [-1, 1] (None: they do not say, e.g. files written by another tool)."""
    flags = {path: _check_file(path, read_episodes, spaces) for path in paths}
    said = {flag for flag in flags.values() if flag is not None}
    if len(said) > 1:
        normalized = sorted(path for path, flag in flags.items() if flag)
        raise OfflineDataError(
            f"input_ mixes files recorded with normalize_actions=True ({normalized[:3]}...) and with False; "
            "their actions are in different spaces. Fix: read the two kinds of files separately."
        )
    return said.pop() if said else None


def _check_file(path: str, read_episodes: bool, spaces: tuple[gym.Space, gym.Space]) -> bool | None:
    schema = pq.read_schema(path)
    metadata = schema.metadata or {}
    layout = metadata.get(FORMAT_KEY, b"").decode()
    if layout and layout != ("episodes" if read_episodes else "rows"):
        raise OfflineDataError(
            f"{path} holds one row per {'episode chunk' if layout == 'episodes' else 'step'} (written "
            f"with output_write_episodes={layout == 'episodes'}), but input_read_episodes="
            f"{read_episodes}. Fix: config.offline_data(input_read_episodes={layout == 'episodes'})."
        )
    required = EPISODE_COLUMNS if read_episodes else ROW_COLUMNS
    missing = [column for column in required if column not in schema.names]
    if missing:
        raise OfflineDataError(
            f"{path} has no column(s) {missing}; a file with one row per "
            f"{'episode chunk' if read_episodes else 'step'} needs {list(required)}, this one has "
            f"{schema.names}. Fix: record it with config.offline_data(output=...), or add those columns."
        )
    recorded = read_spaces(metadata, path).get(SINGLE_AGENT)
    if recorded is not None:
        check_spaces(path, recorded, spaces)
    flag = metadata.get(ACTIONS_NORMALIZED_KEY)
    return None if flag is None else flag == b"1"


def check_spaces(source: str, recorded: tuple, spaces: tuple) -> None:
    """Raises when the data's (observation, action) spaces differ from the env's."""
    for kind, was, now in zip(("observation", "action"), recorded, spaces, strict=True):
        if was != now:
            raise OfflineDataError(
                f"{source} was recorded with the {kind} space {was}, but the env's {kind} space is {now}. "
                "Fix: train with the env the data was recorded from (config.environment(...)), or pass "
                f"that space as config.environment({kind}_space=...)."
            )


def needs_action_normalizing(config: Any, action_space: gym.Space, files_say: bool | None) -> bool:
    """Whether read actions are mapped from the env's bounds to [-1, 1]: for a float Box action space
    when the module acts in normalized space (`normalize_actions`) and the data is not normalized yet
    (what the files say, else `actions_in_input_normalized`)."""
    normalized = config.actions_in_input_normalized if files_say is None else files_say
    return normalizes(action_space, config.normalize_actions) and not normalized


class EpisodeBuilder:
    """Turns Arrow record batches (or tables) of recorded rows into `SingleAgentEpisode` chunks.

    Rows with one row per step become chunks of consecutive rows of one episode id; rows with one
    row per episode chunk become one episode each. With `normalize_actions`, Box actions are mapped
    from the action space's bounds to [-1, 1] (the module's space)."""

    def __init__(
        self, read_episodes: bool, spaces: tuple[gym.Space, gym.Space], normalize_actions: bool = False
    ) -> None:
        self.read_episodes = read_episodes
        self.spaces = spaces
        self.normalize_actions = normalize_actions
        self.columns: list[str] = list(EPISODE_COLUMNS if read_episodes else ROW_COLUMNS)

    def episodes(self, batch: Any) -> Iterator[SingleAgentEpisode]:
        """The episode chunks of one record batch (a chunk cut by the batch's end continues, with the
        same id, in the next batch)."""
        if isinstance(batch, pa.Table):  # Ray Data hands out tables
            for record_batch in batch.combine_chunks().to_batches():
                yield from self.episodes(record_batch)
            return
        data = {name: to_numpy(batch.column(name)) for name in self.columns}
        if self.read_episodes:
            yield from self._from_episode_rows(data, batch)
        else:
            yield from self._from_step_rows(data)

    def to_module_actions(self, actions: np.ndarray) -> np.ndarray:
        """Box actions from [low, high] to [-1, 1] (dimensions with an infinite bound unchanged)."""
        box = cast(gym.spaces.Box, self.spaces[1])  # only Box action spaces are normalized
        return normalized_actions(box, actions)

    def _episode(self, data: dict, obs: Any, steps: slice, done: tuple[bool, bool], t_started: int) -> Any:
        actions = take(data[Columns.ACTIONS], steps)
        return SingleAgentEpisode(
            id_=str(data[Columns.EPS_ID][steps.start]),
            observations=obs,
            actions=self.to_module_actions(actions) if self.normalize_actions else actions,
            rewards=np.asarray(data[Columns.REWARDS][steps], np.float32),
            terminated=done[0],
            truncated=done[1],
            observation_space=self.spaces[0],
            action_space=self.spaces[1],
            t_started=t_started,
            len_lookback_buffer=0,
        )

    def _from_step_rows(self, data: dict) -> Iterator[SingleAgentEpisode]:
        ids, t = data[Columns.EPS_ID], data[Columns.T]
        starts = np.flatnonzero((ids[1:] != ids[:-1]) | (t[1:] != t[:-1] + 1)) + 1
        bounds = [0, *starts.tolist(), len(ids)]
        for start, end in zip(bounds[:-1], bounds[1:], strict=True):
            steps, last = slice(start, end), slice(end - 1, end)
            obs = concat([take(data[Columns.OBS], steps), take(data[Columns.NEXT_OBS], last)])
            done = (bool(data[Columns.TERMINATEDS][end - 1]), bool(data[Columns.TRUNCATEDS][end - 1]))
            yield self._episode(data, obs, steps, done, int(t[start]))

    def _from_episode_rows(self, data: dict, batch: Any) -> Iterator[SingleAgentEpisode]:
        obs_offsets = batch.column(Columns.OBS).offsets.to_numpy()
        offsets = batch.column(Columns.REWARDS).offsets.to_numpy()
        flat = {
            Columns.EPS_ID: np.repeat(data[Columns.EPS_ID], np.diff(offsets)),
            Columns.ACTIONS: to_numpy(batch.column(Columns.ACTIONS).flatten()),
            Columns.REWARDS: to_numpy(batch.column(Columns.REWARDS).flatten()),
        }
        observations = to_numpy(batch.column(Columns.OBS).flatten())
        for row in range(batch.num_rows):
            steps = slice(int(offsets[row]), int(offsets[row + 1]))
            obs = take(observations, slice(int(obs_offsets[row]), int(obs_offsets[row + 1])))
            done = (bool(data["is_terminated"][row]), bool(data["is_truncated"][row]))
            yield self._episode(flat, obs, steps, done, int(data["t_started"][row]))
