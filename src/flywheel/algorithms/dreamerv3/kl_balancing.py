"""KL balancing with free bits (Hafner et al., 2023, eq. 5): the world model's two KL terms between the
posterior q(z | h, x) and the prior p(z | h), each summed over the stochastic state's categoricals.

    L_dyn = max(free_bits, KL(sg(posterior) || prior))      trains the prior (dynamics predictor)
    L_rep = max(free_bits, KL(posterior || sg(prior)))      trains the posterior (representation)
    loss  = 0.5 * L_dyn + 0.1 * L_rep                        (per time step)

The two terms have the same value and differ in where gradients flow: the prior is pulled towards the
posterior five times harder than the posterior towards the prior. Below `free_bits` nats neither gets a
gradient, so the model spends no capacity on states it already predicts well.
"""

from __future__ import annotations

from typing import NamedTuple

import torch

__all__ = ["DYN_SCALE", "FREE_BITS", "REP_SCALE", "KLBalance", "categorical_kl", "kl_balancing"]

DYN_SCALE = 0.5
REP_SCALE = 0.1
FREE_BITS = 1.0


class KLBalance(NamedTuple):
    """The world model's KL loss per time step and its two terms (all with the leading batch shape)."""

    loss: torch.Tensor
    dynamics: torch.Tensor
    representation: torch.Tensor


def categorical_kl(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """KL(p || q) of independent categoricals given as probabilities of shape `(..., num_categoricals,
    num_classes)`: `sum over categoricals and classes of p * (log p - log q)`, shape `(...)`. Classes with
    p = 0 add nothing; q must be positive where p is (unimix guarantees it)."""
    terms = torch.where(p > 0, p * (torch.log(p) - torch.log(q)), torch.zeros_like(p))
    return terms.sum(dim=(-2, -1))


def kl_balancing(
    posterior_probs: torch.Tensor,
    prior_probs: torch.Tensor,
    *,
    dyn_scale: float = DYN_SCALE,
    rep_scale: float = REP_SCALE,
    free_bits: float = FREE_BITS,
) -> KLBalance:
    """`dyn_scale * L_dyn + rep_scale * L_rep` per time step, from probabilities of shape `(...,
    num_categoricals, num_classes)`, with the free-bits clip applied to each term."""
    dynamics = torch.clamp(categorical_kl(posterior_probs.detach(), prior_probs), min=free_bits)
    representation = torch.clamp(categorical_kl(posterior_probs, prior_probs.detach()), min=free_bits)
    return KLBalance(dyn_scale * dynamics + rep_scale * representation, dynamics, representation)
