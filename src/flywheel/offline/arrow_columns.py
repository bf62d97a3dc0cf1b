"""NumPy data <-> Arrow columns, and the spaces kept in a Parquet file's metadata.

A column of per-step values becomes one Arrow array: scalars a plain column, arrays of any shape a
`fixed_shape_tensor` column (the shape survives the round trip), dicts and tuples (Dict / Tuple
spaces) struct columns of those, tuples with fields named "0", "1", ... Any Parquet reader
(pandas, Ray Data, DuckDB) reads the files; flywheel reads them back into the same NumPy data.
"""

from __future__ import annotations

import json
from typing import Any

import gymnasium as gym
import numpy as np
import pyarrow as pa

from flywheel.checkpoints.codec import decode, encode

FORMAT_KEY = b"flywheel.format"
"""Metadata key: "rows" (one row per agent step) or "episodes" (one row per episode chunk)."""
ACTIONS_NORMALIZED_KEY = b"flywheel.actions_normalized"
"""Metadata key: b"1" when the recording runner's module acted in normalized space
(`normalize_actions=True`: Box actions in [-1, 1]), b"0" when its actions are the env's."""
SPACES_KEY = b"flywheel.spaces"
"""Metadata key: JSON `{agent_id or "default": {"observation_space": ..., "action_space": ...}}`."""
SINGLE_AGENT = "default"
"""The key of a single-agent env's spaces in `SPACES_KEY`."""
_TUPLE_MARK = b"flywheel.tuple"


def to_arrow(values: Any) -> pa.Array:
    """Stacked per-row values (an array with rows first, or a dict/tuple of such) as one Arrow array."""
    if isinstance(values, dict):
        return pa.StructArray.from_arrays([to_arrow(v) for v in values.values()], names=list(values))
    if isinstance(values, tuple):
        names = [str(i) for i in range(len(values))]
        arrays = [to_arrow(v) for v in values]
        fields = [
            pa.field(n, a.type, metadata={_TUPLE_MARK: b"1"}) for n, a in zip(names, arrays, strict=True)
        ]
        return pa.StructArray.from_arrays(arrays, fields=fields)
    array = np.ascontiguousarray(values)
    if array.ndim == 1:
        return pa.array(array)
    return pa.FixedShapeTensorArray.from_numpy_ndarray(array)


def to_numpy(column: pa.Array | pa.ChunkedArray) -> Any:
    """The NumPy data `to_arrow` made `column` from (rows first)."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
    if isinstance(column, pa.StructArray):
        fields = [column.type.field(i) for i in range(column.type.num_fields)]
        parts = {f.name: to_numpy(column.field(i)) for i, f in enumerate(fields)}
        if fields and fields[0].metadata and _TUPLE_MARK in fields[0].metadata:
            return tuple(parts.values())
        return parts
    if isinstance(column, pa.FixedShapeTensorArray):
        return column.to_numpy_ndarray()
    return column.to_numpy(zero_copy_only=False)


def lists(values: pa.Array, lengths: np.ndarray) -> pa.ListArray:
    """`values` split into consecutive lists of `lengths` (one list per episode chunk)."""
    offsets = np.zeros(len(lengths) + 1, np.int32)
    np.cumsum(lengths, out=offsets[1:])
    return pa.ListArray.from_arrays(pa.array(offsets), values)


def spaces_metadata(spaces: dict[str, tuple[gym.Space, gym.Space]]) -> bytes:
    """`{key: (observation_space, action_space)}` as the JSON kept under `SPACES_KEY`."""
    data = {
        key: {
            "observation_space": encode(obs, f"{key} observation_space"),
            "action_space": encode(act, f"{key} action_space"),
        }
        for key, (obs, act) in spaces.items()
    }
    return json.dumps(data).encode()


def read_spaces(metadata: dict | None, path: str) -> dict[str, tuple[gym.Space, gym.Space]]:
    """The spaces `spaces_metadata` stored in a file's schema metadata (empty when it has none)."""
    if not metadata or SPACES_KEY not in metadata:
        return {}
    data = json.loads(metadata[SPACES_KEY])
    return {
        key: (decode(value["observation_space"], path), decode(value["action_space"], path))
        for key, value in data.items()
    }
