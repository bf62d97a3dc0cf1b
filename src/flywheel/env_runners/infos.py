"""Per-sub-env views of what a gymnasium vector env returns batched (infos, nested obs/actions)."""

from __future__ import annotations

from typing import Any

import numpy as np
import tree

_VECTOR_ONLY_KEYS = ("final_obs", "final_info")


def unbatch_infos(infos: dict[str, Any], num_envs: int) -> list[dict[str, Any]]:
    """Splits a vector env's info dict (values + `_key` masks) into one dict per sub-env."""
    out: list[dict[str, Any]] = [{} for _ in range(num_envs)]
    if not infos:
        return out
    for key, value in infos.items():
        if key.startswith("_") or key in _VECTOR_ONLY_KEYS:
            continue
        mask = infos.get("_" + key)
        rows = unbatch_infos(value, num_envs) if isinstance(value, dict) else value
        for i in range(num_envs):
            if mask is None or mask[i]:
                out[i][key] = rows[i]
    return out


def row(batched: Any, index: int) -> Any:
    """Row `index` of a batched array, or of every leaf of a nested structure of arrays."""
    if isinstance(batched, np.ndarray):
        return batched[index]
    return tree.map_structure(lambda leaf: leaf[index], batched)
