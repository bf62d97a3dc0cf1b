"""Observation preprocessors: write `preprocess(observation, episode)` and get an env-to-module piece.

RLlib's convenience classes. The piece rewrites each episode's newest observation with what
`preprocess` returns, in the episode itself, so the module acts on it and the learner trains on it.
A piece that changes the observation's space says so in `recompute_output_observation_space`.
"""

from __future__ import annotations

import abc
from typing import TYPE_CHECKING, Any

from flywheel.connectors.connector import ConnectorV2

if TYPE_CHECKING:
    from flywheel.core.rl_module.rl_module import RLModule
    from flywheel.metrics.metrics_logger import MetricsLogger
    from flywheel.typing import EpisodeType


class SingleAgentObservationPreprocessor(ConnectorV2, abc.ABC):
    """Rewrites the newest observation of every single-agent episode (on a multi-agent runner: of
    every agent that just observed, with that agent's `SingleAgentEpisode`)."""

    @abc.abstractmethod
    def preprocess(self, observation: Any, episode: EpisodeType) -> Any:
        """The new observation for one agent (`episode.agent_id` / `episode.module_id` say whose)."""

    def __call__(
        self,
        *,
        rl_module: RLModule,
        batch: dict[str, Any],
        episodes: list[Any],
        explore: bool | None = None,
        shared_data: dict | None = None,
        metrics: MetricsLogger | None = None,
        **kwargs: object,
    ) -> dict[str, Any]:
        for episode in self.single_agent_episode_iterator(episodes):
            new_observation = self.preprocess(observation=episode.get_observations(-1), episode=episode)
            episode.set_observations(new_data=new_observation, at_indices=-1)
        return batch


class MultiAgentObservationPreprocessor(ConnectorV2, abc.ABC):
    """Rewrites the newest observations of every multi-agent episode at once: `preprocess` gets the
    dict of the agents that just observed (`{agent_id: observation}`) and returns the new dict; its
    input and output spaces are the Dicts of every agent's space."""

    @abc.abstractmethod
    def preprocess(self, observations: dict[Any, Any], episode: EpisodeType) -> dict[Any, Any]:
        """The new observations `{agent_id: observation}` (agents left out keep theirs)."""

    def __call__(
        self,
        *,
        rl_module: RLModule,
        batch: dict[str, Any],
        episodes: list[Any],
        explore: bool | None = None,
        shared_data: dict | None = None,
        metrics: MetricsLogger | None = None,
        **kwargs: object,
    ) -> dict[str, Any]:
        for episode in episodes:
            new_observations = self.preprocess(observations=episode.get_observations(-1), episode=episode)
            for agent_id, observation in new_observations.items():
                episode.agent_episodes[agent_id].set_observations(new_data=observation, at_indices=-1)
        return batch


ObservationPreprocessor = SingleAgentObservationPreprocessor
"""RLlib's older name of `SingleAgentObservationPreprocessor`."""
