"""NumpyToTensor: arrays (and nested arrays) → tensors, float64 → float32, no copy on the CPU."""

import numpy as np
import torch

from flywheel.connectors.env_to_module import NumpyToTensor


def test_arrays_become_tensors_sharing_memory():
    obs = np.arange(6, dtype=np.float32).reshape(3, 2)
    batch = NumpyToTensor()(rl_module=None, batch={"obs": obs}, episodes=[])
    assert isinstance(batch["obs"], torch.Tensor) and batch["obs"].dtype == torch.float32
    obs[0, 0] = 42.0
    assert batch["obs"][0, 0].item() == 42.0


def test_float64_becomes_float32_and_ints_keep_their_dtype():
    batch = NumpyToTensor()(
        rl_module=None, batch={"x": np.array([0.5, 1.5]), "i": np.array([1, 2], np.int64)}, episodes=[]
    )
    assert batch["x"].dtype == torch.float32 and batch["x"].tolist() == [0.5, 1.5]
    assert batch["i"].dtype == torch.int64


def test_nested_columns_convert_leaf_wise_and_other_values_stay():
    batch = {"state_in": {"h": np.ones((2, 3), np.float32)}, "flag": "keep"}
    batch = NumpyToTensor()(rl_module=None, batch=batch, episodes=[])
    assert isinstance(batch["state_in"]["h"], torch.Tensor) and batch["state_in"]["h"].shape == (2, 3)
    assert batch["flag"] == "keep"


def test_device_moves_tensors():
    piece = NumpyToTensor(device="cpu")
    assert piece.device == torch.device("cpu")
    assert repr(piece) == "NumpyToTensor(device=cpu)"
    batch = piece(rl_module=None, batch={"obs": np.zeros((1, 2), np.float32)}, episodes=[])
    assert batch["obs"].device == torch.device("cpu")
