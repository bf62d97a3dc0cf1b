"""`MinariData`: episodes of a local Minari dataset (`config.offline_data(input_="minari:DATASET_ID")`).

Minari (Farama's standard for offline RL datasets) keeps datasets under its data folder
(`MINARI_DATASETS_PATH`, default `~/.minari/datasets`). flywheel reads them from there and never
downloads: `minari download ID` or `minari.DataCollector(env).create_dataset(dataset_id=ID)` puts a
dataset there first. Episodes are read one at a time (memory holds one episode), in a new seeded
order each pass; their actions are in the env's space, so Box actions are normalized to [-1, 1] on
read when the module acts in normalized space (unless `actions_in_input_normalized`). With a shuffle
buffer (`iter_batches_kwargs={"local_shuffle_buffer_size": n}`, CQL's default) their steps leave one
by one in random order, as Parquet rows do (`flywheel.offline.shuffle.shuffled_steps`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import gymnasium as gym
import numpy as np

from flywheel.episodes import SingleAgentEpisode
from flywheel.errors import OfflineDataError
from flywheel.offline.episodes import EpisodeBuilder, check_spaces, needs_action_normalizing
from flywheel.offline.paths import MINARI_PREFIX
from flywheel.offline.prefetch import PREFETCH_KEY, Prefetcher
from flywheel.offline.reader import LocalReadOptions
from flywheel.offline.shuffle import shuffled_steps

if TYPE_CHECKING:
    from flywheel.algorithms.algorithm_config import AlgorithmConfig

_READ_KWARGS = ("shuffle", PREFETCH_KEY)


class MinariData:
    """Streams a local Minari dataset's episodes for a local learner; `sample(num_rows)` as `OfflineData`."""

    def __init__(
        self, config: AlgorithmConfig, observation_space: gym.Space, action_space: gym.Space
    ) -> None:
        import minari
        from minari.storage import get_dataset_path

        dataset_id = config.input_[len(MINARI_PREFIX) :]
        unknown = sorted(set(config.input_read_method_kwargs or {}) - set(_READ_KWARGS))
        if unknown:
            raise OfflineDataError(
                f"input_read_method_kwargs has the unknown key(s) {unknown}; the Minari reader takes "
                f"{list(_READ_KWARGS)}. Fix: remove them from config.offline_data(input_read_method_kwargs=...)."
            )
        try:
            self.dataset = minari.load_dataset(dataset_id, download=False)
        except FileNotFoundError as error:
            raise OfflineDataError(
                f"input_={config.input_!r}: the Minari dataset {dataset_id!r} is not in the local Minari data "
                f"folder {get_dataset_path()} (set by MINARI_DATASETS_PATH); flywheel never downloads. Fix: "
                f"`minari download {dataset_id}`, or create it with "
                f"minari.DataCollector(env).create_dataset(dataset_id={dataset_id!r})."
            ) from error
        spaces = (observation_space, action_space)
        recorded = (self.dataset.observation_space, self.dataset.action_space)
        check_spaces(f"The Minari dataset {dataset_id!r}", recorded, spaces)
        self.builder = EpisodeBuilder(False, spaces, needs_action_normalizing(config, None))
        self.shuffle = bool((config.input_read_method_kwargs or {}).get("shuffle", True))
        self._rng = np.random.default_rng(config.seed)
        self.read_options = LocalReadOptions(config)
        kwargs = config.input_read_method_kwargs or {}
        self._prefetcher = Prefetcher(self._episodes(), self.read_options.prefetch_depth(kwargs))

    def sample(self, num_rows: int) -> list[SingleAgentEpisode]:
        """Whole episodes (or shuffled one-step chunks) holding at least `num_rows` steps together."""
        return self._prefetcher.take(num_rows)

    def stop(self) -> None:
        """Ends the background reading (`prefetch_batches`), if any."""
        self._prefetcher.stop()

    def _episodes(self) -> Iterator[SingleAgentEpisode]:
        options = self.read_options
        if options.shuffle_buffer_size is None:
            return self._whole_episodes()
        return shuffled_steps(self._whole_episodes(), options.shuffle_buffer_size, options.shuffle_rng)

    def _whole_episodes(self) -> Iterator[SingleAgentEpisode]:
        indices = np.asarray(self.dataset.episode_indices)
        while True:
            order = self._rng.permutation(indices) if self.shuffle else indices
            for data in self.dataset.iterate_episodes(order.tolist()):
                actions = np.asarray(data.actions)
                yield SingleAgentEpisode(
                    id_=f"minari-{data.id}",
                    observations=data.observations,
                    actions=self.builder.module_actions(actions, self.builder.spaces[1]),
                    rewards=np.asarray(data.rewards, np.float32),
                    terminated=bool(data.terminations[-1]),
                    truncated=bool(data.truncations[-1]),
                    observation_space=self.builder.spaces[0],
                    action_space=self.builder.spaces[1],
                    len_lookback_buffer=0,
                )
