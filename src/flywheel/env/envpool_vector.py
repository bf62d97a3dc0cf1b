"""`EnvPoolVectorEnv`: an EnvPool batch (C++ envs stepped in threads) as the gymnasium vector env a
runner steps, for ``config.env_runners(gym_env_vectorize_mode="envpool")``.

    config.environment("CartPole-v1").env_runners(num_envs_per_env_runner=64, gym_env_vectorize_mode="envpool")

The id is one of EnvPool's own (``envpool.list_all_envs()``: ``"CartPole-v1"``, ``"Pong-v5"``, ...) and
every ``env_config`` key is a keyword of ``envpool.make_gymnasium``. EnvPool autoresets
``NEXT_STEP``: the step after an episode ends returns the sub-env's reset observation (reward 0, not
done) and ignores that step's action; the runner reads ``metadata["autoreset_mode"]`` and records no
step for it, as for any ``NEXT_STEP`` vector env.

EnvPool fixes its seeds when the pool is built (sub-env ``i`` gets ``seed + i``, as gymnasium's
vector ``reset(seed=seed)`` gives it), so ``reset(seed=s)`` builds the pool anew with seed ``s``;
``reset()`` resets the pool in place. The pool is built at the first ``reset``, so a runner's
seeded first reset builds it once.
"""

from __future__ import annotations

import difflib
import importlib.util
from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector.utils import batch_space

from flywheel.errors import EnvError

__all__ = ["INSTALL_HINT", "EnvPoolVectorEnv"]

INSTALL_HINT = "pip install 'flywheel[envpool]'"

_ROUTING_INFO_KEYS = ("env_id", "players")
"""EnvPool's own routing fields in every info (which sub-env a row is): the rows are in sub-env
order, so they say nothing the position does not."""


class EnvPoolVectorEnv(gym.vector.VectorEnv):
    """`num_envs` copies of EnvPool's `env_id`, stepped as one batch (synchronous: every call steps
    all sub-envs, rows in sub-env order). Observations and flags are EnvPool's arrays, images (Atari's
    stacked frames) moved to channels-last; rewards are float64 like gymnasium's vector envs'; infos
    keep EnvPool's per-env fields (``elapsed_step``, Atari's ``lives``, ...)."""

    metadata = {"autoreset_mode": gym.vector.AutoresetMode.NEXT_STEP}

    def __init__(
        self, env_id: str, env_config: Mapping[str, Any] | None = None, *, num_envs: int = 1
    ) -> None:
        envpool = _import_envpool()
        if env_id not in envpool.list_all_envs():
            raise EnvError(_unknown_id_message(env_id, envpool.list_all_envs()))
        self.env_id = env_id
        self.num_envs = num_envs
        self._kwargs = dict(env_config or {})
        try:
            spec = envpool.make_spec(env_id, num_envs=num_envs, **self._kwargs)
        except TypeError as e:
            raise EnvError(
                f"envpool.make_spec({env_id!r}, **env_config) with env_config={self._kwargs!r} raised "
                f"TypeError: {e}. With gym_env_vectorize_mode='envpool', every env_config key is a keyword of "
                "envpool.make_gymnasium. Fix: keep only EnvPool's keywords (envpool.make_spec(id).config "
                "lists them)."
            ) from e
        space = spec.gymnasium_observation_space
        # EnvPool's images (Atari) are channels-first; flywheel's CNN encoders read (height, width, channels).
        self._channels_first = isinstance(space, gym.spaces.Box) and len(space.shape) == 3
        if self._channels_first:
            space = gym.spaces.Box(
                np.moveaxis(space.low, 0, -1), np.moveaxis(space.high, 0, -1), dtype=space.dtype.type
            )
        self.single_observation_space = space
        self.single_action_space = spec.gymnasium_action_space
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self._pool: Any = None

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict]:
        if options is not None:
            raise EnvError(
                f"EnvPoolVectorEnv.reset takes no options (got {options!r}): it resets every sub-env. "
                "Fix: call reset() or reset(seed=...)."
            )
        pool = self._pool
        if seed is not None or pool is None:
            pool = self._pool = self._new_pool(seed)
        obs, info = pool.reset()
        return self._obs(obs), _infos(info)

    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        if self._pool is None:
            raise EnvError("EnvPoolVectorEnv.step() before reset(). Fix: call reset() first.")
        obs, rewards, terminateds, truncateds, info = self._pool.step(np.asarray(actions))
        return self._obs(obs), rewards.astype(np.float64), terminateds, truncateds, _infos(info)

    def _obs(self, obs: Any) -> Any:
        return np.ascontiguousarray(np.moveaxis(obs, 1, -1)) if self._channels_first else obs

    def close_extras(self, **kwargs: Any) -> None:
        if self._pool is not None:
            self._pool.close()
            self._pool = None

    def _new_pool(self, seed: int | None) -> Any:
        """Closes the pool and builds it anew, seeded with `seed` (a fresh random seed for None)."""
        if seed is None:
            seed = int(np.random.default_rng().integers(2**30))  # EnvPool's seed (+ sub-env index) is a C int
        self.close_extras()
        envpool = _import_envpool()
        return envpool.make_gymnasium(self.env_id, num_envs=self.num_envs, seed=seed, **self._kwargs)

    def __repr__(self) -> str:
        return f"EnvPoolVectorEnv({self.env_id!r}, num_envs={self.num_envs})"


def _infos(info: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in info.items() if key not in _ROUTING_INFO_KEYS}


def _import_envpool() -> Any:
    if importlib.util.find_spec("envpool") is None:
        raise EnvError(
            "gym_env_vectorize_mode='envpool' steps EnvPool's C++ envs, but the envpool package is not "
            f"installed. Fix: {INSTALL_HINT}, or use gym_env_vectorize_mode='sync'."
        )
    import envpool

    return envpool


def _unknown_id_message(env_id: str, known: list[str]) -> str:
    close = difflib.get_close_matches(env_id, known, n=3)
    did_you_mean = f" Did you mean {', '.join(map(repr, close))}?" if close else ""
    return (
        f"EnvPool has no env {env_id!r}.{did_you_mean} envpool.list_all_envs() lists its {len(known)} ids. "
        "Fix: pass one of them, or use gym_env_vectorize_mode='sync' for gymnasium ids and custom envs."
    )
