"""KL balancing with free bits: values, the clip and where each term's gradient goes."""

import math

import torch

from flywheel.algorithms.dreamerv3.kl_balancing import categorical_kl, kl_balancing


def test_categorical_kl_by_hand():
    p = torch.tensor([[[0.5, 0.5], [1.0, 0.0]]])  # two categoricals of two classes
    q = torch.tensor([[[0.25, 0.75], [0.5, 0.5]]])
    expected = 0.5 * math.log(2.0) + 0.5 * math.log(0.5 / 0.75) + math.log(2.0)
    assert math.isclose(categorical_kl(p, q).item(), expected, rel_tol=1e-6)
    assert categorical_kl(q, q).item() == 0.0


def test_free_bits_and_weights():
    post = torch.tensor([[[0.9, 0.1]] * 4, [[0.5, 0.5]] * 4])
    prior = torch.tensor([[[0.1, 0.9]] * 4, [[0.45, 0.55]] * 4])
    kl = categorical_kl(post, prior)
    big = 4 * (0.9 * math.log(9.0) + 0.1 * math.log(1 / 9.0))
    assert math.isclose(kl[0].item(), big, rel_tol=1e-5) and kl[1].item() < 1.0
    result = kl_balancing(post, prior)
    assert torch.allclose(result.dynamics, torch.tensor([big, 1.0]))
    assert torch.allclose(result.representation, torch.tensor([big, 1.0]))
    assert torch.allclose(result.loss, torch.tensor([0.6 * big, 0.6]))


def test_gradients_split_between_prior_and_posterior():
    post_logits = torch.tensor([[2.0, -1.0, 0.0]], requires_grad=True)
    prior_logits = torch.tensor([[-1.0, 1.0, 0.5]], requires_grad=True)
    post, prior = torch.softmax(post_logits, -1)[None], torch.softmax(prior_logits, -1)[None]
    result = kl_balancing(post, prior, free_bits=0.0)
    g_post, g_prior = torch.autograd.grad(result.loss.sum(), [post_logits, prior_logits], retain_graph=True)
    kl = categorical_kl(post, prior).sum()
    full_post, full_prior = torch.autograd.grad(kl, [post_logits, prior_logits], retain_graph=True)
    assert torch.allclose(g_post, 0.1 * full_post) and torch.allclose(g_prior, 0.5 * full_prior)
    assert kl.item() > 1.0
    # Under the free bits (KL < 1 nat) nothing learns.
    near = torch.softmax(post_logits * 0.1, -1)[None]
    assert categorical_kl(near, prior).item() < 1.0
    clipped = kl_balancing(near, prior).loss.sum()
    assert all(g.abs().sum() == 0 for g in torch.autograd.grad(clipped, [post_logits, prior_logits]))
