"""`IQLConfig`: implicit Q-learning (Kostrikov et al., 2021) on offline data, on SAC's module.

config = (
    IQLConfig()
    .environment("Pendulum-v1")                       # spaces and evaluation
    .offline_data(input_="data/pendulum", dataset_num_iters_per_learner=100)
    .training(beta=3.0, expectile=0.7, tau=0.005, train_batch_size_per_learner=256)
)
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, ClassVar

from flywheel.algorithms import config_validation as checks
from flywheel.algorithms.algorithm_config import AlgorithmConfig
from flywheel.algorithms.config_settings import Schedule, setting
from flywheel.offline.options import SHUFFLE_KEY
from flywheel.typing import DEFAULT_MODULE_ID

if TYPE_CHECKING:
    from flywheel.connectors.pipeline import ConnectorPipelineV2
    from flywheel.core.rl_module.spec import RLModuleSpec


@dataclasses.dataclass(init=False, repr=False, eq=True)
class IQLConfig(AlgorithmConfig):
    """Settings of IQL (RLlib 2.60's names and defaults); `training()` also takes the keywords below.

    IQL never asks its critics about actions the data does not hold: V(s) regresses to an upper
    expectile of the target critics' Q(s, a_data), the critics to `r + gamma * V(s')`, and the policy
    clones the data's actions weighted by `exp(beta * (Q - V))` (see `IQLTorchLearner`). Box or
    Discrete actions; the module is SAC's plus a value network (`DefaultIQLTorchRLModule`).
    Three optimizers, so `lr` is None and not used: set `actor_lr`, `critic_lr` and `value_lr`.
    """

    uses_lr = False

    lr: float | Schedule | None = setting("training", None)
    """Not used (None): IQL's optimizers take `actor_lr`, `critic_lr` and `value_lr`."""
    beta: float = setting("training", 0.1)
    """Inverse temperature of the advantage weights `exp(beta * (Q - V))` (> 0): higher picks the
    data's best actions more greedily, lower is closer to behavior cloning."""
    expectile: float = setting("training", 0.8)
    """Expectile of V's regression, in (0, 1): errors where Q > V weigh `expectile`, the others
    `1 - expectile`, so V nears the maximum of Q over the data's actions as it nears 1 (0.5: the mean)."""
    actor_lr: float | Schedule = setting("training", 3e-4)
    """Learning rate of the policy, or a schedule."""
    critic_lr: float | Schedule = setting("training", 3e-4)
    """Learning rate of the critic(s), or a schedule."""
    value_lr: float | Schedule = setting("training", 3e-4)
    """Learning rate of the value network V, or a schedule."""
    twin_q: bool = setting("training", True)
    """Two critics; the value and actor targets use their minimum (counters Q overestimation)."""
    target_network_update_freq: int = setting("training", 0)
    """Updates of the target critics at most every this many env steps (0: after every update)."""
    tau: float = setting("training", 1.0)
    """Polyak factor of the target critics: `target = (1 - tau) * target + tau * critic` (RLlib's IQL
    default 1.0 copies the critics; the paper's 0.005 makes the targets follow slowly)."""
    train_batch_size: int = setting("training", 2000)
    """Offline rows per update over all learners (RLlib's IQL default, MARWIL's; the paper uses 256)."""
    minibatch_size: int | None = setting("training", None)
    """None: one gradient step on each learner's whole train batch."""
    shuffle_batch_per_epoch: bool = setting("training", False)
    """Unused with one gradient step per batch (the rows come shuffled, see below)."""
    rollout_fragment_length: int | str = setting("env_runners", 200)
    """Env steps per sub-env per sample() call (RLlib's IQL default; IQL samples only to evaluate)."""
    default_iter_batches_kwargs: ClassVar[dict[str, Any]] = {SHUFFLE_KEY: 10_000}
    """IQL trains on single transitions: rows stream through a 10,000-row shuffle buffer (see
    `flywheel.offline.shuffle`), as CQL's. `iter_batches_kwargs={"local_shuffle_buffer_size": None}`
    turns it off."""

    def get_default_algo_class(self) -> type:
        """IQL (imported on first use)."""
        from flywheel.algorithms.iql.iql import IQL

        return IQL

    def get_default_learner_class(self) -> type:
        """IQLTorchLearner (imported on first use)."""
        from flywheel.algorithms.iql.learner import IQLTorchLearner

        return IQLTorchLearner

    def get_default_rl_module_spec(self) -> RLModuleSpec:
        """DefaultIQLTorchRLModule (Box or Discrete actions): SAC's policy and critics plus a value
        network, all with [256, 256] relu layers."""
        from flywheel.algorithms.iql.rl_module import DefaultIQLTorchRLModule
        from flywheel.core.rl_module.spec import RLModuleSpec

        return RLModuleSpec(
            module_class=DefaultIQLTorchRLModule,
            model_config={"fcnet_hiddens": [256, 256], "fcnet_activation": "relu"},
        )

    def get_rl_module_spec(
        self, spaces: tuple | dict | None = None, module_id: str = DEFAULT_MODULE_ID, **kwargs: Any
    ) -> RLModuleSpec:
        """The merged spec, with `model_config["twin_q"]` = the `twin_q` training setting."""
        spec = super().get_rl_module_spec(spaces, module_id, **kwargs)
        spec.model_config = {**(spec.model_config or {}), "twin_q": self.twin_q}
        return spec

    def build_learner_connector(
        self, input_observation_space: Any, input_action_space: Any, device: Any = None
    ) -> ConnectorPipelineV2:
        """The user's pieces and the defaults, with `AddNextObservationsFromEpisodesToTrainBatch` right
        after `AddObservationsFromEpisodesToBatch` (the defaults only): the critics' targets read V(s')."""
        pipeline = super().build_learner_connector(input_observation_space, input_action_space, device)
        if self.add_default_connectors_to_learner_pipeline:
            from flywheel.connectors.learner import (
                AddNextObservationsFromEpisodesToTrainBatch,
                AddObservationsFromEpisodesToBatch,
            )

            pipeline.insert_after(
                AddObservationsFromEpisodesToBatch, AddNextObservationsFromEpisodesToTrainBatch()
            )
        return pipeline

    def validation_problems(self) -> list[str]:
        """The common problems, IQL's, and an offline input."""
        problems = [
            self._lr_problem(),
            checks.check_number(self, "beta", 0, strict=True),
            self._expectile_problem(),
            *(
                checks.check_schedule(self, name, 0, strict=True)
                for name in ("actor_lr", "critic_lr", "value_lr")
            ),
            checks.check_bool(self, "twin_q"),
            checks.check_int(self, "target_network_update_freq", 0),
            self._tau_problem(),
            checks.check_offline_input(self),
        ]
        return super().validation_problems() + [problem for problem in problems if problem]

    def _lr_problem(self) -> str | None:
        if self.lr is None:
            return None
        return (
            f"lr={self.lr!r}: IQL does not use lr; its three optimizers have their own rates, actor_lr="
            f"{self.actor_lr!r}, critic_lr={self.critic_lr!r} and value_lr={self.value_lr!r}. Fix: pass the rates "
            "to config.training(actor_lr=..., critic_lr=..., value_lr=...) and leave lr=None (the default)."
        )

    def _expectile_problem(self) -> str | None:
        value = self.expectile
        if isinstance(value, int | float) and not isinstance(value, bool) and 0 < value < 1:
            return None
        return (
            f"expectile={value!r} must be a number in (0, 1) (0.5 regresses V to the mean of Q, values near 1 "
            "to its maximum over the data's actions). Fix: pass e.g. 0.7 or 0.9 to config.training(expectile=...)."
        )

    def _tau_problem(self) -> str | None:
        value = self.tau
        if isinstance(value, int | float) and not isinstance(value, bool) and 0 < value <= 1:
            return None
        return (
            f"tau={value!r} must be a number in (0, 1] (1.0 copies the critics into their targets). Fix: pass "
            "e.g. config.training(tau=0.005)."
        )
