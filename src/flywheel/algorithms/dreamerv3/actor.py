"""DreamerV3's actor (Hafner et al., 2023, eq. 11): a policy on the model state, trained on imagined
trajectories with

    L_actor = -sum_t w_t [ sg(A_t) log pi(a_t | s_t) + eta H[pi(. | s_t)] ]     (Discrete: REINFORCE)
    L_actor = -sum_t w_t [ A_t + eta H[pi(. | s_t)] ]                            (Box: dynamics backprop)

with A_t = (R_t - v_t) / max(1, S) (return_normalization.py), eta = entropy_scale and w_t the imagination
weights (lambda_returns.py). Discrete actions: a categorical with 1% unimix, sampled one-hot and
straight-through. Box actions: a normal with mean tanh(.) and std in [0.1, 1], reparameterized.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import torch
from torch import distributions as D
from torch import nn

from flywheel.algorithms.dreamerv3.categorical_latent import straight_through_sample, unimix_probs
from flywheel.algorithms.dreamerv3.model_sizes import ModelDims
from flywheel.algorithms.dreamerv3.networks import dreamer_mlp
from flywheel.algorithms.dreamerv3.return_normalization import ReturnNormalizer

__all__ = ["MAX_STD", "MIN_STD", "Actor"]

MIN_STD = 0.1
MAX_STD = 1.0


class Actor(nn.Module):
    """pi(a | s) for a Discrete or 1-D Box action space; holds the return normalizer its loss uses."""

    def __init__(
        self, state_size: int, action_space: gym.Space, dims: ModelDims, *, decay: float = 0.99
    ) -> None:
        super().__init__()
        if isinstance(action_space, gym.spaces.Discrete):
            self.discrete, self.action_size = True, int(action_space.n)
        elif isinstance(action_space, gym.spaces.Box) and len(action_space.shape) == 1:
            self.discrete, self.action_size = False, int(np.prod(action_space.shape))
        else:
            raise ValueError(
                f"DreamerV3's actor takes Discrete or 1-D Box actions, not {action_space}. "
                "Fix: flatten the action space (e.g. a gymnasium FlattenAction wrapper)."
            )
        self.mean_net = dreamer_mlp(state_size, dims, output_size=self.action_size)
        self.std_net = None if self.discrete else dreamer_mlp(state_size, dims, output_size=self.action_size)
        self.return_normalizer = ReturnNormalizer(decay)

    def distribution(self, states: torch.Tensor) -> D.Distribution:
        """pi(. | s) for model states (..., state_size): a OneHotCategorical over unimix probabilities, or
        an Independent Normal."""
        out = self.mean_net(states)
        if self.discrete:
            return D.OneHotCategorical(probs=unimix_probs(out))
        assert self.std_net is not None
        std = (MAX_STD - MIN_STD) * torch.sigmoid(self.std_net(states) + 2.0) + MIN_STD
        return D.Independent(D.Normal(torch.tanh(out), std), 1)

    def sample(self, dist: D.Distribution, generator: torch.Generator | None = None) -> torch.Tensor:
        """An action that carries gradients: one-hot straight-through (Discrete) or reparameterized (Box)."""
        if isinstance(dist, D.OneHotCategorical):
            return straight_through_sample(dist.probs, generator)
        return dist.rsample()
