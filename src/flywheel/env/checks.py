"""A one-time check of the gymnasium contract, run when a runner is built.

The sampling loop validates nothing per step, so an env that breaks the contract (spaces
that are not spaces, observations outside the observation space, the old 4-tuple step API)
would otherwise fail deep inside a connector or a module. :func:`check_env` calls ``reset``
and a few random ``step``s and explains the first violation; a runner runs it on its own first
sub-env right after building it (the runner's first ``sample()`` resets that env again).
"""

from __future__ import annotations

import numbers
import warnings
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np

from flywheel.env.multi_agent_env import MultiAgentEnv
from flywheel.env.observation_checks import first_outside, outside_bounds_only
from flywheel.errors import EnvError

__all__ = ["SUPPORTED_SPACES", "ObservationMonitor", "check_env", "env_name"]

SUPPORTED_SPACES: tuple[type[gym.spaces.Space], ...] = (
    gym.spaces.Box,
    gym.spaces.Discrete,
    gym.spaces.MultiDiscrete,
    gym.spaces.MultiBinary,
    gym.spaces.Dict,
    gym.spaces.Tuple,
)

_SPACE_EXAMPLES = {
    "observation_space": "gymnasium.spaces.Box(low, high, shape, dtype)",
    "action_space": "gymnasium.spaces.Discrete(n)",
}


def check_env(env: gym.Env, *, num_steps: int = 5, seed: int | None = 0, warn_bounds: bool = True) -> None:
    """Checks ``env`` against the gymnasium contract; the env stays open (the caller's to use or close).

    Checks that ``observation_space`` and ``action_space`` are supported space instances, that
    ``reset(seed=seed)`` returns ``(obs, info)`` and that ``num_steps`` random ``step()``s (of actions the
    observation's ``"action_mask"`` allows, when it has one) return
    ``(obs, reward, terminated, truncated, info)``, every observation inside the observation space.
    Raises an :class:`EnvError` naming the culprit and the fix; an exception raised by the env
    itself is wrapped in one that says which call raised it. An observation that leaves only a
    `Box`'s bounds (right shape and dtype) gets one warning instead, as gymnasium's env checker gives
    (none with ``warn_bounds=False``: runners leave that to their `ObservationMonitor`).
    """
    bounds = _run_checks(env, env_name(env), num_steps, seed)
    if bounds and warn_bounds:
        warnings.warn(bounds[0], stacklevel=2)


def _run_checks(env: gym.Env, name: str, num_steps: int, seed: int | None) -> list[str]:
    """Plays the checks; returns the warnings of observations outside a Box's bounds (in order)."""
    bounds: list[str] = []
    if isinstance(getattr(env, "unwrapped", env), MultiAgentEnv):
        raise EnvError(
            f"env {name} is a MultiAgentEnv, but the config is single-agent (policies is "
            "{'default_policy'} and there is no policy_mapping_fn). Fix: map its agents to modules with "
            "config.multi_agent(policies={...}, policy_mapping_fn=lambda agent_id, episode, **kw: <module id>)."
        )
    obs_space = _space_attribute(env, name, "observation_space")
    act_space = _space_attribute(env, name, "action_space")
    obs = _check_reset(env, name, obs_space, seed, bounds)
    act_space.seed(seed)
    for _ in range(num_steps):
        done, obs = _check_step(env, name, obs_space, _random_action(act_space, obs), bounds)
        if done:
            obs = _check_reset(env, name, obs_space, None, bounds)
    return bounds


def _random_action(act_space: gym.spaces.Space, obs: Any) -> Any:
    """A random action; one the observation's `"action_mask"` allows (RLlib's key for masked Discrete
    actions), since action-masking envs may reject the others, as RLlib's ActionMaskEnv does."""
    if isinstance(act_space, gym.spaces.Discrete) and isinstance(obs, dict) and "action_mask" in obs:
        mask = np.asarray(obs["action_mask"]).astype(np.int8)
        if mask.shape == (act_space.n,) and mask.any():
            return act_space.sample(mask=mask)
    return act_space.sample()


