"""Space and batch helpers RLlib users import from `ray.rllib.utils.spaces.space_utils`."""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from flywheel.errors import ArgumentError
from flywheel.utils import nested


def flatten_space(space: gym.Space) -> list[gym.Space]:
    """The leaf spaces of a nested Tuple/Dict space, in `tree.flatten` order (Dict keys sorted), so
    `zip(tree.flatten(sample), flatten_space(space))` pairs every leaf value with its space."""
    if isinstance(space, gym.spaces.Tuple):
        return [leaf for sub in space.spaces for leaf in flatten_space(sub)]
    if isinstance(space, gym.spaces.Dict):
        return [leaf for key in sorted(space.spaces) for leaf in flatten_space(space.spaces[key])]
    return [space]


def batch(list_of_structs: list[Any], *, individual_items_already_have_batch_dim: bool = False) -> Any:
    """One batch per leaf from a list of items (values, or dicts/tuples of values, all of one structure):
    ``batch([{"a": 1}, {"a": 2}])`` is ``{"a": np.array([1, 2])}``. With
    `individual_items_already_have_batch_dim` each item is a batch already, and they are concatenated."""
    if not list_of_structs:
        raise ArgumentError("batch() got no items. Fix: pass a list of at least one (nested) item.")
    if not isinstance(individual_items_already_have_batch_dim, bool):
        raise ArgumentError(
            "batch(individual_items_already_have_batch_dim="
            f"{individual_items_already_have_batch_dim!r}): expected True or False (RLlib's 'auto' looks for "
            "its BatchedNdArray type, which flywheel has not). Fix: say whether the items are batches."
        )
    if individual_items_already_have_batch_dim:
        return nested.concat(
            [nested.stack(item) if isinstance(item, list) else item for item in list_of_structs]
        )
    return nested.stack(list(list_of_structs))
