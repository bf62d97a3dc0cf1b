import gymnasium as gym
import numpy as np
import pytest
import torch
from torch import nn

from flywheel.core.distributions import Categorical, DiagGaussian, distribution_for_space
from flywheel.core.models import (
    CNNEncoder,
    FreeLogStdHead,
    LSTMEncoder,
    MLPEncoder,
    OneHotMLPEncoder,
    build_encoder,
    build_policy_head,
    build_value_head,
    resolve_model_config,
)
from flywheel.errors import ModuleError

CFG = resolve_model_config({"fcnet_hiddens": [16, 8]})


@pytest.mark.parametrize(
    ("space", "cls", "dim"),
    [
        (gym.spaces.Box(-1, 1, (4,)), MLPEncoder, 8),
        (gym.spaces.MultiBinary(3), MLPEncoder, 8),
        (gym.spaces.Discrete(5), OneHotMLPEncoder, 8),
        (gym.spaces.MultiDiscrete([2, 3]), OneHotMLPEncoder, 8),
        (gym.spaces.Box(0, 255, (10, 10, 3), np.uint8), CNNEncoder, 32),
    ],
)
def test_encoder_per_observation_space(space, cls, dim):
    enc = build_encoder(space, CFG)
    assert type(enc) is cls and enc.output_dim == dim
    sample = torch.as_tensor(np.stack([space.sample(), space.sample()]))
    assert enc(sample).shape == (2, dim)


def test_first_layer_sizes_follow_the_space():
    assert build_encoder(gym.spaces.Discrete(5), CFG)[0].in_features == 5
    assert build_encoder(gym.spaces.MultiDiscrete([2, 3]), CFG)[0].in_features == 5


def test_lstm_wraps_the_stateless_encoder():
    enc = build_encoder(
        gym.spaces.Box(-1, 1, (4,)), resolve_model_config({"use_lstm": True, "lstm_cell_size": 7})
    )
    assert isinstance(enc, LSTMEncoder) and isinstance(enc.base, MLPEncoder)
    assert enc.output_dim == 7 and enc.lstm.input_size == 256


@pytest.mark.parametrize(
    "space",
    [
        gym.spaces.Dict({"a": gym.spaces.Box(-1, 1, (2,))}),
        gym.spaces.Tuple((gym.spaces.Discrete(2),)),
        gym.spaces.Box(-1, 1, (3, 4)),
    ],
)
def test_nested_and_2d_observations_ask_for_flattening(space):
    with pytest.raises(
        ModuleError,
        match=r"do not encode observations of space .*Fix: add flywheel.connectors.env_to_module.FlattenObservations via config.env_runners\(env_to_module_connector=",
    ):
        build_encoder(space, CFG)


def test_unsupported_observation_space_is_named():
    with pytest.raises(ModuleError, match=r"do not support observation space Text\("):
        build_encoder(gym.spaces.Text(5), CFG)


def test_unknown_conv_image_size_asks_for_conv_filters():
    with pytest.raises(ModuleError, match="No default conv_filters for images of shape"):
        build_encoder(gym.spaces.Box(0, 1, (32, 32, 3)), CFG)


def test_policy_head_size_from_distribution_and_torch_init():
    space = gym.spaces.Box(-1, 1, (3,))
    head = build_policy_head(8, space, DiagGaussian, CFG)
    assert isinstance(head, nn.Linear) and head.out_features == 6
    # torch's default Linear init (weights and biases within ±1/sqrt(fan_in)); log-std biases at log_std_init 0
    assert head.weight.abs().max() <= 8**-0.5 and head.weight.abs().max() > 0.5 * 8**-0.5
    assert head.bias[:3].abs().max() <= 8**-0.5 and torch.equal(head.bias[3:], torch.zeros(3))
    deep = build_policy_head(
        8, gym.spaces.Discrete(4), Categorical, resolve_model_config({"head_fcnet_hiddens": [5]})
    )
    assert [type(m) for m in deep] == [nn.Linear, nn.ReLU, nn.Linear] and deep[2].out_features == 4


def test_free_log_std_head():
    space = gym.spaces.Box(-1, 1, (2,))
    head = build_policy_head(8, space, DiagGaussian, resolve_model_config({"free_log_std": True}))
    assert isinstance(head, FreeLogStdHead) and head.mean_head.out_features == 2
    with torch.no_grad():
        head.log_std.copy_(torch.tensor([0.5, -0.5]))
    out = head(torch.zeros(3, 4, 8))
    assert out.shape == (3, 4, 4) and torch.equal(out[..., 2:], torch.tensor([0.5, -0.5]).expand(3, 4, 2))
    with pytest.raises(
        ModuleError, match="free_log_std=True needs a Gaussian action distribution .*got Categorical"
    ):
        build_policy_head(
            8, gym.spaces.Discrete(2), Categorical, resolve_model_config({"free_log_std": True})
        )


def test_value_head_outputs_one_unit_per_row_with_torch_init():
    head = build_value_head(8, CFG)
    assert head.out_features == 1 and 0 < head.weight.abs().max() <= 8**-0.5 and head.bias.abs() <= 8**-0.5


def test_policy_head_for_dict_actions():
    space = gym.spaces.Dict({"a": gym.spaces.Discrete(3), "b": gym.spaces.Box(-1, 1, (2,))})
    head = build_policy_head(8, space, distribution_for_space(space), CFG)
    assert head.out_features == 7
