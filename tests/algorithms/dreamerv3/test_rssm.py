"""The RSSM: shapes, one-hot stochastic states, the learned initial state and resets at is_first."""

import torch

from flywheel.algorithms.dreamerv3.model_sizes import model_dims
from flywheel.algorithms.dreamerv3.rssm import RSSM, RSSMState

DIMS = model_dims("nano")  # h: 16, z: 4 x 4


def make():
    torch.manual_seed(0)
    return RSSM(embed_size=16, action_size=2, dims=DIMS)


def test_initial_state():
    rssm = make()
    start = rssm.initial_state(3)
    assert torch.allclose(start.h, torch.tanh(rssm.initial_h).expand(3, 16))
    assert start.z.shape == (3, 4, 4) and torch.equal(start.z.sum(-1), torch.ones(3, 4))
    assert torch.equal(start.z.argmax(-1), rssm.prior_probs(start.h).argmax(-1))


def test_observe_shapes_and_probabilities():
    rssm = make()
    embeds, actions = torch.randn(2, 5, 16), torch.randn(2, 5, 2)
    out = rssm.observe(embeds, actions, torch.zeros(2, 5), generator=torch.Generator().manual_seed(0))
    assert out.h.shape == (2, 5, 16) and out.z.shape == (2, 5, 4, 4)
    assert torch.equal(out.z.detach().sum(-1), torch.ones(2, 5, 4))
    for probs in (out.posterior_probs, out.prior_probs):
        assert torch.allclose(probs.sum(-1), torch.ones(2, 5, 4))
        assert probs.min().item() >= 0.01 / 4 - 1e-7  # unimix floor


def test_is_first_restarts_the_row():
    # A row flagged is_first at t=3 continues exactly like a fresh row started with the same inputs.
    rssm = make()
    embeds, actions = torch.randn(1, 5, 16), torch.randn(1, 5, 2)
    is_first = torch.tensor([[0.0, 0.0, 0.0, 1.0, 0.0]])
    mid = rssm.observe(embeds, actions, is_first, generator=torch.Generator().manual_seed(0))
    fresh = rssm.observe(
        embeds[:, 3:], actions[:, 3:], torch.zeros(1, 2), generator=torch.Generator().manual_seed(0)
    )
    assert torch.allclose(mid.h[:, 3], fresh.h[:, 0])
    assert torch.allclose(mid.posterior_probs[:, 3], fresh.posterior_probs[:, 0])
    # The step after a restart uses the posterior sample of the restart step, so h_4 follows from z_3.
    h4 = rssm.step(RSSMState(mid.h[:, 3], mid.z[:, 3]), actions[:, 3])
    assert torch.allclose(mid.h[:, 4], h4)


def test_step_uses_previous_state_and_action():
    rssm = make()
    state = RSSMState(torch.randn(2, 16), torch.eye(4).expand(2, 4, 4).clone())
    one, two = rssm.step(state, torch.zeros(2, 2)), rssm.step(state, torch.ones(2, 2))
    assert not torch.allclose(one, two)
    restarted = rssm.step(state, torch.ones(2, 2), torch.tensor([1.0, 0.0]))
    assert torch.allclose(restarted[0], rssm.step(rssm.initial_state(1), torch.zeros(1, 2))[0])
    assert torch.allclose(restarted[1], two[1])


def test_gradients_reach_the_posterior_through_samples():
    rssm = make()
    out = rssm.observe(torch.randn(2, 3, 16), torch.randn(2, 3, 2), torch.zeros(2, 3))
    out.z.sum(dim=(-1, -2)).mul(torch.randn(2, 3)).sum().backward()
    assert rssm.posterior_net[-1].weight.grad.abs().sum() > 0
