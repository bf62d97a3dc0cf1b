"""LSTM encoder: a stateless encoder followed by one LSTM layer."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn


class LSTMEncoder(nn.Module):
    """Runs `base` (MLP or CNN) on each step, then an LSTM; the state is `{"h", "c"}`.

    Observations `[B, T, ...]` (batch first; `T` = 1 when acting, as runners add that time axis for
    recurrent modules), state `[B, cell]` at each sequence start → outputs `[B, T, cell]` and the
    state after the last step. Zero padding sits at the end of training sequences, so it never
    reaches a real step's output and needs no masking here.
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
        self, obs: torch.Tensor, state: dict[str, torch.Tensor]
    ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        out, (h, c) = self.lstm(self.base(obs), (state["h"].unsqueeze(0), state["c"].unsqueeze(0)))
        return out, {"h": h.squeeze(0), "c": c.squeeze(0)}
