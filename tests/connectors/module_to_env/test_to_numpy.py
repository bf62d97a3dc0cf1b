"""TensorToNumpy: every tensor (nested too, with gradients too) becomes numpy."""

import numpy as np
import torch

from flywheel.connectors.module_to_env import TensorToNumpy


def test_tensors_become_arrays_and_other_values_stay():
    weights = torch.ones(2, requires_grad=True)
    batch = {
        "actions": torch.tensor([1, 0]),
        "logp": weights * 2.0,  # has a grad_fn
        "state_out": {"h": torch.zeros(2, 3), "c": [torch.ones(2)]},
        "note": "keep",
    }
    batch = TensorToNumpy()(rl_module=None, batch=batch, episodes=[])
    assert isinstance(batch["actions"], np.ndarray) and batch["actions"].dtype == np.int64
    np.testing.assert_array_equal(batch["logp"], [2.0, 2.0])
    assert batch["state_out"]["h"].shape == (2, 3) and isinstance(batch["state_out"]["h"], np.ndarray)
    np.testing.assert_array_equal(batch["state_out"]["c"][0], [1.0, 1.0])
    assert batch["note"] == "keep"


def test_inference_mode_tensors_convert():
    with torch.inference_mode():
        tensor = torch.arange(3.0)
    assert TensorToNumpy()(rl_module=None, batch={"x": tensor}, episodes=[])["x"].tolist() == [0.0, 1.0, 2.0]


def test_arrays_are_copies_that_later_tensor_writes_leave_alone():
    with torch.inference_mode():
        tensor = torch.arange(3.0)
    complex_view = torch.tensor([1 + 2j]).conj()  # numpy() refuses a conjugate view; it converts too
    batch = TensorToNumpy()(rl_module=None, batch={"x": tensor, "z": complex_view}, episodes=[])
    with torch.inference_mode():
        tensor.add_(10.0)
    assert batch["x"].tolist() == [0.0, 1.0, 2.0] and batch["x"].flags.owndata
    assert batch["z"].tolist() == [1 - 2j]
