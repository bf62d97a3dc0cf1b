"""MLP building blocks: the encoder for flat and discrete observations, and heads."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
import torch.nn.functional as F
from torch import nn

from flywheel.core.models.config import activation_layer


def normc_initializer(std: float = 1.0) -> Callable[[torch.Tensor], None]:
    """RLlib's initializer: `normc_initializer(0.01)(layer.weight)` fills the weight in place with
    Gaussian values scaled so each output unit's weight vector (row) has norm `std`."""

    def initialize(weight: torch.Tensor) -> None:
        with torch.no_grad():
            weight.normal_(0.0, 1.0)
            weight.mul_(std / weight.norm(dim=1, keepdim=True))

    return initialize


def normc_init_(layer: nn.Linear, std: float) -> nn.Linear:
    """`normc_initializer(std)` on the layer's weight, and a zero bias.

    A policy output layer with std 0.01 starts PPO from a near-uniform policy, which keeps
    the first updates from collapsing exploration; value outputs use std 1.0.
    """
    normc_initializer(std)(layer.weight)
    with torch.no_grad():
        layer.bias.zero_()
    return layer


def linear_layers(input_dim: int, hiddens: Sequence[int], activation: str | None) -> list[nn.Module]:
    """Linear layers through `hiddens`, each followed by the activation (if not "linear")."""
    layers: list[nn.Module] = []
    size = input_dim
    for hidden in hiddens:
        layers.append(nn.Linear(size, int(hidden)))
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
    output_std: float | None = None,
) -> nn.Module:
    """`linear_layers`, then an optional linear output (normc-initialised when `output_std`).

    A single layer is returned bare (not inside `nn.Sequential`) to save a call per forward.
    """
    layers = linear_layers(input_dim, hiddens, activation)
    if output_dim is not None:
        size = int(hiddens[-1]) if hiddens else input_dim
        out = nn.Linear(size, output_dim)
        layers.append(out if output_std is None else normc_init_(out, output_std))
    if not layers:
        return nn.Identity()
    return layers[0] if len(layers) == 1 else nn.Sequential(*layers)


class MLPEncoder(nn.Sequential):
    """`[..., input_dim]` observations → `[..., output_dim]` embeddings (any leading dims).

    A `Sequential` itself rather than a wrapper around one: on the runner's hot path every
    extra module call costs about a microsecond.
    """

    def __init__(self, input_dim: int, hiddens: Sequence[int], activation: str | None):
        super().__init__(*linear_layers(input_dim, hiddens, activation))
        self.output_dim = int(hiddens[-1]) if hiddens else int(input_dim)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        if obs.dtype is not torch.float32:
            obs = obs.float()
        for layer in self:
            obs = layer(obs)
        return obs


class OneHotMLPEncoder(MLPEncoder):
    """Discrete (`[...]` ints) or MultiDiscrete (`[..., k]` ints) observations, one-hot
    encoded (multi-hot for MultiDiscrete: one block per component) before the MLP."""

    def __init__(self, nvec: Sequence[int], hiddens: Sequence[int], activation: str | None, *, scalar: bool):
        depth = int(sum(nvec))
        super().__init__(depth, hiddens, activation)
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
