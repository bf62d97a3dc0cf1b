"""`IQLTorchLearner`: implicit Q-learning's three losses (expectile value, critics on `r + gamma * V(s')`,
advantage-weighted actor) for squashed-Gaussian (Box) and Categorical (Discrete) policies."""

from __future__ import annotations

from typing import Any

import torch

from flywheel.algorithms.off_policy.learner import n_step_targets
from flywheel.algorithms.sac.learner import SACTorchLearner, min_q
from flywheel.algorithms.sac.rl_module import QF_PREDS
from flywheel.columns import Columns
from flywheel.core.learner.torch_learner import adam
from flywheel.errors import LearnerError
from flywheel.typing import ModuleID

EXP_ADV_MAX = 100.0
"""Upper bound of the actor's weights `exp(beta * (Q - V))` (the paper's and RLlib's)."""
_VALUE_METHODS = ("compute_values", "value_parameters")


class IQLTorchLearner(SACTorchLearner):
    """Implicit Q-learning (Kostrikov et al., 2021) on offline transitions, with SAC's module and a
    value network (`DefaultIQLTorchRLModule`). With `Q'(s, a) = min_i Q_target_i(s, a)` of the data's
    actions (for Discrete actions, the taken action's entry)::

        value_loss  = mean(|expectile - 1(u < 0)| * u**2),          u = Q'(s, a) - V(s)
        critic_loss = sum_i mean((Q_i(s, a) - y)**2),                 y = r + gamma * (1 - terminated) * V(s')
        actor_loss  = -mean(min(exp(beta * (Q'(s, a) - V(s))), EXP_ADV_MAX) * log pi(a|s))

    Only the data's actions are ever scored, so no critic is asked about actions the data lacks.
    Three optimizers ("critic", "actor", "value" with `critic_lr`, `actor_lr`, `value_lr`) step on
    one backward pass over the sum: Q' and V(s') come without gradient and the actor's weights are
    detached, so each loss reaches only its own network. The target critics follow the critics
    (Polyak, `tau`) after every `target_network_update_freq` steps, as SAC's.
    """

    def configure_optimizers_for_module(self, module_id: ModuleID, config: Any) -> None:
        """Critic, actor and value optimizers (Adam) with their own learning rates."""
        # Duck-typed: `check_module` and the check below cover every method IQL calls.
        module: Any = self.module[module_id]
        self.discrete[module_id] = self.check_module(module_id, module)
        missing = [name for name in _VALUE_METHODS if not hasattr(module, name)]
        if missing:
            raise LearnerError(
                f"IQL needs a value network, but module {module_id!r} ({type(module).__name__}) lacks {missing}. "
                "Fix: subclass flywheel.algorithms.iql.DefaultIQLTorchRLModule or implement them."
            )
        self.critic_params[module_id] = module.critic_parameters()
        for name, params, lr in (
            ("critic", self.critic_params[module_id], config.critic_lr),
            ("actor", module.policy_parameters(), config.actor_lr),
            ("value", module.value_parameters(), config.value_lr),
        ):
            self.register_optimizer(
                module_id=module_id,
                optimizer_name=name,
                optimizer=adam(params, eps=config.adam_epsilon),
                params=params,
                lr_or_lr_schedule=lr,
            )

    def compute_loss_for_module(
        self, *, module_id: ModuleID, config: Any, batch: dict, fwd_out: dict
    ) -> torch.Tensor:
        module: Any = self.module[module_id]
        discrete = self.discrete[module_id]
        with torch.no_grad():
            target_q = min_q(module.forward_target(batch))
            next_values = module.compute_values({Columns.OBS: batch[Columns.NEXT_OBS]})
            targets = n_step_targets(batch, config.gamma, next_values)
        q = module.compute_q_values(batch)
        if discrete:
            taken = batch[Columns.ACTIONS].long().unsqueeze(-1)
            q = {key: values.gather(-1, taken).squeeze(-1) for key, values in q.items()}
            target_q = target_q.gather(-1, taken).squeeze(-1)
        values = module.compute_values(batch)
        value_loss = expectile_loss(target_q - values, config.expectile).mean()

        weights = torch.exp(config.beta * (target_q - values.detach())).clamp(max=EXP_ADV_MAX)
        dist = module.get_train_action_dist_cls().from_logits(fwd_out[Columns.ACTION_DIST_INPUTS])
        actor_loss = -torch.mean(weights * dist.logp(batch[Columns.ACTIONS]))

        td_errors = [q[key] - targets for key in q]
        critic_loss = torch.stack([torch.mean(td**2) for td in td_errors]).sum()
        self.metrics.log_dict(
            {
                "qf_loss": critic_loss.detach(),
                "value_loss": value_loss.detach(),
                "policy_loss": actor_loss.detach(),
                "qf_mean": q[QF_PREDS].detach().mean(),
                "vf_mean": values.detach().mean(),
                "exp_advantage_mean": weights.mean(),
                "td_error_mean": torch.stack(td_errors).abs().mean().detach(),
            },
            key=module_id,
        )
        return critic_loss + actor_loss + value_loss


def expectile_loss(diff: torch.Tensor, expectile: float) -> torch.Tensor:
    """Per row `|expectile - 1(diff < 0)| * diff**2`: asymmetric squared error whose minimizer over a
    constant V is the `expectile` expectile of the targets (`diff = target - V`)."""
    weight = torch.where(diff < 0, 1.0 - expectile, expectile)
    return weight * diff**2
