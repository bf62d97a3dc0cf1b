"""`MultiAgentEpisodeBuilder`: rows of a multi-agent recording back as `MultiAgentEpisode`s.

A multi-agent runner records one row per agent step (or agent episode chunk) with its `agent_id`;
the rows of one agent in one episode chunk lie together. Read for a multi-agent config
(`config.multi_agent(policies=..., policy_mapping_fn=...)`), consecutive agent chunks with the same
episode id become one `MultiAgentEpisode`, and the config's `policy_mapping_fn` maps each agent to
the module that trains on its rows (the recorded `module_id` is the recording config's choice).
The rows keep each agent's own steps, not the env's timeline: the rebuilt episode lines the agents
up step by step, which is all the learner pipeline reads (each agent's sequence, with its module).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, cast

import gymnasium as gym

from flywheel.columns import Columns
from flywheel.episodes import MultiAgentEpisode, SingleAgentEpisode
from flywheel.episodes.multi_agent_chunks import from_agent_episodes
from flywheel.errors import OfflineDataError
from flywheel.offline.episodes import EpisodeBuilder, Spaces


class MultiAgentEpisodeBuilder(EpisodeBuilder):
    """`EpisodeBuilder` for multi-agent rows: `spaces` are the env's per-agent Dict spaces, each agent's
    chunk gets its agent's spaces, and `episodes()` yields `MultiAgentEpisode`s whose agents map to
    modules with `mapping_fn` (picklable: it travels to remote learners with their shard; None: every
    agent's module is "default_policy")."""

    def __init__(
        self,
        read_episodes: bool,
        spaces: Spaces,
        normalize_actions: bool,
        mapping_fn: Callable[..., Any] | None,
    ) -> None:
        super().__init__(read_episodes, spaces, normalize_actions)
        observation_spaces, action_spaces = cast(tuple[gym.spaces.Dict, gym.spaces.Dict], spaces)
        self.agents = {str(a): (a, (observation_spaces[a], action_spaces[a])) for a in observation_spaces}
        self.mapping_fn = mapping_fn
        self.columns.append(Columns.AGENT_ID)

    def agent(self, key: str | None) -> tuple[Any, Spaces]:
        """The env's agent id and its spaces for rows recorded with agent id `key`."""
        if key not in self.agents:
            raise OfflineDataError(
                f"The offline data holds rows of agent {key!r}, which the env does not have (its agents: "
                f"{sorted(self.agents)}). Fix: train with the env the data was recorded from (config.environment(...))."
            )
        return self.agents[key]

    def episodes(self, batch: Any) -> Iterator[MultiAgentEpisode]:
        """The multi-agent episode chunks of one record batch: consecutive agent chunks of one episode
        id, a new one whenever the id changes or an agent comes again."""
        group: list[SingleAgentEpisode] = []
        for chunk in self.chunks(batch):
            if group and (chunk.id_ != group[0].id_ or any(c.agent_id == chunk.agent_id for c in group)):
                yield self._episode_of(group)
                group = []
            group.append(chunk)
        if group:
            yield self._episode_of(group)

    def _episode_of(self, chunks: list[SingleAgentEpisode]) -> MultiAgentEpisode:
        return from_agent_episodes(
            MultiAgentEpisode,
            chunks[0].id_,
            {chunk.agent_id: chunk for chunk in chunks},
            observation_space=self.spaces[0],
            action_space=self.spaces[1],
            mapping_fn=self.mapping_fn,
        )
