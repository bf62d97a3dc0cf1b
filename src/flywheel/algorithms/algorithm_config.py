"""`AlgorithmConfig`: the builder-style settings object every algorithm, runner and learner is built from.

    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_envs_per_env_runner=8)
        .training(lr=3e-4, minibatch_size=256)
    )
    algo = config.build_algo()          # validate() -> copy -> freeze -> algo_class(config=copy)

The settings and their defaults live in `AlgorithmSettings` (one documented field each); this class
only sets them by section, copies/serializes/freezes them, and builds what runners and learners need
from them (module spec, connector pipelines, callbacks). What each setting *means* is implemented where
it is used, not here.
"""

from __future__ import annotations

import copy
import dataclasses
import math
import warnings
from collections.abc import Callable, Iterable, Mapping
from functools import cache
from typing import TYPE_CHECKING, Any, ClassVar, Self

from flywheel.algorithms import config_validation
from flywheel.algorithms.config_builders import (
    atari_frame_stacking,
    env_spaces,
    hook_pieces,
    hook_spaces,
    learner_module_spec,
    make_pipeline,
    merge_module_specs,
    module_spaces,
)
from flywheel.algorithms.config_rllib_sections import (
    RLlibOnlySections,
    drop_exploration,
    drop_old_stack_model,
    old_stack_resources,
    rllib_setting_problems,
    warn_if_no_op,
)
from flywheel.algorithms.config_settings import AlgorithmSettings
from flywheel.algorithms.config_stack import StackSettings
from flywheel.callbacks import HOOK_NAMES, RLlibCallback, as_hook_list, make_callbacks
from flywheel.checkpoints.registry import checkpoint_class, register_if_flywheel
from flywheel.core.rl_module.default_model_config import as_model_config_dict
from flywheel.errors import ConfigError, ConfigKeyError
from flywheel.typing import DEFAULT_MODULE_ID

if TYPE_CHECKING:
    from flywheel.algorithms.algorithm import Algorithm
    from flywheel.connectors.pipeline import ConnectorPipelineV2
    from flywheel.core.learner.learner import Learner
    from flywheel.core.learner.learner_group import LearnerGroup
    from flywheel.core.rl_module.spec import MultiRLModuleSpec, RLModuleSpec

FROZEN_MESSAGE = (
    "This config is frozen (it belongs to a built algorithm). Use config.copy() for an editable copy."
)


class _NotProvided:
    """Sentinel for "argument not passed" (None is a meaningful value for many settings)."""

    def __repr__(self) -> str:
        return "NOT_PROVIDED"


NOT_PROVIDED = _NotProvided()


