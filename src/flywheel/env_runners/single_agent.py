"""`SingleAgentEnvRunner`: steps a gymnasium vector env and records `SingleAgentEpisode`s.

One forward pass per vector step serves all sub-envs. Each step is recorded column-wise by a
`VectorRecorder` (a constant number of Python operations per vector step, see
`flywheel.episodes.vector_recorder`), and the env-to-module pipeline builds every forward pass's
batch; metrics are counted in plain numbers and logged once per `sample()`.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

import gymnasium as gym
import numpy as np

from flywheel.columns import Columns
from flywheel.env.checks import ObservationMonitor, check_env, env_name
from flywheel.env.make import SUB_ENV_RESTARTED, make_vector_env
from flywheel.env_runners.env_runner import EnvRunner
from flywheel.episodes import SingleAgentEpisode
from flywheel.episodes.vector_recorder import VectorRecorder
from flywheel.errors import ConfigError
from flywheel.metrics import keys
from flywheel.typing import DEFAULT_MODULE_ID

if TYPE_CHECKING:
    from flywheel.algorithms.algorithm_config import AlgorithmConfig

_NOT_EXTRA = (Columns.ACTIONS, Columns.ACTIONS_FOR_ENV)


class SingleAgentEnvRunner(EnvRunner):
    """Samples episodes from `num_envs_per_env_runner` copies of a single-agent env (API.md §6)."""

    def __init__(
        self, config: AlgorithmConfig, *, worker_index: int = 0, num_workers: int | None = None, **kwargs
    ):
        super().__init__(config, worker_index=worker_index, num_workers=num_workers)
        self.env = self._make_env()
        self._next_step_autoreset = (
            self.env.metadata.get("autoreset_mode") == gym.vector.AutoresetMode.NEXT_STEP
        )
        self._env_to_module = config.build_env_to_module_connector(self.env, spaces=self._env_spaces())
        self._module_to_env = config.build_module_to_env_connector(self.env, spaces=self._env_spaces())
        spec = config.get_rl_module_spec(
            spaces=(self._env_to_module.observation_space, self._env_to_module.action_space)
        )
        spec.inference_only = True
        if spec.module_class is not None:  # else: no module, the runner samples random actions only
            self.module = spec.build()
            self._check_lookback_for_state()
        # Custom pieces may rewrite the stored observations (normalized floats, flattened dicts), so
        # episodes then take their dtypes from the data instead of casting to the env's space.
        self._episode_obs_space = (
            self.env.single_observation_space if config.env_to_module_connector is None else None
        )
        self._recorder = VectorRecorder(self.num_envs, self._episode_obs_space, self.env.single_action_space)
        self._clip_rewards = _reward_clipper(config.clip_rewards)
        self._returns = np.zeros(self.num_envs)  # unclipped, for metrics
        self._reset_pending = np.zeros(self.num_envs, bool)  # NEXT_STEP autoreset: env i resets next step
        self._restart_sub_envs = config.restart_failed_sub_environments
        self._num_sub_env_restarts = 0  # since the last sample() logged them
        self._obs_monitor = None
        if not config.disable_env_checking:
            self._obs_monitor = ObservationMonitor(
                env_name(config.env), self.env.single_observation_space, self.worker_index
            )

    # ------------------------------------------------------------------ setup

    def _env_spaces(self) -> tuple[gym.Space, gym.Space]:
        obs_space = self.config.observation_space or self.env.single_observation_space
        act_space = self.config.action_space or self.env.single_action_space
        return obs_space, act_space

    def _vector_env_spaces(self) -> tuple[gym.Space, gym.Space]:
        return self.env.observation_space, self.env.action_space

    def _module_spaces(self) -> dict[str, tuple]:
        return {DEFAULT_MODULE_ID: (self._env_to_module.observation_space, self._env_to_module.action_space)}

    def _env_check(self) -> Callable[[gym.Env], None]:
        # Unseeded: the runner's first reset seeds the env as configured. Observations outside a Box's
        # bounds: the runner's observation monitor warns once, for the check and the sampling together.
        return partial(check_env, seed=None, warn_bounds=False)

    def _make_vector_env(self, check: Callable[[Any], None] | None) -> Any:
        config = self.config
        return make_vector_env(
            config.env,
            config.env_config,
            num_envs=self.num_envs,
            vectorize_mode=config.gym_env_vectorize_mode,
            worker_index=self.worker_index,
            num_workers=self.num_workers,
            restart_failed_sub_environments=config.restart_failed_sub_environments,
            render_env=config.render_env,
            wrappers=config.env_wrappers,
            check=check,
        )

    def _check_lookback_for_state(self) -> None:
        if self.module.is_stateful() and self.config.episode_lookback_horizon < 1:
            raise ConfigError(
                f"{type(self.module).__name__} is stateful (recurrent), so a chunk that continues an episode "
                "reads the last STATE_OUT from its lookback, but episode_lookback_horizon="
                f"{self.config.episode_lookback_horizon}. Fix: config.env_runners(episode_lookback_horizon=1) "
                "or more."
            )

    # --------------------------------------------------------------- sampling

    def _sample_timesteps(self, num_timesteps: int, explore: bool, random_actions: bool):
        complete = self.config.batch_mode == "complete_episodes"
        done, stats, steps = [], [], 0
        while steps < num_timesteps:
            stepped, finished = self._step(explore, random_actions, stats)
            done.extend(finished)
            steps += sum(map(self._recorder.steps_of, finished)) if complete else stepped
        lookback = max(self.config.episode_lookback_horizon, self._env_to_module.required_episode_lookback)
        done.extend(self._recorder.end_sample(None if complete else lookback))
        return done, stats

    def _sample_episodes(self, num_episodes: int, explore: bool, random_actions: bool):
        done, stats = [], []
        while len(done) < num_episodes:
            done.extend(self._step(explore, random_actions, stats)[1])
        self._recorder.end_sample(None)
        self._episodes = None  # ongoing episodes are dropped; the next sample() resets
        return done[:num_episodes], stats[:num_episodes]

    def _step(self, explore: bool, random_actions: bool, stats: list) -> tuple[int, list]:
        """One vector step: act, step the env, record. Returns (env steps recorded, finished episodes)."""
        to_env = self._random_actions() if random_actions else self._act(self._recorder.episodes, explore)
        obs, rewards, terminateds, truncateds, infos = self.env.step(to_env[Columns.ACTIONS_FOR_ENV])
        recorder = self._recorder
        if self._obs_monitor is not None:
            self._obs_monitor.check(obs, recorder.episodes, terminateds, truncateds)
        self._returns += rewards
        if self._clip_rewards is not None:
            rewards = self._clip_rewards(rewards)
        starting, dropped_steps = self._not_stepping(infos, terminateds, truncateds)
        extras = {k: v for k, v in to_env.items() if k not in _NOT_EXTRA}
        extras[Columns.WEIGHTS_SEQ_NO] = self.weights_seq_no
        finished = recorder.add_step(
            obs, infos, to_env[Columns.ACTIONS], rewards, terminateds, truncateds, extras,
            final_obs=None if self._next_step_autoreset else infos.get("final_obs"),
        )  # fmt: skip
        if self._on_episode_step:
            for i, episode in enumerate(recorder.episodes):
                if i not in starting:
                    self._episode_callback("on_episode_step", episode, i)
        episodes = [recorder.episodes[i] for i in finished]
        for i, episode in zip(finished, episodes):
            assert episode is not None  # a finished sub-env ran one
            stats.append((float(self._returns[i]), episode.t_started + recorder.steps_of(episode)))
            self._reset_pending[i] = self._next_step_autoreset
        self._end_and_start_episodes(finished, starting, explore)
        stepped = self.num_envs - len(starting) - dropped_steps
        self._env_steps_sampled += stepped
        return stepped, episodes

    def _not_stepping(
        self, infos: dict, terminateds: np.ndarray, truncateds: np.ndarray
    ) -> tuple[list[int], int]:
        """The sub-envs whose episode did not take this step, to start anew: a NEXT_STEP autoreset
        only reset them, or they failed mid-episode and were rebuilt (their episode is dropped);
        and the steps the dropped episodes had recorded in this sample."""
        dropped_steps = 0
        starting = self._reset_pending.nonzero()[0].tolist() if self._next_step_autoreset else []
        if self._restart_sub_envs:
            for i in self._pop_restarts(infos):
                if not (terminateds[i] or truncateds[i]):
                    dropped_steps += self._recorder.drop(i)
                    starting.append(i)
        for i in starting:
            self._returns[i] = 0.0
            self._reset_pending[i] = False
        return starting, dropped_steps

    def _pop_restarts(self, infos: dict) -> list[int]:
        """Indices of the sub-envs rebuilt in the last call (their flag is removed from the vector
        env's infos and counted)."""
        flags = infos.pop(SUB_ENV_RESTARTED, None)
        mask = infos.pop("_" + SUB_ENV_RESTARTED, None)
        if flags is None:
            return []
        restarted = (flags.astype(bool) & mask).nonzero()[0].tolist()
        self._num_sub_env_restarts += len(restarted)
        return restarted

    def _end_and_start_episodes(self, finished: list[int], starting: list[int], explore: bool) -> None:
        """Ends the finished episodes, starts new ones and builds the next forward pass's batch.

        Callbacks come in RLlib's order (step, end, created, start), and each one sees the
        observations already processed by the env-to-module pipeline (final and reset ones too).
        """
        episodes = self._recorder.episodes
        if finished and not self._next_step_autoreset:
            self._process_final_observations([episodes[i] for i in finished], explore)
            self._end_episodes(finished)
            starting = starting + finished
        for i in starting:
            self._new_episode(i)
        self._to_module = self._next_module_input(explore)
        if self._next_step_autoreset:
            # Finished episodes stay in place until their sub-env resets next step, so the call
            # above processed their final observations along with everyone else's.
            self._end_episodes(finished)
        for i in starting:
            self._episode_callback("on_episode_start", episodes[i], i)

    def _end_episodes(self, finished: list[int]) -> None:
        for i in finished:
            self._returns[i] = 0.0
            self._episode_callback("on_episode_end", self._recorder.episodes[i], i)

    def _random_actions(self) -> dict[str, Any]:
        actions, to_env = self._random_action(self.env.action_space)
        return {Columns.ACTIONS: actions, Columns.ACTIONS_FOR_ENV: to_env}

    def _next_module_input(self, explore: bool) -> dict[str, Any]:
        """The next forward pass's batch; its `shared_data` goes on to the module-to-env pipeline of
        the same step, as in RLlib."""
        self._shared_data: dict[str, Any] = {}
        return self._call_env_to_module(self._recorder.episodes, explore, self._shared_data)

    def _reset_envs(self, explore: bool) -> None:
        seed = self._take_env_seed()
        if seed is not None:
            self.env.action_space.seed(seed)  # random_actions=True samples from it
        obs, infos = self.env.reset(seed=seed)
        if self._restart_sub_envs:
            self._pop_restarts(infos)
        self._recorder.reset(obs, infos)
        self._episodes = self._recorder.episodes
        self._returns[:] = 0.0
        self._reset_pending[:] = False
        for i in range(self.num_envs):
            self._new_episode(i)
        self._to_module = self._next_module_input(explore)
        for i, episode in enumerate(self._recorder.episodes):
            self._episode_callback("on_episode_start", episode, i)

    def _new_episode(self, index: int) -> None:
        """Puts a new episode in place for sub-env `index`; it begins with the sub-env's newest
        observation and info."""
        episode = SingleAgentEpisode(
            observation_space=self._episode_obs_space,
            action_space=self.env.single_action_space,
            len_lookback_buffer=0,
        )
        self._episode_callback("on_episode_created", episode, index)
        self._recorder.start(index, episode)

    def _log_sample_metrics(self, episodes: list[SingleAgentEpisode], stats: list[tuple[float, int]]) -> None:
        log_episode_metrics(self, episodes, stats)
        if self._restart_sub_envs:
            m = self.metrics
            m.log_value("num_sub_env_restarts", self._num_sub_env_restarts, reduce="sum")
            m.log_value("num_sub_env_restarts_lifetime", self._num_sub_env_restarts, reduce="lifetime_sum")
            self._num_sub_env_restarts = 0


def log_episode_metrics(
    runner: EnvRunner, episodes: list[SingleAgentEpisode], stats: list[tuple[float, int]]
) -> None:
    """Logs one `sample()` call's metrics on `runner.metrics`: the returned `episodes` (finished ones
    and chunks), and `(return, length)` of each episode that finished, over its whole length."""
    m, window = runner.metrics, runner.config.metrics_num_episodes_for_smoothing
    # A window keeps only its newest `window` values, so older ones would be dropped unseen
    # (at 64 sub-envs a sample() finishes ~190 CartPole episodes).
    for ret, length in stats[-window:]:
        m.log_value(keys.EPISODE_RETURN_MEAN, ret, window=window)
        m.log_value(keys.EPISODE_RETURN_MIN, ret, reduce="min", window=window)
        m.log_value(keys.EPISODE_RETURN_MAX, ret, reduce="max", window=window)
        m.log_value(keys.EPISODE_LEN_MEAN, length, window=window)
        m.log_value(keys.EPISODE_LEN_MIN, length, reduce="min", window=window)
        m.log_value(keys.EPISODE_LEN_MAX, length, reduce="max", window=window)
    num_steps = sum(len(e) for e in episodes)
    m.log_value(keys.NUM_EPISODES, len(stats), reduce="sum")
    m.log_value(keys.NUM_EPISODES_LIFETIME, len(stats), reduce="lifetime_sum")
    m.log_value(keys.NUM_ENV_STEPS_SAMPLED, num_steps, reduce="sum")
    m.log_value(keys.NUM_ENV_STEPS_SAMPLED_LIFETIME, num_steps, reduce="lifetime_sum", with_throughput=True)
    m.log_value(keys.WEIGHTS_SEQ_NO, runner.weights_seq_no, reduce="max", window=1)


def _reward_clipper(clip: bool | float | None):
    """None (rewards pass unchanged), the sign (`clip_rewards=True`) or clipping to [-clip, clip]."""
    if clip is None or clip is False:
        return None
    if clip is True:
        return np.sign
    return lambda rewards: np.clip(rewards, -clip, clip)
