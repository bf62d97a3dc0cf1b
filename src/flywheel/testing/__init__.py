"""Fakes for testing flywheel's pieces and your own: tiny deterministic envs."""

from flywheel.testing.action_mask_env import ActionMaskEnv
from flywheel.testing.envs import (
    OBS_HIGH,
    CountingContinuousEnv,
    CountingEnv,
    FailingEnv,
    ObsOutOfSpaceEnv,
    WrongSpaceTypeEnv,
)
from flywheel.testing.multi_agent_envs import BrokenMultiAgentEnv, JoinLeaveEnv, MultiCartPole, TurnBasedEnv
from flywheel.testing.tic_tac_toe import RandomLegalMoveModule, TicTacToe

__all__ = [
    "OBS_HIGH",
    "ActionMaskEnv",
    "BrokenMultiAgentEnv",
    "CountingContinuousEnv",
    "CountingEnv",
    "FailingEnv",
    "JoinLeaveEnv",
    "MultiCartPole",
    "ObsOutOfSpaceEnv",
    "RandomLegalMoveModule",
    "TicTacToe",
    "TurnBasedEnv",
    "WrongSpaceTypeEnv",
]
