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


def _linear():
    torch.manual_seed(0)
    return torch.nn.Linear(3, 2)


def test_forward_of_a_module_without_hooks_is_its_forward_and_gives_the_call_result():
    layer, x = _linear(), torch.randn(4, 3)
    assert compat.forward_of(layer) == layer.forward
    assert torch.equal(compat.forward_of(layer)(x), layer(x))


@pytest.mark.parametrize(
    "register",
    [
        lambda m, seen: m.register_forward_hook(lambda mod, args, out: seen.append("forward")),
        lambda m, seen: m.register_forward_pre_hook(lambda mod, args: seen.append("pre")),
        lambda m, seen: m.register_full_backward_hook(lambda mod, gin, gout: seen.append("backward")),
        lambda m, seen: m.register_full_backward_pre_hook(lambda mod, gout: seen.append("backward_pre")),
        lambda m, seen: torch.nn.modules.module.register_module_forward_hook(
            lambda mod, args, out: seen.append("global")
        ),
        lambda m, seen: torch.nn.modules.module.register_module_forward_pre_hook(
            lambda mod, args: seen.append("global_pre")
        ),
    ],
    ids=["forward", "forward_pre", "backward", "backward_pre", "global_forward", "global_forward_pre"],
)
def test_forward_of_a_module_with_hooks_is_the_module_so_the_hooks_run(register):
    layer, seen = _linear(), []
    handle = register(layer, seen)
    try:
        target = compat.forward_of(layer)
        assert target is layer
        target(torch.randn(4, 3, requires_grad=True)).sum().backward()
        assert seen
    finally:
        handle.remove()
    assert compat.forward_of(layer) == layer.forward


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_forward_of_a_compiled_or_traced_module_is_the_module():
    layer = _linear()
    layer.compile()  # (compiles lazily, at the first call: not called here)
    assert compat.forward_of(layer) is layer
    traced = []

    class Probe(torch.nn.Module):
        def forward(self, x):
            traced.append(compat.forward_of(self) is self)
            return x * 2

    torch.jit.trace(Probe(), torch.ones(2), check_trace=False)
    assert traced == [True]


def test_child_reads_registered_modules_and_falls_back_to_getattr():
    parent = torch.nn.Module()
    parent.head = head = _linear()
    parent.scale = 2.0
    assert compat.child(parent, "head") is head
    assert compat.child(parent, "scale") == 2.0
    with pytest.raises(AttributeError, match="missing"):
        compat.child(parent, "missing")
