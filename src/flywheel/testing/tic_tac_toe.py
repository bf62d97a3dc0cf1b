"""Tic-tac-toe as a turn-based `MultiAgentEnv`, and a module that plays uniformly random legal moves.

Players alternate and only the player to move observes, so every episode exercises agents that
wait between their steps (their rewards arrive with their next observation, or at the end).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from flywheel.checkpoints.registry import checkpoint_class
from flywheel.columns import Columns
from flywheel.core.rl_module.apis import ValueFunctionAPI
from flywheel.core.rl_module.torch_rl_module import TorchRLModule
from flywheel.env.multi_agent_env import MultiAgentEnv

__all__ = ["RandomLegalMoveModule", "TicTacToe"]

_LINES = np.array([[0, 1, 2], [3, 4, 5], [6, 7, 8], [0, 3, 6], [1, 4, 7], [2, 5, 8], [0, 4, 8], [2, 4, 6]])


@checkpoint_class
class TicTacToe(MultiAgentEnv):
    """Players ``"X"`` (moves first) and ``"O"`` place marks on a 3x3 board; three in a line wins.

    The mover observes the board from its own side: 9 cells, ``1`` its marks, ``-1`` the
    opponent's, ``0`` empty; its action is the cell (0-8). Games score like chess: the winner gets
    ``1``, the loser ``0``, a draw ``0.5`` each. A move onto a taken cell forfeits the game. At the
    end every player that has observed gets a final observation.
    """

    def __init__(self, config: Mapping[str, object] | None = None) -> None:
        super().__init__()
        self.possible_agents = ["X", "O"]
        self.agents = list(self.possible_agents)
        space = gym.spaces.Box(-1.0, 1.0, (9,), np.float32)
        self.observation_spaces = {a: space for a in self.possible_agents}
        self.action_spaces = {a: gym.spaces.Discrete(9) for a in self.possible_agents}
        self.board = np.zeros(9, np.float32)  # +1: X, -1: O
        self.mover = "X"
        self.observed: set[str] = set()

    def _obs(self, agent: str) -> np.ndarray:
        return self.board if agent == "X" else -self.board

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        super().reset(seed=seed)
        self.board = np.zeros(9, np.float32)
        self.mover, self.observed = "X", {"X"}
        return {"X": self._obs("X").copy()}, {}

    def step(self, action_dict: dict) -> tuple[dict, dict, dict, dict, dict]:
        mover, other = self.mover, "O" if self.mover == "X" else "X"
        cell = int(action_dict[mover])
        if self.board[cell] != 0:
            return self._end({mover: 0.0, other: 1.0})
        self.board[cell] = 1.0 if mover == "X" else -1.0
        if np.any(np.abs(self.board[_LINES].sum(axis=1)) == 3):
            return self._end({mover: 1.0, other: 0.0})
        if not np.any(self.board == 0):
            return self._end({mover: 0.5, other: 0.5})
        self.mover = other
        self.observed.add(other)
        return {other: self._obs(other).copy()}, {}, {"__all__": False}, {"__all__": False}, {}

    def _end(self, rewards: dict) -> tuple[dict, dict, dict, dict, dict]:
        players = [a for a in self.possible_agents if a in self.observed]
        obs = {a: self._obs(a).copy() for a in players}
        return obs, {a: rewards[a] for a in players}, {"__all__": True}, {"__all__": False}, {}


class RandomLegalMoveModule(TorchRLModule, ValueFunctionAPI):
    """Picks a uniformly random empty cell (observation == 0): a fixed opponent with no weights.

    Its value estimate is 0, so PPO's learner can hold it untrained next to learning modules.
    """

    def _forward(self, batch: dict, **kwargs) -> dict:
        empty = batch[Columns.OBS] == 0
        return {Columns.ACTION_DIST_INPUTS: torch.where(empty, 0.0, -1e9)}

    def compute_values(self, batch: dict, embeddings: Any = None) -> torch.Tensor:
        return torch.zeros(batch[Columns.OBS].shape[0])
