"""`FusionEncoder`: RLlib's multi-stream encoder, the critic encoder of SAC for Box actions.

    [obs, action] ─ split ─┬─ obs encoder ────┐
                           └─ action encoder ─┴─ concat = e ─ fusion layers (fusionnet_hiddens) ─ output

Every fusion layer after the first, and the output layer, also reads `e` (skip connections), so
the streams' embeddings reach every layer. Layers use `fusionnet_activation` and the
`fusionnet_*_initializer`s; the output has the obs encoder's width with `fusionnet_activation`.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from flywheel.core.models.config import activation_layer
from flywheel.core.models.initializers import LayerInit
from flywheel.core.models.mlp import MLPEncoder


class FusionEncoder(nn.Module):
    """`[..., sum(widths)]` inputs, cut into the streams' parts in order, → `[..., output_dim]`."""

    def __init__(
        self,
        streams: Sequence[tuple[int, MLPEncoder]],
        hiddens: Sequence[int],
        activation: str | None,
        output_dim: int,
        init: LayerInit | None = None,
    ):
        super().__init__()
        self.widths = [int(width) for width, _ in streams]
        self.streams = nn.ModuleList(encoder for _, encoder in streams)
        embedded = sum(encoder.output_dim for _, encoder in streams)
        sizes = [int(h) for h in hiddens]
        inputs = [embedded] + [size + embedded for size in sizes[:-1]]
        self.fusion = nn.ModuleList(nn.Linear(i, o) for i, o in zip(inputs, sizes, strict=True))
        self.output = nn.Linear(sizes[-1] + embedded if sizes else embedded, int(output_dim))
        if init is not None:
            for layer in [*self.fusion, self.output]:
                init(layer)
        self.activation = activation_layer(activation) or nn.Identity()
        self.output_dim = int(output_dim)

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        parts = torch.split(inputs.float(), self.widths, dim=-1)
        embeddings = torch.cat(
            [encoder(part) for encoder, part in zip(self.streams, parts, strict=True)], dim=-1
        )
        out = embeddings
        for index, layer in enumerate(self.fusion):
            out = self.activation(layer(out if index == 0 else torch.cat([out, embeddings], dim=-1)))
        if len(self.fusion):
            out = torch.cat([out, embeddings], dim=-1)
        return self.activation(self.output(out))
