"""`IQL`: implicit Q-learning on offline data; evaluates on env runners."""

from __future__ import annotations

from flywheel.algorithms.marwil.marwil import MARWIL


class IQL(MARWIL):
    """The offline training step every offline algorithm shares (MARWIL's: read
    `dataset_num_iters_per_learner` train batches of `total_train_batch_size` rows from
    `config.input_`, update the learners on each, sync the weights to the env runners, which only
    evaluate) with IQL's losses (`IQLTorchLearner`) on SAC's module plus a value network
    (`DefaultIQLTorchRLModule`)."""
