"""`Checkpointable`: save a component (and its sub-components) to a directory, restore it, rebuild it.

    path = algo.save_to_path("runs/ckpt")                      # the whole tree, atomically
    algo = Algorithm.from_checkpoint(path)                     # rebuilt from metadata, then restored
    module = RLModule.from_checkpoint(f"{path}/learner_group/learner/rl_module/default_policy")
    algo.restore_from_path(module_path, component="learner_group/learner/rl_module/default_policy")

Each component directory holds the component's own state (its `get_state()` without the states of
its sub-components), a metadata file with its class and constructor arguments, and one
sub-directory per sub-component (see `flywheel.checkpoints.io` for the files).

Subclasses implement `get_state` / `set_state` (the state of the whole sub-tree, keyed by component
name at each level), `get_ctor_args_and_kwargs` (plain data that rebuilds the object) and, when they
hold sub-components, `get_checkpointable_components`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, ClassVar, Self

from flywheel import __version__
from flywheel.checkpoints import codec, io
from flywheel.errors import CheckpointError
from flywheel.typing import StateDict


class Checkpointable:
    """Mixin for every stateful part: RLModules, learners, connector pipelines, runners, algorithms."""

    ctor_args_may_pickle: ClassVar[bool] = False
    """True for components built from an algorithm config (algorithm, learner group, learner, env
    runner): config values without a plain form (lambdas, closures) go to a cloudpickle side file.
    RLModules and connector pieces are never unpickled, so they stay False."""

    # What subclasses provide.

    def get_state(
        self,
        components: str | list[str] | None = None,
        not_components: str | list[str] | None = None,
        **kwargs,
    ) -> StateDict:
        """The state of this component and its sub-components (keyed by component name)."""
        raise NotImplementedError(f"{type(self).__name__} does not implement get_state().")

    def set_state(self, state: StateDict) -> None:
        """Restores a state `get_state` returned (keys it lacks keep their values)."""
        raise NotImplementedError(f"{type(self).__name__} does not implement set_state().")

    def get_ctor_args_and_kwargs(self) -> tuple[tuple, dict[str, Any]]:
        """`(args, kwargs)` that rebuild this object with `type(self)(*args, **kwargs)`, as plain data."""
        raise NotImplementedError(
            f"{type(self).__name__} does not implement get_ctor_args_and_kwargs(), so a checkpoint cannot "
            "record how to rebuild it. Fix: return the constructor arguments as plain data."
        )

    def get_checkpointable_components(self) -> list[tuple[str, Checkpointable]]:
        """`[(name, component)]` saved in sub-directories `name` (their state is a key of `get_state`)."""
        return []

    # Saving.

    def save_to_path(self, path: str | os.PathLike | None = None) -> str:
        """Saves this component's tree to `path` (default: a new temporary directory); returns the path.

        The save is atomic: an existing checkpoint at `path` is replaced only once the new one is
        complete, and a save that fails leaves `path` as it was.
        """
        return io.save_directory(path, lambda directory: self._write_to(directory, type(self).__name__))

    def _write_to(self, directory: Path, where: str) -> None:
        components = self.get_checkpointable_components()
        names = [_checked_name(name, where) for name, _ in components]
        state = self.get_state(not_components=names) if names else self.get_state()
        checksums = io.write_state(directory, state, owner=where)
        for name, component in components:
            (directory / name).mkdir()
            component._write_to(directory / name, f"{where}/{name}")
        metadata = {
            "flywheel_version": __version__,
            "class": self._class_path(),
            "components": names,
            **self._encoded_ctor_args(directory, where),
            "checksums": checksums,
        }
        io.write_metadata(directory, metadata)
        io.mark_complete(directory)

    def _class_path(self) -> str:
        cls = type(self)
        return f"{cls.__module__}:{cls.__qualname__}"

    def _encoded_ctor_args(self, directory: Path, where: str) -> dict[str, Any]:
        args, kwargs = self.get_ctor_args_and_kwargs()
        pickles: list | None = [] if self.ctor_args_may_pickle else None
        try:
            encoded = {
                "ctor_args": [codec.encode(arg, f"argument {i}", pickles) for i, arg in enumerate(args)],
                "ctor_kwargs": {key: codec.encode(value, key, pickles) for key, value in kwargs.items()},
            }
        except codec.NotPlainError as e:
            raise CheckpointError(
                f"Cannot save {type(self).__name__} (at {where}): its constructor argument {e.where} is "
                f"{e.what}, which a checkpoint cannot record as plain data. Fix: pass plain data (numbers, "
                "strings, lists, dicts, numpy arrays, gymnasium spaces, importable classes or functions), or "
                "override get_ctor_args_and_kwargs() to return such data."
            ) from None
        if pickles:
            _write_pickles(directory / io.PICKLE_FILE, pickles, type(self).__name__, where)
        return encoded

    # Restoring.

    def restore_from_path(self, path: str | os.PathLike, component: str | None = None) -> None:
        """Loads the checkpoint at `path` into this object, or into its sub-component `component`
        (a path of component names, e.g. `"learner_group/learner/rl_module/p0"`)."""
        target = self if component is None else self._component(component)
        target.set_state(read_tree_state(path))

    def _component(self, component: str) -> Checkpointable:
        target: Checkpointable = self
        for depth, name in enumerate(component.split("/")):
            children = dict(target.get_checkpointable_components())
            if name not in children:
                at = "/".join(component.split("/")[:depth]) or "the top level"
                raise CheckpointError(
                    f"{type(self).__name__} has no component {component!r}: at {at} the components are "
                    f"{list(children)}. Fix: pass a path of these names."
                )
            target = children[name]
        return target

    @classmethod
    def from_checkpoint(cls, path: str | os.PathLike) -> Self:
        """Builds the object the checkpoint at `path` describes and restores its state into it."""
        obj = cls._construct_from(Path(path))
        obj.restore_from_path(path)
        return obj

    @classmethod
    def _construct_from(cls, path: Path) -> Self:
        """Reads `path`'s metadata, checks its class is a `cls`, and builds it (without its state)."""
        metadata = io.read_metadata(path)
        target = codec.resolve_import(metadata["class"], path)
        if not (isinstance(target, type) and issubclass(target, cls)):
            components = metadata.get("components", [])
            sub = f", or pass the sub-directory that holds the {cls.__name__} (components: {components})"
            raise CheckpointError(
                f"The checkpoint at {path} holds {metadata['class']}, which is not {cls.__name__} or a subclass "
                f"of it. Fix: load it with {getattr(target, '__name__', target)}.from_checkpoint()"
                f"{sub if components else ''}."
            )
        return target._from_metadata(path, metadata)

    @classmethod
    def _from_metadata(cls, path: Path, metadata: dict[str, Any]) -> Self:
        """Builds the object from its recorded constructor arguments (containers also build their parts)."""
        args, kwargs = decode_ctor_args(path, metadata, allow_pickle=cls.ctor_args_may_pickle)
        return cls(*args, **kwargs)


