"""A checkpoint's directory tree, verified before anything in it is decoded.

`read_tree(path)` reads the metadata of the component at `path` and of all its sub-components,
and checks, before it returns any of them:

- every directory holds its completion marker, and the marker's CRC-32 matches its `metadata.json`;
- every sub-component's `metadata.json` matches the CRC-32 its parent's metadata records for it
  (so a sub-directory copied in from another checkpoint is noticed);
- every metadata has this format version and the expected structure;
- component names are plain directory names (no `..`, no `/`, not hidden), sub-components are real
  directories and files are regular files (no symlinks anywhere inside a checkpoint).

Only then do callers decode constructor arguments (`codec.decode`) or read states (`tree_state`,
which checks each state file against its checksum as it reads it). Checksums detect damage, not
tampering: whoever can edit the files can recompute them. What makes loading an untrusted
checkpoint safe is that decoding builds only allowed classes (`flywheel.checkpoints.registry`).
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import stat
import zlib
from pathlib import Path
from typing import Any

from flywheel.checkpoints import io
from flywheel.errors import CheckpointError
from flywheel.typing import StateDict

_KEYS = {"format_version": int, "class": str, "kind": str, "components": list, "checksums": dict}


@dataclasses.dataclass
class Node:
    """One verified component directory: its path, metadata and sub-components by name."""

    path: Path
    metadata: dict[str, Any]
    children: dict[str, Node]

    def at(self, component: str) -> Node:
        """The node of the sub-component path `component` (`"a/b"`), CheckpointError if absent."""
        node = self
        for name in component.split("/"):
            if name not in node.children:
                raise CheckpointError(
                    f"The checkpoint at {self.path} has no component {component!r}: {node.path} holds "
                    f"{node.metadata['class']} with the components {list(node.children)}."
                )
            node = node.children[name]
        return node


def read_tree(path: str | os.PathLike) -> Node:
    """The verified tree of the checkpoint at `path` (see the module docstring)."""
    directory = Path(path)
    _check_root(directory)
    metadata_bytes = _read_metadata_bytes(directory)
    return _node(directory, metadata_bytes)


def tree_state(node: Node) -> StateDict:
    """The state of `node`'s component with its sub-components' states under their names."""
    state = io.read_state(node.path, node.metadata)
    for name, child in node.children.items():
        sub_state = tree_state(child)
        if sub_state:
            state[name] = sub_state
    return state


def component_name_problem(name: object) -> str | None:
    """Why `name` cannot be a component directory name, or None (the rule for saving and loading)."""
    if not isinstance(name, str) or not name:
        return f"{name!r} is not a non-empty string"
    if name in (".", "..") or name.startswith(".") or any(c in name for c in "/\\\0"):
        return f"{name!r} is not a plain directory name (no '/', '\\', NUL, and not starting with '.')"
    return None


# ---------------------------------------------------------------------------- leftovers


def leftover_pattern(target: Path) -> re.Pattern:
    """Names of the sibling directories a save to `target` works in (`.name.tmp-xxxxxxxx`) or
    moves the previous checkpoint to (`.name.old-xxxxxxxx`)."""
    return re.compile(rf"\.{re.escape(target.name)}\.(tmp|old)-[0-9a-f]{{8}}")


def leftovers(target: Path) -> list[Path]:
    """Directories left next to `target` by interrupted saves, oldest first."""
    pattern = leftover_pattern(target)
    try:
        entries = list(target.parent.iterdir())
    except OSError:
        return []
    found = [entry for entry in entries if pattern.fullmatch(entry.name) and _is_real_dir(entry)]
    return sorted(found, key=lambda entry: entry.lstat().st_mtime)


# ------------------------------------------------------------------------------ checks


def _check_root(directory: Path) -> None:
    if not directory.exists():
        raise CheckpointError(
            f"No checkpoint at {directory}: the path does not exist.{_sibling_hint(directory)}"
            f"{_leftover_hint(directory)}"
        )
    if not directory.is_dir():
        raise CheckpointError(
            f"{directory} is a file, not a checkpoint. Fix: pass the directory save_to_path() returned."
        )
    if not (directory / io.METADATA_FILE).exists():
        raise CheckpointError(
            f"{directory} is not a flywheel checkpoint: it has no {io.METADATA_FILE}. "
            "Fix: pass the directory save_to_path() returned (or one of its component sub-directories)."
        )


def _read_metadata_bytes(directory: Path) -> bytes:
    """`directory`'s metadata.json, checked against the CRC-32 in its completion marker."""
    marker = directory / io.COMPLETE_MARKER
    if not os.path.lexists(marker):
        raise CheckpointError(
            f"The checkpoint at {directory} is incomplete: it has no {io.COMPLETE_MARKER} marker, so its "
            "save was interrupted or it was copied only in part. Fix: load another checkpoint, or copy it again."
        )
    data = io.read_file(directory / io.METADATA_FILE)
    try:
        expected = json.loads(io.read_file(marker))[io.MARKER_KEY]
    except (ValueError, TypeError, KeyError, RecursionError):
        _check_version(directory, _parse(directory, data))  # an older format explains it best
        raise CheckpointError(
            f"{marker} is damaged (it should hold the CRC-32 of {io.METADATA_FILE}). Fix: load another checkpoint."
        ) from None
    if zlib.crc32(data) != expected:
        raise CheckpointError(
            f"{directory / io.METADATA_FILE} is corrupted or was edited: its CRC-32 does not match the one in "
            f"{io.COMPLETE_MARKER}. Fix: load another checkpoint."
        )
    return data


