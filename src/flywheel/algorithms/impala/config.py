"""`IMPALAConfig`: IMPALA's settings (V-trace, the learner queue, weight broadcasts), RLlib 2.60's names and defaults.

config = (
    IMPALAConfig()
    .environment("CartPole-v1")
    .env_runners(num_env_runners=2, num_envs_per_env_runner=8)
    .training(lr=5e-4, train_batch_size_per_learner=500, broadcast_interval=1)
)
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from flywheel.algorithms import config_validation as checks
from flywheel.algorithms.algorithm_config import AlgorithmConfig
from flywheel.algorithms.config_settings import Schedule, setting

if TYPE_CHECKING:
    from flywheel.algorithms.impala.batch_queue import BatchQueue
    from flywheel.algorithms.impala.impala import IMPALA
    from flywheel.algorithms.impala.learner import IMPALATorchLearner
    from flywheel.connectors.pipeline import ConnectorPipelineV2
    from flywheel.core.rl_module.spec import RLModuleSpec
    from flywheel.typing import DeviceType


@dataclasses.dataclass(init=False, repr=False, eq=True)
class IMPALAConfig(AlgorithmConfig):
    """Settings of IMPALA (Espeholt et al., 2018); `training()` also takes the keywords below.

    Remote runners sample without pause: each `rollout_fragment_length` × `num_envs_per_env_runner`
    steps go to a queue of train batches (`total_train_batch_size` env steps each: `train_batch_size`,
    or `train_batch_size_per_learner` × learners when that is set)
    that the learners take from; weights go back to the runners every `broadcast_interval` updates.
    """

    num_env_runners: int = setting("env_runners", 2)
    """Remote runners (RLlib's IMPALA default 2); 0 samples and learns in turn, in this process."""
    rollout_fragment_length: int | str = setting("env_runners", 50)
    """Env steps per sub-env per `sample()` call; also the length of the learner's V-trace rows."""
    lr: float | Schedule = setting("training", 5e-4)
    """Learning rate (IMPALA default 5e-4), or a schedule over sampled env steps."""
    grad_clip: float | None = setting("training", 40.0)
    """Clips the gradients (by `grad_clip_by`, default their global norm) at this value."""
    train_batch_size: int = setting("training", 500)
    """Env steps of one train batch of the queue over all learners (RLlib's IMPALA default 500),
    used when `train_batch_size_per_learner` is None (its default)."""
    minibatch_size: int | None = setting("training", None)
    """None: one gradient step on the whole train batch; else timesteps per gradient step, in whole
    rows of `rollout_fragment_length` elements."""
    min_time_s_per_iteration: float = setting("reporting", 10)
    """`train()` runs training steps (one learner update each) for at least this many seconds."""
    vtrace: bool = setting("training", True)
    """V-trace off-policy correction; must stay True (as in RLlib 2.60, where False is an error)."""
    vtrace_clip_rho_threshold: float | None = setting("training", 1.0)
    """rho-bar: the clip of the importance weights in the value targets (None: no clip)."""
    vtrace_clip_pg_rho_threshold: float | None = setting("training", 1.0)
    """The clip of the importance weights in the policy-gradient advantages (None: no clip)."""
    vf_loss_coeff: float = setting("training", 0.5)
    """Weight of the value loss in the total loss."""
    entropy_coeff: float | Schedule = setting("training", 0.01)
    """Weight of the entropy bonus, or a schedule over sampled env steps."""
    learner_queue_size: int = setting("training", 3)
    """Train batches waiting for the learners at most; a new one replaces the oldest when full
    (counted in `learners/__all_modules__/num_env_steps_dropped`)."""
    broadcast_interval: int = setting("training", 1)
    """Learner updates between weight broadcasts to the runners (each runner takes the newest
    weights with its next `sample()` call)."""

    if TYPE_CHECKING:  # what build_algo() returns, for editors

        def build_algo(self) -> IMPALA: ...

    def get_default_algo_class(self) -> type[IMPALA]:
        """IMPALA (imported on first use)."""
        from flywheel.algorithms.impala.impala import IMPALA

        return IMPALA

    def get_default_learner_class(self) -> type[IMPALATorchLearner]:
        """IMPALATorchLearner (imported on first use)."""
        from flywheel.algorithms.impala.learner import IMPALATorchLearner

        return IMPALATorchLearner

    def get_default_rl_module_spec(self) -> RLModuleSpec:
        """DefaultPPOTorchRLModule with `vf_share_layers=True`, RLlib's default model for IMPALA."""
        from flywheel.algorithms.ppo.rl_module import DefaultPPOTorchRLModule
        from flywheel.core.rl_module.spec import RLModuleSpec

        return RLModuleSpec(module_class=DefaultPPOTorchRLModule, model_config={"vf_share_layers": True})

    def build_learner_connector(
        self, input_observation_space: Any, input_action_space: Any, device: DeviceType | None = None
    ) -> ConnectorPipelineV2:
        """The common learner pipeline with IMPALA's defaults around it (unless defaults are off):
        `AddOneTsToEpisodesAndTruncate` first (bootstrap rows), and `AddTimeDimToBatchAndBootstrap`
        (rows of `rollout_fragment_length`) in place of `AddTimeDimToBatchAndZeroPad`, right after
        `BatchIndividualItems` (it lays out the flat batch), before `NumpyToTensor`."""
        pipeline = super().build_learner_connector(input_observation_space, input_action_space, device)
        if self.add_default_connectors_to_learner_pipeline:
            from flywheel.connectors.learner import (
                AddOneTsToEpisodesAndTruncate,
                AddTimeDimToBatchAndBootstrap,
                AddTimeDimToBatchAndZeroPad,
                BatchIndividualItems,
            )

            pipeline.prepend(AddOneTsToEpisodesAndTruncate())
            pipeline.remove(AddTimeDimToBatchAndZeroPad)
            length = max(2, self.get_rollout_fragment_length())
            pipeline.insert_after(BatchIndividualItems, AddTimeDimToBatchAndBootstrap(sequence_length=length))
        return pipeline

    def build_learner_queue(self) -> BatchQueue:
        """The queue of train batches between runners and learners: `learner_queue_size` batches,
        each trained on once, oldest first."""
        from flywheel.algorithms.impala.batch_queue import BatchQueue

        return BatchQueue(self.learner_queue_size)

    def validation_problems(self) -> list[str]:
        """The common problems (minibatch_size may be None here) plus IMPALA's."""
        problems = super().validation_problems()
        if self.minibatch_size is None:
            not_a_problem = checks.check_int(self, "minibatch_size", 1)
            problems = [problem for problem in problems if problem != not_a_problem]
        if self.vtrace is not True:
            problems.append(
                f"vtrace={self.vtrace!r}: {type(self).__name__} always uses V-trace (RLlib 2.60 rejects "
                "vtrace=False too). Fix: leave vtrace=True in config.training()."
            )
        own = [
            checks.check_number(self, "vtrace_clip_rho_threshold", 0, strict=True, allow_none=True),
            checks.check_number(self, "vtrace_clip_pg_rho_threshold", 0, strict=True, allow_none=True),
            checks.check_number(self, "vf_loss_coeff", 0),
            checks.check_schedule(self, "entropy_coeff", 0),
            checks.check_int(self, "learner_queue_size", 1),
            checks.check_int(self, "broadcast_interval", 1),
        ]
        return problems + [problem for problem in own if problem]