def decode_ctor_args(path: Path, metadata: dict[str, Any], *, allow_pickle: bool) -> tuple[list, dict]:
    """The constructor arguments recorded in `metadata` (pickled ones only when `allow_pickle`)."""
    load_pickles = (lambda: _read_pickles(path / io.PICKLE_FILE)) if allow_pickle else None
    args = codec.decode(metadata.get("ctor_args", []), path, load_pickles)
    kwargs = codec.decode(metadata.get("ctor_kwargs", {}), path, load_pickles)
    return args, kwargs


def read_tree_state(path: str | os.PathLike) -> StateDict:
    """The state of the component at `path` with its sub-components' states under their names."""
    directory = Path(path)
    metadata = io.read_metadata(directory)
    state = io.read_state(directory, metadata)
    for name in metadata.get("components", []):
        sub_state = read_tree_state(directory / name)
        if sub_state:
            state[name] = sub_state
    return state


def select(
    name: str, components: str | list[str] | None, not_components: str | list[str] | None
) -> tuple[bool, list[str] | None, list[str] | None]:
    """Whether `get_state(components, not_components)` includes the key `name`, and the selection to
    pass on to it: `"a/b"` selects `b` inside `a`."""
    keep = [components] if isinstance(components, str) else components
    drop = [not_components] if isinstance(not_components, str) else (not_components or [])
    prefix = name + "/"
    if name in drop:
        return False, None, None
    sub_drop = [path[len(prefix) :] for path in drop if path.startswith(prefix)] or None
    if keep is None or name in keep:
        return True, None, sub_drop
    sub_keep = [path[len(prefix) :] for path in keep if path.startswith(prefix)]
    return bool(sub_keep), sub_keep or None, sub_drop


def _checked_name(name: str, where: str) -> str:
    if not name or name in (".", "..") or "/" in name or "\\" in name or name.startswith("."):
        raise CheckpointError(
            f"Cannot save {where}: its component name {name!r} cannot be a directory name. Fix: use names "
            "without '/' or '\\' that do not start with '.' (e.g. module id 'p0')."
        )
    return name


def _write_pickles(file: Path, values: list, owner: str, where: str) -> None:
    import cloudpickle

    try:
        data = cloudpickle.dumps(values)
    except Exception as e:
        raise CheckpointError(
            f"Cannot save {owner} (at {where}): constructor values without a plain form could not be pickled "
            f"either ({type(e).__name__}: {e}). Fix: use importable classes and functions in the config."
        ) from e
    io.write_bytes(file, data)


def _read_pickles(file: Path) -> list:
    import cloudpickle

    try:
        return cloudpickle.loads(file.read_bytes())
    except Exception as e:
        raise CheckpointError(
            f"{file} cannot be unpickled ({type(e).__name__}: {e}). It holds the config's lambdas and "
            "closures, which need the same Python and package versions as the process that saved them."
        ) from e
