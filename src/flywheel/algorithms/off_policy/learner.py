"""`OffPolicyTorchLearner`: what DQN's and SAC's learners share (target networks, per-row TD errors)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from flywheel.checkpoints.checkpointable import select
from flywheel.columns import Columns
from flywheel.core.learner.torch_learner import TorchLearner
from flywheel.core.learner.utils import update_target_network
from flywheel.core.rl_module.apis import SelfSupervisedLossAPI, TargetNetworkAPI
from flywheel.core.rl_module.spec import MultiRLModuleSpec, RLModuleSpec
from flywheel.errors import LearnerError
from flywheel.metrics.keys import NUM_TARGET_UPDATES
from flywheel.replay import INDICES
from flywheel.typing import ALL_MODULES, ModuleID, StateDict

if TYPE_CHECKING:
    from flywheel.algorithms.off_policy.config import OffPolicyConfig


class OffPolicyTorchLearner(TorchLearner):
    """A TorchLearner for losses on replayed n-step transitions, with target networks.

    The driving loop (see `OffPolicyAlgorithm.training_step`)::

        episodes = replay_buffer.sample(num_items=..., n_step=..., gamma=..., beta=...)
        results = learner.update(episodes=episodes, timesteps=timesteps)   # the learner pipeline, one step
        for module_id, module_results in results.items():                  # prioritized replay
            replay_buffer.update_priorities(|module_results[TD_ERROR_KEY]| + eps, module_results[INDICES])

    The learner pipeline builds each module's batch (`OBS`, `NEXT_OBS`, `ACTIONS`, `REWARDS` = the
    n-step sums, `TERMINATEDS`, `N_STEP`, `WEIGHTS`, `INDICES`); an update is one gradient step on
    it (`minibatch_size=None`). Losses log their per-row TD errors as RLlib's do
    (`metrics.log_value((module_id, TD_ERROR_KEY), td_error, reduce="item_series")`); this learner
    logs the rows' `INDICES` next to them, so both come back in the update's results, row for row
    (lists of arrays, one per minibatch, joined over learners). After an update, when at least
    `target_network_update_freq` env steps were sampled since the last target update, every
    `(main, target)` pair of the trained modules' `TargetNetworkAPI` moves to
    `(1 - tau) * target + tau * main`.
    """

    config: OffPolicyConfig

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._last_target_update_ts = 0

    def build(self) -> None:
        """Builds as TorchLearner, then the target networks of every module that trains with this
        learner's loss (`trains_with_algorithm_loss`)."""
        super().build()
        for module_id in self.module:
            if self.trains_with_algorithm_loss(module_id):
                self._make_target_networks(module_id)

    def trains_with_algorithm_loss(self, module_id: ModuleID) -> bool:
        """Whether `module_id` trains with this learner's loss: it trains and brings no loss of its own
        (a `SelfSupervisedLossAPI` module, such as a curiosity model next to the Q-network, needs
        neither target networks nor the algorithm's APIs)."""
        own_loss = isinstance(self.module[module_id], SelfSupervisedLossAPI)
        return self.should_module_be_updated(module_id) and not own_loss

    def add_module(
        self, *, module_id: ModuleID, module_spec: RLModuleSpec, **kwargs: Any
    ) -> MultiRLModuleSpec:
        """`Learner.add_module`, then the new module's target networks (if it trains with this loss)."""
        spec = super().add_module(module_id=module_id, module_spec=module_spec, **kwargs)
        if self.trains_with_algorithm_loss(module_id):
            self._make_target_networks(module_id)
        return spec

    def _make_target_networks(self, module_id: ModuleID) -> None:
        module = self.module[module_id]
        if not isinstance(module, TargetNetworkAPI):
            raise LearnerError(
                f"{type(self).__name__} needs target networks, but module {module_id!r} "
                f"({type(module).__name__}) does not implement TargetNetworkAPI. Fix: inherit from "
                "flywheel.TargetNetworkAPI and implement make_target_networks, get_target_network_pairs "
                "and forward_target, or leave the module out of policies_to_train."
            )
        module.make_target_networks()

    def compute_losses(
        self, *, fwd_out: dict[ModuleID, dict], batch: dict[ModuleID, dict]
    ) -> dict[ModuleID, Any]:
        """The modules' losses; logs each batch's `INDICES` (replay row ids) next to its TD errors."""
        losses = super().compute_losses(fwd_out=fwd_out, batch=batch)
        for module_id in losses:
            indices = batch[module_id].get(INDICES)
            if indices is not None:
                self.metrics.log_value((module_id, INDICES), indices, reduce="item_series")
        return losses

    def after_gradient_based_update(self, *, timesteps: dict | None) -> None:
        """Target networks follow the online ones every `target_network_update_freq` sampled env steps."""
        super().after_gradient_based_update(timesteps=timesteps)
        if self.timestep - self._last_target_update_ts < self.config.target_network_update_freq:
            return
        for module_id, module in self.module.items():
            # Such modules implement TargetNetworkAPI (`_make_target_networks` refused the others).
            if self.trains_with_algorithm_loss(module_id) and isinstance(module, TargetNetworkAPI):
                for main, target in module.get_target_network_pairs():
                    update_target_network(main, target, self.config.tau)
        self._last_target_update_ts = self.timestep
        self.metrics.log_value((ALL_MODULES, NUM_TARGET_UPDATES), 1, reduce="lifetime_sum")

    def get_state(
        self, components: str | list[str] | None = None, not_components: str | list[str] | None = None
    ) -> StateDict:
        state = super().get_state(components, not_components)
        if select("last_target_update_ts", components, not_components)[0]:
            state["last_target_update_ts"] = self._last_target_update_ts
        return state

    def set_state(self, state: StateDict) -> None:
        super().set_state(state)
        self._last_target_update_ts = state.get("last_target_update_ts", self._last_target_update_ts)


def n_step_targets(batch: dict, gamma: float, next_value: torch.Tensor) -> torch.Tensor:
    """The TD targets of replayed n-step rows: `R + gamma**n * (1 - terminated) * next_value`; rows
    without `N_STEP` (offline episodes, one step each) take n = 1."""
    return batch[Columns.REWARDS].float() + n_step_discounts(batch, gamma) * next_value


def n_step_discounts(batch: dict, gamma: float) -> torch.Tensor:
    """`gamma**n * (1 - terminated)` per replayed row: the weight of the bootstrapped value in its target."""
    not_done = 1.0 - batch[Columns.TERMINATEDS].float()
    discount = gamma ** batch[Columns.N_STEP].float() if Columns.N_STEP in batch else gamma
    return discount * not_done
