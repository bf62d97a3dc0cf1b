"""`SACTorchLearner`: the SAC losses (twin-Q critics, squashed-Gaussian actor, entropy temperature)."""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from flywheel.algorithms.dqn.learner import OffPolicyTorchLearner
from flywheel.algorithms.sac.rl_module import QF_PREDS, QF_TWIN_PREDS
from flywheel.columns import Columns
from flywheel.core.distributions import DiagGaussian, SquashedGaussian
from flywheel.core.learner.torch_learner import adam
from flywheel.errors import ConfigError, LearnerError
from flywheel.typing import ModuleID, StateDict

_LOG_2 = math.log(2.0)
_MODULE_METHODS = ("compute_q_values", "forward_target", "policy_parameters", "critic_parameters")


class SACTorchLearner(OffPolicyTorchLearner):
    """Soft actor-critic (Haarnoja et al., 2018) on replayed n-step transitions.

    With `a' ~ pi(s')`, `alpha = exp(log_alpha)` and the buffer's discounted reward sum `R`::

        y           = R + gamma**n * (1 - terminated) * (min_i Q_target_i(s', a') - alpha * log pi(a'|s'))
        critic_loss = sum_i mean(weights * (Q_i(s, a) - y)**2)
        actor_loss  = mean(alpha * log pi(a~|s) - min_i Q_i(s, a~)),    a~ ~ pi(s) (reparameterized)
        alpha_loss  = -mean(log_alpha * (log pi(a~|s) + target_entropy))

    Three optimizers ("critic", "actor", "alpha" with `critic_lr`, `actor_lr`, `alpha_lr`) step
    on one backward pass over the sum: the actor's Q-values are computed with the critics'
    weights frozen and the alpha loss sees detached log-probs, so each loss reaches only its own
    parameters. Log-probabilities are computed from the pre-tanh sample (exact even where tanh
    saturates). The critics' TD errors (mean over twins) go to `td_errors` for prioritized replay.
    """

    def __init__(self, *, config: Any, module_spec: Any = None, spaces: tuple | None = None) -> None:
        super().__init__(config=config, module_spec=module_spec, spaces=spaces)
        self.log_alphas: dict[ModuleID, torch.nn.Parameter] = {}
        self.target_entropies: dict[ModuleID, float] = {}
        self.critic_params: dict[ModuleID, list[torch.nn.Parameter]] = {}

    def configure_optimizers_for_module(self, module_id: ModuleID, config: Any) -> None:
        """Critic, actor and alpha optimizers (Adam) with their own learning rates."""
        module = self.module[module_id]
        self._check_module(module_id, module)
        log_alpha = torch.nn.Parameter(torch.tensor(math.log(config.initial_alpha), device=self.device))
        self.log_alphas[module_id] = log_alpha
        target = config.target_entropy
        self.target_entropies[module_id] = (
            -float(np.prod(module.action_space.shape)) if target == "auto" else float(target)
        )
        self.critic_params[module_id] = module.critic_parameters()
        for name, params, lr in (
            ("critic", self.critic_params[module_id], config.critic_lr),
            ("actor", module.policy_parameters(), config.actor_lr),
            ("alpha", [log_alpha], config.alpha_lr),
        ):
            self.register_optimizer(
                module_id=module_id,
                optimizer_name=name,
                optimizer=adam(params),
                params=params,
                lr_or_lr_schedule=lr,
            )

    def _check_module(self, module_id: ModuleID, module: Any) -> None:
        missing = [name for name in _MODULE_METHODS if not hasattr(module, name)]
        if missing:
            raise LearnerError(
                f"SAC needs critics and a policy, but module {module_id!r} ({type(module).__name__}) lacks "
                f"{missing}. Fix: subclass flywheel.algorithms.sac.DefaultSACTorchRLModule or implement them."
            )
        if not issubclass(module.get_train_action_dist_cls(), SquashedGaussian):
            raise LearnerError(
                f"SAC's actor loss needs a tanh-squashed Gaussian policy, but module {module_id!r} uses "
                f"{module.get_train_action_dist_cls().__name__}. Fix: return a "
                "distribution_for_space(box, squashed=True) class from get_train_action_dist_cls()."
            )
        space = module.action_space
        unit = bool(np.all(space.low == -1.0) and np.all(space.high == 1.0))
        if not self.config.normalize_actions and not unit:
            raise ConfigError(
                f"SAC's policy acts in [-1, 1], but normalize_actions=False would send those actions to the "
                f"env unscaled, while its action space is {space}. Fix: config.environment(normalize_actions=True)."
            )

    def compute_loss_for_module(
        self, *, module_id: ModuleID, config: Any, batch: dict, fwd_out: dict
    ) -> torch.Tensor:
        module = self.module[module_id]
        log_alpha = self.log_alphas[module_id]
        alpha = log_alpha.detach().exp()
        dist_cls = module.get_train_action_dist_cls()

        with torch.no_grad():
            next_obs = batch[Columns.NEXT_OBS]
            next_inputs = module.forward_train({Columns.OBS: next_obs})[Columns.ACTION_DIST_INPUTS]
            next_actions, next_logp = sample_with_logp(dist_cls.from_logits(next_inputs))
            target_q = _min_q(module.forward_target({Columns.OBS: next_obs, Columns.ACTIONS: next_actions}))
            not_done = 1.0 - batch[Columns.TERMINATEDS].float()
            discount = config.gamma ** batch[Columns.N_STEP].float()
            targets = batch[Columns.REWARDS].float() + discount * not_done * (target_q - alpha * next_logp)

        q = module.compute_q_values(batch)
        td_errors = [q[key] - targets for key in (QF_PREDS, QF_TWIN_PREDS) if key in q]
        critic_loss = sum(torch.mean(batch[Columns.WEIGHTS] * td**2) for td in td_errors)

        actions, logp = sample_with_logp(dist_cls.from_logits(fwd_out[Columns.ACTION_DIST_INPUTS]))
        with _frozen(self.critic_params[module_id]):
            q_policy = _min_q(
                module.compute_q_values({Columns.OBS: batch[Columns.OBS], Columns.ACTIONS: actions})
            )
        actor_loss = torch.mean(alpha * logp - q_policy)
        alpha_loss = -torch.mean(log_alpha * (logp.detach() + self.target_entropies[module_id]))

        td_error = torch.stack(td_errors).abs().mean(0).detach()
        self.td_errors[module_id] = td_error.cpu().numpy()
        self.metrics.log_dict(
            {
                "qf_loss": critic_loss.detach(),
                "policy_loss": actor_loss.detach(),
                "alpha_loss": alpha_loss.detach(),
                "alpha_value": alpha,
                "entropy": -logp.detach().mean(),
                "qf_mean": q[QF_PREDS].detach().mean(),
                "td_error_mean": td_error.mean(),
            },
            key=module_id,
        )
        return critic_loss + actor_loss + alpha_loss

    def get_state(
        self, components: str | list[str] | None = None, not_components: str | list[str] | None = None
    ) -> StateDict:
        state = super().get_state(components, not_components)
        if self._selected("log_alphas", components, not_components):
            state["log_alphas"] = {mid: float(p.detach()) for mid, p in self.log_alphas.items()}
        return state

    def set_state(self, state: StateDict) -> None:
        super().set_state(state)
        with torch.no_grad():
            for module_id, value in state.get("log_alphas", {}).items():
                self.log_alphas[module_id].fill_(value)


