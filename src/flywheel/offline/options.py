"""`iter_batches_options`: the reading options of `config.offline_data(iter_batches_kwargs=...)` with
the algorithm's defaults (checked by `config_validation.check_iter_batches_kwargs`). No pyarrow here:
configs use it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from flywheel.algorithms.algorithm_config import AlgorithmConfig

SHUFFLE_KEY = "local_shuffle_buffer_size"
"""Rows in the shuffle buffer (None: rows come in the order they are stored)."""
SEED_KEY = "local_shuffle_seed"
"""Seed of the shuffle (None: the config's `seed`)."""


def iter_batches_options(config: AlgorithmConfig) -> dict[str, Any]:
    """The algorithm's defaults (`default_iter_batches_kwargs` of the config class, e.g. CQL's row
    shuffling) updated with `config.iter_batches_kwargs`, key by key, as RLlib merges them (a value
    that is not a dict is left to validation to report)."""
    kwargs = config.iter_batches_kwargs
    return {**type(config).default_iter_batches_kwargs, **(kwargs if isinstance(kwargs, dict) else {})}
