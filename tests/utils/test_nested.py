"""flywheel.utils.nested: rows of nested columns (dicts and tuples of numpy arrays or tensors)."""

import re

import gymnasium as gym
import numpy as np
import pytest
import torch

from flywheel.episodes.space_items import space_struct
from flywheel.errors import ArgumentError
from flywheel.utils.nested import concat, first_leaf, num_rows, stack, take

COLUMN = {"pos": np.arange(6).reshape(3, 2), "parts": (np.array([1.0, 2.0, 3.0]), torch.tensor([4, 5, 6]))}


def test_take_rows_with_an_int_a_slice_and_index_arrays_of_either_kind():
    assert take(COLUMN, 1)["pos"].tolist() == [2, 3]
    rows = take(COLUMN, slice(1, 3))
    assert rows["pos"].tolist() == [[2, 3], [4, 5]] and rows["parts"][1].tolist() == [5, 6]
    by_mask = take(COLUMN, np.array([True, False, True]))
    assert by_mask["parts"][0].tolist() == [1.0, 3.0] and by_mask["parts"][1].tolist() == [4, 6]
    by_tensor = take(COLUMN, torch.tensor([2, 0]))
    assert isinstance(by_tensor["pos"], np.ndarray) and by_tensor["pos"].tolist() == [[4, 5], [0, 1]]
    assert by_tensor["parts"][1].tolist() == [6, 4]


def test_lists_are_leaves():
    assert take({"infos": [{"a": 1}, {"a": 2}]}, 1) == {"infos": {"a": 2}}


def test_concat_keeps_the_structure_and_the_leaf_kind():
    joined = concat([COLUMN, take(COLUMN, slice(0, 1))])
    assert joined["pos"].shape == (4, 2) and isinstance(joined["parts"][1], torch.Tensor)
    assert joined["parts"][0].tolist() == [1.0, 2.0, 3.0, 1.0] and joined["parts"][1].tolist() == [4, 5, 6, 4]


def test_stack_numpy_rows_and_numbers_gives_numpys_dtypes():
    stacked = stack([np.array([1.0, 2.0], np.float32), np.array([3.0, 4.0], np.float32)])
    assert stacked.dtype == np.float32 and stacked.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert stack([1, 2, 3]).dtype == np.int64 and stack([1.5, 2.5]).dtype == np.float64


def test_stack_tensor_rows_gives_a_tensor():
    stacked = stack([{"h": torch.zeros(2)}, {"h": torch.ones(2)}])
    assert isinstance(stacked["h"], torch.Tensor) and stacked["h"].tolist() == [[0.0, 0.0], [1.0, 1.0]]


def test_stack_nested_rows_leaf_by_leaf_in_the_first_rows_key_order():
    rows = [{"b": np.zeros(2), "a": (np.ones(1), 5)}, {"b": np.ones(2), "a": (np.zeros(1), 6)}]
    stacked = stack(rows)
    assert list(stacked) == ["b", "a"] and isinstance(stacked["a"], tuple)
    assert stacked["b"].tolist() == [[0.0, 0.0], [1.0, 1.0]]
    assert stacked["a"][0].tolist() == [[1.0], [0.0]] and stacked["a"][1].tolist() == [5, 6]


def test_stack_lists_are_leaves():
    assert stack([[1, 2], [3, 4]]).tolist() == [[1, 2], [3, 4]]
    assert stack([{"xs": [1, 2]}, {"xs": [3, 4]}])["xs"].shape == (2, 2)


def test_stack_with_a_space_uses_its_dtypes_and_stacks_no_rows_to_its_shapes():
    space = gym.spaces.Dict({"pos": gym.spaces.Box(-1.0, 1.0, (2,), np.float32), "n": gym.spaces.Discrete(3)})
    struct = space_struct(space)
    stacked = stack([{"pos": [0.5, 0.5], "n": 2}, {"pos": [1.0, -1.0], "n": 0}], struct)
    assert stacked["pos"].dtype == np.float32 and stacked["n"].dtype == np.int64
    empty = stack([], struct)
    assert empty["pos"].shape == (0, 2) and empty["pos"].dtype == np.float32 and empty["n"].shape == (0,)
    assert stack([1, 2], space_struct(gym.spaces.Discrete(3))).dtype == np.int64


def test_stack_no_rows_without_a_space_is_what_numpy_infers():
    empty = stack([])
    assert empty.shape == (0,) and empty.dtype == np.float64


def test_stack_returns_stacked_data_as_it_is():
    array = np.arange(3)
    assert stack(array) is array and stack(COLUMN) is COLUMN


def test_stack_rows_of_different_structures_name_the_odd_row():
    with pytest.raises(
        ArgumentError,
        match=re.escape(
            "stack() needs rows of one structure: expected dicts with keys ['a', 'b'], got a row {'a': 3}. "
            "Fix: give every row the same keys (or tuple length) as the first row (or the space)."
        ),
    ):
        stack([{"a": 1, "b": 2}, {"a": 3}])
    with pytest.raises(ArgumentError, match=r"expected tuples of 2, got a row \(1,\)"):
        stack([(1, 2), (1,)])


def test_concat_of_one_part_is_that_part_and_of_none_an_error():
    assert concat([COLUMN])["pos"] is COLUMN["pos"] and concat([COLUMN])["parts"][1] is COLUMN["parts"][1]
    assert concat([[1, 2], np.array([3])]).tolist() == [1, 2, 3]
    with pytest.raises(ArgumentError, match=re.escape("concat() got no parts to join. Fix: pass a list")):
        concat([])


def test_first_leaf_and_num_rows():
    assert first_leaf(COLUMN) is COLUMN["pos"] and num_rows(COLUMN) == 3
    assert num_rows({"obs": {"a": (np.zeros((4, 2)),)}, "actions": np.zeros(4)}) == 4
    assert first_leaf(np.zeros(2)).shape == (2,)
