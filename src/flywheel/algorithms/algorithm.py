"""`Algorithm`: wires env runners, learners and metrics together.

The driving loop::

    algo = config.build_algo()
    while True:
        result = algo.train()        # training_step() until the iteration's minimums are met
        if result["env_runners"]["episode_return_mean"] >= 475:
            break
    algo.stop()

Subclasses implement `training_step()` (PPO: sample → learner update → weight sync).

Checkpoints (`save_to_path`, `Algorithm.from_checkpoint`) hold the learner group and the local env
runner as components, and in the algorithm's own state the iteration, the metrics (lifetime
counters, episode windows) and the random number generators.
"""

from __future__ import annotations

import contextlib
import os
import random
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Self

import cloudpickle
import numpy as np
import torch

from flywheel.algorithms import evaluation
from flywheel.algorithms.config_builders import runner_class, single_agent_learner_spec
from flywheel.algorithms.saved_config import saved_config
from flywheel.algorithms.trainable_api import TrainableAPI
from flywheel.checkpoints.checkpointable import Checkpointable, loading, select
from flywheel.checkpoints.components import COMPONENT_ENV_RUNNER, COMPONENT_LEARNER_GROUP
from flywheel.checkpoints.registry import Allowed
from flywheel.checkpoints.tree import read_tree
from flywheel.core.learner.learner_group import LearnerGroup, merge_results
from flywheel.core.rl_module.spec import RLModuleSpec
from flywheel.env_runners.group import EnvRunnerGroup
from flywheel.errors import StoppedError
from flywheel.metrics import MetricsLogger, keys
from flywheel.metrics.keys import ENV_RUNNER_RESULTS, LEARNER_RESULTS, TIMERS
from flywheel.metrics.reduced import without_item_series
from flywheel.seeding import seed_process
from flywheel.typing import ALL_MODULES, DEFAULT_MODULE_ID

if TYPE_CHECKING:
    from flywheel.algorithms.algorithm_config import AlgorithmConfig
    from flywheel.typing import EpisodeType

EPISODE_KEYS = (
    keys.EPISODE_RETURN_MEAN,
    keys.EPISODE_RETURN_MIN,
    keys.EPISODE_RETURN_MAX,
    keys.EPISODE_LEN_MEAN,
    keys.EPISODE_LEN_MIN,
    keys.EPISODE_LEN_MAX,
)


