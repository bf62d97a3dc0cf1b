"""`TorchLearner`: the torch gradient step of a `Learner` (Adam, clipping, finite checks)."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from flywheel.core.learner.learner import Learner
from flywheel.core.learner.optimizers import DEFAULT_OPTIMIZER, OptimizerSlot
from flywheel.core.learner.torch_grads import clip_, global_norm
from flywheel.core.learner.torch_lr_schedulers import TorchLRSchedulers
from flywheel.core.rl_module.multi_rl_module import MultiRLModule
from flywheel.core.rl_module.rl_module import RLModule
from flywheel.errors import ConfigError
from flywheel.typing import ALL_MODULES, ModuleID, StateDict
from flywheel.utils.nested import take

if TYPE_CHECKING:
    from flywheel.algorithms.algorithm_config import AlgorithmConfig
    from flywheel.typing import RLModuleSpecType

logger = logging.getLogger(__name__)


class TorchLearner(Learner):
    """A `Learner` for `TorchRLModule`s.

    Per minibatch (`Learner.update` drives these public steps): `forward_train`, the losses,
    `compute_gradients` (one backward pass over the summed losses), `postprocess_gradients`
    (per-optimizer clipping by `config.grad_clip` by `"value"`, per-tensor `"norm"` or
    `"global_norm"`; the pre-clip global norm is logged as `gradients_<optimizer>_global_norm`),
    then `apply_gradients`, which steps the optimizers only if every loss and pre-clip gradient
    norm of the step is finite. A non-finite step is skipped entirely (weights and optimizer state
    keep their last finite values), counted in `num_non_finite_updates`, and reported once per
    update with the module ids.

    With `config.experimental(_torch_lr_scheduler_classes=...)`, torch lr schedulers own the learning
    rates of the optimizers they are built over and step once after every update
    (`flywheel.core.learner.torch_lr_schedulers`); their states are part of `get_state()`.
    """

    framework = "torch"

    def __init__(
        self,
        *,
        config: AlgorithmConfig,
        module_spec: RLModuleSpecType | None = None,
        module: Any = None,
        spaces: tuple | None = None,
    ) -> None:
        super().__init__(config=config, module_spec=module_spec, module=module, spaces=spaces)
        self._device = _device_for(config)
        # What the current step computed so far, for `apply_gradients`' finite check.
        self._step_losses: dict[ModuleID, torch.Tensor] = {}
        self._step_norms: list[tuple[OptimizerSlot, torch.Tensor]] = []
        self._lr_schedulers = TorchLRSchedulers(getattr(config, "_torch_lr_scheduler_classes", None))

    @property
    def device(self) -> torch.device:
        return self._device

    def update(self, batch: dict | None = None, **kwargs: Any) -> dict:
        """`Learner.update` on `num_cpus_per_learner` torch threads (at least one): the CPUs the
        learner is given, as a Ray actor's OMP_NUM_THREADS gives RLlib's remote learners. The count
        from before is restored after, so a local env runner keeps acting on one thread. Then the
        torch lr schedulers (if any) step once."""
        with _torch_threads(max(1, int(self.config.num_cpus_per_learner))):
            results = super().update(batch, **kwargs)
        self._lr_schedulers.step()
        return results

    def register_optimizer(
        self,
        *,
        module_id: ModuleID = ALL_MODULES,
        optimizer_name: str = DEFAULT_OPTIMIZER,
        optimizer: torch.optim.Optimizer,
        params: Any,
        lr_or_lr_schedule: Any = None,
    ) -> None:
        """`Learner.register_optimizer`, then the module's torch lr schedulers over `optimizer` (which
        then set its learning rate instead of `lr_or_lr_schedule`, whose value now is where they start)."""
        super().register_optimizer(
            module_id=module_id,
            optimizer_name=optimizer_name,
            optimizer=optimizer,
            params=params,
            lr_or_lr_schedule=lr_or_lr_schedule,
        )
        if self._lr_schedulers.attach(module_id, optimizer_name, optimizer):
            self._slots[(module_id, optimizer_name)].lr_scheduler = None

    def remove_optimizers(self, module_id: ModuleID) -> None:
        super().remove_optimizers(module_id)
        self._lr_schedulers.remove(module_id)

    def get_state(
        self, components: str | list[str] | None = None, not_components: str | list[str] | None = None
    ) -> StateDict:
        """`Learner.get_state`, plus `lr_schedulers` (each scheduler's state) when there are any."""
        state = super().get_state(components, not_components)
        keep = [components] if isinstance(components, str) else components
        drop = [not_components] if isinstance(not_components, str) else (not_components or [])
        if self._lr_schedulers and (keep is None or "lr_schedulers" in keep) and "lr_schedulers" not in drop:
            state["lr_schedulers"] = self._lr_schedulers.get_state()
        return state

    def set_state(self, state: StateDict) -> None:
        super().set_state(state)
        if "lr_schedulers" in state:
            self._lr_schedulers.set_state(state["lr_schedulers"])

    def _build_module(self) -> MultiRLModule:
        return super()._build_module().to(self._device)

    def configure_optimizers_for_module(
        self, module_id: ModuleID, config: AlgorithmConfig | None = None
    ) -> None:
        """One Adam optimizer over the module's trainable parameters, with `config.lr` (or its schedule)
        and `config.adam_epsilon`."""
        params = [p for p in self.get_parameters(self.module[module_id]) if p.requires_grad]
        config = self.config if config is None else config
        self.register_optimizer(
            module_id=module_id,
            optimizer=adam(params, eps=config.adam_epsilon),
            params=params,
            lr_or_lr_schedule=config.lr,
        )

    def rl_module_is_compatible(self, module: Any) -> bool:
        """Whether this learner can train `module`: any torch module (as RLlib's TorchLearner; the
        algorithm checks the APIs its loss needs itself)."""
        return isinstance(module, torch.nn.Module)

    def get_parameters(self, module: RLModule | torch.nn.Module) -> list[torch.nn.Parameter]:
        """The module's torch parameters (none for a weightless `RLModule`, e.g. a heuristic policy)."""
        return list(module.parameters()) if isinstance(module, torch.nn.Module) else []

    def get_param_ref(self, param: torch.Tensor) -> torch.Tensor:
        return param

    def _set_optimizer_lr(self, optimizer: torch.optim.Optimizer, lr: float) -> None:
        for group in optimizer.param_groups:
            group["lr"] = lr

    def _get_optimizer_lr(self, optimizer: torch.optim.Optimizer) -> float:
        return float(optimizer.param_groups[0]["lr"])

    # The gradient step.

    def compute_gradients(self, loss_per_module: dict[ModuleID, torch.Tensor], **kwargs: Any) -> dict:
        """Clears the gradients of the optimizers the losses train (all of them under
        `torch.distributed`, where every rank steps every optimizer), backpropagates the summed
        losses (averaging gradients over ranks) and returns `{param: grad}` of those optimizers."""
        distributed = torch.distributed.is_initialized()
        _, params = self.slots_for((ALL_MODULES,) if distributed else loss_per_module.keys())
        for param in params:  # what zero_grad(set_to_none=True) does, without its per-call overhead
            param.grad = None
        self._step_losses, self._step_norms = loss_per_module, []
        total = sum(loss_per_module.values())
        if not isinstance(total, torch.Tensor) or total.grad_fn is None:
            return {}  # nothing to differentiate (no losses, or every parameter frozen)
        total.backward()
        if distributed:
            _average_gradients(params)
        return {param: param.grad for param in params if param.grad is not None}

    def postprocess_gradients_for_module(
        self, *, module_id: ModuleID, config: AlgorithmConfig | None = None, module_gradients_dict: dict
    ) -> dict:
        """Clips each optimizer's share of `module_gradients_dict` in place (`grad_clip` by `grad_clip_by`)
        and logs its pre-clip global norm (with `log_gradients`, or when clipping by global norm)."""
        config = self.config if config is None else config
        for slot in self._slots_by_module.get(module_id, ()):
            grads = _grads_of(slot, module_gradients_dict)
            if not grads:
                continue
            norm = global_norm(grads)
            self._step_norms.append((slot, norm))
            if config.log_gradients or (
                config.grad_clip is not None and config.grad_clip_by == "global_norm"
            ):
                self.log_minibatch_value((module_id, f"gradients_{slot.name}_global_norm"), norm)
            if config.grad_clip is not None:
                clip_(grads, config.grad_clip, config.grad_clip_by, norm)
        return module_gradients_dict

    def apply_gradients(self, gradients_dict: dict) -> None:
        """Sets `gradients_dict` as the parameters' gradients and steps the optimizers they belong to,
        if the step's losses and pre-clip gradient norms (computed here when `postprocess_gradients`
        did not run) are all finite."""
        for param, grad in gradients_dict.items():
            if param.grad is not grad:
                param.grad = grad
        given = gradients_dict.keys()
        slots = [slot for slot in self.optimizer_slots() if not given.isdisjoint(slot.params)]
        losses, norms = self._step_losses, self._step_norms
        if not norms:
            norms = [(slot, global_norm(_grads_of(slot, gradients_dict))) for slot in slots]
        self._step_losses, self._step_norms = {}, []
        checks = [loss.detach() for loss in losses.values() if isinstance(loss, torch.Tensor)]
        checks += [norm for _, norm in norms]
        if not checks or bool(torch.isfinite(torch.stack(checks)).all()):
            for slot in slots:
                slot.optimizer.step()
            return
        self._num_non_finite_updates += 1
        if self._num_non_finite_updates - self._non_finite_before_update == 1:  # once per update
            self._warn_non_finite(losses, norms)

    @staticmethod
    def _mean(values: list[torch.Tensor]) -> torch.Tensor:
        return torch.stack(values).mean()

    def _minibatch_counts(self, counts: dict[ModuleID, int]) -> dict[ModuleID, int]:
        """With `torch.distributed` running, every module takes the largest count over all modules
        and ranks, so each rank joins every gradient all-reduce (shards may differ by an episode)."""
        if not torch.distributed.is_initialized():
            return counts
        largest = torch.tensor(max(counts.values(), default=1))
        torch.distributed.all_reduce(largest, op=torch.distributed.ReduceOp.MAX)
        return dict.fromkeys(counts, int(largest))

    def _warn_non_finite(
        self, losses: dict[ModuleID, torch.Tensor], norms: list[tuple[OptimizerSlot, torch.Tensor]]
    ) -> None:
        losses = {mid: loss.detach() for mid, loss in losses.items() if isinstance(loss, torch.Tensor)}
        bad = {mid for mid, loss in losses.items() if not torch.isfinite(loss).item()}
        bad |= {slot.module_id for slot, norm in norms if not torch.isfinite(norm).item()}
        logger.warning(
            "Non-finite loss or gradients for module(s) %s in update %d (minibatch %d, weights_seq_no %d; "
            "losses %s): the optimizer step was skipped and the weights keep their last finite values. "
            "Fix: lower lr, set grad_clip, or check the episodes for NaN/inf observations or rewards.",
            sorted(bad),
            self._weights_seq_no + 1,
            self._minibatch_index,
            self._weights_seq_no,
            {mid: float(loss) for mid, loss in losses.items()},
        )

    # Tensors.

    def _to_tensors(self, columns: dict) -> dict:
        return {column: _to_tensor(data, self._device) for column, data in columns.items()}

    def _take_rows(self, columns: dict, rows: np.ndarray) -> dict:
        index = torch.from_numpy(rows).to(self._device)
        return {column: take(data, index) for column, data in columns.items()}

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


def _grads_of(slot: OptimizerSlot, gradients: dict) -> list[torch.Tensor]:
    return [g for p in slot.params if (g := gradients.get(p)) is not None]


def _device_for(config: AlgorithmConfig) -> torch.device:
    if not getattr(config, "num_gpus_per_learner", 0):
        return torch.device("cpu")
    if not torch.cuda.is_available():
        raise ConfigError(
            f"num_gpus_per_learner={config.num_gpus_per_learner} but torch sees no CUDA device. "
            "Fix: config.learners(num_gpus_per_learner=0), or run on a machine with a GPU."
        )
    return torch.device("cuda")


def _to_tensor(data: object, device: torch.device) -> Any:
    if isinstance(data, dict):
        return {key: _to_tensor(value, device) for key, value in data.items()}
    if isinstance(data, tuple):  # Tuple action spaces
        return tuple(_to_tensor(value, device) for value in data)
    if isinstance(data, torch.Tensor):  # the pipeline's NumpyToTensor made it
        return data.to(device)
    if isinstance(data, np.ndarray):
        if data.dtype == object:
            return data
        tensor = torch.from_numpy(data)
        return (
            tensor.to(device=device, dtype=torch.float32) if data.dtype == np.float64 else tensor.to(device)
        )
    return data


def _to_plain(data: object) -> Any:
    if isinstance(data, torch.Tensor):
        return data.detach().cpu().numpy().copy()
    if isinstance(data, dict):
        return {key: _to_plain(value) for key, value in data.items()}
    if isinstance(data, (list, tuple)):
        return type(data)(_to_plain(value) for value in data)
    return data


def _from_plain(data: object) -> Any:
    if isinstance(data, np.ndarray):
        return torch.from_numpy(data.copy())
    if isinstance(data, dict):
        return {key: _from_plain(value) for key, value in data.items()}
    if isinstance(data, (list, tuple)):
        return type(data)(_from_plain(value) for value in data)
    return data


def adam(params: Sequence[torch.Tensor], eps: float = 1e-8) -> torch.optim.Adam:
    """Adam over `params` with epsilon `eps`, fused into one kernel per step where torch has one for
    them (CPU and CUDA floating-point tensors): for the small networks of RL, the per-tensor Python
    loop of the default implementation costs more than the arithmetic (3.5x slower per step on CPU)."""
    fused = bool(params) and all(p.is_floating_point() and p.device.type in ("cpu", "cuda") for p in params)
    return torch.optim.Adam(params, eps=eps, fused=fused or None)


@contextlib.contextmanager
def _torch_threads(num_threads: int) -> Iterator[None]:
    before = torch.get_num_threads()
    if num_threads == before:
        yield
        return
    torch.set_num_threads(num_threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)
