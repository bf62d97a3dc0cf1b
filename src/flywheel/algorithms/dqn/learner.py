"""`DQNTorchLearner`: DQN's TD loss with double Q and n-step returns."""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

from flywheel.algorithms.dqn.rl_module import QF_PREDS
from flywheel.algorithms.off_policy.learner import OffPolicyTorchLearner, n_step_targets
from flywheel.columns import Columns
from flywheel.core.learner.schedules import Scheduler
from flywheel.errors import LearnerError
from flywheel.metrics.keys import TD_ERROR_KEY
from flywheel.typing import ModuleID


class DQNTorchLearner(OffPolicyTorchLearner):
    """DQN's TD loss (Mnih et al., 2015) with double Q (van Hasselt et al., 2016) and n-step returns.

    Per replayed transition (the learner pipeline gives the discounted n-step reward sum `R` as
    `REWARDS`, and `n` as `N_STEP`)::

        a* = argmax_a Q(s', a)      (double_q)   or   argmax_a Q_target(s', a)
        y  = R + gamma**n * (1 - terminated) * Q_target(s', a*)
        loss = mean(weights * huber(Q(s, a) - y))          (or squared error)

    `weights` (`WEIGHTS`) are the importance weights of prioritized replay (1 for uniform replay);
    the TD errors `Q(s, a) - y` are logged per row (`TD_ERROR_KEY`, `reduce="item_series"`) and
    come back in the update's results for the buffer's priorities. The trained modules need
    `compute_q_values(batch)` and `TargetNetworkAPI` (`forward_target` → `QF_PREDS`); a module
    with an `epsilon` buffer gets the epsilon schedule's value before every update.
    """

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
        self._set_epsilon(self.epsilon_scheduler.value(self._timestep))  # what runners start with

    def before_gradient_based_update(self, *, timesteps: dict | None) -> None:
        """Learning rates and the modules' epsilon at the current timestep (every module explores with
        it; the trained ones report it)."""
        super().before_gradient_based_update(timesteps=timesteps)
        epsilon = self.epsilon_scheduler.value(self._timestep)
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
        self, *, module_id: ModuleID, config: Any, batch: dict, fwd_out: dict
    ) -> torch.Tensor:
        # Duck-typed (no API base class needed): compute_q_values, target networks; checked when added.
        module: Any = self.module[module_id]
        q_taken = fwd_out[QF_PREDS].gather(-1, batch[Columns.ACTIONS].long().unsqueeze(-1)).squeeze(-1)
        with torch.no_grad():
            next_batch = {Columns.OBS: batch[Columns.NEXT_OBS]}
            q_target_next = module.forward_target(next_batch)[QF_PREDS]
            chooser = module.compute_q_values(next_batch) if config.double_q else q_target_next
            best = torch.argmax(chooser, dim=-1, keepdim=True)
            targets = n_step_targets(batch, config.gamma, q_target_next.gather(-1, best).squeeze(-1))
        td_error = q_taken - targets
        if config.td_error_loss_fn == "huber":
            per_row = F.huber_loss(q_taken, targets, reduction="none", delta=1.0)
        else:
            per_row = td_error**2
        loss = torch.mean(batch[Columns.WEIGHTS] * per_row)
        self.metrics.log_value((module_id, TD_ERROR_KEY), td_error.detach(), reduce="item_series")
        self.metrics.log_dict(
            {
                "qf_loss": loss.detach(),
                "qf_mean": q_taken.detach().mean(),
                "td_error_mean": td_error.detach().abs().mean(),
            },
            key=module_id,
        )
        return loss
