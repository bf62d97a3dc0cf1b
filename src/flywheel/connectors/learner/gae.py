"""`GeneralAdvantageEstimation`: advantages and value targets for on-policy losses (PPO)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from flywheel.columns import Columns
from flywheel.connectors.connector import ConnectorV2
from flywheel.connectors.learner.module_episodes import bootstrap_chunk_lens
from flywheel.errors import ConnectorError
from flywheel.utils.nested import take

if TYPE_CHECKING:
    from flywheel.typing import EpisodeType


class GeneralAdvantageEstimation(ConnectorV2):
    """Computes `ADVANTAGES` (standardized per module over the whole batch unless `standardize=False`),
    `VALUE_TARGETS` and `VF_PREDS` (the values at sampling time, for PPO's value clipping).

    Runs after the batching pieces (on numpy arrays or, after `NumpyToTensor`, tensors, which it
    keeps on their device) and needs `AddOneTsToEpisodesAndTruncate` earlier in the pipeline.
    Rewards come from the batch, so a piece before it that changes `batch[module_id][REWARDS]`
    (e.g. an intrinsic-reward bonus) changes the advantages. Modules without `compute_values`
    (e.g. a curiosity model trained on the same rows) are left as they are. One no-grad `compute_values` pass over each module's whole batch (including every
    chunk's extra row) gives V(s_t) and the bootstrap V(s_T); then per chunk
    `delta_t = r_t + gamma * V(s_{t+1}) * (1 - terminated_t) - V(s_t)`,
    `A_t = delta_t + gamma * lambda_ * A_{t+1}`, so a terminated chunk bootstraps from 0 and a
    truncated or cut one from V(s_T). `VALUE_TARGETS = A + V`. The extra rows are then removed
    (stateful modules keep their `[B, T]` layout, with the extra rows masked out by `LOSS_MASK`).

    The recursion runs as a log-depth scan over the whole flat batch (about 12 vectorized
    passes for 4000 rows), not as a Python loop over timesteps.
    """

    def __init__(
        self,
        input_observation_space=None,
        input_action_space=None,
        *,
        gamma: float = 0.99,
        lambda_: float = 0.95,
        standardize: bool = True,
        **kwargs: object,
    ):
        super().__init__(input_observation_space, input_action_space, **kwargs)
        self.gamma = gamma
        self.lambda_ = lambda_
        self.standardize = standardize

    def __call__(
        self,
        *,
        rl_module: Any,
        batch: dict[str, Any],
        episodes: list[EpisodeType],
        explore: bool | None = None,
        shared_data: dict | None = None,
        metrics: Any = None,
        **kwargs: object,
    ) -> dict[str, Any]:
        chunk_lens = bootstrap_chunk_lens(shared_data, "GeneralAdvantageEstimation")
        for module_id, columns in batch.items():
            module = rl_module[module_id]
            if not hasattr(module, "compute_values"):
                continue  # as RLlib: no value function, no advantages (the PPO learner trains no such module)
            values = _compute_values(module, columns)
            self._add_advantages(module_id, columns, values, np.asarray(chunk_lens[module_id]))
        return batch

    def _add_advantages(
        self, module_id: str, columns: dict, values: np.ndarray, chunk_lens: np.ndarray
    ) -> None:
        like = columns[Columns.REWARDS]
        seq_lens = columns.get(Columns.SEQ_LENS)
        valid = None if seq_lens is None else np.arange(values.shape[1])[None] < _numpy(seq_lens)[:, None]
        flat = (lambda x: _numpy(x)) if valid is None else (lambda x: _numpy(x)[valid])
        rewards, values = flat(like), flat(values)
        if len(rewards) != chunk_lens.sum():
            raise ConnectorError(
                f"GeneralAdvantageEstimation: module {module_id!r} has {len(rewards)} rows, expected "
                f"{chunk_lens.sum()} (len(chunk) + 1 per chunk). Fix the piece that changed the row count."
            )
        is_bootstrap = np.zeros(len(rewards), dtype=bool)
        is_bootstrap[np.cumsum(chunk_lens) - 1] = True
        advantages, targets = compute_gae(
            rewards, values, flat(columns[Columns.TERMINATEDS]), is_bootstrap, self.gamma, self.lambda_
        )
        mask = flat(columns[Columns.LOSS_MASK]) if Columns.LOSS_MASK in columns else ~is_bootstrap
        advantages = standardize(advantages, mask) if self.standardize else np.where(mask, advantages, 0.0)
        vf_preds = values.astype(np.float32)
        if valid is not None:
            columns[Columns.ADVANTAGES] = _like(_unflatten(advantages, valid), like)
            columns[Columns.VALUE_TARGETS] = _like(_unflatten(targets, valid), like)
            columns[Columns.VF_PREDS] = _like(_unflatten(vf_preds, valid), like)
            return
        keep = ~is_bootstrap
        for column, data in columns.items():
            columns[column] = take(data, keep)
        columns[Columns.ADVANTAGES] = _like(advantages[keep], like)
        columns[Columns.VALUE_TARGETS] = _like(targets[keep], like)
        columns[Columns.VF_PREDS] = _like(vf_preds[keep], like)
        if Columns.LOSS_MASK in columns and columns[Columns.LOSS_MASK].all():
            del columns[Columns.LOSS_MASK]


def compute_gae(
    rewards: np.ndarray,
    values: np.ndarray,
    terminateds: np.ndarray,
    is_bootstrap: np.ndarray,
    gamma: float,
    lambda_: float,
) -> tuple[np.ndarray, np.ndarray]:
    """GAE over a flat batch of chunks, each ending in a bootstrap row (`is_bootstrap`).

    Returns `(advantages, value_targets)` as float32; both are 0 / V on the bootstrap rows.
    """
    not_terminated = 1.0 - terminateds.astype(np.float64)
    next_values = np.append(values[1:], 0.0).astype(np.float64)
    deltas = rewards + gamma * not_terminated * next_values - values
    coeffs = gamma * lambda_ * not_terminated
    deltas[is_bootstrap] = 0.0
    coeffs[is_bootstrap] = 0.0
    advantages = reverse_linear_scan(deltas, coeffs)
    return advantages.astype(np.float32), (advantages + values).astype(np.float32)


def reverse_linear_scan(x: np.ndarray, a: np.ndarray) -> np.ndarray:
    """Solves `y_t = x_t + a_t * y_{t+1}` (y past the end = 0) in log2(n) vectorized steps.

    After the step with shift `s`, `y_t` sums the terms `t .. t+2s-1` and `a_t` is the product of
    the coefficients over that span (the weight of `y_{t+2s}`); a 0 coefficient cuts the chain.
    """
    y = np.array(x, dtype=np.float64)
    a = np.array(a, dtype=np.float64)
    shift = 1
    while shift < len(y) and a.any():
        y[:-shift] += a[:-shift] * y[shift:]
        a[:-shift] *= a[shift:]
        a[-shift:] = 0.0
        shift *= 2
    return y


def standardize(advantages: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """`(A - mean) / std` over the rows in `mask` (std floored at 1e-4); other rows become 0."""
    selected = advantages[mask]
    out = np.zeros_like(advantages)
    out[mask] = (selected - selected.mean()) / max(float(selected.std()), 1e-4)
    return out


def _compute_values(module: Any, columns: dict) -> np.ndarray:
    """V(s) for every row. As in RLlib, `compute_values` sees the module's batch itself: columns it
    replaces or adds (RLlib's action-masking example moves the mask out of a Dict observation into its
    own column there) stay in the batch the learner trains on, and columns it removes are removed."""
    param = next(iter(module.parameters()), None) if hasattr(module, "parameters") else None
    device = param.device if param is not None else torch.device("cpu")
    tensors = _to_tensors(columns, device)
    given = dict(tensors)
    with torch.no_grad():
        values = module.compute_values(tensors)
    for key in given.keys() - tensors.keys():
        del columns[key]
    for key, value in tensors.items():
        if given.get(key) is not value:
            columns[key] = _to_numpy(value)
    return values.detach().cpu().numpy().astype(np.float64)


def _to_numpy(data: Any) -> Any:
    if isinstance(data, torch.Tensor):
        return data.detach().cpu().numpy()
    if isinstance(data, dict):
        return {key: _to_numpy(value) for key, value in data.items()}
    if isinstance(data, tuple):
        return tuple(_to_numpy(value) for value in data)
    return data


def _to_tensors(data: Any, device: torch.device) -> Any:
    if isinstance(data, dict):
        return {key: _to_tensors(value, device) for key, value in data.items()}
    if isinstance(data, tuple):
        return tuple(_to_tensors(value, device) for value in data)
    if isinstance(data, np.ndarray) and data.dtype != object:
        return torch.from_numpy(data).to(device)
    return data


def _numpy(data: Any) -> np.ndarray:
    """A column as numpy (tensors are copied to the CPU)."""
    return data.detach().cpu().numpy() if isinstance(data, torch.Tensor) else np.asarray(data)


def _like(array: np.ndarray, reference: Any) -> Any:
    """`array` as a tensor on `reference`'s device when `reference` is a tensor, else as it is."""
    return torch.from_numpy(array).to(reference.device) if isinstance(reference, torch.Tensor) else array


def _unflatten(flat: np.ndarray, valid: np.ndarray) -> np.ndarray:
    out = np.zeros(valid.shape, dtype=flat.dtype)
    out[valid] = flat
    return out