@checkpoint_class
@dataclasses.dataclass(init=False, repr=False, eq=True)
class AlgorithmConfig(StackSettings, RLlibOnlySections, AlgorithmSettings):
    """Settings of an algorithm, set through section methods that each return the config."""

    _frozen = False  # set by freeze(); not a setting (unannotated, so not a dataclass field)
    uses_lr: ClassVar[bool] = True
    """False for algorithms whose optimizers have learning rates of their own (SAC's `actor_lr`,
    `critic_lr`, `alpha_lr`): `lr` is then None and not checked as a rate."""
    uses_train_batch_size: ClassVar[bool] = True
    """False for algorithms that size their batches otherwise (DreamerV3's `batch_size_B` x
    `batch_length_T`): `train_batch_size` is then None and checked by the algorithm's config."""

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        register_if_flywheel(cls)  # checkpoints may name flywheel's configs (PPOConfig, ...)

    def __init__(self, algo_class: type[Algorithm] | None = None):
        """`algo_class`: the Algorithm subclass `build_algo()` creates (None: the config's default)."""
        for field in self._setting_fields():
            value = field.default
            if value is dataclasses.MISSING:
                factory = field.default_factory
                assert factory is not dataclasses.MISSING  # every setting has a default or a factory
                value = factory()
            object.__setattr__(self, field.name, value)
        object.__setattr__(self, "_algo_class", algo_class)

    def __setattr__(self, name: str, value: object) -> None:
        if self._frozen:
            raise ConfigError(FROZEN_MESSAGE)
        object.__setattr__(self, name, value)

    def __repr__(self) -> str:
        default = type(self)()
        changed = [
            f"{n}={getattr(self, n)!r}"
            for n in self.setting_names()
            if getattr(self, n) != getattr(default, n)
        ]
        return f"{type(self).__name__}({', '.join(changed)})"

    # ---- the settings' names and sections ------------------------------------------------

    @classmethod
    def _setting_fields(cls) -> tuple[dataclasses.Field, ...]:
        return tuple(f for f in dataclasses.fields(cls) if "section" in f.metadata)

    @classmethod
    def setting_names(cls) -> tuple[str, ...]:
        """Every setting of this config class (what to_dict() holds and overrides() accepts)."""
        return _names(cls, None)

    @classmethod
    def section_of(cls, name: str) -> str | None:
        """The section method that sets `name` (None for settings only code sets, e.g. in_evaluation)."""
        return next((f.metadata["section"] for f in cls._setting_fields() if f.name == name), None)

    def _update(
        self, where: str, kwargs: Mapping[str, object], valid: Iterable[str], noun: str = "keyword"
    ) -> Self:
        """Checks every key first (ConfigKeyError naming the closest valid one), then sets them all."""
        if self._frozen:
            raise ConfigError(FROZEN_MESSAGE)
        valid = tuple(valid)
        for key, value in kwargs.items():
            if key not in valid:
                hint = config_validation.closest(key, valid)
                help_text = config_validation.schedule_keyword_fix(key, value, valid) or (
                    f"Did you mean {hint!r}?" if hint else f"Valid {noun}s: {', '.join(map(repr, valid))}."
                )
                raise ConfigKeyError(
                    f"{type(self).__name__}.{where}() got an unexpected {noun} {key!r}. {help_text}"
                )
        for key, value in kwargs.items():
            setattr(self, key, value)
        return self

    def _section(self, section: str, kwargs: Mapping[str, object], **positional: Any) -> Self:
        kwargs = {**{k: v for k, v in positional.items() if v is not NOT_PROVIDED}, **kwargs}
        self._update(section, kwargs, _names(type(self), section))
        warn_if_no_op(kwargs)
        return self

    # ---- section methods (keywords: the fields of AlgorithmSettings with that section) ---

    def environment(self, env: Any = NOT_PROVIDED, **kwargs: object) -> Self:
        """The env and how its observations, actions and rewards are adapted.

        Keywords: env_config, observation_space, action_space, clip_rewards, normalize_actions,
        clip_actions, env_wrappers, render_env, disable_env_checking.
        """
        return self._section("environment", kwargs, env=env)

    def env_runners(self, **kwargs: object) -> Self:
        """Sampling: number of runners and sub-envs, episode cutting, the env<->module pipelines.

        Keywords: num_env_runners, num_envs_per_env_runner, gym_env_vectorize_mode, rollout_fragment_length,
        batch_mode, explore, env_to_module_connector, module_to_env_connector,
        add_default_connectors_to_env_to_module_pipeline, add_default_connectors_to_module_to_env_pipeline,
        episode_lookback_horizon, sample_timeout_s, max_requests_in_flight_per_env_runner,
        num_cpus_per_env_runner, normalize_rewards, episodes_to_numpy.
        """
        return self._section("env_runners", kwargs)

    def learners(self, **kwargs: object) -> Self:
        """Learner count, resources, class and learner pipeline.

        Keywords: num_learners, num_cpus_per_learner, num_gpus_per_learner, learner_class,
        learner_connector, add_default_connectors_to_learner_pipeline, learner_config_dict (merged
        into the current dict, as `dict.update` does), num_aggregator_actors_per_learner.
        """
        new = kwargs.get("learner_config_dict")
        if isinstance(new, Mapping) and isinstance(self.learner_config_dict, Mapping):
            kwargs = {**kwargs, "learner_config_dict": {**self.learner_config_dict, **new}}
        return self._section("learners", kwargs)

    def training(self, **kwargs: object) -> Self:
        """Optimization: gamma, lr, grad_clip, grad_clip_by, train_batch_size(_per_learner), minibatch_size,
        num_epochs, shuffle_batch_per_epoch, plus the algorithm's own settings (e.g. PPO's clip_param).

        The learner settings RLlib 2.60 still takes here (learner_class, learner_connector,
        add_default_connectors_to_learner_pipeline, learner_config_dict) go to `learners()`.
        """
        moved = {key: kwargs.pop(key) for key in _LEARNER_KEYS_IN_TRAINING if key in kwargs}
        if moved:
            self.learners(**moved)
        if "num_sgd_iter" in kwargs:  # RLlib 2.60's deprecated name, still accepted there with a warning
            warnings.warn(
                "training(num_sgd_iter=...) is RLlib's old name of num_epochs.", DeprecationWarning, 2
            )
            kwargs["num_epochs"] = kwargs.pop("num_sgd_iter")
        drop_old_stack_model(kwargs)
        return self._section("training", kwargs)

    def multi_agent(self, **kwargs: object) -> Self:
        """Modules and agents: policies, policy_mapping_fn, policies_to_train, count_steps_by."""
        return self._section("multi_agent", kwargs)

    def rl_module(self, **kwargs: object) -> Self:
        """The module: rl_module_spec (overrides the algorithm's default spec), model_config (a dict, or
        a `DefaultModelConfig`, which becomes the dict of all its fields as in RLlib)."""
        if "model_config" in kwargs:
            kwargs = {**kwargs, "model_config": as_model_config_dict(kwargs["model_config"])}
        return self._section("rl_module", kwargs)

    def offline_data(self, **kwargs: object) -> Self:
        """Recording and reading offline data (Parquet files; see docs/concepts/offline.md).

        Keywords: input_, input_read_episodes, input_read_method_kwargs, iter_batches_kwargs,
        input_ignore_corrupt_files, dataset_num_iters_per_learner, actions_in_input_normalized, output, output_write_episodes,
        output_max_rows_per_file, output_compress_columns, output_write_remaining_data,
        map_batches_kwargs, prelearner_class.
        """
        return self._section("offline_data", kwargs)

    def evaluation(self, **kwargs: object) -> Self:
        """Evaluation: evaluation_interval, evaluation_duration (int or "auto"), evaluation_duration_unit,
        evaluation_num_env_runners, evaluation_config, evaluation_parallel_to_training,
        evaluation_force_reset_envs_before_iteration, custom_evaluation_function and the "auto"
        duration's evaluation_auto_duration_{min,max}_env_steps_per_sample (docs/concepts/evaluation.md)."""
        return self._section("evaluation", kwargs)

    def fault_tolerance(self, **kwargs: object) -> Self:
        """Runner failures: restart_failed_env_runners, ignore_env_runner_failures,
        max_num_env_runner_restarts, delay_between_env_runner_restarts_s, restart_failed_sub_environments."""
        return self._section("fault_tolerance", kwargs)

    def callbacks(
        self,
        callbacks_class: Callable[[], RLlibCallback] | None | _NotProvided = NOT_PROVIDED,
        **kwargs: object,
    ) -> Self:
        """An RLlibCallback subclass (or a callable making one, e.g. a `functools.partial` of it with its
        arguments) and/or function hooks (on_episode_end=fn or [fn, ...], ...).

        Function hooks run after the class's method, with the same keyword arguments.
        """
        return self._section("callbacks", kwargs, callbacks_class=callbacks_class)

    def reporting(self, **kwargs: object) -> Self:
        """Metrics: metrics_num_episodes_for_smoothing, min_time_s_per_iteration, min_sample_timesteps_per_iteration."""
        return self._section("reporting", kwargs)

    def resources(self, **kwargs: object) -> Self:
        """What a Ray Tune trial reserves beyond its actors: num_cpus_for_main_process, placement_strategy.

        RLlib's old API stack keywords `num_gpus` and `_fake_gpus` are taken with RLlib 2.60's meaning on
        the new stack: no effect (learners take GPUs through `learners(num_gpus_per_learner=...)`)."""
        return self._section("resources", old_stack_resources(kwargs))

    def debugging(self, **kwargs: object) -> Self:
        """Reproducibility and logs: seed, log_level."""
        return self._section("debugging", kwargs)

    # ---- freezing, copies, dicts ---------------------------------------------------------

    def freeze(self) -> None:
        """Makes every later attribute set or section call raise ConfigError (used by built algorithms)."""
        object.__setattr__(self, "_frozen", True)

    @property
    def is_frozen(self) -> bool:
        """True once the config belongs to a built algorithm."""
        return self._frozen

    def copy(self, copy_frozen: bool = False) -> Self:
        """A deep copy (classes and functions are shared, not copied); editable unless `copy_frozen`."""
        duplicate = copy.deepcopy(self)
        object.__setattr__(duplicate, "_frozen", self._frozen and copy_frozen)
        return duplicate

    def to_dict(self) -> dict[str, Any]:
        """Every setting by name; containers are copies, classes and callables the objects themselves."""
        return copy.deepcopy({name: getattr(self, name) for name in self.setting_names()})

    def update_from_dict(self, settings: Mapping[str, object]) -> Self:
        """Sets the given settings (ConfigKeyError naming the closest valid name for an unknown key)."""
        return self._update("update_from_dict", copy.deepcopy(dict(settings)), self.setting_names(), "key")

    @classmethod
    def from_dict(cls, settings: Mapping[str, object]) -> Self:
        """A config of this class with `settings` (e.g. from to_dict()) over the defaults."""
        config = cls()
        return config._update("from_dict", copy.deepcopy(dict(settings)), cls.setting_names(), "key")

    @classmethod
    def overrides(cls, **kwargs: object) -> dict[str, Any]:
        """`kwargs` as a dict after checking each key is a setting (for evaluation_config). RLlib's
        `exploration` key, which changes nothing in RLlib 2.60, is dropped with a warning."""
        drop_exploration(kwargs)
        for key in kwargs:
            if key not in cls.setting_names():
                hint = config_validation.closest(key, cls.setting_names())
                help_text = f" Did you mean {hint!r}?" if hint else ""
                raise ConfigKeyError(
                    f"{cls.__name__}.overrides() got an unexpected keyword {key!r}.{help_text}"
                )
        return dict(kwargs)

    def get_evaluation_config_object(self) -> Self:
        """An editable copy for evaluation runners: num_env_runners=evaluation_num_env_runners, then the
        evaluation_config overrides, and in_evaluation=True."""
        eval_config = self.copy()
        eval_config.num_env_runners = self.evaluation_num_env_runners
        eval_config.update_from_dict(self.evaluation_config or {})
        eval_config.in_evaluation = True
        return eval_config

    # ---- validation and building ---------------------------------------------------------

    def validation_problems(self) -> list[str]:
        """Every problem of this config, one line each with its fix. Algorithm configs extend this."""
        return config_validation.common_problems(self) + rllib_setting_problems(self)

    def validate(self) -> None:
        """Raises one ConfigError listing every problem (does nothing for a valid config)."""
        problems = self.validation_problems()
        if problems:
            count = f"{len(problems)} problem{'s' if len(problems) > 1 else ''}"
            lines = "\n".join(f"- {problem}" for problem in problems)
            raise ConfigError(f"Invalid {type(self).__name__} ({count}):\n{lines}")

    @property
    def algo_class(self) -> type[Algorithm]:
        """The Algorithm subclass build_algo() creates."""
        return self._algo_class or self.get_default_algo_class()

    @algo_class.setter
    def algo_class(self, value: type[Algorithm] | None) -> None:
        self._algo_class = value

    def get_default_algo_class(self) -> type[Algorithm]:
        """The Algorithm class of this config (imported on first use)."""
        from flywheel.algorithms.algorithm import Algorithm

        return Algorithm

    def get_default_learner_class(self) -> type[Learner]:
        """The Learner class used when learner_class is None; algorithm configs override this."""
        raise ConfigError(
            f"{type(self).__name__} has no default learner class. Fix: pass learner_class=... to config.learners()."
        )

    def build_algo(self) -> Algorithm:
        """validate(), then the Algorithm built on a frozen copy of this config (this one stays editable)."""
        self.validate()
        config = self.copy()
        config.freeze()
        return self.algo_class(config=config)

    def build(self) -> Algorithm:
        """RLlib's older name of `build_algo()` (a DeprecationWarning says so, as RLlib 2.60's does)."""
        warnings.warn(
            "AlgorithmConfig.build() is deprecated: use AlgorithmConfig.build_algo() instead.",
            DeprecationWarning,
            stacklevel=2,
        )
        return self.build_algo()

    @property
    def total_train_batch_size(self) -> int:
        """Env steps trained on per iteration over all learners: `train_batch_size_per_learner` times
        the learners when it is set, else `train_batch_size` (RLlib's rule)."""
        if self.train_batch_size_per_learner is None:
            return self.train_batch_size
        return self.train_batch_size_per_learner * max(1, self.num_learners)

    @property
    def learner_train_batch_size(self) -> int:
        """Env steps each learner trains on per iteration (what `train_batch_size_per_learner` reads
        as in RLlib when it is not set: `train_batch_size // num_learners`)."""
        if self.train_batch_size_per_learner is None:
            return self.train_batch_size // max(1, self.num_learners)
        return self.train_batch_size_per_learner

    @property
    def is_atari(self) -> bool:
        """True when `env` is an Atari id (e.g. `"ale_py:ALE/Pong-v5"`), which flywheel preprocesses;
        False for names given to `register_env`, classes and creators (RLlib's rule)."""
        from flywheel.env.make import is_atari_env

        return is_atari_env(self.env)

    @property
    def is_multi_agent(self) -> bool:
        """True when modules other than "default_policy" exist or agents are mapped to modules."""
        return set(self.policies) != {DEFAULT_MODULE_ID} or self.policy_mapping_fn is not None

    def get_rollout_fragment_length(self, worker_index: int = 0) -> int:
        """Env steps per sub-env per sample() call for runner `worker_index` (the same for every runner).

        "auto": ceil(total_train_batch_size / (max(1, num_env_runners) * num_envs_per_env_runner)),
        so one sample() call over all runners and sub-envs yields at least the train batch.
        """
        if self.rollout_fragment_length != "auto":
            return int(self.rollout_fragment_length)
        sub_envs = max(1, self.num_env_runners) * self.num_envs_per_env_runner
        return math.ceil(self.total_train_batch_size / sub_envs)

    def get_default_rl_module_spec(self) -> RLModuleSpec:
        """The algorithm's default module spec (the base config has none: rl_module_spec must name one)."""
        from flywheel.core.rl_module.spec import RLModuleSpec

        return RLModuleSpec()

    def get_rl_module_spec(
        self,
        spaces: tuple | dict | None = None,
        module_id: str = DEFAULT_MODULE_ID,
        *,
        env: Any = None,
        inference_only: bool | None = None,
    ) -> RLModuleSpec:
        """The module spec for `module_id`: the default spec updated by the user's (non-None fields win).

        model_config merges default spec's < config.model_config < user spec's. Spaces come from
        `spaces=(observation_space, action_space)` (or RLlib's `{module_id: (obs, act)}` /
        `"__env_single__"`), else `env`'s (one env's, for a vector env), else the environment()
        settings, else the specs. A MultiRLModuleSpec as rl_module_spec contributes its sub-spec for
        `module_id`. `inference_only`, when given, sets the spec's flag.
        """
        user = self.rl_module_spec
        if user is not None and hasattr(user, "rl_module_specs"):
            user = user.rl_module_specs.get(module_id)
        spaces = module_spaces(env, spaces, module_id) or (self.observation_space, self.action_space)
        spec = merge_module_specs(self.get_default_rl_module_spec(), user, self.model_config, spaces)
        if inference_only is not None:
            spec.inference_only = inference_only
        return spec

    def build_env_to_module_connector(
        self, env: Any, spaces: tuple | None = None, device: Any = None
    ) -> ConnectorPipelineV2:
        """The env-to-module pipeline: the user's pieces, `NormalizeRewards` (with `normalize_rewards`), then
        the defaults (add obs/states, batch, to tensor). For an Atari id, `FrameStacking(num_frames=4)`
        follows the user's pieces unless they stack frames.

        `spaces` is `(observation_space, action_space)` or RLlib's `{"__env_single__": (...), ...}`; the
        user's hook is called as ``env_to_module_connector(env, spaces, device)`` with RLlib's dict
        (`"__env__"`: the vector env's spaces, `"__env_single__"`: one env's).
        """
        hook_args = (env, hook_spaces(env, spaces), device)
        pieces = hook_pieces(self.env_to_module_connector, "env_to_module_connector", *hook_args)
        pieces += atari_frame_stacking(self.env, pieces, as_learner_connector=False)
        if self.normalize_rewards:
            from flywheel.connectors.env_to_module import NormalizeRewards

            pieces.append(NormalizeRewards(gamma=self.gamma))
        if self.add_default_connectors_to_env_to_module_pipeline:
            from flywheel.connectors.env_to_module import default_env_to_module_connectors

            pieces += default_env_to_module_connectors(device=device)
        return make_pipeline(*env_spaces(env, spaces), pieces)

    def build_module_to_env_connector(
        self, env: Any, spaces: tuple | None = None, device: Any = None
    ) -> ConnectorPipelineV2:
        """The module-to-env pipeline: the defaults (actions, to numpy, normalize/clip), then the user's pieces.

        The user's hook is called as ``module_to_env_connector(env, spaces)`` (`spaces` as for the
        env-to-module hook).
        """
        pieces = []
        if self.add_default_connectors_to_module_to_env_pipeline:
            from flywheel.connectors.module_to_env import default_module_to_env_connectors

            pieces = default_module_to_env_connectors(
                normalize_actions=self.normalize_actions, clip_actions=self.clip_actions
            )
        pieces += hook_pieces(
            self.module_to_env_connector, "module_to_env_connector", env, hook_spaces(env, spaces)
        )
        return make_pipeline(*env_spaces(env, spaces), pieces)

    def build_learner_connector(
        self, input_observation_space: Any, input_action_space: Any, device: Any = None
    ) -> ConnectorPipelineV2:
        """The learner pipeline: the user's pieces, then the defaults (algorithm configs add their own).
        For an Atari id, the learner's `FrameStacking(num_frames=4)` follows the user's pieces unless they
        stack frames.

        The user's hook is called as ``learner_connector(input_observation_space, input_action_space)``;
        `device` is where the learner trains (the last default piece, `NumpyToTensor`, puts the batch there).
        """
        hook_args = (input_observation_space, input_action_space)
        pieces = hook_pieces(self.learner_connector, "learner_connector", *hook_args)
        pieces += atari_frame_stacking(self.env, pieces, as_learner_connector=True)
        if self.add_default_connectors_to_learner_pipeline:
            from flywheel.connectors.learner import default_learner_connectors

            pieces += default_learner_connectors(device=device)
        return make_pipeline(input_observation_space, input_action_space, pieces)

    def build_learner(self, *, env: Any = None, spaces: Any = None) -> Learner:
        """A built learner of `learner_class` (or the algorithm's default) for a module built for the
        spaces of `env` or `spaces` (see `config_builders.learner_module_spec`), on its own: drive it
        with `learner.update(...)` or its gradient methods."""
        learner_class = self.learner_class or self.get_default_learner_class()
        learner = learner_class(config=self, module_spec=learner_module_spec(self, env, spaces))
        learner.build()
        return learner

    def build_learner_group(
        self, *, env: Any = None, spaces: Any = None, rl_module_spec: MultiRLModuleSpec | None = None
    ) -> LearnerGroup:
        """A `LearnerGroup` (one local learner, or `num_learners` remote ones) training
        `rl_module_spec`, or a module built for the spaces of `env` or `spaces`."""
        from flywheel.core.learner.learner_group import LearnerGroup

        module_spec = rl_module_spec or learner_module_spec(self, env, spaces)
        return LearnerGroup(config=self.copy(), module_spec=module_spec)

    def get_config_for_module(self, module_id: str) -> Self:
        """The config a module trains with: this one (flywheel has no per-module overrides)."""
        return self

    def build_callbacks(self) -> RLlibCallback:
        """One RLlibCallback running callbacks_class's hooks, then the function hooks (see `active_hooks`);
        with `render_env`, `on_episode_end` also logs the recorded video (`flywheel.env.recording`)."""
        hooks = {name: getattr(self, name) for name in HOOK_NAMES}
        if self.render_env:
            from flywheel.env.recording import log_episode_video

            hooks["on_episode_end"] = [*as_hook_list(hooks["on_episode_end"]), log_episode_video]
        return make_callbacks(self.callbacks_class, hooks)


_LEARNER_KEYS_IN_TRAINING = (
    "learner_class",
    "learner_connector",
    "add_default_connectors_to_learner_pipeline",
    "learner_config_dict",
)


@cache
def _names(cls: type[AlgorithmConfig], section: str | None) -> tuple[str, ...]:
    """Setting names of `cls`, all of them (section None) or those of one section method."""
    return tuple(f.name for f in cls._setting_fields() if section is None or f.metadata["section"] == section)
