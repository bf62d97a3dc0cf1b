"""Builds the default encoders and heads from spaces and a resolved `model_config`.

Default modules of every algorithm (PPO, DQN, SAC) use these, so one observation space
always gets the same encoder and one `model_config` key means the same thing everywhere.
"""

from __future__ import annotations

import functools
import math

import gymnasium as gym
import torch
from torch import nn

from flywheel.core.distributions import DiagGaussian, Distribution
from flywheel.core.models.cnn import CNNEncoder
from flywheel.core.models.config import default_conv_filters
from flywheel.core.models.initializers import LayerInit
from flywheel.core.models.lstm import LSTMEncoder
from flywheel.core.models.mlp import MLPEncoder, OneHotMLPEncoder, mlp
from flywheel.errors import ModuleError

ENCODER_OUT = "encoder_out"
"""The key under which RLlib's encoders return their output (modules that share an encoder use it)."""

Encoder = MLPEncoder | OneHotMLPEncoder | CNNEncoder | LSTMEncoder
"""What `build_encoder` returns: every encoder has `output_dim` (the size of its embeddings)."""


def build_encoder(observation_space: gym.Space | None, model_config: dict) -> Encoder:
    """The encoder for `observation_space`: `MLPEncoder`, `OneHotMLPEncoder` or `CNNEncoder`,
    wrapped in an `LSTMEncoder` when `use_lstm`. Every encoder has `output_dim`."""
    base = _stateless_encoder(observation_space, model_config)
    if model_config["use_lstm"]:
        return LSTMEncoder(base, model_config["lstm_cell_size"])
    return base


def build_mlp_encoder(input_dim: int, model_config: dict) -> MLPEncoder:
    """An `MLPEncoder` over `fcnet_hiddens` with `fcnet_activation` and the `fcnet_*_initializer`s."""
    init = LayerInit.from_model_config(model_config, "fcnet")
    return MLPEncoder(input_dim, model_config["fcnet_hiddens"], model_config["fcnet_activation"], init)


def _stateless_encoder(space: gym.Space | None, cfg: dict) -> MLPEncoder | OneHotMLPEncoder | CNNEncoder:
    hiddens, act = cfg["fcnet_hiddens"], cfg["fcnet_activation"]
    init = LayerInit.from_model_config(cfg, "fcnet")
    if isinstance(space, gym.spaces.Box | gym.spaces.MultiBinary) and len(space.shape) == 1:
        return build_mlp_encoder(space.shape[0], cfg)
    if isinstance(space, gym.spaces.Box) and len(space.shape) == 3:
        filters = cfg["conv_filters"] or default_conv_filters(space.shape)
        return CNNEncoder(space.shape, filters, cfg["conv_activation"])
    if isinstance(space, gym.spaces.Discrete):
        return OneHotMLPEncoder([int(space.n)], hiddens, act, scalar=True, init=init)
    if isinstance(space, gym.spaces.MultiDiscrete) and space.nvec.ndim == 1:
        return OneHotMLPEncoder([int(n) for n in space.nvec], hiddens, act, scalar=False, init=init)
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
    """Means from `mean_head`, concatenated with one learned log-std per action dimension (starting
    at `log_std_init`, clipped to ±`log_std_clip` in the forward pass)."""

    def __init__(
        self,
        mean_head: nn.Module,
        action_size: int,
        log_std_init: float = 0.0,
        log_std_clip: float = math.inf,
    ):
        super().__init__()
        self.mean_head = mean_head
        self.log_std = nn.Parameter(torch.full((action_size,), float(log_std_init)))
        self.log_std_clip = float(log_std_clip)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mean = self.mean_head(x)
        log_std = self.log_std
        if self.log_std_clip != math.inf:
            log_std = log_std.clamp(-self.log_std_clip, self.log_std_clip)
        return torch.cat([mean, log_std.expand_as(mean)], dim=-1)


