"""`DQNTorchLearner`: DQN's TD loss with double Q and n-step returns, or C51's cross-entropy loss."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch
import torch.nn.functional as F

from flywheel.algorithms.dqn.distributional import project_distribution
from flywheel.algorithms.dqn.rl_module import QF_LOGITS, QF_PREDS
from flywheel.algorithms.off_policy.learner import OffPolicyTorchLearner, n_step_discounts, n_step_targets
from flywheel.columns import Columns
from flywheel.core.learner.schedules import Scheduler
from flywheel.errors import LearnerError
from flywheel.metrics.keys import TD_ERROR_KEY
from flywheel.typing import ModuleID

if TYPE_CHECKING:
    from flywheel.algorithms.dqn.config import DQNConfig


class DQNTorchLearner(OffPolicyTorchLearner):
    """DQN's TD loss (Mnih et al., 2015) with double Q (van Hasselt et al., 2016) and n-step returns.

    Per replayed transition (the learner pipeline gives the discounted n-step reward sum `R` as
    `REWARDS`, and `n` as `N_STEP`)::

        a* = argmax_a Q(s', a)      (double_q)   or   argmax_a Q_target(s', a)
        y  = R + gamma**n * (1 - terminated) * Q_target(s', a*)
        loss = mean(weights * huber(Q(s, a) - y))          (or squared error)

    `weights` (`WEIGHTS`) are the importance weights of prioritized replay (1 for uniform replay);
    the TD errors `Q(s, a) - y` are logged per row (`TD_ERROR_KEY`, `reduce="item_series"`) and
    come back in the update's results for the buffer's priorities.

    With `num_atoms > 1` (C51) the target is a distribution: the target network's distribution at
    `a*` (chosen as above, by expected values), moved to `R + gamma**n * (1 - terminated) * z` and
    projected onto the support z (`project_distribution`); the loss is the weighted mean of the
    cross-entropy between it and the online distribution of `(s, a)` (`QF_LOGITS`), and the
    cross-entropies are the TD errors (as RLlib); `td_error_loss_fn` is not used. The trained modules need
    `compute_q_values(batch)` and `TargetNetworkAPI` (`forward_target` → `QF_PREDS`); a module
    with an `epsilon` buffer gets the epsilon schedule's value before every update.
    """

    config: DQNConfig

    def build(self) -> None:
        super().build()
        for module_id, module in self.module.items():
            if self.trains_with_algorithm_loss(module_id) and not hasattr(module, "compute_q_values"):
                raise LearnerError(
                    f"DQN needs Q-values, but module {module_id!r} ({type(module).__name__}) has no "
                    "compute_q_values(batch). Fix: subclass flywheel.algorithms.dqn.DefaultDQNTorchRLModule "
                    "or implement compute_q_values returning [B, num_actions]."
                )
        self.epsilon_scheduler = Scheduler(self.config.epsilon, name="epsilon")
        self._set_epsilon(self.epsilon_scheduler.value(self.timestep))  # what runners start with

    def before_gradient_based_update(self, *, timesteps: dict | None) -> None:
        """Learning rates and the modules' epsilon at the current timestep (every module explores with
        it; the trained ones report it)."""
        super().before_gradient_based_update(timesteps=timesteps)
        epsilon = self.epsilon_scheduler.value(self.timestep)
        for module_id in self._set_epsilon(epsilon):
            if self.should_module_be_updated(module_id):
                self.metrics.log_value((module_id, "curr_epsilon"), epsilon, reduce="mean")

    def _set_epsilon(self, epsilon: float) -> list[ModuleID]:
        """Sets the `epsilon` buffer of every module that has one; returns their ids."""
        module_ids = []
        for module_id, module in self.module.items():
            buffer = getattr(module, "epsilon", None)
            if isinstance(buffer, torch.Tensor):
                buffer.fill_(epsilon)
                module_ids.append(module_id)
        return module_ids

    def compute_loss_for_module(
        self, *, module_id: ModuleID, config: DQNConfig, batch: dict, fwd_out: dict
    ) -> torch.Tensor:
        # Duck-typed (no API base class needed): compute_q_values, target networks; checked when added.
        module: Any = self.module[module_id]
        actions = batch[Columns.ACTIONS].long().unsqueeze(-1)
        q_taken = fwd_out[QF_PREDS].gather(-1, actions).squeeze(-1)
        with torch.no_grad():
            next_batch = {Columns.OBS: batch[Columns.NEXT_OBS]}
            target_next = module.forward_target(next_batch)
            chooser = module.compute_q_values(next_batch) if config.double_q else target_next[QF_PREDS]
            best = torch.argmax(chooser, dim=-1, keepdim=True)
        if config.num_atoms > 1:
            td_error, loss = self._distributional_loss(config, batch, fwd_out, target_next, actions, best)
        else:
            with torch.no_grad():
                targets = n_step_targets(
                    batch, config.gamma, target_next[QF_PREDS].gather(-1, best).squeeze(-1)
                )
            td_error = q_taken - targets
            if config.td_error_loss_fn == "huber":
                per_row = F.huber_loss(q_taken, targets, reduction="none", delta=1.0)
            else:
                per_row = td_error**2
            loss = torch.mean(batch[Columns.WEIGHTS] * per_row)
            td_error = td_error.detach()
        self.metrics.log_value((module_id, TD_ERROR_KEY), td_error, reduce="item_series")
        self.metrics.log_dict(
            {
                "qf_loss": loss.detach(),
                "qf_mean": q_taken.detach().mean(),
                "td_error_mean": td_error.abs().mean(),
            },
            key=module_id,
        )
        return loss

    @staticmethod
    def _distributional_loss(
        config: DQNConfig,
        batch: dict,
        fwd_out: dict,
        target_next: dict,
        actions: torch.Tensor,
        best: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """C51: (per-row cross-entropies, detached; the weighted mean loss)."""
        if QF_LOGITS not in fwd_out or QF_LOGITS not in target_next:
            raise LearnerError(
                f"DQN with num_atoms={config.num_atoms} needs the logits of the return distributions, but the "
                f"module's forward_train / forward_target outputs have no {QF_LOGITS!r} "
                f"(got {sorted(fwd_out)} / {sorted(target_next)}). Fix: use DefaultDQNTorchRLModule (it reads "
                "num_atoms from its model_config), or return QF_LOGITS [B, num_actions, num_atoms]."
            )
        num_atoms = config.num_atoms
        with torch.no_grad():
            next_logits = (
                target_next[QF_LOGITS].gather(1, best.unsqueeze(-1).expand(-1, 1, num_atoms)).squeeze(1)
            )
            target_probs = project_distribution(
                torch.softmax(next_logits, dim=-1),
                batch[Columns.REWARDS],
                n_step_discounts(batch, config.gamma),
                config.v_min,
                config.v_max,
            )
        logits = fwd_out[QF_LOGITS].gather(1, actions.unsqueeze(-1).expand(-1, 1, num_atoms)).squeeze(1)
        cross_entropy = -(target_probs * torch.log_softmax(logits, dim=-1)).sum(dim=-1)
        return cross_entropy.detach(), torch.mean(batch[Columns.WEIGHTS] * cross_entropy)
