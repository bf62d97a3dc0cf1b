"""torch learning-rate schedulers over a learner's optimizers (`config.experimental(_torch_lr_scheduler_classes=...)`).

RLlib 2.60's rule, which `TorchLearner` follows: every optimizer of a module gets its own instances of
the module's scheduler classes (a list for every module, or `{module_id: [...]}`; a module the dict
does not name keeps `lr`), each called with the optimizer (`functools.partial` supplies the other
arguments). They are stepped in order once after every `Learner.update()` (not per minibatch), so
`StepLR(step_size=2)` halves the learning rate every second update. From then on the schedulers own
the learning rate: `config.lr` only sets where they start.

    config.experimental(_torch_lr_scheduler_classes=[
        functools.partial(torch.optim.lr_scheduler.ConstantLR, factor=0.5, total_iters=10),
        functools.partial(torch.optim.lr_scheduler.ExponentialLR, gamma=0.99),
    ])
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from flywheel.typing import ModuleID

SchedulerClasses = Sequence[Callable[[Any], Any]] | Mapping[ModuleID, Sequence[Callable[[Any], Any]]]


class TorchLRSchedulers:
    """The schedulers of each `(module_id, optimizer_name)`, built from `classes` (None: none)."""

    def __init__(self, classes: SchedulerClasses | None) -> None:
        self._classes = classes
        self._by_optimizer: dict[tuple[ModuleID, str], list[Any]] = {}

    def attach(self, module_id: ModuleID, optimizer_name: str, optimizer: Any) -> bool:
        """Builds the module's schedulers over `optimizer` (replacing any it had under that name);
        True when there are any (they then own its learning rate)."""
        classes = self._classes
        if isinstance(classes, Mapping):
            classes = classes.get(module_id)
        if not classes:
            self._by_optimizer.pop((module_id, optimizer_name), None)
            return False
        self._by_optimizer[(module_id, optimizer_name)] = [make(optimizer) for make in classes]
        return True

    def step(self) -> None:
        """Steps every scheduler once, in the configured order (after each update)."""
        for schedulers in self._by_optimizer.values():
            for scheduler in schedulers:
                scheduler.step()

    def remove(self, module_id: ModuleID) -> None:
        """Forgets the schedulers of `module_id`'s optimizers."""
        for key in [key for key in self._by_optimizer if key[0] == module_id]:
            del self._by_optimizer[key]

    def get_state(self) -> dict[str, list[dict]]:
        """`{"<module_id>_<optimizer_name>": [each scheduler's state_dict]}` (plain data)."""
        return {
            f"{mid}_{name}": [scheduler.state_dict() for scheduler in schedulers]
            for (mid, name), schedulers in self._by_optimizer.items()
        }

    def set_state(self, state: Mapping[str, list[dict]]) -> None:
        """Loads `get_state()` output into the schedulers of the same optimizers (others are skipped)."""
        for (mid, name), schedulers in self._by_optimizer.items():
            for scheduler, scheduler_state in zip(schedulers, state.get(f"{mid}_{name}", ()), strict=False):
                scheduler.load_state_dict(scheduler_state)

    def __bool__(self) -> bool:
        return bool(self._by_optimizer)
