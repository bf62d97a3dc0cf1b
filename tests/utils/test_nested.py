"""flywheel.utils.nested: rows of nested columns (dicts and tuples of numpy arrays or tensors)."""

import numpy as np
import torch

from flywheel.utils.nested import concat, take

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
