"""`PPOTorchLearner`: the PPO loss (clipped surrogate, clipped value loss, entropy, optional KL)."""

from __future__ import annotations

import logging
import math
from typing import TYPE_CHECKING, Any

import torch

from flywheel.algorithms.ppo.loss_stats import LossStats
from flywheel.columns import Columns
from flywheel.core.learner.coefficients import AdaptiveKLCoeffs, EntropyCoeffSchedules
from flywheel.core.learner.torch_learner import TorchLearner
from flywheel.core.rl_module.apis import ValueFunctionAPI, require_value_function
from flywheel.typing import ModuleID

if TYPE_CHECKING:
    from flywheel.algorithms.ppo.config import PPOConfig
    from flywheel.typing import RLModuleSpecType

logger = logging.getLogger(__name__)

VF_CLIP_WARN_UPDATES = 10
"""Consecutive updates with more than half of a module's value losses clamped before the warning. A
new critic starts far from the returns and catches up: PPO's defaults on CartPole clamp most of them
in 2, 4 and 5 updates in a row (seeds 0, 1, 2; 80% at most), then under half, and reach returns of
200+ by update 8. A critic that does not catch up stays clamped: 88% in each of 12 updates with
`fcnet_hiddens=[32]` and lr 1e-4 (explained variance 0.00)."""


