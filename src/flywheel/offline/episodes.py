"""Recorded rows as episode chunks (`EpisodeBuilder`), and the checks a file passes before it is read.

Both readers use these: the pyarrow one for a local learner (`reader.OfflineData`) and the Ray Data
one whose shards each remote learner reads (`ray_data.RayOfflineData`). A builder is small and
picklable: it travels to the learners with their shard.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

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

if TYPE_CHECKING:
    from flywheel.algorithms.algorithm_config import AlgorithmConfig

ROW_COLUMNS = (
    Columns.EPS_ID, Columns.T, Columns.OBS, Columns.ACTIONS, Columns.REWARDS, Columns.NEXT_OBS,
    Columns.TERMINATEDS, Columns.TRUNCATEDS,
)  # fmt: skip
"""The columns a file with one row per step must have (`output_write_episodes=False`)."""
EPISODE_COLUMNS = (
    Columns.EPS_ID, "t_started", "is_terminated", "is_truncated", Columns.OBS, Columns.ACTIONS, Columns.REWARDS,
)  # fmt: skip
"""The columns a file with one row per episode chunk must have (`output_write_episodes=True`)."""


Spaces = tuple[gym.Space, gym.Space]
"""(observation_space, action_space)."""


def check_files(paths: list[str], read_episodes: bool, spaces: Spaces | dict[str, Spaces]) -> bool | None:
    """Checks each file's layout, columns and spaces (`spaces`: the env's, or each agent's by agent id
    for a multi-agent config); returns whether the files say their actions are normalized to [-1, 1]
    (None: they do not say, e.g. files written by another tool)."""
    flags = {path: _check_file(path, read_episodes, spaces) for path in paths}
    said = {flag for flag in flags.values() if flag is not None}
    if len(said) > 1:
        normalized = sorted(path for path, flag in flags.items() if flag)
        raise OfflineDataError(
            f"input_ mixes files recorded with normalize_actions=True ({normalized[:3]}...) and with False; "
            "their actions are in different spaces. Fix: read the two kinds of files separately."
        )
    return said.pop() if said else None


def _check_file(path: str, read_episodes: bool, spaces: Spaces | dict[str, Spaces]) -> bool | None:
    schema = pq.read_schema(path)
    metadata = schema.metadata or {}
    layout = metadata.get(FORMAT_KEY, b"").decode()
    if layout and layout != ("episodes" if read_episodes else "rows"):
        raise OfflineDataError(
            f"{path} holds one row per {'episode chunk' if layout == 'episodes' else 'step'} (written "
            f"with output_write_episodes={layout == 'episodes'}), but input_read_episodes="
            f"{read_episodes}. Fix: config.offline_data(input_read_episodes={layout == 'episodes'})."
        )
    required = [*(EPISODE_COLUMNS if read_episodes else ROW_COLUMNS)]
    required += [Columns.AGENT_ID] if isinstance(spaces, dict) else []
    missing = [column for column in required if column not in schema.names]
    if missing:
        raise OfflineDataError(
            f"{path} has no column(s) {missing}; a file with one row per "
            f"{'episode chunk' if read_episodes else 'step'} needs {required}, this one has "
            f"{schema.names}. Fix: record it with config.offline_data(output=...), or add those columns."
        )
    recorded = read_spaces(metadata, path)
    if recorded:
        _check_recorded_spaces(path, recorded, spaces)
    flag = metadata.get(ACTIONS_NORMALIZED_KEY)
    return None if flag is None else flag == b"1"


def _check_recorded_spaces(
    path: str, recorded: dict[str, Spaces], spaces: Spaces | dict[str, Spaces]
) -> None:
    """The recording and the config agree on single- vs multi-agent, and each agent's spaces match."""
    if not isinstance(spaces, dict):
        if SINGLE_AGENT not in recorded:
            raise OfflineDataError(
                f"{path} was recorded from a multi-agent env (agents {sorted(recorded)}), but this config is "
                "single-agent. Fix: config.multi_agent(policies=..., policy_mapping_fn=...) with the multi-agent "
                "env the data was recorded from (config.environment(...))."
            )
        check_spaces(path, recorded[SINGLE_AGENT], spaces)
        return
    if SINGLE_AGENT in recorded:
        raise OfflineDataError(
            f"{path} was recorded from a single-agent env, but this config is multi-agent (agents "
            f"{sorted(spaces)}). Fix: train without config.multi_agent(...), on the single-agent env the data "
            "was recorded from."
        )
    unknown = sorted(set(recorded) - set(spaces))
    if unknown:
        raise OfflineDataError(
            f"{path} holds agents {unknown} the env does not have (its agents: {sorted(spaces)}). Fix: train "
            "with the env the data was recorded from (config.environment(...))."
        )
    for agent, pair in recorded.items():
        check_spaces(f"{path} (agent {agent!r})", pair, spaces[agent])


def check_spaces(source: str, recorded: tuple, spaces: tuple) -> None:
    """Raises when the data's (observation, action) spaces differ from the env's."""
    for kind, was, now in zip(("observation", "action"), recorded, spaces, strict=True):
        if was != now:
            raise OfflineDataError(
                f"{source} was recorded with the {kind} space {was}, but the env's {kind} space is {now}. "
                "Fix: train with the env the data was recorded from (config.environment(...)), or pass "
                f"that space as config.environment({kind}_space=...)."
            )


