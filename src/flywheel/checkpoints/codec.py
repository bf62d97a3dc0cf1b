"""Constructor arguments as plain JSON data, so a checkpoint can rebuild a component without pickle.

`encode` turns what a component's constructor needs into JSON-able data: numbers, strings, lists
and string-keyed dicts stay as they are; tuples, sets, other dicts, numpy arrays and scalars,
gymnasium spaces (Box, Discrete, MultiDiscrete, MultiBinary, Dict, Tuple), importable classes and
functions (`"module:qualname"`), dataclasses (e.g. `RLModuleSpec`) and configs (objects with
`to_dict()` and a `from_dict()` classmethod) get a tagged object such as `{"__space__": ...}`.

Anything else (a lambda, a closure, a class defined inside a function) cannot be written as plain
data. Components built from an algorithm config may then keep it in a cloudpickle side file
(`pickles` is a list to append to); every other component gets a CheckpointError naming the value.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeGuard, cast

import gymnasium as gym
import numpy as np

from flywheel.checkpoints.registry import Allowed
from flywheel.errors import CheckpointError, UntrustedCheckpointError

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

_TAGS = (
    "__tuple__",
    "__set__",
    "__dict__",
    "__ndarray__",
    "__space__",
    "__import__",
    "__dataclass__",
    "__config__",
    "__pickled__",
)


class NotPlainError(Exception):
    """`value` at `where` has no plain-data form; the message says what it is."""

    def __init__(self, where: str, what: str):
        super().__init__(f"{where} is {what}")
        self.where = where
        self.what = what


def encode(value: object, where: str, pickles: list | None = None) -> Any:
    """`value` as JSON-able data (see the module docstring); `where` names it in errors.

    With `pickles` (a list), values without a plain form are appended to it and referenced by index.
    """
    try:
        return _encode(value, where, pickles)
    except NotPlainError:
        if pickles is None:
            raise
        pickles.append(value)
        return {"__pickled__": len(pickles) - 1}


def _encode(value: object, where: str, pickles: list | None) -> Any:
    if value is None or isinstance(value, bool | str) or type(value) in (int, float):
        return value
    if isinstance(value, list):
        return [encode(item, f"{where}[{i}]", pickles) for i, item in enumerate(value)]
    if isinstance(value, tuple) and type(value) is tuple:
        return {"__tuple__": [encode(item, f"{where}[{i}]", pickles) for i, item in enumerate(value)]}
    if isinstance(value, set | frozenset):
        return {"__set__": [encode(item, f"{where}{{}}", pickles) for item in _sorted(value)]}
    if type(value) is dict:
        return _encode_dict(value, where, pickles)
    if isinstance(value, np.ndarray | np.generic):
        return _encode_array(value, where)
    if isinstance(value, gym.Space):
        return {"__space__": encode_space(value, where)}
    if isinstance(value, type) or callable(value) and hasattr(value, "__qualname__"):
        return {"__import__": import_path(value, where, by_value_ok=pickles is not None)}
    # A dataclass built by its own __init__ from its fields (e.g. RLModuleSpec, which also has
    # to_dict/from_dict); configs are dataclasses without such an __init__ and go by their settings.
    if _built_from_fields(value):
        fields = {
            f.name: encode(getattr(value, f.name), f"{where}.{f.name}", pickles)
            for f in dataclasses.fields(value)
        }
        return {"__dataclass__": import_path(type(value), where, by_value_ok=False), "fields": fields}
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict) and callable(getattr(type(value), "from_dict", None)):
        settings = cast(dict, to_dict())  # a config's settings
        return {
            "__config__": import_path(type(value), where, by_value_ok=False),
            "settings": {name: encode(item, f"{where}.{name}", pickles) for name, item in settings.items()},
        }
    raise NotPlainError(where, f"a {type(value).__name__} ({value!r:.80})")


def _built_from_fields(value: object) -> TypeGuard[DataclassInstance]:
    return (
        dataclasses.is_dataclass(value)
        # typeshed's DataclassInstance declares `__dataclass_fields__` only, not the params.
        and type(value).__dataclass_params__.init  # pyright: ignore[reportAttributeAccessIssue]
        and all(f.init for f in dataclasses.fields(value))
    )


def _sorted(values: set | frozenset) -> list:
    try:
        return sorted(values)
    except TypeError:
        return list(values)


def _encode_dict(value: dict, where: str, pickles: list | None) -> dict:
    if all(isinstance(key, str) for key in value) and not any(tag in value for tag in _TAGS):
        return {key: encode(item, f"{where}[{key!r}]", pickles) for key, item in value.items()}
    return {
        "__dict__": [
            [encode(key, f"{where} key", pickles), encode(item, f"{where}[{key!r}]", pickles)]
            for key, item in value.items()
        ]
    }


def _encode_array(value: np.ndarray | np.generic, where: str) -> dict:
    array = np.asarray(value)
    if array.dtype.kind not in "biuf":
        raise NotPlainError(
            where, f"a numpy array of dtype {array.dtype} (plain forms exist for bool, int, float)"
        )
    return {
        "__ndarray__": array.tolist(),
        "dtype": array.dtype.str,
        "shape": list(array.shape),
        "scalar": isinstance(value, np.generic),
    }


def encode_space(space: gym.Space, where: str) -> dict:
    """`space` as plain data (Box, Discrete, MultiDiscrete, MultiBinary, Dict, Tuple); `where` names it in errors."""
    kind = type(space)
    if kind is gym.spaces.Box and isinstance(space, gym.spaces.Box):  # exact types only (no subclasses)
        return {
            "type": "Box",
            "low": _uniform(space.low),
            "high": _uniform(space.high),
            "shape": list(space.shape),
            "dtype": np.dtype(space.dtype).str,
        }
    if kind is gym.spaces.Discrete and isinstance(space, gym.spaces.Discrete):
        return {"type": "Discrete", "n": int(space.n), "start": int(space.start)}
    if kind is gym.spaces.MultiDiscrete and isinstance(space, gym.spaces.MultiDiscrete):
        return {
            "type": "MultiDiscrete",
            "nvec": space.nvec.tolist(),
            "start": space.start.tolist(),
            "dtype": np.dtype(space.dtype).str,
        }
    if kind is gym.spaces.MultiBinary and isinstance(space, gym.spaces.MultiBinary):
        return {"type": "MultiBinary", "n": np.asarray(space.n).tolist()}
    if kind is gym.spaces.Dict and isinstance(space, gym.spaces.Dict):
        return {
            "type": "Dict",
            "spaces": [[k, encode_space(s, f"{where}[{k!r}]")] for k, s in space.items()],
        }
    if kind is gym.spaces.Tuple and isinstance(space, gym.spaces.Tuple):
        return {"type": "Tuple", "spaces": [encode_space(s, f"{where}[{i}]") for i, s in enumerate(space)]}
    raise NotPlainError(
        where,
        f"a {kind.__name__} space (plain forms exist for Box, Discrete, MultiDiscrete, MultiBinary, Dict, Tuple)",
    )


def _uniform(bound: np.ndarray) -> Any:
    """A bound array as one number when all entries are equal (image spaces), else nested lists."""
    flat = bound.ravel()
    if flat.size and (flat == flat[0]).all():
        return flat[0].item()
    return bound.tolist()


def import_path(obj: object, where: str, *, by_value_ok: bool) -> str:
    """`"module:qualname"` of a class or function that importing that path gives back.

    With `by_value_ok` (a pickle fallback exists), objects of `__main__` count as not importable,
    because another process (e.g. `flywheel evaluate`) has a different `__main__`.
    """
    module, qualname = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    name = f"{module}.{qualname}"
    if not module or not qualname or "<" in qualname:
        raise NotPlainError(where, f"{name}, defined inside a function or as a lambda, so not importable")
    if by_value_ok and module == "__main__":
        raise NotPlainError(where, f"{name}, defined in __main__")
    try:
        found = _resolve(module, qualname)
    except (ImportError, AttributeError):
        found = None
    if found is not obj:
        raise NotPlainError(where, f"{name}, which importing {module}:{qualname} does not give back")
    return f"{module}:{qualname}"


def _resolve(module: str, qualname: str) -> Any:
    obj = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


# ------------------------------------------------------------------------------------ decoding


def decode(
    data: object, file: Any, allowed: Allowed | None = None, load_pickles: Callable[[], list] | None = None
) -> Any:
    """The value `encode` turned into `data`, read from `file` (named in errors).

    Classes and functions come only from `allowed` (flywheel's registered classes, the caller's,
    imports only when trusted); pickled values only from `load_pickles`, which callers pass only
    when the load is trusted. Anything malformed raises a CheckpointError naming `file`.
    """
    decoder = _Decoder(file, allowed or Allowed(), load_pickles)
    try:
        return decoder.value(data)
    except CheckpointError:
        raise
    except (ValueError, TypeError, KeyError, IndexError, AttributeError, RecursionError) as e:
        raise CheckpointError(
            f"{file} holds a value flywheel cannot rebuild ({type(e).__name__}: {e}): the file is damaged "
            "or was edited. Fix: load another checkpoint."
        ) from e


def pickled_paths(data: object, where: str) -> list[str]:
    """Where `data` refers to pickled values, e.g. `["config.policy_mapping_fn"]` (nothing is decoded)."""
    if isinstance(data, list):
        return [path for i, item in enumerate(data) for path in pickled_paths(item, f"{where}[{i}]")]
    if not isinstance(data, dict):
        return []
    if "__pickled__" in data:
        return [where]
    inner = (
        data.get("settings", data.get("fields"))
        if ("__config__" in data or "__dataclass__" in data)
        else None
    )
    if isinstance(inner, dict):
        return [path for key, item in inner.items() for path in pickled_paths(item, f"{where}.{key}")]
    return [
        path
        for key, item in data.items()
        for path in pickled_paths(item, where if key in _TAGS else f"{where}[{key!r}]")
    ]


class _Decoder:
    def __init__(self, file: Any, allowed: Allowed, load_pickles: Callable[[], list] | None) -> None:
        self.file, self.allowed, self.load_pickles = file, allowed, load_pickles

    def value(self, data: object) -> Any:
        if isinstance(data, list):
            return [self.value(item) for item in data]
        if not isinstance(data, dict):
            return data
        for tag in _TAGS:
            if tag in data:
                return getattr(self, tag[1:-2])(data)
        return {key: self.value(item) for key, item in data.items()}

    def _tuple(self, data: dict) -> tuple:
        return tuple(self.value(data["__tuple__"]))

    def _set(self, data: dict) -> set:
        return set(self.value(data["__set__"]))

    def _dict(self, data: dict) -> dict:
        return {self.value(key): self.value(item) for key, item in data["__dict__"]}

    def _ndarray(self, data: dict) -> Any:
        dtype = _plain_dtype(data["dtype"])
        array = np.array(data["__ndarray__"], dtype=dtype).reshape(_shape(data["shape"]))
        return array[()] if data["scalar"] is True else array

    def _space(self, data: dict) -> gym.Space:
        return decode_space(data["__space__"])

    def _import(self, data: dict) -> Any:
        return self.allowed.resolve(data["__import__"], self.file)

    def _dataclass(self, data: dict) -> Any:
        cls = self.allowed.resolve(data["__dataclass__"], self.file)
        if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)):
            raise CheckpointError(f"{self.file} names {cls!r} as a dataclass, which it is not.")
        return cls(**self._fields(data["fields"]))

    def _config(self, data: dict) -> Any:
        cls = self.allowed.resolve(data["__config__"], self.file)
        if not (isinstance(cls, type) and callable(getattr(cls, "from_dict", None))):
            raise CheckpointError(f"{self.file} names {cls!r} as a config class, which it is not.")
        return cls.from_dict(self._fields(data["settings"]))

    def _pickled(self, data: dict) -> Any:
        if self.load_pickles is None:
            reason = (
                f"{self.file} refers to a pickled value, which this load does not unpickle (unpickling runs "
                "code the file names)"
            )
            if not self.allowed.trusted:
                raise UntrustedCheckpointError(
                    f"{reason}.", "if you trust the checkpoint, load it with trusted=True."
                )
            raise CheckpointError(
                f"{reason}; only components built from an algorithm config store pickles, so the file is "
                "damaged or was edited. Fix: load another checkpoint."
            )
        index = data["__pickled__"]
        return self.load_pickles()[index if type(index) is int else _bad(index)]

    def _fields(self, data: object) -> dict:
        value = self.value(data)
        return value if isinstance(value, dict) and all(isinstance(k, str) for k in value) else _bad(data)


def _bad(value: object) -> Any:
    raise ValueError(f"unexpected {value!r:.80}")


def _plain_dtype(name: object) -> np.dtype:
    dtype = np.dtype(name) if isinstance(name, str) else _bad(name)
    return dtype if dtype.kind in "biuf" else _bad(name)


def _shape(shape: Any) -> tuple[int, ...]:
    if isinstance(shape, list) and all(type(n) is int and n >= 0 for n in shape):
        return tuple(shape)
    return _bad(shape)


def decode_space(spec: dict) -> gym.Space:
    """The space `encode_space` described (a malformed description raises ValueError or KeyError)."""
    kind = spec["type"]
    if kind == "Box":
        shape, dtype = _shape(spec["shape"]), _plain_dtype(spec["dtype"])
        low, high = (np.broadcast_to(np.asarray(spec[k], dtype), shape) for k in ("low", "high"))
        return gym.spaces.Box(low, high, shape, dtype)
    if kind == "Discrete":
        return gym.spaces.Discrete(spec["n"], start=spec["start"])
    if kind == "MultiDiscrete":
        return gym.spaces.MultiDiscrete(spec["nvec"], dtype=_plain_dtype(spec["dtype"]), start=spec["start"])
    if kind == "MultiBinary":
        return gym.spaces.MultiBinary(spec["n"])
    if kind == "Dict":
        return gym.spaces.Dict({key: decode_space(sub) for key, sub in spec["spaces"]})
    if kind == "Tuple":
        return gym.spaces.Tuple([decode_space(sub) for sub in spec["spaces"]])
    return _bad(kind)
