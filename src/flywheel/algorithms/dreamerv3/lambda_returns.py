"""λ-returns over imagined trajectories (Hafner et al., 2023, eq. 7), with the continue flags the world
model predicts, and the weights that stop the actor and critic learning past a predicted episode end.

Time-major inputs over the imagined steps 0..H (N trajectories side by side, shape (H + 1, N)):
`rewards[t]` and `continues[t]` are predicted for reaching state t, `values[t]` is the critic's value of
state t. Then, with R_H = v_H,

    R_t = r_{t+1} + γ c_{t+1} ((1 - λ) v_{t+1} + λ R_{t+1})        for t = H-1 .. 0

and the loss weight of step t is c_0 prod_{i=1..t} γ c_i (c_0 at the start state: 0 where the replayed
start state ended its episode, so nothing is learned from imagining past it).
"""

from __future__ import annotations

import torch

__all__ = ["imagination_weights", "lambda_returns"]


def _check_time_major(rewards: torch.Tensor, values: torch.Tensor, continues: torch.Tensor) -> None:
    if not rewards.shape == values.shape == continues.shape or rewards.dim() < 1 or rewards.shape[0] < 2:
        raise ValueError(
            f"rewards {tuple(rewards.shape)}, values {tuple(values.shape)} and continues "
            f"{tuple(continues.shape)} must share one time-major shape (H + 1, ...) with H >= 1 "
            "imagined steps after the start state."
        )


def lambda_returns(
    rewards: torch.Tensor, values: torch.Tensor, continues: torch.Tensor, *, gamma: float, lambda_: float
) -> torch.Tensor:
    """The λ-returns R_0..R_{H-1}: shape (H, ...) from inputs of shape (H + 1, ...); see the module doc."""
    _check_time_major(rewards, values, continues)
    discounts = gamma * continues[1:]
    bootstrap = rewards[1:] + discounts * (1.0 - lambda_) * values[1:]
    running = values[-1]
    returns = []
    for t in reversed(range(discounts.shape[0])):
        running = bootstrap[t] + discounts[t] * lambda_ * running
        returns.append(running)
    return torch.stack(returns[::-1])


def imagination_weights(continues: torch.Tensor, *, gamma: float) -> torch.Tensor:
    """Loss weights of the imagined steps 0..H: `w_0 = c_0`, `w_t = c_0 prod_{i=1..t} γ c_i` (shape of
    `continues`). A step after a predicted episode end (c ≈ 0) weighs ≈ 0."""
    return torch.cumprod(torch.cat([continues[:1], gamma * continues[1:]]), dim=0)
