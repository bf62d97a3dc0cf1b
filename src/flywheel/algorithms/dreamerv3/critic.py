"""DreamerV3's critic (Hafner et al., 2023, eq. 10 and "critic EMA regularizer"): values predicted as
two-hot buckets in symlog space, trained on λ-returns of imagined trajectories, and held near a slow EMA
copy of itself:

    L_critic = sum_t w_t [ CE(two_hot(symlog R_t), logits_t) + CE(two_hot(symlog v_ema_t), logits_t) ]

with the EMA copy updated after every gradient step: theta_ema = 0.98 theta_ema + 0.02 theta.
"""

from __future__ import annotations

import torch
from torch import nn

from flywheel.algorithms.dreamerv3.model_sizes import ModelDims
from flywheel.algorithms.dreamerv3.two_hot import TwoHot
from flywheel.algorithms.dreamerv3.world_model import bucket_head
from flywheel.core.learner.utils import make_target_network, update_target_network

__all__ = ["EMA_DECAY", "Critic"]

EMA_DECAY = 0.98


class Critic(nn.Module):
    """v(s) as 255 bucket logits, and its EMA copy (not trained by gradients)."""

    def __init__(self, state_size: int, dims: ModelDims, *, ema_decay: float = EMA_DECAY) -> None:
        super().__init__()
        self.ema_decay = ema_decay
        self.two_hot = TwoHot()
        self.net = bucket_head(state_size, dims, self.two_hot.num_buckets)
        self.ema_net = make_target_network(self.net)

    def logits(self, states: torch.Tensor) -> torch.Tensor:
        """Bucket logits of v(s)."""
        return self.net(states)

    def value(self, states: torch.Tensor) -> torch.Tensor:
        """v(s) in real units."""
        return self.two_hot.decode(self.logits(states))

    def loss(self, states: torch.Tensor, returns: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
        """The weighted mean of the return loss plus the EMA regularizer (the module doc), over any
        leading axes of `states` (..., state_size), `returns` and `weights` (...)."""
        logits = self.logits(states)
        with torch.no_grad():
            ema_symlog = self.two_hot.decode_symlog(self.ema_net(states))
        return_loss = self.two_hot.cross_entropy(logits, returns.detach())
        regularizer = self.two_hot.cross_entropy_symlog(logits, ema_symlog)
        return (weights.detach() * (return_loss + regularizer)).mean()

    def update_ema(self) -> None:
        """theta_ema <- decay * theta_ema + (1 - decay) * theta."""
        update_target_network(self.net, self.ema_net, tau=1.0 - self.ema_decay)
