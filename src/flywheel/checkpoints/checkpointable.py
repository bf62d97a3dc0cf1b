"""`Checkpointable`: save a component (and its sub-components) to a directory, restore it, rebuild it.

    path = algo.save_to_path("runs/ckpt")                      # the whole tree, atomically
    algo = Algorithm.from_checkpoint(path)                     # rebuilt from metadata, then restored
    module = RLModule.from_checkpoint(f"{path}/learner_group/learner/rl_module/default_policy")
    algo.restore_from_path(module_path, component="learner_group/learner/rl_module/default_policy")

Each component directory holds the component's own state (its `get_state()` without the states of
its sub-components), a metadata file with its class, kind and constructor arguments, and one
sub-directory per sub-component (see `flywheel.checkpoints.io` for the files). Saving goes through
`flywheel.checkpoints.atomic`; loading verifies the whole tree first (`flywheel.checkpoints.tree`)
and builds only allowed classes (`flywheel.checkpoints.registry`): loading runs no code the
checkpoint names unless the caller passes `trusted=True`.

Subclasses implement `get_state` / `set_state` (the state of the whole sub-tree, keyed by component
name at each level), `get_ctor_args_and_kwargs` (plain data that rebuilds the object) and, when they
hold sub-components, `get_checkpointable_components`.
"""

from __future__ import annotations

import contextlib
import functools
import os
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, ClassVar, Self, TypeVar

from flywheel import __version__
from flywheel.checkpoints import atomic, codec, io, registry
from flywheel.checkpoints.tree import Node, component_name_problem, read_tree, tree_state
from flywheel.errors import CheckpointError, FlywheelError, UntrustedCheckpointError
from flywheel.typing import StateDict

C = TypeVar("C", bound="Checkpointable")


