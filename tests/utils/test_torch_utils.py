"""flywheel.utils.torch_utils: RLlib's torch helpers."""

import gymnasium as gym
import numpy as np
import pytest
import torch

from flywheel.errors import ArgumentError
from flywheel.utils.torch_utils import (
    FLOAT_MAX,
    FLOAT_MIN,
    convert_to_torch_tensor,
    explained_variance,
    global_norm,
    huber_loss,
    l2_loss,
    one_hot,
    sequence_mask,
)


def test_float_bounds_survive_float32():
    assert torch.tensor(FLOAT_MIN, dtype=torch.float32).isfinite() and FLOAT_MIN == -FLOAT_MAX == -3.4e38
    masked = torch.tensor([1.0, 2.0]) + torch.clamp(torch.log(torch.tensor([1.0, 0.0])), min=FLOAT_MIN)
    assert masked.argmax() == 0 and masked.isfinite().all()


def test_one_hot_discrete_and_multi_discrete():
    assert one_hot(torch.IntTensor([0, 3]), gym.spaces.Discrete(4)).tolist() == [[1, 0, 0, 0], [0, 0, 0, 1]]
    out = one_hot(torch.IntTensor([[0, 1, 2, 3]]), gym.spaces.MultiDiscrete([5, 4, 4, 7]))
    assert out.tolist() == [[1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0]]
    nested = one_hot(torch.tensor([[[1, 0], [0, 1]]]), gym.spaces.MultiDiscrete([[2, 2], [2, 2]]))
    assert nested.tolist() == [[0, 1, 1, 0, 1, 0, 0, 1]]
    with pytest.raises(ArgumentError, match=r"one_hot needs a Discrete or MultiDiscrete space; got Box"):
        one_hot(torch.zeros(1), gym.spaces.Box(0, 1))


def test_convert_to_torch_tensor_maps_structures_and_makes_floats_float32():
    out = convert_to_torch_tensor(
        {"a": np.zeros(2, dtype=np.float64), "b": [np.arange(2)], "c": None, "d": np.array(["x"]), "e": 1.5}
    )
    assert out["a"].dtype == torch.float32 and out["b"][0].dtype == torch.int64
    assert out["c"] is None and out["d"].tolist() == ["x"]  # string arrays stay numpy
    assert out["e"].dtype == torch.float32 and out["e"].item() == 1.5
    half = convert_to_torch_tensor(torch.zeros(1, dtype=torch.float16))
    assert half.dtype == torch.float16


def test_explained_variance_matches_rllib_formula():
    y = torch.tensor([1.0, 2.0, 3.0, 4.0])
    assert explained_variance(y, y).item() == pytest.approx(1.0)
    assert explained_variance(y, torch.full((4,), 2.5)).item() == pytest.approx(0.0, abs=1e-5)
    assert explained_variance(y, -10 * y).item() == -1.0  # floored
    pred = torch.tensor([1.5, 2.0, 2.5, 4.5])
    expected = 1 - torch.var(y - pred) / (torch.var(y) + 1e-6)
    assert explained_variance(y[:, None], pred[:, None]).item() == pytest.approx(expected.item())


def test_losses_and_global_norm():
    x = torch.tensor([-3.0, 0.5, 2.0])
    assert huber_loss(x).tolist() == [2.5, 0.125, 1.5]
    assert huber_loss(x, delta=2.0).tolist() == [4.0, 0.125, 2.0]
    assert l2_loss(x).item() == pytest.approx(0.5 * (9 + 0.25 + 4))
    assert global_norm([torch.tensor([3.0]), torch.tensor([[4.0]])]).item() == pytest.approx(5.0)


def test_sequence_mask():
    lengths = torch.tensor([1, 3])
    assert sequence_mask(lengths).tolist() == [[True, False, False], [True, True, True]]
    assert sequence_mask(lengths, maxlen=4, dtype=torch.float32).tolist() == [[1, 0, 0, 0], [1, 1, 1, 0]]
    assert sequence_mask(lengths, time_major=True).shape == (3, 2)
