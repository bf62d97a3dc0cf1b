"""A learner's optimizers: registered per module id and name, with an optional lr schedule each.

`Learner` inherits this registry, so the RLlib methods users call on a learner
(`register_optimizer`, `get_optimizer`, `get_optimizers_for_module`,
`filter_param_dict_for_optimizer`) live here, next to the bookkeeping they share.
"""

from __future__ import annotations

import abc
import dataclasses
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any

from flywheel.core.learner.schedules import Scheduler
from flywheel.errors import LearnerError
from flywheel.typing import ALL_MODULES, DEFAULT_MODULE_ID, ModuleID, StateDict

DEFAULT_OPTIMIZER = "default_optimizer"


@dataclasses.dataclass(eq=False)  # slots are compared by identity (their params are tensors)
class OptimizerSlot:
    """One registered optimizer: what it updates and how its learning rate evolves (None: the
    optimizer's own learning rate is left alone)."""

    module_id: ModuleID
    name: str
    optimizer: Any
    params: list
    lr_scheduler: Scheduler | None


class OptimizerRegistry(abc.ABC):
    """Optimizers by `(module_id, name)`; an optimizer registered under `ALL_MODULES` steps whenever
    any module trains."""

    def __init__(self) -> None:
        self._timestep = 0  # env steps sampled so far: where the lr schedules are read
        self._slots: dict[tuple[ModuleID, str], OptimizerSlot] = {}
        self._slots_by_module: dict[ModuleID, list[OptimizerSlot]] = {}
        self._plans: dict[tuple, tuple[list[OptimizerSlot], list]] = {}  # `slots_for` results

    def register_optimizer(
        self,
        *,
        module_id: ModuleID = ALL_MODULES,
        optimizer_name: str = DEFAULT_OPTIMIZER,
        optimizer: Any,
        params: Iterable,
        lr_or_lr_schedule: Any = None,
    ) -> None:
        """Registers `optimizer` over `params` for `module_id`. With `lr_or_lr_schedule` (a number or
        `[[timestep, lr], ...]`) the learner sets the optimizer's learning rate before every update;
        without it the optimizer keeps the learning rate it was built with."""
        scheduler = (
            None if lr_or_lr_schedule is None else Scheduler(lr_or_lr_schedule, name="lr_or_lr_schedule")
        )
        slot = OptimizerSlot(module_id, optimizer_name, optimizer, list(params), scheduler)
        old = self._slots.pop((module_id, optimizer_name), None)
        if old is not None:
            self._slots_by_module[module_id].remove(old)
        self._slots[(module_id, optimizer_name)] = slot
        self._slots_by_module.setdefault(module_id, []).append(slot)
        self._plans.clear()
        if scheduler is not None:
            self._set_optimizer_lr(optimizer, scheduler.value(self._timestep))

    def get_optimizer(
        self, module_id: ModuleID = DEFAULT_MODULE_ID, optimizer_name: str = DEFAULT_OPTIMIZER
    ) -> Any:
        """The optimizer registered as `optimizer_name` for `module_id` (also found by its full
        `"<module_id>_<optimizer_name>"` name)."""
        slot = self._slots.get((module_id, optimizer_name))
        if slot is None:
            slot = next(
                (s for s in self._slots.values() if f"{s.module_id}_{s.name}" == optimizer_name), None
            )
        if slot is None:
            registered = [f"{mid}/{name}" for mid, name in self._slots]
            raise LearnerError(
                f"No optimizer {optimizer_name!r} for module {module_id!r}; registered (module/name): "
                f"{registered}. Fix: register it with register_optimizer(module_id=..., optimizer_name=...)."
            )
        return slot.optimizer

    def get_optimizers_for_module(self, module_id: ModuleID = ALL_MODULES) -> list[tuple[str, Any]]:
        """`[(optimizer_name, optimizer), ...]` registered for `module_id`, in registration order."""
        return [(slot.name, slot.optimizer) for slot in self._slots_by_module.get(module_id, [])]

    def filter_param_dict_for_optimizer(self, param_dict: dict, optimizer: Any) -> dict:
        """The entries of `param_dict` (`{param_ref: value}`) whose parameters `optimizer` updates
        (entries with value None left out)."""
        slot = next(s for s in self._slots.values() if s.optimizer is optimizer)
        refs = (self.get_param_ref(param) for param in slot.params)
        return {ref: value for ref in refs if (value := param_dict.get(ref)) is not None}

    @abc.abstractmethod
    def get_param_ref(self, param: Any) -> Any:
        """A hashable reference to a parameter (torch: the parameter itself)."""

    # Bookkeeping for the learner.

    def optimizer_slots(self) -> Collection[OptimizerSlot]:
        """Every registered optimizer."""
        return self._slots.values()

    def slots_by_module(self) -> Mapping[ModuleID, list[OptimizerSlot]]:
        """`{module_id: its optimizers}` for every module id with optimizers (`ALL_MODULES` included)."""
        return self._slots_by_module

    def slots_for(self, module_ids: Collection[ModuleID]) -> tuple[list[OptimizerSlot], list]:
        """The optimizers a step on `module_ids` moves (theirs and the `ALL_MODULES` ones; all of them
        when `module_ids` holds `ALL_MODULES`) and their parameters; cached, as every minibatch asks."""
        key = tuple(module_ids)
        plan = self._plans.get(key)
        if plan is None:
            if ALL_MODULES in key:
                slots = list(self._slots.values())
            else:
                slots = [slot for mid in (*key, ALL_MODULES) for slot in self._slots_by_module.get(mid, ())]
            plan = self._plans[key] = (slots, [param for slot in slots for param in slot.params])
        return plan

    def remove_optimizers(self, module_id: ModuleID) -> None:
        """Forgets the optimizers of `module_id`."""
        for slot in self._slots_by_module.pop(module_id, []):
            del self._slots[(slot.module_id, slot.name)]
        self._plans.clear()

    def get_optimizer_states(self) -> StateDict:
        """`{"<module_id>_<name>": {"module_id": ..., "state": plain optimizer state}}`."""
        return {
            f"{mid}_{name}": {"module_id": mid, "state": self._get_optimizer_state(slot.optimizer)}
            for (mid, name), slot in self._slots.items()
        }

    def set_optimizer_states(self, states: StateDict, configure_missing: Callable[[ModuleID], bool]) -> None:
        """Loads `get_optimizer_states()` output. For an optimizer not registered yet,
        `configure_missing(module_id)` sets up the module's optimizers and says whether the module
        exists; states of modules this learner does not have are skipped."""
        for full_name, entry in states.items():
            module_id = entry["module_id"]
            key = (module_id, full_name[len(str(module_id)) + 1 :])
            if key not in self._slots and not configure_missing(module_id):
                continue
            if key not in self._slots:
                raise LearnerError(
                    f"The optimizer state {full_name!r} matches no optimizer of this learner (it has "
                    f"{[f'{mid}_{name}' for mid, name in self._slots]}). Fix: restore it into a learner "
                    "with the same modules and optimizers."
                )
            self._set_optimizer_state(self._slots[key].optimizer, entry["state"])

    @abc.abstractmethod
    def _set_optimizer_lr(self, optimizer: Any, lr: float) -> None:
        """Sets the learning rate of every parameter group of `optimizer`."""

    @abc.abstractmethod
    def _get_optimizer_lr(self, optimizer: Any) -> float:
        """The learning rate of `optimizer`'s first parameter group."""

    @abc.abstractmethod
    def _get_optimizer_state(self, optimizer: Any) -> dict:
        """The optimizer's state as plain data with numpy arrays."""

    @abc.abstractmethod
    def _set_optimizer_state(self, optimizer: Any, state: dict) -> None:
        """Restores a state from `_get_optimizer_state`."""
