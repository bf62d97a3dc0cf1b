"""The small algorithm, learner and module that RLlib's learner tests build on (`ray.rllib.core.testing`).

`flywheel port` maps RLlib's names here, so a learner test written RLlib's way runs on flywheel:

    config = BaseTestingAlgorithmConfig().training(lr=0.0003)
    learner = config.build_learner(env=gym.make("CartPole-v1"))

`DiscreteBCTorchModule` is an MLP (one hidden layer of `model_config["fcnet_hiddens"][0]` units)
from a flat observation to the logits of a `Discrete` action; `BCTorchLearner` trains it by
behaviour cloning (the mean negative log-likelihood of the batch's actions) and, after each update,
logs every module's mean weight under `(module_id, "mean_weight")` while the config's
`report_mean_weights` is True (RLlib checks with it that remote learners hold the same weights).
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import torch
from torch import nn

from flywheel.algorithms.algorithm import Algorithm
from flywheel.algorithms.algorithm_config import AlgorithmConfig
from flywheel.columns import Columns
from flywheel.core.distributions import Categorical
from flywheel.core.learner.learner import Learner
from flywheel.core.learner.torch_learner import TorchLearner
from flywheel.core.rl_module.spec import RLModuleSpec
from flywheel.core.rl_module.torch_rl_module import TorchRLModule
from flywheel.errors import ModuleError
from flywheel.typing import ModuleID

__all__ = [
    "BCAlgorithmTest",
    "BCConfigTest",
    "BCTorchLearner",
    "BaseTestingAlgorithmConfig",
    "BaseTestingLearner",
    "DiscreteBCTorchModule",
]


class DiscreteBCTorchModule(TorchRLModule):
    """Flat observation -> Linear -> ReLU -> Linear -> logits of a `Discrete` action (a Categorical)."""

    def setup(self) -> None:
        obs_space, action_space = self.observation_space, self.action_space
        if obs_space is None or obs_space.shape is None or not isinstance(action_space, gym.spaces.Discrete):
            raise ModuleError(
                f"DiscreteBCTorchModule maps a Box observation to a Discrete action; got observation_space="
                f"{obs_space} and action_space={action_space}. Fix: use it with such an env (e.g. CartPole)."
            )
        hidden = self.model_config.get("fcnet_hiddens", [32])[0]
        self.input_dim = int(np.prod(obs_space.shape))
        self.policy = nn.Sequential(
            nn.Linear(self.input_dim, hidden), nn.ReLU(), nn.Linear(hidden, int(action_space.n))
        )
        self.action_dist_cls = Categorical

    def _forward(self, batch: dict, **kwargs: object) -> dict:
        obs = batch[Columns.OBS].reshape(-1, self.input_dim).float()
        return {Columns.ACTION_DIST_INPUTS: self.policy(obs)}


class BaseTestingLearner(Learner):
    """Logs every module's mean weight after each update while `config.report_mean_weights` is True."""

    def after_gradient_based_update(self, *, timesteps: dict | None) -> None:
        super().after_gradient_based_update(timesteps=timesteps)
        if not getattr(self.config, "report_mean_weights", False):
            return
        for module_id, module in self.module.items():
            weights = [p.detach().cpu().numpy() for p in self.get_parameters(module)]
            if weights:
                mean = float(np.mean([w.mean() for w in weights]))
                self.metrics.log_value((module_id, "mean_weight"), mean, window=1)


class BCTorchLearner(TorchLearner, BaseTestingLearner):
    """Behaviour cloning: the mean negative log-likelihood of the batch's actions."""

    def compute_loss_for_module(
        self, *, module_id: ModuleID, config: AlgorithmConfig, batch: dict, fwd_out: dict
    ) -> torch.Tensor:
        dist_cls = self.module[module_id].get_train_action_dist_cls()
        dist = dist_cls.from_logits(fwd_out[Columns.ACTION_DIST_INPUTS])
        return -torch.mean(dist.logp(batch[Columns.ACTIONS]))


class BaseTestingAlgorithmConfig(AlgorithmConfig):
    """A config whose learner is `BCTorchLearner` and whose module is `DiscreteBCTorchModule`
    (`fcnet_hiddens=[32]`); multi-agent configs build one such module per policy."""

    report_mean_weights: bool = True

    def get_default_learner_class(self) -> type:
        return BCTorchLearner

    def get_default_rl_module_spec(self) -> RLModuleSpec:
        return RLModuleSpec(module_class=DiscreteBCTorchModule, model_config={"fcnet_hiddens": [32]})


class BCAlgorithmTest(Algorithm):
    """An algorithm whose training step does nothing (for tests of building and configuring one)."""

    def training_step(self) -> None:
        return None


class BCConfigTest(AlgorithmConfig):
    """`BaseTestingAlgorithmConfig`'s module and learner for `BCAlgorithmTest` (RLlib's test algorithm)."""

    def __init__(self, algo_class: type | None = None):
        super().__init__(algo_class=algo_class or BCAlgorithmTest)

    def get_default_learner_class(self) -> type:
        return BCTorchLearner

    def get_default_rl_module_spec(self) -> RLModuleSpec:
        return RLModuleSpec(module_class=DiscreteBCTorchModule, model_config={"fcnet_hiddens": [32]})
