"""`MARWILConfig`: MARWIL's settings (Wang et al., 2018): advantage-weighted imitation of offline data.

config = (
    MARWILConfig()
    .environment("CartPole-v1")                       # spaces and evaluation
    .offline_data(input_="data/cartpole")             # Parquet files recorded with offline_data(output=...)
    .training(beta=1.0, vf_coeff=1.0)
)
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from flywheel.algorithms import config_validation as checks
from flywheel.algorithms.algorithm_config import AlgorithmConfig
from flywheel.algorithms.config_settings import Schedule, setting
from flywheel.offline.options import SHUFFLE_KEY, iter_batches_options

if TYPE_CHECKING:
    from flywheel.algorithms.marwil.learner import MARWILTorchLearner
    from flywheel.algorithms.marwil.marwil import MARWIL
    from flywheel.connectors.pipeline import ConnectorPipelineV2
    from flywheel.core.rl_module.spec import RLModuleSpec
    from flywheel.typing import DeviceType


@dataclasses.dataclass(init=False, repr=False, eq=True)
class MARWILConfig(AlgorithmConfig):
    """Settings of MARWIL (RLlib 2.60's names and defaults); `training()` also takes the keywords below."""

    lr: float | Schedule = setting("training", 1e-4)
    """Learning rate (MARWIL default 1e-4), or a piecewise-linear schedule."""
    train_batch_size: int = setting("training", 2000)
    """Offline rows (agent steps) trained on per update over all learners (RLlib's MARWIL/BC default
    2000, split among the learners; `train_batch_size_per_learner` sets each learner's instead)."""
    minibatch_size: int | None = setting("training", None)
    """None (RLlib's MARWIL/BC default): one gradient step on each learner's whole train batch."""
    rollout_fragment_length: int | str = setting("env_runners", 200)
    """Env steps per sub-env per sample() call (RLlib's MARWIL default; MARWIL trains on offline data)."""
    beta: float = setting("training", 1.0)
    """Advantage weighting in [0, 1]: the policy loss is -exp(beta * A / c) * log pi(a|s); 0 is plain
    behavior cloning (no value function is trained)."""
    vf_coeff: float = setting("training", 1.0)
    """Weight of the value loss 0.5 * mean(A^2) in the total loss."""
    moving_average_sqd_adv_norm_start: float = setting("training", 100.0)
    """Start value of c^2, the moving average of the squared advantages that normalizes A."""
    moving_average_sqd_adv_norm_update_rate: float = setting("training", 1e-8)
    """How fast c^2 follows each minibatch's mean squared advantage: c^2 += rate * (mean(A^2) - c^2)."""
    bc_logstd_coeff: float = setting("training", 0.0)
    """Box actions: adds bc_logstd_coeff * mean log std to the policy loss's objective (keeps the
    policy stochastic)."""
    lambda_: float = setting("training", 1.0)
    """GAE lambda for the value targets (1.0: discounted returns, bootstrapped at cut chunks)."""

    if TYPE_CHECKING:  # what build_algo() returns, for editors

        def build_algo(self) -> MARWIL: ...

    def get_default_algo_class(self) -> type[MARWIL]:
        """MARWIL (imported on first use)."""
        from flywheel.algorithms.marwil.marwil import MARWIL

        return MARWIL

    def get_default_learner_class(self) -> type[MARWILTorchLearner]:
        """MARWILTorchLearner (imported on first use)."""
        from flywheel.algorithms.marwil.learner import MARWILTorchLearner

        return MARWILTorchLearner

    def get_default_rl_module_spec(self) -> RLModuleSpec:
        """PPO's default actor-critic (as RLlib's MARWIL), so its state also loads into PPO."""
        from flywheel.algorithms.ppo.rl_module import DefaultPPOTorchRLModule
        from flywheel.core.rl_module.spec import RLModuleSpec

        return RLModuleSpec(module_class=DefaultPPOTorchRLModule)

    def build_learner_connector(
        self, input_observation_space: Any, input_action_space: Any, device: DeviceType | None = None
    ) -> ConnectorPipelineV2:
        """The common learner pipeline; with beta > 0 (unless defaults are off) also
        `AddOneTsToEpisodesAndTruncate` first and `GeneralAdvantageEstimation` (value targets) last."""
        pipeline = super().build_learner_connector(input_observation_space, input_action_space, device)
        if self.add_default_connectors_to_learner_pipeline and self.beta != 0.0:
            from flywheel.connectors.learner import AddOneTsToEpisodesAndTruncate, GeneralAdvantageEstimation

            pipeline.prepend(AddOneTsToEpisodesAndTruncate())
            pipeline.append(GeneralAdvantageEstimation(gamma=self.gamma, lambda_=self.lambda_))
        return pipeline

    def validation_problems(self) -> list[str]:
        """The common problems, MARWIL's, and an offline input."""
        problems = [
            checks.check_unit_interval(self, "beta"),
            checks.check_number(self, "vf_coeff", 0),
            checks.check_number(self, "moving_average_sqd_adv_norm_start", 0, strict=True),
            checks.check_number(self, "moving_average_sqd_adv_norm_update_rate", 0),
            checks.check_number(self, "bc_logstd_coeff", 0),
            checks.check_unit_interval(self, "lambda_"),
            checks.check_offline_input(self),
            self._shuffle_problem(),
        ]
        return super().validation_problems() + [problem for problem in problems if problem]

    def _shuffle_problem(self) -> str | None:
        """MARWIL's advantages are discounted returns along whole episodes: shuffled rows have none."""
        size = iter_batches_options(self).get(SHUFFLE_KEY)
        if self.beta == 0.0 or size is None:
            return None
        return (
            f"iter_batches_kwargs[{SHUFFLE_KEY!r}]={size!r} shuffles single rows, but MARWIL with beta={self.beta!r} "
            "computes its advantages along whole episodes, which shuffled rows no longer form. Fix: "
            f"config.offline_data(iter_batches_kwargs={{{SHUFFLE_KEY!r}: None}}), or beta=0.0 (BC)."
        )
