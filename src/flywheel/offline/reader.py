"""`OfflineData`: episodes streamed from Parquet files recorded with `config.offline_data(output=...)`.

The driving loop (what `BC.training_step` does)::

    data = OfflineData(config, observation_space, action_space)
    while training:
        episodes = data.sample(num_rows=config.total_train_batch_size)
        learner_group.update(episodes=episodes)     # the learner pipeline turns them into a batch

Files are read one Arrow record batch at a time (`input_read_method_kwargs={"batch_size": n}` rows,
default 1024), so memory holds a few record batches, never the dataset: a dataset larger than RAM
trains. Each pass visits the files in a new (seeded) order, reading up to 8 of them interleaved, and
the next pass starts when it ends (`shuffle=False`: one file after the other, in name order).
Rows become `SingleAgentEpisode` chunks (consecutive rows of one episode id), or for a multi-agent
config `MultiAgentEpisode`s of their agents' chunks (`multi_agent.MultiAgentEpisodeBuilder`); a chunk that a record
batch cuts continues in the next one, with the same id and `t_started` where the first stopped.
With `iter_batches_kwargs={"local_shuffle_buffer_size": n}` (CQL's default) the record batches pass
through a shuffle buffer of n rows first (`flywheel.offline.shuffle`), so rows leave one by one in
random order. With `input_read_method_kwargs={"prefetch_batches": n}` a background thread reads n
train batches ahead while the learner trains (`flywheel.offline.prefetch`), in the same order.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, cast

import gymnasium as gym
import numpy as np

from flywheel.errors import OfflineDataError
from flywheel.offline.damaged import file_batches, readable_files
from flywheel.offline.episodes import EpisodeBuilder, Spaces, check_files, needs_action_normalizing
from flywheel.offline.multi_agent import MultiAgentEpisodeBuilder
from flywheel.offline.options import SEED_KEY, SHUFFLE_KEY, iter_batches_options
from flywheel.offline.paths import local_path
from flywheel.offline.prefetch import PREFETCH_KEY, Episode, Prefetcher, prefetch_depth
from flywheel.offline.shuffle import shuffled

if TYPE_CHECKING:
    from flywheel.algorithms.algorithm_config import AlgorithmConfig

_DEFAULT_BATCH_SIZE = 1024
_READ_KWARGS = ("batch_size", "shuffle", PREFETCH_KEY)
_OPEN_FILES = 8  # files read interleaved when shuffling (each holds one record batch in memory)


class OfflineData:
    """Streams `config.input_` as episodes for a local learner (`MultiAgentEpisode`s for a multi-agent
    config); checks every file once."""

    def __init__(
        self, config: AlgorithmConfig, observation_space: gym.Space, action_space: gym.Space
    ) -> None:
        self.ignore_corrupt = bool(config.input_ignore_corrupt_files)
        self.paths = readable_files(parquet_files(config.input_), self.ignore_corrupt)
        self.skipped: set[str] = set()  # files found damaged while reading (input_ignore_corrupt_files)
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
        self.read_options = LocalReadOptions(config)
        self.builder = episode_builder(config, self.paths, (observation_space, action_space))
        self._prefetcher = Prefetcher(self._episodes(), self.read_options.prefetch_depth(kwargs))

    def sample(self, num_rows: int) -> list[Episode]:
        """Whole episode chunks holding at least `num_rows` agent steps together (the last may overshoot)."""
        return self._prefetcher.take(num_rows)

    def stop(self) -> None:
        """Ends the background reading (`prefetch_batches`), if any."""
        self._prefetcher.stop()

    def _episodes(self) -> Iterator[Episode]:
        batches = self._record_batches()
        options = self.read_options
        if options.shuffle_buffer_size is not None:
            batches = shuffled(batches, options.shuffle_buffer_size, options.shuffle_rng, self.batch_size)
        for batch in batches:
            yield from self.builder.episodes(batch)

    def _record_batches(self) -> Iterator[Any]:
        """Record batches of every file, pass after pass. With `shuffle`, files come in a new order each
        pass and `_OPEN_FILES` of them are read interleaved (the next batch from a file drawn with
        probability proportional to its unread rows), so a train batch mixes files."""
        columns = self.builder.columns
        while True:
            paths = [path for path in self.paths if path not in self.skipped]
            if not paths:
                raise OfflineDataError(
                    f"Every file of input_ turned out damaged while reading ({len(self.skipped)} skipped, see "
                    "the warnings above). Fix: point input_ at a folder with intact files, or re-record them."
                )
            order = list(self._rng.permutation(len(paths))) if self.shuffle else list(range(len(paths)))
            window: list[list] = []  # [batches iterator, unread rows]
            while order or window:
                while order and len(window) < (_OPEN_FILES if self.shuffle else 1):
                    path = paths[order.pop(0)]
                    window.append(
                        [*file_batches(path, self.batch_size, columns, self.ignore_corrupt, self.skipped)]
                    )
                unread = np.array([entry[1] for entry in window], float)
                pick = int(self._rng.choice(len(window), p=unread / unread.sum())) if unread.sum() else 0
                batch = next(window[pick][0], None)
                if batch is None:
                    window.pop(pick)
                    continue
                window[pick][1] -= batch.num_rows
                yield batch


class LocalReadOptions:
    """What a local reader (Parquet or Minari) takes from `iter_batches_kwargs`, with the algorithm's
    defaults: the shuffle buffer's size (None: stored order), its seeded generator, the read-ahead."""

    def __init__(self, config: AlgorithmConfig) -> None:
        self.options = local_iter_options(config)
        self.shuffle_buffer_size: int | None = self.options.get(SHUFFLE_KEY)
        seed = self.options.get(SEED_KEY)
        self.shuffle_rng = np.random.default_rng(config.seed if seed is None else seed)

    def prefetch_depth(self, read_kwargs: dict[str, Any]) -> int:
        """`prefetch_batches` of `iter_batches_kwargs`, or of `read_kwargs` (`input_read_method_kwargs`),
        which wins when both are set."""
        depth = {PREFETCH_KEY: self.options[PREFETCH_KEY]} if PREFETCH_KEY in self.options else {}
        return prefetch_depth({**depth, **read_kwargs})