def sample_with_logp(dist: SquashedGaussian) -> tuple[torch.Tensor, torch.Tensor]:
    """A reparameterized action of a squashed Gaussian and its log-probability.

    The log-probability comes from the pre-squash sample `u`: `log N(u) - log|d action / du|`,
    with `log(1 - tanh(u)**2) = 2 * (log 2 - u - softplus(-2u))`, which stays exact where
    `tanh(u)` rounds to +-1 (inverting the squashed action there would lose `u`).
    """
    u = dist.mean + dist.std * torch.randn_like(dist.mean)
    low, high = dist.low.to(u.device), dist.high.to(u.device)
    half_range = 0.5 * (high - low)
    action = low + (torch.tanh(u) + 1.0) * half_range
    log_det = (2.0 * (_LOG_2 - u - F.softplus(-2.0 * u)) + half_range.log()).sum(-1)
    return action, DiagGaussian.logp(dist, u) - log_det


def _min_q(q: dict) -> torch.Tensor:
    if QF_TWIN_PREDS in q:
        return torch.minimum(q[QF_PREDS], q[QF_TWIN_PREDS])
    return q[QF_PREDS]


@contextmanager
def _frozen(params: list[torch.nn.Parameter]) -> Iterator[None]:
    """Parameters that record no gradient inside the block (the actor loss must not train the critics)."""
    for param in params:
        param.requires_grad_(False)
    try:
        yield
    finally:
        for param in params:
            param.requires_grad_(True)
