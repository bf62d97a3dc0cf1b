"""Two-hot encoding in symlog space (Hafner et al., 2023, eq. 9-10): rewards and values are predicted as
a categorical distribution over fixed buckets, trained with cross-entropy against a two-hot target.

A scalar x becomes y = symlog(x) (clipped to the bucket range); with buckets b_0 < ... < b_{K-1} evenly
spaced and b_k <= y <= b_{k+1}, the target puts weight |b_{k+1} - y| / |b_{k+1} - b_k| on b_k and the rest
on b_{k+1}. Its expectation over the buckets is y exactly, so a prediction is decoded as
symexp(sum_k softmax(logits)_k * b_k).

The bucket range -20..20 with 255 buckets is RLlib 2.60's (symlog(-20) ~ -4.85e8 to 4.85e8 in real units).
"""

from __future__ import annotations

import torch

from flywheel.algorithms.dreamerv3.symlog import symexp, symlog

__all__ = ["LOWER_BOUND", "NUM_BUCKETS", "UPPER_BOUND", "TwoHot"]

NUM_BUCKETS = 255
LOWER_BOUND = -20.0
UPPER_BOUND = 20.0


class TwoHot:
    """Buckets evenly spaced over `[lower, upper]` in symlog space; encodes real values as two-hot targets
    and decodes logits back to real values.

        two_hot = TwoHot()
        loss = two_hot.cross_entropy(reward_logits, rewards)    # per row, real-valued rewards
        predicted_rewards = two_hot.decode(reward_logits)       # real units
    """

    def __init__(
        self, num_buckets: int = NUM_BUCKETS, lower: float = LOWER_BOUND, upper: float = UPPER_BOUND
    ) -> None:
        if num_buckets < 2 or not lower < upper:
            raise ValueError(
                f"TwoHot(num_buckets={num_buckets}, lower={lower}, upper={upper}): needs at least 2 buckets "
                "and lower < upper. Fix: e.g. TwoHot(255, -20.0, 20.0), RLlib 2.60's range."
            )
        self.num_buckets = num_buckets
        self.lower = lower
        self.upper = upper

    def buckets(self, device: torch.device | str | None = None) -> torch.Tensor:
        """The bucket centres, in symlog space: shape (num_buckets,)."""
        return torch.linspace(self.lower, self.upper, self.num_buckets, device=device)

    def encode_symlog(self, y: torch.Tensor) -> torch.Tensor:
        """Two-hot targets of values already in symlog space: shape `y.shape + (num_buckets,)`; values
        outside the range are clipped to its ends (one-hot on the end bucket)."""
        step = (self.upper - self.lower) / (self.num_buckets - 1)
        position = (torch.clamp(y.detach(), self.lower, self.upper) - self.lower) / step
        low = torch.clamp(torch.floor(position), 0, self.num_buckets - 2).long()
        weight_high = position - low
        target = torch.zeros(*y.shape, self.num_buckets, device=y.device, dtype=torch.float32)
        target.scatter_(-1, low.unsqueeze(-1), (1.0 - weight_high).unsqueeze(-1).float())
        target.scatter_add_(-1, (low + 1).unsqueeze(-1), weight_high.unsqueeze(-1).float())
        return target

    def encode(self, x: torch.Tensor) -> torch.Tensor:
        """Two-hot targets of real values (symlog first)."""
        return self.encode_symlog(symlog(x))

    def decode_symlog(self, logits: torch.Tensor) -> torch.Tensor:
        """The expected bucket of `softmax(logits)` over the last axis, in symlog space."""
        probs = torch.softmax(logits, dim=-1)
        return (probs * self.buckets(logits.device)).sum(-1)

    def decode(self, logits: torch.Tensor) -> torch.Tensor:
        """The prediction in real units: `symexp` of the expected bucket."""
        return symexp(self.decode_symlog(logits))

    def cross_entropy_symlog(self, logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """`-sum_k two_hot(y)_k * log_softmax(logits)_k` per row, for targets `y` already in symlog space."""
        return -(self.encode_symlog(y) * torch.log_softmax(logits, dim=-1)).sum(-1)

    def cross_entropy(self, logits: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """The loss of predicting real values `x`: `cross_entropy_symlog(logits, symlog(x))`."""
        return self.cross_entropy_symlog(logits, symlog(x))
