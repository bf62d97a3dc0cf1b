"""Percentile return normalization (Hafner et al., 2023, eq. 11-12): the actor's advantages are divided by
the spread of recent returns, but never scaled up.

    S    = EMA(Per(R, 95) - Per(R, 5), decay 0.99)
    A_t  = (R_t - v_t) / max(1, S)

Dividing by S makes one entropy scale (3e-4) fit dense and sparse rewards alike; the floor of 1 keeps
small returns (sparse rewards, near-zero noise) from being blown up. Like RLlib 2.60, the two
percentiles are tracked as separate EMAs that the first batch sets directly; unlike RLlib (which
clamps S at 1e-8), the floor is the paper's 1.
"""

from __future__ import annotations

import torch
from torch import nn

__all__ = ["ReturnNormalizer"]


class ReturnNormalizer(nn.Module):
    """EMAs of the 5th and 95th percentiles of λ-returns, kept as buffers (they are saved and restored
    with the module that holds them).

        normalizer.update(returns)                        # once per update, before scaling
        advantages = normalizer.advantages(returns, values)
    """

    low: torch.Tensor
    high: torch.Tensor

    def __init__(self, decay: float = 0.99, low_quantile: float = 0.05, high_quantile: float = 0.95) -> None:
        super().__init__()
        if not 0.0 <= decay < 1.0 or not 0.0 <= low_quantile < high_quantile <= 1.0:
            raise ValueError(
                f"ReturnNormalizer(decay={decay}, low_quantile={low_quantile}, high_quantile={high_quantile}): "
                "needs 0 <= decay < 1 and 0 <= low_quantile < high_quantile <= 1 (DreamerV3: 0.99, 0.05, 0.95)."
            )
        self.decay = decay
        self.low_quantile = low_quantile
        self.high_quantile = high_quantile
        self.register_buffer("low", torch.tensor(float("nan")))
        self.register_buffer("high", torch.tensor(float("nan")))

    @torch.no_grad()
    def update(self, returns: torch.Tensor) -> None:
        """Move the EMAs towards this batch's percentiles (the first batch sets them)."""
        flat = returns.detach().float().reshape(-1)
        for name, quantile in (("low", self.low_quantile), ("high", self.high_quantile)):
            current, batch = getattr(self, name), torch.quantile(flat, quantile)
            moved = self.decay * current + (1.0 - self.decay) * batch
            current.copy_(torch.where(torch.isnan(current), batch, moved))

    def scale(self) -> torch.Tensor:
        """`max(1, high - low)`: the divisor of the advantages (1 before the first update)."""
        spread = self.high - self.low
        return torch.clamp(torch.nan_to_num(spread, nan=1.0), min=1.0)

    def advantages(self, returns: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
        """`(returns - values) / max(1, S)`."""
        return (returns - values) / self.scale()
