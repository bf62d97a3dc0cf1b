"""`MultiAgentEnv`: several agents in one env (vector envs of it: `multi_agent_vector_env`).

The contract (RLlib's): observations, rewards, infos and done flags are dicts keyed by agent
id. An agent acts in the next step iff it received an observation in this step, so ``step()``
gets an action for exactly the agents of the last observation dict that are not done.
``"__all__"`` in terminateds and truncateds ends the episode for every agent. Agents may
observe only on some steps (turn-based games), join late or finish early; the rewards an agent
gets while it waits are collected by the episode until it observes again.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium as gym

from flywheel.errors import EnvError
from flywheel.typing import AgentID

__all__ = ["MultiAgentEnv"]


class MultiAgentEnv(gym.Env):
    """An env with several agents; every argument and result of ``reset``/``step`` is a dict.

    Subclasses set ``possible_agents`` (every agent id that may ever appear), ``agents`` (the
    ones currently alive), and ``observation_spaces`` / ``action_spaces`` (agent id → space),
    then implement ``reset(*, seed=None, options=None) -> (obs_dict, info_dict)`` and
    ``step(action_dict) -> (obs, rewards, terminateds, truncateds, infos)``, five dicts with
    ``"__all__"`` in terminateds and truncateds. Class attributes work as well as attributes
    set in ``__init__``.
    """

    possible_agents: list[AgentID]
    agents: list[AgentID]
    observation_spaces: dict[AgentID, gym.Space]
    action_spaces: dict[AgentID, gym.Space]

    def __init__(self) -> None:
        # Fresh containers only where a subclass did not already provide them (e.g. as class attributes).
        for name, default in (
            ("possible_agents", list),
            ("agents", list),
            ("observation_spaces", dict),
            ("action_spaces", dict),
        ):
            if not hasattr(self, name):
                setattr(self, name, default())

    @property
    def observation_space(self) -> gym.spaces.Dict:
        """All agents' observation spaces as one ``Dict`` space keyed by agent id."""
        return gym.spaces.Dict(dict(self.observation_spaces))

    @observation_space.setter
    def observation_space(self, space: gym.spaces.Dict | Mapping[AgentID, gym.Space]) -> None:
        self.observation_spaces = _per_agent_spaces(self, space, "observation_space")

    @property
    def action_space(self) -> gym.spaces.Dict:
        """All agents' action spaces as one ``Dict`` space keyed by agent id."""
        return gym.spaces.Dict(dict(self.action_spaces))

    @action_space.setter
    def action_space(self, space: gym.spaces.Dict | Mapping[AgentID, gym.Space]) -> None:
        self.action_spaces = _per_agent_spaces(self, space, "action_space")

    def get_observation_space(self, agent_id: AgentID) -> gym.Space:
        """The observation space of ``agent_id``; an `EnvError` names an unknown agent or a missing space."""
        return agent_space(self, agent_id, "observation_spaces")

    def get_action_space(self, agent_id: AgentID) -> gym.Space:
        """The action space of ``agent_id``; an `EnvError` names an unknown agent or a missing space."""
        return agent_space(self, agent_id, "action_spaces")


def _per_agent_spaces(env: Any, space: Any, attribute: str) -> dict[AgentID, gym.Space]:
    if isinstance(space, gym.spaces.Dict):
        return dict(space.spaces)
    if isinstance(space, Mapping):
        return dict(space)
    raise EnvError(
        f"{type(env).__name__}.{attribute} must be a gymnasium.spaces.Dict (or dict) keyed by agent id, "
        f"got {space!r}. Fix: set self.{attribute}s = {{agent_id: space, ...}}."
    )


def agent_space(env: Any, agent_id: AgentID, attribute: str) -> gym.Space:
    """`env.<attribute>[agent_id]`; an `EnvError` names an unknown agent or a missing space."""
    spaces = getattr(env, attribute)
    space = spaces.get(agent_id)
    if space is not None:
        return space
    name = type(env).__name__
    if agent_id not in env.possible_agents:
        raise EnvError(
            f"Agent {agent_id!r} is not one of {name}.possible_agents {list(env.possible_agents)}. "
            f"Fix: add it to possible_agents (with its spaces), or use one of those ids."
        )
    raise EnvError(
        f"{name}.{attribute} has no space for agent {agent_id!r} (it has spaces for {list(spaces)}). "
        f"Fix: set self.{attribute}[{agent_id!r}] = <a gymnasium space> in __init__."
    )
