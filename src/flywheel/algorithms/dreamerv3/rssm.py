"""The recurrent state-space model (Hafner et al., 2023, eq. 3): a deterministic state h carried by a GRU
and a stochastic state z of categoricals (32 x 32 from model size "XXS" up), sampled from the
posterior q(z | h, embedding of x) when observing and from the prior p(z | h) when imagining.

    h_t = f(h_{t-1}, z_{t-1}, a_{t-1})                    sequence model (pre-MLP + LayerNormGRUCell)
    z_t ~ q(z | h_t, e_t)    (observe)                    posterior
    z_t ~ p(z | h_t)         (imagine, and the KL target) prior

Where a sequence starts (is_first), the previous state is the learned initial one (h_0 = tanh(w),
z_0 = the mode of p(z | h_0)) and the previous action is zero.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import nn

from flywheel.algorithms.dreamerv3.categorical_latent import straight_through_sample, unimix_probs
from flywheel.algorithms.dreamerv3.model_sizes import ModelDims
from flywheel.algorithms.dreamerv3.networks import LayerNormGRUCell, dreamer_mlp

__all__ = ["RSSM", "Observed", "RSSMState"]


class RSSMState(NamedTuple):
    """h: (B, gru_units); z: (B, num_z_categoricals, num_z_classes), one-hot rows."""

    h: torch.Tensor
    z: torch.Tensor


class Observed(NamedTuple):
    """What `RSSM.observe` returns, each with leading axes (B, T)."""

    h: torch.Tensor
    z: torch.Tensor
    posterior_probs: torch.Tensor
    prior_probs: torch.Tensor


class RSSM(nn.Module):
    """Sequence model, prior and posterior of DreamerV3's world model, sized by `dims`."""

    def __init__(self, embed_size: int, action_size: int, dims: ModelDims) -> None:
        super().__init__()
        self.num_categoricals, self.num_classes = dims.num_z_categoricals, dims.num_z_classes
        z_size = self.num_categoricals * self.num_classes
        self.initial_h = nn.Parameter(torch.zeros(dims.gru_units))
        self.pre_gru = dreamer_mlp(z_size + action_size, dims, num_layers=1)
        self.gru = LayerNormGRUCell(dims.dense_units, dims.gru_units)
        self.prior_net = dreamer_mlp(dims.gru_units, dims, num_layers=1, output_size=z_size)
        self.posterior_net = dreamer_mlp(dims.gru_units + embed_size, dims, num_layers=1, output_size=z_size)

    def _probs(self, logits: torch.Tensor) -> torch.Tensor:
        return unimix_probs(logits.reshape(*logits.shape[:-1], self.num_categoricals, self.num_classes))

    def prior_probs(self, h: torch.Tensor) -> torch.Tensor:
        """p(z | h): probabilities (B, categoricals, classes), 1% unimix."""
        return self._probs(self.prior_net(h))

    def posterior_probs(self, h: torch.Tensor, embed: torch.Tensor) -> torch.Tensor:
        """q(z | h, e): probabilities (B, categoricals, classes), 1% unimix."""
        return self._probs(self.posterior_net(torch.cat([h, embed], -1)))

    def initial_state(self, batch_size: int) -> RSSMState:
        """The learned start state for `batch_size` rows: tanh(w) and the prior's mode (no sampling)."""
        h = torch.tanh(self.initial_h).expand(batch_size, -1)
        z = F.one_hot(self.prior_probs(h).argmax(-1), self.num_classes).to(h.dtype)
        return RSSMState(h, z)

    def step(
        self, state: RSSMState, action: torch.Tensor, is_first: torch.Tensor | None = None
    ) -> torch.Tensor:
        """h_t from the previous state and action; rows with `is_first` start from the initial state
        with a zero action."""
        h, z = state
        if is_first is not None:
            first = is_first.to(torch.bool)
            start = self.initial_state(h.shape[0])
            h = torch.where(first[:, None], start.h, h)
            z = torch.where(first[:, None, None], start.z, z)
            action = torch.where(first[:, None], torch.zeros_like(action), action)
        return self.gru(self.pre_gru(torch.cat([z.flatten(1), action], -1)), h)

    def observe_step(
        self,
        state: RSSMState,
        previous_action: torch.Tensor,
        embed: torch.Tensor,
        is_first: torch.Tensor | None = None,
        generator: torch.Generator | None = None,
    ) -> tuple[RSSMState, torch.Tensor, torch.Tensor]:
        """One observed step (what an acting runner calls): the posterior state of this step and the
        posterior and prior probabilities; rows with `is_first` start from the initial state (a runner
        passes none: its new episodes start from the module's initial state already)."""
        h = self.step(state, previous_action, is_first)
        posterior = self.posterior_probs(h, embed)
        return RSSMState(h, straight_through_sample(posterior, generator)), posterior, self.prior_probs(h)

    def observe(
        self,
        embeds: torch.Tensor,
        actions: torch.Tensor,
        is_first: torch.Tensor,
        generator: torch.Generator | None = None,
    ) -> Observed:
        """Posterior states over replayed (B, T) sequences: `embeds` (B, T, E), `actions` (B, T, A) with
        `actions[:, t]` taken after observing step t, `is_first` (B, T). The state before step 0 is not
        replayed, so every row starts from the initial state."""
        batch, steps = embeds.shape[:2]
        is_first = is_first.to(torch.bool).clone()
        is_first[:, 0] = True
        state, previous_action = self.initial_state(batch), torch.zeros_like(actions[:, 0])
        hs, zs, posteriors, priors = [], [], [], []
        for t in range(steps):
            state, posterior, prior = self.observe_step(
                state, previous_action, embeds[:, t], is_first[:, t], generator
            )
            hs.append(state.h)
            zs.append(state.z)
            posteriors.append(posterior)
            priors.append(prior)
            previous_action = actions[:, t]
        return Observed(*(torch.stack(items, 1) for items in (hs, zs, posteriors, priors)))

    def imagine_step(
        self, state: RSSMState, action: torch.Tensor, generator: torch.Generator | None = None
    ) -> RSSMState:
        """The next state without an observation: h from the sequence model, z sampled from the prior."""
        h = self.step(state, action)
        return RSSMState(h, straight_through_sample(self.prior_probs(h), generator))
