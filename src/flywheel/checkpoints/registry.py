"""The classes a checkpoint may name without the caller passing them: flywheel's own.

A checkpoint names classes and functions as ``"module:qualname"`` (components, configs, module
classes in specs, env classes in configs). Loading never imports a module a checkpoint names,
except flywheel's own: a name under the ``flywheel.`` package is looked up here, importing that
flywheel module first if needed, and the object found must have registered itself with
:func:`checkpoint_class`. Everything else comes from the classes the caller passes (or, behind
``trusted=True``, from an import); see `flywheel.checkpoints.codec.Allowed`.

Flywheel classes register when they are defined: every `Checkpointable` and `AlgorithmConfig`
subclass under ``flywheel.`` does so automatically, other classes (spec dataclasses, the fake
envs of `flywheel.testing`) with the decorator. A class that registers may be built with
arguments a checkpoint chooses, so its constructor must not act on the world (no files, no
processes, no network) with them.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import re
from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

from flywheel.errors import CheckpointError, UntrustedCheckpointError

T = TypeVar("T")

_REGISTRY: dict[str, Any] = {}
_imported: set[str] = set()
"""Flywheel modules `lookup` already imported (or found missing): each is tried once."""
_FLYWHEEL_MODULE = re.compile(r"flywheel(\.[a-z][a-z0-9_]*)+")
"""Public flywheel modules only (no part starting with `_`, so never `flywheel.__main__`)."""


def checkpoint_name(obj: Any) -> str:
    """`"module:qualname"`: how checkpoints name a class or function."""
    return f"{obj.__module__}:{obj.__qualname__}"


def checkpoint_class(obj: T) -> T:
    """Class decorator: lets checkpoints name `obj` (a class defined in a flywheel module)."""
    name = checkpoint_name(obj)
    if not name.startswith("flywheel."):
        raise ValueError(
            f"checkpoint_class registers flywheel's own classes only, got {name}. Fix: pass your own "
            "classes to from_checkpoint(path, classes=[...]) instead."
        )
    _REGISTRY[name] = obj
    return obj


def register_if_flywheel(cls: type) -> None:
    """Registers `cls` when a flywheel module defines it (called by `__init_subclass__` hooks)."""
    if cls.__module__.startswith("flywheel.") and "<" not in cls.__qualname__:
        _REGISTRY[checkpoint_name(cls)] = cls


def lookup(name: str) -> Any | None:
    """The registered flywheel object called `name`, importing its flywheel module if needed."""
    found = _REGISTRY.get(name)
    if found is not None:
        return found
    module = name.partition(":")[0]
    if not _FLYWHEEL_MODULE.fullmatch(module) or module in _imported:
        return None
    _imported.add(module)
    try:
        if importlib.util.find_spec(module) is None:
            return None
        importlib.import_module(module)
    except ImportError:  # e.g. a flywheel extra that is not installed
        return None
    return _REGISTRY.get(name)


_NAME = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_][\w.]*")


@dataclasses.dataclass(frozen=True)
class Allowed:
    """What a load may build from the names in a checkpoint.

    Flywheel's registered classes always; `passed` (the caller's `classes=[...]`, by
    `checkpoint_name`); and, only when `trusted`, anything importable. `entry` is the call the
    user made (e.g. `"RLModule.from_checkpoint"`), so an error can show the fix in its terms.
    """

    passed: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    trusted: bool = False
    entry: str = "from_checkpoint"

    @classmethod
    def of(
        cls, classes: Iterable[Any] = (), *, trusted: bool = False, entry: str = "from_checkpoint"
    ) -> Allowed:
        """Checks the caller's arguments and builds the allow-list."""
        if not isinstance(trusted, bool):
            raise CheckpointError(f"{entry}(trusted=...) takes True or False, got {trusted!r}.")
        passed = {}
        for obj in classes:
            if not callable(obj) or not isinstance(getattr(obj, "__qualname__", None), str):
                raise CheckpointError(
                    f"{entry}(classes=...) takes the classes (and functions) a checkpoint may name, got "
                    f"{obj!r}. Fix: pass the objects themselves, e.g. classes=[MyModule]."
                )
            passed[checkpoint_name(obj)] = obj
        return cls(passed, trusted, entry)

    def resolve(self, name: Any, file: Any) -> Any:
        """The object `name` (`"module:qualname"`, read from `file`) stands for, if it is allowed."""
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise CheckpointError(
                f"{file} names {name!r} where a class or function is expected, which is not a "
                "'module:qualname' name: the file is damaged or was edited. Fix: load another checkpoint."
            )
        found = self.passed.get(name) or self._passed_main_class(name) or lookup(name)
        if found is not None:
            return found
        if self.trusted:
            return _import(name, file)
        module, _, qualname = name.partition(":")
        what = (
            "which this flywheel does not have as a class checkpoints may name (renamed, removed, or the "
            "file was edited)"
            if module.startswith("flywheel.")
            else "which is not one of flywheel's classes"
        )
        raise UntrustedCheckpointError(
            f"{file} names {qualname} from {module}, {what}. Flywheel does not import what a checkpoint "
            "names (importing runs that module's code).",
            f"pass it yourself: {self.entry}(path, classes=[{qualname.rpartition('.')[2]}]) (classes= also "
            f"takes functions); or, if you trust this checkpoint, {self.entry}(path, trusted=True) imports it.",
        )

    def _passed_main_class(self, name: str) -> Any | None:
        """A passed object with the same qualname, for names of `__main__` (the saving script's own
        classes have a different module name in the loading program)."""
        module, _, qualname = name.partition(":")
        if module != "__main__":
            return None
        matches = [obj for obj in self.passed.values() if obj.__qualname__ == qualname]
        return matches[0] if len(matches) == 1 else None


def _import(name: str, file: Any) -> Any:
    module, _, qualname = name.partition(":")
    try:
        obj = importlib.import_module(module)
        for part in qualname.split("."):
            obj = getattr(obj, part)
        return obj
    except (ImportError, AttributeError) as e:
        fix = (
            "define it in an importable module (not the script you ran, __main__), or pass it with classes=[...]"
            if module == "__main__"
            else f"make {module} importable here (install it / add it to PYTHONPATH)"
        )
        raise CheckpointError(
            f"{file} needs {qualname} from {module}, which cannot be imported here "
            f"({type(e).__name__}: {e}). Fix: {fix}."
        ) from e
