"""Tiny deterministic multi-agent envs, to test runners, episodes and your own pieces with exact numbers.

- :class:`TurnBasedEnv`: two players take turns; only the player to move observes.
- :class:`JoinLeaveEnv`: one agent finishes early, another joins late, the episode goes on.
- :class:`MultiCartPole`: independent CartPoles, one per agent, each ending on its own.
- :class:`BrokenMultiAgentEnv`: breaks one rule of the contract on purpose (for error paths).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np

from flywheel.checkpoints.registry import checkpoint_class
from flywheel.env.multi_agent_env import MultiAgentEnv

__all__ = ["BrokenMultiAgentEnv", "JoinLeaveEnv", "MultiCartPole", "TurnBasedEnv"]

_COUNT_SPACE = gym.spaces.Box(0.0, 1e6, (1,), np.float32)


def _count(value: float) -> np.ndarray:
    return np.array([value], np.float32)


@checkpoint_class
class TurnBasedEnv(MultiAgentEnv):
    """Players ``"p0"`` and ``"p1"`` move in turns, ``"p0"`` first; only the player to move observes.

    The observation is ``[t]`` (env steps so far). After step ``t`` the mover gets reward
    ``t`` and the waiting player, once it has moved before, ``-1.0`` (so its rewards pile up
    while it waits). At ``t == config["episode_len"]`` (default 6) both players get a final
    observation ``[t]`` and ``"__all__"`` is terminated (truncated with ``config["truncate"]``).
    """

    def __init__(self, config: Mapping[str, Any] | None = None) -> None:
        super().__init__()
        config = config or {}
        self.episode_len = int(config.get("episode_len", 6))
        self.truncate = bool(config.get("truncate", False))
        self.possible_agents = ["p0", "p1"]
        self.agents = list(self.possible_agents)
        self.observation_spaces = {a: _COUNT_SPACE for a in self.possible_agents}
        self.action_spaces = {a: gym.spaces.Discrete(2) for a in self.possible_agents}
        self.t = 0

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        super().reset(seed=seed)
        self.t = 0
        return {"p0": _count(0)}, {"p0": {"t": 0}}

    def step(self, action_dict: dict) -> tuple[dict, dict, dict, dict, dict]:
        self.t += 1
        mover = "p0" if self.t % 2 == 1 else "p1"
        waiting = "p1" if mover == "p0" else "p0"
        rewards = {mover: float(self.t)}
        if self.t > 1:  # The waiting player has moved before (p1 first moves at t=2).
            rewards[waiting] = -1.0
        done = self.t >= self.episode_len
        observers = self.possible_agents if done else [waiting]
        obs = {a: _count(self.t) for a in observers}
        infos = {a: {"t": self.t} for a in observers}
        flags = {"__all__": done}
        no_flags = {"__all__": False}
        return obs, rewards, no_flags if self.truncate else flags, flags if self.truncate else no_flags, infos


@checkpoint_class
class JoinLeaveEnv(MultiAgentEnv):
    """Agents ``"a"``, ``"b"`` start; ``"b"`` finishes early, ``"c"`` joins late; ``"a"`` stays to the end.

    Every alive agent observes every step: agent ``k`` (a=0, b=1, c=2) sees ``[10 * k + t]``
    and gets reward ``10 * k + t`` after step ``t``. ``"b"`` is terminated (with a final
    observation) at ``t == config["finish_at"]`` (default 2), ``"c"`` first observes at
    ``t == config["join_at"]`` (default 3, with no reward: it has not acted yet), and at
    ``t == config["episode_len"]`` (default 5) ``"__all__"`` is truncated.
    """

    def __init__(self, config: Mapping[str, Any] | None = None) -> None:
        super().__init__()
        config = config or {}
        self.finish_at = int(config.get("finish_at", 2))
        self.join_at = int(config.get("join_at", 3))
        self.episode_len = int(config.get("episode_len", 5))
        self.possible_agents = ["a", "b", "c"]
        self.observation_spaces = {a: _COUNT_SPACE for a in self.possible_agents}
        self.action_spaces = {a: gym.spaces.Discrete(2) for a in self.possible_agents}
        self.agents = ["a", "b"]
        self.t = 0

    def _obs(self, agent: str) -> np.ndarray:
        return _count(10 * self.possible_agents.index(agent) + self.t)

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        super().reset(seed=seed)
        self.t = 0
        self.agents = ["a", "b"]
        return {a: self._obs(a) for a in self.agents}, {}

    def step(self, action_dict: dict) -> tuple[dict, dict, dict, dict, dict]:
        self.t += 1
        rewards = {a: float(self._obs(a)[0]) for a in action_dict}
        terminateds = {"__all__": False}
        if self.t == self.finish_at and "b" in self.agents:
            terminateds["b"] = True
        if self.t == self.join_at:
            self.agents.append("c")
        obs = {a: self._obs(a) for a in self.agents}
        self.agents = [a for a in self.agents if not terminateds.get(a)]
        return obs, rewards, terminateds, {"__all__": self.t >= self.episode_len}, {}


@checkpoint_class
class MultiCartPole(MultiAgentEnv):
    """``config["num_agents"]`` (default 2) independent ``CartPole-v1`` envs, agent ``i`` is ``"agent_i"``.

    An agent whose pole falls (or whose 500 steps are up) is done with its final observation;
    ``"__all__"`` ends the episode when every agent is done. ``reset(seed=s)`` seeds agent ``i``'s
    CartPole with ``s + i``.
    """

    def __init__(self, config: Mapping[str, Any] | None = None) -> None:
        super().__init__()
        n = int((config or {}).get("num_agents", 2))
        self.possible_agents = [f"agent_{i}" for i in range(n)]
        self.envs = {a: gym.make("CartPole-v1") for a in self.possible_agents}
        self.observation_spaces = {a: env.observation_space for a, env in self.envs.items()}
        self.action_spaces = {a: env.action_space for a, env in self.envs.items()}
        self.agents = list(self.possible_agents)

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        super().reset(seed=seed)
        self.agents = list(self.possible_agents)
        obs, infos = {}, {}
        for i, (agent, env) in enumerate(self.envs.items()):
            obs[agent], infos[agent] = env.reset(seed=None if seed is None else seed + i)
        return obs, infos

    def step(self, action_dict: dict) -> tuple[dict, dict, dict, dict, dict]:
        obs, rewards, terminateds, truncateds, infos = {}, {}, {}, {}, {}
        for agent, action in action_dict.items():
            result = self.envs[agent].step(action)
            obs[agent], rewards[agent], terminateds[agent], truncateds[agent], infos[agent] = result
        self.agents = [a for a in self.agents if not (terminateds.get(a) or truncateds.get(a))]
        done = not self.agents
        terminateds["__all__"] = done and any(terminateds.values())
        truncateds["__all__"] = done and not terminateds["__all__"]
        return obs, rewards, terminateds, truncateds, infos

    def close(self) -> None:
        for env in self.envs.values():
            env.close()


@checkpoint_class
class BrokenMultiAgentEnv(TurnBasedEnv):
    """:class:`TurnBasedEnv` breaking one rule, chosen by ``config["problem"]``:

    - ``"data_after_done"``: ``"p0"`` is terminated at step 1, yet gets a reward and observes at step 2;
    - ``"unknown_agent"``: an agent ``"ghost"`` outside ``possible_agents`` observes at step 1;
    - ``"missing_space"``: ``"p1"`` has no observation space.
    """

    def __init__(self, config: Mapping[str, Any] | None = None) -> None:
        super().__init__(config)
        self.problem = (config or {}).get("problem", "data_after_done")
        if self.problem == "missing_space":
            del self.observation_spaces["p1"]

    def step(self, action_dict: dict) -> tuple[dict, dict, dict, dict, dict]:
        obs, rewards, terminateds, truncateds, infos = super().step(action_dict)
        if self.problem == "data_after_done" and self.t == 1:
            terminateds["p0"] = True
        elif self.problem == "unknown_agent" and self.t == 1:
            obs["ghost"] = _count(1)
        return obs, rewards, terminateds, truncateds, infos