class Checkpointable:
    """Mixin for every stateful part: RLModules, learners, connector pipelines, runners, algorithms."""

    ctor_args_may_pickle: ClassVar[bool] = False
    """True for components built from an algorithm config (algorithm, learner group, learner, env
    runner): config values without a plain form (lambdas, closures) go to a cloudpickle side file,
    read back only when a load is `trusted`. RLModules and connector pieces stay False."""

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        registry.register_if_flywheel(cls)  # flywheel's components may be named by checkpoints

    @classmethod
    def checkpoint_kind(cls) -> str:
        """What a checkpoint of this class can be restored into, recorded as `kind` in its metadata:
        the base that derives from Checkpointable directly (`"RLModule"`, `"MultiRLModule"`,
        `"Learner"`, `"LearnerGroup"`, `"EnvRunner"`, `"ConnectorV2"`, `"Algorithm"`), unless a class
        sets its own `_checkpoint_kind` (`"ConnectorPipelineV2"`)."""
        for klass in cls.__mro__:
            if "_checkpoint_kind" in vars(klass):
                return vars(klass)["_checkpoint_kind"]
            if Checkpointable in klass.__bases__:
                return klass.__qualname__
        return cls.__qualname__

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
        complete, and a save that fails leaves `path` as it was. A path holding anything but a
        flywheel checkpoint (or nothing) is refused, so a save never deletes files it did not write.
        """
        return atomic.save_directory(path, lambda directory: self._write_to(directory, type(self).__name__))

    def _write_to(self, directory: Path, where: str) -> int:
        """Writes this component's tree into `directory`; returns its metadata's CRC-32."""
        components = self.get_checkpointable_components()
        names = _checked_names([name for name, _ in components], where)
        state = self.get_state(not_components=names) if names else self.get_state()
        checksums = io.write_state(directory, state, owner=where)
        for name, component in components:
            (directory / name).mkdir()
            checksums[f"{name}/{io.METADATA_FILE}"] = component._write_to(directory / name, f"{where}/{name}")
        ctor_args = self._encoded_ctor_args(directory, where, checksums)
        metadata = {
            "flywheel_version": __version__,
            "class": registry.checkpoint_name(type(self)),
            "kind": self.checkpoint_kind(),
            "components": names,
            **ctor_args,
            "checksums": checksums,
        }
        return io.write_metadata(directory, metadata)

    def _encoded_ctor_args(self, directory: Path, where: str, checksums: dict[str, int]) -> dict[str, Any]:
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
            checksums[io.PICKLE_FILE] = _write_pickles(
                directory / io.PICKLE_FILE, pickles, type(self).__name__, where
            )
        return encoded

    # Restoring.

    def restore_from_path(self, path: str | os.PathLike, component: str | None = None) -> None:
        """Loads the checkpoint at `path` into this object, or into its sub-component `component`
        (a path of component names, e.g. `"learner_group/learner/rl_module/p0"`; `path` is then that
        component's own directory). Reads only states: nothing in the checkpoint is decoded into objects.
        A checkpoint of another kind than the target (e.g. a module given to an algorithm without
        `component=`) raises a CheckpointError naming both."""
        target = self if component is None else self._component(component)
        node = read_tree(path)
        self.check_restorable(node, target.checkpoint_kind(), component)
        state = tree_state(node)
        with loading(node.path, f"restore {type(target).__name__}"):
            target.set_state(state)

    def check_restorable(self, node: Node, expected_kind: str, component: str | None) -> None:
        """CheckpointError unless the checkpoint `node` is of `expected_kind` (the kind of this object's
        `component`, or of this object); the error names the components that could take it."""
        found_kind = node.metadata["kind"]
        if found_kind == expected_kind:
            return
        into = type(self).__name__ + (f"'s component {component!r}" if component else "")
        inside = _node_paths(node, expected_kind)
        candidates = _component_paths(self, found_kind)
        if inside:
            fix = f"pass the sub-directory that holds it: {node.path / inside[0]}"
        elif candidates:
            shown = candidates[:5] + (["..."] if len(candidates) > 5 else [])
            fix = (
                f"pass the component it belongs to, e.g. restore_from_path(path, component={candidates[0]!r}) "
                f"(components of kind {found_kind}: {shown})"
            )
        else:
            fix = f"pass a checkpoint of kind {expected_kind} (the directory its save_to_path() returned)"
        raise CheckpointError(
            f"Cannot restore {node.path} into {into}: it holds {node.metadata['class'].rpartition(':')[2]} "
            f"(kind {found_kind}), expected a checkpoint of kind {expected_kind}. Fix: {fix}."
        )

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
    def from_checkpoint(
        cls, path: str | os.PathLike, *, classes: Iterable[Any] = (), trusted: bool = False
    ) -> Self:
        """Builds the object the checkpoint at `path` describes and restores its state into it.

        The checkpoint's metadata is verified first; then only flywheel's own classes, this class
        and `classes` (your classes and functions the checkpoint names, e.g. `classes=[MyModule]`)
        are built. Nothing is imported or unpickled unless `trusted=True`, which imports the classes
        the checkpoint names and unpickles the config values it stores as pickles: pass it only for
        checkpoints you trust (see docs/concepts/checkpoints.md).
        """
        allowed = registry.Allowed.of(
            [cls, *classes], trusted=trusted, entry=f"{cls.__name__}.from_checkpoint"
        )
        obj = cls._construct_from(read_tree(path), allowed)
        obj.restore_from_path(path)
        return obj

    @classmethod
    def _construct_from(cls, node: Node, allowed: registry.Allowed) -> Self:
        """Checks the checkpoint at `node` holds a `cls` and builds it (without its state)."""
        target = cls.checked_class(node, allowed)
        with loading(node.path, f"build {target.__name__}"):
            return target._from_metadata(node, allowed)

    @classmethod
    def checked_class(cls, node: Node, allowed: registry.Allowed) -> type[Self]:
        """The class the checkpoint at `node` holds, if it is an allowed `cls` (CheckpointError if not)."""
        if cls is not Checkpointable and node.metadata["kind"] != cls.checkpoint_kind():
            raise CheckpointError(_wrong_class_message(cls, node))
        target = allowed.resolve(node.metadata["class"], node.path / io.METADATA_FILE)
        if not (isinstance(target, type) and issubclass(target, cls)):
            raise CheckpointError(_wrong_class_message(cls, node))
        return target

    @classmethod
    def _from_metadata(cls, node: Node, allowed: registry.Allowed) -> Self:
        """Builds the object from its recorded constructor arguments (containers also build their parts)."""
        args, kwargs = decode_ctor_args(node, allowed, may_pickle=cls.ctor_args_may_pickle)
        return cls(*args, **kwargs)


def load_tree(cls: type[C], node: Node, allowed: registry.Allowed) -> C:
    """A `cls` built from the verified checkpoint `node`, with its state restored."""
    obj = cls._construct_from(node, allowed)
    state = tree_state(node)
    with loading(node.path, f"restore {type(obj).__name__}"):
        obj.set_state(state)
    return obj


_LOAD_ERRORS = (
    FlywheelError,
    TypeError,
    ValueError,
    LookupError,
    AttributeError,
    RuntimeError,
    ArithmeticError,
)
"""What a component's constructor or `set_state` raises for arguments or states that do not fit it."""


@contextlib.contextmanager
def loading(path: Path, action: str) -> Iterator[None]:
    """Errors of building a component from the constructor arguments the checkpoint at `path` records,
    or of setting the state it records, raised as a CheckpointError naming the checkpoint (the
    component's own error is chained): loading a checkpoint raises CheckpointErrors only."""
    try:
        yield
    except CheckpointError:
        raise
    except _LOAD_ERRORS as e:
        raise CheckpointError(
            f"Cannot {action} from the checkpoint at {path}: {type(e).__name__}: {e} The checkpoint does not "
            "fit this code: it is damaged, was edited, or was saved by another version of its classes. "
            "Fix: load another checkpoint, or load it with the code that saved it."
        ) from e


def decode_ctor_args(node: Node, allowed: registry.Allowed, *, may_pickle: bool) -> tuple[list, dict]:
    """The constructor arguments recorded in `node`'s metadata.

    Pickled values are read only when the component may hold them and the load is trusted;
    otherwise a CheckpointError names every pickled argument before anything is decoded.
    """
    metadata, file = node.metadata, node.path / io.METADATA_FILE
    args, kwargs = metadata.get("ctor_args", []), metadata.get("ctor_kwargs", {})
    if may_pickle and not allowed.trusted:
        pickled = pickled_ctor_args(args, kwargs)
        if pickled:
            raise needs_trust(file, pickled, allowed.entry)
    load_pickles = functools.cache(lambda: read_pickles(node)) if may_pickle and allowed.trusted else None
    return codec.decode(args, file, allowed, load_pickles), codec.decode(kwargs, file, allowed, load_pickles)


def pickled_ctor_args(args: Any, kwargs: Any) -> list[str]:
    """Which recorded constructor arguments (or parts of them) are pickles, e.g. `config.policy_mapping_fn`."""
    paths = codec.pickled_paths(args, "arguments") if isinstance(args, list) else []
    if isinstance(kwargs, dict):
        paths += [path for key, value in kwargs.items() for path in codec.pickled_paths(value, key)]
    return paths


def needs_trust(
    file: Path, pickled: list[str], entry: str, other_fixes: str = ""
) -> UntrustedCheckpointError:
    """The error of a load that stops at pickled values: why, and how to go on (`other_fixes` appended)."""
    return UntrustedCheckpointError(
        f"{file} stores {', '.join(pickled)} as pickles (lambdas, closures, or classes defined in __main__ "
        "or inside a function). Flywheel unpickles only when told the checkpoint is trusted, because "
        "unpickling runs code the file chooses.",
        f"if you trust this checkpoint, {entry}(path, trusted=True).{other_fixes}",
    )


def _wrong_class_message(cls: type, node: Node) -> str:
    found = node.metadata["class"].rpartition(":")[2]
    subs = _node_paths(node, cls.checkpoint_kind())
    sub = f", or pass its sub-directory holding a {cls.__name__} ({', '.join(subs)})" if subs else ""
    return (
        f"The checkpoint at {node.path} holds {node.metadata['class']} (kind {node.metadata['kind']}), which is "
        f"not {cls.__name__} or a subclass of it. Fix: load it with {found}.from_checkpoint(){sub}."
    )


def _node_paths(node: Node, kind: str, prefix: str = "") -> list[str]:
    """Paths of the sub-components of `node` whose kind is `kind`."""
    paths = []
    for name, child in node.children.items():
        path = f"{prefix}{name}"
        paths += [path] if child.metadata["kind"] == kind else _node_paths(child, kind, f"{path}/")
    return paths


def _component_paths(obj: Checkpointable, kind: str, prefix: str = "") -> list[str]:
    """Paths of the components of the live object `obj` whose kind is `kind`."""
    paths = []
    for name, component in obj.get_checkpointable_components():
        path = f"{prefix}{name}"
        paths += (
            [path] if component.checkpoint_kind() == kind else _component_paths(component, kind, f"{path}/")
        )
    return paths


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


def _checked_names(names: list[str], where: str) -> list[str]:
    for name in names:
        problem = component_name_problem(name) or (
            f"{name!r} is used twice" if names.count(name) > 1 else None
        )
        if problem:
            raise CheckpointError(
                f"Cannot save {where}: its component name {problem}. Fix: use "
                "unique names without '/' or '\\' that do not start with '.' (e.g. module id 'p0')."
            )
    return names


def _write_pickles(file: Path, values: list, owner: str, where: str) -> int:
    import cloudpickle

    try:
        data = cloudpickle.dumps(values)
    except Exception as e:
        raise CheckpointError(
            f"Cannot save {owner} (at {where}): constructor values without a plain form could not be pickled "
            f"either ({type(e).__name__}: {e}). Fix: use importable classes and functions in the config."
        ) from e
    io.write_bytes(file, data)
    return zlib.crc32(data)


def read_pickles(node: Node) -> list:
    """The values `node`'s component stored as pickles (checked against their checksum first)."""
    import cloudpickle

    file = node.path / io.PICKLE_FILE
    data = io.read_checked(file, node.metadata["checksums"])
    try:
        return cloudpickle.loads(data)
    except Exception as e:
        raise CheckpointError(
            f"{file} cannot be unpickled ({type(e).__name__}: {e}). It holds the config's lambdas and "
            "closures, which need the same Python and package versions as the process that saved them."
        ) from e
