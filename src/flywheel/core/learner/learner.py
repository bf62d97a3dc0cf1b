"""`Learner`: turns sampled episodes (or a ready train batch) into gradient updates of a `MultiRLModule`.

The loop that drives it, once per training iteration::

    results = learner.update(episodes=episodes, timesteps={"num_env_steps_sampled_lifetime": t})
    # inside: batch = learner_pipeline(episodes)            -> {module_id: {column: array}}
    #         for epoch in range(num_epochs):
    #             for minibatch in shuffled minibatches of batch:
    #                 fwd_out = module.forward_train(minibatch)
    #                 losses = compute_losses(fwd_out=fwd_out, batch=minibatch)
    #                 grads = compute_gradients(losses)          # backward
    #                 grads = postprocess_gradients(grads)       # clipping
    #                 apply_gradients(grads)                     # finite? -> optimizer steps
    #         weights_seq_no += 1
    runners.set_state({"rl_module": learner.get_weights(), "weights_seq_no": learner.weights_seq_no})

Each step of a minibatch is a public method (RLlib's names), so a user can drive a learner by
hand with the very methods `update` uses. Algorithms subclass a framework learner
(`TorchLearner`) and implement `compute_loss_for_module`; the framework learner implements the
gradient methods.
"""

from __future__ import annotations

import abc
import copy
import functools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Self

import numpy as np

from flywheel.checkpoints.checkpointable import Checkpointable
from flywheel.checkpoints.components import COMPONENT_RL_MODULE
from flywheel.connectors.learner.add_one_ts_and_truncate import remove_bootstrap_timesteps
from flywheel.core.learner.minibatches import iter_minibatches, num_steps
from flywheel.core.learner.module_changes import ModuleChanges
from flywheel.core.learner.optimizers import DEFAULT_OPTIMIZER, OptimizerRegistry
from flywheel.core.learner.schedules import Scheduler
from flywheel.core.rl_module.apis import SelfSupervisedLossAPI
from flywheel.core.rl_module.multi_rl_module import MultiRLModule
from flywheel.core.rl_module.rl_module import RLModule
from flywheel.core.rl_module.spec import MultiRLModuleSpec, RLModuleSpec
from flywheel.episodes.transition_episodes import num_env_steps
from flywheel.errors import ConfigError, LearnerError
from flywheel.metrics.keys import NUM_ENV_STEPS_TRAINED, NUM_ENV_STEPS_TRAINED_LIFETIME, WEIGHTS_SEQ_NO
from flywheel.metrics.metrics_logger import MetricsLogger
from flywheel.typing import ALL_MODULES, DEFAULT_MODULE_ID, ModuleID, StateDict

if TYPE_CHECKING:
    from flywheel.algorithms.algorithm_config import AlgorithmConfig
    from flywheel.checkpoints.registry import Allowed
    from flywheel.checkpoints.tree import Node
    from flywheel.connectors.pipeline import ConnectorPipelineV2

__all__ = ["DEFAULT_OPTIMIZER", "Learner"]

TIMESTEP_KEY = "num_env_steps_sampled_lifetime"
_GRAD_CLIP_BY = ("value", "norm", "global_norm")
_NOT_BUILT = "{what} was used before build(). Fix: call learner.build() first."


