"""`MultiAgentEnvRunner`: steps a multi-agent vector env and records `MultiAgentEpisode`s.

One forward pass per vector step serves every agent that acts next in every sub-env: the
env-to-module pipeline builds `{module_id: {column: batched}}` (rows laid out by
`connectors.env_to_module.agent_rows`), the `MultiRLModule` runs each module once, and the
runner maps the module-to-env output back to one `{agent_id: action}` dict per sub-env.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from functools import partial
from itertools import repeat
from typing import TYPE_CHECKING, Any

import gymnasium as gym
import numpy as np
import tree

from flywheel.columns import Columns
from flywheel.connectors.env_to_module.agent_rows import agent_rows
from flywheel.core.rl_module.multi_rl_module import MultiRLModule
from flywheel.env.checks import env_name
from flywheel.env.make import SUB_ENV_RESTARTED
from flywheel.env.multi_agent_checks import MultiAgentObservationMonitor, check_multi_agent_env
from flywheel.env.multi_agent_vector_env import FINAL_INFOS, FINAL_OBS, make_multi_agent_vector_env
from flywheel.env_runners.env_runner import EnvRunner
from flywheel.env_runners.multi_agent_metrics import EpisodeStats, log_sample_metrics
from flywheel.env_runners.multi_agent_modules import (
    mapping_fn,
    module_spaces,
    module_spec,
    multi_rl_module_spec,
    raise_unknown_module,
)
from flywheel.episodes import MultiAgentEpisode
from flywheel.errors import ConfigError

if TYPE_CHECKING:
    from flywheel.algorithms.algorithm_config import AlgorithmConfig

_NOT_EXTRA = (Columns.ACTIONS, Columns.ACTIONS_FOR_ENV)


class MultiAgentEnvRunner(EnvRunner):
    """Samples episodes from `num_envs_per_env_runner` copies of a `MultiAgentEnv` (API.md §6-§7).

    `sample()` has the single-agent runner's contract; `num_timesteps` counts env steps, or agent
    steps (actions sent) with `config.multi_agent(count_steps_by="agent_steps")`.
    """

    def __init__(
        self, config: AlgorithmConfig, *, worker_index: int = 0, num_workers: int | None = None, **kwargs
    ):
        super().__init__(config, worker_index=worker_index, num_workers=num_workers)
        self.env = self._make_env()
        self._mapping_fn = mapping_fn(config)
        spaces = self._env_spaces()
        self._env_to_module = config.build_env_to_module_connector(self.env, spaces=spaces)
        self._module_to_env = config.build_module_to_env_connector(self.env, spaces=spaces)
        self.module_spec = multi_rl_module_spec(config, self._module_spaces_for(config))
        self.module = self._build_inference_module()
        self._count_agent_steps = config.count_steps_by == "agent_steps"
        self._stats = [EpisodeStats() for _ in range(self.num_envs)]
        self._rows: dict[str, Any] = {}
        self._checked_modules: set[str] = set()  # module ids the mapping returned that the module has
        self._restart_sub_envs = config.restart_failed_sub_environments
        self._num_sub_env_restarts = 0  # since the last sample() logged them
        self._chunk_steps = [0] * self.num_envs  # steps counted per sub-env's chunk (restarts only)
        self._obs_monitor = None
        if not config.disable_env_checking:
            spaces = dict(self.env.observation_spaces)
            self._obs_monitor = MultiAgentObservationMonitor(env_name(config.env), spaces, self.worker_index)

    # ------------------------------------------------------------------ setup

    @property
    def _ongoing(self) -> list[MultiAgentEpisode]:
        """The sub-envs' current episodes (from a reset until episodes are sampled or modules change)."""
        assert self._episodes is not None
        return self._episodes

    def _env_check(self) -> Callable[[Any], None]:
        # Unseeded: the runner's first reset seeds the env as configured. Observations outside a Box's
        # bounds: the runner's observation monitor warns once, for the check and the sampling together.
        return partial(check_multi_agent_env, seed=None, warn_bounds=False)

    def _make_vector_env(self, check: Callable[[Any], None] | None) -> Any:
        config = self.config
        return make_multi_agent_vector_env(
            config.env,
            config.env_config,
            num_envs=self.num_envs,
            vectorize_mode=config.gym_env_vectorize_mode,
            worker_index=self.worker_index,
            num_workers=self.num_workers,
            restart_failed_sub_environments=config.restart_failed_sub_environments,
            check=check,
        )

    def _env_spaces(self) -> tuple[gym.spaces.Dict, gym.spaces.Dict]:
        return gym.spaces.Dict(self.env.observation_spaces), gym.spaces.Dict(self.env.action_spaces)

    def _vector_env_spaces(self) -> tuple[gym.spaces.Dict, gym.spaces.Dict]:
        """One env's: the multi-agent vector env has no batched spaces (as the connector hooks see it)."""
        return self._env_spaces()

    def _recorded_spaces(self) -> dict[str, tuple]:
        """Offline datasets record each agent's spaces, by agent id."""
        return {
            str(agent): (self.env.observation_spaces[agent], self.env.action_spaces[agent])
            for agent in self.env.possible_agents
        }

    def _module_spaces(self) -> dict[str, tuple]:
        specs = self.module_spec.rl_module_specs
        return {module_id: (spec.observation_space, spec.action_space) for module_id, spec in specs.items()}

    def _module_spaces_for(self, config: AlgorithmConfig) -> dict:
        """Per module, its first agent's spaces; observation spaces as the env-to-module pipeline outputs
        them (when it outputs a Dict keyed by agent id), else the env's."""
        out = self._env_to_module.observation_space
        observation_spaces: dict[Any, gym.Space] = dict(self.env.observation_spaces)
        if isinstance(out, gym.spaces.Dict):
            observation_spaces = {a: out.spaces.get(a, space) for a, space in observation_spaces.items()}
        return module_spaces(config, self.env.possible_agents, observation_spaces, self.env.action_spaces)

    def _build_inference_module(self) -> MultiRLModule | None:
        """The runner's modules (inference-only); None when the config names no module class (the
        runner then samples random actions only)."""
        specs = self.module_spec.rl_module_specs
        if any(spec.module_class is None for spec in specs.values()):
            return None
        module = self.module_spec.multi_rl_module_class(
            {
                mid: dataclasses.replace(spec, inference_only=True).build()
                for mid, spec in specs.items()
                if not spec.learner_only  # (trained on learners, never acting)
            },
            observation_space=self.module_spec.observation_space,
            action_space=self.module_spec.action_space,
            model_config=self.module_spec.model_config,
        )
        stateful = [module_id for module_id, m in module.items() if m.is_stateful()]
        if stateful and self.config.episode_lookback_horizon < 1:
            raise ConfigError(
                f"Modules {stateful} are stateful (recurrent), so a chunk that continues an episode reads "
                f"the last STATE_OUT from its lookback, but episode_lookback_horizon="
                f"{self.config.episode_lookback_horizon}. Fix: config.env_runners(episode_lookback_horizon=1)."
            )
        return module

    # --------------------------------------------------------------- sampling

    def _log_sample_metrics(self, episodes: list[MultiAgentEpisode], stats: list) -> None:
        log_sample_metrics(self.metrics, self.config, episodes, stats, self.weights_seq_no)
        if self._restart_sub_envs:
            m = self.metrics
            m.log_value("num_sub_env_restarts", self._num_sub_env_restarts, reduce="sum")
            m.log_value("num_sub_env_restarts_lifetime", self._num_sub_env_restarts, reduce="lifetime_sum")
            self._num_sub_env_restarts = 0

    def _sample_timesteps(self, num_timesteps: int, explore: bool, random_actions: bool):
        complete = self.config.batch_mode == "complete_episodes"
        done, stats, steps = [], [], 0
        while steps < num_timesteps:
            stepped, finished = self._step(explore, random_actions, stats)
            done.extend(finished)
            if complete:
                steps += sum(e.agent_steps() if self._count_agent_steps else len(e) for e in finished)
            else:
                steps += stepped
        if not complete:
            done.extend(self._cut_ongoing())
        return done, stats

    def _sample_episodes(self, num_episodes: int, explore: bool, random_actions: bool):
        done, stats = [], []
        while len(done) < num_episodes:
            done.extend(self._step(explore, random_actions, stats)[1])
        self._episodes = None
        return done[:num_episodes], stats[:num_episodes]

    def _cut_ongoing(self) -> list[MultiAgentEpisode]:
        chunks = []
        lookback = max(self.config.episode_lookback_horizon, self._env_to_module.required_episode_lookback)
        for i, episode in enumerate(self._ongoing):
            if len(episode) == 0:
                continue
            self._ongoing[i] = episode.cut(len_lookback_buffer=lookback)
            self._stats[i].add_chunk(episode)
            self._chunk_steps[i] = 0
            chunks.append(episode.to_numpy())
        return chunks

    def _step(self, explore: bool, random_actions: bool, stats: list) -> tuple[int, list]:
        """One vector step. Returns (env or agent steps taken, finished episodes)."""
        actions, to_env, extras = self._random_actions() if random_actions else self._compute_actions(explore)
        obs, rewards, terminateds, truncateds, infos = self.env.step(to_env)
        if self._obs_monitor is not None:
            self._obs_monitor.check(obs, self._ongoing)
        stepped = sum(map(len, actions)) if self._count_agent_steps else len(actions)
        self._env_steps_sampled += len(actions)
        restarted = self._count_chunk_steps(actions, infos) if self._restart_sub_envs else ()
        finished, starting = [], []
        for i, episode in enumerate(self._ongoing):
            info = infos[i]
            final_obs = info.get(FINAL_OBS)
            if final_obs is not None:
                next_obs, next_infos = final_obs, info[FINAL_INFOS]
            elif i in restarted:
                # Sub-env i failed mid-episode and was rebuilt: its episode is dropped (with the
                # steps it recorded in this sample) and a new one starts from the fresh reset.
                stepped -= self._chunk_steps[i]
                self._new_episode(i, obs[i], info)
                starting.append(i)
                continue
            else:
                next_obs, next_infos = obs[i], info
            episode.add_env_step(
                next_obs, actions[i], rewards[i], next_infos,
                terminateds=terminateds[i], truncateds=truncateds[i], extra_model_outputs=extras[i],
            )  # fmt: skip
            if self._on_episode_step:
                self._episode_callback("on_episode_step", episode, i)
            if episode.is_terminated or episode.is_truncated:
                finished.append((i, episode))
                stats.append(self._stats[i].finish(episode))
        self._end_and_start_episodes(finished, starting, obs, infos, explore)
        return stepped, [episode for _, episode in finished]

    def _count_chunk_steps(self, actions: list[dict], infos: list[dict]) -> list[int]:
        """Counts each sub-env's steps since its chunk started (what dropping its episode takes back
        from the sample's count); returns the sub-envs rebuilt in this step."""
        counts = self._chunk_steps
        for i, agent_actions in enumerate(actions):
            counts[i] += len(agent_actions) if self._count_agent_steps else 1
        return self._pop_restarts(infos)

    def _pop_restarts(self, infos: list[dict]) -> list[int]:
        """Indices of the sub-envs rebuilt in the last call (their flag is removed and counted)."""
        restarted = [i for i, info in enumerate(infos) if info.pop(SUB_ENV_RESTARTED, False)]
        self._num_sub_env_restarts += len(restarted)
        return restarted

    def _end_and_start_episodes(
        self, finished: list, starting: list[int], obs: list, infos: list, explore: bool
    ) -> None:
        """Ends finished episodes, starts their successors, prepares the next forward pass (callbacks
        in RLlib's order: step, end, created, start)."""
        if finished:
            self._process_final_observations([episode for _, episode in finished], explore)
            for i, episode in finished:
                self._episode_callback("on_episode_end", episode, i)
                episode.to_numpy()
                reset_infos = {k: v for k, v in infos[i].items() if k not in (FINAL_OBS, FINAL_INFOS)}
                self._new_episode(i, obs[i], reset_infos)
                starting.append(i)
        self._prepare_forward(explore)
        for i in starting:
            self._episode_callback("on_episode_start", self._ongoing[i], i)

    def _prepare_forward(self, explore: bool) -> None:
        """Lays out the rows of the next forward pass (checking each module the mapping names once)
        and has the env-to-module pipeline build its batch."""
        shared_data: dict[str, Any] = {}
        self._shared_data = shared_data  # also passed to the module-to-env pipeline of this step, as in RLlib
        self._rows = agent_rows(self._ongoing, shared_data)
        if self.module is None:
            return
        for module_id, rows in self._rows.items():
            if module_id not in self._checked_modules:
                if module_id not in self.module:
                    index, agent_id = rows.keys[0]
                    raise_unknown_module(agent_id, module_id, self.module.keys())
                self._checked_modules.add(module_id)
        self._to_module = self._call_env_to_module(self._ongoing, explore, shared_data)

    def _random_actions(self) -> tuple[list[dict], list[dict], list[dict]]:
        actions, to_env = [], []
        for episode in self._ongoing:
            pairs = {
                agent_id: self._random_action(self.env.get_action_space(agent_id))
                for agent_id in episode.get_agents_to_act()
            }
            actions.append({agent_id: pair[0] for agent_id, pair in pairs.items()})
            to_env.append({agent_id: pair[1] for agent_id, pair in pairs.items()})
        return actions, to_env, [{} for _ in actions]

    def _compute_actions(self, explore: bool) -> tuple[list[dict], list[dict], list[dict]]:
        """The module-to-env output mapped back to `{agent_id: ...}` per sub-env (actions, to env, extras)."""
        to_env = self._act(self._ongoing, explore)
        return _per_sub_env(to_env, self._rows, self.num_envs, self.weights_seq_no)

    def _reset_envs(self, explore: bool) -> None:
        seed = self._take_env_seed()
        if seed is not None:
            for i, agent_id in enumerate(self.env.possible_agents):
                self.env.get_action_space(agent_id).seed(seed + i)
        obs, infos = self.env.reset(seed=seed)
        if self._restart_sub_envs:
            self._pop_restarts(infos)
        self._episodes = [None] * self.num_envs
        for i in range(self.num_envs):
            self._new_episode(i, obs[i], infos[i])
        self._prepare_forward(explore)
        for i, episode in enumerate(self._ongoing):
            self._episode_callback("on_episode_start", episode, i)

    def _new_episode(self, index: int, observations: dict, infos: dict) -> None:
        episode = MultiAgentEpisode(
            observation_space=self.env.observation_spaces
            if self.config.env_to_module_connector is None
            else None,
            action_space=self.env.action_spaces,
            agent_to_module_mapping_fn=self._mapping_fn,
        )
        episodes = self._episodes
        assert episodes is not None  # `_reset_envs` made the slots
        episodes[index] = episode
        self._stats[index] = EpisodeStats()
        self._chunk_steps[index] = 0
        self._episode_callback("on_episode_created", episode, index)
        episode.add_env_reset(observations=observations, infos=infos)

    # ---------------------------------------------------------------- modules

    def add_module(self, module_id: str, spec: Any, config: AlgorithmConfig) -> Any:
        """Adds an (inference-only) module built from `spec` completed like the others' (spaces of its
        agents, config defaults) and returns the completed spec. `config` (with `module_id` in
        `policies`) replaces the runner's, so agents of new episodes map with its policy_mapping_fn."""
        self._use_config(config)
        spec = module_spec(config, module_id, self._module_spaces_for(config).get(module_id), own=spec)
        self.module_spec.rl_module_specs[module_id] = spec
        self._checked_modules.discard(module_id)  # checked again when the mapping names it
        assert self.module is not None  # a runner without modules samples random actions only
        self.module.add_module(
            module_id, dataclasses.replace(spec, inference_only=True).build(), override=True
        )
        return spec

    def remove_module(self, module_id: str, config: AlgorithmConfig) -> None:
        """Removes a module; ongoing episodes restart, since their agents may still map to it."""
        self._use_config(config)
        self.module_spec.rl_module_specs.pop(module_id, None)
        assert self.module is not None
        self.module.remove_module(module_id)
        self._checked_modules.discard(module_id)
        self._episodes = None

    def _use_config(self, config: AlgorithmConfig) -> None:
        self.config = config
        self._mapping_fn = mapping_fn(config)


