"""`LossStats`: PPO's logged loss terms, gathered per minibatch and reduced once per update.

The logged terms (explained variance, entropy, ...) are no part of the gradient, yet computing and
logging them per minibatch took ~20% of a small network's update: a dozen tiny tensor ops and a
conversion to floats, 187 times per CartPole update. Minibatches only hand over detached tensors
here; `reduce` computes every minibatch's terms in a few vectorized ops (minibatches of equal size
stacked) and returns their means over minibatches: the numbers per-minibatch logging would give.
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING, Any, NamedTuple

import torch

if TYPE_CHECKING:
    from flywheel.typing import ModuleID


class _Minibatch(NamedTuple):
    policy_loss: torch.Tensor  # scalars
    vf_loss: torch.Tensor
    mean_kl: torch.Tensor
    vf_clipped_fraction: torch.Tensor
    vf_loss_unclipped: torch.Tensor  # [rows] (masked rows only, for sequence batches)
    targets: torch.Tensor
    values: torch.Tensor
    action_dist_inputs: torch.Tensor  # [rows, dist inputs]


class LossStats:
    """Per module, the minibatches' loss terms since the last `reduce`."""

    def __init__(self) -> None:
        self._minibatches: dict[Any, list[_Minibatch]] = defaultdict(list)

    def add(
        self,
        module_id: ModuleID,
        *,
        policy_loss: torch.Tensor,
        vf_loss: torch.Tensor,
        mean_kl: torch.Tensor | None,
        vf_clipped_fraction: torch.Tensor | None,
        vf_loss_unclipped: torch.Tensor,
        targets: torch.Tensor,
        values: torch.Tensor,
        action_dist_inputs: torch.Tensor,
    ) -> None:
        """Keeps one minibatch's terms (all rows already masked to the valid ones; None: 0)."""
        zero = torch.zeros((), device=policy_loss.device)
        self._minibatches[module_id].append(
            _Minibatch(
                policy_loss.detach(),
                vf_loss.detach(),
                zero if mean_kl is None else mean_kl.detach(),
                zero if vf_clipped_fraction is None else vf_clipped_fraction.detach(),
                vf_loss_unclipped.detach(),
                targets.detach(),
                values.detach(),
                action_dist_inputs.detach(),
            )
        )

    def last_kls(self) -> dict[Any, float]:
        """`{module_id: mean KL of the last minibatch}` since the last `reduce`: what RLlib's PPO adapts
        its KL coefficient to (its KL is logged with `window=1`, so it reads the last minibatch's)."""
        return {
            module_id: float(minibatches[-1].mean_kl) for module_id, minibatches in self._minibatches.items()
        }

    def reduce(self, dist_cls_of: Any) -> dict[Any, dict[str, float]]:
        """`{module_id: {term: mean over minibatches}}`, and forgets them. `dist_cls_of(module_id)` is
        the train action distribution class (for the entropy)."""
        out = {}
        for module_id, minibatches in self._minibatches.items():
            out[module_id] = _reduce(minibatches, dist_cls_of(module_id))
        self._minibatches.clear()
        return out


def _reduce(minibatches: list[_Minibatch], dist_cls: Any) -> dict[str, float]:
    columns = list(zip(*minibatches, strict=True))
    scalars = torch.stack([torch.stack(c) for c in columns[:4]]).mean(1).tolist()
    policy_loss, vf_loss, mean_kl, vf_clipped_fraction = scalars
    per_minibatch = []  # [3, minibatches] per group of equal-size minibatches
    for group in _by_size(minibatches).values():
        unclipped, targets, values, inputs = (torch.stack(c) for c in list(zip(*group, strict=True))[4:])
        entropy = dist_cls.from_logits(inputs).entropy()
        per_minibatch.append(
            torch.stack([unclipped.mean(-1), _explained_variance(targets, values), entropy.mean(-1)])
        )
    unclipped, explained, entropy = torch.cat(per_minibatch, dim=1).mean(1).tolist()
    return {
        "policy_loss": policy_loss,
        "vf_loss": vf_loss,
        "vf_loss_unclipped": unclipped,
        "vf_loss_clipped_fraction": vf_clipped_fraction,
        "vf_explained_var": explained,
        "entropy": entropy,
        "mean_kl_loss": mean_kl,
    }


def _by_size(minibatches: list[_Minibatch]) -> dict[int, list[_Minibatch]]:
    groups: dict[int, list[_Minibatch]] = defaultdict(list)
    for minibatch in minibatches:
        groups[len(minibatch.targets)].append(minibatch)
    return groups


def _explained_variance(targets: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
    """Per row of `[n, rows]`: 1 - Var(targets - values) / Var(targets), floored at -1 (1 = perfect,
    0 = as good as the mean, and 0 when the targets do not vary)."""
    var = torch.var(targets, dim=-1, unbiased=False)
    explained = 1.0 - torch.var(targets - values, dim=-1, unbiased=False) / var
    return torch.where(var == 0, 0.0, explained.clamp(min=-1.0))
