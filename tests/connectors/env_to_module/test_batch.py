"""BatchIndividualItems: per-episode lists → arrays with a leading batch dimension."""

import numpy as np

from flywheel.connectors.env_to_module import BatchIndividualItems


def call(batch):
    return BatchIndividualItems()(rl_module=None, batch=batch, episodes=[])


def test_flat_items_are_stacked():
    batch = call(
        {"obs": [np.array([1.0, 2.0], np.float32), np.array([3.0, 4.0], np.float32)], "n": [1, 2, 3]}
    )
    assert batch["obs"].dtype == np.float32
    np.testing.assert_array_equal(batch["obs"], [[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_array_equal(batch["n"], [1, 2, 3])


def test_nested_items_are_stacked_leaf_wise():
    items = [{"h": np.zeros(2), "c": (np.ones(1), 5)}, {"h": np.ones(2), "c": (np.zeros(1), 6)}]
    batch = call({"state_in": items})
    np.testing.assert_array_equal(batch["state_in"]["h"], [[0.0, 0.0], [1.0, 1.0]])
    np.testing.assert_array_equal(batch["state_in"]["c"][0], [[1.0], [0.0]])
    np.testing.assert_array_equal(batch["state_in"]["c"][1], [5, 6])


def test_already_batched_columns_are_left_alone():
    array = np.arange(4).reshape(2, 2)
    batch = call({"obs": array, "flag": True, "empty": []})
    assert batch["obs"] is array and batch["flag"] is True and batch["empty"] == []
