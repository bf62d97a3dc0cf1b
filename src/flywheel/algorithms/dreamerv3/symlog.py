"""Symlog and its inverse (Hafner et al., 2023, eq. 1): squash values of any scale into a range a network
can predict, and back.

    symlog(x) = sign(x) * ln(|x| + 1)        symexp(y) = sign(y) * (exp(|y|) - 1)

Near zero symlog is the identity (slope 1); far from it, logarithmic. DreamerV3 regresses vector
observations, rewards and values in symlog space.
"""

from __future__ import annotations

import torch

__all__ = ["symexp", "symlog"]


def symlog(x: torch.Tensor) -> torch.Tensor:
    """`sign(x) * ln(|x| + 1)`, elementwise."""
    return torch.sign(x) * torch.log1p(torch.abs(x))


def symexp(y: torch.Tensor) -> torch.Tensor:
    """`sign(y) * (exp(|y|) - 1)`, elementwise: the inverse of `symlog`."""
    return torch.sign(y) * torch.expm1(torch.abs(y))
