"""`CQL`: conservative Q-learning on offline data; evaluates on env runners."""

from __future__ import annotations

from typing import TYPE_CHECKING

from flywheel.algorithms.marwil.marwil import MARWIL

if TYPE_CHECKING:
    from flywheel.algorithms.cql.config import CQLConfig


class CQL(MARWIL):
    """The offline training step every offline algorithm shares (MARWIL's: read
    `dataset_num_iters_per_learner` train batches of `total_train_batch_size` rows from
    `config.input_`, update the learners on each, sync the weights to the env runners, which only
    evaluate) with CQL's loss on SAC's module (`CQLTorchLearner`). No replay buffer: the data is
    the buffer."""

    config: CQLConfig
