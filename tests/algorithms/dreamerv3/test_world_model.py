"""The world model: its losses against their formulas at initialization, and a short fit."""

import math

import torch

from flywheel.algorithms.dreamerv3.model_sizes import model_dims
from flywheel.algorithms.dreamerv3.symlog import symlog
from flywheel.algorithms.dreamerv3.world_model import WorldModel


def batch(seed=0, b=4, t=6):
    g = torch.Generator().manual_seed(seed)
    obs = torch.randn(b, t, 3, generator=g) * 5.0
    actions = torch.nn.functional.one_hot(torch.randint(0, 2, (b, t), generator=g), 2).float()
    rewards = torch.ones(b, t)
    terminateds = torch.zeros(b, t)
    terminateds[:, -1] = 1.0
    return obs, actions, torch.zeros(b, t), rewards, terminateds


def test_losses_at_initialization():
    torch.manual_seed(0)
    model = WorldModel(3, 2, model_dims("nano"), symlog_obs=True)
    obs, actions, is_first, rewards, terminateds = batch()
    out = model.observe(obs, actions, is_first)
    assert torch.equal(out.obs_target, symlog(obs))
    losses = model.losses(out, rewards, terminateds)
    expected_decoder = (out.obs_prediction - symlog(obs)).square().sum(-1).mean()
    assert torch.allclose(losses.decoder, expected_decoder)
    # Zero-initialized reward head: uniform over 255 buckets, cross-entropy ln(255), prediction 0.
    assert math.isclose(losses.reward.item(), math.log(255.0), rel_tol=1e-5)
    assert torch.allclose(model.predicted_rewards(out.states), torch.zeros(4, 6), atol=1e-5)
    assert losses.dynamics.item() >= 1.0 and losses.representation.item() >= 1.0  # free bits
    total = (
        losses.decoder
        + losses.reward
        + losses.continue_
        + 0.5 * losses.dynamics
        + 0.1 * losses.representation
    )
    assert torch.allclose(losses.total, total, atol=1e-5)


def test_a_short_fit_halves_reconstruction_and_reward_losses():
    """Measured: decoder 7.51 -> 1.20, reward 5.54 -> 0.94, continue 0.74 -> 0.26 in 80 Adam steps
    (4.5 s on a loaded 2-core machine)."""
    torch.manual_seed(0)
    model = WorldModel(3, 2, model_dims("nano"), symlog_obs=True)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    obs, actions, is_first, rewards, terminateds = batch()
    first = None
    for _ in range(80):
        losses = model.losses(model.observe(obs, actions, is_first), rewards, terminateds)
        first = first or losses
        optimizer.zero_grad()
        losses.total.backward()
        optimizer.step()
    assert losses.decoder.item() < 0.5 * first.decoder.item()
    assert losses.reward.item() < 0.5 * first.reward.item()
