"""`APPOTorchLearner`: APPO's loss, IMPACT (Luo et al., 2020): a clipped surrogate against a target policy.

Per minibatch and module (time-major `[T, B]`, as in `IMPALATorchLearner`)::

    pi_old = the target network's policy (forward_target), mu = the runners' policy (ACTION_LOGP)
    vs, A = vtrace(pi = pi_old, mu, V)                        # targets and advantages for pi_old
    ratio = min(pi_old / mu, target_worker_clipping) * pi / mu   # = pi / pi_old where mu is close
    loss = -mean(min(ratio * A, clip(ratio, 1 - clip_param, 1 + clip_param) * A))
           + vf_loss_coeff * 0.5 * mean((V - vs)^2) - entropy_coeff * entropy + kl_coeff * KL(pi_old || pi)

After an update, the target networks move towards the trained ones (`tau`; 1.0 copies) once
`target_network_update_freq` × `circular_buffer_num_batches` × `circular_buffer_iterations_per_batch`
× `learner_train_batch_size` env steps were trained since the last move (RLlib's unit), and
with `use_kl_loss` the KL coefficient adapts to the KL of the update's last minibatch, as RLlib's.

The target policy's outputs are computed once per train batch (all its rows, before the
minibatches) and kept with the batch while the circular buffer hands it out again, until the
target networks move.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

import torch

from flywheel.algorithms.impala.batch_memo import BatchMemo, MemoEntry
from flywheel.algorithms.impala.learner import IMPALATorchLearner, TimeMajor, flatten_rows
from flywheel.checkpoints.checkpointable import select
from flywheel.columns import Columns
from flywheel.core.learner.coefficients import AdaptiveKLCoeffs
from flywheel.core.learner.utils import update_target_network
from flywheel.core.rl_module.apis import TARGET_NETWORK_ACTION_DIST_INPUTS, TargetNetworkAPI
from flywheel.errors import LearnerError
from flywheel.metrics import keys
from flywheel.typing import ALL_MODULES, ModuleID, StateDict

if TYPE_CHECKING:
    from flywheel.algorithms.appo.config import APPOConfig
    from flywheel.typing import RLModuleSpecType


class APPOTorchLearner(AdaptiveKLCoeffs, IMPALATorchLearner):
    """IMPALA's learner with APPO's loss, target networks and adaptive KL coefficient."""

    config: APPOConfig

    algorithm_name = "APPO"
    reconfigurable_settings = IMPALATorchLearner.reconfigurable_settings | {
        "clip_param",
        "kl_target",
        "tau",
        "target_worker_clipping",
    }

    def build(self) -> None:
        self._last_target_update_ts = 0  # trained env steps at the last target update
        self._target_version = 0  # how often the target networks moved (kept batches' outputs expire)
        self._last_kls: dict[ModuleID, torch.Tensor] = {}  # each module's KL of its last minibatch
        super().build()
        for module_id in self.module:
            self._make_target_networks(module_id)

    def add_module(self, *, module_id: ModuleID, module_spec: RLModuleSpecType, **kwargs: object) -> Any:
        spec = super().add_module(module_id=module_id, module_spec=module_spec, **kwargs)
        self._make_target_networks(module_id)
        return spec

    def _make_target_networks(self, module_id: ModuleID) -> None:
        # Duck-typed (no API base class needed): target networks, checked below.
        module: Any = self.module[module_id]
        for method in ("make_target_networks", "get_target_network_pairs", "forward_target"):
            if not hasattr(module, method):
                raise LearnerError(
                    f"APPO needs target networks, but module {module_id!r} ({type(module).__name__}) has no "
                    f"{method}. Fix: inherit from flywheel.TargetNetworkAPI and implement make_target_networks, "
                    "get_target_network_pairs and forward_target (returning TARGET_NETWORK_ACTION_DIST_INPUTS)."
                )
        module.make_target_networks()

    def build_batch_memo(self) -> BatchMemo | None:
        """Kept batches for the circular buffer's K uses of each (none when K is 1)."""
        config = self.config
        if not config.use_circular_buffer or config.circular_buffer_iterations_per_batch == 1:
            return None
        return BatchMemo(config.circular_buffer_iterations_per_batch, config.circular_buffer_num_batches)

    def add_batch_columns(self, batch: dict[ModuleID, dict], entry: MemoEntry | None) -> dict[ModuleID, dict]:
        """Adds `TARGET_NETWORK_ACTION_DIST_INPUTS` to every module's columns: the target policy on all
        rows at once (a kept batch's stay until the target networks move)."""
        if entry is not None and entry.derived_version == self._target_version:
            return batch
        with torch.no_grad():
            for module_id, columns in batch.items():
                # Duck-typed: `_make_target_networks` checked the module has forward_target.
                module: Any = self.module[module_id]
                if module.is_stateful():  # [B, T] sequences in, [B, T, ...] out, as in the minibatches
                    target = module.forward_target(columns)[TARGET_NETWORK_ACTION_DIST_INPUTS]
                else:
                    flat = module.forward_target(flatten_rows(columns))[TARGET_NETWORK_ACTION_DIST_INPUTS]
                    target = flat.reshape(tuple(columns[Columns.LOSS_MASK].shape) + tuple(flat.shape[1:]))
                columns[TARGET_NETWORK_ACTION_DIST_INPUTS] = target
        if entry is not None:
            entry.derived_version = self._target_version
        return batch

    def compute_loss_for_module(
        self, *, module_id: ModuleID, config: APPOConfig, batch: dict, fwd_out: dict
    ) -> torch.Tensor:
        # Duck-typed (no API base class needed): target networks and values.
        module: Any = self.module[module_id]
        tm = TimeMajor(batch)
        dist_cls = module.get_train_action_dist_cls()
        dist = dist_cls.from_logits(fwd_out[Columns.ACTION_DIST_INPUTS])
        with torch.no_grad():
            target_out = batch.get(TARGET_NETWORK_ACTION_DIST_INPUTS)
            if target_out is None:  # a minibatch from outside `update`
                target_out = module.forward_target(batch)[TARGET_NETWORK_ACTION_DIST_INPUTS]
            old_dist = dist_cls.from_logits(target_out)
            old_logp = tm(old_dist.logp(batch[Columns.ACTIONS]))
        logp = tm(dist.logp(batch[Columns.ACTIONS]))
        values = tm(module.compute_values(batch, embeddings=fwd_out.get(Columns.EMBEDDINGS)))
        vs, advantages = self.vtrace(batch, tm, target_logp=old_logp, values=values.detach())

        behaviour_logp = tm(batch[Columns.ACTION_LOGP])[:-1]
        is_ratio = torch.clamp(torch.exp(behaviour_logp - old_logp[:-1]), 0.0, config.target_worker_clipping)
        ratio = is_ratio * torch.exp(logp[:-1] - behaviour_logp)
        clipped = torch.clamp(ratio, 1 - config.clip_param, 1 + config.clip_param)
        policy_loss = -tm.mean(torch.minimum(ratio * advantages, clipped * advantages))
        total = self.add_value_and_entropy_terms(module_id, policy_loss, tm, values, vs, dist)

        mean_is = tm.mean(is_ratio)
        self.log_minibatch_value((module_id, "mean_IS"), mean_is)
        self.log_minibatch_value((module_id, "var_IS"), tm.mean((is_ratio - mean_is) ** 2))
        if config.use_kl_loss:
            mean_kl = tm.mean(tm(old_dist.kl(dist))[:-1])
            total = total + self.curr_kl_coeffs[module_id] * mean_kl
            self.log_minibatch_value((module_id, "mean_kl_loss"), mean_kl.detach())
            self._last_kls[module_id] = mean_kl.detach()
        return total

    def after_gradient_based_update(self, *, timesteps: dict | None) -> None:
        """Moves the target networks when due; adapts the KL coefficients (`use_kl_loss`)."""
        super().after_gradient_based_update(timesteps=timesteps)
        config = self.config
        trained = int((timesteps or {}).get(keys.NUM_ENV_STEPS_TRAINED_LIFETIME, 0))
        period = (
            config.target_network_update_freq
            * config.circular_buffer_num_batches
            * config.circular_buffer_iterations_per_batch
            * config.learner_train_batch_size
        )
        if trained - self._last_target_update_ts >= period:
            for module_id, module in self.module.items():
                if self.should_module_be_updated(module_id):
                    # `_make_target_networks` checked the module has the TargetNetworkAPI methods.
                    pairs = cast(TargetNetworkAPI, module).get_target_network_pairs()
                    for main, target in pairs:
                        update_target_network(main_net=main, target_net=target, tau=config.tau)
            self._last_target_update_ts = trained
            self._target_version += 1
            self.metrics.log_value((ALL_MODULES, keys.NUM_TARGET_UPDATES), 1, reduce="lifetime_sum")
        # RLlib's APPO logs the KL with window=1 and adapts to it: the update's last minibatch's KL.
        self.adapt_kl_coeffs({module_id: float(kl) for module_id, kl in self._last_kls.items()})
        self._last_kls.clear()

    def get_state(
        self, components: str | list[str] | None = None, not_components: str | list[str] | None = None
    ) -> StateDict:
        state = super().get_state(components, not_components)
        if select(keys.LAST_TARGET_UPDATE_TS, components, not_components)[0]:
            state[keys.LAST_TARGET_UPDATE_TS] = self._last_target_update_ts
        return state

    def set_state(self, state: StateDict) -> None:
        super().set_state(state)
        self._last_target_update_ts = state.get(keys.LAST_TARGET_UPDATE_TS, self._last_target_update_ts)
