"""λ-returns over imagined trajectories with continue flags, and the imagination loss weights."""

import pytest
import torch

from flywheel.algorithms.dreamerv3.lambda_returns import imagination_weights, lambda_returns


def test_by_hand_two_steps():
    # H = 2; one trajectory. R_2 = v_2 = 4.
    rewards = torch.tensor([[0.0], [1.0], [2.0]])
    values = torch.tensor([[9.0], [3.0], [4.0]])
    continues = torch.tensor([[1.0], [1.0], [0.5]])
    gamma, lam = 0.9, 0.8
    r1 = 2.0 + 0.9 * 0.5 * ((1 - lam) * 4.0 + lam * 4.0)  # = 3.8
    r0 = 1.0 + 0.9 * 1.0 * ((1 - lam) * 3.0 + lam * r1)
    returns = lambda_returns(rewards, values, continues, gamma=gamma, lambda_=lam)
    assert returns.shape == (2, 1)
    assert torch.allclose(returns[:, 0], torch.tensor([r0, r1]))


def test_limits_lambda_zero_and_one():
    torch.manual_seed(0)
    rewards, values = torch.randn(6, 3), torch.randn(6, 3)
    continues = torch.tensor([1.0, 1.0, 0.0, 1.0, 1.0, 1.0])[:, None].expand(6, 3)
    gamma = 0.99
    td = lambda_returns(rewards, values, continues, gamma=gamma, lambda_=0.0)
    assert torch.allclose(td, rewards[1:] + gamma * continues[1:] * values[1:])
    monte_carlo = lambda_returns(rewards, values, continues, gamma=gamma, lambda_=1.0)
    # The episode ends on reaching step 2: R_0 = r_1 + γ r_2 and nothing after counts.
    assert torch.allclose(monte_carlo[0], rewards[1] + gamma * rewards[2])
    assert torch.allclose(
        monte_carlo[2], rewards[3] + gamma * rewards[4] + gamma**2 * rewards[5] + gamma**3 * values[5]
    )


def test_weights_stop_after_a_predicted_end():
    continues = torch.tensor([[1.0, 0.0], [1.0, 1.0], [0.5, 1.0], [0.0, 1.0], [1.0, 1.0]])
    weights = imagination_weights(continues, gamma=0.9)
    assert torch.allclose(weights[:, 0], torch.tensor([1.0, 0.9, 0.405, 0.0, 0.0]))
    # A start state that ended its episode (c_0 = 0) teaches nothing.
    assert torch.equal(weights[:, 1], torch.zeros(5))


def test_shape_mismatch_is_refused():
    with pytest.raises(ValueError, match="share one time-major shape"):
        lambda_returns(torch.zeros(3, 2), torch.zeros(3, 2), torch.zeros(2, 2), gamma=0.9, lambda_=0.95)
