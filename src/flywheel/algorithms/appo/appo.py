"""`APPO`: asynchronous PPO (IMPACT, Luo et al., 2020): IMPALA's loop with APPO's learner and buffer."""

from __future__ import annotations

from typing import TYPE_CHECKING

from flywheel.algorithms.impala.impala import IMPALA

if TYPE_CHECKING:
    from flywheel.algorithms.appo.config import APPOConfig


class APPO(IMPALA):
    """IMPALA's asynchronous loop (see `flywheel.algorithms.impala.impala`); the circular buffer
    hands each train batch to the learners up to `circular_buffer_iterations_per_batch` times, and
    `APPOTorchLearner` trains with a clipped surrogate against a target policy."""

    config: APPOConfig
