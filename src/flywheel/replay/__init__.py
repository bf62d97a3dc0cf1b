"""Episode replay buffers for off-policy algorithms (uniform, prioritized, multi-agent).

`sample()` returns `TransitionEpisodes`: RLlib's one-step n-step episodes, held as columns, which
the learner pipeline turns into the train batch.
"""

from flywheel.episodes.transition_episodes import TransitionEpisodes
from flywheel.replay.episode_buffer import INDICES, EpisodeReplayBuffer
from flywheel.replay.multi_agent import (
    MultiAgentEpisodeReplayBuffer,
    MultiAgentPrioritizedEpisodeReplayBuffer,
)
from flywheel.replay.prioritized import PrioritizedEpisodeReplayBuffer

__all__ = [
    "INDICES",
    "EpisodeReplayBuffer",
    "MultiAgentEpisodeReplayBuffer",
    "MultiAgentPrioritizedEpisodeReplayBuffer",
    "PrioritizedEpisodeReplayBuffer",
    "TransitionEpisodes",
]
