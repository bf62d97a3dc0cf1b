"""Imagined rollouts and the actor/critic losses: shapes, the λ-return formula on the predicted rewards,
terminal start states, and which parameters each loss reaches (Discrete: REINFORCE; Box: backprop)."""

import gymnasium as gym
import numpy as np
import pytest
import torch

from flywheel.algorithms.dreamerv3.actor import Actor
from flywheel.algorithms.dreamerv3.critic import Critic
from flywheel.algorithms.dreamerv3.imagination import actor_critic_losses, imagine
from flywheel.algorithms.dreamerv3.lambda_returns import lambda_returns
from flywheel.algorithms.dreamerv3.model_sizes import model_dims
from flywheel.algorithms.dreamerv3.world_model import WorldModel

DIMS = model_dims("nano")
STATE = 16 + 16
SPACES = {"discrete": gym.spaces.Discrete(2), "box": gym.spaces.Box(-1.0, 1.0, (2,), np.float32)}


def parts(kind):
    torch.manual_seed(0)
    world_model = WorldModel(3, 2, DIMS, symlog_obs=True)
    # Non-zero reward and value heads, so the returns and advantages are not all zero.
    for head in (world_model.reward_head,):
        torch.nn.init.normal_(head[-1].weight, std=0.5)
    actor, critic = Actor(STATE, SPACES[kind], DIMS), Critic(STATE, DIMS)
    torch.nn.init.normal_(critic.net[-1].weight, std=0.5)
    start = world_model.rssm.observe(torch.randn(3, 4, 16), torch.zeros(3, 4, 2), torch.zeros(3, 4))
    from flywheel.algorithms.dreamerv3.rssm import RSSMState

    return world_model, actor, critic, RSSMState(start.h.flatten(0, 1), start.z.flatten(0, 1))


def grads(module):
    return [p.grad for p in module.parameters() if p.requires_grad]


def test_rollout_shapes_and_returns():
    world_model, actor, critic, start = parts("discrete")
    imagined = imagine(world_model, actor, start, horizon=5, generator=torch.Generator().manual_seed(0))
    assert imagined.features.shape == (6, 12, STATE) and imagined.actions.shape == (6, 12, 2)
    assert torch.equal(imagined.features[0], torch.cat([start.h, start.z.flatten(-2)], -1))
    losses = actor_critic_losses(
        world_model,
        actor,
        critic,
        start,
        torch.ones(12),
        horizon=5,
        gamma=0.9,
        lambda_=0.8,
        entropy_scale=3e-4,
    )
    assert losses.returns.shape == (5, 12) and losses.values.shape == (6, 12)
    assert losses.returns.abs().sum() > 0
    assert 0 < losses.entropy.item() <= np.log(2) + 1e-6


def test_returns_follow_the_formula():
    world_model, actor, critic, start = parts("discrete")
    generator = torch.Generator().manual_seed(4)
    losses = actor_critic_losses(
        world_model,
        actor,
        critic,
        start,
        torch.ones(12),
        horizon=3,
        gamma=0.9,
        lambda_=0.8,
        entropy_scale=0.0,
        generator=generator,
    )
    imagined = imagine(world_model, actor, start, 3, torch.Generator().manual_seed(4))
    with torch.no_grad():
        rewards = world_model.predicted_rewards(imagined.states)
        continues = torch.cat([torch.ones(1, 12), world_model.predicted_continues(imagined.states)[1:]])
        values = critic.value(imagined.features)
    expected = lambda_returns(rewards, values, continues, gamma=0.9, lambda_=0.8)
    assert torch.allclose(losses.returns, expected, atol=1e-5)


def test_terminal_start_states_teach_nothing():
    world_model, actor, critic, start = parts("discrete")
    losses = actor_critic_losses(
        world_model,
        actor,
        critic,
        start,
        torch.zeros(12),
        horizon=3,
        gamma=0.9,
        lambda_=0.8,
        entropy_scale=3e-4,
    )
    assert losses.actor.item() == 0.0 and losses.critic.item() == 0.0


@pytest.mark.parametrize("kind", ["discrete", "box"])
def test_each_loss_reaches_only_its_part(kind):
    world_model, actor, critic, start = parts(kind)
    losses = actor_critic_losses(
        world_model,
        actor,
        critic,
        start,
        torch.ones(12),
        horizon=3,
        gamma=0.9,
        lambda_=0.8,
        entropy_scale=3e-4,
    )
    assert all(p.requires_grad for p in world_model.parameters())  # unfrozen again
    losses.actor.backward(retain_graph=True)
    assert all(g is None for g in grads(world_model) + grads(critic))
    assert sum(g.abs().sum() for g in grads(actor) if g is not None) > 0
    actor.zero_grad()
    losses.critic.backward()
    assert all(g is None for g in grads(world_model) + grads(actor))
    assert sum(g.abs().sum() for g in grads(critic) if g is not None) > 0
