"""Gradient arithmetic on lists of tensors: the global norm and in-place clipping, with one fused
call per list (`flywheel.compat`'s foreach functions)."""

from __future__ import annotations

import torch

from flywheel.compat import foreach_clamp_, foreach_mul_, foreach_norm

CLIP_BY = ("value", "norm", "global_norm")
"""The ways `grad_clip_by` may clip: each entry, each tensor's norm, or all tensors' joint norm."""


def global_norm(grads: list[torch.Tensor]) -> torch.Tensor:
    """The L2 norm of all `grads` taken together (a 0-d tensor; 0 for an empty list)."""
    if not grads:
        return torch.zeros(())
    return torch.linalg.vector_norm(torch.stack(foreach_norm(grads)))


def clip_(grads: list[torch.Tensor], clip: float, by: str, norm: torch.Tensor) -> None:
    """Clips `grads` in place: entries to `[-clip, clip]` (`by="value"`), each tensor to norm `clip`
    (`"norm"`), or all of them jointly to global norm `clip` (`"global_norm"`; `norm` is their
    global norm, already computed by the caller)."""
    if not grads:
        return
    if by == "value":
        foreach_clamp_(grads, -clip, clip)
    elif by == "norm":
        foreach_mul_(grads, [torch.clamp(clip / (n + 1e-6), max=1.0) for n in foreach_norm(grads)])
    else:
        foreach_mul_(grads, torch.clamp(clip / (norm + 1e-6), max=1.0))
