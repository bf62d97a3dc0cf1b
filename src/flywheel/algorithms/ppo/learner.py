"""`PPOTorchLearner`: the PPO loss (clipped surrogate, clipped value loss, entropy, optional KL)."""

from __future__ import annotations

from typing import Any

import torch

from flywheel.algorithms.ppo.loss_stats import LossStats
from flywheel.columns import Columns
from flywheel.core.learner.coefficients import AdaptiveKLCoeffs, EntropyCoeffSchedules
from flywheel.core.learner.torch_learner import TorchLearner
from flywheel.core.rl_module.apis import require_value_function
from flywheel.typing import ModuleID


class PPOTorchLearner(EntropyCoeffSchedules, AdaptiveKLCoeffs, TorchLearner):
    """PPO as in Schulman et al. (2017), on batches from the PPO learner pipeline.

    The pipeline (see `PPOConfig.build_learner_connector`) provides `ADVANTAGES` (GAE,
    standardized once per module over the whole train batch, not per minibatch) and
    `VALUE_TARGETS`. `entropy_coeff` may be a schedule over sampled env steps; with
    `use_kl_loss` the KL coefficient adapts after every update (×1.5 when the mean KL
    exceeds 2×`kl_target`, ×0.5 below 0.5×`kl_target`).
    """

    reconfigurable_settings = TorchLearner.reconfigurable_settings | {
        "clip_param",
        "vf_clip_param",
        "vf_loss_coeff",
        "entropy_coeff",
        "kl_target",
        "lambda_",
        "use_gae",
    }

    def build(self) -> None:
        self._loss_stats = LossStats()
        super().build()
        for module_id in self.module:
            require_value_function(self.module, module_id, "PPO")

    def add_module(self, *, module_id: ModuleID, module_spec: Any, **kwargs: Any) -> Any:
        spec = super().add_module(module_id=module_id, module_spec=module_spec, **kwargs)
        require_value_function(self.module, module_id, "PPO")
        return spec

    def compute_loss_for_module(
        self, *, module_id: ModuleID, config: Any, batch: dict, fwd_out: dict
    ) -> torch.Tensor:
        module = self.module[module_id]
        mask = batch.get(Columns.LOSS_MASK)
        mean = torch.mean if mask is None else (lambda x: x[mask].mean())

        dist = module.get_train_action_dist_cls().from_logits(fwd_out[Columns.ACTION_DIST_INPUTS])
        ratio = torch.exp(dist.logp(batch[Columns.ACTIONS]) - batch[Columns.ACTION_LOGP])
        advantages = batch[Columns.ADVANTAGES]
        clipped_ratio = torch.clamp(ratio, 1 - config.clip_param, 1 + config.clip_param)
        policy_loss = -mean(torch.min(ratio * advantages, clipped_ratio * advantages))

        values = module.compute_values(batch, embeddings=fwd_out.get(Columns.EMBEDDINGS))
        vf_loss_unclipped = (values - batch[Columns.VALUE_TARGETS]) ** 2
        vf_loss = mean(torch.clamp(vf_loss_unclipped, 0, config.vf_clip_param))
        total_loss = policy_loss + config.vf_loss_coeff * vf_loss

        # Terms with a zero coefficient stay out of the autograd graph: for small networks the
        # backward pass is most of a minibatch's cost, and the entropy term adds ~40% to it.
        entropy_coeff = self.curr_entropy_coeffs[module_id]
        entropy = mean(dist.entropy()) if entropy_coeff else None
        if entropy is not None:
            total_loss = total_loss - entropy_coeff * entropy
        mean_kl = None
        if config.use_kl_loss:
            old_dist = module.get_exploration_action_dist_cls().from_logits(batch[Columns.ACTION_DIST_INPUTS])
            mean_kl = mean(old_dist.kl(dist))
            total_loss = total_loss + self.curr_kl_coeffs[module_id] * mean_kl

        valid = (lambda x: x) if mask is None else (lambda x: x[mask])
        self._loss_stats.add(
            module_id,
            policy_loss=policy_loss,
            vf_loss=vf_loss,
            mean_kl=mean_kl,
            vf_loss_unclipped=valid(vf_loss_unclipped),
            targets=valid(batch[Columns.VALUE_TARGETS]),
            values=valid(values),
            action_dist_inputs=valid(fwd_out[Columns.ACTION_DIST_INPUTS]),
        )
        return total_loss

    def log_loss_terms(self) -> None:
        """Logs the loss terms of the minibatches since the last call, each the mean over them (what
        logging every minibatch would give); `update()` calls it once, at its end."""
        stats = self._loss_stats.reduce(lambda mid: self.module[mid].get_train_action_dist_cls())
        for module_id, terms in stats.items():
            self.metrics.log_dict(terms, key=module_id)

    def after_gradient_based_update(self, *, timesteps: dict | None) -> None:
        """Logs the loss terms, then adapts each trained module's KL coefficient to this update's mean KL."""
        self.log_loss_terms()
        self.adapt_kl_coeffs()
