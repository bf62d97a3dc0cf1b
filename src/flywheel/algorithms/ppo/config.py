"""`PPOConfig`: PPO's settings (clipped surrogate, value loss, entropy bonus, optional KL term, GAE).

config = PPOConfig().environment("CartPole-v1").training(lr=3e-4, num_epochs=10, clip_param=0.2, lambda_=0.95)
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from flywheel.algorithms import config_validation as checks
from flywheel.algorithms.algorithm_config import AlgorithmConfig
from flywheel.algorithms.config_settings import Schedule, setting

if TYPE_CHECKING:
    from flywheel.algorithms.ppo.learner import PPOTorchLearner
    from flywheel.algorithms.ppo.ppo import PPO
    from flywheel.connectors.pipeline import ConnectorPipelineV2
    from flywheel.core.rl_module.spec import RLModuleSpec
    from flywheel.typing import DeviceType


@dataclasses.dataclass(init=False, repr=False, eq=True)
class PPOConfig(AlgorithmConfig):
    """Settings of PPO; `training()` also takes the PPO keywords below."""

    lr: float | Schedule = setting("training", 5e-5)
    """Learning rate (RLlib's PPO default 5e-5; 3e-4 learns CartPole faster), or a piecewise-linear
    schedule over sampled env steps."""
    num_epochs: int = setting("training", 30)
    """Passes over each train batch (RLlib's PPO default 30; 10 is the usual faster recipe)."""
    clip_param: float = setting("training", 0.3)
    """Clip range of the probability ratio: how far one update may move the policy."""
    vf_clip_param: float = setting("training", 10.0)
    """The value loss (squared error) is clamped at this (RLlib's semantics and default). Errors
    above it get no gradient, so with returns in the tens or more (CartPole) the critic stalls:
    raise it to the scale of squared returns, or use float("inf") to turn clipping off."""
    vf_clip_range: float | None = setting("training")
    """PPO2/CleanRL value clipping: the new value may move at most this far from the value at sampling
    time (`old + clamp(new - old, -r, r)`), and the value loss is the larger of the clipped and
    unclipped squared errors (CleanRL's `clip_vloss` with `clip_coef`, e.g. 0.2). None: off. It scales
    with the returns: use it with normalized rewards. Independent of `vf_clip_param`."""
    advantage_normalization: str | None = setting("training", "batch")
    """Standardize advantages (`(A - mean) / std`) over each module's whole train batch ("batch",
    RLlib's way), over each minibatch ("minibatch", as CleanRL and SB3 do), or not at all (None)."""
    vf_loss_coeff: float = setting("training", 1.0)
    """Weight of the value loss in the total loss (matters when layers are shared)."""
    entropy_coeff: float | Schedule = setting("training", 0.0)
    """Weight of the entropy bonus (more exploration), or a schedule over sampled env steps."""
    use_kl_loss: bool = setting("training", True)
    """Add kl_coeff * KL(old || new) to the loss (on top of clipping)."""
    kl_coeff: float = setting("training", 0.2)
    """Initial KL weight; adapted after each update towards kl_target."""
    kl_target: float = setting("training", 0.01)
    """KL per update that the adaptive kl_coeff aims at."""
    lambda_: float = setting("training", 1.0)
    """GAE lambda: bias (0) vs variance (1) of the advantage estimates."""
    use_gae: bool = setting("training", True)
    """False: advantages are discounted returns minus the value baseline (GAE with lambda_=1)."""

    if TYPE_CHECKING:  # what build_algo() returns, for editors

        def build_algo(self) -> PPO: ...

    def get_default_algo_class(self) -> type[PPO]:
        """PPO (imported on first use)."""
        from flywheel.algorithms.ppo.ppo import PPO

        return PPO

    def get_default_learner_class(self) -> type[PPOTorchLearner]:
        """PPOTorchLearner (imported on first use)."""
        from flywheel.algorithms.ppo.learner import PPOTorchLearner

        return PPOTorchLearner

    def get_default_rl_module_spec(self) -> RLModuleSpec:
        """DefaultPPOTorchRLModule: actor-critic from model_config."""
        from flywheel.algorithms.ppo.rl_module import DefaultPPOTorchRLModule
        from flywheel.core.rl_module.spec import RLModuleSpec

        return RLModuleSpec(module_class=DefaultPPOTorchRLModule)

    def build_learner_connector(
        self, input_observation_space: Any, input_action_space: Any, device: DeviceType | None = None
    ) -> ConnectorPipelineV2:
        """The common learner pipeline with PPO's defaults around it (unless defaults are off):
        `AddOneTsToEpisodesAndTruncate` first (bootstrap rows), `GeneralAdvantageEstimation` last (which
        standardizes the advantages over the batch when `advantage_normalization="batch"`)."""
        pipeline = super().build_learner_connector(input_observation_space, input_action_space, device)
        if self.add_default_connectors_to_learner_pipeline:
            from flywheel.connectors.learner import AddOneTsToEpisodesAndTruncate, GeneralAdvantageEstimation

            pipeline.prepend(AddOneTsToEpisodesAndTruncate())
            lambda_ = self.lambda_ if self.use_gae else 1.0
            standardize = self.advantage_normalization == "batch"
            pipeline.append(
                GeneralAdvantageEstimation(gamma=self.gamma, lambda_=lambda_, standardize=standardize)
            )
        return pipeline

    def validation_problems(self) -> list[str]:
        """The common problems plus PPO's."""
        problems = [
            checks.check_number(self, "clip_param", 0, strict=True),
            checks.check_number(self, "vf_clip_param", 0, strict=True),
            checks.check_number(self, "vf_clip_range", 0, strict=True, allow_none=True),
            checks.check_optional_choice(self, "advantage_normalization", ("batch", "minibatch")),
            checks.check_number(self, "vf_loss_coeff", 0),
            checks.check_schedule(self, "entropy_coeff", 0),
            checks.check_bool(self, "use_kl_loss"),
            checks.check_number(self, "kl_coeff", 0),
            checks.check_number(self, "kl_target", 0, strict=True),
            checks.check_unit_interval(self, "lambda_"),
            checks.check_bool(self, "use_gae"),
        ]
        return super().validation_problems() + [problem for problem in problems if problem]
