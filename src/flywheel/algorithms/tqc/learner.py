"""`TQCTorchLearner`: SAC's learner with truncated quantile critics (Kuznetsov et al., 2020)."""

from __future__ import annotations

from typing import Any, cast

import torch

from flywheel.algorithms.sac.learner import SACTorchLearner, frozen, sample_with_logp
from flywheel.algorithms.sac.rl_module import QF_PREDS
from flywheel.columns import Columns
from flywheel.errors import LearnerError
from flywheel.metrics.keys import TD_ERROR_KEY
from flywheel.typing import ModuleID


class TQCTorchLearner(SACTorchLearner):
    """Truncated quantile critics for Box actions: SAC (optimizers, alpha, targets' next actions,
    frozen critics in the actor loss, state) with distributional critics.

    With C critics of N quantiles each (`Z_i(s, a)`: `[N]`, at the fractions `tau_j = (2j + 1) / 2N`),
    `a' ~ pi(s')`, d = `top_quantiles_to_drop_per_net` and the n-step reward sum `R`::

        z(s')       = the C * N quantiles of all target critics Z'_i(s', a'), sorted; keep the smallest C * (N - d)
        y_k         = R + gamma**n * (1 - terminated) * (z_k(s') - alpha * log pi(a'|s')),   k < C * (N - d)
        critic_loss = sum_i mean_rows(weights * sum_j sum_k |tau_j - 1{y_k < Z_ij}| * huber(y_k - Z_ij(s, a)))
        actor_loss  = mean(alpha * log pi(a~|s) - mean_i,j Z_ij(s, a~)),   a~ ~ pi(s) (reparameterized)
        alpha_loss  = SAC's

    `huber` is 0.5 x**2 within [-1, 1] and |x| - 0.5 outside. The quantile loss is summed over the
    N quantiles and the targets as RLlib 2.60 sums it (the paper's code averages; with Adam the scale
    matters little). The per-row TD error (prioritized replay) is `|mean_i,j Z_ij(s, a) - mean_k y_k|`.
    """

    def configure_optimizers_for_module(self, module_id: ModuleID, config: Any) -> None:
        """SAC's optimizers (the critic one over every quantile critic); refuses Discrete policies."""
        super().configure_optimizers_for_module(module_id, config)
        if self.discrete[module_id]:
            raise LearnerError(
                f"TQC's critics score sampled continuous actions, but module {module_id!r} has a Categorical "
                "policy. Fix: use TQC with a 1-D Box action space (for Discrete actions, SAC or DQN)."
            )

    def compute_loss_for_module(
        self, *, module_id: ModuleID, config: Any, batch: dict, fwd_out: dict
    ) -> torch.Tensor:
        # Duck-typed: `check_module` checked the methods SAC calls (critics, policy, target).
        module = cast(Any, self.module)[module_id]
        log_alpha = self.log_alphas[module_id]
        alpha = log_alpha.detach().exp()
        drop = config.top_quantiles_to_drop_per_net
        # continuous_targets takes K values per row rows-last ([K, B]): transpose there and back.
        targets, _ = self.continuous_targets(
            module, config, batch, alpha, next_q=lambda q: truncated_quantiles(q[QF_PREDS], drop).T
        )
        targets = targets.T
        quantiles = module.compute_q_values(batch)[QF_PREDS]
        per_row = quantile_huber_loss(quantiles, targets)
        critic_loss = (batch[Columns.WEIGHTS].unsqueeze(-1) * per_row).mean(0).sum()

        dist = module.get_train_action_dist_cls().from_logits(fwd_out[Columns.ACTION_DIST_INPUTS])
        actions, logp = sample_with_logp(dist)
        with frozen(self.critic_params[module_id]):
            q_policy = module.compute_q_values({Columns.OBS: batch[Columns.OBS], Columns.ACTIONS: actions})
        actor_loss = torch.mean(alpha * logp - q_policy[QF_PREDS].mean((1, 2)))
        alpha_loss = -torch.mean(log_alpha * (logp.detach() + self.target_entropies[module_id]))

        td_error = (quantiles.detach().mean((1, 2)) - targets.mean(1)).abs()
        self.metrics.log_value((module_id, TD_ERROR_KEY), td_error, reduce="item_series")
        self.metrics.log_dict(
            {
                "qf_loss": critic_loss.detach(),
                "policy_loss": actor_loss.detach(),
                "alpha_loss": alpha_loss.detach(),
                "alpha_value": alpha,
                "entropy": -logp.detach().mean(),
                "qf_mean": quantiles.detach().mean(),
                "td_error_mean": td_error.mean(),
            },
            key=module_id,
        )
        return critic_loss + actor_loss + alpha_loss


def truncated_quantiles(quantiles: torch.Tensor, drop_per_critic: int) -> torch.Tensor:
    """`[B, C, N]` quantiles of C critics -> `[B, C * (N - drop_per_critic)]`: each row's C * N
    quantiles pooled and sorted, without the largest `C * drop_per_critic`."""
    rows, critics, n = quantiles.shape
    return quantiles.reshape(rows, -1).sort(dim=1).values[:, : critics * (n - drop_per_critic)]


def quantile_huber_loss(quantiles: torch.Tensor, targets: torch.Tensor, kappa: float = 1.0) -> torch.Tensor:
    """Each critic's quantile Huber loss per row: `[B, C, N]` quantiles (at the fractions
    `(2j + 1) / 2N`) against `[B, K]` targets -> `[B, C]`, summed over the N quantiles and K targets::

        sum_j sum_k |tau_j - 1{y_k < Z_j}| * huber_kappa(y_k - Z_j)

    with `huber_kappa(x)` = 0.5 x**2 for |x| <= kappa, kappa * (|x| - 0.5 kappa) beyond.
    """
    n = quantiles.shape[-1]
    tau = ((torch.arange(n, device=quantiles.device, dtype=quantiles.dtype) + 0.5) / n).unsqueeze(-1)
    td = targets[:, None, None, :] - quantiles.unsqueeze(-1)
    size = td.abs()
    inner = size.clamp(max=kappa)
    huber = inner * (size - 0.5 * inner)  # 0.5 x**2 within kappa, kappa * (|x| - 0.5 kappa) beyond
    with torch.no_grad():  # the weights are constants of the loss (no gradient through the indicator)
        weight = torch.where(td < 0, 1.0 - tau, tau)
    return (weight * huber).sum((-2, -1))
