"""Writing `MultiAgentEpisode` data: the setters, per agent and in the agents' own steps.

``set_observations(new_data={agent_id: data}, at_indices=...)`` calls the agent episode's
`SingleAgentEpisode.set_observations` for each agent in ``new_data``; ``at_indices`` counts
each agent's own steps, as with ``env_steps=False`` getters.
"""

from __future__ import annotations

from typing import Any

from flywheel.episodes.lookback_buffer import Indices
from flywheel.errors import EpisodeKeyError


class MultiAgentSetters:
    """The setters of `MultiAgentEpisode`."""

    agent_episodes: dict
    id_: str

    def set_observations(
        self, *, new_data: dict, at_indices: Indices = None, neg_index_as_lookback: bool = False
    ) -> None:
        """Overwrites agents' observations in place (``new_data``: ``{agent_id: data}``)."""
        self._set("observations", new_data, at_indices, neg_index_as_lookback)

    def set_actions(
        self, *, new_data: dict, at_indices: Indices = None, neg_index_as_lookback: bool = False
    ) -> None:
        self._set("actions", new_data, at_indices, neg_index_as_lookback)

    def set_rewards(
        self, *, new_data: dict, at_indices: Indices = None, neg_index_as_lookback: bool = False
    ) -> None:
        self._set("rewards", new_data, at_indices, neg_index_as_lookback)

    def set_extra_model_outputs(
        self, *, key: str, new_data: dict, at_indices: Indices = None, neg_index_as_lookback: bool = False
    ) -> None:
        self._set("extra_model_outputs", new_data, at_indices, neg_index_as_lookback, key=key)

    def _set(
        self, what: str, new_data: dict, at_indices: Indices, neg_index_as_lookback: bool, **key: Any
    ) -> None:
        unknown = [agent_id for agent_id in new_data if agent_id not in self.agent_episodes]
        if unknown:
            raise EpisodeKeyError(
                f"Cannot set {what} of agent(s) {unknown} in episode {self.id_}: its agents are "
                f"{list(self.agent_episodes)}. Pass new_data keyed by agents of this chunk."
            )
        for agent_id, data in new_data.items():
            setter = getattr(self.agent_episodes[agent_id], "set_" + what)
            setter(new_data=data, at_indices=at_indices, neg_index_as_lookback=neg_index_as_lookback, **key)
