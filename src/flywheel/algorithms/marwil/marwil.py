"""`MARWIL`: trains on offline data streamed from Parquet files (or a Minari dataset); evaluates on env runners."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from flywheel.algorithms.algorithm import Algorithm
from flywheel.env.make import INPUT_ENV_SINGLE_SPACES

if TYPE_CHECKING:
    from flywheel.algorithms.marwil.config import MARWILConfig


class MARWIL(Algorithm):
    """Offline: each training step updates the learners on `dataset_num_iters_per_learner` (default 1)
    train batches read from `config.input_`, then syncs the weights to the env runners (which only
    evaluate). The env gives the spaces the data is checked against and the evaluation episodes.

    A local learner reads with pyarrow (`OfflineData`, or `MinariData` for `input_="minari:ID"`);
    remote learners (`num_learners >= 1`) each read their shard of a Ray Data stream (`RayOfflineData`)."""

    config: MARWILConfig

    offline_data: Any = None  # the reader of config.input_ (None until built)

    def setup(self, config: MARWILConfig) -> None:
        super().setup(config)
        from flywheel.offline.inputs import open_input

        spaces = self.env_runner.get_spaces()[INPUT_ENV_SINGLE_SPACES]
        try:
            self.offline_data = open_input(self.config, spaces, num_learners=len(self.learner_group))
        except BaseException:
            self.stop()  # bad data: free the learners and runners this build started
            raise

    def training_step(self) -> None:
        for _ in range(self.config.dataset_num_iters_per_learner or 1):
            if self.learner_group.is_remote:
                self.update_learners(data_iterators=self.offline_data.shards)
            else:
                self.update_learners(self.offline_data.sample(num_rows=self.config.total_train_batch_size))
        self.sync_runner_weights()

    def stop(self) -> None:
        """Also ends the reader (a local reader's background thread)."""
        if self.offline_data is not None:
            self.offline_data.stop()
        super().stop()
