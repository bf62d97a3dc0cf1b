"""Observations checked against a space, for policies (each call) and runners (each step, vectorized).

`check_observations(space, obs, single=...)` is what `Policy.compute_single_action` /
`compute_actions` run on their input: None, a batch where one observation is expected (and the
reverse), a wrong shape or rank, an empty batch, NaN or inf, non-numeric data, values outside a
Discrete, MultiDiscrete or MultiBinary space raise an
`InferenceError` that says what was expected and what came. It returns the observations as a batch
(an array for array spaces, a list for Dict/Tuple spaces) so the caller converts only once.

`first_outside(space, batch)` finds the first row of a vector env's batched observations that
is not in `space` (a few numpy operations for the whole batch), for the runners' sampling loop;
`outside_bounds_only(value, space)` says whether such an observation has the space's structure,
shapes and dtypes and leaves it only by a `Box`'s bounds (which the env checks warn about once).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from flywheel.errors import InferenceError

_ARRAY_SPACES = (gym.spaces.Box, gym.spaces.Discrete, gym.spaces.MultiDiscrete, gym.spaces.MultiBinary)


def check_observations(space: gym.Space | None, obs: Any, *, single: bool) -> Any:
    """`obs` (one observation if `single`, else a batch) checked against `space`, as a batch."""
    call = "compute_single_action(obs)" if single else "compute_actions(obs_batch)"
    if obs is None:
        raise InferenceError(f"{call} got None; expected {_expected(space, single)}.")
    if isinstance(space, _ARRAY_SPACES):
        return _array_batch(space, obs, single, call)
    if space is None or not isinstance(space, gym.spaces.Dict | gym.spaces.Tuple):
        return [obs] if single else list(obs)
    rows = [obs] if single else _rows(obs, space, call)
    for i, row in enumerate(rows):
        _check_nested(space, row, f"{call}: observation {i}" if not single else call)
    return rows


def check_explore(explore: Any) -> None:
    """`explore` must be a bool: a string such as "False" would otherwise count as True."""
    if not isinstance(explore, bool | np.bool_):
        raise InferenceError(
            f"explore must be True or False, got {explore!r} ({type(explore).__name__}). Fix: explore=True samples "
            "from the action distribution, explore=False acts greedily."
        )


def _array_batch(space: gym.Space, obs: Any, single: bool, call: str) -> np.ndarray:
    array = _numeric(obs, call, space)
    shape = tuple(space.shape or ())  # array spaces always have one (a Discrete's is ())
    if single:
        if array.shape != shape:
            raise InferenceError(_single_shape_message(call, shape, array.shape))
        array = array[None]
    elif array.shape[1:] != shape or array.ndim != len(shape) + 1:
        raise InferenceError(_batch_shape_message(call, shape, array.shape))
    elif len(array) == 0:
        raise InferenceError(
            f"{call} got an empty batch (shape {array.shape}); expected at least one observation of shape {shape}."
        )
    _check_finite(array, call)
    if not isinstance(space, gym.spaces.Box):
        _check_categories(space, array, call)
    if array.dtype != space.dtype:  # what the env would return (lists, float64 rows, Python ints)
        array = _cast(array, space, call)
    return array


def _numeric(obs: Any, call: str, space: gym.Space) -> np.ndarray:
    try:
        array = np.asarray(obs)
    except ValueError as e:  # ragged nested lists
        raise InferenceError(f"{call} cannot read its input as an array ({e}); expected {space}.") from None
    if array.dtype.kind not in "biuf":
        raise InferenceError(
            f"{call} got {type(obs).__name__} data of dtype {array.dtype}; expected numbers for {space}."
        )
    return array


def _single_shape_message(call: str, shape: tuple, got: tuple) -> str:
    if got[1:] == shape:
        return (
            f"{call} takes one observation of shape {shape}, got a batch of {got[0]} (shape {got}). "
            "Fix: compute_actions(obs_batch) acts on batches (one action per row)."
        )
    return f"{call} expected one observation of shape {shape}, got shape {got}. Fix: pass one observation as the env returns it."


def _batch_shape_message(call: str, shape: tuple, got: tuple) -> str:
    if got == shape:
        return (
            f"{call} takes a batch of shape {_batch_shape(shape)}, got one observation of shape {got}. "
            "Fix: compute_single_action(obs), or compute_actions([obs])."
        )
    return (
        f"{call} expected a batch of shape {_batch_shape(shape)} (rank {len(shape) + 1}), got shape {got} "
        f"(rank {len(got)}). Fix: stack observations as the env returns them, one per row."
    )


def _batch_shape(shape: tuple) -> str:
    """`(B, 4)`: a batch of observations of `shape` (B rows)."""
    return "(B" + "".join(f", {n}" for n in shape) + (")" if shape else ",)")


def _check_finite(array: np.ndarray, call: str) -> None:
    if array.dtype.kind == "f" and not np.isfinite(array).all():
        row = int(np.argwhere(~np.isfinite(array.reshape(len(array), -1)))[0, 0])
        raise InferenceError(
            f"{call} got a non-finite value (NaN or inf) in observation {row}: {array[row].tolist()}. "
            "Fix: pass finite observations (check the env or the code that built them)."
        )


def _check_categories(space: gym.Space, array: np.ndarray, call: str) -> None:
    """Discrete, MultiDiscrete and MultiBinary values must lie in the space: the module one-hot
    encodes them, and a value outside has no encoding."""
    row = first_outside(space, array)
    if row is not None:
        low, high = _bounds(space)
        raise InferenceError(
            f"{call} got {array[row].tolist()} in observation {row}, outside {space} (values from {np.asarray(low).tolist()} "
            f"to {np.asarray(high).tolist()}). Fix: pass observations the env returns."
        )


def _cast(array: np.ndarray, space: gym.Space, call: str) -> np.ndarray:
    with np.errstate(over="ignore"):  # overflow is reported below, with the value
        cast = array.astype(space.dtype)
    if np.dtype(space.dtype).kind in "biu" and array.dtype.kind == "f" and not np.array_equal(cast, array):
        raise InferenceError(f"{call} got fractional values for {space}, which holds integers.")
    if cast.dtype.kind == "f" and not np.isfinite(cast).all():
        row = int(np.argwhere(~np.isfinite(cast.reshape(len(cast), -1)))[0, 0])
        raise InferenceError(
            f"{call} got {array[row].tolist()} in observation {row}, beyond the range of {space.dtype} (the dtype "
            f"of {space}). Fix: pass observations the env returns."
        )
    return cast


def _rows(obs: Any, space: gym.Space, call: str) -> list:
    if isinstance(obs, dict) or (isinstance(space, gym.spaces.Tuple) and isinstance(obs, tuple)):
        raise InferenceError(
            f"{call} takes a list of observations, got one observation ({type(obs).__name__}). "
            "Fix: compute_single_action(obs), or compute_actions([obs])."
        )
    rows = list(obs)
    if not rows:
        raise InferenceError(f"{call} got an empty batch; expected at least one observation of {space}.")
    return rows


def _check_nested(space: gym.Space, obs: Any, where: str) -> None:
    if isinstance(space, gym.spaces.Dict):
        if not isinstance(obs, dict) or set(obs) != set(space.spaces):
            keys = sorted(obs) if isinstance(obs, dict) else type(obs).__name__
            raise InferenceError(
                f"{where}: expected a dict with the keys {sorted(space.spaces)}, got {keys}."
            )
        for key, sub in space.spaces.items():
            _check_nested(sub, obs[key], f"{where}[{key!r}]")
    elif isinstance(space, gym.spaces.Tuple):
        if not isinstance(obs, tuple | list) or len(obs) != len(space.spaces):
            raise InferenceError(f"{where}: expected a tuple of {len(space.spaces)} items, got {obs!r:.80}.")
        for i, sub in enumerate(space.spaces):
            _check_nested(sub, obs[i], f"{where}[{i}]")
    elif isinstance(space, _ARRAY_SPACES):
        if obs is None:
            raise InferenceError(f"{where} is None; expected {space}.")
        _array_batch(space, obs, True, where)


def _expected(space: gym.Space | None, single: bool) -> str:
    if space is None:
        return "an observation" if single else "a batch of observations"
    if isinstance(space, _ARRAY_SPACES):
        shape = tuple(space.shape or ())  # a Discrete's is ()
        return f"one observation of shape {shape}" if single else f"a batch of shape {_batch_shape(shape)}"
    return f"an observation of {space}" if single else f"a list of observations of {space}"


def first_outside(space: gym.Space, batch: Any) -> int | None:
    """The index of the first row of `batch` (a vector env's batched observations) that is not in
    `space`, or None. Box, Discrete, MultiDiscrete and MultiBinary are checked with a few numpy
    operations for the whole batch; Dict and Tuple key by key."""
    if isinstance(space, gym.spaces.Dict):
        rows = [first_outside(sub, batch[key]) if key in batch else 0 for key, sub in space.spaces.items()]
        return min((row for row in rows if row is not None), default=None)
    if isinstance(space, gym.spaces.Tuple):
        rows = [first_outside(sub, batch[i]) for i, sub in enumerate(space.spaces)]
        return min((row for row in rows if row is not None), default=None)
    if not isinstance(batch, np.ndarray) or batch.shape[1:] != space.shape:
        return 0
    low, high = _bounds(space)
    inside = (batch >= low) & (batch <= high)
    if inside.all():
        return None
    return int(np.argwhere(~inside.reshape(len(batch), -1).all(axis=1))[0, 0])


def _bounds(space: gym.Space) -> tuple[Any, Any]:
    if isinstance(space, gym.spaces.Box):
        return space.low, space.high
    if isinstance(space, gym.spaces.Discrete):
        return space.start, space.start + space.n - 1
    if isinstance(space, gym.spaces.MultiDiscrete):
        return space.start, space.start + space.nvec - 1
    return 0, 1  # MultiBinary


def outside_bounds_only(value: Any, space: gym.Space) -> bool:
    """Whether `space` would contain `value` if its `Box` leaves had no bounds: every Box leaf an array of
    the leaf's shape, of a dtype that casts safely to the leaf's, without NaN; every other leaf (and
    the Dict keys, Tuple lengths) contained. Discrete-like leaves out of range are not bounds here:
    they cannot be encoded (one-hot) at all."""
    if isinstance(space, gym.spaces.Dict):
        return (
            isinstance(value, dict)
            and set(value) == set(space.spaces)
            and all(outside_bounds_only(value[key], sub) for key, sub in space.spaces.items())
        )
    if isinstance(space, gym.spaces.Tuple):
        return (
            isinstance(value, tuple | list)
            and len(value) == len(space.spaces)
            and all(outside_bounds_only(item, sub) for item, sub in zip(value, space.spaces))
        )
    if isinstance(space, gym.spaces.Box):
        return (
            isinstance(value, np.ndarray)
            and value.shape == space.shape
            and np.can_cast(value.dtype, space.dtype)
            and not (value.dtype.kind == "f" and np.isnan(value).any())
        )
    return space.contains(value)
