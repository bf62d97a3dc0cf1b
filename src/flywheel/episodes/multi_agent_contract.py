"""What a `MultiAgentEpisode` raises when the env breaks the multi-agent contract.

Recording does no checks of its own (it runs every env step); these explain the violations
that fall out of its bookkeeping: data for agents that are done or never acted, missing spaces,
a truncation without the observation to bootstrap from.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NoReturn

import gymnasium as gym

from flywheel.errors import EpisodeError

if TYPE_CHECKING:
    from flywheel.episodes.multi_agent_episode import MultiAgentEpisode


def space_dict(spaces: gym.spaces.Dict | Mapping | None) -> dict | None:
    """Per-agent spaces as a plain dict (from a ``Dict`` space or a mapping); None stays None."""
    if spaces is None:
        return None
    return dict(spaces.spaces) if isinstance(spaces, gym.spaces.Dict) else dict(spaces)


def space_of(episode: MultiAgentEpisode, agent_id: Any, spaces: dict | None, name: str) -> gym.Space | None:
    """The agent's space in ``spaces`` (None without spaces); an agent missing from given spaces raises."""
    if spaces is None:
        return None
    space = spaces.get(agent_id)
    if space is None:
        raise EpisodeError(
            f"Agent {agent_id!r} observed in episode {episode.id_}, but the episode's {name} has no space "
            f"for it (it has spaces for {list(spaces)}). Expected every agent id to be one of the env's "
            f"possible_agents with a space; fix the env's spaces or the agent id it returns."
        )
    return space


def check_reward_may_wait(episode: MultiAgentEpisode, agent_id: Any, reward: float) -> None:
    """A reward for an agent with no step in flight waits for its next step; one for an agent that is
    done raises: it has no next step."""
    sa_episode = episode.agent_episodes.get(agent_id)
    if agent_id in episode.bookkeeping.finished_agents or (sa_episode is not None and sa_episode.is_done):
        raise EpisodeError(
            f"Agent {agent_id!r} got reward {reward!r} at env step {episode.env_t + 1} of episode "
            f"{episode.id_}, but it is done. Expected no data for agents once they are terminated or "
            "truncated. Fix the env (flywheel.env.multi_agent_checks.check_multi_agent_env finds this)."
        )


def raise_observation_without_action(episode: MultiAgentEpisode, agent_id: Any) -> NoReturn:
    sa_episode = episode.agent_episodes.get(agent_id)
    if sa_episode is None or sa_episode.is_done:
        problem = "after it was done"
        fix = "return no data for agents once they are terminated or truncated"
    else:
        problem = "but it did not act on its previous observation"
        fix = "send an action for every agent in get_agents_to_act() with each step"
    raise EpisodeError(
        f"Agent {agent_id!r} received an observation at env step {episode.env_t} of episode {episode.id_} "
        f"{problem}. Fix: {fix}."
    )


def raise_truncated_in_flight(episode: MultiAgentEpisode, agent_id: Any) -> NoReturn:
    raise EpisodeError(
        f"Agent {agent_id!r} was truncated at env step {episode.env_t} of episode {episode.id_} while its "
        f"step was in flight (it acted and had not observed again), so there is no observation to "
        f"bootstrap from. Fix the env: return a final observation for every agent it truncates."
    )
