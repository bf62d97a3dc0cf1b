"""Checkpoint files of one component directory: state files, metadata and the completion marker.

One component directory holds::

    metadata.json         format version, flywheel version, class, kind, constructor arguments,
                          components, and the CRC-32 checksums of its files and of every
                          sub-component's metadata.json
    state.msgpack         the component's own state (structure, numbers, strings)
    state.safetensors     every numpy array of that state, referenced from state.msgpack by key
    ctor_pickled.pkl      only for components built from an algorithm config that holds lambdas/closures
    checkpoint_complete   written last, holds the CRC-32 of metadata.json: a directory without it is
                          an interrupted save
    <component>/ ...      one sub-directory per sub-component, laid out the same way

`flywheel.checkpoints.tree` verifies a whole tree of these before anything is decoded;
`flywheel.checkpoints.atomic` puts a new tree in place of an old one.
"""

from __future__ import annotations

import json
import os
import stat
import zlib
from pathlib import Path
from typing import Any, cast

import msgpack
import numpy as np
import safetensors.numpy

from flywheel.errors import CheckpointError

FORMAT_VERSION = 2
METADATA_FILE = "metadata.json"
STATE_FILE = "state.msgpack"
TENSORS_FILE = "state.safetensors"
PICKLE_FILE = "ctor_pickled.pkl"
COMPLETE_MARKER = "checkpoint_complete"
MARKER_KEY = "metadata_crc32"

_EXT_ARRAY, _EXT_TUPLE, _EXT_SCALAR = 1, 2, 3


# ----------------------------------------------------------------------------------- files


def write_bytes(path: Path, data: bytes) -> None:
    """Writes `data` to `path` (every checkpoint file goes through here); errors name the file."""
    try:
        with open(path, "wb") as f:
            f.write(data)
    except OSError as e:
        raise OSError(e.errno, e.strerror, str(path)) from e


def read_file(path: Path) -> bytes:
    """The bytes of the regular file `path`; a symlink, a device or a FIFO in its place raises
    (checkpoints hold none, and following one could read anything or block forever)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        raise CheckpointError(f"The checkpoint at {path.parent} is missing its file {path.name}.") from None
    except OSError as e:
        raise CheckpointError(
            f"{path} cannot be read ({e.strerror}); checkpoints hold regular files only (no symlinks)."
        ) from e
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            raise CheckpointError(f"{path} is not a regular file; checkpoints hold regular files only.")
        return f.read()


def write_metadata(directory: Path, metadata: dict[str, Any]) -> int:
    """Writes `metadata` (plain JSON data) with the format version added, then the completion
    marker holding the metadata's CRC-32; returns that checksum (for the parent's metadata)."""
    data = json.dumps({"format_version": FORMAT_VERSION, **metadata}, indent=2).encode()
    write_bytes(directory / METADATA_FILE, data)
    checksum = zlib.crc32(data)
    write_bytes(directory / COMPLETE_MARKER, json.dumps({MARKER_KEY: checksum}).encode())
    return checksum


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
        # msgpack is untyped, and its pure-Python Packer may return None (only with autoreset=False).
        structure = cast(bytes, msgpack.packb(packed, use_bin_type=True))
    except (OverflowError, ValueError, TypeError) as e:
        raise CheckpointError(f"Cannot store {owner}'s state as msgpack ({e}).") from e
    write_bytes(directory / TENSORS_FILE, tensors)
    write_bytes(directory / STATE_FILE, structure)
    return {TENSORS_FILE: zlib.crc32(tensors), STATE_FILE: zlib.crc32(structure)}


def read_state(directory: Path, metadata: dict[str, Any]) -> dict[str, Any]:
    """The state `write_state` wrote to `directory`, whose verified metadata is `metadata`
    (CheckpointError naming the file if it is damaged)."""
    tensors_file, state_file = directory / TENSORS_FILE, directory / STATE_FILE
    tensors, structure = (read_checked(file, metadata["checksums"]) for file in (tensors_file, state_file))
    try:
        arrays = safetensors.numpy.load(tensors)
    except Exception as e:
        raise CheckpointError(
            f"{tensors_file} is corrupted or truncated ({type(e).__name__}: {e}). Fix: load another checkpoint."
        ) from e
    try:
        state = _unpack(structure, arrays)
    except Exception as e:
        raise CheckpointError(
            f"{state_file} is corrupted or truncated ({type(e).__name__}: {e}). Fix: load another checkpoint."
        ) from e
    if not isinstance(state, dict):
        raise CheckpointError(
            f"{state_file} holds a {type(state).__name__}, expected a state dict: the file is damaged or was "
            "edited. Fix: load another checkpoint."
        )
    return state


def read_checked(file: Path, checksums: dict[str, int]) -> bytes:
    """The bytes of `file`, after checking them against its CRC-32 in `checksums` (its metadata's)."""
    data = read_file(file)
    if zlib.crc32(data) != checksums.get(file.name):
        raise CheckpointError(
            f"{file} is corrupted or truncated: its CRC-32 checksum does not match the one in "
            f"{METADATA_FILE} ({len(data)} bytes read). Fix: load another checkpoint."
        )
    return data


def _pack(value: object, path: tuple[str, ...], arrays: dict[str, np.ndarray], owner: str) -> Any:
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
