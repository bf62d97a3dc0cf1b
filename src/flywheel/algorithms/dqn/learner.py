"""`OffPolicyTorchLearner` (replayed batches, target networks, TD errors) and `DQNTorchLearner` (the loss)."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from flywheel.algorithms.dqn.rl_module import QF_PREDS
from flywheel.columns import Columns
from flywheel.core.learner.schedules import Scheduler
from flywheel.core.learner.torch_learner import TorchLearner
from flywheel.core.learner.utils import update_target_network
from flywheel.core.rl_module.apis import TargetNetworkAPI
from flywheel.errors import LearnerError
from flywheel.metrics.keys import NUM_TARGET_UPDATES
from flywheel.typing import ALL_MODULES, ModuleID, StateDict


class OffPolicyTorchLearner(TorchLearner):
    """A TorchLearner that trains on ready batches (replay samples) instead of episodes.

    The driving loop (see `DQN.training_step`)::

        batch = replay_buffer.sample(n_step=..., gamma=...)
        results = learner.update_from_batch({"default_policy": batch}, timesteps=timesteps)
        replay_buffer.update_priorities(np.abs(learner.td_errors["default_policy"]) + eps, indices)

    Each update is one gradient step on the whole batch (`TorchLearner`'s step: backward over
    the summed losses, per-optimizer clipping, finite check). After it, when at least
    `target_network_update_freq` env steps were sampled since the last target update, every
    `(main, target)` pair of the modules' `TargetNetworkAPI` moves to
    `(1 - tau) * target + tau * main`. Losses store their per-row TD errors in `td_errors`.
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.td_errors: dict[ModuleID, np.ndarray] = {}
        self._last_target_update_ts = 0

    def build(self) -> None:
        """Builds as TorchLearner, then each module's target networks (modules must have them)."""
        super().build()
        for module_id, module in self.module.items():
            if not isinstance(module, TargetNetworkAPI):
                raise LearnerError(
                    f"{type(self).__name__} needs target networks, but module {module_id!r} "
                    f"({type(module).__name__}) does not implement TargetNetworkAPI. Fix: inherit from "
                    "flywheel.TargetNetworkAPI and implement make_target_networks, "
                    "get_target_network_pairs and forward_target."
                )
            module.make_target_networks()

    def update(self, batch: dict | None = None, *, episodes: list | None = None, **kwargs: Any) -> dict:
        """One gradient step on `batch`; episodes are not how off-policy learners train."""
        if episodes is not None:
            raise LearnerError(
                f"{type(self).__name__} trains on replayed transitions (OBS, ACTIONS, REWARDS, NEXT_OBS, ...), "
                "not on episodes. Fix: add the episodes to a replay buffer (flywheel.replay) and call "
                "update_from_batch({module_id: buffer.sample(...)})."
            )
        return super().update(batch, **kwargs)

    def update_from_batch(self, batch: dict, *, timesteps: dict | None = None) -> dict:
        """One gradient step on `{module_id: {column: array}}` (the whole batch, in order); returns
        plain-number results. `timesteps["num_env_steps_sampled_lifetime"]` drives the schedules and
        target updates."""
        return self.update(
            batch, timesteps=timesteps, num_epochs=1, minibatch_size=None, shuffle_batch_per_epoch=False
        )

    def after_gradient_based_update(self, *, timesteps: dict | None) -> None:
        """Target networks follow the online ones every `target_network_update_freq` sampled env steps."""
        super().after_gradient_based_update(timesteps=timesteps)
        if self._timestep - self._last_target_update_ts < self.config.target_network_update_freq:
            return
        for module_id, module in self.module.items():
            if self.should_module_be_updated(module_id):
                for main, target in module.get_target_network_pairs():
                    update_target_network(main, target, self.config.tau)
        self._last_target_update_ts = self._timestep
        self.metrics.log_value((ALL_MODULES, NUM_TARGET_UPDATES), 1, reduce="lifetime_sum")

    def get_state(
        self, components: str | list[str] | None = None, not_components: str | list[str] | None = None
    ) -> StateDict:
        state = super().get_state(components, not_components)
        if self._selected("last_target_update_ts", components, not_components):
            state["last_target_update_ts"] = self._last_target_update_ts
        return state

    @staticmethod
    def _selected(
        key: str, components: str | list[str] | None, not_components: str | list[str] | None
    ) -> bool:
        """Whether `get_state(components, not_components)` includes the top-level `key`."""
        keep = [components] if isinstance(components, str) else components
        drop = [not_components] if isinstance(not_components, str) else (not_components or [])
        return (keep is None or key in keep) and key not in drop

    def set_state(self, state: StateDict) -> None:
        super().set_state(state)
        self._last_target_update_ts = state.get("last_target_update_ts", self._last_target_update_ts)


