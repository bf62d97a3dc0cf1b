"""Two-hot encoding in symlog space (RLlib 2.60's 255 buckets over -20..20) and its inverse."""

import math

import pytest
import torch

from flywheel.algorithms.dreamerv3.symlog import symlog
from flywheel.algorithms.dreamerv3.two_hot import TwoHot


def test_small_range_by_hand():
    # Buckets -1, -0.5, 0, 0.5, 1: 0.1 lies a fifth of the way from 0 to 0.5.
    two_hot = TwoHot(5, -1.0, 1.0)
    target = two_hot.encode_symlog(torch.tensor([0.1, -1.0, 1.0, 0.5]))
    assert torch.allclose(target[0], torch.tensor([0.0, 0.0, 0.8, 0.2, 0.0]))
    assert target[1].tolist() == [1.0, 0.0, 0.0, 0.0, 0.0]
    assert target[2].tolist() == [0.0, 0.0, 0.0, 0.0, 1.0]
    assert torch.allclose(target[3], torch.tensor([0.0, 0.0, 0.0, 1.0, 0.0]))


def test_rllib_buckets_and_clipping():
    two_hot = TwoHot()
    buckets = two_hot.buckets()
    assert buckets.shape == (255,) and buckets[0] == -20.0 and buckets[-1] == 20.0
    assert math.isclose(buckets[128].item() - buckets[127].item(), 40.0 / 254, rel_tol=1e-5)
    # Beyond the range: the end bucket, fully.
    target = two_hot.encode(torch.tensor([1e12, -1e12]))
    assert target[0, -1] == 1.0 and target[1, 0] == 1.0 and target.sum().item() == 2.0


def test_expectation_recovers_the_value():
    two_hot = TwoHot()
    x = torch.tensor([-1234.5, -1.0, 0.0, 0.37, 1.0, 500.0, 2e6], dtype=torch.float64)
    target = two_hot.encode(x)
    assert torch.allclose(target.sum(-1), torch.ones(7, dtype=torch.float32))
    assert ((target > 0).sum(-1) <= 2).all()
    symlog_mean = (target * two_hot.buckets()).sum(-1).double()
    assert torch.allclose(symlog_mean, symlog(x), atol=1e-5)


def test_decode_inverts_encode_through_logits():
    # Logits whose softmax is the two-hot target (log of it; zeros -> -inf) decode to the value itself.
    two_hot = TwoHot()
    x = torch.tensor([-42.0, 0.25, 3.0, 900.0])
    logits = torch.log(two_hot.encode(x))
    assert torch.allclose(two_hot.decode(logits), x, rtol=1e-4)
    assert torch.allclose(two_hot.decode_symlog(logits), symlog(x), atol=1e-5)


def test_cross_entropy_is_minimal_at_the_target():
    two_hot = TwoHot(5, -1.0, 1.0)
    y = torch.tensor([0.1])  # symlog(x) = 0.1 -> target [0, 0, 0.8, 0.2, 0]
    x = torch.expm1(y)
    uniform = torch.zeros(1, 5)
    assert math.isclose(two_hot.cross_entropy(uniform, x).item(), math.log(5.0), rel_tol=1e-6)
    exact = torch.log(torch.tensor([[1e-9, 1e-9, 0.8, 0.2, 1e-9]]))
    entropy = -(0.8 * math.log(0.8) + 0.2 * math.log(0.2))
    assert math.isclose(two_hot.cross_entropy(exact, x).item(), entropy, rel_tol=1e-4)


def test_bad_range_is_refused():
    with pytest.raises(ValueError, match="lower < upper"):
        TwoHot(255, 20.0, -20.0)
