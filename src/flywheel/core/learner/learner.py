"""`Learner`: turns sampled episodes into gradient updates of a `MultiRLModule`.

The loop that drives it, once per training iteration::

    results = learner.update(episodes=episodes, timesteps={"num_env_steps_sampled_lifetime": t})
    # inside: batch = learner_pipeline(episodes)            -> {module_id: {column: array}}
    #         for epoch in range(num_epochs):
    #             for minibatch in shuffled minibatches of batch:
    #                 fwd_out = module[mid].forward_train(minibatch[mid])
    #                 loss = sum(compute_loss_for_module(mid, ...) for mid)
    #                 gradients -> clip -> finite? -> optimizer step
    #         weights_seq_no += 1
    runners.set_state({"rl_module": learner.get_weights(), "weights_seq_no": learner.weights_seq_no})

Algorithms subclass a framework learner (`TorchLearner`) and implement
`compute_loss_for_module`; the framework learner implements the gradient step.
"""

from __future__ import annotations

import abc
import dataclasses
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, ClassVar, Self

import numpy as np

from flywheel.checkpoints.checkpointable import Checkpointable
from flywheel.columns import Columns
from flywheel.core.learner.schedules import Scheduler
from flywheel.core.rl_module.multi_rl_module import MultiRLModule
from flywheel.core.rl_module.spec import MultiRLModuleSpec, RLModuleSpec
from flywheel.errors import ConfigError, LearnerError
from flywheel.metrics.keys import NUM_ENV_STEPS_TRAINED, WEIGHTS_SEQ_NO
from flywheel.metrics.metrics_logger import MetricsLogger
from flywheel.typing import ALL_MODULES, DEFAULT_MODULE_ID, ModuleID, StateDict

if TYPE_CHECKING:
    from flywheel.checkpoints.registry import Allowed
    from flywheel.checkpoints.tree import Node

DEFAULT_OPTIMIZER = "default_optimizer"
TIMESTEP_KEY = "num_env_steps_sampled_lifetime"
_GRAD_CLIP_BY = ("value", "norm", "global_norm")


@dataclasses.dataclass
class OptimizerSlot:
    """One registered optimizer: what it updates and how its learning rate evolves."""

    module_id: ModuleID
    name: str
    optimizer: Any
    params: list
    lr_scheduler: Scheduler
    follows_config_lr: bool = False
    """True when registered without its own lr: `reset_config` then gives it the new `config.lr`."""