def _node(directory: Path, metadata_bytes: bytes) -> Node:
    metadata = _parse(directory, metadata_bytes)
    _check_version(directory, metadata)
    _check_structure(directory, metadata)
    children = {}
    for name in metadata["components"]:
        sub = directory / name
        if not _is_real_dir(sub):
            raise CheckpointError(
                f"The checkpoint at {directory} lists the component {name!r}, but {sub} is "
                f"{'a symlink' if sub.is_symlink() else 'missing or not a directory'}; checkpoints hold "
                "real sub-directories only. Fix: load another checkpoint, or copy it again."
            )
        sub_bytes = _read_metadata_bytes(sub)
        if zlib.crc32(sub_bytes) != metadata["checksums"][f"{name}/{io.METADATA_FILE}"]:
            raise CheckpointError(
                f"{sub / io.METADATA_FILE} does not match the CRC-32 that {directory / io.METADATA_FILE} "
                f"records for it: {sub} was changed, or copied in from another checkpoint. "
                "Fix: load another checkpoint."
            )
        children[name] = _node(sub, sub_bytes)
    return Node(directory, metadata, children)


def _parse(directory: Path, data: bytes) -> Any:
    try:
        return json.loads(data)
    except (ValueError, RecursionError) as e:
        raise CheckpointError(
            f"{directory / io.METADATA_FILE} is corrupted ({type(e).__name__}: {e}). Fix: load another checkpoint."
        ) from e


def _check_version(directory: Path, metadata: Any) -> None:
    version = metadata.get("format_version") if isinstance(metadata, dict) else None
    if version is None:
        raise CheckpointError(
            f"{directory / io.METADATA_FILE} is not a flywheel checkpoint's metadata (it has no format_version). "
            "Fix: pass the directory save_to_path() returned."
        )
    if version != io.FORMAT_VERSION:
        written_by = metadata.get("flywheel_version")
        raise CheckpointError(
            f"The checkpoint at {directory} has format version {version!r} (written by flywheel "
            f"{written_by}); this flywheel reads format version {io.FORMAT_VERSION}. Fix: load it with the "
            "flywheel version that wrote it."
        )


def _check_structure(directory: Path, metadata: dict[str, Any]) -> None:
    file = directory / io.METADATA_FILE
    for key, kind in _KEYS.items():
        if not isinstance(metadata.get(key), kind):
            raise CheckpointError(
                f"{file} has no valid {key!r} entry (expected a {kind.__name__}): the file is damaged or was "
                "edited. Fix: load another checkpoint."
            )
    checksums, components = metadata["checksums"], metadata["components"]
    if not all(isinstance(k, str) and type(v) is int for k, v in checksums.items()):
        raise CheckpointError(f"{file} has a malformed 'checksums' entry: the file is damaged or was edited.")
    for name in components:
        problem = component_name_problem(name)
        if problem is None and components.count(name) > 1:
            problem = f"{name!r} is listed twice"
        if problem is None and f"{name}/{io.METADATA_FILE}" not in checksums:
            problem = f"{name!r} has no checksum"
        if problem:
            raise CheckpointError(
                f"{file} lists the component {problem}; flywheel only writes plain, unique directory names "
                "with checksums: the file is damaged or was edited. Fix: load another checkpoint."
            )


def _is_real_dir(path: Path) -> bool:
    try:
        return stat.S_ISDIR(path.lstat().st_mode)
    except OSError:
        return False


def _sibling_hint(directory: Path) -> str:
    """Names the components of the parent checkpoint, when the missing path sits inside one."""
    try:
        components = json.loads(io.read_file(directory.parent / io.METADATA_FILE)).get("components", [])
    except (CheckpointError, ValueError, AttributeError, RecursionError):
        return ""
    return f" Its parent {directory.parent} is a checkpoint with the components {components}."


def _leftover_hint(directory: Path) -> str:
    """Names complete checkpoints an interrupted save left next to `directory` (see `leftovers`)."""
    complete = [str(path) for path in leftovers(directory) if _verifies(path)]
    if not complete:
        return ""
    return (
        f" A save to it was interrupted while it replaced the checkpoint there; it left the complete "
        f"checkpoint(s) {complete} (newest last). Fix: rename one of them to {directory.name}, or save to "
        f"{directory} again (the next save removes them)."
    )


def _verifies(path: Path) -> bool:
    try:
        read_tree(path)
    except CheckpointError:
        return False
    return True
