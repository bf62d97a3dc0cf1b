"""Tiny deterministic envs to test runners, connectors and your own pieces against.

Every trajectory is known in advance, so a test can assert exact numbers: in
:class:`CountingEnv` the observation after step ``t`` is ``[t]`` and its reward is ``t``.
The broken envs each violate one contract on purpose, for testing error paths.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np

from flywheel.checkpoints.registry import checkpoint_class
from flywheel.errors import EnvError

__all__ = ["CountingContinuousEnv", "CountingEnv", "FailingEnv", "ObsOutOfSpaceEnv", "WrongSpaceTypeEnv"]

OBS_HIGH = 1e6
"""Upper bound of the counting envs' observation space: finite, so normalisers stay finite."""


@checkpoint_class
class CountingEnv(gym.Env):
    """Counts the steps since reset.

    Observation ``np.array([t], np.float32)`` in ``Box(0, OBS_HIGH, (1,))``, ``Discrete(2)``
    actions (ignored), reward ``float(t)`` after step ``t`` (1, 2, 3, ...). The episode ends at
    ``t == config["episode_len"]`` (default 5), terminated, or truncated when
    ``config["truncate"]`` is true. ``self.config`` keeps the config it was built with
    (an ``EnvContext`` when built by flywheel).
    """

    def __init__(self, config: Mapping[str, Any] | None = None) -> None:
        self.config = config if config is not None else {}
        self.episode_len = int(self.config.get("episode_len", 5))
        self.truncate = bool(self.config.get("truncate", False))
        self.observation_space = gym.spaces.Box(0.0, OBS_HIGH, (1,), np.float32)
        self.action_space: gym.spaces.Space = gym.spaces.Discrete(2)
        self.t = 0

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self.t = 0
        return np.array([self.t], np.float32), {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        self.t += 1
        done = self.t >= self.episode_len
        return (
            np.array([self.t], np.float32),
            float(self.t),
            done and not self.truncate,
            done and self.truncate,
            {},
        )


@checkpoint_class
class CountingContinuousEnv(CountingEnv):
    """:class:`CountingEnv` with ``Box(-1, 1, (1,))`` actions."""

    def __init__(self, config: Mapping[str, Any] | None = None) -> None:
        super().__init__(config)
        self.action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)


@checkpoint_class
class ObsOutOfSpaceEnv(CountingEnv):
    """:class:`CountingEnv` whose observations break the observation space.

    ``config["problem"]``: ``"bounds"`` (default; returns ``[-1.0]``), ``"dtype"`` (float64) or
    ``"shape"`` (``[t, t]``) or ``"nan"``; ``config["at"]``: ``"reset"`` (default) or ``"step"``, and with
    ``"step"``, ``config["after"]`` (default 0): the steps up to that one are fine.
    """

    def __init__(self, config: Mapping[str, Any] | None = None) -> None:
        super().__init__(config)
        self.problem = self.config.get("problem", "bounds")
        self.at = self.config.get("at", "reset")
        self.after = int(self.config.get("after", 0))

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        obs, info = super().reset(seed=seed, options=options)
        return (self._break(obs) if self.at == "reset" else obs), info

    def step(self, action: Any) -> tuple[np.ndarray, SupportsFloat, bool, bool, dict]:
        obs, reward, terminated, truncated, info = super().step(action)
        return (
            (self._break(obs) if self.at == "step" and self.t > self.after else obs),
            reward,
            terminated,
            truncated,
            info,
        )

    def _break(self, obs: np.ndarray) -> np.ndarray:
        if self.problem == "nan":
            return np.array([np.nan], np.float32)
        if self.problem == "dtype":
            return obs.astype(np.float64)
        if self.problem == "shape":
            return np.concatenate([obs, obs])
        return np.array([-1.0], np.float32)


@checkpoint_class
class WrongSpaceTypeEnv(CountingEnv):
    """:class:`CountingEnv` whose ``config["attribute"]`` (default ``"observation_space"``) is a
    tuple of bounds ``(0.0, 1.0)`` instead of a space, a common slip."""

    def __init__(self, config: Mapping[str, Any] | None = None) -> None:
        super().__init__(config)
        setattr(self, self.config.get("attribute", "observation_space"), (0.0, 1.0))


@checkpoint_class
class FailingEnv(CountingEnv):
    """:class:`CountingEnv` that raises ``RuntimeError`` in ``reset``/``step`` once it has taken
    ``config["fail_after"]`` steps in total (over all its episodes), e.g. to test fault tolerance.

    With ``config["fail_on_worker_indices"]`` (a list), only envs on those runners fail, and with
    ``config["fail_on_vector_indices"]`` only those sub-envs; the others count forever. With
    ``config["fail_once_marker"]`` (a file path), only the first env to fail does: it creates the file,
    and envs built later (e.g. by a restarted runner) never fail while it exists.
    """

    def __init__(self, config: Mapping[str, Any] | None = None) -> None:
        super().__init__(config)
        if "fail_after" not in self.config:
            raise EnvError(
                f"FailingEnv needs config['fail_after'] (steps before it fails), got config {self.config!r}. "
                "Fix: FailingEnv({'fail_after': 3})."
            )
        self.fail_after = int(self.config["fail_after"])
        workers = self.config.get("fail_on_worker_indices")
        vectors = self.config.get("fail_on_vector_indices")
        self.fails = (workers is None or getattr(self.config, "worker_index", 0) in workers) and (
            vectors is None or getattr(self.config, "vector_index", 0) in vectors
        )
        self.total_steps = 0

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        self._maybe_fail("reset")
        return super().reset(seed=seed, options=options)

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        self._maybe_fail("step")
        self.total_steps += 1
        return super().step(action)

    def _maybe_fail(self, method: str) -> None:
        if self.fails and self.total_steps >= self.fail_after:
            marker = self.config.get("fail_once_marker")
            if marker is not None:
                if os.path.exists(marker):
                    self.fails = False
                    return
                open(marker, "x").close()
            raise RuntimeError(
                f"FailingEnv.{method}() failed on purpose after {self.total_steps} steps "
                f"(config['fail_after']={self.fail_after})."
            )
