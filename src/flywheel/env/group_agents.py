"""`GroupAgentsWrapper`: agents of a `MultiAgentEnv` grouped into one agent each (RLlib's
`MultiAgentEnv.with_agent_groups`), e.g. for QMIX-style joint control of a team.

A group acts for its members: its observation is the tuple of their observations, its action a
tuple of their actions (in the group's member order), its reward the sum of theirs (the members'
rewards are in its info under `"_group_rewards"`, their infos under `"_group_info"`), and it is
terminated or truncated when all members are. Agents in no group stay as they are.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import gymnasium as gym

from flywheel.env.multi_agent_env import MultiAgentEnv
from flywheel.errors import EnvError
from flywheel.typing import AgentID

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
