"""`OfflineWriter`: what an env runner samples, written to Parquet files (`config.offline_data(output=DIR)`).

The runner hands every `sample()` call's episodes (finished ones and cut chunks, numpy'ized) to
`write()`; `close()` (from the runner's `stop()`) writes what is still buffered, so nothing sampled
is lost (unless `write_remaining=False`, RLlib's `output_write_remaining_data` default, drops it). Each file is written under a hidden temporary name and renamed into place, so a reader
never sees a half-written file: a runner killed mid-write leaves complete files and at most a hidden
`.*.tmp` file the readers skip; the rows it loses are the ones still buffered (fewer than
`max_rows_per_file`; none with None) and those of the `sample()` call in progress. Pages carry CRC
checksums, so the local reader finds a flipped byte.

Two layouts (`output_write_episodes`):

- rows (False): one row per agent step: `eps_id`, `agent_id`, `module_id`, `t`, `obs`, `actions`,
  `rewards`, `new_obs`, `terminateds`, `truncateds` and every extra model output the runner stored
  (`action_logp`, `action_dist_inputs`, `vf_preds`, `weights_seq_no`, ...);
- episodes (True): one row per episode chunk: `eps_id`, `agent_id`, `module_id`, `t_started`,
  `is_terminated`, `is_truncated`, and list columns `obs` (one more entry than steps), `actions`,
  `rewards` and the extra model outputs.

The env's observation and action spaces (per agent for multi-agent envs) are kept in each file's
metadata (`arrow_columns.SPACES_KEY`).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from flywheel.columns import Columns
from flywheel.offline.arrow_columns import (
    ACTIONS_NORMALIZED_KEY,
    FORMAT_KEY,
    SPACES_KEY,
    lists,
    spaces_metadata,
    to_arrow,
)
from flywheel.offline.paths import local_path
from flywheel.utils.nested import concat

if TYPE_CHECKING:
    from flywheel.typing import EpisodeType

_IDS = (Columns.EPS_ID, Columns.AGENT_ID, Columns.MODULE_ID)


class OfflineWriter:
    """Buffers episodes and writes files of `max_rows_per_file` rows (None: one file per `write()`);
    `write_remaining=False` drops the rows still buffered at `close()` (fewer than a file). `actions_normalized` (the runner's `normalize_actions`) goes into each file's metadata, so a reader
    knows which space the actions are in."""

    def __init__(
        self,
        output: str | os.PathLike,
        *,
        spaces: dict[str, tuple],
        write_episodes: bool = True,
        max_rows_per_file: int | None = None,
        write_remaining: bool = True,
        compress_columns: Iterable[str] = (),
        file_prefix: str = "runner",
        actions_normalized: bool = True,
    ) -> None:
        self.output = local_path(output)
        os.makedirs(self.output, exist_ok=True)
        self.write_episodes = write_episodes
        self.max_rows_per_file = max_rows_per_file
        self.write_remaining = write_remaining
        self._compress = set(compress_columns)
        self._metadata = {
            FORMAT_KEY: b"episodes" if write_episodes else b"rows",
            SPACES_KEY: spaces_metadata(spaces),
            ACTIONS_NORMALIZED_KEY: b"1" if actions_normalized else b"0",
        }
        self._prefix = f"{file_prefix}-{uuid.uuid4().hex[:8]}"
        self._num_files = 0
        self._pending: pa.Table | None = None
        self.num_rows_written = 0

    def write(self, episodes: Iterable[Any]) -> None:
        """Adds the agent episodes of `episodes` (single- or multi-agent, numpy'ized) and writes every
        full file."""
        chunks = [chunk for episode in episodes for chunk in _agent_chunks(episode) if len(chunk)]
        if chunks:
            table = _episodes_table(chunks) if self.write_episodes else _rows_table(chunks)
            table = table.replace_schema_metadata(self._metadata)
            self._pending = table if self._pending is None else pa.concat_tables([self._pending, table])
        if self.max_rows_per_file is None:
            self.flush()
            return
        while self._pending is not None and self._pending.num_rows >= self.max_rows_per_file:
            self._write_file(self._pending.slice(0, self.max_rows_per_file))
            rest = self._pending.slice(self.max_rows_per_file)
            self._pending = rest if rest.num_rows else None

    def flush(self) -> None:
        """Writes the buffered rows (fewer than a full file) as one file."""
        if self._pending is not None:
            self._write_file(self._pending)
            self._pending = None

    def close(self) -> None:
        """Writes what is buffered (drops it with `write_remaining=False`); the writer may still be used
        afterwards."""
        if self.write_remaining:
            self.flush()
        else:
            self._pending = None

    def _write_file(self, table: pa.Table) -> None:
        name = f"{self._prefix}-{self._num_files:06d}.parquet"
        final = os.path.join(self.output, name)
        temporary = os.path.join(self.output, f".{name}.tmp")
        compression = {
            leaf: ("zstd" if column in self._compress else "snappy")
            for column, leaves in _leaf_paths(table.schema).items()
            for leaf in leaves
        }
        # pyarrow's stubs type `compression` as one codec name; it takes one per column too (documented).
        # Page checksums let the local reader find a flipped byte (docs/concepts/offline.md, "Faults").
        pq.write_table(table, temporary, compression=compression, write_page_checksum=True)  # pyright: ignore[reportArgumentType]
        os.replace(temporary, final)
        self._num_files += 1
        self.num_rows_written += table.num_rows


def _leaf_paths(schema: pa.Schema) -> dict[str, list[str]]:
    """Parquet's leaf column paths of each top-level column (compression is set per leaf)."""
    return {field.name: _leaves(field.name, field.type) for field in schema}


def _leaves(path: str, kind: pa.DataType) -> list[str]:
    if isinstance(kind, pa.BaseExtensionType):
        kind = kind.storage_type
    if pa.types.is_struct(kind):
        return [
            leaf
            for i in range(kind.num_fields)
            for leaf in _leaves(f"{path}.{kind.field(i).name}", kind.field(i).type)
        ]
    if pa.types.is_list(kind) or pa.types.is_fixed_size_list(kind) or pa.types.is_large_list(kind):
        return _leaves(f"{path}.list.element", kind.value_type)
    return [path]


def _agent_chunks(episode: EpisodeType) -> list[Any]:
    """The single-agent chunks of an episode: itself, or a multi-agent episode's agent episodes."""
    agent_episodes = getattr(episode, "agent_episodes", None)
    return [episode] if agent_episodes is None else list(agent_episodes.values())


def _ids(chunk: Any) -> dict[str, Any]:
    return {
        Columns.EPS_ID: chunk.multi_agent_episode_id or chunk.id_,
        Columns.AGENT_ID: None if chunk.agent_id is None else str(chunk.agent_id),
        Columns.MODULE_ID: chunk.module_id or "default_policy",
    }


def _step_data(chunk: Any) -> dict[str, Any]:
    """Per-step columns of a chunk: actions, rewards and extra model outputs (one entry per step)."""
    steps = slice(0, len(chunk))
    data = {
        Columns.ACTIONS: chunk.get_actions(steps),
        Columns.REWARDS: np.asarray(chunk.get_rewards(steps), np.float32),
    }
    for key in sorted(chunk.extra_model_outputs):
        if key != Columns.STATE_OUT:
            data[key] = chunk.get_extra_model_outputs(key, steps)
    return data


def _common_keys(datas: list[dict[str, Any]]) -> list[str]:
    """Columns every chunk has (chunks sampled with random actions carry no model outputs)."""
    return [key for key in datas[0] if all(key in d for d in datas)]


def _rows_table(chunks: list[Any]) -> pa.Table:
    lengths = np.array([len(c) for c in chunks])
    datas = [_step_data(c) for c in chunks]
    columns: dict[str, pa.Array] = {}
    for key in _IDS:
        columns[key] = pa.array(np.repeat([_ids(c)[key] for c in chunks], lengths).tolist(), pa.string())
    columns[Columns.T] = pa.array(np.concatenate([np.arange(c.t_started, c.t) for c in chunks]))
    columns[Columns.OBS] = to_arrow(concat([c.get_observations(slice(0, len(c))) for c in chunks]))
    for key in _common_keys(datas):
        columns[key] = to_arrow(concat([d[key] for d in datas]))
    columns[Columns.NEXT_OBS] = to_arrow(concat([c.get_observations(slice(1, len(c) + 1)) for c in chunks]))
    for key, flag in ((Columns.TERMINATEDS, "is_terminated"), (Columns.TRUNCATEDS, "is_truncated")):
        done = np.zeros(int(lengths.sum()), bool)
        done[np.cumsum(lengths)[[getattr(c, flag) for c in chunks]] - 1] = True
        columns[key] = pa.array(done)
    return pa.table(columns)


def _episodes_table(chunks: list[Any]) -> pa.Table:
    lengths = np.array([len(c) for c in chunks])
    datas = [_step_data(c) for c in chunks]
    columns: dict[str, pa.Array] = {
        key: pa.array([_ids(c)[key] for c in chunks], pa.string()) for key in _IDS
    }
    columns["t_started"] = pa.array([c.t_started for c in chunks], pa.int64())
    columns["is_terminated"] = pa.array([c.is_terminated for c in chunks])
    columns["is_truncated"] = pa.array([c.is_truncated for c in chunks])
    observations = concat([c.get_observations(slice(0, len(c) + 1)) for c in chunks])
    columns[Columns.OBS] = lists(to_arrow(observations), lengths + 1)
    for key in _common_keys(datas):
        columns[key] = lists(to_arrow(concat([d[key] for d in datas])), lengths)
    return pa.table(columns)