class GaussianOutput(nn.Linear):
    """The output layer of a state-dependent Gaussian head: `[means, log_stds]`, the log-stds clipped
    to ±`log_std_clip` (one clamp with per-column bounds; a Linear itself, so the head's parameter
    names are those of a plain output layer)."""

    upper: torch.Tensor  # buffers
    lower: torch.Tensor

    def __init__(self, in_features: int, out_features: int, log_std_clip: float):
        super().__init__(in_features, out_features)
        half = out_features // 2
        bound = torch.cat([torch.full((half,), math.inf), torch.full((half,), float(log_std_clip))])
        self.register_buffer("upper", bound, persistent=False)
        self.register_buffer("lower", -bound, persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.clamp(super().forward(x), self.lower, self.upper)


def build_head(
    input_dim: int,
    output_dim: int,
    model_config: dict,
    output: str,
    **kwargs,
) -> nn.Module:
    """A head: `head_fcnet_hiddens` with `head_fcnet_activation`, then `output_dim` outputs; its layers
    use the `head_fcnet_*_initializer`s, the output layer with `<output>_output_kernel_initializer_kwargs`
    ("pi" or "vf") when set. Layers without an initializer keep torch's default, as RLlib 2.60's heads."""
    hiddens, act = model_config["head_fcnet_hiddens"], model_config["head_fcnet_activation"]
    init = LayerInit.from_model_config(model_config, "head_fcnet")
    key = f"{output}_output_kernel_initializer_kwargs"
    output_init = init.with_kernel_kwargs(model_config.get(key), key)
    return mlp(input_dim, hiddens, act, output_dim, init=init, output_init=output_init, **kwargs)


def build_policy_head(
    input_dim: int, action_space: gym.Space, dist_cls: type[Distribution], model_config: dict
) -> nn.Module:
    """Embeddings → `ACTION_DIST_INPUTS` of size `dist_cls.required_input_dim(action_space)`.

    Gaussian heads (Box actions) start with log-stds of `log_std_init` and clip them to
    ±`log_std_clip_param`; with `free_log_std` the log-stds are parameters, not outputs.
    """
    out_dim = dist_cls.required_input_dim(action_space)
    gaussian = issubclass(dist_cls, DiagGaussian)
    if not gaussian:
        _check_not_gaussian_settings(dist_cls, action_space, model_config)
        return build_head(input_dim, out_dim, model_config, "pi")
    log_std_init, clip = float(model_config["log_std_init"]), float(model_config["log_std_clip_param"])
    if model_config["free_log_std"]:
        mean_head = build_head(input_dim, out_dim // 2, model_config, "pi")
        return FreeLogStdHead(mean_head, out_dim // 2, log_std_init, clip)
    output_cls = nn.Linear if clip == math.inf else functools.partial(GaussianOutput, log_std_clip=clip)
    head = build_head(input_dim, out_dim, model_config, "pi", output_cls=output_cls)
    output_layer = head[-1] if isinstance(head, nn.Sequential) else head
    bias = output_layer.bias
    assert isinstance(bias, torch.Tensor)  # the output layer is a Linear
    with torch.no_grad():
        bias[out_dim // 2 :] = log_std_init
    return head


def _check_not_gaussian_settings(dist_cls: type[Distribution], action_space: gym.Space, cfg: dict) -> None:
    """free_log_std and log_std_init need a Gaussian; set anyway, they raise instead of being ignored."""
    wrong = [
        f"{key}={cfg[key]!r}"
        for key, default in (("free_log_std", False), ("log_std_init", 0.0))
        if cfg[key] != default
    ]
    if wrong:
        raise ModuleError(
            f"{' and '.join(wrong)} {'needs' if len(wrong) == 1 else 'need'} a Gaussian action distribution (Box actions), got "
            f"{dist_cls.__name__} for action space {action_space}. Fix: remove them from model_config."
        )


def build_value_head(input_dim: int, model_config: dict) -> nn.Module:
    """Embeddings → one value per row (`[..., 1]`)."""
    return build_head(input_dim, 1, model_config, "vf")
