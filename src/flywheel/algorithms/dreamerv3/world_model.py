"""DreamerV3's world model for vector observations (Hafner et al., 2023, eq. 3-5): an MLP encoder, the
RSSM, and heads on the model state s = [h, z] that predict the observation, the reward and whether the
episode continues. It is trained on replayed (B, T) sequences with

    L_pred = ||decoder(s_t) - symlog(x_t)||^2          (sum over observation dims; no symlog for images)
           + two-hot cross-entropy of r_t               (255 buckets in symlog space)
           + binary cross-entropy of c_t = 1 - terminated_t
    L      = L_pred + 0.5 L_dyn + 0.1 L_rep             (KL balancing with free bits, per step; then mean)

    model = WorldModel(obs_size=4, action_size=2, dims=model_dims("nano"), symlog_obs=True)
    out = model.observe(obs, actions, is_first)        # (B, T, ...) inputs
    losses = model.losses(out, rewards, terminateds)
"""

from __future__ import annotations

from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import nn

from flywheel.algorithms.dreamerv3.kl_balancing import kl_balancing
from flywheel.algorithms.dreamerv3.model_sizes import ModelDims
from flywheel.algorithms.dreamerv3.networks import dreamer_mlp
from flywheel.algorithms.dreamerv3.rssm import RSSM, RSSMState
from flywheel.algorithms.dreamerv3.symlog import symlog
from flywheel.algorithms.dreamerv3.two_hot import TwoHot

__all__ = ["WorldModel", "WorldModelLosses", "WorldModelOutput", "bucket_head", "model_state"]


def model_state(state: RSSMState) -> torch.Tensor:
    """The features every head reads: `[h, flatten(z)]`, shape (..., gru_units + categoricals * classes)."""
    return torch.cat([state.h, state.z.flatten(-2)], -1)


def bucket_head(input_size: int, dims: ModelDims, num_buckets: int) -> nn.Sequential:
    """An MLP ending in zero-initialized bucket logits: predictions start at exactly 0 (uniform buckets)."""
    net = dreamer_mlp(input_size, dims, output_size=num_buckets)
    out = net[-1]
    assert isinstance(out, nn.Linear)
    nn.init.zeros_(out.weight)
    return net


class WorldModelOutput(NamedTuple):
    """The world model's pass over (B, T) sequences."""

    states: RSSMState
    """Posterior states, h (B, T, H) and z (B, T, C, K): the start states of imagination."""
    posterior_probs: torch.Tensor
    prior_probs: torch.Tensor
    obs_target: torch.Tensor
    """The observations the decoder reconstructs (symlog'd when `symlog_obs`), (B, T, obs_size)."""
    obs_prediction: torch.Tensor
    reward_logits: torch.Tensor
    continue_logits: torch.Tensor


class WorldModelLosses(NamedTuple):
    """Each term averaged over the batch; `total` is what the world model's optimizer minimizes."""

    total: torch.Tensor
    decoder: torch.Tensor
    reward: torch.Tensor
    continue_: torch.Tensor
    dynamics: torch.Tensor
    representation: torch.Tensor


class WorldModel(nn.Module):
    """Encoder, RSSM, decoder, reward and continue heads, sized by `dims`."""

    def __init__(self, obs_size: int, action_size: int, dims: ModelDims, *, symlog_obs: bool) -> None:
        super().__init__()
        self.symlog_obs = symlog_obs
        self.two_hot = TwoHot()
        self.encoder = dreamer_mlp(obs_size, dims)
        self.rssm = RSSM(dims.dense_units, action_size, dims)
        state_size = dims.gru_units + dims.num_z_categoricals * dims.num_z_classes
        self.decoder = dreamer_mlp(state_size, dims, output_size=obs_size)
        self.reward_head = bucket_head(state_size, dims, self.two_hot.num_buckets)
        self.continue_head = dreamer_mlp(state_size, dims, output_size=1)

    def encode(self, obs: torch.Tensor) -> torch.Tensor:
        """Embeddings of observations (any leading axes), symlog'd first when `symlog_obs`."""
        return self.encoder(self._obs_target(obs))

    def _obs_target(self, obs: torch.Tensor) -> torch.Tensor:
        obs = obs.float()
        return symlog(obs) if self.symlog_obs else obs

    def observe(
        self,
        obs: torch.Tensor,
        actions: torch.Tensor,
        is_first: torch.Tensor,
        generator: torch.Generator | None = None,
    ) -> WorldModelOutput:
        """Posterior states and every head's predictions over (B, T) sequences (see `RSSM.observe`)."""
        observed = self.rssm.observe(self.encode(obs), actions, is_first, generator)
        states = RSSMState(observed.h, observed.z)
        features = model_state(states)
        return WorldModelOutput(
            states,
            observed.posterior_probs,
            observed.prior_probs,
            self._obs_target(obs),
            self.decoder(features),
            self.reward_head(features),
            self.continue_head(features).squeeze(-1),
        )

    def predicted_rewards(self, states: RSSMState) -> torch.Tensor:
        """Expected rewards in real units."""
        return self.two_hot.decode(self.reward_head(model_state(states)))

    def predicted_continues(self, states: RSSMState) -> torch.Tensor:
        """Probabilities that the episode goes on."""
        return torch.sigmoid(self.continue_head(model_state(states)).squeeze(-1))

    def losses(
        self, out: WorldModelOutput, rewards: torch.Tensor, terminateds: torch.Tensor
    ) -> WorldModelLosses:
        """The world model's losses on (B, T) `rewards` and `terminateds` (see the module doc)."""
        decoder = (out.obs_prediction - out.obs_target).square().sum(-1)
        reward = self.two_hot.cross_entropy(out.reward_logits, rewards.float())
        continues = 1.0 - terminateds.float()
        continue_ = F.binary_cross_entropy_with_logits(out.continue_logits, continues, reduction="none")
        kl = kl_balancing(out.posterior_probs, out.prior_probs)
        total = (decoder + reward + continue_ + kl.loss).mean()
        return WorldModelLosses(
            total,
            decoder.mean(),
            reward.mean(),
            continue_.mean(),
            kl.dynamics.mean(),
            kl.representation.mean(),
        )
