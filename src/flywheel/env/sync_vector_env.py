"""`FastSyncVectorEnv`: gymnasium's `SyncVectorEnv` with a leaner `step` for array spaces."""

from __future__ import annotations

from typing import Any, cast

import gymnasium as gym
import numpy as np
from gymnasium.vector.utils import create_empty_array

from flywheel.compat import add_vector_info

_ARRAY_SPACES = (gym.spaces.Box, gym.spaces.Discrete, gym.spaces.MultiDiscrete, gym.spaces.MultiBinary)


class FastSyncVectorEnv(gym.vector.SyncVectorEnv):
    """gymnasium's `SyncVectorEnv`, whose `step` (autoreset `SAME_STEP`, observations and actions
    in array spaces: Box, Discrete, MultiDiscrete, MultiBinary) writes each sub-env's results
    straight into fresh batch arrays.

    The generic `step` dispatches on the space type to split the actions and to join the
    observations, then deep-copies the observation batch: for CartPole that costs about as much as
    the env step itself (~8 us of ~18 us per vector step of one sub-env). The results are the same:
    observations, float64 rewards, bool flags, and infos built by gymnasium's own `_add_info` (through
    `flywheel.compat.add_vector_info`), with `final_obs` / `final_info` for sub-envs that ended and
    were reset. Everything else (reset,
    call, get_attr, render, close, other spaces and autoreset modes) is gymnasium's.
    """

    def __init__(self, env_fns: Any, **kwargs: Any) -> None:
        super().__init__(env_fns, **kwargs)
        self._fast = (
            self.autoreset_mode == gym.vector.AutoresetMode.SAME_STEP
            and isinstance(self.single_observation_space, _ARRAY_SPACES)
            and isinstance(self.single_action_space, _ARRAY_SPACES)
        )
        if self._fast:
            # One array for an array space (Box, Discrete, ...).
            self._obs_buffer = cast(
                np.ndarray, create_empty_array(self.single_observation_space, self.num_envs)
            )

    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        if not self._fast:
            return super().step(actions)
        n = self.num_envs
        obs_buffer = self._obs_buffer
        rewards = np.zeros(n, dtype=np.float64)
        terminateds = np.zeros(n, dtype=np.bool_)
        truncateds = np.zeros(n, dtype=np.bool_)
        infos: dict[str, Any] = {}
        for i, env in enumerate(self.envs):
            obs, rewards[i], terminated, truncated, info = env.step(actions[i])
            if terminated or truncated:  # (else both flags stay False: most steps write neither)
                terminateds[i], truncateds[i] = terminated, truncated
                infos = add_vector_info(self, infos, {"final_obs": obs, "final_info": info}, i)
                obs, info = env.reset()
            obs_buffer[i] = obs
            if info:  # (merging an empty info changes nothing: most envs return one every step)
                infos = add_vector_info(self, infos, info, i)
        return obs_buffer.copy(), rewards, terminateds, truncateds, infos
