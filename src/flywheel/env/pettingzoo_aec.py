"""`AECPettingZooEnv`: a PettingZoo AEC env (one agent acts at a time) as a flywheel `MultiAgentEnv`.

RLlib's ``PettingZooEnv`` (``flywheel port`` maps it here); its ``ParallelPettingZooEnv`` is
`flywheel.env.pettingzoo.PettingZooEnv`. PettingZoo is an optional extra; this adapter only talks to
the env it is given::

    from pettingzoo.classic import connect_four_v3
    from flywheel import register_env
    from flywheel.env.pettingzoo_aec import AECPettingZooEnv

    register_env("connect_four", lambda _: AECPettingZooEnv(connect_four_v3.env()))

Turn-based, as RLlib's: ``reset()`` observes the agent to move (``env.agent_selection``), and
``step()`` takes the action of that agent only. After it, the agents PettingZoo selects next are
reported with ``env.last()`` (observation, the reward gathered since they last acted, done flags,
info): a done agent is reported once and then removed (``env.step(None)``), until an agent that is
not done is to move, or none is left. ``"__all__"`` ends the episode when no agent is left:
truncated if every agent reported in that last step was truncated, else terminated.
"""

from __future__ import annotations

from typing import Any

from flywheel.env.pettingzoo import PettingZooAdapter
from flywheel.errors import EnvError

__all__ = ["AECPettingZooEnv"]


class AECPettingZooEnv(PettingZooAdapter):
    """Adapts a PettingZoo ``AECEnv``: same agents and spaces; one agent observes and acts per step."""

    def __init__(self, env: Any) -> None:
        if not (hasattr(env, "agent_iter") and hasattr(env, "last")):
            raise EnvError(
                f"AECPettingZooEnv expects a PettingZoo AEC env (agent_selection, last(), step(action)), got "
                f"{type(env).__name__}. Fix: for a ParallelEnv use flywheel.env.pettingzoo.PettingZooEnv."
            )
        super().__init__(env)

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        self.env.reset(seed=seed, options=options)
        agent = self.env.agent_selection
        return {agent: self.env.observe(agent)}, {}

    def step(self, action_dict: dict) -> tuple[dict, dict, dict, dict, dict]:
        agent = self.env.agent_selection
        if agent not in action_dict:
            raise EnvError(
                f"AECPettingZooEnv: agent {agent!r} is to move, but the actions are for {sorted(action_dict, key=str)}. "
                "Fix: act for the agents of the last observation dict (a policy_mapping_fn for every agent)."
            )
        self.env.step(action_dict[agent])
        observations, rewards, terminateds, truncateds, infos = {}, {}, {}, {}, {}
        while self.env.agents:
            agent = self.env.agent_selection
            obs, reward, terminated, truncated, info = self.env.last()
            observations[agent], rewards[agent], infos[agent] = obs, reward, info
            terminateds[agent], truncateds[agent] = bool(terminated), bool(truncated)
            if not (terminated or truncated):
                break
            self.env.step(None)  # PettingZoo removes a done agent when it "acts" with None
        over = not self.env.agents
        all_truncated = (
            over and bool(truncateds) and all(truncateds[a] and not terminateds[a] for a in truncateds)
        )
        terminateds["__all__"] = over and not all_truncated
        truncateds["__all__"] = all_truncated
        return observations, rewards, terminateds, truncateds, infos

    def render(self) -> Any:
        return self.env.render()

    def close(self) -> None:
        self.env.close()
