"""`RayOfflineData`: recorded Parquet files streamed to remote learners with Ray Data (`num_learners >= 1`).

As in RLlib, `ray.data.read_parquet` reads the files and `Dataset.streaming_split(num_learners,
equal=True)` cuts the stream into one shard per learner; each learner keeps its `DataShard` and
reads `config.learner_train_batch_size` rows from it per update, turning them into episode chunks in
its own process (`EpisodeBuilder`) and running them through its learner pipeline. With
`iter_batches_kwargs={"local_shuffle_buffer_size": n}` (CQL's default) each shard hands out its rows
in random order through Ray Data's local shuffle buffer of at least n rows. Every shard holds
the same number of rows, so all learners finish a pass over the data in the same update and start
the next one together; within a pass every row is read exactly once (the shuffle keeps that).

Ray is imported here only; the driver checks every file (columns, layout, spaces) before reading.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import gymnasium as gym

from flywheel.errors import OfflineDataError
from flywheel.offline.damaged import readable_files
from flywheel.offline.episodes import EpisodeBuilder
from flywheel.offline.options import SEED_KEY, SHUFFLE_KEY, iter_batches_options
from flywheel.offline.reader import episode_builder, parquet_files

if TYPE_CHECKING:
    from flywheel.algorithms.algorithm_config import AlgorithmConfig


class RayOfflineData:
    """One `DataShard` per learner (`self.shards`) over `config.input_`, read with Ray Data.

    `config.input_read_method_kwargs` are passed to `ray.data.read_parquet` (as RLlib does); only the
    columns the episodes need are read. Files whose footer does not read are named (or skipped:
    `input_ignore_corrupt_files`); Ray Data 2.60's Parquet reader sets its own scan options, so it does
    not verify page checksums."""

    def __init__(
        self, config: AlgorithmConfig, observation_space: gym.Space, action_space: gym.Space, num_shards: int
    ) -> None:
        import ray

        paths = readable_files(parquet_files(config.input_), bool(config.input_ignore_corrupt_files))
        builder = episode_builder(config, paths, (observation_space, action_space))
        _check_free_cpu(ray)
        kwargs = config.input_read_method_kwargs or {}
        dataset = ray.data.read_parquet(paths, **kwargs).select_columns(builder.columns)
        splits = dataset.streaming_split(num_shards, equal=True)
        options = ray_iter_options(config)
        self.shards = [
            DataShard(split, builder, config.learner_train_batch_size, options) for split in splits
        ]

    def stop(self) -> None:
        """Nothing to end here (the readers' common interface): each shard's stream is read in its
        learner's process and ends with it."""


class DataShard:
    """One learner's part of the dataset; `next_episodes()` reads its next `batch_size` rows (the
    rest of a pass at its end, then the next pass begins). Picklable: it is sent to the learner,
    which opens the stream in its own process on first use."""

    def __init__(
        self, iterator: Any, builder: EpisodeBuilder, batch_size: int, options: dict[str, Any]
    ) -> None:
        self.iterator = iterator
        self.builder = builder
        self.batch_size = batch_size
        self.options = options
        self._batches: Iterator[Any] | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_batches": None}

    def next_episodes(self) -> list[Any]:
        """The (single- or multi-agent) episode chunks of the next `batch_size` rows of this shard."""
        batch = None if self._batches is None else next(self._batches, None)
        if batch is None:  # first use, or the pass ended: every shard starts the next one now
            self._batches = iter(
                self.iterator.iter_batches(batch_size=self.batch_size, batch_format="pyarrow", **self.options)
            )
            batch = next(self._batches, None)
        if batch is None:
            raise OfflineDataError(
                "A learner's shard of the offline data holds no rows: the dataset has fewer rows than "
                "num_learners. Fix: record more data, or train with fewer learners."
            )
        return list(self.builder.episodes(batch))


def ray_iter_options(config: AlgorithmConfig) -> dict[str, Any]:
    """The keywords of each shard's `iter_batches`: `iter_batches_options(config)` (the shuffle seed,
    when shuffling, the config's seed unless set); the batch size and format are the reader's."""
    options = iter_batches_options(config)
    taken = sorted(set(options) & {"batch_size", "batch_format"})
    if taken:
        raise OfflineDataError(
            f"iter_batches_kwargs sets {taken}, which the reader sets itself (train_batch_size_per_learner "
            "rows per update, as Arrow tables). Fix: remove them from config.offline_data(iter_batches_kwargs=...); "
            "set config.training(train_batch_size_per_learner=...) instead."
        )
    if options.get(SHUFFLE_KEY) is None:
        options.pop(SHUFFLE_KEY, None)
        options.pop(SEED_KEY, None)
    elif options.get(SEED_KEY) is None:
        options[SEED_KEY] = config.seed
    return options


def _check_free_cpu(ray: Any) -> None:
    """Ray Data's read tasks need a CPU the learners do not hold; without one they wait forever."""
    free = ray.available_resources().get("CPU", 0.0)
    if free < 1.0:
        raise OfflineDataError(
            f"Reading offline data with Ray Data needs a free CPU for its read tasks, but the Ray cluster has "
            f"{free:g} CPU(s) left after starting the learners and env runners. Fix: "
            "config.learners(num_cpus_per_learner=...) smaller (e.g. 0.5), fewer learners, or more CPUs in ray.init()."
        )