class Learner(OptimizerRegistry, ModuleChanges, Checkpointable, abc.ABC):
    """Owns a `MultiRLModule`, its optimizers and the learner connector pipeline.

    Args:
        config: The algorithm config (settings are read as attributes: `lr`, `num_epochs`, ...).
        module_spec: What to build; default `config.get_rl_module_spec(spaces=spaces)`. A single
            `RLModuleSpec` becomes `{"default_policy": module}`.
        module: A module to train as it is (instead of building one from a spec).
        spaces: `(observation_space, action_space)` after the env-to-module pipeline, used when
            `module_spec` is missing or has no spaces.
    """

    config: AlgorithmConfig
    """The algorithm's config; an algorithm's learner declares its own class (`config: PPOConfig`)."""

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

    TOTAL_LOSS_KEY = "total_loss"

    def __init__(
        self,
        *,
        config: AlgorithmConfig,
        module_spec: RLModuleSpec | MultiRLModuleSpec | None = None,
        module: RLModule | None = None,
        spaces: tuple | None = None,
    ) -> None:
        super().__init__()
        self.config = config
        self._module_spec = module_spec
        self._module_obj = module
        self._spaces = spaces
        self._module: MultiRLModule | None = None
        self.metrics = MetricsLogger()
        self._learner_connector: ConnectorPipelineV2 | None = None
        self._weights_seq_no = 0
        self._data_iterator: Any = None  # the offline data this learner reads (`update(data_iterators=...)`)
        self._num_non_finite_updates = 0
        self._non_finite_before_update = 0  # count when the current update started (warn once per update)
        self._minibatch_index = 0
        self._minibatch_values: dict[tuple, list] | None = None  # per-minibatch values, during `update`

    # Building.

    def build(self) -> None:
        """Builds the module, the learner pipeline and the optimizers (a second call does nothing)."""
        if self._module is not None:
            return
        if self.config.grad_clip_by not in _GRAD_CLIP_BY:
            raise ConfigError(
                f"grad_clip_by must be one of {list(_GRAD_CLIP_BY)}, got {self.config.grad_clip_by!r}. "
                "Fix: config.training(grad_clip_by='global_norm')."
            )
        self._module = self._build_module()
        self._learner_connector = self._build_learner_connector()
        self.configure_optimizers()

    def _build_learner_connector(self) -> ConnectorPipelineV2:
        spaces = (None, None)
        if DEFAULT_MODULE_ID in self.module:
            default = self.module[DEFAULT_MODULE_ID]
            spaces = (default.observation_space, default.action_space)
        return self.config.build_learner_connector(*spaces, device=self.device)

    def reset_config(self, config: AlgorithmConfig) -> None:
        """Makes `config` the learner's config, keeping module, optimizers and state: optimizers whose
        learning rate (or schedule) is the old `config.lr` follow the new `config.lr` from the next update,
        and the learner pipeline is rebuilt (with its state) from `config` (e.g. a new `gamma`). Only the
        `reconfigurable_settings` may differ from the current config (`Algorithm.reset_config` checks)."""
        old_lr = None if self.config.lr is None else Scheduler(self.config.lr, name="lr")  # SAC: None
        self.config = config
        for slot in self.optimizer_slots():
            if old_lr is not None and slot.lr_scheduler is not None and slot.lr_scheduler == old_lr:
                slot.lr_scheduler = Scheduler(config.lr, name="lr")
        state = self._built_connector.get_state()
        self._learner_connector = self._build_learner_connector()
        self._learner_connector.set_state(state)

    def _build_module(self) -> MultiRLModule:
        if self._module_obj is not None:
            module = self._module_obj
            return module if isinstance(module, MultiRLModule) else MultiRLModule({DEFAULT_MODULE_ID: module})
        spec = self._module_spec
        if spec is None:
            spec = self.config.get_rl_module_spec(spaces=self._spaces)
        if isinstance(spec, MultiRLModuleSpec):
            return spec.build()
        if self._spaces is not None and spec.observation_space is None:
            spec = copy.copy(spec)
            spec.observation_space, spec.action_space = self._spaces
        return MultiRLModule({DEFAULT_MODULE_ID: spec.build()})

    def configure_optimizers(self) -> None:
        """Calls `configure_optimizers_for_module` for every module that trains (once, at build)."""
        for module_id in self.module:
            if self.should_module_be_updated(module_id):
                self.configure_optimizers_for_module(module_id=module_id, config=self.config)

    @abc.abstractmethod
    def configure_optimizers_for_module(
        self, module_id: ModuleID, config: AlgorithmConfig | None = None
    ) -> None:
        """Creates the optimizer(s) of one module and registers them with `register_optimizer`."""

    def shutdown(self) -> None:  # noqa: B027 (optional hook)
        """Releases what the learner holds (nothing by default)."""

    @property
    def module(self) -> MultiRLModule:
        """The `MultiRLModule` this learner trains (there once `build()` ran)."""
        if self._module is None:
            raise LearnerError(_NOT_BUILT.format(what="learner.module"))
        return self._module

    @property
    def learner_connector(self) -> ConnectorPipelineV2 | None:
        """The learner connector pipeline (episodes → train batch); None before `build()`."""
        return self._learner_connector

    @property
    def _built_connector(self) -> ConnectorPipelineV2:
        if self._learner_connector is None:
            raise LearnerError(_NOT_BUILT.format(what="The learner connector pipeline"))
        return self._learner_connector

    @property
    def device(self) -> Any:
        """Where the module trains and the learner pipeline puts the batch (framework learners set it)."""
        return None

    @property
    def distributed(self) -> bool:
        """Whether this learner is one of several data-parallel learners."""
        return self.config.num_learners > 1

    @classmethod
    def rl_module_required_apis(cls) -> list[type]:
        """The APIs (e.g. `ValueFunctionAPI`) a module must implement for this learner's loss."""
        return []

    def rl_module_is_compatible(self, module: RLModule) -> bool:
        """Whether `module` implements every API of `rl_module_required_apis()`."""
        return all(isinstance(module, api) for api in self.rl_module_required_apis())

    def should_module_be_updated(self, module_id: ModuleID, multi_agent_batch: Any = None) -> bool:
        """Whether `module_id` trains (`config.policies_to_train`: None = all, ids, or a callable
        `(module_id, batch) -> bool`)."""
        to_train = getattr(self.config, "policies_to_train", None)
        if to_train is None:
            return True
        if callable(to_train):
            return bool(to_train(module_id, multi_agent_batch))
        return module_id in to_train

    # The loss (algorithms implement `compute_loss_for_module`).

    def compute_losses(
        self, *, fwd_out: dict[ModuleID, dict], batch: dict[ModuleID, dict]
    ) -> dict[ModuleID, Any]:
        """`{module_id: loss}` for every module in `fwd_out`: `compute_loss_for_module`, or the module's own
        `compute_self_supervised_loss` for a `SelfSupervisedLossAPI` module; override for losses that
        span modules."""
        losses = {}
        for module_id, module_out in fwd_out.items():
            module = self.module[module_id]
            loss_fn = self.compute_loss_for_module
            if isinstance(module, SelfSupervisedLossAPI):
                loss_fn = functools.partial(module.compute_self_supervised_loss, learner=self)
            losses[module_id] = loss_fn(
                module_id=module_id, config=self.config, batch=batch[module_id], fwd_out=module_out
            )
        return losses

    @abc.abstractmethod
    def compute_loss_for_module(
        self, *, module_id: ModuleID, config: AlgorithmConfig, batch: dict, fwd_out: dict
    ) -> Any:
        """Returns the scalar loss of one module on one minibatch (and logs its terms to `self.metrics`)."""

    # Gradients (framework learners implement these).

    @abc.abstractmethod
    def compute_gradients(self, loss_per_module: dict[ModuleID, Any], **kwargs: object) -> dict:
        """Backpropagates the summed losses; returns `{param_ref: gradient}` of the optimizers of the
        modules in `loss_per_module` (every optimizer for an `ALL_MODULES` key)."""

    def postprocess_gradients(self, gradients_dict: dict) -> dict:
        """Runs `postprocess_gradients_for_module` on each module's share of `gradients_dict` (optimizers
        registered under `ALL_MODULES` form their own share); returns the merged result. With the
        optimizers of one module only, the whole dict is that module's share."""
        by_module = self.slots_by_module()
        if len(by_module) == 1:
            module_id = next(iter(by_module))
            return self.postprocess_gradients_for_module(
                module_id=module_id, config=self.config, module_gradients_dict=gradients_dict
            )
        processed = {}
        for module_id, slots in by_module.items():
            module_grads = {}
            for slot in slots:
                module_grads.update(self.filter_param_dict_for_optimizer(gradients_dict, slot.optimizer))
            if module_grads:
                processed.update(
                    self.postprocess_gradients_for_module(
                        module_id=module_id, config=self.config, module_gradients_dict=module_grads
                    )
                )
        return processed

    @abc.abstractmethod
    def postprocess_gradients_for_module(
        self, *, module_id: ModuleID, config: AlgorithmConfig | None = None, module_gradients_dict: dict
    ) -> dict:
        """Clips one module's gradients per optimizer (`config.grad_clip` by `config.grad_clip_by`)."""

    @abc.abstractmethod
    def apply_gradients(self, gradients_dict: dict) -> None:
        """Sets the gradients and steps the optimizers they belong to."""

    @abc.abstractmethod
    def get_parameters(self, module: Any) -> list:
        """The parameters of `module` (torch: `list(module.parameters())`)."""

    # Update.

    def update(
        self,
        batch: dict[ModuleID, dict] | None = None,
        *,
        episodes: Sequence | None = None,
        data_iterators: list | None = None,
        timesteps: dict | None = None,
        num_epochs: int | None = None,
        minibatch_size: int | None = None,
        shuffle_batch_per_epoch: bool | None = None,
    ) -> dict:
        """Runs `num_epochs` passes of minibatch SGD over a train batch: the learner pipeline's output
        for `episodes`, or `batch` (`{module_id: {column: array}}`) as given. With `data_iterators`
        (offline data, e.g. `flywheel.offline.ray_data.DataShard`s), the episodes are the next ones the
        learner reads from the first iterator it was ever given (as in RLlib, it keeps reading that one).

        `num_epochs`, `minibatch_size` and `shuffle_batch_per_epoch` default to the config's settings;
        `timesteps["num_env_steps_sampled_lifetime"]` drives the schedules (lr, coefficients).
        Returns plain numbers: `{module_id: {...}, "__all_modules__": {...}}`.
        """
        if self._module is None:
            raise LearnerError("Learner.update() was called before build(). Fix: call learner.build() first.")
        if data_iterators is not None:
            self._data_iterator = self._data_iterator or data_iterators[0]
            episodes = self._data_iterator.next_episodes()
        if (batch is None) == (episodes is None):
            raise LearnerError(
                f"Learner.update() takes a batch or episodes, got {'both' if batch is not None else 'neither'}. "
                "Fix: pass episodes=[...] (run through the learner pipeline) or batch={module_id: columns}."
            )
        config = self.config
        epochs: int = config.num_epochs if num_epochs is None else num_epochs
        minibatch_size = config.minibatch_size if minibatch_size is None else minibatch_size
        shuffle = (
            config.shuffle_batch_per_epoch if shuffle_batch_per_epoch is None else shuffle_batch_per_epoch
        ) and epochs > 1  # as RLlib: a single pass keeps the sampled order
        self._timestep = int((timesteps or {}).get(TIMESTEP_KEY, self._timestep))
        self.before_gradient_based_update(timesteps=timesteps)
        train_batch = self.make_train_batch(batch, episodes)
        self._non_finite_before_update = self._num_non_finite_updates
        minibatches = iter_minibatches(
            train_batch, epochs, minibatch_size, rng=self._shuffle_rng() if shuffle else None,
            take_rows=self._take_rows, minibatch_counts=self._minibatch_counts,
        )  # fmt: skip
        self._minibatch_values = {}
        try:
            for self._minibatch_index, minibatch in enumerate(minibatches):
                self.update_on_minibatch(minibatch)
            for key, values in self._minibatch_values.items():
                self.metrics.log_value(key, self._mean(values), reduce="mean")
        finally:
            self._minibatch_values = None
        for module_id, columns in train_batch.items():  # every epoch covers every row once
            steps = num_steps(columns) * epochs
            self.metrics.log_value((module_id, "num_module_steps_trained"), steps, reduce="sum")
        self._weights_seq_no += 1
        self.after_gradient_based_update(timesteps=timesteps)
        if episodes is not None:
            env_steps = num_env_steps(episodes)
        else:
            env_steps = sum(map(num_steps, train_batch.values()))
        return self._reduce_metrics(env_steps * epochs, self._non_finite_before_update)

    def _reduce_metrics(self, num_env_steps_trained: int, non_finite_before: int) -> dict:
        """Logs the update's counters under `__all_modules__`, then reduces: the result holds them, and
        another logger can `aggregate([result])` it exactly."""
        m = self.metrics
        m.log_value((ALL_MODULES, NUM_ENV_STEPS_TRAINED), num_env_steps_trained, reduce="sum")
        m.log_value(
            (ALL_MODULES, NUM_ENV_STEPS_TRAINED_LIFETIME),
            num_env_steps_trained,
            reduce="lifetime_sum",
            with_throughput=True,
        )
        non_finite = self._num_non_finite_updates - non_finite_before
        m.log_value((ALL_MODULES, "num_non_finite_updates"), non_finite, reduce="sum")
        m.log_value((ALL_MODULES, WEIGHTS_SEQ_NO), self._weights_seq_no, reduce="max", window=1)
        return m.reduce()

    def make_train_batch(self, batch: dict | None, episodes: Sequence | None) -> dict[ModuleID, dict]:
        """The tensors of the modules that train: the learner pipeline's output for `episodes`, or
        `batch`. `update` calls it once per update; a subclass may override it to keep or extend
        train batches (IMPALA and APPO keep them for their repeated uses)."""
        if batch is None:
            assert episodes is not None  # update() took exactly one of them
            shared_data: dict = {}
            try:
                batch = self._built_connector(
                    rl_module=self.module,
                    batch={},
                    episodes=episodes,
                    shared_data=shared_data,
                    metrics=self.metrics,
                )
            finally:  # the caller gets its episodes back as sampled
                remove_bootstrap_timesteps(shared_data)
        unknown = [module_id for module_id in batch if module_id not in self.module]
        if unknown:
            raise LearnerError(
                f"The train batch has module ids {unknown} that this learner does not have (it has "
                f"{list(self.module.keys())}). Fix: key the batch by the learner's module ids, or add the "
                "modules first with learner.add_module(...)."
            )
        return {
            mid: self._to_tensors(cols) for mid, cols in batch.items() if self.should_module_be_updated(mid)
        }

    def update_on_minibatch(self, minibatch: dict[ModuleID, dict]) -> None:
        """One gradient step, through the same public methods a user drives a learner with; `update`
        calls it per minibatch (a subclass may reshape the minibatch first, as IMPALA does)."""
        fwd_out = self.module.forward_train(minibatch)
        loss_per_module = self.compute_losses(fwd_out=fwd_out, batch=minibatch)
        for module_id, loss in loss_per_module.items():
            self.log_minibatch_value((module_id, self.TOTAL_LOSS_KEY), loss.detach())
        gradients = self.compute_gradients(loss_per_module)
        self.apply_gradients(self.postprocess_gradients(gradients))

    def log_minibatch_value(self, key: tuple, value: object) -> None:
        """Logs a per-minibatch value: inside `update` the values are kept and their mean over the
        update's minibatches is logged once at its end (what logging each would give, for a fraction
        of the cost); outside it, right away."""
        if self._minibatch_values is None:
            self.metrics.log_value(key, value, reduce="mean")
        else:
            self._minibatch_values.setdefault(key, []).append(value)

    @staticmethod
    def _mean(values: list) -> Any:
        """The mean of per-minibatch values (framework learners average their tensors in one op)."""
        return sum(values) / len(values)

    def before_gradient_based_update(self, *, timesteps: dict | None) -> None:
        """Sets every scheduled optimizer's learning rate at the current timestep and logs every
        optimizer's learning rate."""
        for slot in self.optimizer_slots():
            if slot.lr_scheduler is not None:
                self._set_optimizer_lr(slot.optimizer, slot.lr_scheduler.value(self._timestep))
            lr = self._get_optimizer_lr(slot.optimizer)
            self.metrics.log_value((slot.module_id, f"{slot.name}_learning_rate"), lr, reduce="mean")

    def after_gradient_based_update(self, *, timesteps: dict | None) -> None:  # noqa: B027 (optional hook)
        """Hook run after all minibatches of an update (e.g. PPO adapts its KL coefficient)."""

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
    def _to_tensors(self, columns: dict) -> dict:
        """One module's numpy columns as framework tensors on this learner's device."""

    @abc.abstractmethod
    def _take_rows(self, columns: dict, rows: np.ndarray) -> dict:
        """The given rows of every column (leaf-wise for nested columns)."""

    # Weights and state.

    @property
    def timestep(self) -> int:
        """The lifetime env steps sampled as of the latest update (its
        `timesteps["num_env_steps_sampled_lifetime"]`): where schedules read their values."""
        return self._timestep

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
        """Plain data: `rl_module` (numpy weights), `optimizer`, `weights_seq_no`, `timestep`, ...

        `optimizer` maps `"<module_id>_<optimizer_name>"` to `{"module_id", "state"}` (RLlib's layout).
        `components` / `not_components` select top-level keys.
        """
        state = {
            "rl_module": self.module.get_state(),
            "optimizer": self.get_optimizer_states(),
            "weights_seq_no": self._weights_seq_no,
            "timestep": self._timestep,
            "num_non_finite_updates": self._num_non_finite_updates,
            "learner_connector": self._built_connector.get_state(),
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
        if "optimizer" in state:
            self.set_optimizer_states(state["optimizer"], self._configure_missing_optimizers)
        self._weights_seq_no = state.get("weights_seq_no", self._weights_seq_no)
        self._timestep = state.get("timestep", self._timestep)
        self._num_non_finite_updates = state.get("num_non_finite_updates", self._num_non_finite_updates)
        if "learner_connector" in state:
            self._built_connector.set_state(state["learner_connector"])

    def _configure_missing_optimizers(self, module_id: ModuleID) -> bool:
        """An optimizer state names a module whose optimizers are not set up yet: sets them up if the
        module is here (True), else False."""
        if module_id not in self.module:
            return False
        self.configure_optimizers_for_module(module_id=module_id, config=self.config)
        return True

    # Checkpoints: the module in its own sub-directory; optimizers, counters and pipeline state here.

    ctor_args_may_pickle = True

    def get_checkpointable_components(self) -> list[tuple[str, Checkpointable]]:
        return [(COMPONENT_RL_MODULE, self.module)]

    def get_ctor_args_and_kwargs(self) -> tuple[tuple, dict[str, Any]]:
        return (), {"config": self.config, "module_spec": self._module_spec, "spaces": self._spaces}

    @classmethod
    def _from_metadata(cls, node: Node, allowed: Allowed) -> Self:
        """The learner, built (module, optimizers, pipeline) and ready for its state."""
        learner = super()._from_metadata(node, allowed)
        learner.build()
        return learner
