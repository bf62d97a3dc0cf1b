"""`MARWILTorchLearner`: the MARWIL loss (advantage-weighted log-likelihood plus a value loss)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from flywheel.columns import Columns
from flywheel.core.learner.torch_learner import TorchLearner
from flywheel.errors import LearnerError
from flywheel.typing import ModuleID, StateDict

if TYPE_CHECKING:
    from flywheel.algorithms.marwil.config import MARWILConfig

MOVING_AVERAGES = "moving_avg_sqd_adv_norms_per_module"


class MARWILTorchLearner(TorchLearner):
    """MARWIL as in Wang et al. (2018), with RLlib's normalization of the advantages.

    With advantages `A = VALUE_TARGETS - V(s)` (value targets from `GeneralAdvantageEstimation`),
    each minibatch moves the moving average `c2 += rate * (mean(A^2) - c2)` and the loss is
    `-mean(exp(beta * A / sqrt(c2)) * log pi(a|s)) + vf_coeff * 0.5 * mean(A^2)`, the weights
    carrying no gradient. With `beta == 0` it is behavior cloning: `-mean(log pi(a|s))`.
    """

    config: MARWILConfig

    reconfigurable_settings = TorchLearner.reconfigurable_settings | {
        "beta",
        "vf_coeff",
        "moving_average_sqd_adv_norm_update_rate",
        "bc_logstd_coeff",
    }

    def build(self) -> None:
        super().build()
        self.moving_avg_sqd_adv_norms_per_module: dict[ModuleID, torch.Tensor] = {}
        for module_id in self.module:
            self._set_up_module(module_id)

    def add_module(self, *, module_id: ModuleID, module_spec: Any, **kwargs: Any) -> Any:
        spec = super().add_module(module_id=module_id, module_spec=module_spec, **kwargs)
        self._set_up_module(module_id)
        return spec

    def remove_module(self, module_id: ModuleID, **kwargs: Any) -> Any:
        spec = super().remove_module(module_id, **kwargs)
        self.moving_avg_sqd_adv_norms_per_module.pop(module_id, None)
        return spec

    def _set_up_module(self, module_id: ModuleID) -> None:
        module = self.module[module_id]
        if self.config.beta != 0.0 and not hasattr(module, "compute_values"):
            raise LearnerError(
                f"MARWIL with beta={self.config.beta} needs a value function, but module {module_id!r} "
                f"({type(module).__name__}) has no compute_values. Fix: inherit from flywheel.ValueFunctionAPI "
                "and implement compute_values, or train with beta=0.0 (BC)."
            )
        start = torch.tensor(float(self.config.moving_average_sqd_adv_norm_start), device=self.device)
        self.moving_avg_sqd_adv_norms_per_module[module_id] = start

    def compute_loss_for_module(
        self, *, module_id: ModuleID, config: MARWILConfig, batch: dict, fwd_out: dict
    ) -> torch.Tensor:
        # Duck-typed (no API base class needed): compute_values, checked when added.
        module: Any = self.module[module_id]
        mask = batch.get(Columns.LOSS_MASK)
        mean = torch.mean if mask is None else (lambda x: x[mask].mean())
        dist = module.get_train_action_dist_cls().from_logits(fwd_out[Columns.ACTION_DIST_INPUTS])
        log_probs = dist.logp(batch[Columns.ACTIONS])
        if config.bc_logstd_coeff > 0.0:
            log_probs = log_probs + config.bc_logstd_coeff * dist.log_std.mean(dim=-1)
        if config.beta == 0.0:
            policy_loss = -mean(log_probs)
            self.log_minibatch_value((module_id, "policy_loss"), policy_loss.detach())
            return policy_loss

        values = module.compute_values(batch, embeddings=fwd_out.get(Columns.EMBEDDINGS))
        advantages = batch[Columns.VALUE_TARGETS] - values
        squared_mean = mean(advantages**2)
        average = self.moving_avg_sqd_adv_norms_per_module[module_id]
        average = average + config.moving_average_sqd_adv_norm_update_rate * (squared_mean.detach() - average)
        self.moving_avg_sqd_adv_norms_per_module[module_id] = average
        weights = torch.exp(config.beta * advantages / (1e-8 + average.sqrt())).detach()
        policy_loss = -mean(weights * log_probs)
        vf_loss = 0.5 * squared_mean
        for name, value in (
            ("policy_loss", policy_loss),
            ("vf_loss", vf_loss),
            ("moving_avg_sqd_adv_norm", average),
        ):
            self.log_minibatch_value((module_id, name), value.detach())
        return policy_loss + config.vf_coeff * vf_loss

    def get_state(
        self, components: str | list[str] | None = None, not_components: str | list[str] | None = None
    ) -> StateDict:
        state = super().get_state(components, not_components)
        if (components is None or MOVING_AVERAGES in components) and MOVING_AVERAGES not in (
            not_components or []
        ):
            state[MOVING_AVERAGES] = {
                mid: float(v) for mid, v in self.moving_avg_sqd_adv_norms_per_module.items()
            }
        return state

    def set_state(self, state: StateDict) -> None:
        super().set_state(state)
        for module_id, value in state.get(MOVING_AVERAGES, {}).items():
            self.moving_avg_sqd_adv_norms_per_module[module_id] = torch.tensor(value, device=self.device)
