"""`flywheel.utils.spaces`: RLlib's space_utils helpers (flatten_space, batch)."""

import gymnasium as gym
import numpy as np
import pytest

from flywheel.errors import ArgumentError
from flywheel.utils.spaces import batch, flatten_space


def test_flatten_space_lists_the_leaves_in_tree_order():
    space = gym.spaces.Dict({"b": gym.spaces.Discrete(2), "a": gym.spaces.Tuple((gym.spaces.Discrete(3),))})
    assert flatten_space(space) == [gym.spaces.Discrete(3), gym.spaces.Discrete(2)]


def test_batch_stacks_items_leaf_by_leaf():
    out = batch([{"a": 1, "b": (4, 7.0)}, {"a": 2, "b": (5, 8.0)}, {"a": 3, "b": (6, 9.0)}])
    assert out["a"].tolist() == [1, 2, 3] and out["b"][0].tolist() == [4, 5, 6]
    assert out["b"][1].dtype == np.float64 and out["b"][1].tolist() == [7.0, 8.0, 9.0]
    assert batch([np.zeros(2), np.ones(2)]).shape == (2, 2)


def test_batch_of_batches_concatenates():
    out = batch(
        [{"x": np.zeros((1, 2))}, {"x": np.ones((3, 2))}], individual_items_already_have_batch_dim=True
    )
    assert out["x"].shape == (4, 2) and out["x"].sum() == 6


def test_batch_refuses_no_items_and_rllibs_auto():
    with pytest.raises(ArgumentError, match="got no items"):
        batch([])
    with pytest.raises(ArgumentError, match="'auto'.*BatchedNdArray"):
        batch([1], individual_items_already_have_batch_dim="auto")
