"""`MultiAgentEpisode`: the record of one multi-agent episode (or one chunk of it).

An EnvRunner drives it like this::

    episode = MultiAgentEpisode(observation_space=env.observation_spaces, action_space=env.action_spaces,
                                agent_to_module_mapping_fn=policy_mapping_fn)
    episode.add_env_reset(observations=obs, infos=infos)
    while not episode.is_done and not enough_steps:
        actions = {aid: act(episode.module_for(aid), obs[aid]) for aid in episode.get_agents_to_act()}
        obs, rewards, terminateds, truncateds, infos = env.step(actions)
        episode.add_env_step(obs, actions, rewards, infos, terminateds=terminateds, truncateds=truncateds)
    chunk_for_learner, episode = episode, episode.cut(len_lookback_buffer=n)   # ongoing: continue
    chunk_for_learner.to_numpy()

Each agent's trajectory is a `SingleAgentEpisode` in ``agent_episodes``, counted in the
agent's own steps: an agent step runs from one of its observations to the next. An agent that
acted but has not observed again has its step *in flight*: the action (and extra model
outputs) wait, and every reward the agent gets meanwhile is summed, until its next observation
completes the step. ``env_t_to_agent_t`` ties the two timelines together (see
`multi_agent_indexing`), so getters can index env steps (``env_steps=True``) or agent steps.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

import gymnasium as gym

from flywheel.episodes import chunks, multi_agent_chunks, multi_agent_data
from flywheel.episodes import multi_agent_contract as contract
from flywheel.episodes.episode_id import new_episode_id
from flywheel.episodes.lookback_buffer import LookbackBuffer
from flywheel.episodes.multi_agent_bookkeeping import Bookkeeping, end_in_flight_step
from flywheel.episodes.multi_agent_indexing import NOT_OBSERVED, MultiAgentGetters
from flywheel.episodes.multi_agent_setters import MultiAgentSetters
from flywheel.episodes.single_agent_episode import SingleAgentEpisode
from flywheel.errors import EpisodeError
from flywheel.typing import DEFAULT_MODULE_ID, AgentID, ModuleID

MappingFn = Callable[..., ModuleID]


class MultiAgentEpisode(MultiAgentGetters, MultiAgentSetters):
    """One multi-agent episode chunk: a `SingleAgentEpisode` per agent plus the env-step timeline.

    ``observation_space`` / ``action_space`` (dicts or ``Dict`` spaces keyed by agent id) give
    each agent episode its spaces; when given, an agent without a space is an error. The module
    of an agent is ``agent_module_ids[agent_id]`` if given, else
    ``agent_to_module_mapping_fn(agent_id, episode)`` called once per agent and episode, else
    ``"default_policy"``; ``agent_episode_ids`` names the agents' `SingleAgentEpisode` ids.

    Built from data (as in RLlib), ``observations`` (``n + 1`` dicts) and ``actions``,
    ``rewards``, ``extra_model_outputs`` (``n`` dicts each) are recorded step by step;
    ``terminateds``/``truncateds`` are dicts of final per-agent flags (with ``"__all__"``), a
    bool, or one dict per env step. ``len_lookback_buffer`` of the steps (``"auto"``: all of
    them, as for `SingleAgentEpisode`) become history in front of a chunk starting at
    ``env_t_started``; ``agent_t_started`` gives agents' chunk starts in their own steps.
    """

    SKIP_ENV_TS_TAG = NOT_OBSERVED
    """``env_t_to_agent_t`` entry for env timesteps at which an agent did not observe (RLlib's name)."""

    def __init__(
        self,
        id_: str | None = None,
        *,
        observations: list[dict] | None = None,
        observation_space: gym.spaces.Dict | Mapping[AgentID, gym.Space] | None = None,
        infos: list[dict] | None = None,
        actions: list[dict] | None = None,
        action_space: gym.spaces.Dict | Mapping[AgentID, gym.Space] | None = None,
        rewards: list[dict] | None = None,
        terminateds: dict | bool | list[dict] | None = None,
        truncateds: dict | bool | list[dict] | None = None,
        extra_model_outputs: list[dict] | None = None,
        env_t_started: int | None = None,
        agent_t_started: Mapping[AgentID, int] | None = None,
        len_lookback_buffer: int | str = "auto",
        agent_episode_ids: Mapping[AgentID, str] | None = None,
        agent_module_ids: Mapping[AgentID, ModuleID] | None = None,
        agent_to_module_mapping_fn: MappingFn | None = None,
    ):
        self.id_ = new_episode_id() if id_ is None else id_
        self.observation_space = contract.space_dict(observation_space)
        self.action_space = contract.space_dict(action_space)
        self.agent_to_module_mapping_fn = agent_to_module_mapping_fn
        self.agent_episodes: dict[AgentID, SingleAgentEpisode] = {}
        self.env_t_to_agent_t: dict[AgentID, LookbackBuffer] = {}
        self.env_t_started = self.env_t = env_t_started or 0
        self.is_terminated = False
        self.is_truncated = False
        self.custom_data: dict[str, Any] = {}
        self.bookkeeping = Bookkeeping(dict(agent_module_ids or {}), dict(agent_episode_ids or {}))
        """In-flight steps, waiting rewards, who acts next, ...: read and written by this class and its
        helper modules in `flywheel.episodes` (see `multi_agent_bookkeeping`); users read them through
        the methods below."""
        if observations is not None:
            data = {
                "observations": observations,
                "infos": infos,
                "actions": actions,
                "rewards": rewards,
                "terminateds": terminateds,
                "truncateds": truncateds,
                "extra_model_outputs": extra_model_outputs,
                "agent_t_started": agent_t_started,
            }
            multi_agent_data.record_from_data(self, data, len_lookback_buffer)
        elif terminateds is True or truncateds is True:
            self.is_terminated, self.is_truncated = terminateds is True, truncateds is True

    # ----------------------------------------------------------------- recording (hot path)

    def add_env_reset(self, *, observations: dict, infos: dict | None = None) -> None:
        """Records the observations (and infos) of ``env.reset()``: the agents that act first."""
        if self.agent_episodes or self.env_t != self.env_t_started:
            raise EpisodeError(
                f"add_env_reset() needs a fresh episode, but episode {self.id_} already holds agents "
                f"{list(self.agent_episodes)} at env_t={self.env_t}; create a new episode."
            )
        infos = infos or {}
        for agent_id, observation in observations.items():
            self._join(agent_id, observation, infos.get(agent_id))
        book = self.bookkeeping
        book.agents_that_stepped = set(observations)
        book.agents_to_act = set(observations)
        book.start_time = time.perf_counter()

    def add_env_step(
        self,
        observations: dict,
        actions: dict,
        rewards: dict,
        infos: dict | None = None,
        *,
        terminateds: dict | None = None,
        truncateds: dict | None = None,
        extra_model_outputs: dict | None = None,
    ) -> None:
        """Records one env step (all dicts keyed by agent id, done flags with ``"__all__"``).

        ``actions`` (and ``extra_model_outputs``) are those of the agents that acted; their
        steps complete when they next observe, with every reward they got until then. An agent
        observing for the first time joins. A reward for an agent with no step in flight (it has
        not observed yet, or not acted on its observation) is kept for that agent's next step. Runs once per env step: no validation beyond what
        falls out of the bookkeeping; call `validate` to check thoroughly.
        """
        if self.is_terminated or self.is_truncated:
            raise EpisodeError(
                f"Episode {self.id_} is already done (terminated={self.is_terminated}, "
                f"truncated={self.is_truncated}) at env_t={self.env_t}; start a new episode after a reset."
            )
        book = self.bookkeeping
        in_flight, waiting = book.in_flight, book.waiting_rewards
        extras = extra_model_outputs or {}
        for agent_id, action in actions.items():
            in_flight[agent_id] = [
                action,
                extras.get(agent_id),
                waiting.pop(agent_id, 0.0) if waiting else 0.0,
            ]
        for agent_id, reward in rewards.items():
            step = in_flight.get(agent_id)
            if step is not None:
                step[2] += reward
            else:
                contract.check_reward_may_wait(self, agent_id, reward)
                waiting[agent_id] = waiting.get(agent_id, 0.0) + reward
        self.env_t += 1
        terminateds, truncateds, infos = terminateds or {}, truncateds or {}, infos or {}
        # Most steps end no agent: then no per-agent flag lookups are needed.
        any_done = any(terminateds.values()) or any(truncateds.values())
        agent_episodes, env_t_to_agent_t = self.agent_episodes, self.env_t_to_agent_t
        stepped = set(observations)
        to_act = set() if any_done else stepped  # (only _finish_agents, after a done, adds to stepped)
        terminated = truncated = False
        for agent_id, observation in observations.items():
            if any_done:
                terminated, truncated = self._done_flags(agent_id, terminateds, truncateds)
                if not (terminated or truncated):
                    to_act.add(agent_id)
            step = in_flight.pop(agent_id, None)
            if step is None:
                sa_episode = self._join(agent_id, observation, infos.get(agent_id))
                sa_episode.is_terminated, sa_episode.is_truncated = terminated, truncated
            else:
                sa_episode = agent_episodes[agent_id]
                sa_episode.add_env_step(
                    observation, step[0], step[2], infos.get(agent_id),
                    terminated=terminated, truncated=truncated, extra_model_outputs=step[1],
                )  # fmt: skip
                env_t_to_agent_t[agent_id].data.append(sa_episode.t)
        if len(observations) < len(env_t_to_agent_t):  # (joined agents are in both)
            for agent_id, mapping in env_t_to_agent_t.items():
                if agent_id not in observations:
                    mapping.data.append(NOT_OBSERVED)
        book.agents_that_stepped = stepped
        book.agents_to_act = to_act
        if any_done:
            self._finish_agents(
                terminateds, truncateds, bool(terminateds.get("__all__")), bool(truncateds.get("__all__"))
            )

    @staticmethod
    def _done_flags(agent_id: AgentID, terminateds: dict, truncateds: dict) -> tuple[bool, bool]:
        """(terminated, truncated) of one agent: its own flags, or ``"__all__"``'s."""
        terminated = terminateds.get("__all__", False) or terminateds.get(agent_id, False)
        truncated = truncateds.get("__all__", False) or truncateds.get(agent_id, False)
        return terminated, truncated

    def _join(self, agent_id: AgentID, observation: Any, info: dict | None) -> SingleAgentEpisode:
        """Starts the agent episode of an agent's first observation (its timestep 0)."""
        book = self.bookkeeping
        if agent_id in self.agent_episodes or agent_id in book.finished_agents:
            contract.raise_observation_without_action(self, agent_id)
        sa_episode = SingleAgentEpisode(
            book.agent_episode_ids.get(agent_id),
            observation_space=contract.space_of(self, agent_id, self.observation_space, "observation_space"),
            action_space=contract.space_of(self, agent_id, self.action_space, "action_space"),
            agent_id=agent_id,
            module_id=self.module_for(agent_id),
            multi_agent_episode_id=self.id_,
        )
        sa_episode.add_env_reset(observation, info)
        self.agent_episodes[agent_id] = sa_episode
        not_observed = [NOT_OBSERVED] * (book.env_lookback + self.env_t - self.env_t_started)
        self.env_t_to_agent_t[agent_id] = LookbackBuffer([*not_observed, 0], book.env_lookback)
        return sa_episode

    def _finish_agents(
        self, terminateds: dict, truncateds: dict, all_terminated: bool, all_truncated: bool
    ) -> None:
        """Ends the in-flight steps of agents that are done without a final observation; maybe the episode."""
        book = self.bookkeeping
        for agent_id in list(book.waiting_rewards):
            if all_terminated or all_truncated or terminateds.get(agent_id) or truncateds.get(agent_id):
                del book.waiting_rewards[agent_id]  # done without another step: nothing to add them to
        for agent_id in list(book.in_flight):
            terminated = all_terminated or terminateds.get(agent_id, False)
            truncated = all_truncated or truncateds.get(agent_id, False)
            if terminated or truncated:
                end_in_flight_step(self, agent_id, terminated)
        if all_terminated or all_truncated:
            self.is_terminated, self.is_truncated = all_terminated, all_truncated
        elif self.agent_episodes and all(e.is_done for e in self.agent_episodes.values()):
            self.is_truncated = all(sa_episode.is_truncated for sa_episode in self.agent_episodes.values())
            self.is_terminated = not self.is_truncated

    # ------------------------------------------------------------------------ properties

    @property
    def is_done(self) -> bool:
        """Whether the episode ended: ``"__all__"`` was set, or every agent is done."""
        return self.is_terminated or self.is_truncated

    @property
    def is_numpy(self) -> bool:
        return bool(self.agent_episodes) and all(e.is_numpy for e in self.agent_episodes.values())

    @property
    def is_reset(self) -> bool:
        """Whether any agent holds an observation (`add_env_reset` ran, or the episode was built from data)."""
        return any(e.is_reset for e in self.agent_episodes.values())

    @property
    def agent_ids(self) -> set[AgentID]:
        """The agents of this chunk (agents done in earlier chunks are gone)."""
        return set(self.agent_episodes)

    @property
    def agent_episode_ids(self) -> dict[AgentID, str]:
        """Each agent's `SingleAgentEpisode` id (kept across `cut`)."""
        return {agent_id: sa_episode.id_ for agent_id, sa_episode in self.agent_episodes.items()}

    @property
    def agent_t_started(self) -> dict[AgentID, int]:
        """Each agent's timestep (in its own steps) at which its chunk starts."""
        return {agent_id: sa_episode.t_started for agent_id, sa_episode in self.agent_episodes.items()}

    def __len__(self) -> int:
        """Number of env steps in this chunk (lookback excluded)."""
        return self.env_t - self.env_t_started

    def env_steps(self) -> int:
        return len(self)

    def agent_steps(self) -> int:
        """Number of completed agent steps in this chunk, summed over agents."""
        return sum(len(sa_episode) for sa_episode in self.agent_episodes.values())

    def module_for(self, agent_id: AgentID) -> ModuleID:
        """The module that acts for ``agent_id``; fixed for the episode once asked."""
        chosen = self.bookkeeping.agent_to_module
        module_id = chosen.get(agent_id)
        if module_id is None:
            fn = self.agent_to_module_mapping_fn
            module_id = DEFAULT_MODULE_ID if fn is None else fn(agent_id, self)
            chosen[agent_id] = module_id
        return module_id

    def get_agents_to_act(self) -> set[AgentID]:
        """Agents that observed in the newest env step and are not done: they act in the next one."""
        return set(self.bookkeeping.agents_to_act)

    def get_agents_that_stepped(self) -> set[AgentID]:
        """Agents that observed in the newest env step (done ones included)."""
        return set(self.bookkeeping.agents_that_stepped)

    def get_terminateds(self) -> dict:
        """``{agent_id: terminated}`` for this chunk's agents, plus ``"__all__"`` for the episode."""
        return {**{a: e.is_terminated for a, e in self.agent_episodes.items()}, "__all__": self.is_terminated}

    def get_truncateds(self) -> dict:
        """``{agent_id: truncated}`` for this chunk's agents, plus ``"__all__"`` for the episode."""
        return {**{a: e.is_truncated for a, e in self.agent_episodes.items()}, "__all__": self.is_truncated}

    def get_return(self, include_hanging_rewards: bool = False) -> float:
        """Sum of this chunk's rewards over agents (with ``include_hanging_rewards``: also the rewards
        of in-flight steps so far and those kept for agents' next steps)."""
        total = sum(sa_episode.get_return() for sa_episode in self.agent_episodes.values())
        if include_hanging_rewards:
            book = self.bookkeeping
            total += sum(step[2] for step in book.in_flight.values()) + sum(book.waiting_rewards.values())
        return float(total)

    def get_duration_s(self) -> float:
        """Seconds from this chunk's start (reset or cut) to its end (`cut` or `to_numpy`), or to now while it runs."""
        start, end = self.bookkeeping.start_time, self.bookkeeping.end_time
        if start is None:
            return 0.0
        return (time.perf_counter() if end is None else end) - start

    def __repr__(self) -> str:
        return (
            f"MultiAgentEpisode(id_={self.id_[:8]}, len={len(self)}, env_t_started={self.env_t_started}, "
            f"agents={list(self.agent_episodes)}, terminated={self.is_terminated}, truncated={self.is_truncated})"
        )

    def print(self) -> None:
        """Prints which agents observed at which env timestep (``x``), lookback included."""
        print(multi_agent_chunks.timeline(self))

    # ----------------------------------------------------------------- chunks and slices

    def cut(self, len_lookback_buffer: int = 0) -> MultiAgentEpisode:
        """Returns the successor chunk that continues this (ongoing) episode.

        Same ``id_``; ``env_t_started = self.env_t``; every agent episode that is not done is
        `SingleAgentEpisode.cut` with ``len_lookback_buffer`` agent steps of lookback, and the
        env-step map keeps ``len_lookback_buffer`` env steps, more if an agent's step is in
        flight: then back to that agent's last observation (as in RLlib). In-flight steps move
        to the successor (they complete there); agents that are done stay behind.
        ``custom_data`` is deep-copied.
        """
        self.bookkeeping.end_time = successor_start = time.perf_counter()
        successor = multi_agent_chunks.cut(self, len_lookback_buffer)
        successor.bookkeeping.start_time = successor_start
        return successor

    def slice(self, slc: slice, *, len_lookback_buffer: int | None = None) -> MultiAgentEpisode:
        """Returns a new episode holding the env steps ``slc`` (step 1) of this chunk, copied.

        Each agent gets the agent steps that end inside the slice, starting from its last
        observation at or before the slice's start (agents done before it are left out); a step
        in flight at the slice's end is in flight in the slice. Lookback: up to
        ``len_lookback_buffer`` env steps and, per agent, agent steps (default: as deep as now).
        """
        return multi_agent_chunks.slice_episode(self, slc, len_lookback_buffer)

    def __getitem__(self, item: slice) -> MultiAgentEpisode:
        """``episode[a:b]`` is ``episode.slice(slice(a, b))``; single steps are read with the getters."""
        return self.slice(chunks.as_slice(item))

    def concat_episode(self, other: MultiAgentEpisode) -> None:
        """Appends ``other`` (the successor chunk from `cut`, or the next slice) to this episode, in place."""
        multi_agent_chunks.concat(self, other)

    # ------------------------------------------------------------- numpy, checks, state

    def to_numpy(self) -> MultiAgentEpisode:
        """Turns every agent episode's data into arrays (see `SingleAgentEpisode.to_numpy`); returns self."""
        for sa_episode in self.agent_episodes.values():
            sa_episode.to_numpy()
        book = self.bookkeeping
        if book.end_time is None and book.start_time is not None:
            book.end_time = time.perf_counter()
        return self

    def validate(self) -> None:
        """Checks every agent episode and the env-step map against it; raises `EpisodeError` listing problems."""
        multi_agent_chunks.validate(self)

    def get_state(self) -> dict[str, Any]:
        """Plain data (and the mapping function) for transport and checkpoints."""
        return multi_agent_chunks.get_state(self)

    @classmethod
    def from_state(
        cls, state: dict[str, Any], *, agent_to_module_mapping_fn: MappingFn | None = None
    ) -> MultiAgentEpisode:
        """Rebuilds an episode from `get_state` output (``agent_to_module_mapping_fn`` replaces the stored one)."""
        return multi_agent_chunks.from_state(cls, state, agent_to_module_mapping_fn)
