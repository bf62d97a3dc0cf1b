"""`wrap_atari_for_new_api_stack`: RLlib's Atari preprocessing for envs you make yourself.

    register_env("pong", lambda cfg: wrap_atari_for_new_api_stack(gymnasium.make("ALE/Pong-v5", **cfg)))
    config.environment("pong", env_config={"frameskip": 1, "repeat_action_probability": 0.0})

Unlike the preprocessing flywheel adds to Atari ids (`flywheel.env.atari`: 84x84 ``uint8`` frames),
these frames are ``dim`` x ``dim`` ``float32`` in [-1, 1), as in RLlib. Pass ``frameskip=1`` to
`gymnasium.make` when the wrapper skips frames (``frameskip`` > 1 here), or ALE skips them as well.
"""

from __future__ import annotations

from collections import deque
from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np

from flywheel.env.atari import ATARI_NOOP_MAX
from flywheel.utils.images import resize, rgb2gray

ATARI_MAX_EPISODE_STEPS = 108_000
"""`wrap_atari_for_new_api_stack`'s time limit, in steps of the env it wraps."""
NOOP, FIRE = 0, 1


class GrayScaleAndResize(gym.ObservationWrapper):
    """RGB frames [H, W, 3] to ``uint8`` [dim, dim, 1] grayscale (or [dim, dim, 3] with
    ``grayscale=False``), resized by area averaging."""

    def __init__(self, env: gym.Env, dim: int, grayscale: bool = True):
        super().__init__(env)
        self.dim = dim
        self.grayscale = grayscale
        self.observation_space = gym.spaces.Box(0, 255, (dim, dim, 1 if grayscale else 3), np.uint8)

    def observation(self, observation: np.ndarray) -> np.ndarray:
        if self.grayscale:
            return resize(rgb2gray(observation), self.dim, self.dim)[:, :, None]
        return resize(observation, self.dim, self.dim)


class NormalizedImageEnv(gym.ObservationWrapper):
    """``uint8`` pixels p to ``float32`` p / 128 - 1, in [-1, 1)."""

    def __init__(self, env: gym.Env):
        super().__init__(env)
        shape = env.observation_space.shape
        self.observation_space = gym.spaces.Box(-1.0, 1.0, shape, np.float32)

    def observation(self, observation: np.ndarray) -> np.ndarray:
        return observation.astype(np.float32) / 128.0 - 1.0


class NoopResetEnv(gym.Wrapper):
    """After each reset, 1 to `noop_max` NOOP actions (drawn from the env's generator), so episodes start
    in varied states; an episode ending during them is reset. The env's action 0 must be NOOP."""

    def __init__(self, env: gym.Env, noop_max: int = ATARI_NOOP_MAX):
        super().__init__(env)
        if env.unwrapped.get_action_meanings()[NOOP] != "NOOP":  # pyright: ignore[reportAttributeAccessIssue]
            raise ValueError(f"NoopResetEnv needs action {NOOP} to be NOOP, got {env.unwrapped}.")
        self.noop_max = noop_max

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[Any, dict]:
        obs, info = self.env.reset(seed=seed, options=options)
        for _ in range(int(self.unwrapped.np_random.integers(1, self.noop_max + 1))):
            obs, _, terminated, truncated, info = self.env.step(NOOP)
            if terminated or truncated:
                obs, info = self.env.reset()
        return obs, info


class EpisodicLifeEnv(gym.Wrapper):
    """Losing a life ends the episode (`terminated`); the next reset then only steps a NOOP, and resets
    the game once it is over."""

    def __init__(self, env: gym.Env):
        super().__init__(env)
        self.lives = 0
        self.game_over = True

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.game_over = terminated
        lives = self._ale_lives()
        if 0 < lives < self.lives:
            terminated = True
        self.lives = lives
        return obs, reward, terminated, truncated, info

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[Any, dict]:
        if self.game_over:
            obs, info = self.env.reset(seed=seed, options=options)
        else:
            obs, _, _, _, info = self.env.step(NOOP)
        self.lives = self._ale_lives()
        return obs, info

    def _ale_lives(self) -> int:
        return self.env.unwrapped.ale.lives()  # pyright: ignore[reportAttributeAccessIssue]


