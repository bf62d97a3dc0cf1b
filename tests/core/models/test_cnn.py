import pytest
import torch
from torch import nn

from flywheel.core.models import CNNEncoder
from flywheel.core.models.config import default_conv_filters
from flywheel.errors import ModuleError


def test_default_84x84_stack_ends_in_1x1x256():
    enc = CNNEncoder((84, 84, 3), default_conv_filters((84, 84, 3)), "relu")
    assert enc.output_dim == 256
    out = enc(torch.zeros(2, 84, 84, 3, dtype=torch.uint8))
    assert out.shape == (2, 256) and out.dtype == torch.float32
    convs = [m for m in enc.net if isinstance(m, nn.Conv2d)]
    assert [(c.in_channels, c.out_channels, c.kernel_size, c.stride) for c in convs] == [
        (3, 16, (8, 8), (4, 4)),
        (16, 32, (4, 4), (2, 2)),
        (32, 256, (11, 11), (1, 1)),
    ]


@pytest.mark.parametrize(
    ("shape", "dim"),
    [((96, 96, 3), 256), ((64, 64, 3), 128 * 3 * 3), ((42, 42, 1), 256), ((10, 10, 2), 32)],
)
def test_default_stacks_for_other_sizes(shape, dim):
    enc = CNNEncoder(shape, default_conv_filters(shape), "relu")
    assert enc.output_dim == dim
    assert enc(torch.zeros(1, *shape)).shape == (1, dim)


def test_custom_filters_int_kernels_and_leading_dims():
    enc = CNNEncoder((12, 12, 1), [[4, 3, 2], [8, 3, 1]], "linear")
    # "same" 12 -> 6, then "valid" 3x3: 6 -> 4.
    assert enc.output_dim == 8 * 4 * 4
    assert enc(torch.zeros(2, 5, 12, 12, 1)).shape == (2, 5, 128)


def test_channels_last_layout_is_respected():
    enc = CNNEncoder((2, 2, 3), [[1, 1, 1]], "linear")
    conv = enc.net[0]
    with torch.no_grad():
        conv.weight.copy_(torch.tensor([1.0, 10.0, 100.0]).view(1, 3, 1, 1))
        conv.bias.zero_()
    image = torch.zeros(1, 2, 2, 3)
    image[0, 1, 0] = torch.tensor([1.0, 2.0, 3.0])  # pixel (row 1, col 0), channels last
    assert enc(image).tolist() == [[0.0, 0.0, 321.0, 0.0]]


def test_filters_that_shrink_the_image_to_nothing():
    with pytest.raises(ModuleError, match=r"shrink a \(10, 10, 1\) image to nothing at layer 1"):
        CNNEncoder((10, 10, 1), [[4, 3, 2], [8, 7, 1]], "relu")


def test_uint8_pixels_are_scaled_to_the_unit_interval_other_dtypes_are_not():
    enc = CNNEncoder((1, 1, 1), [[1, 1, 1]], "linear")
    with torch.no_grad():
        enc.net[0].weight.fill_(1.0)
        enc.net[0].bias.zero_()
    pixels = torch.tensor([0, 51, 255], dtype=torch.uint8).view(3, 1, 1, 1)
    assert enc(pixels).squeeze(-1).tolist() == pytest.approx([0.0, 0.2, 1.0])
    flags = torch.tensor([False, True]).view(2, 1, 1, 1)
    assert enc(flags).squeeze(-1).tolist() == [0.0, 1.0]
    assert enc(torch.tensor([51.0]).view(1, 1, 1, 1)).item() == 51.0


def test_weights_are_channels_last_and_survive_a_checkpoint_round_trip(tmp_path):
    import gymnasium as gym
    import numpy as np

    from flywheel import Columns, RLModule
    from flywheel.algorithms.ppo.rl_module import DefaultPPOTorchRLModule

    space = gym.spaces.Box(0, 255, (42, 42, 4), np.uint8)
    module = DefaultPPOTorchRLModule(observation_space=space, action_space=gym.spaces.Discrete(3))
    conv = next(m for m in module.encoder.actor_encoder.net if isinstance(m, nn.Conv2d))
    assert conv.weight.is_contiguous(memory_format=torch.channels_last) and not conv.weight.is_contiguous()
    obs = torch.randint(0, 255, (2, 42, 42, 4), dtype=torch.uint8)
    restored = RLModule.from_checkpoint(module.save_to_path(tmp_path / "m"))
    expected = module.forward_inference({Columns.OBS: obs})[Columns.ACTION_DIST_INPUTS]
    assert torch.equal(restored.forward_inference({Columns.OBS: obs})[Columns.ACTION_DIST_INPUTS], expected)
