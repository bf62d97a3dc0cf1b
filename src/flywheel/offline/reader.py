"""`OfflineData`: episodes streamed from Parquet files recorded with `config.offline_data(output=...)`.

The driving loop (what `BC.training_step` does)::

    data = OfflineData(config, observation_space, action_space)
    while training:
        episodes = data.sample(num_rows=config.train_batch_size_per_learner)
        learner_group.update(episodes=episodes)     # the learner pipeline turns them into a batch

Files are read one Arrow record batch at a time (`input_read_method_kwargs={"batch_size": n}` rows,
default 1024), so memory holds a few record batches, never the dataset: a dataset larger than RAM
trains. Each pass visits the files in a new (seeded) order, reading up to 8 of them interleaved, and
the next pass starts when it ends (`shuffle=False`: one file after the other, in name order).
Rows become `SingleAgentEpisode` chunks (consecutive rows of one episode id); a chunk that a record
batch cuts continues in the next one, with the same id and `t_started` where the first stopped.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow.parquet as pq

from flywheel.columns import Columns
from flywheel.episodes import SingleAgentEpisode
from flywheel.errors import OfflineDataError
from flywheel.offline.arrow_columns import FORMAT_KEY, SINGLE_AGENT, read_spaces, to_numpy
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
_DEFAULT_BATCH_SIZE = 1024
_READ_KWARGS = ("batch_size", "shuffle")
_OPEN_FILES = 8  # files read interleaved when shuffling (each holds one record batch in memory)


class OfflineData:
    """Streams `config.input_` as single-agent episodes for a learner; checks every file once."""

    def __init__(self, config: Any, observation_space: Any, action_space: Any) -> None:
        self.paths = parquet_files(config.input_)
        self.read_episodes = config.input_read_episodes
        self.spaces = (observation_space, action_space)
        kwargs = dict(config.input_read_method_kwargs or {})
        unknown = sorted(set(kwargs) - set(_READ_KWARGS))
        if unknown:
            raise OfflineDataError(
                f"input_read_method_kwargs has the unknown key(s) {unknown}; flywheel's Parquet reader takes "
                f"{list(_READ_KWARGS)}. Fix: remove them from config.offline_data(input_read_method_kwargs=...)."
            )
        self.batch_size = int(kwargs.get("batch_size", _DEFAULT_BATCH_SIZE))
        self.shuffle = bool(kwargs.get("shuffle", True))
        self._rng = np.random.default_rng(config.seed)
        for path in self.paths:
            self._check_file(path)
        self._stream = self._episodes()

    def sample(self, num_rows: int) -> list[SingleAgentEpisode]:
        """Whole episode chunks holding at least `num_rows` steps together (the last may overshoot)."""
        episodes, rows = [], 0
        while rows < num_rows:
            episode = next(self._stream)
            episodes.append(episode)
            rows += len(episode)
        return episodes

    def _check_file(self, path: str) -> None:
        schema = pq.read_schema(path)
        layout = (schema.metadata or {}).get(FORMAT_KEY, b"").decode()
        wanted = "episodes" if self.read_episodes else "rows"
        if layout and layout != wanted:
            raise OfflineDataError(
                f"{path} holds one row per {'episode chunk' if layout == 'episodes' else 'step'} (written "
                f"with output_write_episodes={layout == 'episodes'}), but input_read_episodes="
                f"{self.read_episodes}. Fix: config.offline_data(input_read_episodes={layout == 'episodes'})."
            )
        required = EPISODE_COLUMNS if self.read_episodes else ROW_COLUMNS
        missing = [column for column in required if column not in schema.names]
        if missing:
            raise OfflineDataError(
                f"{path} has no column(s) {missing}; a file with one row per "
                f"{'episode chunk' if self.read_episodes else 'step'} needs {list(required)}, this one has "
                f"{schema.names}. Fix: record it with config.offline_data(output=...), or add those columns."
            )
        recorded = read_spaces(schema.metadata, path).get(SINGLE_AGENT)
        if recorded is None:
            return
        for kind, was, now in zip(("observation", "action"), recorded, self.spaces, strict=True):
            if was != now:
                raise OfflineDataError(
                    f"{path} was recorded with the {kind} space {was}, but the env's {kind} space is {now}. "
                    "Fix: train with the env the data was recorded from (config.environment(...)), or pass "
                    f"that space as config.environment({kind}_space=...)."
                )

    def _episodes(self) -> Iterator[SingleAgentEpisode]:
        for batch in self._record_batches():
            data = {name: to_numpy(batch.column(name)) for name in batch.schema.names}
            if self.read_episodes:
                yield from self._from_episode_rows(data, batch)
            else:
                yield from self._from_step_rows(data)

    def _record_batches(self) -> Iterator[Any]:
        """Record batches of every file, pass after pass. With `shuffle`, files come in a new order each
        pass and `_OPEN_FILES` of them are read interleaved (the next batch from a file drawn with
        probability proportional to its unread rows), so a train batch mixes files."""
        columns = list(EPISODE_COLUMNS if self.read_episodes else ROW_COLUMNS)
        while True:
            order = (
                list(self._rng.permutation(len(self.paths))) if self.shuffle else list(range(len(self.paths)))
            )
            window: list[list] = []  # [batches iterator, unread rows]
            while order or window:
                while order and len(window) < (_OPEN_FILES if self.shuffle else 1):
                    file = pq.ParquetFile(self.paths[order.pop(0)])
                    window.append(
                        [file.iter_batches(self.batch_size, columns=columns), file.metadata.num_rows]
                    )
                unread = np.array([entry[1] for entry in window], float)
                pick = int(self._rng.choice(len(window), p=unread / unread.sum())) if unread.sum() else 0
                batch = next(window[pick][0], None)
                if batch is None:
                    window.pop(pick)
                    continue
                window[pick][1] -= batch.num_rows
                yield batch

    def _episode(self, data: dict, obs: Any, steps: slice, done: tuple[bool, bool], t_started: int) -> Any:
        return SingleAgentEpisode(
            id_=str(data[Columns.EPS_ID][steps.start]),
            observations=obs,
            actions=take(data[Columns.ACTIONS], steps),
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


def parquet_files(input_: Any) -> list[str]:
    """The Parquet files of `input_` (a file or folder, or a list of them), folders searched recursively
    (hidden files, e.g. ones still being written, are skipped), sorted."""
    paths = input_ if isinstance(input_, list | tuple) else [input_]
    files = []
    for path in map(os.fspath, paths):
        if os.path.isfile(path):
            files.append(path)
            continue
        if not os.path.isdir(path):
            raise OfflineDataError(
                f"input_ names {path!r}, which does not exist. Fix: pass the folder or Parquet file you "
                "recorded with config.offline_data(output=...) to config.offline_data(input_=...)."
            )
        for root, dirs, names in os.walk(path):
            dirs[:] = [d for d in dirs if not d.startswith(".")]
            files += [
                os.path.join(root, n) for n in names if n.endswith(".parquet") and not n.startswith(".")
            ]
    if not files:
        raise OfflineDataError(
            f"input_={input_!r} holds no Parquet files (*.parquet). Fix: record some with "
            "config.offline_data(output=...) (or `flywheel record`), or point input_ at the folder that has them."
        )
    return sorted(files)
