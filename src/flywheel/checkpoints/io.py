"""Checkpoint files on disk: atomic directory writes, state files, metadata and the completion marker.

One component directory holds::

    metadata.json         format version, flywheel version, class path, constructor arguments, components,
                          CRC-32 checksums of the state files
    state.msgpack         the component's own state (structure, numbers, strings)
    state.safetensors     every numpy array of that state, referenced from state.msgpack by key
    ctor_pickled.pkl      only for components built from an algorithm config that holds lambdas/closures
    checkpoint_complete   written last: a directory without it is an interrupted save
    <component>/ ...      one sub-directory per sub-component, laid out the same way

A save writes the whole tree into a hidden temporary sibling and renames it into place, so the
target path holds either the previous checkpoint or the new one, never a half-written one, whether
the save raised or its process was killed. Like `torch.save`, it does not force the data to disk
(one fsync per file cost more than the rest of a save); after a power cut a checkpoint may fail to
load, and the checksums make sure it then raises instead of loading damaged data.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import uuid
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgpack
import numpy as np
import safetensors.numpy

from flywheel.errors import CheckpointError

FORMAT_VERSION = 1
METADATA_FILE = "metadata.json"
STATE_FILE = "state.msgpack"
TENSORS_FILE = "state.safetensors"
PICKLE_FILE = "ctor_pickled.pkl"
COMPLETE_MARKER = "checkpoint_complete"

_EXT_ARRAY, _EXT_TUPLE, _EXT_SCALAR = 1, 2, 3


# ------------------------------------------------------------------------------- atomic saves


def save_directory(path: str | os.PathLike | None, write: Callable[[Path], None]) -> str:
    """Runs `write(tmp_dir)` and moves `tmp_dir` to `path` only if it succeeded; returns the absolute path.

    `path=None` saves to a new temporary directory. An existing checkpoint at `path` is replaced
    only after the new one is complete; any other non-empty directory is refused.
    """
    target = Path(tempfile.mkdtemp(prefix="flywheel_checkpoint_") if path is None else path).absolute()
    _check_target(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.parent / f".{target.name}.tmp-{uuid.uuid4().hex[:8]}"
    tmp.mkdir()
    try:
        write(tmp)
        _move_into_place(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return str(target)


def _check_target(target: Path) -> None:
    if not target.exists():
        return
    if not target.is_dir():
        raise CheckpointError(
            f"Cannot save a checkpoint to {target}: it is a file, expected a directory path. "
            "Fix: pass a new or empty directory, or an existing checkpoint directory to replace."
        )
    if any(target.iterdir()) and not (target / METADATA_FILE).exists():
        raise CheckpointError(
            f"Cannot save a checkpoint to {target}: the directory is not empty and is not a flywheel "
            "checkpoint, so saving would mix or delete other files. Fix: pass a new or empty directory."
        )


def _move_into_place(tmp: Path, target: Path) -> None:
    """Renames `tmp` to `target`; an old checkpoint there is moved aside first and removed last."""
    if not target.exists():
        os.rename(tmp, target)
        return
    if not any(target.iterdir()):
        target.rmdir()
        os.rename(tmp, target)
        return
    backup = target.parent / f".{target.name}.old-{uuid.uuid4().hex[:8]}"
    os.rename(target, backup)
    try:
        os.rename(tmp, target)
    except BaseException:
        os.rename(backup, target)
        raise
    shutil.rmtree(backup, ignore_errors=True)


def write_bytes(path: Path, data: bytes) -> None:
    """Writes `data` to `path` (every checkpoint file goes through here)."""
    with open(path, "wb") as f:
        f.write(data)


def mark_complete(directory: Path) -> None:
    """Writes the completion marker; callers write it after everything else in `directory`."""
    write_bytes(directory / COMPLETE_MARKER, b"")


# -------------------------------------------------------------------------------- metadata


def write_metadata(directory: Path, metadata: dict[str, Any]) -> None:
    """Writes `metadata` (plain JSON data) with the format version added."""
    data = {"format_version": FORMAT_VERSION, **metadata}
    write_bytes(directory / METADATA_FILE, json.dumps(data, indent=2).encode())


def read_metadata(path: str | os.PathLike) -> dict[str, Any]:
    """The metadata of the checkpoint directory `path`, after checking it is complete and readable."""
    directory = Path(path)
    if not directory.exists():
        raise CheckpointError(
            f"No checkpoint at {directory}: the path does not exist.{_sibling_hint(directory)}"
        )
    if not directory.is_dir():
        raise CheckpointError(
            f"{directory} is a file, not a checkpoint. Fix: pass the directory save_to_path() returned."
        )
    metadata_file = directory / METADATA_FILE
    if not metadata_file.exists():
        raise CheckpointError(
            f"{directory} is not a flywheel checkpoint: it has no {METADATA_FILE}. "
            "Fix: pass the directory save_to_path() returned (or one of its component sub-directories)."
        )
    if not (directory / COMPLETE_MARKER).exists():
        raise CheckpointError(
            f"The checkpoint at {directory} is incomplete: it has no {COMPLETE_MARKER} marker, so its "
            "save was interrupted or it was copied only in part. Fix: load another checkpoint, or copy it again."
        )
    try:
        metadata = json.loads(metadata_file.read_text())
    except (OSError, ValueError) as e:
        raise CheckpointError(
            f"{metadata_file} is corrupted ({type(e).__name__}: {e}). Fix: load another checkpoint."
        ) from e
    version = metadata.get("format_version") if isinstance(metadata, dict) else None
    if version != FORMAT_VERSION:
        raise CheckpointError(
            f"The checkpoint at {directory} has format version {version!r} (written by flywheel "
            f"{metadata.get('flywheel_version') if isinstance(metadata, dict) else '?'}); this flywheel reads "
            f"format version {FORMAT_VERSION}. Fix: load it with the flywheel version that wrote it."
        )
    return metadata


def _sibling_hint(directory: Path) -> str:
    """Names the components of the parent checkpoint, when the missing path sits inside one."""
    parent_metadata = directory.parent / METADATA_FILE
    if not parent_metadata.exists():
        return ""
    try:
        components = json.loads(parent_metadata.read_text()).get("components", [])
    except (OSError, ValueError):
        return ""
    return f" Its parent {directory.parent} is a checkpoint with the components {components}."


# ---------------------------------------------------------------------------------- states


def write_state(directory: Path, state: dict[str, Any], owner: str) -> dict[str, int]:
    """Writes `state` as msgpack (structure) plus safetensors (numpy arrays); returns the files'
    CRC-32 checksums (for the metadata). Tuples and numpy scalars keep their types; `owner` names
    the component in errors.
    """
    arrays: dict[str, np.ndarray] = {}
    packed = _pack(state, (), arrays, owner)
    try:
        tensors = safetensors.numpy.save({key: _contiguous(a) for key, a in arrays.items()})
    except Exception as e:
        raise CheckpointError(
            f"Cannot store the numpy arrays of {owner}'s state in safetensors ({e}). Fix: keep state "
            "arrays numeric (bool, int, uint, float); object arrays are not supported."
        ) from e
    try:
        structure = msgpack.packb(packed, use_bin_type=True)
    except (OverflowError, ValueError, TypeError) as e:
        raise CheckpointError(f"Cannot store {owner}'s state as msgpack ({e}).") from e
    write_bytes(directory / TENSORS_FILE, tensors)
    write_bytes(directory / STATE_FILE, structure)
    return {TENSORS_FILE: zlib.crc32(tensors), STATE_FILE: zlib.crc32(structure)}


def read_state(path: str | os.PathLike, metadata: dict[str, Any] | None = None) -> dict[str, Any]:
    """The state `write_state` wrote to `path` (CheckpointError naming the file if it is damaged).

    `metadata` is the directory's `read_metadata` (read here when not given); its checksums are checked.
    """
    directory = Path(path)
    checksums = (metadata or read_metadata(directory)).get("checksums", {})
    tensors_file, state_file = directory / TENSORS_FILE, directory / STATE_FILE
    tensors, structure = (
        _read_checked(file, checksums.get(file.name)) for file in (tensors_file, state_file)
    )
    try:
        arrays = safetensors.numpy.load(tensors)
    except Exception as e:
        raise CheckpointError(
            f"{tensors_file} is corrupted or truncated ({type(e).__name__}: {e}). Fix: load another checkpoint."
        ) from e
    try:
        return _unpack(structure, arrays)
    except Exception as e:
        raise CheckpointError(
            f"{state_file} is corrupted or truncated ({type(e).__name__}: {e}). Fix: load another checkpoint."
        ) from e


def _read_checked(file: Path, checksum: int | None) -> bytes:
    if not file.exists():
        raise CheckpointError(f"The checkpoint at {file.parent} is missing its state file {file.name}.")
    data = file.read_bytes()
    if checksum is None or zlib.crc32(data) != checksum:
        raise CheckpointError(
            f"{file} is corrupted or truncated: its CRC-32 checksum does not match the one in "
            f"{METADATA_FILE} ({len(data)} bytes read). Fix: load another checkpoint."
        )
    return data


def _pack(value: Any, path: tuple[str, ...], arrays: dict[str, np.ndarray], owner: str) -> Any:
    """`value` as msgpack-native data; arrays move to `arrays` and are referenced by key."""
    if isinstance(value, np.ndarray | np.generic):
        key = _array_key(path, arrays)
        arrays[key] = np.asarray(value)
        return msgpack.ExtType(_EXT_ARRAY if isinstance(value, np.ndarray) else _EXT_SCALAR, key.encode())
    if value is None or isinstance(value, bool | int | float | str | bytes):
        return value
    if isinstance(value, dict):
        bad = [key for key in value if not isinstance(key, str | int)]
        if bad:
            raise CheckpointError(
                f"Cannot store {owner}'s state: the dict at {'/'.join(path) or '<root>'} has keys {bad!r}; "
                "state dict keys must be strings or ints. Fix: convert the keys in get_state()."
            )
        return {key: _pack(item, (*path, str(key)), arrays, owner) for key, item in value.items()}
    if isinstance(value, list):
        return [_pack(item, (*path, str(i)), arrays, owner) for i, item in enumerate(value)]
    if isinstance(value, tuple):
        items = [_pack(item, (*path, str(i)), arrays, owner) for i, item in enumerate(value)]
        return msgpack.ExtType(_EXT_TUPLE, msgpack.packb(items, use_bin_type=True))
    raise CheckpointError(
        f"Cannot store {owner}'s state: {'/'.join(path) or '<root>'} is a {type(value).__name__}. "
        "States hold plain data: dicts, lists, tuples, numbers, strings, bytes, None and numpy arrays. "
        "Fix: convert it in get_state() (e.g. tensor.cpu().numpy())."
    )


def _contiguous(array: np.ndarray) -> np.ndarray:
    # Not np.ascontiguousarray: it turns 0-d arrays (torch's Adam `step`) into 1-d ones.
    return array if array.flags.c_contiguous else array.copy(order="C")


def _array_key(path: tuple[str, ...], arrays: dict) -> str:
    key = "/".join(path) or "<root>"
    if key in arrays:
        key = f"{key}#{len(arrays)}"
    return key


def _unpack(data: bytes, arrays: dict[str, np.ndarray]) -> Any:
    def ext_hook(code: int, payload: bytes) -> Any:
        if code == _EXT_TUPLE:
            return tuple(msgpack.unpackb(payload, ext_hook=ext_hook, strict_map_key=False, raw=False))
        array = arrays[payload.decode()]
        # safetensors hands out read-only views; torch and in-place updates need writable arrays.
        array = array if array.flags.writeable else array.copy()
        return array[()] if code == _EXT_SCALAR else array

    return msgpack.unpackb(data, ext_hook=ext_hook, strict_map_key=False, raw=False)
