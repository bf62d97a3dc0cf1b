"""`DreamerV3TorchLearner`: DreamerV3's three losses and optimizers on replayed B x T sequences.

One update (one gradient step of each optimizer):

    out = world_model.observe(obs, actions, is_first)                  (module.forward_train)
    L_world_model = world_model.losses(out, rewards, terminateds)     world_model_lr, clip 1000
    L_actor, L_critic = actor_critic_losses(from every posterior state) actor_lr / critic_lr, clip 100
    then the critic's EMA copy follows (0.98)

The three losses are summed for one backward pass; each reaches only its own parameters (the
imagination starts from detached states with the world model and critic frozen, see imagination.py),
so this equals three separate backward passes. Metrics use RLlib 2.60's names (WORLD_MODEL_L_total, ...).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

import torch

from flywheel.algorithms.dreamerv3.imagination import actor_critic_losses
from flywheel.algorithms.dreamerv3.rl_module import WORLD_MODEL_OUT, DreamerV3TorchRLModule
from flywheel.algorithms.dreamerv3.rssm import RSSMState
from flywheel.columns import Columns
from flywheel.core.learner.torch_grads import clip_, global_norm
from flywheel.core.learner.torch_learner import TorchLearner, adam
from flywheel.errors import LearnerError
from flywheel.typing import ModuleID

if TYPE_CHECKING:
    from flywheel.algorithms.algorithm_config import AlgorithmConfig
    from flywheel.algorithms.dreamerv3.config import DreamerV3Config

__all__ = ["DreamerV3TorchLearner"]

_EPSILONS = {"world_model": 1e-8, "actor": 1e-5, "critic": 1e-5}
"""Adam epsilons of the three optimizers (the paper's and RLlib 2.60's)."""


class DreamerV3TorchLearner(TorchLearner):
    """Trains `DreamerV3TorchRLModule`s: world model, actor and critic with their own Adam optimizers,
    learning rates and global-norm gradient clips."""

    config: DreamerV3Config

    def configure_optimizers_for_module(self, module_id: ModuleID, config: DreamerV3Config) -> None:
        """ "world_model", "actor" and "critic" optimizers over the module's three parts."""
        module = self._dreamer(module_id)
        for name, part, lr in (
            ("world_model", module.world_model, config.world_model_lr),
            ("actor", module.actor, config.actor_lr),
            ("critic", module.critic, config.critic_lr),
        ):
            params = [p for p in part.parameters() if p.requires_grad]
            self.register_optimizer(
                module_id=module_id,
                optimizer_name=name,
                optimizer=adam(params, eps=_EPSILONS[name]),
                params=params,
                lr_or_lr_schedule=lr,
            )

    def _dreamer(self, module_id: ModuleID) -> DreamerV3TorchRLModule:
        module = self.module[module_id].unwrapped()
        if not isinstance(module, DreamerV3TorchRLModule):
            raise LearnerError(
                f"DreamerV3TorchLearner trains DreamerV3TorchRLModule, but module {module_id!r} is "
                f"{type(module).__name__}. Fix: keep DreamerV3Config's default module spec or subclass it."
            )
        return module

    def compute_loss_for_module(
        self, *, module_id: ModuleID, config: DreamerV3Config, batch: dict, fwd_out: dict
    ) -> torch.Tensor:
        module = self._dreamer(module_id)
        out = fwd_out[WORLD_MODEL_OUT]
        steps = out.continue_logits.shape
        terminateds = batch[Columns.TERMINATEDS].reshape(steps).float()
        world_model = module.world_model.losses(out, batch[Columns.REWARDS].reshape(steps), terminateds)
        start = RSSMState(out.states.h.flatten(0, 1), out.states.z.flatten(0, 1))
        actor_critic = actor_critic_losses(
            module.world_model,
            module.actor,
            module.critic,
            start,
            1.0 - terminateds.flatten(),
            horizon=config.horizon_H,
            gamma=config.gamma,
            lambda_=config.gae_lambda,
            entropy_scale=config.entropy_scale,
        )
        actor_loss = actor_critic.actor if config.train_actor else torch.zeros(())
        critic_loss = actor_critic.critic if config.train_critic else torch.zeros(())
        normalizer = module.actor.return_normalizer
        self.metrics.log_dict(
            {
                "WORLD_MODEL_L_total": world_model.total.detach(),
                "WORLD_MODEL_L_decoder": world_model.decoder.detach(),
                "WORLD_MODEL_L_reward": world_model.reward.detach(),
                "WORLD_MODEL_L_continue": world_model.continue_.detach(),
                "WORLD_MODEL_L_dynamics": world_model.dynamics.detach(),
                "WORLD_MODEL_L_representation": world_model.representation.detach(),
                "ACTOR_L_total": actor_loss.detach(),
                "ACTOR_action_entropy": actor_critic.entropy,
                "ACTOR_value_targets_pct5_ema": normalizer.low.clone(),
                "ACTOR_value_targets_pct95_ema": normalizer.high.clone(),
                "CRITIC_L_total": critic_loss.detach(),
                "DREAM_value_targets_mean": actor_critic.returns.mean(),
            },
            key=module_id,
            window=1,
        )
        return world_model.total + actor_loss + critic_loss

    def postprocess_gradients_for_module(
        self, *, module_id: ModuleID, config: AlgorithmConfig | None = None, module_gradients_dict: dict
    ) -> dict:
        """Clips each optimizer's gradients by global norm with its own limit
        (`world_model_grad_clip_by_global_norm`, `actor_...`, `critic_...`) and logs the pre-clip norms
        as `<NAME>_gradients_global_norm`."""
        config = cast("DreamerV3Config", self.config if config is None else config)
        limits = {
            "world_model": config.world_model_grad_clip_by_global_norm,
            "actor": config.actor_grad_clip_by_global_norm,
            "critic": config.critic_grad_clip_by_global_norm,
        }
        for slot in self.slots_by_module().get(module_id, ()):
            grads = [module_gradients_dict[p] for p in slot.params if p in module_gradients_dict]
            if not grads:
                continue
            norm = global_norm(grads)
            self.log_minibatch_value((module_id, f"{slot.name.upper()}_gradients_global_norm"), norm)
            clip_(grads, limits[slot.name], "global_norm", norm)
        return module_gradients_dict

    def after_gradient_based_update(self, *, timesteps: dict | None) -> None:
        """The critics' EMA copies follow their critics."""
        super().after_gradient_based_update(timesteps=timesteps)
        for module_id in self.module:
            if self.should_module_be_updated(module_id):
                self._dreamer(module_id).critic.update_ema()
