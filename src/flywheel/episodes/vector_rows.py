"""Per-sub-env rows of what a gymnasium vector env returns batched (observations, actions, infos)."""

from __future__ import annotations

from typing import Any

import numpy as np
import tree

_VECTOR_ONLY_KEYS = ("final_obs", "final_info")


def row(batched: Any, index: int) -> Any:
    """Row `index` of a batched array, or of every leaf of a nested structure of arrays; any other
    value stands for all rows (e.g. the weights' sequence number of a step) and comes back as is."""
    if isinstance(batched, np.ndarray):
        return batched[index]
    if isinstance(batched, dict | tuple):
        return tree.map_structure(lambda leaf: leaf[index], batched)
    return batched


def info_row(infos: dict[str, Any], index: int) -> dict[str, Any]:
    """Sub-env `index`'s info dict from a vector env's info dict (values + `_key` masks)."""
    out: dict[str, Any] = {}
    for key, value in infos.items():
        if key.startswith("_") or key in _VECTOR_ONLY_KEYS:
            continue
        mask = infos.get("_" + key)
        if mask is None or mask[index]:
            out[key] = info_row(value, index) if isinstance(value, dict) else value[index]
    return out


def per_env_infos(infos: dict[str, Any], num_envs: int) -> list[dict[str, Any]] | None:
    """Every sub-env's info dict, or None when all of them are empty (the usual case, decided
    without building one dict per sub-env)."""
    if not infos or all(key.startswith("_") or key in _VECTOR_ONLY_KEYS for key in infos):
        return None
    return [info_row(infos, i) for i in range(num_envs)]
