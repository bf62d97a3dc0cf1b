"""Distributional Q-learning (C51, Bellemare et al., 2017): the support of the return distribution and
the projection of a Bellman-updated distribution back onto it.

A Q-value is a categorical distribution over `num_atoms` fixed returns (the support `z`, evenly spaced
from `v_min` to `v_max`); Q = sum(p * z). The target of a transition moves every atom to
`r + discount * z_j` (discount = gamma**n, or 0 after a terminal), which lands between atoms: the
projection splits each atom's probability between its two neighbours on the support, in proportion to
closeness, after clipping to [v_min, v_max].
"""

from __future__ import annotations

import torch


def support(num_atoms: int, v_min: float, v_max: float, device: torch.device | None = None) -> torch.Tensor:
    """The atoms `[num_atoms]`: `v_min, v_min + dz, ..., v_max` with `dz = (v_max - v_min) / (num_atoms - 1)`."""
    return torch.linspace(v_min, v_max, num_atoms, dtype=torch.float32, device=device)


def project_distribution(
    probs: torch.Tensor, rewards: torch.Tensor, discounts: torch.Tensor, v_min: float, v_max: float
) -> torch.Tensor:
    """The C51 projection: the distribution of `rewards + discounts * Z` (Z on the support, with
    probabilities `probs` `[B, num_atoms]`; `rewards`, `discounts` `[B]`) as probabilities `[B, num_atoms]`
    on the same support. Each row keeps its total probability."""
    num_atoms = probs.shape[-1]
    z = support(num_atoms, v_min, v_max, probs.device)
    moved = (rewards.float().unsqueeze(-1) + discounts.float().unsqueeze(-1) * z).clamp(v_min, v_max)
    # Position on the support in atom units; the clamp absorbs rounding at v_max.
    position = ((moved - v_min) / ((v_max - v_min) / (num_atoms - 1))).clamp(0, num_atoms - 1)
    lower = position.floor()
    upper_share = position - lower  # 0 when the atom lands exactly on the support: all goes to `lower`
    lower_index = lower.long()
    upper_index = position.ceil().long()
    projected = torch.zeros_like(probs)
    projected.scatter_add_(-1, lower_index, probs * (1.0 - upper_share))
    projected.scatter_add_(-1, upper_index, probs * upper_share)
    return projected