class FireResetEnv(gym.Wrapper):
    """After each reset, FIRE and then action 2 (games that wait for FIRE start playing)."""

    def __init__(self, env: gym.Env):
        super().__init__(env)
        meanings = env.unwrapped.get_action_meanings()  # pyright: ignore[reportAttributeAccessIssue]
        if len(meanings) < 3 or meanings[FIRE] != "FIRE":
            raise ValueError(f"FireResetEnv needs action {FIRE} to be FIRE and 3 actions, got {meanings}.")

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[Any, dict]:
        self.env.reset(seed=seed, options=options)
        info: dict = {}
        for action in (FIRE, 2):
            obs, _, terminated, truncated, info = self.env.step(action)
            if terminated or truncated:
                obs, info = self.env.reset()
        return obs, info


class FrameStack(gym.Wrapper):
    """The last `k` observations [H, W, C] as one [H, W, k * C], oldest first; a reset fills all `k`
    with the reset observation."""

    def __init__(self, env: gym.Env, k: int):
        super().__init__(env)
        self.k = k
        self.frames: deque[np.ndarray] = deque(maxlen=k)
        space = env.observation_space
        if not isinstance(space, gym.spaces.Box):
            raise ValueError(f"FrameStack stacks Box observations, got {space}.")
        low = np.concatenate([space.low] * k, axis=-1)
        high = np.concatenate([space.high] * k, axis=-1)
        self.observation_space = gym.spaces.Box(low, high, low.shape, space.dtype.type)

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[Any, dict]:
        obs, info = self.env.reset(seed=seed, options=options)
        self.frames.extend([obs] * self.k)
        return np.concatenate(self.frames, axis=-1), info

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.frames.append(obs)
        return np.concatenate(self.frames, axis=-1), reward, terminated, truncated, info


def wrap_atari_for_new_api_stack(
    env: gym.Env,
    dim: int = 64,
    frameskip: int = 4,
    framestack: int | None = None,
    grayscale: bool = True,
) -> gym.Env:
    """`env` (an ALE env with RGB observations) wrapped as RLlib does, innermost first: a time limit of
    108,000 steps, grayscale and resize to `dim` x `dim` (`GrayScaleAndResize`), ``float32`` pixels in
    [-1, 1) (`NormalizedImageEnv`), `frameskip` steps per action with the max of the last two frames
    (gymnasium's `MaxAndSkipObservation`, if `frameskip` > 1), 1 to 30 NOOPs after reset, one life per
    episode (`EpisodicLifeEnv`), FIRE after reset in games that have it, and, with `framestack`, the
    last `framestack` frames along the last axis (`FrameStack`).

    Observations are ``float32`` of shape (dim, dim, 1) (3 channels with ``grayscale=False``), or
    (dim, dim, framestack) stacked. Rewards are not clipped (see `config.environment(clip_rewards=)`).
    """
    env = gym.wrappers.TimeLimit(env, max_episode_steps=ATARI_MAX_EPISODE_STEPS)
    env = GrayScaleAndResize(env, dim=dim, grayscale=grayscale)
    env = NormalizedImageEnv(env)
    if frameskip > 1:
        env = gym.wrappers.MaxAndSkipObservation(env, skip=frameskip)
    env = NoopResetEnv(env, noop_max=ATARI_NOOP_MAX)
    env = EpisodicLifeEnv(env)
    if "FIRE" in env.unwrapped.get_action_meanings():  # pyright: ignore[reportAttributeAccessIssue]
        env = FireResetEnv(env)
    if framestack:
        env = FrameStack(env, k=framestack)
    return env
