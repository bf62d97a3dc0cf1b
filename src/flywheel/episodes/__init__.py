"""Episodes: the record of what happened in an env (observations, actions, rewards, ...)."""

from flywheel.episodes.lookback_buffer import InfiniteLookbackBuffer, LookbackBuffer
from flywheel.episodes.multi_agent_episode import MultiAgentEpisode
from flywheel.episodes.single_agent_episode import SingleAgentEpisode
from flywheel.episodes.transition_episodes import TransitionEpisodes

__all__ = [
    "InfiniteLookbackBuffer",
    "LookbackBuffer",
    "MultiAgentEpisode",
    "SingleAgentEpisode",
    "TransitionEpisodes",
]