def needs_action_normalizing(config: AlgorithmConfig, files_say: bool | None) -> bool:
    """Whether read float Box actions are mapped from the env's bounds to [-1, 1]: when the module acts
    in normalized space (`normalize_actions`) and the data is not normalized yet (what the files say,
    else `actions_in_input_normalized`)."""
    normalized = config.actions_in_input_normalized if files_say is None else files_say
    return bool(config.normalize_actions and not normalized)


class EpisodeBuilder:
    """Turns Arrow record batches (or tables) of recorded rows into `SingleAgentEpisode` chunks.

    Rows with one row per step become chunks of consecutive rows of one episode id; rows with one
    row per episode chunk become one episode each. With `normalize_actions`, float Box actions are
    mapped from the action space's bounds to [-1, 1] (the module's space)."""

    def __init__(
        self, read_episodes: bool, spaces: tuple[gym.Space, gym.Space], normalize_actions: bool = False
    ) -> None:
        self.read_episodes = read_episodes
        self.spaces = spaces
        self.normalize_actions = normalize_actions
        self.columns: list[str] = list(EPISODE_COLUMNS if read_episodes else ROW_COLUMNS)

    def episodes(self, batch: Any) -> Iterator[Any]:
        """The episode chunks of one record batch (a chunk cut by the batch's end continues, with the
        same id, in the next batch)."""
        return self.chunks(batch)

    def chunks(self, batch: Any) -> Iterator[SingleAgentEpisode]:
        """The single-agent episode chunks of one record batch (or table)."""
        if isinstance(batch, pa.Table):  # Ray Data hands out tables
            for record_batch in batch.combine_chunks().to_batches():
                yield from self.chunks(record_batch)
            return
        data = {name: to_numpy(batch.column(name)) for name in self.columns}
        if self.read_episodes:
            yield from self._from_episode_rows(data, batch)
        else:
            yield from self._from_step_rows(data)

    def module_actions(self, actions: np.ndarray, action_space: gym.Space) -> np.ndarray:
        """`actions` in the module's space: float Box actions from [low, high] to [-1, 1] with
        `normalize_actions` (dimensions with an infinite bound unchanged), others as they are."""
        if not normalizes(action_space, self.normalize_actions):
            return actions
        return normalized_actions(action_space, actions)

    def agent(self, key: str | None) -> tuple[Any, tuple[gym.Space, gym.Space]]:
        """The agent id and spaces of rows whose `agent_id` column holds `key` (here: single-agent rows,
        None and the env's spaces)."""
        return None, self.spaces

    def _episode(
        self, data: dict, obs: np.ndarray, steps: slice, done: tuple[bool, bool], t_started: int
    ) -> Any:
        agent_id, spaces = self.agent(
            data[Columns.AGENT_ID][steps.start] if Columns.AGENT_ID in data else None
        )
        return SingleAgentEpisode(
            id_=str(data[Columns.EPS_ID][steps.start]),
            observations=obs,
            actions=self.module_actions(take(data[Columns.ACTIONS], steps), spaces[1]),
            rewards=np.asarray(data[Columns.REWARDS][steps], np.float32),
            terminated=done[0],
            truncated=done[1],
            observation_space=spaces[0],
            action_space=spaces[1],
            t_started=t_started,
            len_lookback_buffer=0,
            agent_id=agent_id,
        )

    def _from_step_rows(self, data: dict) -> Iterator[SingleAgentEpisode]:
        ids, t = data[Columns.EPS_ID], data[Columns.T]
        new = (ids[1:] != ids[:-1]) | (t[1:] != t[:-1] + 1)
        if Columns.AGENT_ID in data:
            new |= data[Columns.AGENT_ID][1:] != data[Columns.AGENT_ID][:-1]
        bounds = [0, *(np.flatnonzero(new) + 1).tolist(), len(ids)]
        for start, end in zip(bounds[:-1], bounds[1:], strict=True):
            steps, last = slice(start, end), slice(end - 1, end)
            obs = concat([take(data[Columns.OBS], steps), take(data[Columns.NEXT_OBS], last)])
            done = (bool(data[Columns.TERMINATEDS][end - 1]), bool(data[Columns.TRUNCATEDS][end - 1]))
            yield self._episode(data, obs, steps, done, int(t[start]))

    def _from_episode_rows(self, data: dict, batch: Any) -> Iterator[SingleAgentEpisode]:
        obs_offsets = batch.column(Columns.OBS).offsets.to_numpy()
        offsets = batch.column(Columns.REWARDS).offsets.to_numpy()
        flat = {
            key: np.repeat(data[key], np.diff(offsets))
            for key in (Columns.EPS_ID, Columns.AGENT_ID)
            if key in data
        }
        flat[Columns.ACTIONS] = to_numpy(batch.column(Columns.ACTIONS).flatten())
        flat[Columns.REWARDS] = to_numpy(batch.column(Columns.REWARDS).flatten())
        observations = to_numpy(batch.column(Columns.OBS).flatten())
        for row in range(batch.num_rows):
            steps = slice(int(offsets[row]), int(offsets[row + 1]))
            obs = take(observations, slice(int(obs_offsets[row]), int(obs_offsets[row + 1])))
            done = (bool(data["is_terminated"][row]), bool(data["is_truncated"][row]))
            yield self._episode(flat, obs, steps, done, int(data["t_started"][row]))
