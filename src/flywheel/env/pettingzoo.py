"""`PettingZooEnv`: a PettingZoo ``ParallelEnv`` as a flywheel `MultiAgentEnv` (RLlib's ``ParallelPettingZooEnv``;
its AEC ``PettingZooEnv`` is `flywheel.env.pettingzoo_aec.AECPettingZooEnv`).

PettingZoo is an optional extra (``pip install flywheel[pettingzoo]``); this adapter only
talks to the env it is given, so importing it needs no PettingZoo. Use it in a creator::

    from pettingzoo.butterfly import pistonball_v6
    from flywheel import PPOConfig, register_env
    from flywheel.env.pettingzoo import PettingZooEnv

    register_env("pistonball", lambda cfg: PettingZooEnv(pistonball_v6.parallel_env(**cfg)))
    config = PPOConfig().environment("pistonball")
"""

from __future__ import annotations

from typing import Any

from flywheel.env.multi_agent_env import MultiAgentEnv
from flywheel.errors import EnvError
from flywheel.typing import AgentID

__all__ = ["PettingZooAdapter", "PettingZooEnv"]


class PettingZooAdapter(MultiAgentEnv):
    """What both PettingZoo adapters take from the env they wrap: its agents, spaces and metadata."""

    def __init__(self, env: Any) -> None:
        self.env = env
        super().__init__()
        self.possible_agents = list(env.possible_agents)
        self.observation_spaces = {a: env.observation_space(a) for a in self.possible_agents}
        self.action_spaces = {a: env.action_space(a) for a in self.possible_agents}
        self.metadata = getattr(env, "metadata", {})
        self.render_mode = getattr(env, "render_mode", None)

    @property
    def agents(self) -> list[AgentID]:
        """The agents still in the game (PettingZoo's ``env.agents``)."""
        return list(getattr(self.env, "agents", ()))


class PettingZooEnv(PettingZooAdapter):
    """Adapts a PettingZoo ``ParallelEnv``: same agents, spaces, dicts; adds ``"__all__"`` to the done flags.

    PettingZoo removes an agent from ``env.agents`` once it is done; the episode ends (``"__all__"``)
    when no agent is left: truncated if every agent that finished in that last step was truncated,
    else terminated.
    """

    def __init__(self, env: Any) -> None:
        if hasattr(env, "agent_iter"):  # AEC envs step one agent at a time
            raise EnvError(
                f"PettingZooEnv expects a PettingZoo ParallelEnv, got the AEC env {type(env).__name__}. "
                "Fix: pass its parallel version (e.g. module.parallel_env()), or wrap the AEC env in "
                "flywheel.env.pettingzoo_aec.AECPettingZooEnv (RLlib's PettingZooEnv: one agent acts per step)."
            )
        if not (hasattr(env, "possible_agents") and callable(getattr(env, "observation_space", None))):
            raise EnvError(
                f"PettingZooEnv expects a PettingZoo ParallelEnv (possible_agents, observation_space(agent), "
                f"action_space(agent), reset, step), got {type(env).__name__}."
            )
        super().__init__(env)

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        observations, infos = self.env.reset(seed=seed, options=options)
        return dict(observations), dict(infos)

    def step(self, action_dict: dict) -> tuple[dict, dict, dict, dict, dict]:
        observations, rewards, terminations, truncations, infos = self.env.step(action_dict)
        terminateds, truncateds = dict(terminations), dict(truncations)
        ended = [a for a in action_dict if terminateds.get(a) or truncateds.get(a)]
        over = not self.env.agents
        all_truncated = (
            over and bool(ended) and all(truncateds.get(a) and not terminateds.get(a) for a in ended)
        )
        terminateds["__all__"] = over and not all_truncated
        truncateds["__all__"] = all_truncated
        return dict(observations), dict(rewards), terminateds, truncateds, dict(infos)

    def render(self) -> Any:
        return self.env.render()

    def close(self) -> None:
        self.env.close()
