"""`TorchLearner`: the torch gradient step of a `Learner` (Adam, clipping, finite checks)."""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
import torch

from flywheel.columns import Columns
from flywheel.core.learner.learner import Learner, OptimizerSlot
from flywheel.core.rl_module.multi_rl_module import MultiRLModule
from flywheel.errors import ConfigError
from flywheel.typing import ModuleID

logger = logging.getLogger(__name__)


class TorchLearner(Learner):
    """A `Learner` for `TorchRLModule`s.

    Per minibatch: `forward_train` and `compute_loss_for_module` for each module, one backward
    pass over the summed losses, per-optimizer gradient clipping (`config.grad_clip` by
    `"value"`, per-tensor `"norm"` or `"global_norm"`; the pre-clip global norm is logged as
    `gradients_<optimizer>_global_norm`), then the optimizer steps only if every loss and
    gradient is finite. A non-finite step is skipped entirely (weights and optimizer state keep
    their last finite values), counted in `num_non_finite_updates`, and reported once per
    update with the module ids.
    """

    def __init__(self, *, config: Any, module_spec: Any = None, spaces: tuple | None = None) -> None:
        super().__init__(config=config, module_spec=module_spec, spaces=spaces)
        self._device = _device_for(config)

    @property
    def device(self) -> torch.device:
        return self._device

    def _build_module(self) -> MultiRLModule:
        return super()._build_module().to(self._device)

    def configure_optimizers_for_module(self, module_id: ModuleID, config: Any) -> None:
        """One Adam optimizer over the module's trainable parameters, with `config.lr` (or its schedule)."""
        params = [p for p in self.module[module_id].parameters() if p.requires_grad]
        self.register_optimizer(module_id=module_id, optimizer=adam(params), params=params)

    def _set_optimizer_lr(self, optimizer: torch.optim.Optimizer, lr: float) -> None:
        for group in optimizer.param_groups:
            group["lr"] = lr

    # The gradient step.

    def _update_on_minibatch(self, minibatch: dict, index: int, *, warn: bool) -> None:
        losses = {}
        for module_id, batch in minibatch.items():
            fwd_out = self.module[module_id].forward_train(batch)
            losses[module_id] = self.compute_loss_for_module(
                module_id=module_id, config=self.config, batch=batch, fwd_out=fwd_out
            )
            self.metrics.log_value((module_id, "total_loss"), losses[module_id].detach(), reduce="mean")
            self.metrics.log_value((module_id, "num_module_steps_trained"), _num_steps(batch), reduce="sum")
        distributed = torch.distributed.is_initialized()
        if distributed:  # every rank steps every optimizer, with the gradients averaged over ranks
            slots = list(self._optimizer_slots.values())
        else:
            slots = [slot for module_id in losses for slot in self.optimizers_of(module_id)]
        for slot in slots:  # what zero_grad(set_to_none=True) does, without its per-call overhead
            for param in slot.params:
                param.grad = None
        sum(losses.values()).backward()
        if distributed:
            _average_gradients([param for slot in slots for param in slot.params])
        norms = [self._clip_gradients(slot) for slot in slots]
        checks = torch.stack([loss.detach() for loss in losses.values()] + norms)
        if bool(torch.isfinite(checks).all()):
            for slot in slots:
                slot.optimizer.step()
            return
        self._num_non_finite_updates += 1
        if warn:
            self._warn_non_finite(losses, slots, norms, index)

    def _minibatch_counts(self, counts: dict[ModuleID, int]) -> dict[ModuleID, int]:
        """With `torch.distributed` running, every module takes the largest count over all modules
        and ranks, so each rank joins every gradient all-reduce (shards may differ by an episode)."""
        if not torch.distributed.is_initialized():
            return counts
        largest = torch.tensor(max(counts.values(), default=1))
        torch.distributed.all_reduce(largest, op=torch.distributed.ReduceOp.MAX)
        return dict.fromkeys(counts, int(largest))

    def _clip_gradients(self, slot: OptimizerSlot) -> torch.Tensor:
        """Clips the slot's gradients in place; returns their global norm before clipping."""
        grads = [p.grad for p in slot.params if p.grad is not None]
        if not grads:
            return torch.zeros((), device=self._device)
        # torch.nn.utils.get_total_norm's math; its device/dtype grouping costs more than the norms here.
        norm = torch.linalg.vector_norm(torch.stack(torch._foreach_norm(grads)))
        self.metrics.log_value((slot.module_id, f"gradients_{slot.name}_global_norm"), norm, reduce="mean")
        clip = self.config.grad_clip
        if clip is None:
            return norm
        if self.config.grad_clip_by == "value":
            torch._foreach_clamp_min_(grads, -clip)
            torch._foreach_clamp_max_(grads, clip)
        elif self.config.grad_clip_by == "norm":
            for grad in grads:
                grad.mul_(torch.clamp(clip / (grad.norm() + 1e-6), max=1.0))
        else:
            torch.nn.utils.clip_grads_with_norm_(slot.params, clip, norm)
        return norm

    def _warn_non_finite(
        self, losses: dict, slots: list[OptimizerSlot], norms: list[torch.Tensor], index: int
    ) -> None:
        bad = {mid for mid, loss in losses.items() if not torch.isfinite(loss).item()}
        bad |= {slot.module_id for slot, norm in zip(slots, norms) if not torch.isfinite(norm).item()}
        logger.warning(
            "Non-finite loss or gradients for module(s) %s in update %d (minibatch %d, weights_seq_no %d; "
            "losses %s): the optimizer step was skipped and the weights keep their last finite values. "
            "Fix: lower lr, set grad_clip, or check the episodes for NaN/inf observations or rewards.",
            sorted(bad),
            self._weights_seq_no + 1,
            index,
            self._weights_seq_no,
            {mid: float(loss.detach()) for mid, loss in losses.items()},
        )

    # Tensors.

    def _to_tensors(self, columns: dict) -> dict:
        return {column: _to_tensor(data, self._device) for column, data in columns.items()}

    def _take_rows(self, columns: dict, rows: np.ndarray) -> dict:
        index = torch.from_numpy(rows).to(self._device)
        return {column: _take(data, index) for column, data in columns.items()}

    # Optimizer state.

    def _get_optimizer_state(self, optimizer: torch.optim.Optimizer) -> dict:
        return _to_plain(optimizer.state_dict())

    def _set_optimizer_state(self, optimizer: torch.optim.Optimizer, state: dict) -> None:
        optimizer.load_state_dict(_from_plain(state))


