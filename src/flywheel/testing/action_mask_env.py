"""`ActionMaskEnv`: a one-step-per-choice bandit whose observation says which actions are allowed."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np

from flywheel.checkpoints.registry import checkpoint_class
from flywheel.errors import EnvError


@checkpoint_class
class ActionMaskEnv(gym.Env):
    """Observations ``{"observations": values, "action_mask": mask}`` (RLlib's keys), ``Discrete(n)`` actions.

    Each step draws `values` uniformly from [0, 1)^n and a mask allowing a random non-empty subset
    (each action with probability 1/2, at least one); the reward is ``values[action]``, so the best
    policy takes the allowed action with the largest value. Taking a forbidden action raises an
    `EnvError` (with ``config["raise_on_forbidden"]``, the default) or ends the episode with reward -1,
    so a masked policy can be checked simply by running it. Episodes last ``config["episode_len"]``
    steps (default 10); ``config["num_actions"]`` is n (default 5).
    """

    def __init__(self, config: Mapping[str, Any] | None = None) -> None:
        config = config if config is not None else {}
        self.n = int(config.get("num_actions", 5))
        self.episode_len = int(config.get("episode_len", 10))
        self.raise_on_forbidden = bool(config.get("raise_on_forbidden", True))
        self.observation_space = gym.spaces.Dict(
            {
                "observations": gym.spaces.Box(0.0, 1.0, (self.n,), np.float32),
                "action_mask": gym.spaces.Box(0.0, 1.0, (self.n,), np.float32),
            }
        )
        self.action_space = gym.spaces.Discrete(self.n)
        self.t = 0

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        super().reset(seed=seed)
        self.t = 0
        return self._observe(), {}

    def step(self, action: Any) -> tuple[dict, float, bool, bool, dict]:
        action = int(action)
        if self._obs["action_mask"][action] == 0:
            if self.raise_on_forbidden:
                raise EnvError(
                    f"ActionMaskEnv: action {action} is forbidden by the mask {self._obs['action_mask'].tolist()} "
                    f"at step {self.t} of the episode."
                )
            return self._obs, -1.0, True, False, {}
        reward = float(self._obs["observations"][action])
        self.t += 1
        return self._observe(), reward, self.t >= self.episode_len, False, {}

    def _observe(self) -> dict[str, np.ndarray]:
        mask = (self.np_random.random(self.n) < 0.5).astype(np.float32)
        mask[self.np_random.integers(self.n)] = 1.0
        values = self.np_random.random(self.n).astype(np.float32)
        self._obs = {"observations": values, "action_mask": mask}
        return self._obs
