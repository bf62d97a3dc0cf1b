"""Episode replay buffers for off-policy algorithms (uniform, prioritized, multi-agent)."""

from flywheel.replay.episode_buffer import INDICES, EpisodeReplayBuffer
from flywheel.replay.multi_agent import MultiAgentEpisodeReplayBuffer
from flywheel.replay.prioritized import PrioritizedEpisodeReplayBuffer

__all__ = [
    "INDICES",
    "EpisodeReplayBuffer",
    "MultiAgentEpisodeReplayBuffer",
    "PrioritizedEpisodeReplayBuffer",
]
