"""MLP building blocks: the encoder for flat and discrete observations, and heads."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from types import MappingProxyType

import torch
import torch.nn.functional as F
from torch import nn

from flywheel.compat import forward_of
from flywheel.core.models.config import activation_layer
from flywheel.core.models.initializers import LayerInit


def normc_initializer(std: float = 1.0) -> Callable[[torch.Tensor], None]:
    """RLlib's initializer: `normc_initializer(0.01)(layer.weight)` fills the weight in place with
    Gaussian values scaled so each output unit's weight vector (row) has norm `std`."""

    def initialize(weight: torch.Tensor) -> None:
        with torch.no_grad():
            weight.normal_(0.0, 1.0)
            weight.mul_(std / weight.norm(dim=1, keepdim=True))

    return initialize


def normc_(weight: torch.Tensor, std: float = 1.0) -> None:
    """`normc_initializer(std)` as a `model_config` initializer (called as `init(tensor, **kwargs)`)."""
    normc_initializer(std)(weight)


NORMC_HEADS = MappingProxyType(
    {
        "head_fcnet_kernel_initializer": normc_,
        "head_fcnet_bias_initializer": "zeros_",
        "pi_output_kernel_initializer_kwargs": {"std": 0.01},
        "vf_output_kernel_initializer_kwargs": {"std": 1.0},
    }
)
"""`model_config` keys for heads whose output rows start at norm 0.01 (policy: a near-uniform first policy)
and 1.0 (value), with zero biases: `model_config={"fcnet_hiddens": [64], **NORMC_HEADS}`. RLlib's
default heads (and flywheel's) keep torch's initialization instead."""


def linear_layers(
    input_dim: int, hiddens: Sequence[int], activation: str | None, init: LayerInit | None = None
) -> list[nn.Module]:
    """Linear layers through `hiddens` (initialized by `init`), each followed by the activation (if not "linear")."""
    layers: list[nn.Module] = []
    size = input_dim
    for hidden in hiddens:
        layer = nn.Linear(size, int(hidden))
        layers.append(layer if init is None else init(layer))
        act = activation_layer(activation)
        if act is not None:
            layers.append(act)
        size = int(hidden)
    return layers


def mlp(
    input_dim: int,
    hiddens: Sequence[int],
    activation: str | None,
    output_dim: int | None = None,
    *,
    init: LayerInit | None = None,
    output_init: LayerInit | None = None,
    output_cls: Callable[[int, int], nn.Linear] = nn.Linear,
) -> nn.Module:
    """`linear_layers` (initialized by `init`), then an optional linear output of class `output_cls`,
    initialized by `output_init` (None: torch's default, as RLlib's heads).

    A single layer is returned bare (not inside `nn.Sequential`) to save a call per forward.
    """
    layers = linear_layers(input_dim, hiddens, activation, init)
    if output_dim is not None:
        size = int(hiddens[-1]) if hiddens else input_dim
        out = output_cls(size, output_dim)
        layers.append(out if output_init is None else output_init(out))
    if not layers:
        return nn.Identity()
    return layers[0] if len(layers) == 1 else nn.Sequential(*layers)


class MLPEncoder(nn.Sequential):
    """`[..., input_dim]` observations → `[..., output_dim]` embeddings (any leading dims).

    A `Sequential` itself rather than a wrapper around one: on the runner's hot path every
    extra module call costs about a microsecond.
    """

    def __init__(
        self, input_dim: int, hiddens: Sequence[int], activation: str | None, init: LayerInit | None = None
    ):
        super().__init__(*linear_layers(input_dim, hiddens, activation, init))
        self.output_dim = int(hiddens[-1]) if hiddens else int(input_dim)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        if obs.dtype is not torch.float32:
            obs = obs.float()
        for layer in self:
            obs = forward_of(layer)(obs)  # `layer(obs)`, hooks too, without `Module.__call__`'s ~0.9 us
        return obs


class OneHotMLPEncoder(MLPEncoder):
    """Discrete (`[...]` ints) or MultiDiscrete (`[..., k]` ints) observations, one-hot
    encoded (multi-hot for MultiDiscrete: one block per component) before the MLP."""

    offsets: torch.Tensor  # a buffer

    def __init__(
        self,
        nvec: Sequence[int],
        hiddens: Sequence[int],
        activation: str | None,
        *,
        scalar: bool,
        init: LayerInit | None = None,
    ):
        depth = int(sum(nvec))
        super().__init__(depth, hiddens, activation, init)
        self.depth = depth
        self.scalar = scalar
        offsets = torch.tensor([0, *list(nvec)[:-1]], dtype=torch.long).cumsum(0)
        self.register_buffer("offsets", offsets, persistent=False)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        obs = obs.long()
        if self.scalar:
            encoded = F.one_hot(obs, self.depth)
        else:
            encoded = F.one_hot(obs + self.offsets, self.depth).sum(-2)
        return super().forward(encoded.float())
