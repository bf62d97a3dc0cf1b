"""The stochastic state's categoricals (Hafner et al., 2023, "unimix"; Hafner et al., 2021, Algorithm 1):
probabilities mixed with 1% uniform, and one-hot samples that carry the probabilities' gradient.

    probs  = (1 - unimix) * softmax(logits) + unimix / num_classes
    sample = one_hot(draw(probs)) + probs - stop_gradient(probs)

The mixture keeps every class at probability >= unimix / num_classes, so KL terms and log-probabilities
stay finite; the straight-through sample has the value of the one-hot draw and the gradient of `probs`.
The discrete actor uses the same mixture.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

__all__ = ["UNIMIX", "straight_through_sample", "unimix_probs"]

UNIMIX = 0.01


def unimix_probs(logits: torch.Tensor, unimix: float = UNIMIX) -> torch.Tensor:
    """`(1 - unimix) * softmax(logits) + unimix / K` over the last axis (K classes)."""
    if not 0.0 <= unimix <= 1.0:
        raise ValueError(f"unimix={unimix!r} must lie in [0, 1] (DreamerV3 uses 0.01, a 1% uniform mixture).")
    num_classes = logits.shape[-1]
    return (1.0 - unimix) * torch.softmax(logits, dim=-1) + unimix / num_classes


def straight_through_sample(probs: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
    """One one-hot draw per row of `probs` (classes on the last axis), with the gradient of `probs`:
    the forward value is exactly one-hot, d sample / d probs is the identity."""
    num_classes = probs.shape[-1]
    flat = probs.detach().reshape(-1, num_classes)
    index = torch.multinomial(flat, 1, generator=generator).squeeze(-1)
    one_hot = F.one_hot(index, num_classes).to(probs.dtype).reshape(probs.shape)
    return one_hot + (probs - probs.detach())  # exactly one_hot forward: the bracket is 0