class Learner(Checkpointable, abc.ABC):
    """Owns a `MultiRLModule`, its optimizers and the learner connector pipeline.

    Args:
        config: The algorithm config (settings are read as attributes: `lr`, `num_epochs`, ...).
        module_spec: What to build; default `config.get_rl_module_spec(spaces=spaces)`. A single
            `RLModuleSpec` becomes `{"default_policy": module}`.
        spaces: `(observation_space, action_space)` after the env-to-module pipeline, used when
            `module_spec` is missing or has no spaces.
    """

    reconfigurable_settings: ClassVar[frozenset[str]] = frozenset(
        {
            "lr",
            "gamma",
            "grad_clip",
            "grad_clip_by",
            "num_epochs",
            "minibatch_size",
            "shuffle_batch_per_epoch",
        }
    )
    """Settings `reset_config` changes in place (the others are fixed once the learner is built)."""

    def __init__(
        self,
        *,
        config: Any,
        module_spec: RLModuleSpec | MultiRLModuleSpec | None = None,
        spaces: tuple | None = None,
    ) -> None:
        self.config = config
        self._module_spec = module_spec
        self._spaces = spaces
        self.module: MultiRLModule | None = None
        self.metrics = MetricsLogger()
        self._optimizer_slots: dict[tuple[ModuleID, str], OptimizerSlot] = {}
        self._learner_connector = None
        self._weights_seq_no = 0
        self._timestep = 0
        self._num_non_finite_updates = 0

    # Building.

    def build(self) -> None:
        """Builds the module, the learner pipeline, the optimizers and the schedules."""
        if self.config.grad_clip_by not in _GRAD_CLIP_BY:
            raise ConfigError(
                f"grad_clip_by must be one of {list(_GRAD_CLIP_BY)}, got {self.config.grad_clip_by!r}. "
                "Fix: config.training(grad_clip_by='global_norm')."
            )
        self.module = self._build_module()
        self._learner_connector = self._build_learner_connector()
        for module_id in self.module:
            if self.should_module_be_updated(module_id):
                self.configure_optimizers_for_module(module_id, self.config)

    def _build_learner_connector(self) -> Any:
        spaces = (None, None)
        if DEFAULT_MODULE_ID in self.module:
            default = self.module[DEFAULT_MODULE_ID]
            spaces = (default.observation_space, default.action_space)
        return self.config.build_learner_connector(*spaces)

    def reset_config(self, config: Any) -> None:
        """Makes `config` the learner's config, keeping module, optimizers and state: the learning rates
        of optimizers registered without their own follow `config.lr` from the next update, and the
        learner pipeline is rebuilt (with its state) from `config` (e.g. a new `gamma`). Only the
        `reconfigurable_settings` may differ from the current config (`Algorithm.reset_config` checks)."""
        self.config = config
        for slot in self._optimizer_slots.values():
            if slot.follows_config_lr:
                slot.lr_scheduler = Scheduler(config.lr, name="lr")
        state = self._learner_connector.get_state()
        self._learner_connector = self._build_learner_connector()
        self._learner_connector.set_state(state)

    def _build_module(self) -> MultiRLModule:
        spec = self._module_spec
        if spec is None:
            spec = self.config.get_rl_module_spec(spaces=self._spaces)
        if isinstance(spec, MultiRLModuleSpec):
            return spec.build()
        if self._spaces is not None and spec.observation_space is None:
            spec = dataclasses.replace(spec, observation_space=self._spaces[0], action_space=self._spaces[1])
        return MultiRLModule({DEFAULT_MODULE_ID: spec.build()})

    def add_module(self, module_id: ModuleID, module_spec: RLModuleSpec, *, config: Any = None) -> None:
        """Builds `module_spec` as `module_id` (replacing a module of that id) and, if it trains, its
        optimizers. `config` (the algorithm's config after the change) replaces `self.config`."""
        if config is not None:
            self.config = config
        self.module.add_module(module_id, module_spec.build(), override=True)
        if self.should_module_be_updated(module_id):
            self.configure_optimizers_for_module(module_id, self.config)

    def remove_module(self, module_id: ModuleID, *, config: Any = None) -> None:
        """Drops `module_id` and its optimizers."""
        if config is not None:
            self.config = config
        self.module.remove_module(module_id)
        for key in [key for key in self._optimizer_slots if key[0] == module_id]:
            del self._optimizer_slots[key]

    @property
    def learner_connector(self) -> Any:
        """The learner connector pipeline (episodes → train batch)."""
        return self._learner_connector

    def should_module_be_updated(self, module_id: ModuleID) -> bool:
        """Whether `module_id` trains (`config.policies_to_train`: None = all, ids, or a callable)."""
        to_train = getattr(self.config, "policies_to_train", None)
        if to_train is None:
            return True
        if callable(to_train):
            return bool(to_train(module_id, None))
        return module_id in to_train

    # Optimizers.

    @abc.abstractmethod
    def configure_optimizers_for_module(self, module_id: ModuleID, config: Any) -> None:
        """Creates the optimizer(s) of one module and registers them with `register_optimizer`."""

    def register_optimizer(
        self,
        *,
        module_id: ModuleID = DEFAULT_MODULE_ID,
        optimizer_name: str = DEFAULT_OPTIMIZER,
        optimizer: Any,
        params: list,
        lr_or_lr_schedule: Any = None,
    ) -> None:
        """Registers `optimizer` (over `params`) with a learning rate or lr schedule (default `config.lr`)."""
        lr = self.config.lr if lr_or_lr_schedule is None else lr_or_lr_schedule
        scheduler = Scheduler(lr, name="lr")
        self._optimizer_slots[(module_id, optimizer_name)] = OptimizerSlot(
            module_id, optimizer_name, optimizer, list(params), scheduler, lr_or_lr_schedule is None
        )
        self._set_optimizer_lr(optimizer, scheduler.value(self._timestep))

    def optimizers_of(self, module_id: ModuleID) -> list[OptimizerSlot]:
        """The optimizer slots registered for `module_id`."""
        return [slot for slot in self._optimizer_slots.values() if slot.module_id == module_id]

    # The loss (algorithms implement this).

    @abc.abstractmethod
    def compute_loss_for_module(self, *, module_id: ModuleID, config: Any, batch: dict, fwd_out: dict) -> Any:
        """Returns the scalar loss of one module on one minibatch (and logs its terms to `self.metrics`)."""

    # Update.

    def update(
        self,
        *,
        episodes: list,
        timesteps: dict | None = None,
        num_epochs: int | None = None,
        minibatch_size: int | None = None,
        shuffle_batch_per_epoch: bool | None = None,
    ) -> dict:
        """Runs `num_epochs` passes of minibatch SGD over the train batch built from `episodes`.

        `timesteps["num_env_steps_sampled_lifetime"]` drives the schedules (lr, coefficients).
        Returns plain numbers: `{module_id: {...}, "__all_modules__": {...}}`.
        """
        if self.module is None:
            raise LearnerError("Learner.update() was called before build(). Fix: call learner.build() first.")
        config = self.config
        num_epochs = config.num_epochs if num_epochs is None else num_epochs
        minibatch_size = config.minibatch_size if minibatch_size is None else minibatch_size
        shuffle = (
            config.shuffle_batch_per_epoch if shuffle_batch_per_epoch is None else shuffle_batch_per_epoch
        )
        self._timestep = int((timesteps or {}).get(TIMESTEP_KEY, self._timestep))
        self.before_gradient_based_update(timesteps=timesteps)
        batch = self._learner_connector(
            rl_module=self.module, batch={}, episodes=episodes, shared_data={}, metrics=self.metrics
        )
        batch = {
            mid: self._to_tensors(cols) for mid, cols in batch.items() if self.should_module_be_updated(mid)
        }
        non_finite_before = self._num_non_finite_updates
        for index, minibatch in enumerate(self._iter_minibatches(batch, num_epochs, minibatch_size, shuffle)):
            self._update_on_minibatch(
                minibatch, index, warn=self._num_non_finite_updates == non_finite_before
            )
        self._weights_seq_no += 1
        self.after_gradient_based_update(timesteps=timesteps)
        return self._reduce_metrics(sum(len(episode) for episode in episodes) * num_epochs, non_finite_before)

    def _reduce_metrics(self, num_env_steps_trained: int, non_finite_before: int) -> dict:
        """Logs the update's counters under `__all_modules__`, then reduces: the result holds them, and
        another logger can `aggregate([result])` it exactly."""
        m = self.metrics
        m.log_value((ALL_MODULES, NUM_ENV_STEPS_TRAINED), num_env_steps_trained, reduce="sum")
        non_finite = self._num_non_finite_updates - non_finite_before
        m.log_value((ALL_MODULES, "num_non_finite_updates"), non_finite, reduce="sum")
        m.log_value((ALL_MODULES, WEIGHTS_SEQ_NO), self._weights_seq_no, reduce="max", window=1)
        return m.reduce()

    def before_gradient_based_update(self, *, timesteps: dict | None) -> None:
        """Sets every optimizer's learning rate from its schedule at the current timestep."""
        for slot in self._optimizer_slots.values():
            lr = slot.lr_scheduler.value(self._timestep)
            self._set_optimizer_lr(slot.optimizer, lr)
            self.metrics.log_value((slot.module_id, f"{slot.name}_learning_rate"), lr, reduce="mean")

    def after_gradient_based_update(self, *, timesteps: dict | None) -> None:  # noqa: B027 (optional hook)
        """Hook run after all minibatches of an update (e.g. PPO adapts its KL coefficient)."""

    def _iter_minibatches(
        self, batch: dict, num_epochs: int, minibatch_size: int | None, shuffle: bool
    ) -> Iterator[dict]:
        """Epochs × minibatches of rows; each epoch covers every row of every module once.

        A module's rows are split into `ceil(rows / minibatch_rows)` near-equal parts
        (`np.array_split`), so minibatches hold `minibatch_size` rows or slightly fewer, never a
        tiny remainder. Rows of a stateful module are whole sequences (`minibatch_size //
        max_seq_len` of them per minibatch).
        """
        rows = {mid: _num_rows(columns) for mid, columns in batch.items()}
        per_minibatch = {
            mid: rows[mid] if minibatch_size is None else max(1, minibatch_size // _row_len(columns))
            for mid, columns in batch.items()
        }
        counts = self._minibatch_counts({mid: max(1, -(-n // per_minibatch[mid])) for mid, n in rows.items()})
        bounds = {mid: _split_bounds(n, counts[mid]) for mid, n in rows.items()}
        rng = self._shuffle_rng()
        for _ in range(num_epochs):
            # One gather per column and epoch; each minibatch is then a slice (a view, no copy).
            epoch = (
                {mid: self._take_rows(batch[mid], rng.permutation(n)) for mid, n in rows.items()}
                if shuffle
                else batch
            )
            for i in range(max(counts.values(), default=0)):
                yield {mid: _slice(epoch[mid], *bounds[mid][i]) for mid in epoch if i < len(bounds[mid])}

    def _minibatch_counts(self, counts: dict[ModuleID, int]) -> dict[ModuleID, int]:
        """Minibatches per epoch for each module; distributed learners override this so that every
        rank takes part in the same number of gradient exchanges."""
        return counts

    def _shuffle_rng(self) -> np.random.Generator:
        """Shuffling randomness: with `config.seed`, a function of (seed, update number), so a
        restored learner shuffles exactly as the original would have."""
        seed = getattr(self.config, "seed", None)
        return np.random.default_rng(None if seed is None else [seed, self._weights_seq_no])

    @abc.abstractmethod
    def _update_on_minibatch(self, minibatch: dict, index: int, *, warn: bool) -> None:
        """Forward, loss, gradients, clipping, finite check and optimizer step on one minibatch."""

    @abc.abstractmethod
    def _to_tensors(self, columns: dict) -> dict:
        """One module's numpy columns as framework tensors on this learner's device."""

    @abc.abstractmethod
    def _take_rows(self, columns: dict, rows: np.ndarray) -> dict:
        """The given rows of every column (leaf-wise for nested columns)."""

    @abc.abstractmethod
    def _set_optimizer_lr(self, optimizer: Any, lr: float) -> None:
        """Sets the learning rate of every parameter group of `optimizer`."""

    # Weights and state.

    @property
    def weights_seq_no(self) -> int:
        """How many updates produced the current weights (runners ignore older weights)."""
        return self._weights_seq_no

    def get_weights(self, inference_only: bool = True) -> dict[ModuleID, dict]:
        """`{module_id: {name: numpy array}}`; `inference_only` leaves out what runners don't need."""
        return self.module.get_state(inference_only=inference_only)

    def set_weights(self, weights: dict[ModuleID, dict]) -> None:
        """Loads `{module_id: {name: array}}` (modules not named keep their weights)."""
        self.module.set_state(weights)

    def get_state(
        self, components: str | list[str] | None = None, not_components: str | list[str] | None = None
    ) -> StateDict:
        """Plain data: `rl_module` (numpy weights), `optimizers`, `weights_seq_no`, `timestep`, ...

        `components` / `not_components` select top-level keys.
        """
        state = {
            "rl_module": self.module.get_state(),
            "optimizers": {
                f"{mid}/{name}": self._get_optimizer_state(slot.optimizer)
                for (mid, name), slot in self._optimizer_slots.items()
            },
            "weights_seq_no": self._weights_seq_no,
            "timestep": self._timestep,
            "num_non_finite_updates": self._num_non_finite_updates,
            "learner_connector": self._learner_connector.get_state(),
        }
        keep = [components] if isinstance(components, str) else components
        drop = [not_components] if isinstance(not_components, str) else (not_components or [])
        return {
            key: value for key, value in state.items() if (keep is None or key in keep) and key not in drop
        }

    def set_state(self, state: StateDict) -> None:
        """Restores what `get_state` returned (keys missing from `state` are left as they are)."""
        if "rl_module" in state:
            self.module.set_state(state["rl_module"])
        for key, optimizer_state in state.get("optimizers", {}).items():
            mid, name = key.rsplit("/", 1)
            self._set_optimizer_state(self._optimizer_slots[(mid, name)].optimizer, optimizer_state)
        self._weights_seq_no = state.get("weights_seq_no", self._weights_seq_no)
        self._timestep = state.get("timestep", self._timestep)
        self._num_non_finite_updates = state.get("num_non_finite_updates", self._num_non_finite_updates)
        if "learner_connector" in state:
            self._learner_connector.set_state(state["learner_connector"])

    # Checkpoints: the module in its own sub-directory; optimizers, counters and pipeline state here.

    ctor_args_may_pickle = True

    def get_checkpointable_components(self) -> list[tuple[str, Checkpointable]]:
        return [("rl_module", self.module)]

    def get_ctor_args_and_kwargs(self) -> tuple[tuple, dict[str, Any]]:
        return (), {"config": self.config, "module_spec": self._module_spec, "spaces": self._spaces}

    @classmethod
    def _from_metadata(cls, node: Node, allowed: Allowed) -> Self:
        """The learner, built (module, optimizers, pipeline) and ready for its state."""
        learner = super()._from_metadata(node, allowed)
        learner.build()
        return learner

    @abc.abstractmethod
    def _get_optimizer_state(self, optimizer: Any) -> dict:
        """The optimizer's state as plain data with numpy arrays."""

    @abc.abstractmethod
    def _set_optimizer_state(self, optimizer: Any, state: dict) -> None:
        """Restores a state from `_get_optimizer_state`."""


def _num_rows(columns: dict) -> int:
    data = next(iter(columns.values()))
    while isinstance(data, dict):
        data = next(iter(data.values()))
    return len(data)


def _split_bounds(n: int, parts: int) -> list[tuple[int, int]]:
    """`(start, stop)` of `parts` near-equal consecutive parts of `n` rows (the larger ones first,
    as `np.array_split` splits)."""
    size, extra = divmod(n, parts)
    stops = np.cumsum([size + (i < extra) for i in range(parts)]).tolist()
    return list(zip([0, *stops[:-1]], stops, strict=True))


def _slice(data: Any, start: int, stop: int) -> Any:
    """Rows `start:stop` of every column (leaf-wise for nested columns)."""
    if isinstance(data, dict):
        return {key: _slice(value, start, stop) for key, value in data.items()}
    return data[start:stop]


def _row_len(columns: dict) -> int:
    """Timesteps per row: 1, or `max_seq_len` for a stateful module's sequence rows."""
    return columns[Columns.LOSS_MASK].shape[1] if Columns.SEQ_LENS in columns else 1
