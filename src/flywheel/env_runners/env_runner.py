"""`EnvRunner`: the interface every runner (single-agent, multi-agent, local or remote) offers.

The driving loop::

    runner = SingleAgentEnvRunner(config=config)
    while training:
        episodes = runner.sample(num_timesteps=n)      # finished episodes + cut chunks (numpy)
        learner_results = learner_group.update(episodes=episodes)
        runner.set_state({"rl_module": weights, "weights_seq_no": seq_no})
        metrics = runner.get_metrics()
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Collection, Sequence
from typing import TYPE_CHECKING, Any

import gymnasium as gym
import torch

from flywheel.checkpoints.checkpointable import Checkpointable
from flywheel.checkpoints.components import (
    COMPONENT_ENV_TO_MODULE_CONNECTOR,
    COMPONENT_MODULE_TO_ENV_CONNECTOR,
    COMPONENT_RL_MODULE,
)
from flywheel.connectors.module_to_env.normalize_and_clip_actions import normalized_actions, normalizes
from flywheel.connectors.pipeline import ConnectorPipelineV2
from flywheel.connectors.space_probe import undeclared_observation_change
from flywheel.env.make import INPUT_ENV_SINGLE_SPACES, INPUT_ENV_SPACES, EnvContext
from flywheel.errors import ConfigError, ConnectorError, SampleArgumentError
from flywheel.metrics import MetricsLogger, keys
from flywheel.seeding import derive_seed

if TYPE_CHECKING:
    from flywheel.algorithms.algorithm_config import AlgorithmConfig
    from flywheel.connectors.pipeline import ConnectorPipelineV2
    from flywheel.typing import EpisodeType


class EnvRunner(Checkpointable, abc.ABC):
    """Steps an env with an RLModule and records episodes.

    Subclasses build `env`, `module` (the RLModule) and the `_env_to_module` / `_module_to_env`
    pipelines, and implement the sampling steps `sample()` drives (`_reset_envs`, `_sample_timesteps`,
    `_sample_episodes`, `_log_sample_metrics`); checkpoints save module and pipelines each in its own
    sub-directory (`rl_module`, `env_to_module_connector`, `module_to_env_connector`) and the runner's
    `weights_seq_no` in the runner's state.
    """

    ctor_args_may_pickle = True
    # Built by the subclasses: the vector env and the two connector pipelines around the module.
    env: Any
    _env_to_module: ConnectorPipelineV2
    _module_to_env: ConnectorPipelineV2

    def __init__(
        self, config: AlgorithmConfig, *, worker_index: int = 0, num_workers: int | None = None, **kwargs
    ):
        self.config = config
        self.worker_index = worker_index
        self.num_workers = config.num_env_runners if num_workers is None else num_workers
        self.module = None  # subclasses build it; it stays None when the config names no module
        self.metrics = MetricsLogger()
        # Batches of a few observations: one thread beats two (no contention, no sync per op).
        torch.set_num_threads(1)
        if config.seed is not None:  # before the module is built, so its initial weights are seeded too
            torch.manual_seed(config.seed + worker_index)
        self._callbacks = config.build_callbacks()
        self._on_episode_step = "on_episode_step" in self._callbacks.active_hooks
        self.num_envs = config.num_envs_per_env_runner
        self.weights_seq_no = 0
        # The seed of the next reset of all sub-envs (sub-env i gets seed + i); None: reset unseeded.
        self._env_seed = None if config.seed is None else config.seed + worker_index * self.num_envs
        self._episodes: list | None = None
        self._to_module: dict[str, Any] = {}
        self._shared_data: dict[str, Any] = {}  # of the step's env-to-module call, for its module-to-env call
        self._env_steps_sampled = 0  # by this runner, over its lifetime: `t` of forward_exploration
        self._writer = None  # the OfflineWriter of config.output, built on first sample()
        self._inference_mode = torch.inference_mode()  # what `_act` runs under

    # --------------------------------------------------------------- sampling

    def _act(self, episodes: list[Any], explore: bool) -> dict[str, Any]:
        """The step's forward pass on `_to_module` and its module-to-env pipeline call.

        Both run under `torch.inference_mode()`: nothing they make is trained on (the pipeline's
        `TensorToNumpy` hands the env and the episodes numpy arrays), and inference tensors skip
        autograd's bookkeeping, which makes each of the step's dozen small torch ops cheaper (1-env
        CartPole, thread time: forward 28.0 -> 26.7 us, module-to-env 17.2 -> 15.0 us per step).
        The runner enters one `inference_mode` object each step: building a new one costs twice as
        much (1.0 vs 0.6 us). The env, the env-to-module pipeline and the callbacks run outside it,
        with torch's grad mode as the caller set it.
        """
        module = self.module
        assert module is not None  # sample() refuses to act without one
        with self._inference_mode:
            try:
                if explore:
                    # `t`: the env steps sampled so far over all runners, estimated as RLlib does (this
                    # runner's count times the number of runners).
                    t = self._env_steps_sampled * max(1, self.num_workers)
                    out = module.forward_exploration(self._to_module, t=t)
                else:
                    out = module.forward_inference(self._to_module)
            except RuntimeError as err:  # e.g. torch's "mat1 and mat2 shapes cannot be multiplied"
                cause = undeclared_observation_change(self._env_to_module, module)
                if cause is None:
                    raise
                raise ConnectorError(f"{cause} (The module's forward pass failed: {err})") from err
            # (`.__call__`: keywords passed on without a dict, see `ConnectorPipelineV2.__call__`.)
            return self._module_to_env.__call__(
                rl_module=module, batch=out, episodes=episodes, explore=explore,
                shared_data=self._shared_data, metrics=self.metrics,
            )  # fmt: skip

    def _call_env_to_module(
        self, episodes: Sequence[Any], explore: bool, shared_data: dict | None = None
    ) -> dict[str, Any]:
        """The env-to-module pipeline's batch for `episodes` (a single-agent runner's recorder slots:
        every sub-env holds an episode whenever the pipeline runs)."""
        if self.module is None:  # nothing will read the batch
            return {}
        # (`.__call__`: keywords passed on without a dict, see `ConnectorPipelineV2.__call__`.)
        return self._env_to_module.__call__(
            rl_module=self.module, batch={}, episodes=episodes, explore=explore,
            shared_data={} if shared_data is None else shared_data, metrics=self.metrics,
        )  # fmt: skip

    def _process_final_observations(self, episodes: list[Any], explore: bool) -> None:
        """Runs the env-to-module pipeline on finished episodes, so that its pieces see their final
        observations (as in RLlib: e.g. a piece that rewrites observations in the episodes). The
        batch is discarded, so the call is skipped when the pipeline only builds batches (the default
        pieces: one pipeline call fewer per step in which episodes end, ~1.4% of 8-env CartPole sampling)."""
        if self.module is not None and not self._env_to_module.builds_only_batches(self.module):
            self._call_env_to_module(episodes, explore)

    def _make_env(self) -> Any:
        """Builds the vector env of `num_envs_per_env_runner` copies, exactly one env per sub-env (the
        one-time check runs on sub-env 0, unless `disable_env_checking`), and calls
        `on_environment_created`."""
        config = self.config
        context = EnvContext(config.env_config, worker_index=self.worker_index, num_workers=self.num_workers)
        env = self._make_vector_env(check=None if config.disable_env_checking else self._env_check())
        self._callbacks.on_environment_created(
            env_runner=self, metrics_logger=self.metrics, env=env, env_context=context
        )
        return env

    @abc.abstractmethod
    def _env_check(self) -> Callable[[Any], None]:
        """The one-time check of sub-env 0 (plays a few steps and explains the first contract violation);
        a module-level function, so that async sub-env processes receive it."""

    @abc.abstractmethod
    def _make_vector_env(self, check: Callable[[Any], None] | None) -> Any:
        """The vector env this runner steps (`check` runs on sub-env 0 once it is built)."""

    def sample(
        self,
        *,
        num_timesteps: int | None = None,
        num_episodes: int | None = None,
        explore: bool | None = None,
        random_actions: bool = False,
        force_reset: bool = False,
    ) -> list:
        """Returns finished episodes plus cut chunks of ongoing ones (numpy'ized)."""
        if num_timesteps is not None and num_episodes is not None:
            raise SampleArgumentError(
                f"sample() takes num_timesteps or num_episodes, not both; got num_timesteps={num_timesteps} "
                f"and num_episodes={num_episodes}. Fix: pass one of them (neither samples one rollout fragment)."
            )
        if self.module is None and not random_actions:
            raise ConfigError(
                f"{type(self).__name__}.sample() needs an RLModule to act, but this runner has none: its "
                f"config ({type(self.config).__name__}) names no module class and has no default one. Fix: "
                "sample(random_actions=True), or config.rl_module(rl_module_spec=RLModuleSpec(module_class=...)) "
                "(an algorithm's config, e.g. PPOConfig, has a default module)."
            )
        if explore is None:
            explore = bool(self.config.explore)
        if num_timesteps is None and num_episodes is None:
            num_timesteps = self.config.get_rollout_fragment_length(self.worker_index) * self.num_envs
        if force_reset or num_episodes is not None or self._episodes is None:
            self._reset_envs(explore)
        with self.metrics.log_time((keys.TIMERS, keys.SAMPLE_TIMER), reduce="mean"):
            if num_episodes is not None:
                episodes, stats = self._sample_episodes(num_episodes, explore, random_actions)
            else:
                assert num_timesteps is not None  # set above when neither was given
                episodes, stats = self._sample_timesteps(num_timesteps, explore, random_actions)
        self._log_sample_metrics(episodes, stats)
        if self.config.output is not None:
            self._offline_writer().write(episodes)
        self._callbacks.on_sample_end(env_runner=self, metrics_logger=self.metrics, samples=episodes)
        return episodes

    def _offline_writer(self) -> Any:
        """The `OfflineWriter` recording this runner's samples (built on first use: pyarrow is imported
        only by runners that record)."""
        if self._writer is None:
            from flywheel.offline.writer import OfflineWriter

            config = self.config
            assert config.output is not None  # sample() records only when it is set
            self._writer = OfflineWriter(
                config.output,
                spaces=self._recorded_spaces(),
                write_episodes=config.output_write_episodes,
                max_rows_per_file=config.output_max_rows_per_file,
                write_remaining=config.output_write_remaining_data,
                compress_columns=config.output_compress_columns,
                file_prefix=f"runner{self.worker_index}",
                actions_normalized=config.normalize_actions,
            )
        return self._writer

    def _random_action(self, space: gym.Space) -> tuple[Any, Any]:
        """(the action as episodes store it, the action for the env) of a uniform sample of `space`:
        stored in the space the module acts in, so random and policy steps agree in the episodes (for
        replay and recorded datasets): mapped to [-1, 1] where the module acts normalized."""
        to_env = space.sample()
        if normalizes(space, self.config.normalize_actions):
            return normalized_actions(space, to_env), to_env
        return to_env, to_env

    def _recorded_spaces(self) -> dict[str, tuple]:
        """The spaces an offline dataset records: `{"default": (observation_space, action_space)}`."""
        return {"default": self._env_spaces()}

    @abc.abstractmethod
    def _reset_envs(self, explore: bool) -> None:
        """Resets all sub-envs (with the seed `_take_env_seed()` returns) and starts a new episode in each."""

    def _take_env_seed(self) -> int | None:
        """The seed for this reset of the sub-envs: set at construction and by `reseed`, used once."""
        seed, self._env_seed = self._env_seed, None
        return seed

    def reseed(self, salt: int) -> None:
        """Drops the episodes in flight; the next `sample()` starts new ones, and with `config.seed` set,
        resets the sub-envs (and the action spaces `random_actions` samples from) seeded from
        `(seed, worker_index, salt)` instead of `seed`.

        A restored algorithm calls this with its restored `num_env_steps_sampled_lifetime`, so a resumed
        run does not replay the first iteration's episodes, and two resumes of one checkpoint agree.
        """
        self._episodes = None
        if self.config.seed is not None:
            self._env_seed = derive_seed(self.config.seed, self.worker_index, salt)

    @abc.abstractmethod
    def _sample_timesteps(self, num_timesteps: int, explore: bool, random_actions: bool) -> tuple[list, list]:
        """Steps until `num_timesteps`; returns (episodes and cut chunks, per-finished-episode stats)."""

    @abc.abstractmethod
    def _sample_episodes(self, num_episodes: int, explore: bool, random_actions: bool) -> tuple[list, list]:
        """Steps until `num_episodes` have finished; returns (those episodes, their stats)."""

    @abc.abstractmethod
    def _log_sample_metrics(self, episodes: list, stats: list) -> None:
        """Logs one `sample()` call's metrics (once per call, not per step)."""

    def _episode_callback(self, hook: str, episode: EpisodeType | None, index: int) -> None:
        if hook in self._callbacks.active_hooks:
            getattr(self._callbacks, hook)(
                episode=episode, env_runner=self, metrics_logger=self.metrics, env=self.env,
                env_index=index, rl_module=self.module,
            )  # fmt: skip

    # ------------------------------------------------------------------ state

    def get_state(
        self,
        components: Collection[str] | None = None,
        *,
        not_components: Collection[str] | None = None,
        **kwargs,
    ) -> dict[str, Any]:
        """The runner's state: `rl_module` weights, `weights_seq_no`, connector states."""

        def wanted(name: str) -> bool:
            return (components is None or name in components) and not (
                not_components and name in not_components
            )

        state: dict[str, Any] = {"weights_seq_no": self.weights_seq_no}
        if wanted("rl_module") and self.module is not None:
            state["rl_module"] = self.module.get_state(inference_only=True)
        if wanted("env_to_module_connector"):
            state["env_to_module_connector"] = self._env_to_module.get_state()
        if wanted("module_to_env_connector"):
            state["module_to_env_connector"] = self._module_to_env.get_state()
        return state

    def set_state(self, state: dict[str, Any]) -> None:
        """Sets (parts of) the state; module weights older than the runner's are ignored."""
        if "env_to_module_connector" in state:
            self._env_to_module.set_state(state["env_to_module_connector"])
        if "module_to_env_connector" in state:
            self._module_to_env.set_state(state["module_to_env_connector"])
        if "rl_module" in state and self.module is not None:
            seq_no = state.get("weights_seq_no", 0)
            if seq_no == 0 or seq_no >= self.weights_seq_no:
                self.module.set_state(state["rl_module"])
                self.weights_seq_no = seq_no

    def get_spaces(self) -> dict[str, tuple]:
        """RLlib's summary of the spaces: `"__env__"` (the vector env's), `"__env_single__"` (one
        env's) and `(observation_space, action_space)` per module id, as the modules are built for
        them; `config.build_learner(spaces=runner.get_spaces())` builds a learner to match."""
        return {
            INPUT_ENV_SPACES: self._vector_env_spaces(),
            INPUT_ENV_SINGLE_SPACES: self._env_spaces(),
            **self._module_spaces(),
        }

    @abc.abstractmethod
    def _vector_env_spaces(self) -> tuple:
        """The vector env's (observation_space, action_space)."""

    @abc.abstractmethod
    def _env_spaces(self) -> tuple:
        """One env's (observation_space, action_space)."""

    @abc.abstractmethod
    def _module_spaces(self) -> dict[str, tuple]:
        """`{module_id: (observation_space, action_space)}` the modules are built for."""

    @property
    def env_to_module(self):
        """The env-to-module `ConnectorPipelineV2`."""
        return self._env_to_module

    @property
    def module_to_env(self):
        """The module-to-env `ConnectorPipelineV2`."""
        return self._module_to_env

    def get_metrics(self) -> dict[str, Any]:
        """The runner's metrics since the last call, as plain numbers."""
        return self.metrics.reduce()

    def get_metrics_state(self) -> dict[str, Any]:
        """The metrics logged since the last call, as logger state for an exact merge elsewhere."""
        return self.metrics.reduce_to_state()

    def get_checkpointable_components(self) -> list[tuple[str, Checkpointable]]:
        module = [] if self.module is None else [(COMPONENT_RL_MODULE, self.module)]
        return [
            *module,
            (COMPONENT_ENV_TO_MODULE_CONNECTOR, self.env_to_module),
            (COMPONENT_MODULE_TO_ENV_CONNECTOR, self.module_to_env),
        ]

    def get_ctor_args_and_kwargs(self) -> tuple[tuple, dict[str, Any]]:
        return (), {"config": self.config, "worker_index": self.worker_index, "num_workers": self.num_workers}

    def ping(self) -> str:
        """Health probe for remote runners."""
        return "pong"

    def stop(self) -> None:
        """Writes what the runner still buffers for `config.output`, then releases the env (if it has one)."""
        if self._writer is not None:
            self._writer.close()
        if self.env is not None:
            self.env.close()
