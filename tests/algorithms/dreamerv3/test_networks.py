"""DreamerV3's MLP layers, its layer-normalized GRU cell (against the formula) and the weight init."""

import math

import torch
from torch import nn

from flywheel.algorithms.dreamerv3.model_sizes import model_dims
from flywheel.algorithms.dreamerv3.networks import LayerNormGRUCell, dreamer_mlp, init_dreamer_weights


def test_mlp_layers():
    dims = model_dims("S")  # 2 layers of 512
    mlp = dreamer_mlp(10, dims, output_size=3)
    kinds = [type(layer).__name__ for layer in mlp]
    assert kinds == ["Linear", "LayerNorm", "SiLU", "Linear", "LayerNorm", "SiLU", "Linear"]
    assert mlp[0].bias is None and mlp[0].weight.shape == (512, 10) and mlp[1].eps == 1e-3
    assert mlp[-1].weight.shape == (3, 512) and torch.equal(mlp[-1].bias, torch.zeros(3))
    assert len(dreamer_mlp(10, dims, num_layers=1)) == 3


def test_init_std():
    torch.manual_seed(0)
    weight = torch.empty(400, 600)
    init_dreamer_weights(weight)
    std = math.sqrt(2.0 / 1000.0)
    assert abs(weight.std().item() - std) / std < 0.02
    assert weight.abs().max().item() <= 2.0 * std / 0.87962566103423978 + 1e-6


def test_gru_cell_formula():
    torch.manual_seed(1)
    cell = LayerNormGRUCell(3, 2)
    x, h = torch.randn(4, 3), torch.randn(4, 2)
    gates = nn.functional.layer_norm(torch.cat([h, x], -1) @ cell.linear.weight.T, (6,), eps=1e-3)
    reset, candidate, update = gates[:, :2], gates[:, 2:4], gates[:, 4:]
    candidate = torch.tanh(torch.sigmoid(reset) * candidate)
    update = torch.sigmoid(update - 1.0)
    assert torch.allclose(cell(x, h), update * candidate + (1 - update) * h, atol=1e-6)
