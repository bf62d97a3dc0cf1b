"""`SingleAgentEnvRunner`: steps a gymnasium vector env and records `SingleAgentEpisode`s.

One forward pass per vector step serves all sub-envs. Per step the runner only appends to the
episodes' lists; metrics are counted in plain numbers and logged once per `sample()`.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from flywheel.columns import Columns
from flywheel.connectors.env_to_module import NumpyToTensor, only_default_pieces
from flywheel.connectors.module_to_env import GetActions
from flywheel.env.checks import ObservationMonitor, check_env, env_name
from flywheel.env.make import SUB_ENV_RESTARTED, make_vector_env
from flywheel.env_runners.env_runner import EnvRunner
from flywheel.env_runners.infos import row, unbatch_infos
from flywheel.episodes import SingleAgentEpisode
from flywheel.errors import ConfigError, ModuleError
from flywheel.metrics import keys
from flywheel.typing import DEFAULT_MODULE_ID

_NOT_EXTRA = (Columns.ACTIONS, Columns.ACTIONS_FOR_ENV)


class SingleAgentEnvRunner(EnvRunner):
    """Samples episodes from `num_envs_per_env_runner` copies of a single-agent env (API.md §6)."""

    def __init__(self, config, *, worker_index: int = 0, num_workers: int | None = None, **kwargs):
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
        self._direct_pieces: list = []  # the pipeline pieces `_to_tensor` was decided for
        self._to_tensor: NumpyToTensor | None = None
        # Custom pieces may rewrite the stored observations (normalized floats, flattened dicts), so
        # episodes then take their dtypes from the data instead of casting to the env's space.
        self._episode_obs_space = (
            self.env.single_observation_space if config.env_to_module_connector is None else None
        )
        # Forward passes (explore True/False) whose output still has to be checked once.
        has_get_actions = any(isinstance(p, GetActions) for p in self._module_to_env.connectors)
        self._unchecked_forwards = {True, False} if has_get_actions else set()
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

    def _check_env(self, env: Any) -> None:
        check_env(env)

    def _make_vector_env(self) -> Any:
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
            steps += sum(len(e) for e in finished) if complete else stepped
        if not complete:
            done.extend(self._cut_ongoing())
        return done, stats

    def _sample_episodes(self, num_episodes: int, explore: bool, random_actions: bool):
        done, stats = [], []
        while len(done) < num_episodes:
            done.extend(self._step(explore, random_actions, stats)[1])
        self._episodes = None  # ongoing episodes are dropped; the next sample() resets
        return done[:num_episodes], stats[:num_episodes]

    def _cut_ongoing(self) -> list[SingleAgentEpisode]:
        chunks = []
        lookback = max(self.config.episode_lookback_horizon, self._env_to_module.required_episode_lookback)
        for i, episode in enumerate(self._episodes):
            if self._reset_pending[i] or len(episode) == 0:
                continue
            self._episodes[i] = episode.cut(len_lookback_buffer=lookback)
            episode.to_numpy()
            chunks.append(episode)
        return chunks

    def _step(self, explore: bool, random_actions: bool, stats: list) -> tuple[int, list]:
        """One vector step: act, step the env, record. Returns (env steps recorded, finished episodes)."""
        to_env = self._random_actions() if random_actions else self._compute_actions(explore)
        obs, rewards, terminateds, truncateds, infos = self.env.step(to_env[Columns.ACTIONS_FOR_ENV])
        if self._obs_monitor is not None:
            self._obs_monitor.check(obs, self._episodes, terminateds, truncateds)
        self._returns += rewards
        if self._clip_rewards is not None:
            rewards = self._clip_rewards(rewards)
        per_env_infos = unbatch_infos(infos, self.num_envs)
        final_obs = infos.get("final_obs") if not self._next_step_autoreset else None
        final_infos = unbatch_infos(infos["final_info"], self.num_envs) if final_obs is not None else None
        restarted = self._pop_restarts(per_env_infos) if self._restart_sub_envs else ()

        actions = to_env[Columns.ACTIONS]
        extra_keys = [k for k in to_env if k not in _NOT_EXTRA]
        seq_no = self.weights_seq_no
        stepped, finished, starting = 0, [], []
        for i, episode in enumerate(self._episodes):
            if i in restarted and not (terminateds[i] or truncateds[i]):
                # Sub-env i failed mid-episode and was rebuilt: its episode is dropped (with the
                # steps it recorded in this sample) and a new one starts from the fresh reset.
                stepped -= len(episode)
                self._returns[i] = 0.0
                self._new_episode(i, row(obs, i), per_env_infos[i])
                starting.append(i)
                continue
            if self._reset_pending[i]:  # NEXT_STEP autoreset: this step only reset sub-env i
                self._reset_pending[i] = False
                self._returns[i] = 0.0
                self._new_episode(i, row(obs, i), per_env_infos[i])
                starting.append(i)
                continue
            extra = {k: row(to_env[k], i) for k in extra_keys}
            extra[Columns.WEIGHTS_SEQ_NO] = seq_no
            terminated, truncated = bool(terminateds[i]), bool(truncateds[i])
            done = terminated or truncated
            if done and final_obs is not None:
                next_obs, info = final_obs[i], final_infos[i]
            else:
                next_obs, info = row(obs, i), per_env_infos[i]
            episode.add_env_step(
                next_obs, row(actions, i), rewards[i], infos=info,
                terminated=terminated, truncated=truncated, extra_model_outputs=extra,
            )  # fmt: skip
            stepped += 1
            if self._on_episode_step:
                self._episode_callback("on_episode_step", episode, i)
            if done:
                finished.append((i, episode))
                stats.append((float(self._returns[i]), episode.t))
                self._reset_pending[i] = self._next_step_autoreset
        self._env_steps_sampled += stepped
        self._end_and_start_episodes(finished, starting, obs, per_env_infos, explore)
        return stepped, [episode for _, episode in finished]

    def _pop_restarts(self, per_env_infos: list[dict]) -> list[int]:
        """Indices of the sub-envs rebuilt in the last call (their flag is removed and counted)."""
        restarted = [i for i, info in enumerate(per_env_infos) if info.pop(SUB_ENV_RESTARTED, False)]
        self._num_sub_env_restarts += len(restarted)
        return restarted

    def _end_and_start_episodes(
        self, finished: list, starting: list[int], obs: Any, infos: list[dict], explore: bool
    ) -> None:
        """Ends the finished episodes, starts new ones and prepares the next forward pass.

        Callbacks come in RLlib's order (step, end, created, start), and each one sees the
        observations already processed by the env-to-module pipeline (final and reset ones too).
        """
        if self._next_step_autoreset:
            # Finished episodes stay in place until their sub-env resets next step, so this call
            # processes their final observations along with everyone else's.
            self._to_module = self._module_input(obs, explore)
            self._end_episodes(finished)
        else:
            if finished:
                if self._direct_to_tensor() is None:
                    self._call_env_to_module([episode for _, episode in finished], explore)
                self._end_episodes(finished)
                for i, _ in finished:
                    self._new_episode(i, row(obs, i), infos[i])
                    starting.append(i)
            self._to_module = self._module_input(obs, explore)
        for i in starting:
            self._episode_callback("on_episode_start", self._episodes[i], i)

    def _end_episodes(self, finished: list) -> None:
        for i, episode in finished:
            self._returns[i] = 0.0
            self._episode_callback("on_episode_end", episode, i)
            episode.to_numpy()

    def _random_actions(self) -> dict[str, Any]:
        actions = self.env.action_space.sample()
        return {Columns.ACTIONS: actions, Columns.ACTIONS_FOR_ENV: actions}

    def _compute_actions(self, explore: bool) -> dict[str, Any]:
        if explore:
            out = self.module.forward_exploration(self._to_module, t=self._global_env_steps())
        else:
            out = self.module.forward_inference(self._to_module)
        if explore in self._unchecked_forwards:
            self._check_module_output(out, explore)
        return self._module_to_env(
            rl_module=self.module, batch=out, episodes=self._episodes, explore=explore,
            shared_data=self._shared_data, metrics=self.metrics,
        )  # fmt: skip

    def _check_module_output(self, out: Any, explore: bool) -> None:
        """Once per forward kind: the default GetActions piece needs ACTION_DIST_INPUTS (or ACTIONS)."""
        method = "forward_exploration" if explore else "forward_inference"
        name = type(self.module).__name__
        if not isinstance(out, dict):
            raise ModuleError(
                f"{name}.{method}() returned a {type(out).__name__}, expected a dict of columns. "
                f"Fix: return {{Columns.ACTION_DIST_INPUTS: logits}} from {name}._forward."
            )
        if Columns.ACTION_DIST_INPUTS not in out and Columns.ACTIONS not in out:
            raise ModuleError(
                f"{name}.{method}() returned the keys {sorted(out)}, but the runner's GetActions piece needs "
                f"Columns.ACTION_DIST_INPUTS ({Columns.ACTION_DIST_INPUTS!r}) to sample actions from, or "
                f"Columns.ACTIONS ({Columns.ACTIONS!r}) chosen by the module. Fix: return "
                f"{{Columns.ACTION_DIST_INPUTS: logits}} from {name}._forward (or the phase method)."
            )
        self._unchecked_forwards.discard(explore)

    def _module_input(self, obs: Any, explore: bool) -> dict[str, Any]:
        """The next forward pass's batch. When the env-to-module pipeline only batches the latest
        observations and no `on_episode_step` callback may have rewritten them, that batch is the
        env's observations as they came (the episodes' last observations, row by row), converted
        by the pipeline's own `NumpyToTensor`."""
        self._shared_data = {}  # also passed to the module-to-env pipeline of this step, as in RLlib
        if self.module is None:
            return {}
        to_tensor = self._direct_to_tensor()
        if to_tensor is None:
            return self._call_env_to_module(self._episodes, explore, self._shared_data)
        return to_tensor(
            rl_module=self.module, batch={Columns.OBS: obs}, episodes=self._episodes, explore=explore,
            shared_data=self._shared_data, metrics=self.metrics,
        )  # fmt: skip

    def _direct_to_tensor(self) -> NumpyToTensor | None:
        """The pipeline's `NumpyToTensor` when the next forward's batch may be the env's observations
        (see `_module_input`), else None; decided again when the pipeline's pieces change."""
        pieces = self._env_to_module.connectors
        if pieces != self._direct_pieces:
            self._direct_pieces = list(pieces)
            direct = (
                only_default_pieces(pieces)
                and not self._on_episode_step
                and self.module is not None
                and not self.module.is_stateful()
            )
            self._to_tensor = pieces[-1] if direct else None
        return self._to_tensor

    def _call_env_to_module(
        self, episodes: list[SingleAgentEpisode], explore: bool, shared_data: dict | None = None
    ) -> dict[str, Any]:
        if self.module is None:  # nothing will read the batch
            return {}
        return self._env_to_module(
            rl_module=self.module, batch={}, episodes=episodes, explore=explore,
            shared_data={} if shared_data is None else shared_data, metrics=self.metrics,
        )  # fmt: skip

    def _reset_envs(self, explore: bool) -> None:
        seed = self._take_env_seed()
        if seed is not None:
            self.env.action_space.seed(seed)  # random_actions=True samples from it
        obs, infos = self.env.reset(seed=seed)
        per_env_infos = unbatch_infos(infos, self.num_envs)
        if self._restart_sub_envs:
            self._pop_restarts(per_env_infos)
        self._episodes = [None] * self.num_envs
        self._returns[:] = 0.0
        self._reset_pending[:] = False
        for i in range(self.num_envs):
            self._new_episode(i, row(obs, i), per_env_infos[i])
        self._to_module = self._module_input(obs, explore)
        for i, episode in enumerate(self._episodes):
            self._episode_callback("on_episode_start", episode, i)

    def _new_episode(self, index: int, observation: Any, info: dict) -> None:
        """Puts a new episode for sub-env `index` in place, holding its reset observation."""
        episode = SingleAgentEpisode(
            observation_space=self._episode_obs_space,
            action_space=self.env.single_action_space,
            len_lookback_buffer=0,
        )
        self._episodes[index] = episode
        self._episode_callback("on_episode_created", episode, index)
        episode.add_env_reset(observation, infos=info)

    def _log_sample_metrics(self, episodes: list[SingleAgentEpisode], stats: list[tuple[float, int]]) -> None:
        m, window = self.metrics, self.config.metrics_num_episodes_for_smoothing
        for ret, length in stats:
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
        m.log_value(
            keys.NUM_ENV_STEPS_SAMPLED_LIFETIME, num_steps, reduce="lifetime_sum", with_throughput=True
        )
        m.log_value(keys.WEIGHTS_SEQ_NO, self.weights_seq_no, reduce="max", window=1)
        if self._restart_sub_envs:
            m.log_value("num_sub_env_restarts", self._num_sub_env_restarts, reduce="sum")
            m.log_value("num_sub_env_restarts_lifetime", self._num_sub_env_restarts, reduce="lifetime_sum")
            self._num_sub_env_restarts = 0


def _reward_clipper(clip: bool | float | None):
    """None (rewards pass unchanged), the sign (`clip_rewards=True`) or clipping to [-clip, clip]."""
    if clip is None or clip is False:
        return None
    if clip is True:
        return np.sign
    return lambda rewards: np.clip(rewards, -clip, clip)
