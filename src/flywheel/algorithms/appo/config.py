"""`APPOConfig`: APPO's settings (IMPALA's, plus the clipped surrogate, target network and circular buffer).

config = (
    APPOConfig()
    .environment("CartPole-v1")
    .env_runners(num_env_runners=2, num_envs_per_env_runner=8)
    .training(clip_param=0.4, circular_buffer_num_batches=8, circular_buffer_iterations_per_batch=2)
)
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from flywheel.algorithms import config_validation as checks
from flywheel.algorithms.config_settings import setting
from flywheel.algorithms.impala.config import IMPALAConfig

if TYPE_CHECKING:
    from flywheel.algorithms.appo.appo import APPO
    from flywheel.algorithms.appo.learner import APPOTorchLearner
    from flywheel.algorithms.impala.batch_queue import BatchQueue
    from flywheel.core.rl_module.spec import RLModuleSpec

_RLLIB_LEARNER_QUEUE_SIZE = 16


@dataclasses.dataclass(init=False, repr=False, eq=True)
class APPOConfig(IMPALAConfig):
    """Settings of APPO (IMPACT, Luo et al., 2020): IMPALA's, and the keywords below.

    Train batches wait in a circular buffer of `circular_buffer_num_batches` from which the
    learners draw at random, each batch up to `circular_buffer_iterations_per_batch` times.
    """

    clip_param: float = setting("training", 0.4)
    """Clip range of the probability ratio against the target policy."""
    use_kl_loss: bool = setting("training", False)
    """Add kl_coeff * KL(target policy || policy) to the loss."""
    kl_coeff: float = setting("training", 1.0)
    """Initial KL weight; adapted after each update towards kl_target (with use_kl_loss)."""
    kl_target: float = setting("training", 0.01)
    """KL per update that the adaptive kl_coeff aims at."""
    target_network_update_freq: int = setting("training", 2)
    """The target policy follows the trained one every `target_network_update_freq` × N × K ×
    `learner_train_batch_size` trained env steps (N, K: the circular buffer's settings), as in
    RLlib; the IMPACT paper finds 0.125 to 4 robust."""
    tau: float = setting("training", 1.0)
    """Target update `target = tau * policy + (1 - tau) * target` (1.0 copies)."""
    target_worker_clipping: float = setting("training", 2.0)
    """Clip of the importance ratio target policy / runner policy in the surrogate."""
    use_circular_buffer: bool = setting("training", True)
    """Draw train batches from a circular buffer (False: a first-in first-out queue of `simple_queue_size`)."""
    circular_buffer_num_batches: int = setting("training", 8)
    """N: train batches the circular buffer holds (a new one evicts the oldest)."""
    circular_buffer_iterations_per_batch: int = setting("training", 2)
    """K: how often each train batch is trained on at most."""
    simple_queue_size: int = setting("training", 32)
    """Train batches the queue holds when `use_circular_buffer=False` (each trained on once)."""
    learner_queue_size: int = setting("training", _RLLIB_LEARNER_QUEUE_SIZE)
    """Not used by APPO (its buffer is set by the settings above); must keep its default, as in RLlib."""

    if TYPE_CHECKING:  # what build_algo() returns, for editors

        def build_algo(self) -> APPO: ...

    def get_default_algo_class(self) -> type[APPO]:
        """APPO (imported on first use)."""
        from flywheel.algorithms.appo.appo import APPO

        return APPO

    def get_default_learner_class(self) -> type[APPOTorchLearner]:
        """APPOTorchLearner (imported on first use)."""
        from flywheel.algorithms.appo.learner import APPOTorchLearner

        return APPOTorchLearner

    def get_default_rl_module_spec(self) -> RLModuleSpec:
        """DefaultAPPOTorchRLModule: PPO's actor-critic (`vf_share_layers=False`) with a target policy."""
        from flywheel.algorithms.appo.rl_module import DefaultAPPOTorchRLModule
        from flywheel.core.rl_module.spec import RLModuleSpec

        return RLModuleSpec(module_class=DefaultAPPOTorchRLModule)

    def build_learner_queue(self) -> BatchQueue:
        """The circular buffer (random draws, K uses per batch, seeded with `seed`), or with
        `use_circular_buffer=False` a first-in first-out queue of `simple_queue_size` batches."""
        from flywheel.algorithms.impala.batch_queue import BatchQueue

        if not self.use_circular_buffer:
            return BatchQueue(self.simple_queue_size)
        return BatchQueue(
            self.circular_buffer_num_batches,
            self.circular_buffer_iterations_per_batch,
            random_order=True,
            seed=self.seed,
        )

    def validation_problems(self) -> list[str]:
        """IMPALA's problems plus APPO's."""
        problems = [
            checks.check_number(self, "clip_param", 0, strict=True),
            checks.check_bool(self, "use_kl_loss"),
            checks.check_number(self, "kl_coeff", 0),
            checks.check_number(self, "kl_target", 0, strict=True),
            checks.check_number(self, "target_network_update_freq", 0),
            checks.check_unit_interval(self, "tau"),
            checks.check_number(self, "target_worker_clipping", 0, strict=True),
            checks.check_bool(self, "use_circular_buffer"),
            checks.check_int(self, "circular_buffer_num_batches", 1),
            checks.check_int(self, "circular_buffer_iterations_per_batch", 1),
            checks.check_int(self, "simple_queue_size", 1),
        ]
        if self.learner_queue_size != _RLLIB_LEARNER_QUEUE_SIZE:
            problems.append(
                f"learner_queue_size={self.learner_queue_size!r} is not used by APPO (RLlib 2.60 rejects it "
                "too). Fix: size APPO's buffer with config.training(circular_buffer_num_batches=...) (or "
                "simple_queue_size=... with use_circular_buffer=False), and leave learner_queue_size out."
            )
        return super().validation_problems() + [problem for problem in problems if problem]
