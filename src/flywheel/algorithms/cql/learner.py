"""`CQLTorchLearner`: SAC's losses on offline transitions, a conservative term in each critic's loss,
and behavior cloning as the actor loss for the first `bc_iters` updates."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

import torch

from flywheel.algorithms.sac.learner import SACTorchLearner, frozen, min_q, sample_with_logp
from flywheel.algorithms.sac.rl_module import QF_PREDS
from flywheel.checkpoints.checkpointable import select
from flywheel.columns import Columns
from flywheel.core.learner.torch_learner import adam
from flywheel.errors import LearnerError
from flywheel.typing import ModuleID, StateDict

if TYPE_CHECKING:
    from flywheel.algorithms.cql.config import CQLConfig

MAX_ALPHA_PRIME = 1e6
"""Upper bound of the Lagrangian weight alpha' (as in Kumar et al.'s code)."""


class CQLTorchLearner(SACTorchLearner):
    """Conservative Q-learning (Kumar et al., 2020, the CQL(H) variant) for Box actions.

    With `T = temperature`, `n = num_actions` and, per row, n actions from each of three proposals
    mu: uniform over the action bounds, pi(.|s) and pi(.|s') (all scored at s, without gradient to
    the policy), each critic's loss adds::

        gap_i       = mean_rows(T * logsumexp_k((Q_i(s, a_k) - log mu(a_k)) / T)) - mean(Q_i(s, a_data))
        penalty_i   = min_q_weight * gap_i                                        (lagrangian=False)
        penalty_i   = alpha' * (min_q_weight * gap_i - lagrangian_thresh)          (lagrangian=True)
        critic_loss = sum_i mean((Q_i(s, a_data) - y)**2) + penalty_i
        y           = r + gamma * (1 - terminated) * (min_i Q_target_i(s', a') [- alpha * log pi(a'|s')])

    (the entropy term only with `deterministic_backup=False`). Subtracting log mu is the importance
    correction that makes the soft maximum an estimate of `log integral exp Q(s, a) da`. With the
    Lagrangian, `log alpha'` (optimizer "alpha_prime", `critic_lr`) minimizes
    `-alpha' * mean_i(min_q_weight * gap_i - lagrangian_thresh)`, so alpha' grows while the gap
    exceeds the threshold. The actor loss is `mean(alpha * log pi(a~|s) - log pi(a_data|s))`
    (behavior cloning) while fewer than `bc_iters` updates were made (`weights_seq_no`), then SAC's
    `mean(alpha * log pi(a~|s) - min_i Q_i(s, a~))`; the alpha loss is SAC's.
    """

    config: CQLConfig

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.log_alpha_primes: dict[ModuleID, torch.nn.Parameter] = {}

    def configure_optimizers_for_module(self, module_id: ModuleID, config: CQLConfig) -> None:
        """SAC's optimizers, and with `lagrangian` one for log(alpha') (initially alpha' = 1)."""
        super().configure_optimizers_for_module(module_id, config)
        if self.discrete[module_id]:
            raise LearnerError(
                f"CQL samples actions from the action bounds, but module {module_id!r} has the discrete action "
                f"space {self._sac_module(module_id).action_space}. Fix: use CQL with a Box action space (for "
                "discrete actions, train DQN or BC/MARWIL on the data)."
            )
        if config.lagrangian:
            log_alpha_prime = torch.nn.Parameter(torch.zeros((), device=self.device))
            self.log_alpha_primes[module_id] = log_alpha_prime
            self.register_optimizer(
                module_id=module_id,
                optimizer_name="alpha_prime",
                optimizer=adam([log_alpha_prime], eps=config.adam_epsilon),
                params=[log_alpha_prime],
                lr_or_lr_schedule=config.critic_lr,
            )

    def compute_loss_for_module(
        self, *, module_id: ModuleID, config: CQLConfig, batch: dict, fwd_out: dict
    ) -> torch.Tensor:
        module = self._sac_module(module_id)
        inputs = fwd_out[Columns.ACTION_DIST_INPUTS]
        dist = module.get_train_action_dist_cls().from_logits(inputs)
        log_alpha = self.log_alphas[module_id]
        alpha = log_alpha.detach().exp()
        actions, logp = sample_with_logp(dist)
        alpha_loss = -torch.mean(log_alpha * (logp.detach() + self.target_entropies[module_id]))
        if self.weights_seq_no < config.bc_iters:
            objective = dist.logp(batch[Columns.ACTIONS])
        else:
            with frozen(self.critic_params[module_id]):
                objective = min_q(
                    module.compute_q_values({Columns.OBS: batch[Columns.OBS], Columns.ACTIONS: actions})
                )
        actor_loss = torch.mean(alpha * logp - objective)

        targets, next_inputs = self.continuous_targets(
            module, config, batch, alpha, entropy_backup=not config.deterministic_backup
        )
        q = module.compute_q_values(batch)
        gaps = self._gaps(module, config, batch, inputs.detach(), next_inputs, q)
        penalties, alpha_prime_loss = self._penalties(module_id, config, gaps)
        td_errors = [q[key] - targets for key in q]
        critic_loss = (
            torch.stack([torch.mean(td**2) for td in td_errors]).sum() + torch.stack(penalties).sum()
        )
        self.metrics.log_dict(
            {
                "qf_loss": critic_loss.detach(),
                "cql_loss": torch.stack(penalties).sum().detach(),
                "policy_loss": actor_loss.detach(),
                "alpha_loss": alpha_loss.detach(),
                "alpha_value": alpha,
                "entropy": -logp.detach().mean(),
                "qf_mean": q[QF_PREDS].detach().mean(),
                "td_error_mean": torch.stack(td_errors).abs().mean().detach(),
            },
            key=module_id,
        )
        return critic_loss + actor_loss + alpha_loss + alpha_prime_loss

    def _sac_module(self, module_id: ModuleID) -> Any:
        """The module, duck-typed: SAC's methods (`compute_q_values`, `forward_target`, ...) were
        checked when its optimizers were configured."""
        return cast(Any, self.module)[module_id]

    def _gaps(
        self,
        module: Any,
        config: CQLConfig,
        batch: dict,
        inputs: torch.Tensor,
        next_inputs: torch.Tensor,
        q: dict,
    ) -> list[torch.Tensor]:
        """`gap_i` per critic, from `num_actions` uniform, pi(.|s) and pi(.|s') actions per row."""
        n = config.num_actions
        dist_cls = module.get_train_action_dist_cls()
        with torch.no_grad():
            current_dist = dist_cls.from_logits(inputs.repeat_interleave(n, 0))
            current, current_logp = sample_with_logp(current_dist)
            following, following_logp = sample_with_logp(
                dist_cls.from_logits(next_inputs.repeat_interleave(n, 0))
            )
            low, high = current_dist.low.to(current.device), current_dist.high.to(current.device)
            uniform = low + (high - low) * torch.rand_like(current)
            uniform_logp = -torch.log(high - low).expand_as(current).sum(-1)
        obs = batch[Columns.OBS].repeat_interleave(n, 0)
        sampled = [
            module.compute_q_values({Columns.OBS: obs, Columns.ACTIONS: a})
            for a in (uniform, current, following)
        ]
        rows = q[QF_PREDS].shape[0]
        return [
            conservative_gap(
                q[key],
                *(s[key].view(rows, n) for s in sampled),
                *(lp.view(rows, n) for lp in (uniform_logp, current_logp, following_logp)),
                temperature=config.temperature,
            )
            for key in q
        ]

    def _penalties(
        self, module_id: ModuleID, config: CQLConfig, gaps: list[torch.Tensor]
    ) -> tuple[list[torch.Tensor], torch.Tensor | float]:
        """(each critic's penalty, the alpha' loss (0.0 without the Lagrangian))."""
        weighted = [config.min_q_weight * gap for gap in gaps]
        if not config.lagrangian:
            return weighted, 0.0
        alpha_prime = self.log_alpha_primes[module_id].exp().clamp(0.0, MAX_ALPHA_PRIME)
        excess = [gap - config.lagrangian_thresh for gap in weighted]
        alpha_prime_loss = -alpha_prime * torch.stack(excess).detach().mean()
        self.metrics.log_value((module_id, "alpha_prime_value"), alpha_prime.detach())
        return [alpha_prime.detach() * value for value in excess], alpha_prime_loss

    def get_state(
        self, components: str | list[str] | None = None, not_components: str | list[str] | None = None
    ) -> StateDict:
        state = super().get_state(components, not_components)
        if self.log_alpha_primes and select("log_alpha_primes", components, not_components)[0]:
            state["log_alpha_primes"] = {mid: float(p.detach()) for mid, p in self.log_alpha_primes.items()}
        return state

    def set_state(self, state: StateDict) -> None:
        super().set_state(state)
        with torch.no_grad():
            for module_id, value in state.get("log_alpha_primes", {}).items():
                self.log_alpha_primes[module_id].fill_(value)


def conservative_gap(
    q_data: torch.Tensor,
    q_uniform: torch.Tensor,
    q_current: torch.Tensor,
    q_next: torch.Tensor,
    logp_uniform: torch.Tensor,
    logp_current: torch.Tensor,
    logp_next: torch.Tensor,
    *,
    temperature: float,
) -> torch.Tensor:
    """CQL(H)'s gap for one critic: the soft maximum of Q over sampled actions, importance-corrected
    by their proposals' log-densities, minus Q of the data's actions::

        mean_rows(T * logsumexp_k((Q(s, a_k) - log mu(a_k)) / T)) - mean(q_data)

    over the `[rows, n]` Q-values and log-densities of the uniform, pi(.|s) and pi(.|s') actions
    (k runs over all 3n of them); `q_data` is `[rows]`.
    """
    corrected = torch.cat([q_uniform - logp_uniform, q_current - logp_current, q_next - logp_next], dim=1)
    soft_max = temperature * torch.logsumexp(corrected / temperature, dim=1)
    return soft_max.mean() - q_data.mean()
