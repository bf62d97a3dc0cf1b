"""Gradient arithmetic on lists of tensors: the global norm and in-place clipping.

The one place flywheel uses torch's `_foreach_*` kernels (one fused call per list instead of
one per tensor: for the small networks of RL the per-tensor Python loop costs more than the
arithmetic). `tests/core/learner/test_torch_grads.py` pins their results against the plain
formulas, so a torch release that changes them fails there first.
"""

from __future__ import annotations

import torch

CLIP_BY = ("value", "norm", "global_norm")
"""The ways `grad_clip_by` may clip: each entry, each tensor's norm, or all tensors' joint norm."""


def global_norm(grads: list[torch.Tensor]) -> torch.Tensor:
    """The L2 norm of all `grads` taken together (a 0-d tensor; 0 for an empty list)."""
    if not grads:
        return torch.zeros(())
    return torch.linalg.vector_norm(torch.stack(torch._foreach_norm(grads)))


def clip_(grads: list[torch.Tensor], clip: float, by: str, norm: torch.Tensor) -> None:
    """Clips `grads` in place: entries to `[-clip, clip]` (`by="value"`), each tensor to norm `clip`
    (`"norm"`), or all of them jointly to global norm `clip` (`"global_norm"`; `norm` is their
    global norm, already computed by the caller)."""
    if not grads:
        return
    if by == "value":
        torch._foreach_clamp_min_(grads, -clip)
        torch._foreach_clamp_max_(grads, clip)
    elif by == "norm":
        norms = torch._foreach_norm(grads)
        torch._foreach_mul_(grads, [torch.clamp(clip / (n + 1e-6), max=1.0) for n in norms])
    else:
        torch._foreach_mul_(grads, torch.clamp(clip / (norm + 1e-6), max=1.0))
