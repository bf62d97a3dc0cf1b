"""torch_grads: the global norm and in-place clipping (on flywheel.compat's foreach functions) match the
plain formulas."""

import numpy as np
import pytest
import torch

from flywheel.core.learner.torch_grads import clip_, global_norm


def grads():
    return [torch.tensor([3.0, -4.0]), torch.tensor([[12.0]]), torch.tensor([0.5, -0.5, 0.0])]


def plain(tensors):
    return [t.numpy().copy() for t in tensors]


def test_global_norm_is_the_norm_of_everything_together():
    expected = np.sqrt(sum(np.sum(g**2) for g in plain(grads())))
    assert float(global_norm(grads())) == pytest.approx(expected)
    assert float(global_norm([])) == 0.0


def test_clip_by_value_clamps_every_entry():
    tensors = grads()
    clip_(tensors, 1.0, "value", global_norm(tensors))
    assert [t.tolist() for t in tensors] == [[1.0, -1.0], [[1.0]], [0.5, -0.5, 0.0]]


def test_clip_by_norm_scales_each_tensor_to_at_most_the_threshold():
    tensors, before = grads(), plain(grads())
    clip_(tensors, 2.0, "norm", global_norm(tensors))
    for after, raw in zip(plain(tensors), before, strict=True):
        norm = np.linalg.norm(raw)
        np.testing.assert_allclose(after, raw * min(1.0, 2.0 / (norm + 1e-6)), rtol=1e-6)


def test_clip_by_global_norm_scales_all_tensors_alike():
    tensors, before = grads(), plain(grads())
    norm = global_norm(tensors)
    clip_(tensors, 6.5, "global_norm", norm)
    scale = 6.5 / (float(norm) + 1e-6)
    for after, raw in zip(plain(tensors), before, strict=True):
        np.testing.assert_allclose(after, raw * scale, rtol=1e-6)
    small = [torch.tensor([0.1])]
    clip_(small, 6.5, "global_norm", global_norm(small))  # below the threshold: unchanged
    assert small[0].tolist() == pytest.approx([0.1])
