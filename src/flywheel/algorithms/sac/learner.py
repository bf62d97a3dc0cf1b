"""`SACTorchLearner`: the SAC losses (twin-Q critics, entropy temperature) for squashed-Gaussian
(Box) and Categorical (Discrete) policies."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import gymnasium as gym
import numpy as np
import torch
import torch.nn.functional as F

from flywheel.algorithms.off_policy.learner import OffPolicyTorchLearner, n_step_targets
from flywheel.algorithms.sac.rl_module import QF_PREDS, QF_TWIN_PREDS
from flywheel.checkpoints.checkpointable import select
from flywheel.columns import Columns
from flywheel.core.distributions import Categorical, DiagGaussian, SquashedGaussian
from flywheel.core.learner.torch_learner import adam
from flywheel.errors import ConfigError, LearnerError
from flywheel.metrics.keys import TD_ERROR_KEY
from flywheel.typing import ModuleID, StateDict

if TYPE_CHECKING:
    from flywheel.algorithms.sac.config import SACConfig

_LOG_2 = math.log(2.0)
_MODULE_METHODS = ("compute_q_values", "forward_target", "policy_parameters", "critic_parameters")
DISCRETE_TARGET_ENTROPY_RATIO = 0.5
"""`target_entropy="auto"` with n discrete actions is 0.5 * log(n), half the uniform policy's entropy.
The paper's 0.98 * log(n) (Christodoulou, 2019; RLlib's old API stack) asks for a nearly uniform
policy, and where no good policy is that random alpha grows without bound: on CartPole-v1 (n=2,
with the settings of examples/sac_discrete_cartpole.py) 0.98 ended at alpha ~800 and a mean return of 71
after 30,000 env steps (seed 0), while 0.5 crossed 150 after 7,000-8,000 env steps (seeds 0-2)
and alpha stayed between 0.3 and 0.6."""


class SACTorchLearner(OffPolicyTorchLearner):
    """Soft actor-critic (Haarnoja et al., 2018) on replayed n-step transitions.

    Box actions (squashed-Gaussian policy), with `a' ~ pi(s')`, `alpha = exp(log_alpha)` and the
    discounted n-step reward sum `R` (`REWARDS` of the replayed transitions)::

        y           = R + gamma**n * (1 - terminated) * (min_i Q_target_i(s', a') - alpha * log pi(a'|s'))
        critic_loss = sum_i mean(weights * (Q_i(s, a) - y)**2)
        actor_loss  = mean(alpha * log pi(a~|s) - min_i Q_i(s, a~)),    a~ ~ pi(s) (reparameterized)
        alpha_loss  = -mean(log_alpha * (log pi(a~|s) + target_entropy))

    Discrete actions (Categorical policy, critics with one Q-value per action; Christodoulou,
    2019) take exact expectations over the actions instead of samples::

        V(s')       = sum_a pi(a|s') * (min_i Q_target_i(s', a) - alpha * log pi(a|s'))
        y           = R + gamma**n * (1 - terminated) * V(s')
        critic_loss = sum_i mean(weights * (Q_i(s, a_taken) - y)**2)
        actor_loss  = mean(sum_a pi(a|s) * (alpha * log pi(a|s) - min_i Q_i(s, a)))
        alpha_loss  = -mean(log_alpha * (sum_a pi(a|s) * log pi(a|s) + target_entropy))

    Three optimizers ("critic", "actor", "alpha" with `critic_lr`, `actor_lr`, `alpha_lr`) step
    on one backward pass over the sum: the actor's Q-values reach it without gradient to the
    critics (frozen weights for Box, detached for Discrete) and the alpha loss sees detached
    log-probs, so each loss reaches only its own parameters. Box log-probabilities are computed
    from the pre-tanh sample (exact even where tanh saturates). The critics' absolute TD errors
    (mean over twins) are logged per row (`TD_ERROR_KEY`) for prioritized replay.
    """

    config: SACConfig

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.log_alphas: dict[ModuleID, torch.nn.Parameter] = {}
        self.target_entropies: dict[ModuleID, float] = {}
        self.critic_params: dict[ModuleID, list[torch.nn.Parameter]] = {}
        self.discrete: dict[ModuleID, bool] = {}

    def configure_optimizers_for_module(self, module_id: ModuleID, config: SACConfig) -> None:
        """Critic, actor and alpha optimizers (Adam) with their own learning rates."""
        # Duck-typed: `check_module` checked the methods SAC calls (critics, policy, target).
        module: Any = self.module[module_id]
        self.discrete[module_id] = self.check_module(module_id, module)
        log_alpha = torch.nn.Parameter(torch.tensor(math.log(config.initial_alpha), device=self.device))
        self.log_alphas[module_id] = log_alpha
        self.target_entropies[module_id] = self._target_entropy(module, config.target_entropy)
        self.critic_params[module_id] = module.critic_parameters()
        for name, params, lr in (
            ("critic", self.critic_params[module_id], config.critic_lr),
            ("actor", module.policy_parameters(), config.actor_lr),
            ("alpha", [log_alpha], config.alpha_lr),
        ):
            self.register_optimizer(
                module_id=module_id,
                optimizer_name=name,
                optimizer=adam(params, eps=config.adam_epsilon),
                params=params,
                lr_or_lr_schedule=lr,
            )

    @staticmethod
    def _target_entropy(module: Any, target: float | str) -> float:
        """The number as given, or "auto": -(action dimensions) for Box, 0.5 * log(n) for Discrete(n)."""
        if target != "auto":
            return float(target)
        space = module.action_space
        if isinstance(space, gym.spaces.Discrete):
            return DISCRETE_TARGET_ENTROPY_RATIO * math.log(int(space.n))
        return -float(np.prod(space.shape))

    def check_module(self, module_id: ModuleID, module: Any) -> bool:
        """Refuses modules SAC cannot train; returns whether the policy is discrete (Categorical)."""
        missing = [name for name in _MODULE_METHODS if not hasattr(module, name)]
        if missing:
            raise LearnerError(
                f"SAC needs critics and a policy, but module {module_id!r} ({type(module).__name__}) lacks "
                f"{missing}. Fix: subclass flywheel.algorithms.sac.DefaultSACTorchRLModule or implement them."
            )
        dist_cls = module.get_train_action_dist_cls()
        if issubclass(dist_cls, Categorical):
            return True
        if not issubclass(dist_cls, SquashedGaussian):
            raise LearnerError(
                f"SAC's actor loss needs a tanh-squashed Gaussian (Box) or a Categorical (Discrete) policy, but "
                f"module {module_id!r} uses {dist_cls.__name__}. Fix: return distribution_for_space(box, "
                "squashed=True) or Categorical from get_train_action_dist_cls()."
            )
        space = module.action_space
        unit = bool(np.all(space.low == -1.0) and np.all(space.high == 1.0))
        if not self.config.normalize_actions and not unit:
            raise ConfigError(
                f"SAC's policy acts in [-1, 1], but normalize_actions=False would send those actions to the "
                f"env unscaled, while its action space is {space}. Fix: config.environment(normalize_actions=True)."
            )
        return False

    def compute_loss_for_module(
        self, *, module_id: ModuleID, config: SACConfig, batch: dict, fwd_out: dict
    ) -> torch.Tensor:
        log_alpha = self.log_alphas[module_id]
        alpha = log_alpha.detach().exp()
        terms = self._discrete_terms if self.discrete[module_id] else self._continuous_terms
        # logp per row: log pi of the actor's sample (Box) or its expectation sum_a pi log pi (Discrete).
        q_taken, targets, actor_loss, logp = terms(module_id, config, batch, fwd_out, alpha)
        td_errors = [q_taken[key] - targets for key in (QF_PREDS, QF_TWIN_PREDS) if key in q_taken]
        critic_loss = torch.stack([torch.mean(batch[Columns.WEIGHTS] * td**2) for td in td_errors]).sum()
        alpha_loss = -torch.mean(log_alpha * (logp + self.target_entropies[module_id]))

        td_error = torch.stack(td_errors).abs().mean(0).detach()
        self.metrics.log_value((module_id, TD_ERROR_KEY), td_error, reduce="item_series")
        self.metrics.log_dict(
            {
                "qf_loss": critic_loss.detach(),
                "policy_loss": actor_loss.detach(),
                "alpha_loss": alpha_loss.detach(),
                "alpha_value": alpha,
                "entropy": -logp.mean(),
                "qf_mean": q_taken[QF_PREDS].detach().mean(),
                "td_error_mean": td_error.mean(),
            },
            key=module_id,
        )
        return critic_loss + actor_loss + alpha_loss

    def _continuous_terms(
        self, module_id: ModuleID, config: SACConfig, batch: dict, fwd_out: dict, alpha: torch.Tensor
    ) -> tuple[dict, torch.Tensor, torch.Tensor, torch.Tensor]:
        """(critics' Q of the taken actions, targets y, actor loss, detached log pi of the actor's samples)."""
        # Duck-typed: `check_module` checked the methods SAC calls (critics, policy, target).
        module: Any = self.module[module_id]
        dist_cls = module.get_train_action_dist_cls()
        targets, _ = self.continuous_targets(module, config, batch, alpha)
        q = module.compute_q_values(batch)
        actions, logp = sample_with_logp(dist_cls.from_logits(fwd_out[Columns.ACTION_DIST_INPUTS]))
        with frozen(self.critic_params[module_id]):
            q_policy = min_q(
                module.compute_q_values({Columns.OBS: batch[Columns.OBS], Columns.ACTIONS: actions})
            )
        actor_loss = torch.mean(alpha * logp - q_policy)
        return q, targets, actor_loss, logp.detach()

    @staticmethod
    @torch.no_grad()
    def continuous_targets(
        module: Any,
        config: SACConfig,
        batch: dict,
        alpha: torch.Tensor,
        *,
        entropy_backup: bool = True,
        next_q: Callable[[dict], torch.Tensor] | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """(the critics' targets y, the policy's distribution inputs at s'), without gradient;
        `entropy_backup=False` leaves `- alpha * log pi(a'|s')` out of y. `next_q` turns the target
        critics' outputs at (s', a') into the next values, `[B]` or `[K, B]` (K values per row, rows
        last so that they broadcast against the rewards; y is then `[K, B]`); default: `min_q`."""
        next_obs = batch[Columns.NEXT_OBS]
        next_inputs = module.forward_train({Columns.OBS: next_obs})[Columns.ACTION_DIST_INPUTS]
        next_actions, next_logp = sample_with_logp(
            module.get_train_action_dist_cls().from_logits(next_inputs)
        )
        next_value = (next_q or min_q)(
            module.forward_target({Columns.OBS: next_obs, Columns.ACTIONS: next_actions})
        )
        if entropy_backup:
            next_value = next_value - alpha * next_logp
        return n_step_targets(batch, config.gamma, next_value), next_inputs

    def _discrete_terms(
        self, module_id: ModuleID, config: SACConfig, batch: dict, fwd_out: dict, alpha: torch.Tensor
    ) -> tuple[dict, torch.Tensor, torch.Tensor, torch.Tensor]:
        """(critics' Q of the taken actions, targets y, actor loss, detached sum_a pi log pi per row)."""
        # Duck-typed: `check_module` checked the methods SAC calls (critics, policy, target).
        module: Any = self.module[module_id]
        dist_cls = module.get_train_action_dist_cls()
        with torch.no_grad():
            next_batch = {Columns.OBS: batch[Columns.NEXT_OBS]}
            next_inputs = module.forward_train(next_batch)[Columns.ACTION_DIST_INPUTS]
            next_logp = dist_cls.from_logits(next_inputs).log_probs
            target_q = min_q(module.forward_target(next_batch))
            next_value = (next_logp.exp() * (target_q - alpha * next_logp)).sum(-1)
            targets = n_step_targets(batch, config.gamma, next_value)

        q = module.compute_q_values(batch)
        taken = batch[Columns.ACTIONS].long().unsqueeze(-1)
        q_taken = {key: values.gather(-1, taken).squeeze(-1) for key, values in q.items()}
        logp = dist_cls.from_logits(fwd_out[Columns.ACTION_DIST_INPUTS]).log_probs
        probs = logp.exp()
        actor_loss = torch.mean((probs * (alpha * logp - min_q(q).detach())).sum(-1))
        return q_taken, targets, actor_loss, (probs * logp).sum(-1).detach()

    def get_state(
        self, components: str | list[str] | None = None, not_components: str | list[str] | None = None
    ) -> StateDict:
        state = super().get_state(components, not_components)
        if select("log_alphas", components, not_components)[0]:
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


def min_q(q: dict) -> torch.Tensor:
    """The critic's Q-values, or with twin critics the smaller of the two per row."""
    if QF_TWIN_PREDS in q:
        return torch.minimum(q[QF_PREDS], q[QF_TWIN_PREDS])
    return q[QF_PREDS]


@contextmanager
def frozen(params: list[torch.nn.Parameter]) -> Iterator[None]:
    """Parameters that record no gradient inside the block (the actor loss must not train the critics)."""
    for param in params:
        param.requires_grad_(False)
    try:
        yield
    finally:
        for param in params:
            param.requires_grad_(True)
