"""The actor's distributions (unimix categorical; bounded normal) and the critic's EMA regularizer."""

import math

import gymnasium as gym
import numpy as np
import pytest
import torch

from flywheel.algorithms.dreamerv3.actor import Actor
from flywheel.algorithms.dreamerv3.critic import Critic
from flywheel.algorithms.dreamerv3.model_sizes import model_dims
from flywheel.algorithms.dreamerv3.two_hot import TwoHot

DIMS = model_dims("nano")
STATE = 16 + 16  # h + 4 x 4 z


def test_discrete_actor():
    torch.manual_seed(0)
    actor = Actor(STATE, gym.spaces.Discrete(3), DIMS)
    dist = actor.distribution(torch.randn(5, STATE) * 100)
    assert dist.probs.min().item() >= 0.01 / 3 - 1e-7
    action = actor.sample(dist, torch.Generator().manual_seed(0))
    assert action.shape == (5, 3) and torch.equal(action.detach().sum(-1), torch.ones(5))
    assert action.requires_grad


def test_box_actor_bounds():
    torch.manual_seed(0)
    actor = Actor(STATE, gym.spaces.Box(-2.0, 2.0, (2,), np.float32), DIMS)
    dist = actor.distribution(torch.randn(50, STATE) * 10)
    normal = dist.base_dist
    assert normal.loc.abs().max().item() <= 1.0
    assert normal.scale.min().item() >= 0.1 and normal.scale.max().item() <= 1.0
    assert actor.sample(dist).requires_grad
    with pytest.raises(ValueError, match="Discrete or 1-D Box actions"):
        Actor(STATE, gym.spaces.MultiDiscrete([2, 2]), DIMS)


def test_critic_starts_at_zero_and_its_loss_is_the_formula():
    torch.manual_seed(0)
    critic = Critic(STATE, DIMS)
    states = torch.randn(4, 3, STATE)
    assert torch.allclose(critic.value(states), torch.zeros(4, 3), atol=1e-6)
    returns, weights = torch.full((4, 3), 10.0), torch.rand(4, 3)
    # Uniform logits: each cross-entropy is ln(255), whatever the target.
    assert math.isclose(
        critic.loss(states, returns, weights).item(), 2 * math.log(255) * weights.mean().item(), rel_tol=1e-5
    )
    # Away from init: the regularizer pulls towards the EMA network's symlog value.
    with torch.no_grad():
        critic.net[-1].bias.copy_(torch.linspace(-1, 1, 255))
    two_hot = TwoHot()
    logits = critic.logits(states)
    ema_symlog = two_hot.decode_symlog(critic.ema_net(states))
    expected = weights * (
        two_hot.cross_entropy(logits, returns) + two_hot.cross_entropy_symlog(logits, ema_symlog)
    )
    assert torch.allclose(critic.loss(states, returns, weights), expected.mean())


def test_critic_ema_update():
    torch.manual_seed(0)
    critic = Critic(STATE, DIMS)
    before = [p.clone() for p in critic.ema_net.parameters()]
    assert all(not p.requires_grad for p in critic.ema_net.parameters())
    with torch.no_grad():
        for p in critic.net.parameters():
            p.add_(1.0)
    critic.update_ema()
    for old, new, live in zip(before, critic.ema_net.parameters(), critic.net.parameters(), strict=True):
        assert torch.allclose(new, 0.98 * old + 0.02 * live, atol=1e-6)
