"""`open_input`: the reader of `config.input_` for the algorithm's learners."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import gymnasium as gym

from flywheel.errors import OfflineDataError
from flywheel.offline.paths import MINARI_PREFIX

if TYPE_CHECKING:
    from flywheel.algorithms.algorithm_config import AlgorithmConfig


def open_input(config: AlgorithmConfig, spaces: tuple[gym.Space, gym.Space], num_learners: int) -> Any:
    """A local reader (`sample(num_rows)`) for a local learner, or `RayOfflineData` (`shards`, one per
    learner) for `num_learners >= 1` remote learners."""
    if isinstance(config.input_, str) and config.input_.startswith(MINARI_PREFIX):
        if config.is_multi_agent:
            raise OfflineDataError(
                f"input_={config.input_!r} is a Minari dataset, which holds single-agent episodes, but this config "
                "is multi-agent. Fix: train without config.multi_agent(...)."
            )
        if num_learners:
            raise OfflineDataError(
                f"input_={config.input_!r} is read by the local learner only, but num_learners={num_learners}. "
                "Fix: config.learners(num_learners=0), or record the dataset to Parquet files and read those."
            )
        from flywheel.offline.minari_data import MinariData

        return MinariData(config, *spaces)
    if num_learners:
        from flywheel.offline.ray_data import RayOfflineData

        return RayOfflineData(config, *spaces, num_shards=num_learners)
    from flywheel.offline.reader import OfflineData

    return OfflineData(config, *spaces)