def _average_gradients(params: list[torch.Tensor]) -> None:
    """Replaces each parameter's gradient by its mean over all ranks (one flat all-reduce); a rank
    without a gradient for a parameter contributes zeros."""
    grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p in params]
    flat = torch.cat([grad.reshape(-1) for grad in grads])
    torch.distributed.all_reduce(flat)
    flat /= torch.distributed.get_world_size()
    offset = 0
    for param in params:
        size = param.numel()
        param.grad = flat[offset : offset + size].view_as(param)
        offset += size


def _device_for(config: Any) -> torch.device:
    if not getattr(config, "num_gpus_per_learner", 0):
        return torch.device("cpu")
    if not torch.cuda.is_available():
        raise ConfigError(
            f"num_gpus_per_learner={config.num_gpus_per_learner} but torch sees no CUDA device. "
            "Fix: config.learners(num_gpus_per_learner=0), or run on a machine with a GPU."
        )
    return torch.device("cuda")


def _num_steps(batch: dict) -> int:
    mask = batch.get(Columns.LOSS_MASK)
    if mask is not None:
        return int(mask.sum())
    data = next(iter(batch.values()))
    while isinstance(data, dict):
        data = next(iter(data.values()))
    return len(data)


def _to_tensor(data: Any, device: torch.device) -> Any:
    if isinstance(data, dict):
        return {key: _to_tensor(value, device) for key, value in data.items()}
    if isinstance(data, np.ndarray):
        if data.dtype == object:
            return data
        tensor = torch.from_numpy(data)
        return (
            tensor.to(device=device, dtype=torch.float32) if data.dtype == np.float64 else tensor.to(device)
        )
    return data


def _take(data: Any, index: torch.Tensor) -> Any:
    if isinstance(data, dict):
        return {key: _take(value, index) for key, value in data.items()}
    if isinstance(data, torch.Tensor):
        return data[index]
    return data[index.cpu().numpy()]


def _to_plain(data: Any) -> Any:
    if isinstance(data, torch.Tensor):
        return data.detach().cpu().numpy().copy()
    if isinstance(data, dict):
        return {key: _to_plain(value) for key, value in data.items()}
    if isinstance(data, (list, tuple)):
        return type(data)(_to_plain(value) for value in data)
    return data


def _from_plain(data: Any) -> Any:
    if isinstance(data, np.ndarray):
        return torch.from_numpy(data.copy())
    if isinstance(data, dict):
        return {key: _from_plain(value) for key, value in data.items()}
    if isinstance(data, (list, tuple)):
        return type(data)(_from_plain(value) for value in data)
    return data


def adam(params: list[torch.Tensor]) -> torch.optim.Adam:
    """Adam over `params`, fused into one kernel per step where torch has one for them (CPU and
    CUDA floating-point tensors): for the small networks of RL, the per-tensor Python loop of
    the default implementation costs more than the arithmetic (3.5x slower per step on CPU)."""
    fused = bool(params) and all(p.is_floating_point() and p.device.type in ("cpu", "cuda") for p in params)
    return torch.optim.Adam(params, fused=fused or None)
