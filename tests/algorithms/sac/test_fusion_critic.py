"""SAC's `fusionnet_*` model_config keys (RLlib 2.60's critic for Box actions): the FusionEncoder by hand,
the layers SAC builds from them, a rebuilt module keeping its critics, and the modules that refuse them."""

import gymnasium as gym
import numpy as np
import pytest
import torch
from torch import nn

from flywheel import Columns, DQNConfig, PPOConfig, SACConfig
from flywheel.algorithms.sac.rl_module import QF_PREDS, DefaultSACTorchRLModule
from flywheel.core.models import FusionEncoder, MLPEncoder
from flywheel.core.rl_module.default_model_config import DefaultModelConfig
from flywheel.errors import ModuleError

OBS = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)
ACT = gym.spaces.Box(-2.0, 2.0, (2,), np.float32)
DISCRETE = gym.spaces.Discrete(2)


def set_layer(layer: nn.Linear, weight, bias):
    with torch.no_grad():
        layer.weight.copy_(torch.tensor(weight))
        layer.bias.copy_(torch.tensor(bias))


def test_fusion_encoder_by_hand():
    # Streams: x[:1] through a 1 -> 1 linear layer (x2), x[1:] through 2 -> 1 (sum); e = [2 x0, x1 + x2].
    first, second = MLPEncoder(1, [1], "linear"), MLPEncoder(2, [1], "linear")
    set_layer(first[0], [[2.0]], [0.0])
    set_layer(second[0], [[1.0, 1.0]], [0.0])
    encoder = FusionEncoder([(1, first), (2, second)], [1, 1], "relu", 2)
    set_layer(encoder.fusion[0], [[1.0, -1.0]], [0.0])  # h1 = relu(e0 - e1)
    set_layer(encoder.fusion[1], [[1.0, 1.0, 0.0]], [-1.0])  # h2 = relu(h1 + e0 - 1): reads [h1, e]
    set_layer(encoder.output, [[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]], [0.0, 0.0])  # relu([h2, e1]): reads [h2, e]
    x = torch.tensor([[1.0, 0.5, -0.5], [0.5, 2.0, 1.0]])
    # Row 0: e = [2, 0], h1 = 2, h2 = 3, out = [3, 0]. Row 1: e = [1, 3], h1 = 0, h2 = 0, out = [0, 3].
    torch.testing.assert_close(encoder(x), torch.tensor([[3.0, 0.0], [0.0, 3.0]]))
    assert encoder.output_dim == 2


def layer_shapes(module: nn.Module) -> list[tuple[int, ...]]:
    return [tuple(p.shape) for name, p in module.named_parameters() if name.endswith("weight")]


def test_sac_builds_rllibs_critic_from_the_fusion_keys():
    model_config = {"fcnet_hiddens": [8, 4], "fusionnet_hiddens": [16, 6], "fusionnet_activation": "relu"}
    module = DefaultSACTorchRLModule(OBS, ACT, model_config={**model_config, "twin_q": True})
    for encoder in (module.qf_encoder, module.qf_twin_encoder, module.target_qf_encoder):
        assert isinstance(encoder, FusionEncoder)
        # obs 3 -> 8 -> 4 and actions 2 -> 8 -> 4; fusion 8 -> 16, [16, e] -> 6; output [6, e] -> 4 (the obs width).
        assert layer_shapes(encoder) == [(8, 3), (4, 8), (8, 2), (4, 8), (16, 8), (6, 24), (4, 14)]
        assert isinstance(encoder.activation, nn.ReLU)
    assert layer_shapes(module.pi_encoder) == [(8, 3), (4, 8)]  # the policy is as without fusion keys
    batch = {Columns.OBS: torch.zeros(5, 3), Columns.ACTIONS: torch.zeros(5, 2)}
    assert module.compute_q_values(batch)[QF_PREDS].shape == (5,)
    # Rebuilt from its (resolved) model_config, as a checkpoint does, the module has the same layers.
    _, kwargs = module.get_ctor_args_and_kwargs()
    DefaultSACTorchRLModule(**kwargs).load_state_dict(module.state_dict())


def test_without_fusion_keys_the_critic_reads_obs_and_action_in_one_mlp():
    module = DefaultSACTorchRLModule(OBS, ACT, model_config={"fcnet_hiddens": [8], "twin_q": False})
    assert isinstance(module.qf_encoder, MLPEncoder) and layer_shapes(module.qf_encoder) == [(8, 5)]
    assert not any(key.startswith("fusionnet_") for key in module.model_config)
    _, kwargs = module.get_ctor_args_and_kwargs()
    assert isinstance(DefaultSACTorchRLModule(**kwargs).qf_encoder, MLPEncoder)


def test_a_default_model_config_means_rllibs_critic():
    config = SACConfig().rl_module(model_config=DefaultModelConfig(fcnet_hiddens=[8]))
    module = config.get_rl_module_spec(spaces=(OBS, ACT)).build()
    assert isinstance(module.qf_encoder, FusionEncoder)
    assert [layer.out_features for layer in module.qf_encoder.fusion] == [256, 256]  # RLlib's default
    assert isinstance(module.qf_encoder.activation, nn.Tanh)


@pytest.mark.parametrize(
    ("config", "module"),
    [
        (PPOConfig(), "DefaultPPOTorchRLModule"),
        (DQNConfig(), "DefaultDQNTorchRLModule"),
        (SACConfig(), "DefaultSACTorchRLModule with Discrete actions"),
    ],
)
def test_modules_without_a_fusion_net_refuse_its_keys(config, module):
    with pytest.raises(ModuleError) as info:
        config.rl_module(model_config={"fusionnet_hiddens": [64]}).get_rl_module_spec(
            spaces=(OBS, DISCRETE)
        ).build()
    assert (
        f"model_config['fusionnet_hiddens']=[64]: {module} does not use fusionnet_hiddens. Fix: remove it."
        in str(info.value)
    )