def local_iter_options(config: AlgorithmConfig) -> dict[str, Any]:
    """`iter_batches_options(config)`, checked for the keys a local reader takes: the shuffle's and
    `prefetch_batches` (read-ahead, as `input_read_method_kwargs`'s, which wins when both are set)."""
    options = iter_batches_options(config)
    unknown = sorted(set(options) - {SHUFFLE_KEY, SEED_KEY, PREFETCH_KEY})
    if unknown:
        raise OfflineDataError(
            f"iter_batches_kwargs has the key(s) {unknown}, which only Ray Data's iter_batches takes "
            f"(num_learners >= 1); a local learner's reader takes {[SHUFFLE_KEY, SEED_KEY, PREFETCH_KEY]}. "
            "Fix: remove them from config.offline_data(iter_batches_kwargs=...), or read with "
            "config.learners(num_learners=1)."
        )
    return options


def parquet_files(input_: Any) -> list[str]:
    """The Parquet files of `input_` (a file or folder, or a list of them), folders searched recursively
    (hidden files, e.g. ones still being written, are skipped), sorted."""
    paths = input_ if isinstance(input_, list | tuple) else [input_]
    files = []
    for path in map(local_path, paths):
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


def episode_builder(config: AlgorithmConfig, paths: list[str], env_spaces: Spaces) -> EpisodeBuilder:
    """Checks every file of `paths` against `config` and the env's spaces (one env's; per-agent Dict
    spaces for a multi-agent config) and returns the builder of its episodes: `MultiAgentEpisode`s
    when `config.is_multi_agent`, else `SingleAgentEpisode`s."""
    if not config.is_multi_agent:
        files_say = check_files(paths, config.input_read_episodes, env_spaces)
        return EpisodeBuilder(
            config.input_read_episodes, env_spaces, needs_action_normalizing(config, files_say)
        )
    observation_spaces, action_spaces = cast(tuple[gym.spaces.Dict, gym.spaces.Dict], env_spaces)
    agent_spaces = {str(a): (observation_spaces[a], action_spaces[a]) for a in observation_spaces}
    files_say = check_files(paths, config.input_read_episodes, agent_spaces)
    return MultiAgentEpisodeBuilder(
        config.input_read_episodes,
        env_spaces,
        needs_action_normalizing(config, files_say),
        config.policy_mapping_fn,  # (None: every agent's module is "default_policy")
    )
