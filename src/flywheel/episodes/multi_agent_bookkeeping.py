"""`Bookkeeping`: what a `MultiAgentEpisode` keeps between env steps besides its agent episodes.

`MultiAgentEpisode` holds it as ``episode.bookkeeping``; the episode's helper modules in
`flywheel.episodes` (chunks, data, indexing, contract) read and write it there, so a cut, a
slice, a concat or a state carries it whole. Users read the same facts through the episode's
public methods (`get_agents_to_act`, `module_for`, `get_return(include_hanging_rewards=True)`,
`get_duration_s`, ...).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from flywheel.episodes import multi_agent_contract as contract
from flywheel.typing import AgentID, ModuleID

if TYPE_CHECKING:
    from flywheel.episodes.multi_agent_episode import MultiAgentEpisode


@dataclasses.dataclass(slots=True)
class Bookkeeping:
    """The per-episode state that is not an agent's `SingleAgentEpisode` or the env-step map."""

    agent_to_module: dict[AgentID, ModuleID] = dataclasses.field(default_factory=dict)
    """Each agent's module, fixed once asked (`MultiAgentEpisode.module_for`)."""
    agent_episode_ids: dict[AgentID, str] = dataclasses.field(default_factory=dict)
    """Ids given for agents' `SingleAgentEpisode`s, used when the agent joins (kept across `cut`)."""
    in_flight: dict[AgentID, list] = dataclasses.field(default_factory=dict)
    """Steps of agents that acted and have not observed again: ``[action, extra model outputs, summed
    reward]``."""
    waiting_rewards: dict[AgentID, float] = dataclasses.field(default_factory=dict)
    """Rewards of alive agents with no step in flight (not observed yet, or not acted on their
    observation): they start the agent's next step's reward, as RLlib keeps them."""
    finished_agents: set[AgentID] = dataclasses.field(default_factory=set)
    """Agents done in an earlier chunk (no longer in ``agent_episodes``)."""
    env_lookback: int = 0
    """Env steps of history in front of the chunk (the lookback of every ``env_t_to_agent_t`` map)."""
    agents_that_stepped: set[AgentID] = dataclasses.field(default_factory=set)
    """Agents that observed in the newest env step (done ones included)."""
    agents_to_act: set[AgentID] = dataclasses.field(default_factory=set)
    """Agents that observed in the newest env step and are not done: they act in the next one."""
    start_time: float | None = None
    """`time.perf_counter()` at the chunk's start (reset or cut); None for an episode built from data."""
    end_time: float | None = None
    """`time.perf_counter()` at the chunk's end (`cut` or `to_numpy`); None while it runs."""


def end_in_flight_step(episode: MultiAgentEpisode, agent_id: AgentID, terminated: bool) -> None:
    """Ends the in-flight step of an agent that is done without a final observation, on a copy of its
    last observation: nothing bootstraps from a terminated agent's; a truncated agent needs a real
    one, so it raises."""
    if not terminated:
        contract.raise_truncated_in_flight(episode, agent_id)
    book = episode.bookkeeping
    action, extras, reward = book.in_flight.pop(agent_id)
    sa_episode = episode.agent_episodes[agent_id]
    sa_episode.add_env_step(
        sa_episode.get_observations(-1), action, reward, {}, terminated=True, extra_model_outputs=extras
    )
    episode.env_t_to_agent_t[agent_id].data[-1] = sa_episode.t
    book.agents_that_stepped.add(agent_id)
