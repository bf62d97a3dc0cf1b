"""LSTM encoder: a stateless encoder followed by one LSTM layer."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn


class LSTMEncoder(nn.Module):
    """Runs `base` (MLP or CNN) on each step, then an LSTM; the state is `{"h", "c"}`.

    Acting (`sequence=False`): observations `[B, ...]`, state `[B, cell]` → `[B, cell]`.
    Training (`sequence=True`): observations `[B, T, ...]` (batch first), state `[B, cell]` at
    each sequence start → `[B, T, cell]`. Zero padding sits at the end of sequences, so it
    never reaches a real step's output and needs no masking here.
    """

    def __init__(self, base: nn.Module, cell_size: int):
        super().__init__()
        self.base = base
        self.cell_size = int(cell_size)
        self.lstm = nn.LSTM(base.output_dim, self.cell_size, batch_first=True)
        self.output_dim = self.cell_size

    def get_initial_state(self) -> dict[str, np.ndarray]:
        """Zeros, without batch dimension (connectors stack one per episode)."""
        return {
            "h": np.zeros(self.cell_size, np.float32),
            "c": np.zeros(self.cell_size, np.float32),
        }

    def forward(
        self, obs: torch.Tensor, state: dict[str, torch.Tensor], *, sequence: bool
    ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        x = self.base(obs)
        if not sequence:
            x = x.unsqueeze(1)
        out, (h, c) = self.lstm(x, (state["h"].unsqueeze(0), state["c"].unsqueeze(0)))
        if not sequence:
            out = out.squeeze(1)
        return out, {"h": h.squeeze(0), "c": c.squeeze(0)}
