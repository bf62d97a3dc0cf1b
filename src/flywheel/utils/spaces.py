"""Space helpers RLlib users import from `ray.rllib.utils.spaces.space_utils`."""

from __future__ import annotations

import gymnasium as gym


def flatten_space(space: gym.Space) -> list[gym.Space]:
    """The leaf spaces of a nested Tuple/Dict space, in `tree.flatten` order (Dict keys sorted), so
    `zip(tree.flatten(sample), flatten_space(space))` pairs every leaf value with its space."""
    if isinstance(space, gym.spaces.Tuple):
        return [leaf for sub in space.spaces for leaf in flatten_space(sub)]
    if isinstance(space, gym.spaces.Dict):
        return [leaf for key in sorted(space.spaces) for leaf in flatten_space(space.spaces[key])]
    return [space]
