"""`OpenSpielEnv`: an OpenSpiel game as a flywheel `MultiAgentEnv` (RLlib's conventions).

OpenSpiel is optional (``pip install open_spiel``); this module imports it only in
`try_import_pyspiel` / `try_import_open_spiel`, and the env only talks to the game it is given::

    import pyspiel
    from flywheel import register_env
    from flywheel.env.open_spiel import OpenSpielEnv

    register_env("connect_four", lambda _: OpenSpielEnv(pyspiel.load_game("connect_four")))

The agents are the players ``0 .. num_players - 1``. Each observes a float32 vector of the game's
``observation_tensor_size()`` (a ``Box(-inf, inf)``) and acts with ``Discrete(num_distinct_actions())``.
Sequential games are turn-based: only the player to move gets an observation, so only it acts in the
next step. Simultaneous games: every player observes and acts in every step. Chance nodes are
resolved before each observation, sampled from their outcome probabilities. An action the state
does not allow is replaced by a random legal one, and the player loses 0.1 in that step's reward.
Every player gets a reward every step (the change of its OpenSpiel return); the episode ends for all
(``"__all__"``) when the game state is terminal, with an empty observation dict.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import gymnasium as gym
import numpy as np

from flywheel.env.multi_agent_env import MultiAgentEnv

__all__ = ["ILLEGAL_ACTION_PENALTY", "OpenSpielEnv", "try_import_open_spiel", "try_import_pyspiel"]

ILLEGAL_ACTION_PENALTY = -0.1
"""Added to a player's reward in a step where it chose an action the state does not allow (RLlib's)."""

SIMULTANEOUS_PLAYER = -2
"""OpenSpiel's `current_player()` at a node where all players move at once."""


def try_import_pyspiel(error: bool = False) -> ModuleType | None:
    """OpenSpiel's `pyspiel` module, or None when it is not installed (`error=True`: ImportError)."""
    try:
        import pyspiel
    except ImportError as missing:
        if error:
            raise ImportError(
                "Could not import pyspiel: OpenSpiel is not installed (flywheel does not depend on it). "
                "Fix: pip install open_spiel"
            ) from missing
        return None
    return pyspiel


def try_import_open_spiel(error: bool = False) -> ModuleType | None:
    """The `open_spiel` package, or None when it is not installed (`error=True`: ImportError)."""
    try:
        import open_spiel
    except ImportError as missing:
        if error:
            raise ImportError(
                "Could not import open_spiel: OpenSpiel is not installed (flywheel does not depend on it). "
                "Fix: pip install open_spiel"
            ) from missing
        return None
    return open_spiel


class OpenSpielEnv(MultiAgentEnv):
    """Plays one OpenSpiel game (`pyspiel.load_game(name)`): a new game state at every `reset()`."""

    def __init__(self, env: Any) -> None:
        super().__init__()
        self.env = env
        self.type = env.get_type()
        self.sequential = str(self.type.dynamics).endswith("SEQUENTIAL")
        self.agents = self.possible_agents = list(range(env.num_players()))
        size = env.observation_tensor_size()
        self.observation_spaces = {
            agent: gym.spaces.Box(-np.inf, np.inf, (size,), np.float32) for agent in self.possible_agents
        }
        self.action_spaces = {
            agent: gym.spaces.Discrete(env.num_distinct_actions()) for agent in self.possible_agents
        }
        self.state: Any = None
        self._returns = np.zeros(len(self.possible_agents))
        self._rng = np.random.default_rng()

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        self.state = self.env.new_initial_state()
        self._returns = np.zeros(len(self.possible_agents))
        return self._observations(), {}

    def step(self, action_dict: dict) -> tuple[dict, dict, dict, dict, dict]:
        self._resolve_chance_nodes()
        penalties = dict.fromkeys(self.possible_agents, 0.0)
        if self.sequential:
            player = self.state.current_player()
            if player not in action_dict:
                raise KeyError(
                    f"OpenSpielEnv: player {player} is to move, but the actions are {action_dict}."
                )
            action = int(action_dict[player])
            if action not in self.state.legal_actions():
                action = int(self._rng.choice(self.state.legal_actions()))
                penalties[player] = ILLEGAL_ACTION_PENALTY
            self.state.apply_action(action)
        else:
            self.state.apply_actions([int(action_dict[agent]) for agent in self.possible_agents])
        observations = self._observations()
        returns = np.asarray(self.state.returns(), dtype=np.float64)
        rewards = {
            agent: float(returns[agent] - self._returns[agent]) + penalties[agent]
            for agent in self.possible_agents
        }
        self._returns = returns
        over = bool(self.state.is_terminal())
        terminateds = {**dict.fromkeys(self.possible_agents, over), "__all__": over}
        truncateds = {**dict.fromkeys(self.possible_agents, False), "__all__": False}
        return observations, rewards, terminateds, truncateds, {}

    def render(self, mode: str | None = None) -> str:
        """The game state as OpenSpiel prints it (also printed when `mode="human"`)."""
        text = str(self.state)
        if mode == "human":
            print(text)
        return text

    def _observations(self) -> dict[int, np.ndarray]:
        self._resolve_chance_nodes()
        if self.state.is_terminal():
            return {}
        if self.sequential:
            players = [self.state.current_player()]
        else:
            players = self.possible_agents
        return {
            p: np.asarray(self.state.observation_tensor(p), dtype=np.float32).reshape(-1) for p in players
        }

    def _resolve_chance_nodes(self) -> None:
        while self.state.is_chance_node():
            outcomes, probabilities = zip(*self.state.chance_outcomes(), strict=True)
            self.state.apply_action(int(self._rng.choice(outcomes, p=probabilities)))