class DQNTorchLearner(OffPolicyTorchLearner):
    """DQN's TD loss (Mnih et al., 2015) with double Q (van Hasselt et al., 2016) and n-step returns.

    Per replayed transition (the buffer gives the discounted n-step reward sum `R` and `n`)::

        a* = argmax_a Q(s', a)      (double_q)   or   argmax_a Q_target(s', a)
        y  = R + gamma**n * (1 - terminated) * Q_target(s', a*)
        loss = mean(weights * huber(Q(s, a) - y))          (or squared error)

    `weights` are the importance weights of prioritized replay (1 for uniform replay); the TD
    errors `Q(s, a) - y` go to `td_errors` for the buffer's priorities. The modules need
    `compute_q_values(batch)` and `TargetNetworkAPI` (`forward_target` → `QF_PREDS`); a module
    with an `epsilon` buffer gets the epsilon schedule's value before every update.
    """

    def build(self) -> None:
        super().build()
        for module_id, module in self.module.items():
            if not hasattr(module, "compute_q_values"):
                raise LearnerError(
                    f"DQN needs Q-values, but module {module_id!r} ({type(module).__name__}) has no "
                    "compute_q_values(batch). Fix: subclass flywheel.algorithms.dqn.DefaultDQNTorchRLModule "
                    "or implement compute_q_values returning [B, num_actions]."
                )
        self.epsilon_scheduler = Scheduler(self.config.epsilon, name="epsilon")
        self._set_epsilon(self.epsilon_scheduler.value(self._timestep))  # what runners start with

    def before_gradient_based_update(self, *, timesteps: dict | None) -> None:
        """Learning rates and the modules' epsilon at the current timestep."""
        super().before_gradient_based_update(timesteps=timesteps)
        epsilon = self.epsilon_scheduler.value(self._timestep)
        for module_id in self._set_epsilon(epsilon):
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
        module = self.module[module_id]
        q_taken = fwd_out[QF_PREDS].gather(-1, batch[Columns.ACTIONS].long().unsqueeze(-1)).squeeze(-1)
        with torch.no_grad():
            next_batch = {Columns.OBS: batch[Columns.NEXT_OBS]}
            q_target_next = module.forward_target(next_batch)[QF_PREDS]
            chooser = module.compute_q_values(next_batch) if config.double_q else q_target_next
            best = torch.argmax(chooser, dim=-1, keepdim=True)
            q_next = q_target_next.gather(-1, best).squeeze(-1)
            not_done = 1.0 - batch[Columns.TERMINATEDS].float()
            discount = config.gamma ** batch[Columns.N_STEP].float()
            targets = batch[Columns.REWARDS].float() + discount * not_done * q_next
        td_error = q_taken - targets
        if config.td_error_loss_fn == "huber":
            per_row = F.huber_loss(q_taken, targets, reduction="none", delta=1.0)
        else:
            per_row = td_error**2
        loss = torch.mean(batch[Columns.WEIGHTS] * per_row)
        self.td_errors[module_id] = td_error.detach().cpu().numpy()
        self.metrics.log_dict(
            {
                "qf_loss": loss.detach(),
                "qf_mean": q_taken.detach().mean(),
                "td_error_mean": td_error.detach().abs().mean(),
            },
            key=module_id,
        )
        return loss
