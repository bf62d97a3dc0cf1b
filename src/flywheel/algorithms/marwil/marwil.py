"""`MARWIL`: trains on offline data streamed from Parquet files; evaluates on env runners."""

from __future__ import annotations

from typing import Any

from flywheel.algorithms.algorithm import Algorithm
from flywheel.env.make import INPUT_ENV_SINGLE_SPACES


class MARWIL(Algorithm):
    """Offline: each training step updates the learners on `dataset_num_iters_per_learner` (default 1)
    train batches read from `config.input_`, then syncs the weights to the env runners (which only
    evaluate). The env gives the spaces the data is checked against and the evaluation episodes."""

    def __init__(self, config: Any, **kwargs: Any) -> None:
        super().__init__(config, **kwargs)
        from flywheel.offline.reader import OfflineData

        spaces = self.env_runner.get_spaces()[INPUT_ENV_SINGLE_SPACES]
        self.offline_data = OfflineData(self.config, *spaces)

    def training_step(self) -> None:
        for _ in range(self.config.dataset_num_iters_per_learner or 1):
            episodes = self.offline_data.sample(num_rows=self.config.total_train_batch_size)
            self._update(episodes)
        self._sync_weights()
