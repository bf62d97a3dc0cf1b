"""Builds the default encoders and heads from spaces and a resolved `model_config`.

Default modules of every algorithm (PPO, DQN, SAC) use these, so one observation space
always gets the same encoder and one `model_config` key means the same thing everywhere.
"""

from __future__ import annotations

import gymnasium as gym
import torch
from torch import nn

from flywheel.core.distributions import DiagGaussian, Distribution
from flywheel.core.models.cnn import CNNEncoder
from flywheel.core.models.config import default_conv_filters
from flywheel.core.models.lstm import LSTMEncoder
from flywheel.core.models.mlp import MLPEncoder, OneHotMLPEncoder, mlp
from flywheel.errors import ModuleError

ENCODER_OUT = "encoder_out"
"""The key under which RLlib's encoders return their output (modules that share an encoder use it)."""

# Output-layer scales: a near-uniform initial policy, a unit-scale initial value estimate.
POLICY_OUTPUT_STD = 0.01
VALUE_OUTPUT_STD = 1.0


def build_encoder(observation_space: gym.Space, model_config: dict) -> nn.Module:
    """The encoder for `observation_space`: `MLPEncoder`, `OneHotMLPEncoder` or `CNNEncoder`,
    wrapped in an `LSTMEncoder` when `use_lstm`. Every encoder has `output_dim`."""
    base = _stateless_encoder(observation_space, model_config)
    if model_config["use_lstm"]:
        return LSTMEncoder(base, model_config["lstm_cell_size"])
    return base


def _stateless_encoder(space: gym.Space, cfg: dict) -> nn.Module:
    hiddens, act = cfg["fcnet_hiddens"], cfg["fcnet_activation"]
    if isinstance(space, gym.spaces.Box | gym.spaces.MultiBinary) and len(space.shape) == 1:
        return MLPEncoder(space.shape[0], hiddens, act)
    if isinstance(space, gym.spaces.Box) and len(space.shape) == 3:
        filters = cfg["conv_filters"] or default_conv_filters(space.shape)
        return CNNEncoder(space.shape, filters, cfg["conv_activation"])
    if isinstance(space, gym.spaces.Discrete):
        return OneHotMLPEncoder([int(space.n)], hiddens, act, scalar=True)
    if isinstance(space, gym.spaces.MultiDiscrete) and space.nvec.ndim == 1:
        return OneHotMLPEncoder([int(n) for n in space.nvec], hiddens, act, scalar=False)
    if isinstance(space, gym.spaces.Dict | gym.spaces.Tuple | gym.spaces.Box):
        raise ModuleError(
            f"The default models do not encode observations of space {space} (nested, or a Box "
            "that is neither 1-D nor an (H, W, C) image). Fix: add "
            "flywheel.connectors.env_to_module.FlattenObservations via "
            "config.env_runners(env_to_module_connector=lambda env, spaces, device: FlattenObservations()), "
            "or write a custom RLModule."
        )
    raise ModuleError(
        f"The default models do not support observation space {space}. Supported: 1-D Box, "
        "(H, W, C) Box images, Discrete, MultiDiscrete, MultiBinary. Fix: write a custom RLModule."
    )


class FreeLogStdHead(nn.Module):
    """Means from `mean_head`, concatenated with one learned log-std per action dimension."""

    def __init__(self, mean_head: nn.Module, action_size: int):
        super().__init__()
        self.mean_head = mean_head
        self.log_std = nn.Parameter(torch.zeros(action_size))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mean = self.mean_head(x)
        return torch.cat([mean, self.log_std.expand_as(mean)], dim=-1)


def build_policy_head(
    input_dim: int, action_space: gym.Space, dist_cls: type[Distribution], model_config: dict
) -> nn.Module:
    """Embeddings → `ACTION_DIST_INPUTS` of size `dist_cls.required_input_dim(action_space)`."""
    out_dim = dist_cls.required_input_dim(action_space)
    hiddens, act = model_config["head_fcnet_hiddens"], model_config["head_fcnet_activation"]
    if not model_config["free_log_std"]:
        return mlp(input_dim, hiddens, act, out_dim, output_std=POLICY_OUTPUT_STD)
    if not issubclass(dist_cls, DiagGaussian):
        raise ModuleError(
            f"free_log_std=True needs a Gaussian action distribution (Box actions), got "
            f"{dist_cls.__name__} for action space {action_space}. Fix: set free_log_std=False."
        )
    mean_head = mlp(input_dim, hiddens, act, out_dim // 2, output_std=POLICY_OUTPUT_STD)
    return FreeLogStdHead(mean_head, out_dim // 2)


def build_value_head(input_dim: int, model_config: dict) -> nn.Module:
    """Embeddings → one value per row (`[..., 1]`)."""
    hiddens, act = model_config["head_fcnet_hiddens"], model_config["head_fcnet_activation"]
    return mlp(input_dim, hiddens, act, 1, output_std=VALUE_OUTPUT_STD)
