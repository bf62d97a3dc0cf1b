"""flywheel.utils.numpy: RLlib's numpy helpers (convert_to_numpy, one_hot, softmax)."""

import subprocess
import sys

import numpy as np
import pytest
import torch

from flywheel.errors import ArgumentError
from flywheel.utils.numpy import LARGE_INTEGER, SMALL_NUMBER, convert_to_numpy, one_hot, softmax


def test_convert_to_numpy_maps_nested_tensors_and_reduces_types():
    data = {
        "a": torch.ones(2, dtype=torch.float64, requires_grad=True),
        "b": (torch.tensor(3), [torch.arange(3)]),
        "c": np.zeros(2, dtype=np.int64),
        "d": "text",
        "e": np.zeros(1, dtype=np.uint8),
    }
    out = convert_to_numpy(data)
    assert out["a"].dtype == np.float32 and out["a"].tolist() == [1.0, 1.0]
    assert out["b"][0] == 3 and type(out["b"][0]) is int
    assert out["b"][1][0].dtype == np.int32 and out["b"][1][0].tolist() == [0, 1, 2]
    assert out["c"].dtype == np.int32  # numpy arrays are reduced too, as in RLlib
    assert out["d"] == "text" and out["e"].dtype == np.uint8
    kept = convert_to_numpy({"a": torch.ones(2, dtype=torch.float64)}, reduce_type=False)
    assert kept["a"].dtype == np.float64


def test_one_hot_with_given_inferred_and_bool_depth():
    assert one_hot(np.array([0, 2]), depth=3).tolist() == [[1, 0, 0], [0, 0, 1]]
    assert one_hot(np.array([[1], [0]])).shape == (2, 1, 2)
    assert one_hot(np.array([True, False])).tolist() == [[0, 1], [1, 0]]
    assert one_hot(torch.tensor([1]), depth=2, on_value=5.0, off_value=-1.0).tolist() == [[-1.0, 5.0]]
    assert one_hot(1, depth=3).dtype == np.float32
    with pytest.raises(
        ArgumentError, match=r"one_hot: every index must be in \[0, 2\); got values from 0 to 2\."
    ):
        one_hot(np.array([0, 2]), depth=2)


def test_softmax_sums_to_one_floors_at_epsilon_and_takes_large_inputs():
    probs = softmax([1.0, 2.0, 3.0])
    assert probs.sum() == pytest.approx(1.0)
    assert probs.tolist() == pytest.approx(np.exp([1, 2, 3]) / np.exp([1, 2, 3]).sum())
    assert softmax(np.array([[0, 1000]]), axis=-1).tolist() == [[SMALL_NUMBER, 1.0]]
    assert LARGE_INTEGER == 100_000_000


def test_importing_does_not_import_torch():
    code = "import sys, flywheel.utils.numpy, flywheel.metrics; print('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout == "False\n"
