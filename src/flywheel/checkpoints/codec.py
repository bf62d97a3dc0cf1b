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
from typing import Any

import gymnasium as gym
import numpy as np

from flywheel.errors import CheckpointError

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


def encode(value: Any, where: str, pickles: list | None = None) -> Any:
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


def _encode(value: Any, where: str, pickles: list | None) -> Any:
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
        return {"__space__": _encode_space(value, where)}
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
    if callable(getattr(value, "to_dict", None)) and callable(getattr(type(value), "from_dict", None)):
        settings = value.to_dict()
        return {
            "__config__": import_path(type(value), where, by_value_ok=False),
            "settings": {name: encode(item, f"{where}.{name}", pickles) for name, item in settings.items()},
        }
    raise NotPlainError(where, f"a {type(value).__name__} ({value!r:.80})")


def _built_from_fields(value: Any) -> bool:
    return (
        dataclasses.is_dataclass(value)
        and type(value).__dataclass_params__.init
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


def _encode_space(space: gym.Space, where: str) -> dict:
    kind = type(space)
    if kind is gym.spaces.Box:
        return {
            "type": "Box",
            "low": _uniform(space.low),
            "high": _uniform(space.high),
            "shape": list(space.shape),
            "dtype": np.dtype(space.dtype).str,
        }
    if kind is gym.spaces.Discrete:
        return {"type": "Discrete", "n": int(space.n), "start": int(space.start)}
    if kind is gym.spaces.MultiDiscrete:
        return {
            "type": "MultiDiscrete",
            "nvec": space.nvec.tolist(),
            "start": space.start.tolist(),
            "dtype": np.dtype(space.dtype).str,
        }
    if kind is gym.spaces.MultiBinary:
        return {"type": "MultiBinary", "n": np.asarray(space.n).tolist()}
    if kind is gym.spaces.Dict:
        return {
            "type": "Dict",
            "spaces": [[k, _encode_space(s, f"{where}[{k!r}]")] for k, s in space.items()],
        }
    if kind is gym.spaces.Tuple:
        return {"type": "Tuple", "spaces": [_encode_space(s, f"{where}[{i}]") for i, s in enumerate(space)]}
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


def import_path(obj: Any, where: str, *, by_value_ok: bool) -> str:
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


def resolve_import(path: str, checkpoint: Any) -> Any:
    """The class or function at `"module:qualname"` (CheckpointError naming `checkpoint` if it is gone)."""
    module, _, qualname = path.partition(":")
    try:
        return _resolve(module, qualname)
    except (ImportError, AttributeError) as e:
        fix = (
            "define it in an importable module (not the script you ran, __main__) and import it from there"
            if module == "__main__"
            else f"make {module} importable here (install it / add it to PYTHONPATH)"
        )
        raise CheckpointError(
            f"The checkpoint at {checkpoint} needs {qualname} from {module}, which cannot be imported "
            f"here ({type(e).__name__}: {e}). Fix: {fix}."
        ) from e


def decode(data: Any, checkpoint: Any, load_pickles: Callable[[], list] | None = None) -> Any:
    """The value `encode` turned into `data`. `load_pickles` gives the pickled values; without it a
    pickled reference raises (RLModules and connector pieces are never unpickled)."""
    if isinstance(data, list):
        return [decode(item, checkpoint, load_pickles) for item in data]
    if not isinstance(data, dict):
        return data
    for tag in _TAGS:
        if tag in data:
            return _DECODERS[tag](data, checkpoint, load_pickles)
    return {key: decode(item, checkpoint, load_pickles) for key, item in data.items()}


def _decode_pickled(data: dict, checkpoint: Any, load_pickles: Callable[[], list] | None) -> Any:
    if load_pickles is None:
        raise CheckpointError(
            f"The checkpoint at {checkpoint} refers to a pickled constructor argument, which this "
            "component never unpickles. Fix: load it through the algorithm that saved it."
        )
    return load_pickles()[data["__pickled__"]]


def _decode_array(data: dict, checkpoint: Any, load_pickles: Any) -> Any:
    array = np.array(data["__ndarray__"], dtype=np.dtype(data["dtype"])).reshape(data["shape"])
    return array[()] if data["scalar"] else array


def _decode_space(spec: dict) -> gym.Space:
    kind = spec["type"]
    if kind == "Box":
        shape, dtype = tuple(spec["shape"]), np.dtype(spec["dtype"])
        low, high = (np.broadcast_to(np.asarray(spec[k], dtype), shape) for k in ("low", "high"))
        return gym.spaces.Box(low, high, shape, dtype)
    if kind == "Discrete":
        return gym.spaces.Discrete(spec["n"], start=spec["start"])
    if kind == "MultiDiscrete":
        return gym.spaces.MultiDiscrete(spec["nvec"], dtype=np.dtype(spec["dtype"]), start=spec["start"])
    if kind == "MultiBinary":
        return gym.spaces.MultiBinary(spec["n"])
    if kind == "Dict":
        return gym.spaces.Dict({key: _decode_space(sub) for key, sub in spec["spaces"]})
    return gym.spaces.Tuple([_decode_space(sub) for sub in spec["spaces"]])


def _decode_config(data: dict, checkpoint: Any, load_pickles: Any) -> Any:
    cls = resolve_import(data["__config__"], checkpoint)
    return cls.from_dict(decode(data["settings"], checkpoint, load_pickles))


def _decode_dataclass(data: dict, checkpoint: Any, load_pickles: Any) -> Any:
    cls = resolve_import(data["__dataclass__"], checkpoint)
    return cls(**decode(data["fields"], checkpoint, load_pickles))


_DECODERS: dict[str, Callable[[dict, Any, Any], Any]] = {
    "__tuple__": lambda d, c, p: tuple(decode(d["__tuple__"], c, p)),
    "__set__": lambda d, c, p: set(decode(d["__set__"], c, p)),
    "__dict__": lambda d, c, p: {decode(k, c, p): decode(v, c, p) for k, v in d["__dict__"]},
    "__ndarray__": _decode_array,
    "__space__": lambda d, c, p: _decode_space(d["__space__"]),
    "__import__": lambda d, c, p: resolve_import(d["__import__"], c),
    "__dataclass__": _decode_dataclass,
    "__config__": _decode_config,
    "__pickled__": _decode_pickled,
}
