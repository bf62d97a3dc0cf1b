"""Fakes for testing flywheel's pieces and your own: tiny deterministic envs."""

from flywheel.testing.envs import (
    OBS_HIGH,
    CountingContinuousEnv,
    CountingEnv,
    FailingEnv,
    ObsOutOfSpaceEnv,
    WrongSpaceTypeEnv,
)

__all__ = [
    "OBS_HIGH",
    "CountingContinuousEnv",
    "CountingEnv",
    "FailingEnv",
    "ObsOutOfSpaceEnv",
    "WrongSpaceTypeEnv",
]