def _per_sub_env(
    to_env: dict[str, dict], rows: dict[str, Any], num_envs: int, weights_seq_no: int
) -> tuple[list[dict], list[dict], list[dict]]:
    """The module-to-env output (`{module_id: {column: batched}}`, rows laid out by `rows`) as
    `{agent_id: ...}` per sub-env: actions, actions for the env, and extras (the other columns and
    `WEIGHTS_SEQ_NO`). One loop over all rows, since it runs every step for every acting agent."""
    actions, for_env, extras = (
        [{} for _ in range(num_envs)],
        [{} for _ in range(num_envs)],
        [{} for _ in range(num_envs)],
    )
    for module_id, columns in to_env.items():
        keys = rows[module_id].keys
        n = len(keys)
        extra_keys = [k for k in columns if k not in _NOT_EXTRA]
        extra_values = zip(*[_unstack(columns[k], n) for k in extra_keys], repeat(weights_seq_no))
        extra_keys.append(Columns.WEIGHTS_SEQ_NO)
        column, column_for_env = columns[Columns.ACTIONS], columns[Columns.ACTIONS_FOR_ENV]
        row_actions = _unstack(column, n)
        # Unchanged actions (no normalizing or clipping) are the same array: unstacked once.
        row_for_env = row_actions if column_for_env is column else _unstack(column_for_env, n)
        for (i, agent_id), action, action_for_env, values in zip(
            keys, row_actions, row_for_env, extra_values
        ):
            actions[i][agent_id] = action
            for_env[i][agent_id] = action_for_env
            extras[i][agent_id] = dict(zip(extra_keys, values))
    return actions, for_env, extras


def _unstack(batched: Any, n: int) -> list:
    """The `n` rows of a batched array (of every leaf, for nested columns), as a list."""
    if isinstance(batched, np.ndarray):
        # Indexing, not list(batched): iterating an array ends on a raised IndexError, which
        # costs more than the indexing of a few rows.
        return [batched[r] for r in range(n)]
    return [tree.map_structure(lambda leaf, r=r: leaf[r], batched) for r in range(n)]
