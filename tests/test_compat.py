"""flywheel.compat: each wrapper of another library's private API gives what the public formula it
stands for gives, so a torch or gymnasium release that changes one fails here first."""

import gymnasium as gym
import numpy as np
import pytest
import torch

from flywheel import compat


@pytest.fixture
def tensors():
    torch.manual_seed(0)
    return [torch.randn(3, 4), torch.randn(5), torch.randn(2, 2, 2)]


def test_foreach_norm(tensors):
    expected = [torch.linalg.vector_norm(t) for t in tensors]
    for got, want in zip(compat.foreach_norm(tensors), expected, strict=True):
        torch.testing.assert_close(got, want)


def test_foreach_clamp_(tensors):
    expected = [t.clamp(-0.5, 0.25) for t in tensors]
    compat.foreach_clamp_(tensors, -0.5, 0.25)
    for got, want in zip(tensors, expected, strict=True):
        torch.testing.assert_close(got, want)


def test_foreach_mul_by_one_factor_and_by_one_per_tensor(tensors):
    expected = [t * 0.5 * (i + 1) for i, t in enumerate(tensors)]
    compat.foreach_mul_(tensors, torch.tensor(0.5))
    compat.foreach_mul_(tensors, [torch.tensor(float(i + 1)) for i in range(len(tensors))])
    for got, want in zip(tensors, expected, strict=True):
        torch.testing.assert_close(got, want)


def test_foreach_copy_and_lerp_(tensors):
    targets = [torch.zeros_like(t) for t in tensors]
    compat.foreach_lerp_(targets, tensors, 0.25)
    for got, source in zip(targets, tensors, strict=True):
        torch.testing.assert_close(got, 0.25 * source)
    compat.foreach_copy_(targets, tensors)
    for got, source in zip(targets, tensors, strict=True):
        assert torch.equal(got, source) and got.data_ptr() != source.data_ptr()


def test_add_vector_info_builds_gymnasiums_batched_infos():
    vector_env = gym.vector.SyncVectorEnv([lambda: gym.make("CartPole-v1")] * 3)
    infos = compat.add_vector_info(vector_env, {}, {"lives": 2}, 1)
    infos = compat.add_vector_info(vector_env, infos, {"lives": 5}, 2)
    vector_env.close()
    assert sorted(infos) == ["_lives", "lives"]
    assert infos["lives"].tolist() == [0, 2, 5] and infos["_lives"].tolist() == [False, True, True]
    assert infos["lives"].dtype == np.int64
