"""Atari through `ale-py`: which ids are Atari, and the DeepMind preprocessing flywheel adds to them.

    config.environment("ale_py:ALE/Pong-v5", env_config={"repeat_action_probability": 0.0})

A gymnasium id whose entry point is ALE's `AtariEnv` (``"ALE/Pong-v5"``, ``"ale_py:ALE/Pong-v5"``) is
made as ``gymnasium.make(id, frameskip=1, **env_config)`` and wrapped in gymnasium's
`AtariPreprocessing`: up to 30 no-op actions after reset, 4 frames per step (max-pooled over the last
two), 84x84 grayscale ``uint8`` frames of shape ``(84, 84, 1)``. The config then stacks the last
`ATARI_FRAME_STACK` frames in the env-to-module (and learner) pipelines, so episodes and replay
buffers hold single ``uint8`` frames and the module sees ``(84, 84, 4)``.

An ``env_config`` with ``frameskip`` > 1 lets ALE skip frames itself (no max-pooling) and the wrapper
skips none. To step ALE without flywheel's preprocessing, register a creator:
``register_env("pong", lambda cfg: gymnasium.make("ALE/Pong-v5", **cfg))``.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
from gymnasium.envs.registration import EnvSpec

ATARI_ENTRY_POINT = "ale_py.env:AtariEnv"
ATARI_FRAME_SKIP = 4
ATARI_SCREEN_SIZE = 84
ATARI_NOOP_MAX = 30
ATARI_FRAME_STACK = 4
"""Frames the module sees per observation (the last 4 preprocessed frames, oldest first)."""


def is_atari_spec(spec: EnvSpec | None) -> bool:
    """Whether `spec` makes an ALE Atari env (its entry point is `ale_py`'s `AtariEnv`)."""
    return spec is not None and spec.entry_point == ATARI_ENTRY_POINT


def make_atari(env_id: str, env_config: dict[str, Any]) -> gym.Env:
    """``gymnasium.make(env_id, frameskip=1, **env_config)`` in `AtariPreprocessing` (DeepMind's settings,
    ``uint8`` frames with a channel axis); with an ``env_config`` ``frameskip`` other than 1, ALE skips
    the frames and the wrapper skips none."""
    kwargs = {"frameskip": 1, **env_config}
    return gym.wrappers.AtariPreprocessing(
        gym.make(env_id, **kwargs),
        noop_max=ATARI_NOOP_MAX,
        frame_skip=ATARI_FRAME_SKIP if kwargs["frameskip"] == 1 else 1,
        screen_size=ATARI_SCREEN_SIZE,
        grayscale_obs=True,
        grayscale_newaxis=True,
        scale_obs=False,
    )
