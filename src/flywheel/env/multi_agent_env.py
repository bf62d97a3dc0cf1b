"""`MultiAgentEnv`: several agents in one env (vector envs of it: `multi_agent_vector_env`).

The contract (RLlib's): observations, rewards, infos and done flags are dicts keyed by agent
id. An agent acts in the next step iff it received an observation in this step, so ``step()``
gets an action for exactly the agents of the last observation dict that are not done.
``"__all__"`` in terminateds and truncateds ends the episode for every agent. Agents may
observe only on some steps (turn-based games), join late or finish early; the rewards an agent
gets while it waits are collected by the episode until it observes again.

`GroupAgentsWrapper` (what `MultiAgentEnv.with_agent_groups` returns, RLlib's
`group_agents_wrapper`) groups agents into one agent each, e.g. for QMIX-style joint control of a
team. A group acts for its members: its observation is the tuple of their observations, its action
a tuple of their actions (in the group's member order), its reward the sum of theirs (the members'
rewards are in its info under `"_group_rewards"`, their infos under `"_group_info"`), and it is
terminated or truncated when all members are. Agents in no group stay as they are.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import gymnasium as gym
import numpy as np

from flywheel.env.make import make_env_creator
from flywheel.errors import EnvError
from flywheel.typing import AgentID

__all__ = [
    "ENV_STATE",
    "GROUP_INFO",
    "GROUP_REWARDS",
    "GroupAgentsWrapper",
    "MultiAgentEnv",
    "make_multi_agent",
]

ENV_STATE = "state"
"""RLlib's key for a global env state inside an agent's Dict observation (e.g. for centralized critics)."""


class MultiAgentEnv(gym.Env):
    """An env with several agents; every argument and result of ``reset``/``step`` is a dict.

    Subclasses set ``possible_agents`` (every agent id that may ever appear), ``agents`` (the
    ones currently alive), and ``observation_spaces`` / ``action_spaces`` (agent id → space),
    then implement ``reset(*, seed=None, options=None) -> (obs_dict, info_dict)`` and
    ``step(action_dict) -> (obs, rewards, terminateds, truncateds, infos)``, five dicts with
    ``"__all__"`` in terminateds and truncateds. Class attributes work as well as attributes
    set in ``__init__``.
    """

    agents: list[AgentID]
    observation_spaces: dict[AgentID, gym.Space]
    action_spaces: dict[AgentID, gym.Space]
    _agent_ids: set[AgentID]

    if TYPE_CHECKING:  # what subclasses implement (gymnasium's Env declares single-agent signatures)

        def reset(
            self, *, seed: int | None = None, options: dict | None = None
        ) -> tuple[dict[AgentID, Any], dict[AgentID, Any]]: ...
        def step(self, action_dict: dict[AgentID, Any]) -> tuple[dict, dict, dict, dict, dict]: ...

    def __init__(self) -> None:
        # Fresh containers only where a subclass did not already provide them (e.g. as class attributes).
        for name, default in (
            ("agents", list),
            ("observation_spaces", dict),
            ("action_spaces", dict),
            ("_agent_ids", set),
        ):
            if not hasattr(self, name):
                setattr(self, name, default())

    # RLlib's older envs name their agents in `_agent_ids` (often set after this constructor ran) or
    # only as the keys of Dict spaces; such ids serve as `possible_agents` when none are set.

    @property
    def possible_agents(self) -> list[AgentID]:
        """Every agent id that may ever appear (default: RLlib's `_agent_ids`, sorted, or the agent
        ids the spaces are keyed by)."""
        given = self.__dict__.get("_possible_agents")
        if given:
            return given
        if self._agent_ids:
            return sorted(self._agent_ids, key=str)
        return list(self.observation_spaces)

    @possible_agents.setter
    def possible_agents(self, agents: list[AgentID]) -> None:
        self._possible_agents = agents

    @property
    def observation_space(self) -> gym.spaces.Dict:
        """All agents' observation spaces as one ``Dict`` space keyed by agent id. Setting a space that
        is not a Dict keyed by agent ids (RLlib's older envs) gives that space to every agent."""
        shared = self.__dict__.get("_shared_observation_spaces")
        if shared is not None and not self.observation_spaces:
            return shared
        return gym.spaces.Dict(dict(self.observation_spaces))

    @observation_space.setter
    def observation_space(self, space: gym.Space | Mapping[AgentID, gym.Space]) -> None:
        self.observation_spaces, self._shared_observation_spaces = _per_agent_spaces(self, space)

    @property
    def action_space(self) -> gym.spaces.Dict:
        """All agents' action spaces as one ``Dict`` space keyed by agent id (settable as
        `observation_space`)."""
        shared = self.__dict__.get("_shared_action_spaces")
        if shared is not None and not self.action_spaces:
            return shared
        return gym.spaces.Dict(dict(self.action_spaces))

    @action_space.setter
    def action_space(self, space: gym.Space | Mapping[AgentID, gym.Space]) -> None:
        self.action_spaces, self._shared_action_spaces = _per_agent_spaces(self, space)

    def with_agent_groups(
        self,
        groups: dict[str, list[AgentID]],
        obs_space: gym.Space | None = None,
        act_space: gym.Space | None = None,
    ) -> MultiAgentEnv:
        """This env with each group of agents (`{group_id: [agent ids]}`) acting as one agent: tuple
        observations and actions, summed rewards (see `GroupAgentsWrapper`). `obs_space` / `act_space`
        are every group's spaces (default: the Tuple of its members')."""
        return GroupAgentsWrapper(self, groups, obs_space, act_space)

    def get_observation_space(self, agent_id: AgentID) -> gym.Space:
        """The observation space of ``agent_id``; an `EnvError` names an unknown agent or a missing space."""
        return agent_space(self, agent_id, "observation_spaces")

    def get_action_space(self, agent_id: AgentID) -> gym.Space:
        """The action space of ``agent_id``; an `EnvError` names an unknown agent or a missing space."""
        return agent_space(self, agent_id, "action_spaces")


def _per_agent_spaces(env: Any, space: Any) -> tuple[dict[AgentID, gym.Space], gym.Space | None]:
    """(per-agent spaces, the space as set): a Dict or mapping is read as keyed by agent id; any other
    space is every agent's (RLlib reads a Dict the same way when the agent id is not one of its keys)."""
    if isinstance(space, gym.spaces.Dict):
        if env._agent_ids and not set(space.spaces) & set(env._agent_ids):
            return {}, space  # one Dict observation shared by the agents (e.g. RLlib's PettingZoo wrappers)
        return dict(space.spaces), space
    if isinstance(space, Mapping):
        return dict(space), None
    if isinstance(space, gym.Space):
        return {}, space
    raise EnvError(
        f"{type(env).__name__}.observation_space/action_space must be a gymnasium space (a Dict keyed by "
        f"agent id, or one space for every agent), got {space!r}. Fix: set self.observation_spaces = "
        "{agent_id: space, ...}."
    )


def _class_space(env: Any, name: str) -> gym.Space | None:
    """A space a subclass sets as the class attribute `name` (e.g. RLlib's TwoStepGame's
    `action_space = Discrete(2)`, every agent's), which hides the property of the same name."""
    for klass in type(env).__mro__:
        if name in vars(klass):
            value = vars(klass)[name]
            return value if isinstance(value, gym.Space) else None
    return None


def agent_space(env: Any, agent_id: AgentID, attribute: str) -> gym.Space:
    """`env.<attribute>[agent_id]`; an `EnvError` names an unknown agent or a missing space."""
    spaces = getattr(env, attribute)
    space = spaces.get(agent_id)
    if space is not None:
        return space
    shared = env.__dict__.get(f"_shared_{attribute}")
    if shared is None:
        shared = _class_space(env, attribute[:-1])
    if shared is not None and (not env.possible_agents or agent_id in env.possible_agents):
        return shared
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


GROUP_REWARDS = "_group_rewards"
GROUP_INFO = "_group_info"


class GroupAgentsWrapper(MultiAgentEnv):
    """`env` with `groups` (`{group_id: [member agent ids]}`) acting as single agents. `obs_space` /
    `act_space` are every group's spaces (default: per group, the Tuple of its members' spaces)."""

    def __init__(
        self,
        env: MultiAgentEnv,
        groups: Mapping[str, list[AgentID]],
        obs_space: gym.Space | None = None,
        act_space: gym.Space | None = None,
    ) -> None:
        super().__init__()
        self.env = env
        self.groups = {group: list(members) for group, members in groups.items()}
        self.agent_id_to_group: dict[AgentID, str] = {}
        for group, members in self.groups.items():
            for agent in members:
                if agent in self.agent_id_to_group:
                    raise EnvError(
                        f"Agent {agent!r} is in groups {self.agent_id_to_group[agent]!r} and {group!r}. "
                        "Fix: put every agent in one group at most."
                    )
                self.agent_id_to_group[agent] = group
        ungrouped = [agent for agent in env.possible_agents if agent not in self.agent_id_to_group]
        self._agent_ids = {*self.groups, *ungrouped}
        self.possible_agents = [*self.groups, *ungrouped]
        if obs_space is not None:
            self.observation_space = obs_space
        else:
            self.observation_spaces = {
                **{
                    g: gym.spaces.Tuple([env.get_observation_space(a) for a in m])
                    for g, m in self.groups.items()
                },
                **{a: env.get_observation_space(a) for a in ungrouped},
            }
        if act_space is not None:
            self.action_space = act_space
        else:
            self.action_spaces = {
                **{g: gym.spaces.Tuple([env.get_action_space(a) for a in m]) for g, m in self.groups.items()},
                **{a: env.get_action_space(a) for a in ungrouped},
            }

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        obs, infos = self.env.reset(seed=seed, options=options)
        self.agents = list(self._group(obs))
        return self._group(obs, tuple), self._group(infos, lambda v: {GROUP_INFO: list(v)})

    def step(self, action_dict: dict) -> tuple[dict, dict, dict, dict, dict]:
        actions: dict[AgentID, Any] = {}
        for agent, action in action_dict.items():
            members = self.groups.get(agent)
            if members is None:
                actions[agent] = action
                continue
            if len(action) != len(members):
                raise EnvError(
                    f"Group {agent!r} got {len(action)} actions for its {len(members)} members {members}. "
                    "Fix: give one action per member, in the group's order."
                )
            actions.update(zip(members, action, strict=True))
        obs, rewards, terminateds, truncateds, infos = self.env.step(actions)
        infos = self._group(infos, lambda v: {GROUP_INFO: list(v)})
        grouped_rewards = self._group(rewards, list)
        for group, value in grouped_rewards.items():
            if group in self.groups:
                grouped_rewards[group] = sum(value)
                infos.setdefault(group, {})[GROUP_REWARDS] = value
        self.agents = list(self._group(obs))
        return (
            self._group(obs, tuple),
            grouped_rewards,
            self._group(terminateds, all),
            self._group(truncateds, all),
            infos,
        )

    def _group(self, items: Mapping[Any, Any], combine: Callable[[Any], Any] = list) -> dict:
        """`items` keyed by agent with each group's members' values combined into its entry."""
        out: dict[Any, Any] = {}
        for agent, value in items.items():
            group = self.agent_id_to_group.get(agent)
            if group is None:
                out[agent] = value
            elif group not in out:
                missing = [a for a in self.groups[group] if a not in items]
                if missing:
                    raise EnvError(
                        f"Group {group!r} misses members {missing} in {sorted(items, key=str)}: a group steps "
                        "only when all its members do. Fix: group agents that observe at the same steps."
                    )
                out[group] = combine(items[a] for a in self.groups[group])
        return out

    def close(self) -> None:
        self.env.close()


def make_multi_agent(env_name_or_creator: str | Callable[[Any], gym.Env]) -> type[MultiAgentEnv]:
    """A `MultiAgentEnv` class whose agents each play their own copy of a single-agent env.

    ``make_multi_agent("CartPole-v1")({"num_agents": 2})`` steps two independent CartPoles as
    agents ``0`` and ``1`` (agent ids are ``0..num_agents-1``; ``num_agents`` defaults to 1). A
    string is a gymnasium id (made with ``gymnasium.make`` alone) or a name given to
    `register_env`; a callable is called with the rest of the config (without ``num_agents``)
    once per agent. Each agent has its copy's spaces. An agent whose copy terminates or truncates
    stops observing; ``"__all__"`` is terminated once every agent is done, and truncated once every
    agent was truncated. ``reset(seed=s)`` passes the same seed to every copy (as RLlib does).
    """
    name = env_name_or_creator if isinstance(env_name_or_creator, str) else None

    class MultiEnv(MultiAgentEnv):
        def __init__(self, config: dict | None = None) -> None:
            super().__init__()
            config = copy.deepcopy(config) if config is not None else {}  # EnvContext attributes kept
            num_agents = config.pop("num_agents", 1)
            source = env_name_or_creator
            creator: Callable[[Any], gym.Env] = (
                make_env_creator(source) if isinstance(source, str) else source
            )
            self.envs = [creator(config) for _ in range(num_agents)]
            self.agents = list(range(num_agents))
            self.possible_agents = list(self.agents)
            self.observation_spaces = {i: env.observation_space for i, env in enumerate(self.envs)}
            self.action_spaces = {i: env.action_space for i, env in enumerate(self.envs)}
            self.terminateds: set[int] = set()
            self.truncateds: set[int] = set()

        def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
            self.terminateds, self.truncateds = set(), set()
            results = {i: env.reset(seed=seed, options=options) for i, env in enumerate(self.envs)}
            return {i: obs for i, (obs, _) in results.items()}, {i: info for i, (_, info) in results.items()}

        def step(self, action_dict: dict) -> tuple[dict, dict, dict, dict, dict]:
            if not action_dict:
                raise EnvError(
                    f"{type(self).__name__}.step() got an empty action dict; expected an action for at "
                    f"least one of the agents still playing ({sorted(self._playing())})."
                )
            obs, rewards, terminateds, truncateds, infos = {}, {}, {}, {}, {}
            for i, action in action_dict.items():
                obs[i], rewards[i], terminateds[i], truncateds[i], infos[i] = self.envs[i].step(action)
                if terminateds[i]:
                    self.terminateds.add(i)
                if truncateds[i]:
                    self.truncateds.add(i)
            terminateds["__all__"] = len(self.terminateds | self.truncateds) == len(self.envs)
            truncateds["__all__"] = len(self.truncateds) == len(self.envs)
            return obs, rewards, terminateds, truncateds, infos

        def _playing(self) -> set[int]:
            return set(range(len(self.envs))) - self.terminateds - self.truncateds

        def render(self) -> Any:
            """The copies' frames side by side (on top of each other for frames wider than tall)."""
            frames = [np.asarray(env.render()) for env in self.envs]
            return np.concatenate(frames, axis=0 if frames[0].shape[1] > frames[0].shape[0] else 1)

        def close(self) -> None:
            for env in self.envs:
                env.close()

    MultiEnv.__name__ = MultiEnv.__qualname__ = f"MultiAgent{_class_name(name or env_name_or_creator)}"
    return MultiEnv


def _class_name(env: Any) -> str:
    """A class-name-like label for what `make_multi_agent` wraps ("CartPole-v1" -> "CartPole_v1")."""
    label = env if isinstance(env, str) else getattr(env, "__name__", type(env).__name__)
    return "".join(char if char.isalnum() else "_" for char in label.split(":")[-1].split("/")[-1])
