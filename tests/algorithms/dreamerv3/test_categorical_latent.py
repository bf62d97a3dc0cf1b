"""1% unimix categoricals and straight-through one-hot samples."""

import pytest
import torch

from flywheel.algorithms.dreamerv3.categorical_latent import straight_through_sample, unimix_probs


def test_unimix_formula():
    logits = torch.tensor([[0.0, 0.0, 0.0, 0.0], [100.0, 0.0, 0.0, 0.0]])
    probs = unimix_probs(logits)
    assert torch.allclose(probs[0], torch.full((4,), 0.25))
    # 0.99 * one-hot + 0.01 / 4.
    assert torch.allclose(probs[1], torch.tensor([0.9925, 0.0025, 0.0025, 0.0025]), atol=1e-6)
    assert torch.allclose(probs.sum(-1), torch.ones(2))
    with pytest.raises(ValueError, match="must lie in"):
        unimix_probs(logits, 1.5)


def test_sample_is_one_hot_with_the_gradient_of_probs():
    logits = torch.randn(3, 32, 32, requires_grad=True)
    probs = unimix_probs(logits)
    sample = straight_through_sample(probs, torch.Generator().manual_seed(0))
    assert sample.shape == (3, 32, 32)
    assert torch.equal(sample.detach().sum(-1), torch.ones(3, 32))
    assert set(sample.detach().unique().tolist()) == {0.0, 1.0}
    weights = torch.randn(3, 32, 32)
    grad_sample = torch.autograd.grad((sample * weights).sum(), logits, retain_graph=True)[0]
    grad_probs = torch.autograd.grad((probs * weights).sum(), logits)[0]
    assert torch.allclose(grad_sample, grad_probs)


def test_sample_frequencies_follow_probs():
    probs = torch.tensor([0.7, 0.2, 0.1]).expand(20_000, 3)
    counts = straight_through_sample(probs, torch.Generator().manual_seed(3)).sum(0) / 20_000
    assert torch.allclose(counts, torch.tensor([0.7, 0.2, 0.1]), atol=0.01)
