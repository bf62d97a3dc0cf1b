"""DreamerV3's building blocks: MLPs of Linear -> LayerNorm -> SiLU layers, a GRU cell with layer
normalization, and the weight initialization they share (Hafner et al., 2023, appendix B).

    mlp = dreamer_mlp(10, dims, output_size=3)           # dims: a ModelDims (model_sizes.py)
    h = LayerNormGRUCell(256, 512)(x, h)
"""

from __future__ import annotations

import math

import torch
from torch import nn

from flywheel.algorithms.dreamerv3.model_sizes import ModelDims

__all__ = ["LayerNormGRUCell", "dreamer_mlp", "init_dreamer_weights"]

_TRUNCATED_STD = 0.87962566103423978
"""Standard deviation of a unit normal truncated to [-2, 2]: dividing by it restores the wanted std."""


def init_dreamer_weights(weight: torch.Tensor) -> None:
    """Truncated normal (at two standard deviations) with variance `1 / mean(fan_in, fan_out)`."""
    fan_out, fan_in = weight.shape[0], int(weight[0].numel())
    std = math.sqrt(2.0 / (fan_in + fan_out)) / _TRUNCATED_STD
    with torch.no_grad():
        nn.init.trunc_normal_(weight, 0.0, std, -2.0 * std, 2.0 * std)


def dreamer_mlp(
    input_size: int, dims: ModelDims, *, num_layers: int | None = None, output_size: int | None = None
) -> nn.Sequential:
    """`num_layers` (default: the model size's) hidden layers of `dims.dense_units` (Linear without bias,
    LayerNorm, SiLU), then a linear output layer of `output_size` when given."""
    layers: list[nn.Module] = []
    width = input_size
    for _ in range(dims.num_dense_layers if num_layers is None else num_layers):
        linear = nn.Linear(width, dims.dense_units, bias=False)
        init_dreamer_weights(linear.weight)
        layers += [linear, nn.LayerNorm(dims.dense_units, eps=1e-3), nn.SiLU()]
        width = dims.dense_units
    if output_size is not None:
        out = nn.Linear(width, output_size)
        init_dreamer_weights(out.weight)
        nn.init.zeros_(out.bias)
        layers.append(out)
    return nn.Sequential(*layers)


class LayerNormGRUCell(nn.Module):
    """GRU cell with one linear map of `[h, x]` to the three gates, layer-normalized, and the update
    gate biased towards keeping the state (`sigmoid(u - 1)`):

        r, c, u = split(LayerNorm(W [h, x]))
        c = tanh(sigmoid(r) * c);   u = sigmoid(u - 1);   h' = u * c + (1 - u) * h
    """

    def __init__(self, input_size: int, hidden_size: int) -> None:
        super().__init__()
        self.hidden_size = hidden_size
        self.linear = nn.Linear(hidden_size + input_size, 3 * hidden_size, bias=False)
        init_dreamer_weights(self.linear.weight)
        self.norm = nn.LayerNorm(3 * hidden_size, eps=1e-3)

    def forward(self, x: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
        """The next state from input `x` (B, input_size) and state `h` (B, hidden_size)."""
        reset, candidate, update = self.norm(self.linear(torch.cat([h, x], -1))).split(self.hidden_size, -1)
        candidate = torch.tanh(torch.sigmoid(reset) * candidate)
        update = torch.sigmoid(update - 1.0)
        return update * candidate + (1.0 - update) * h