class Algorithm(TrainableAPI, Checkpointable):
    """Base class of every algorithm (PPO, ...): `train()`, `evaluate()`, `get_module()`, `stop()`."""

    ctor_args_may_pickle = True

    config: AlgorithmConfig
    """The validated, frozen config; an algorithm declares its own class (`config: PPOConfig`)."""

    reconfigurable_settings: ClassVar[frozenset[str]] = frozenset(
        {"min_time_s_per_iteration", "min_sample_timesteps_per_iteration"}
    )
    """Settings `reset_config` changes in place, with those of the learner class (e.g. `lr`)."""

    def __init__(self, config: AlgorithmConfig, **kwargs: Any) -> None:
        if not config.is_frozen:
            config = config.copy()
            config.validate()
            config.freeze()
        self.config = config
        self._stopped = False
        self.metrics = MetricsLogger(root=True)
        self.iteration = 0
        self._time_total_s = 0.0
        self.setup(config)

    # --------------------------------------------------------------- set up

    def setup(self, config: AlgorithmConfig) -> None:
        """Builds what the algorithm runs on. The constructor calls it once, after setting `self.config`
        (validated and frozen; `config` is the same object), `self.metrics` and the counters, as RLlib's
        Algorithm (a Tune Trainable) calls `setup(config)` from its constructor.

        It builds, from `self.config`: the callbacks, the seeds, the env runners, the learners (whose
        weights it syncs to the runners) and the evaluation runners, then calls `on_algorithm_init`.
        An override calls `super().setup(config)`: before it, nothing is built yet; after it, the
        runners and learners exist (e.g. to hand them a shared actor), and attributes it sets are there
        for `training_step`. IMPALA's queue and the replay buffer of DQN and SAC are built that way.
        `Algorithm.from_checkpoint` builds through the constructor too: an override also runs for a
        restored algorithm, before the checkpoint's state is set."""
        config = self.config  # the constructor's; RLlib's setup builds from self.config too
        self.callbacks = config.build_callbacks()
        self._seed_everything()
        self.env_runner_group = EnvRunnerGroup(config=config, runner_class=runner_class(config))
        runner = self.env_runner_group.local_env_runner
        spaces = (runner.env_to_module.observation_space, runner.env_to_module.action_space)
        module_spec = (
            runner.module_spec if config.is_multi_agent else single_agent_learner_spec(config, spaces)
        )
        self.learner_group = LearnerGroup(config=config, module_spec=module_spec, spaces=spaces)
        self.sync_runner_weights(force=True)
        self.eval_env_runner_group = self._build_evaluation_group()
        self._aggregator_actor_manager = None  # RLlib's attribute; flywheel starts no aggregator actors
        self.callbacks.on_algorithm_init(algorithm=self, metrics_logger=self.metrics)

    def _seed_everything(self) -> None:
        if self.config.seed is not None:
            seed_process(self.config.seed)

    def _build_evaluation_group(self) -> EnvRunnerGroup | None:
        return evaluation.build_evaluation_group(self.config) if self.config.evaluation_interval else None

    # ------------------------------------------------------------- training

    @property
    def env_runner(self):
        """The local env runner."""
        return self.env_runner_group.local_env_runner

    def training_step(self) -> None:
        """One round of sampling and learning; logs into `self.metrics`."""
        raise NotImplementedError(f"{type(self).__name__} must implement training_step().")

    def train(self) -> dict[str, Any]:
        """Runs `training_step()` until `min_time_s_per_iteration` and `min_sample_timesteps_per_iteration`
        are met, then evaluates when `evaluation_interval` says so (with
        `evaluation_parallel_to_training`: while training, on the weights from before it); returns the
        result dict (API.md §2). An iteration that raises changes no counter, metric or learner
        (`all_or_nothing`)."""
        self._check_not_stopped("train")
        start = time.perf_counter()
        interval = self.config.evaluation_interval
        evaluate_now = bool(interval) and (self.iteration + 1) % interval == 0
        parallel = evaluate_now and self.config.evaluation_parallel_to_training
        evaluated = None
        with self.all_or_nothing():
            if parallel:
                evaluated = evaluation.alongside(self, self._train_until_minimums)
            else:
                self._train_until_minimums()
        self.iteration += 1
        if self.env_runner_group.num_remote_env_runners():
            counts = self.env_runner_group.fault_tolerance_metrics()
            self.metrics.log_dict(counts, key=keys.FAULT_TOLERANCE_STATS, window=1)
        if evaluate_now and not parallel:
            evaluated = self.evaluate()
        result = self.metrics.reduce()
        trained = result.get(LEARNER_RESULTS, {}).get(ALL_MODULES, {})
        for name in (
            keys.NUM_ENV_STEPS_TRAINED_LIFETIME,
            f"{keys.NUM_ENV_STEPS_TRAINED_LIFETIME}_throughput",
        ):
            if name in trained:  # also at the top level, where flywheel has always reported it
                result[name] = trained[name]
        for key in EPISODE_KEYS:  # present (NaN) before the first episode ends, as API.md §2 lists them
            result.setdefault(ENV_RUNNER_RESULTS, {}).setdefault(key, float("nan"))
        time_this_iter = time.perf_counter() - start
        self._time_total_s += time_this_iter
        if evaluated is not None:
            result[keys.EVALUATION_RESULTS] = evaluated
        result.update(
            training_iteration=self.iteration,
            time_this_iter_s=time_this_iter,
            time_total_s=self._time_total_s,
            **{keys.NUM_ENV_STEPS_SAMPLED_LIFETIME: self._lifetime_env_steps()},
        )
        self.callbacks.on_train_result(algorithm=self, metrics_logger=self.metrics, result=result)
        return result

    def _train_until_minimums(self) -> None:
        """`training_step()` until the iteration's minimum time and env steps are met; logs the time
        under `timers/training_iteration`."""
        start = time.perf_counter()
        steps_before = self._lifetime_env_steps()
        with self.metrics.log_time((TIMERS, keys.TRAINING_ITERATION_TIMER), reduce="mean"):
            while True:
                self.training_step()
                elapsed = time.perf_counter() - start
                steps = self._lifetime_env_steps() - steps_before
                if (
                    elapsed >= self.config.min_time_s_per_iteration
                    and steps >= self.config.min_sample_timesteps_per_iteration
                ):
                    break

    @contextlib.contextmanager
    def all_or_nothing(self) -> Iterator[None]:
        """An iteration that raises (a learner died, no runner can sample, Ctrl-C) moves no counter or
        metric, and the learners return to their state from before it (`LearnerGroup.atomic`).
        `train()` runs each iteration in it; an algorithm that keeps state of its own across
        `training_step` calls extends it (IMPALA: its queue of train batches)."""
        metrics = self.metrics.get_state()
        with self.learner_group.atomic():
            try:
                yield
            except BaseException:
                self.metrics.set_state(metrics)
                raise

    def _lifetime_env_steps(self) -> int:
        return int(self.metrics.peek((ENV_RUNNER_RESULTS, keys.NUM_ENV_STEPS_SAMPLED_LIFETIME), default=0))

    # ------------------------------------------------ the algorithm-author surface

    def sample_episodes(self, **kwargs: Any) -> list:
        """Episodes from the env runners (`env_runner_group.sample(**kwargs)`), timed under
        `timers/env_runner_sampling_timer`, with the runners' metrics merged exactly under
        `env_runners`. RLlib's spelling does the same::

            with self.metrics.log_time((TIMERS, ENV_RUNNER_SAMPLING_TIMER)):
                episodes = self.env_runner_group.sample(**kwargs)
            self.metrics.aggregate(self.env_runner_group.get_metrics_states(), key=ENV_RUNNER_RESULTS)
        """
        with self.metrics.log_time((TIMERS, keys.ENV_RUNNER_SAMPLING_TIMER), reduce="mean"):
            episodes = self.env_runner_group.sample(**kwargs)
        self.metrics.aggregate(self.env_runner_group.get_metrics_states(), key=ENV_RUNNER_RESULTS)
        return episodes

    def learner_timesteps(self) -> dict[str, int]:
        """The `timesteps` a learner update takes (its schedules and target-network updates read
        them): the lifetime env steps sampled and trained so far."""
        trained = self.metrics.peek(
            (LEARNER_RESULTS, ALL_MODULES, keys.NUM_ENV_STEPS_TRAINED_LIFETIME), default=0
        )
        return {
            keys.NUM_ENV_STEPS_SAMPLED_LIFETIME: self._lifetime_env_steps(),
            keys.NUM_ENV_STEPS_TRAINED_LIFETIME: int(trained),
        }

    def update_learners(
        self, episodes: Sequence[EpisodeType] | None = None, *, data_iterators: list | None = None
    ) -> dict[str, Any]:
        """One learner-group update on `episodes`, or on what each learner reads next from its data
        iterator (offline data with remote learners), timed under `timers/learner_update_timer`,
        with the learners' results merged exactly under `learners`; returns them merged into one
        dict (`merge_results`: counts added up, per-row lists joined). RLlib's spelling does the
        same::

            with self.metrics.log_time((TIMERS, LEARNER_UPDATE_TIMER)):
                results = self.learner_group.update(episodes=episodes, timesteps=self.learner_timesteps())
            self.metrics.aggregate(results, key=LEARNER_RESULTS)

        except that per-row lists a learner logs (`reduce="item_series"`, e.g. DQN's TD errors for
        the replay priorities) stay in the returned results and out of the algorithm's metrics."""
        with self.metrics.log_time((TIMERS, keys.LEARNER_UPDATE_TIMER), reduce="mean"):
            results = self.learner_group.update(
                episodes=episodes, data_iterators=data_iterators, timesteps=self.learner_timesteps()
            )
        self.metrics.aggregate([without_item_series(result) for result in results], key=LEARNER_RESULTS)
        return merge_results(results)

    def sync_runner_weights(self, force: bool = False) -> None:
        """Sends the learners' inference weights, tagged with their sequence number, to the env
        runners (`force`: tagged 0, so every runner takes them), timed under
        `timers/synch_worker_weights_timer`. RLlib's spelling does the same (untagged forcing aside)::

            with self.metrics.log_time((TIMERS, SYNCH_WORKER_WEIGHTS_TIMER)):
                self.env_runner_group.sync_weights(from_worker_or_learner_group=self.learner_group, inference_only=True)
        """
        with self.metrics.log_time((TIMERS, keys.SYNCH_WORKER_WEIGHTS_TIMER), reduce="mean"):
            seq_no = 0 if force else self.learner_group.weights_seq_no
            self.env_runner_group.sync_weights(self.learner_group.get_weights(inference_only=True), seq_no)

    # ----------------------------------------------------------- evaluation

    def evaluate(self) -> dict[str, Any]:
        """One evaluation round with the learners' current weights (`flywheel.algorithms.evaluation`);
        returns the `evaluation` result part."""
        self._check_not_stopped("evaluate")
        group = evaluation.start(self)
        return evaluation.finish(self, evaluation.run(self, group))

    # -------------------------------------------------------------- modules

    def get_module(self, module_id: str = DEFAULT_MODULE_ID):
        """The inference module (the local runner's) for `module_id`."""
        module = self.env_runner.module
        if self.config.is_multi_agent:
            return module[module_id]
        if module_id != DEFAULT_MODULE_ID:
            raise KeyError(f"Unknown module id {module_id!r}; this algorithm has only {DEFAULT_MODULE_ID!r}.")
        return module

    def add_module(
        self,
        module_id: str,
        module_spec: RLModuleSpec | None = None,
        *,
        new_agent_to_module_mapping_fn: Callable | None = None,
        new_should_module_be_updated: Any = None,
    ) -> RLModuleSpec:
        """Adds a module to the running (multi-agent) algorithm: to the learners (with optimizers when
        it trains), the training and the evaluation runners. Fields of `module_spec` left None come
        from the config and the spaces of the agents mapped to it. `new_agent_to_module_mapping_fn`
        and `new_should_module_be_updated` (policies_to_train), when given, replace the config's; new
        episodes map their agents with the new function. Returns the completed spec."""
        policies = self.config.policies
        policies = (
            {**policies, module_id: module_spec} if isinstance(policies, dict) else {*policies, module_id}
        )
        config = self._reconfigure(policies, new_agent_to_module_mapping_fn, new_should_module_be_updated)
        spec = self.env_runner.add_module(module_id, module_spec or RLModuleSpec(), config)
        self.env_runner_group.foreach_env_runner(
            lambda runner: runner.add_module(module_id, spec, config), local_env_runner=False
        )
        if self.eval_env_runner_group is not None:
            eval_config = config.get_evaluation_config_object()
            self.eval_env_runner_group.foreach_env_runner(
                lambda r: r.add_module(module_id, spec, eval_config)
            )
        self.learner_group.add_module(
            module_id=module_id, module_spec=spec, new_should_module_be_updated=new_should_module_be_updated
        )
        self.sync_runner_weights(force=True)
        return spec

    def remove_module(
        self,
        module_id: str,
        *,
        new_agent_to_module_mapping_fn: Callable | None = None,
        new_should_module_be_updated: Any = None,
    ) -> None:
        """Removes a module from learners and runners (their ongoing episodes restart). Pass a mapping
        function that no longer returns `module_id` unless the config's already does not."""
        policies = self.config.policies
        if module_id not in policies:
            raise KeyError(f"No module {module_id!r} to remove; the policies are {sorted(policies)}.")
        if isinstance(policies, dict):
            policies = {mid: spec for mid, spec in policies.items() if mid != module_id}
        else:
            policies = set(policies) - {module_id}
        to_train = new_should_module_be_updated
        if to_train is None and isinstance(self.config.policies_to_train, set | list | tuple | frozenset):
            to_train = set(self.config.policies_to_train) - {module_id}
        config = self._reconfigure(policies, new_agent_to_module_mapping_fn, to_train)
        self.env_runner_group.foreach_env_runner(lambda runner: runner.remove_module(module_id, config))
        if self.eval_env_runner_group is not None:
            eval_config = config.get_evaluation_config_object()
            self.eval_env_runner_group.foreach_env_runner(lambda r: r.remove_module(module_id, eval_config))
        self.learner_group.remove_module(module_id, new_should_module_be_updated=to_train)

    def _reconfigure(self, policies: Any, mapping_fn: Callable | None, policies_to_train: Any) -> Any:
        """A validated, frozen copy of the config with new multi-agent settings; it becomes `self.config`."""
        changes = {"policies": policies}
        if mapping_fn is not None:
            changes["policy_mapping_fn"] = mapping_fn
        if policies_to_train is not None:
            changes["policies_to_train"] = policies_to_train
        config = self.config.copy().multi_agent(**changes)
        config.validate()
        config.freeze()
        self.config = config
        self.env_runner_group.update_config(config)  # restarted runners build the new modules too
        if self.eval_env_runner_group is not None:
            self.eval_env_runner_group.update_config(config.get_evaluation_config_object())
        return config

    def reset_config(self, new_config: AlgorithmConfig) -> bool:
        """Takes `new_config` in place when it differs from the current config only in settings read while
        training (`reconfigurable_settings` here and on the learner class: `lr`, `gamma`, `num_epochs`,
        PPO's `clip_param`, ...): runners, learners, weights, optimizer states and metrics stay, and
        the learners use the new values from the next update. Returns False and changes nothing for
        any other difference (build a new algorithm then). Ray Tune's PBT uses this through
        `flywheel.tune`.
        """
        config = new_config.copy()
        config.validate()
        config.freeze()
        learner_class = config.learner_class or config.get_default_learner_class()
        in_place = self.reconfigurable_settings | learner_class.reconfigurable_settings
        changed = {n for n in config.setting_names() if _differs(getattr(config, n), getattr(self.config, n))}
        if type(config) is not type(self.config) or not changed <= in_place:
            return False
        self.config = config
        self.env_runner_group.update_config(config)
        if self.eval_env_runner_group is not None:
            self.eval_env_runner_group.update_config(config.get_evaluation_config_object())
        self.learner_group.foreach_learner(lambda learner: learner.reset_config(config))
        return True

    # ---------------------------------------------------------- checkpoints

    @classmethod
    def from_checkpoint(
        cls,
        path: str | os.PathLike,
        *,
        classes: Iterable[Any] = (),
        trusted: bool = False,
        config: AlgorithmConfig | None = None,
    ) -> Self:
        """The algorithm saved at `path`, rebuilt from its saved config and restored (training continues).

        Runs no code the checkpoint names: your classes and functions it names load when passed
        (`classes=[MyEnv, my_mapping_fn]`), lambdas (stored as pickles) with `trusted=True` (which also
        imports what it names), or pass such settings yourself: `config={"policy_mapping_fn": fn}`
        replaces the saved ones unread, `config=an_algorithm_config` the whole saved config.
        """
        allowed = Allowed.of([cls, *classes], trusted=trusted, entry=f"{cls.__name__}.from_checkpoint")
        node = read_tree(path)
        algo_class = cls.checked_class(node, allowed)
        settings = saved_config(node, allowed, config)
        with loading(node.path, f"build {algo_class.__name__}"):
            algo = algo_class(config=settings)
        try:
            algo.restore_from_path(path)
        except BaseException:
            algo.stop()  # no half-restored algorithm keeps runners or learners alive
            raise
        return algo

    def save_to_path(self, path: str | os.PathLike | None = None) -> str:
        """Saves the algorithm (learners, local runner, counters, metrics, RNG states) to `path`;
        refused after `stop()`, whose learners and runners hold no state to save any more."""
        self._check_not_stopped("save_to_path")
        return super().save_to_path(path)

    def get_checkpointable_components(self) -> list[tuple[str, Checkpointable]]:
        return [(COMPONENT_LEARNER_GROUP, self.learner_group), (COMPONENT_ENV_RUNNER, self.env_runner)]

    def get_ctor_args_and_kwargs(self) -> tuple[tuple, dict[str, Any]]:
        return (), {"config": self.config}

    def get_state(
        self,
        components: str | list[str] | None = None,
        not_components: str | list[str] | None = None,
        **kwargs,
    ) -> dict[str, Any]:
        """`learner_group`, `env_runner`, `training_iteration`, `time_total_s`, `metrics` and `rng`
        (python, numpy and torch generator states); `"a/b"` selects `b` inside component `a`."""
        state: dict[str, Any] = {}
        for name, component in self.get_checkpointable_components():
            included, sub_components, sub_not_components = select(name, components, not_components)
            if included:
                state[name] = component.get_state(
                    components=sub_components, not_components=sub_not_components
                )
        own = {
            "training_iteration": lambda: self.iteration,
            "time_total_s": lambda: self._time_total_s,
            "metrics": self.metrics.get_state,
            "rng": _rng_state,
        }
        for name, value in own.items():
            if select(name, components, not_components)[0]:
                state[name] = value()
        return state

    def set_state(self, state: dict[str, Any]) -> None:
        """Restores a `get_state` output; runners then get the learners' weights."""
        if "learner_group" in state:
            self.learner_group.set_state(state["learner_group"])
        if "env_runner" in state:
            self.env_runner.set_state(state["env_runner"])
            if self.env_runner_group.num_remote_env_runners():  # remote runners take the restored filters too
                self.env_runner_group.sync_connector_states(from_group=self.env_runner_group)
        if "learner_group" in state:
            self._restore_runner_weights()
        self.iteration = state.get("training_iteration", self.iteration)
        self._time_total_s = state.get("time_total_s", self._time_total_s)
        if "metrics" in state:
            self.metrics.set_state(state["metrics"])
            if self._lifetime_env_steps():  # a resumed run must not replay the first iteration's episodes
                self.env_runner_group.reseed(self._lifetime_env_steps())
        if "rng" in state:
            _set_rng_state(state["rng"])

    def restore_from_path(self, path: str | os.PathLike, component: str | None = None) -> None:
        """Loads a checkpoint (or one component of it, e.g. a module into
        `"learner_group/learner/rl_module/p0"`), syncs the runners and calls `on_checkpoint_loaded`."""
        head, _, sub = (component or "").partition("/")
        if head == "learner_group" and not self.learner_group.is_local:
            self.learner_group.restore_from_path(path, sub or None)  # reaches the remote learners
        else:
            super().restore_from_path(path, component)
        if head == "learner_group":
            self._restore_runner_weights()
        self.callbacks.on_checkpoint_loaded(algorithm=self, metrics_logger=self.metrics)

    def _restore_runner_weights(self) -> None:
        """Runners take the restored learner weights even when their own sequence number is newer
        (seq no 0 forces), then record the learners' sequence number."""
        weights = self.learner_group.get_weights(inference_only=True)
        self.env_runner_group.sync_weights(weights, 0)
        self.env_runner_group.sync_weights(weights, self.learner_group.weights_seq_no)
        evaluation.forget_weights(self)

    def stop(self) -> None:
        """Releases envs, runners and learners; `train()`, `evaluate()` and `save_to_path()` then raise
        a StoppedError. Calling it again does nothing."""
        if self._stopped:
            return
        self._stopped = True
        self.env_runner_group.stop()
        if self.eval_env_runner_group is not None:
            self.eval_env_runner_group.stop()
        self.learner_group.shutdown()

    def _check_not_stopped(self, method: str) -> None:
        if self._stopped:
            raise StoppedError(
                f"{type(self).__name__}.{method}() was called after stop(), which released its env runners and "
                "learners. Fix: call stop() only once you are done with the algorithm; to go on later, "
                "save_to_path() before stop() and load it again with Algorithm.from_checkpoint(path)."
            )


def _differs(a: object, b: object) -> bool:
    """Whether two values of a setting differ. Values that compare unequal (or not to a bool, as numpy
    arrays do) but pickle to the same bytes count as equal: a lambda and its copy unpickled in another
    process (how Ray Tune hands a trial its config) are the same setting."""
    try:
        if a == b:
            return False
    except (TypeError, ValueError):  # numpy arrays compare to arrays, not to a bool
        pass
    try:
        return cloudpickle.dumps(a) != cloudpickle.dumps(b)
    except Exception:  # a value that cannot be pickled cannot be shown equal
        return True


def _rng_state() -> dict[str, Any]:
    return {
        "python": random.getstate(),
        "numpy": np.random.get_state(),
        "torch": torch.get_rng_state().numpy(),
    }


def _set_rng_state(state: dict[str, Any]) -> None:
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(torch.from_numpy(state["torch"]))
