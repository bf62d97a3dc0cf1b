"""`IMPALATorchLearner`: the IMPALA loss (Espeholt et al., 2018) with V-trace targets.

Per minibatch and module, on `[B, T]` rows from `AddTimeDimToBatchAndBootstrap` (viewed time-major,
`[T, B]`, as `vtrace_torch` takes them)::

    vs, advantages = vtrace(pi = the current policy, mu = the runners' ACTION_LOGP, V = current values)
    loss = -mean(log pi(a_t) * advantages) + vf_loss_coeff * 0.5 * mean((V - vs)^2) - entropy_coeff * mean(entropy)

Means are over the steps (`LOSS_MASK`); bootstrap and padding elements only feed the values after
their steps. `vtrace_clip_rho_threshold` and `vtrace_clip_pg_rho_threshold` clip the importance
weights of `vs` and of the advantages.

A learner that gets the same episode list again (APPO's circular buffer hands each out up to K
times) runs its learner pipeline on it once and keeps the train batch (`BatchMemo`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import torch

from flywheel.algorithms.impala.batch_memo import BatchMemo, MemoEntry
from flywheel.algorithms.impala.vtrace import vtrace_torch
from flywheel.columns import Columns
from flywheel.core.learner.coefficients import EntropyCoeffSchedules
from flywheel.core.learner.torch_learner import TorchLearner
from flywheel.core.rl_module.apis import require_value_function
from flywheel.typing import ModuleID, StateDict

if TYPE_CHECKING:
    from flywheel.algorithms.impala.config import IMPALAConfig
    from flywheel.typing import RLModuleSpecType


class TimeMajor:
    """A minibatch's `[B, T]` rows seen time-major: `tm(x)` turns a per-element tensor (`[B * T]` or
    `[B, T]`) into `[T, B]`; `tm.steps` marks the steps among the first `T - 1` positions (the last
    position of a row is never a step: it bootstraps the one before), `tm.mean` averages over them."""

    def __init__(self, batch: dict) -> None:
        self.rows = len(batch[Columns.SEQ_LENS])
        self.mask = self(batch[Columns.LOSS_MASK]).bool()
        self.steps = self.mask[:-1]
        self._weights = self.steps.float() / self.steps.sum().clamp(min=1)

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return x.reshape(self.rows, -1).T

    def mean(self, x: torch.Tensor) -> torch.Tensor:
        """The mean of `[T - 1, B]` values over the steps."""
        return (x * self._weights).sum()


class IMPALATorchLearner(EntropyCoeffSchedules, TorchLearner):
    """IMPALA: V-trace actor-critic on the runners' (possibly stale) episodes.

    Stateless modules get each minibatch's rows as one flat batch (`[B * T, ...]`, what RLlib gives
    them), recurrent ones as `[B, T, ...]` sequences with `STATE_IN`.
    """

    config: IMPALAConfig

    reconfigurable_settings = TorchLearner.reconfigurable_settings | {
        "vf_loss_coeff",
        "entropy_coeff",
        "vtrace_clip_rho_threshold",
        "vtrace_clip_pg_rho_threshold",
    }

    algorithm_name = "IMPALA"
    """What the errors about a module this learner cannot train call the algorithm."""

    def build(self) -> None:
        super().build()
        for module_id in self.module:
            require_value_function(self, module_id, self.algorithm_name)
        self._batch_memo = self.build_batch_memo()

    def build_batch_memo(self) -> BatchMemo | None:
        """Where train batches are kept for their later uses (IMPALA trains on each batch once: none)."""
        return None

    def add_module(self, *, module_id: ModuleID, module_spec: RLModuleSpecType, **kwargs: object) -> Any:
        spec = super().add_module(module_id=module_id, module_spec=module_spec, **kwargs)
        require_value_function(self, module_id, self.algorithm_name)
        self._forget_batches()
        return spec

    def remove_module(self, module_id: ModuleID, **kwargs: object) -> Any:
        spec = super().remove_module(module_id, **kwargs)
        self._forget_batches()
        return spec

    def reset_config(self, config: IMPALAConfig) -> None:
        super().reset_config(config)
        self._forget_batches()

    def set_state(self, state: StateDict) -> None:
        super().set_state(state)
        self._forget_batches()

    def set_weights(self, weights: dict[ModuleID, dict]) -> None:
        super().set_weights(weights)
        self._forget_batches()

    def _forget_batches(self) -> None:
        """Kept train batches no longer hold (the pipeline, the modules or the weights changed)."""
        if self._batch_memo is not None:
            self._batch_memo.clear()

    def make_train_batch(self, batch: dict | None, episodes: Sequence | None) -> dict[ModuleID, dict]:
        """The learner pipeline's output, once per episode list the algorithm hands out again;
        `add_batch_columns` adds what the loss derives per batch."""
        memo = self._batch_memo
        if memo is None or episodes is None:
            return self.add_batch_columns(super().make_train_batch(batch, episodes), None)
        entry = memo.get(episodes)
        if entry is None:
            entry = memo.put(episodes, super().make_train_batch(None, episodes))
        return self.add_batch_columns(entry.batch, entry)

    def add_batch_columns(self, batch: dict[ModuleID, dict], entry: MemoEntry | None) -> dict[ModuleID, dict]:
        """`batch` with the columns the loss computes once per train batch rather than per minibatch
        (IMPALA: none); `entry`, when the batch is kept for later uses, records their version."""
        return batch

    def update_on_minibatch(self, minibatch: dict[ModuleID, dict]) -> None:
        flat = {
            module_id: columns if self.module[module_id].is_stateful() else flatten_rows(columns)
            for module_id, columns in minibatch.items()
        }
        super().update_on_minibatch(flat)

    def compute_loss_for_module(
        self, *, module_id: ModuleID, config: IMPALAConfig, batch: dict, fwd_out: dict
    ) -> torch.Tensor:
        # Duck-typed (no API base class needed): compute_values.
        module: Any = self.module[module_id]
        tm = TimeMajor(batch)
        dist = module.get_train_action_dist_cls().from_logits(fwd_out[Columns.ACTION_DIST_INPUTS])
        logp = tm(dist.logp(batch[Columns.ACTIONS]))
        values = tm(module.compute_values(batch, embeddings=fwd_out.get(Columns.EMBEDDINGS)))
        vs, advantages = self.vtrace(batch, tm, target_logp=logp.detach(), values=values.detach())
        policy_loss = -tm.mean(logp[:-1] * advantages)
        return self.add_value_and_entropy_terms(module_id, policy_loss, tm, values, vs, dist)

    def vtrace(
        self, batch: dict, tm: TimeMajor, *, target_logp: torch.Tensor, values: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """`(vs, pg_advantages)`, `[T - 1, B]`: V-trace of the rows against `target_logp` (`[T, B]`)
        and `values` (`[T, B]`). Non-step elements get importance weight 0, so each run of steps
        bootstraps from the value of the element after it."""
        config = self.config
        target = torch.where(tm.mask, target_logp, float("-inf"))
        discounts = config.gamma * (1.0 - tm(batch[Columns.TERMINATEDS]).float())
        return vtrace_torch(
            target_action_log_probs=target[:-1],
            behaviour_action_log_probs=tm(batch[Columns.ACTION_LOGP])[:-1],
            discounts=discounts[:-1],
            rewards=tm(batch[Columns.REWARDS])[:-1],
            values=values[:-1],
            bootstrap_values=values[-1],
            clip_rho_threshold=config.vtrace_clip_rho_threshold,
            clip_pg_rho_threshold=config.vtrace_clip_pg_rho_threshold,
        )

    def add_value_and_entropy_terms(
        self,
        module_id: ModuleID,
        policy_loss: torch.Tensor,
        tm: TimeMajor,
        values: torch.Tensor,
        vs: torch.Tensor,
        dist: Any,
    ) -> torch.Tensor:
        """`policy_loss + vf_loss_coeff * vf_loss - entropy_coeff * entropy`; logs the three terms."""
        vf_loss = 0.5 * tm.mean((values[:-1] - vs) ** 2)
        entropy = tm.mean(tm(dist.entropy())[:-1])
        total = policy_loss + self.config.vf_loss_coeff * vf_loss
        entropy_coeff = self.curr_entropy_coeffs[module_id]
        if entropy_coeff:  # a zero term stays out of the backward pass
            total = total - entropy_coeff * entropy
        for name, value in (("policy_loss", policy_loss), ("vf_loss", vf_loss), ("entropy", entropy)):
            self.log_minibatch_value((module_id, name), value.detach())
        return total


def flatten_rows(columns: dict) -> dict:
    """`[B, T, ...]` columns as `[B * T, ...]` (leaf-wise); `SEQ_LENS` (`[B]`) stays."""

    def flat(data: Any) -> Any:
        if isinstance(data, dict):
            return {key: flat(value) for key, value in data.items()}
        return data.reshape((-1,) + tuple(data.shape[2:]))

    return {column: data if column == Columns.SEQ_LENS else flat(data) for column, data in columns.items()}