class PPOTorchLearner(EntropyCoeffSchedules, AdaptiveKLCoeffs, TorchLearner):
    """PPO as in Schulman et al. (2017), on batches from the PPO learner pipeline.

    The pipeline (see `PPOConfig.build_learner_connector`) provides `ADVANTAGES` (GAE,
    standardized over the whole train batch by default; `advantage_normalization="minibatch"`
    standardizes them here per minibatch instead), `VALUE_TARGETS` and `VF_PREDS`.

    Value loss per row: `(V - target)^2`, with `vf_clip_range` the larger of that and
    `(V_old + clamp(V - V_old, ±vf_clip_range) - target)^2` (PPO2/CleanRL), then clamped at
    `vf_clip_param` (RLlib). The share of rows clamped is logged as `vf_loss_clipped_fraction`,
    with a one-time warning when it exceeds half of the rows in `VF_CLIP_WARN_UPDATES` updates in a row.

    `entropy_coeff` may be a schedule over sampled env steps; with
    `use_kl_loss` the KL coefficient adapts after every update to the mean KL of the update's last
    minibatch, as RLlib's (×1.5 above 2×`kl_target`, ×0.5 below 0.5×`kl_target`).
    """

    config: PPOConfig

    reconfigurable_settings = TorchLearner.reconfigurable_settings | {
        "clip_param",
        "vf_clip_param",
        "vf_clip_range",
        "vf_loss_coeff",
        "entropy_coeff",
        "kl_target",
        "lambda_",
        "use_gae",
    }

    def build(self) -> None:
        self._loss_stats = LossStats()
        self._warned_vf_clipping: set[ModuleID] = set()
        self._vf_clipped_streak: dict[ModuleID, int] = {}
        super().build()
        for module_id in self.module:
            require_value_function(self, module_id, "PPO")

    def add_module(self, *, module_id: ModuleID, module_spec: RLModuleSpecType, **kwargs: object) -> Any:
        spec = super().add_module(module_id=module_id, module_spec=module_spec, **kwargs)
        require_value_function(self, module_id, "PPO")
        return spec

    @classmethod
    def rl_module_required_apis(cls) -> list[type]:
        return [ValueFunctionAPI]

    def compute_loss_for_module(
        self, *, module_id: ModuleID, config: PPOConfig, batch: dict, fwd_out: dict
    ) -> torch.Tensor:
        """PPO's loss on one minibatch (Schulman et al., 2017), line by line:

        - ratio r_t = pi(a_t|s_t) / pi_old(a_t|s_t), from the log-probabilities (ACTION_LOGP: at sampling);
        - advantages A_t from GAE (the learner pipeline; standardized over the batch or, with
          `advantage_normalization="minibatch"`, here);
        - policy loss L^CLIP = -E[min(r_t A_t, clip(r_t, 1 - eps, 1 + eps) A_t)], eps = `clip_param`;
        - value loss L^VF = E[(V(s_t) - V_t^targ)^2], clamped at `vf_clip_param` (RLlib's), optionally
          PPO2's clipping of V around its sampled value (`vf_clip_range`);
        - total = L^CLIP + c1 L^VF - c2 H[pi] + beta KL(pi_old || pi), with c1 = `vf_loss_coeff`,
          c2 = `entropy_coeff` (scheduled), beta = the adaptive `kl_coeff` when `use_kl_loss`.

        Rows outside LOSS_MASK (padding of recurrent sequences) are left out of every mean."""
        # Duck-typed (no API base class needed): compute_values.
        module: Any = self.module[module_id]
        mask = batch.get(Columns.LOSS_MASK)
        mean = torch.mean if mask is None else (lambda x: x[mask].mean())

        dist = module.get_train_action_dist_cls().from_logits(fwd_out[Columns.ACTION_DIST_INPUTS])
        ratio = torch.exp(dist.logp(batch[Columns.ACTIONS]) - batch[Columns.ACTION_LOGP])
        advantages = batch[Columns.ADVANTAGES]
        if config.advantage_normalization == "minibatch":
            valid_advantages = advantages if mask is None else advantages[mask]
            advantages = (advantages - valid_advantages.mean()) / (valid_advantages.std() + 1e-8)
        clipped_ratio = torch.clamp(ratio, 1 - config.clip_param, 1 + config.clip_param)
        policy_loss = -mean(torch.min(ratio * advantages, clipped_ratio * advantages))

        values = module.compute_values(batch, embeddings=fwd_out.get(Columns.EMBEDDINGS))
        targets = batch[Columns.VALUE_TARGETS]
        vf_loss_unclipped = (values - targets) ** 2
        vf_losses = vf_loss_unclipped
        if config.vf_clip_range is not None:
            old_values = batch[Columns.VF_PREDS]
            moved = torch.clamp(values - old_values, -config.vf_clip_range, config.vf_clip_range)
            vf_losses = torch.max(vf_loss_unclipped, (old_values + moved - targets) ** 2)
        clamped = None
        if math.isfinite(config.vf_clip_param):
            clamped = vf_losses.detach() > config.vf_clip_param
            vf_losses = torch.clamp(vf_losses, 0, config.vf_clip_param)
        vf_loss = mean(vf_losses)
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
            vf_clipped_fraction=None if clamped is None else mean(clamped.float()),
            vf_loss_unclipped=valid(vf_loss_unclipped),
            targets=valid(batch[Columns.VALUE_TARGETS]),
            values=valid(values),
            action_dist_inputs=valid(fwd_out[Columns.ACTION_DIST_INPUTS]),
        )
        return total_loss

    def log_loss_terms(self) -> dict[ModuleID, float]:
        """Logs the loss terms of the minibatches since the last call, each the mean over them (what
        logging every minibatch would give); `update()` calls it once, at its end. Returns each
        module's mean KL of the last minibatch."""
        last_kls = self._loss_stats.last_kls()
        stats = self._loss_stats.reduce(lambda mid: self.module[mid].get_train_action_dist_cls())
        for module_id, terms in stats.items():
            self.metrics.log_dict(terms, key=module_id)
            self._check_vf_clipping(module_id, terms["vf_loss_clipped_fraction"])
        return last_kls

    def _check_vf_clipping(self, module_id: ModuleID, fraction: float) -> None:
        """Warns once when more than half of the module's value losses were clamped in each of the
        last `VF_CLIP_WARN_UPDATES` updates (a critic that does not catch up with the returns)."""
        streak = self._vf_clipped_streak.get(module_id, 0) + 1 if fraction > 0.5 else 0
        self._vf_clipped_streak[module_id] = streak
        if streak < VF_CLIP_WARN_UPDATES or module_id in self._warned_vf_clipping:
            return
        self._warned_vf_clipping.add(module_id)
        logger.warning(
            "PPO: more than half of the value losses of module %r exceeded vf_clip_param=%s and were "
            "clamped in each of the last %d updates (%.0f%% in the last one), which gives them no "
            "gradient: the value function is not catching up with this return scale. Fix: "
            "config.training(vf_clip_param=float('inf')) (or a value above the squared value errors), "
            "and/or config.env_runners(normalize_rewards=True) to shrink the returns. "
            "(Warned once; learners/%s/vf_loss_clipped_fraction tracks it.)",
            module_id,
            self.config.vf_clip_param,
            streak,
            100 * fraction,
            module_id,
        )

    def after_gradient_based_update(self, *, timesteps: dict | None) -> None:
        """Logs the loss terms, then adapts each trained module's KL coefficient to the mean KL of this
        update's last minibatch (RLlib's rule; the logged `mean_kl_loss` is the mean over minibatches)."""
        self.adapt_kl_coeffs(self.log_loss_terms())
