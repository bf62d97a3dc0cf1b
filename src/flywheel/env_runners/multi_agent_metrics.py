"""Episode returns per agent and per module, counted while sampling and logged once per `sample()`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

from flywheel.metrics import MetricsLogger, keys
from flywheel.typing import AgentID, ModuleID

if TYPE_CHECKING:
    from flywheel.algorithms.algorithm_config import AlgorithmConfig
    from flywheel.typing import EpisodeType


class FinishedEpisode(NamedTuple):
    """What the metrics need of one finished episode (all of it, over every chunk)."""

    episode_return: float
    length: int
    agent_returns: dict[AgentID, float]
    module_returns: dict[ModuleID, float]


class EpisodeStats:
    """An ongoing episode's returns per agent over the chunks cut from it so far (the runner keeps them,
    since the chunks leave with `sample()`); the newest chunk's rewards are summed once, when it ends.

    Summing each agent's recorded rewards, instead of every reward as it comes, costs nothing per
    step; every reward is counted once either way, since an agent's rewards are all recorded by the
    time its episode ends. Agents without a completed step have no return.
    """

    __slots__ = ("agent_returns",)

    def __init__(self) -> None:
        self.agent_returns: dict[AgentID, float] = {}

    def add_chunk(self, chunk: Any) -> None:
        """Adds the rewards of a chunk (before `to_numpy`, so they sum at the env's precision)."""
        returns = self.agent_returns
        for agent_id, agent_episode in chunk.agent_episodes.items():
            if len(agent_episode):
                returns[agent_id] = sum(agent_episode.get_rewards(), returns.get(agent_id, 0.0))

    def finish(self, episode: EpisodeType) -> FinishedEpisode:
        """The whole episode's numbers, given its last chunk."""
        self.add_chunk(episode)
        module_returns: dict[ModuleID, float] = {}
        for agent_id, ret in self.agent_returns.items():
            module_id = episode.module_for(agent_id)
            module_returns[module_id] = module_returns.get(module_id, 0.0) + ret
        agent_returns = {agent_id: float(ret) for agent_id, ret in self.agent_returns.items()}
        return FinishedEpisode(
            float(sum(agent_returns.values())), episode.env_t, agent_returns, module_returns
        )


def log_sample_metrics(
    m: MetricsLogger,
    config: AlgorithmConfig,
    episodes: list,
    stats: list[FinishedEpisode],
    weights_seq_no: int,
) -> None:
    """Episode windows (whole, per agent, per module) and step counters (env, agent, per module)."""
    window = config.metrics_num_episodes_for_smoothing
    for finished in stats:
        ret = finished.episode_return
        m.log_value(keys.EPISODE_RETURN_MEAN, ret, window=window)
        m.log_value(keys.EPISODE_RETURN_MIN, ret, reduce="min", window=window)
        m.log_value(keys.EPISODE_RETURN_MAX, ret, reduce="max", window=window)
        m.log_value(keys.EPISODE_LEN_MEAN, finished.length, window=window)
        m.log_value(keys.EPISODE_LEN_MIN, finished.length, reduce="min", window=window)
        m.log_value(keys.EPISODE_LEN_MAX, finished.length, reduce="max", window=window)
        for agent_id, agent_ret in finished.agent_returns.items():
            m.log_value((keys.EPISODE_AGENT_RETURN_MEAN, str(agent_id)), agent_ret, window=window)
        for module_id, module_ret in finished.module_returns.items():
            m.log_value((keys.EPISODE_MODULE_RETURN_MEAN, module_id), module_ret, window=window)
    env_steps = sum(len(e) for e in episodes)
    agent_steps = 0
    for episode in episodes:
        for agent_id, agent_episode in episode.agent_episodes.items():
            steps = len(agent_episode)
            agent_steps += steps
            if steps:
                module_id = episode.module_for(agent_id)
                m.log_value((keys.NUM_MODULE_STEPS_SAMPLED, module_id), steps, reduce="sum")
                m.log_value((keys.NUM_MODULE_STEPS_SAMPLED_LIFETIME, module_id), steps, reduce="lifetime_sum")
    m.log_value(keys.NUM_EPISODES, len(stats), reduce="sum")
    m.log_value(keys.NUM_EPISODES_LIFETIME, len(stats), reduce="lifetime_sum")
    m.log_value(keys.NUM_ENV_STEPS_SAMPLED, env_steps, reduce="sum")
    m.log_value(keys.NUM_ENV_STEPS_SAMPLED_LIFETIME, env_steps, reduce="lifetime_sum", with_throughput=True)
    m.log_value(keys.NUM_AGENT_STEPS_SAMPLED, agent_steps, reduce="sum")
    m.log_value(keys.NUM_AGENT_STEPS_SAMPLED_LIFETIME, agent_steps, reduce="lifetime_sum")
    m.log_value(keys.WEIGHTS_SEQ_NO, weights_seq_no, reduce="max", window=1)
