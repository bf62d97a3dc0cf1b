"""SumTree / MinTree: sums, minimums and prefix search with known answers."""

import numpy as np
import pytest

from flywheel.errors import ConfigError
from flywheel.replay.sum_tree import MinTree, SumTree


def test_sums_and_prefix_search_on_a_non_power_of_two_capacity():
    tree = SumTree(5)
    tree.set(np.arange(5), np.array([1.0, 2.0, 3.0, 4.0, 0.0]))
    assert tree.total() == 10.0
    # Leaf i owns the masses [sum(p[:i]), sum(p[:i+1])): [0,1) [1,3) [3,6) [6,10).
    masses = np.array([0.0, 0.999, 1.0, 2.5, 3.0, 5.999, 6.0, 9.999])
    assert tree.find_prefix(masses).tolist() == [0, 0, 1, 1, 2, 2, 3, 3]
    assert tree.get(np.array([4, 2])).tolist() == [0.0, 3.0]


def test_updates_refresh_every_ancestor():
    tree = SumTree(8)
    tree.set(np.arange(8), 1.0)
    tree.set(np.array([3, 3, 6]), np.array([5.0, 7.0, 0.5]))  # the last value of a repeated index wins
    assert tree.total() == 6.0 + 7.0 + 0.5
    assert tree.find_prefix(np.array([2.999, 3.0, 9.999, 10.0, 12.0])).tolist() == [2, 3, 3, 4, 6]


def test_masses_at_or_past_the_total_never_land_on_empty_leaves():
    tree = SumTree(6)
    tree.set(np.array([1, 2]), np.array([0.1, 0.2]))
    total = tree.total()
    assert tree.find_prefix(np.array([0.0, 0.1, total, total * 2])).tolist() == [1, 2, 2, 2]


def test_single_leaf_tree():
    tree = SumTree(1)
    tree.set(np.array([0]), 3.0)
    assert (tree.total(), tree.find_prefix(np.array([0.0, 2.9])).tolist()) == (3.0, [0, 0])


def test_min_tree_tracks_the_smallest_leaf_and_ignores_unused_ones():
    tree = MinTree(5)
    assert tree.min() == np.inf
    tree.set(np.arange(3), np.array([4.0, 2.0, 3.0]))
    assert tree.min() == 2.0
    tree.set(np.array([1]), np.inf)  # an evicted row
    assert tree.min() == 3.0


def test_prefix_search_samples_proportionally():
    tree = SumTree(4)
    tree.set(np.arange(4), np.array([1.0, 2.0, 3.0, 4.0]))
    rng = np.random.default_rng(0)
    leaves = tree.find_prefix(rng.random(100_000) * tree.total())
    np.testing.assert_allclose(np.bincount(leaves) / 100_000, [0.1, 0.2, 0.3, 0.4], atol=0.005)


def test_capacity_must_be_positive():
    with pytest.raises(ConfigError, match="Expected a tree capacity >= 1, got 0"):
        SumTree(0)
