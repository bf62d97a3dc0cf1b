"""`iter_batches_options`: the reading options of `config.offline_data(iter_batches_kwargs=...)` with
the algorithm's defaults, and their check. No pyarrow here: config validation uses it."""

from __future__ import annotations

import numbers
from typing import Any

SHUFFLE_KEY = "local_shuffle_buffer_size"
"""Rows in the shuffle buffer (None: rows come in the order they are stored)."""
SEED_KEY = "local_shuffle_seed"
"""Seed of the shuffle (None: the config's `seed`)."""


def iter_batches_options(config: Any) -> dict[str, Any]:
    """The algorithm's defaults (`default_iter_batches_kwargs` of the config class, e.g. CQL's row
    shuffling) updated with `config.iter_batches_kwargs`, key by key, as RLlib merges them (a value
    that is not a dict is `iter_batches_problem`'s to report)."""
    kwargs = config.iter_batches_kwargs
    return {**type(config).default_iter_batches_kwargs, **(kwargs if isinstance(kwargs, dict) else {})}


def iter_batches_problem(config: Any) -> str | None:
    """What is wrong with `iter_batches_kwargs` (its shuffle keys), with the fix; None when fine."""
    kwargs = config.iter_batches_kwargs
    if not isinstance(kwargs, dict):
        return (
            f"iter_batches_kwargs={kwargs!r} must be a dict (e.g. {{{SHUFFLE_KEY!r}: 10_000}}). Fix: pass a "
            "dict to config.offline_data(iter_batches_kwargs=...)."
        )
    options = iter_batches_options(config)
    size, seed = options.get(SHUFFLE_KEY), options.get(SEED_KEY)
    if size is not None and not (_is_int(size) and size >= 1):
        return (
            f"iter_batches_kwargs[{SHUFFLE_KEY!r}]={size!r} must be an int >= 1 (rows in the shuffle buffer) "
            f"or None (no shuffling). Fix: config.offline_data(iter_batches_kwargs={{{SHUFFLE_KEY!r}: 10_000}})."
        )
    if seed is not None and not _is_int(seed):
        return (
            f"iter_batches_kwargs[{SEED_KEY!r}]={seed!r} must be an int or None (None: the config's seed). "
            f"Fix: config.offline_data(iter_batches_kwargs={{{SEED_KEY!r}: 0}})."
        )
    return None


def _is_int(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)