def env_name(env: Any) -> str:
    """How messages name `env`: a gymnasium id or registered name, a class or creator's name, or an
    env instance's spec id or class name."""
    if isinstance(env, str):
        return env
    spec = getattr(env, "spec", None)
    if isinstance(env, gym.Env) and spec is not None:
        return spec.id
    if isinstance(env, gym.Env):
        return type(env.unwrapped).__name__
    return getattr(env, "__name__", repr(env))


def _call(name: str, what: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    try:
        return fn(*args, **kwargs)
    except Exception as e:
        raise EnvError(
            f"env {name}.{what} raised {type(e).__name__}: {str(e).rstrip('.')}. This happened in flywheel's "
            "one-time env check at runner build; fix the env (the chained error above has its traceback)."
        ) from e


def _space_attribute(env: gym.Env, name: str, attribute: str) -> gym.spaces.Space:
    space = getattr(env, attribute, None)
    if isinstance(space, type) and issubclass(space, gym.spaces.Space):
        found = f"the class {space.__name__}, not an instance"
    elif not isinstance(space, gym.spaces.Space):
        found = "missing" if space is None else f"a {type(space).__name__} ({space!r})"
    else:
        _check_supported(space, name, attribute)
        return space
    raise EnvError(
        f"env {name}.{attribute} is {found}; expected a gymnasium.spaces.Space instance. "
        f"Fix: set self.{attribute} = {_SPACE_EXAMPLES[attribute]} in the env's __init__."
    )


def _check_supported(space: gym.spaces.Space, name: str, path: str) -> None:
    if not isinstance(space, SUPPORTED_SPACES):
        supported = ", ".join(cls.__name__ for cls in SUPPORTED_SPACES)
        raise EnvError(
            f"env {name}.{path} is {space}, a {type(space).__name__} space, which flywheel does not support. "
            f"Supported: {supported} (nested freely). Fix: wrap the env in a gymnasium.ObservationWrapper "
            "or ActionWrapper that exposes a supported space."
        )
    if isinstance(space, gym.spaces.Dict):
        for key, sub in space.spaces.items():
            _check_supported(sub, name, f"{path}[{key!r}]")
    elif isinstance(space, gym.spaces.Tuple):
        for i, sub in enumerate(space.spaces):
            _check_supported(sub, name, f"{path}[{i}]")


def _check_reset(
    env: gym.Env, name: str, obs_space: gym.spaces.Space, seed: int | None, bounds: list[str]
) -> Any:
    """Resets and returns the observation."""
    what = f"reset(seed={seed})" if seed is not None else "reset()"
    result = _call(name, what, env.reset, seed=seed)
    if not isinstance(result, tuple) or len(result) != 2:
        raise EnvError(
            f"env {name}.{what} returned {_describe(result)}; expected a tuple (obs, info). "
            "Fix: return obs, {} (the gymnasium API; old gym returned obs alone)."
        )
    obs, info = result
    _check_info(name, what, info)
    _check_obs(name, what, obs, obs_space, bounds)
    return obs


def _check_step(
    env: gym.Env, name: str, obs_space: gym.spaces.Space, action: Any, bounds: list[str]
) -> tuple[bool, Any]:
    """Steps once and returns whether the episode ended, and the observation."""
    what = "step()"
    result = _call(name, f"step({action!r})", env.step, action)
    if not isinstance(result, tuple) or len(result) != 5:
        raise EnvError(
            f"env {name}.{what} returned {_describe(result)}; expected a 5-tuple "
            "(obs, reward, terminated, truncated, info). Fix: return all five (old gym returned a 4-tuple "
            "with one `done`; split it into terminated and truncated)."
        )
    obs, reward, terminated, truncated, info = result
    if not isinstance(reward, numbers.Real) and not (isinstance(reward, np.ndarray) and reward.shape == ()):
        raise EnvError(
            f"env {name}.{what} returned reward {_describe(reward)}; expected a float. "
            "Fix: return float(reward)."
        )
    for flag, value in (("terminated", terminated), ("truncated", truncated)):
        if not isinstance(value, bool | np.bool_):
            raise EnvError(
                f"env {name}.{what} returned {flag}={_describe(value)}; expected a bool. "
                f"Fix: return bool({flag})."
            )
    _check_info(name, what, info)
    _check_obs(name, what, obs, obs_space, bounds)
    return bool(terminated or truncated), obs


def _check_info(name: str, what: str, info: Any) -> None:
    if not isinstance(info, dict):
        raise EnvError(
            f"env {name}.{what} returned info {_describe(info)}; expected a dict. Fix: return {{}} when "
            "there is nothing to report."
        )


def _check_obs(name: str, what: str, obs: Any, space: gym.spaces.Space, bounds: list[str]) -> None:
    warning = check_observation(f"env {name}.{what} returned an observation", "observation_space", obs, space)
    if warning is not None:
        bounds.append(warning)


def check_observation(returned: str, space_name: str, obs: Any, space: gym.spaces.Space) -> str | None:
    """Raises an `EnvError` ("<returned> outside <space_name>: got ..., expected ...: <problem>. Fix: ...")
    for an observation `space` does not contain; warns instead when it does after conversion to the
    space's dtypes (e.g. float64 arrays for a float32 Box, lists), which is what the vector env and
    the episodes do with it (RLlib: gymnasium's env checker warns the same). For an observation that
    leaves only a `Box`'s bounds (`outside_bounds_only`) it returns the warning's text, naming the
    value and the bound, for the caller to give once; otherwise None."""
    if space.contains(obs):
        return None
    problem, fix = _explain(obs, space)
    converted = _in_space_dtypes(obs, space)
    if space.contains(converted):
        warnings.warn(
            f"{returned} that {space_name} {space} contains only after conversion to its dtypes ({problem}); "
            f"flywheel converts every observation so (RLlib: gymnasium's env checker warns the same). Fix: {fix}.",
            stacklevel=3,
        )
        return None
    if outside_bounds_only(converted, space):
        return bounds_warning(f"{returned} outside the bounds of {space_name}", converted, space)
    raise EnvError(
        f"{returned} outside {space_name}: got {_describe(obs)}, expected {space}: {problem}. Fix: {fix}."
    )


def bounds_warning(what: str, value: Any, space: gym.spaces.Space) -> str:
    """The warning for `value`, which leaves `space` only by a Box's bounds: "<what> <space>: value v at
    index i is below low l / above high h (got ...). Sampling goes on ... Fix: ..."."""
    problem, fix = _explain(value, space)
    return (
        f"{what} {space}: {problem.removeprefix('the bounds are wrong (').removesuffix(')')} (got "
        f"{_describe(value)}). Sampling goes on with the observation as it is; this warning is given once "
        f"(gymnasium's env checker warns the same). Fix: {fix}."
    )


def _in_space_dtypes(value: Any, space: gym.spaces.Space) -> Any:
    """`value` with its array leaves converted to the space's dtypes (unchanged where that fails)."""
    if isinstance(space, gym.spaces.Dict) and isinstance(value, dict) and set(value) == set(space.spaces):
        return {key: _in_space_dtypes(value[key], sub) for key, sub in space.spaces.items()}
    if (
        isinstance(space, gym.spaces.Tuple)
        and isinstance(value, list | tuple)
        and len(value) == len(space.spaces)
    ):
        return tuple(_in_space_dtypes(item, sub) for item, sub in zip(value, space.spaces))
    if isinstance(space, gym.spaces.Box | gym.spaces.MultiDiscrete | gym.spaces.MultiBinary):
        try:
            array = np.asarray(value)
        except ValueError:  # ragged
            return value
        # Same kind only (float64 -> float32, int64 -> int8): floats never become ints, nor objects numbers.
        return array.astype(space.dtype) if np.can_cast(array.dtype, space.dtype, "same_kind") else value
    return value


def _describe(value: Any) -> str:
    if isinstance(value, np.ndarray):
        return f"{value!r} (dtype {value.dtype}, shape {value.shape})"
    return f"{value!r} (type {type(value).__name__})"


def _explain(value: Any, space: gym.spaces.Space) -> tuple[str, str]:
    """(what is wrong, how to fix it) for a value that ``space.contains`` rejected."""
    if isinstance(space, gym.spaces.Dict):
        return _explain_dict(value, space)
    if isinstance(space, gym.spaces.Tuple):
        return _explain_tuple(value, space)
    if isinstance(space, gym.spaces.Discrete):
        return _explain_discrete(value, space)
    if not isinstance(value, np.ndarray):
        return (
            f"it is a {type(value).__name__}, not a numpy array",
            f"return np.asarray(obs, dtype=np.{space.dtype})",
        )
    if value.shape != space.shape:
        return (
            f"the shape is wrong ({value.shape} instead of {space.shape})",
            f"return an array of shape {space.shape}, or declare the space with that shape",
        )
    if isinstance(space, gym.spaces.Box) and not np.can_cast(value.dtype, space.dtype):
        return (
            f"the dtype is wrong ({value.dtype} cannot be cast safely to {space.dtype})",
            f"return obs.astype(np.{space.dtype}), or declare the space with dtype=np.{value.dtype}",
        )
    return _explain_bounds(value, space)


def _explain_bounds(value: np.ndarray, space: gym.spaces.Space) -> tuple[str, str]:
    if isinstance(space, gym.spaces.Box):
        low, high = space.low, space.high
    elif isinstance(space, gym.spaces.MultiDiscrete):
        low, high = space.start, space.start + space.nvec - 1
    else:
        assert space.shape is not None  # the value is an array, so its space has a shape
        low, high = np.zeros(space.shape, space.dtype), np.ones(space.shape, space.dtype)
    bad = ~((value >= low) & (value <= high))
    if not bad.any():
        return "it is not contained in the space", "return observations the space contains"
    index = tuple(int(i) for i in np.argwhere(bad)[0])
    v, lo, hi = (
        value[index],
        np.broadcast_to(low, value.shape)[index],
        np.broadcast_to(high, value.shape)[index],
    )
    where = "is NaN" if np.isnan(v) else (f"is below low {lo}" if v < lo else f"is above high {hi}")
    return (
        f"the bounds are wrong (value {v} at index {index} {where})",
        "clip the observation into the space's bounds, or widen the space",
    )


def _explain_discrete(value: Any, space: gym.spaces.Discrete) -> tuple[str, str]:
    if not isinstance(value, numbers.Integral | np.integer) and not (
        isinstance(value, np.ndarray) and value.shape == () and np.issubdtype(value.dtype, np.integer)
    ):
        return f"it is a {type(value).__name__}, not an int", "return int(obs)"
    start, stop = int(space.start), int(space.start + space.n)
    return (
        f"the bounds are wrong (value {int(value)} is outside [{start}, {stop}))",
        f"return an int in [{start}, {stop}), or enlarge the Discrete space",
    )


def _explain_dict(value: Any, space: gym.spaces.Dict) -> tuple[str, str]:
    if not isinstance(value, dict):
        return f"it is a {type(value).__name__}, not a dict", "return a dict with the space's keys"
    missing = sorted(set(space.spaces) - set(value), key=str)
    extra = sorted(set(value) - set(space.spaces), key=str)
    if missing or extra:
        return (
            f"the keys are wrong (missing {missing}, unexpected {extra})",
            "return exactly the keys of the Dict space",
        )
    key = next(k for k, sub in space.spaces.items() if not sub.contains(value[k]))
    problem, fix = _explain(value[key], space.spaces[key])
    return f"at [{key!r}] {problem}", fix


def _explain_tuple(value: Any, space: gym.spaces.Tuple) -> tuple[str, str]:
    if isinstance(value, list | np.ndarray):  # gymnasium's Tuple accepts these as tuples too
        value = tuple(value)
    if not isinstance(value, tuple) or len(value) != len(space.spaces):
        return (
            f"it is {_describe(value)}, not a tuple of length {len(space.spaces)}",
            f"return a tuple with one item per sub-space ({len(space.spaces)})",
        )
    i = next(i for i, (item, sub) in enumerate(zip(value, space.spaces)) if not sub.contains(item))
    problem, fix = _explain(value[i], space.spaces[i])
    return f"at [{i}] {problem}", fix


class ObservationMonitor:
    """Checks a vector env's observations against its observation space while a runner samples.

    The one-time check sees a few steps of one env; an env can leave its space much later (a
    drifting simulation, a NaN after many steps). Runners call `check` after every `step()`; every
    `every`-th call checks the whole batch of sub-envs with a few numpy operations (`first_outside`)
    and raises an `EnvError` naming the env, the sub-env, the step and the value. An observation of
    the right shape and dtype that leaves only a `Box`'s bounds gets one warning per runner instead
    (naming the env, the value and the bound), and sampling goes on, as with gymnasium's env checker. Checking every
    step cost 10-15% of CartPole's sampling time, every 16th step costs about 1%; an observation
    outside the space for fewer steps than that may pass unseen. `config.environment(
    disable_env_checking=True)` turns it off, with the one-time check.
    """

    space: gym.spaces.Space

    # `space`: the observation space (the multi-agent monitor's: a dict of them by agent id).
    def __init__(self, env_name: str, space: Any, worker_index: int, every: int = 16) -> None:
        self.env_name, self.space, self.worker_index, self.every = env_name, space, worker_index, every
        self._countdown = 1  # the first step is checked
        self._warned_bounds = False  # an observation outside a Box's bounds warns once per runner

    def check(self, obs: Any, episodes: list, terminateds: Any, truncateds: Any) -> None:
        """`obs`: the batched observations of `step()`; `episodes`: each sub-env's ongoing episode;
        `terminateds`/`truncateds`: which sub-envs ended an episode (their `obs` is a reset observation)."""
        self._countdown -= 1
        if self._countdown:
            return
        self._countdown = self.every
        i = first_outside(self.space, obs)
        if i is None:
            return
        value = _row(obs, i)
        step = episodes[i].t + 1
        when = (
            f"in the reset() after its episode ended at step {step}"
            if terminateds[i] or truncateds[i]
            else f"at step {step} of its episode"
        )
        where = f"env {self.env_name} (sub-env {i} of runner {self.worker_index})"
        if outside_bounds_only(value, self.space):
            self.warn_bounds(
                f"{where} returned an observation {when} outside the bounds of observation_space",
                value,
                self.space,
            )
            return
        problem, fix = _explain(value, self.space)
        raise EnvError(
            f"{where} returned an observation outside observation_space {when}: got {_describe(value)}, "
            f"expected {self.space}: {problem}. Fix: {fix}; or turn off flywheel's env checks with "
            "config.environment(disable_env_checking=True)."
        )

    def warn_bounds(self, what: str, value: Any, space: gym.spaces.Space) -> None:
        """Warns about an observation outside a Box's bounds, the first time only."""
        if not self._warned_bounds:
            self._warned_bounds = True
            warnings.warn(bounds_warning(what, value, space), stacklevel=3)


def _row(batch: Any, i: int) -> Any:
    if isinstance(batch, dict):
        return {key: _row(value, i) for key, value in batch.items()}
    if isinstance(batch, tuple):
        return tuple(_row(value, i) for value in batch)
    return batch[i]
