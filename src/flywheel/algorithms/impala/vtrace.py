"""V-trace (Espeholt et al., 2018): off-policy value targets and policy-gradient advantages.

    vs, pg_advantages = vtrace_torch(
        target_action_log_probs=logp_learner,     # [T, B]: log pi(a_t | x_t), the policy being learned
        behaviour_action_log_probs=logp_runner,   # [T, B]: log mu(a_t | x_t), the policy that acted
        discounts=gamma * (1 - terminated),       # [T, B]
        rewards=rewards, values=values,           # [T, B]
        bootstrap_values=values_after_last_step,  # [B]: V(x_T)
    )

With `rho_t = min(rho_bar, pi / mu)` and `c_t = min(1, pi / mu)` (the paper's truncated importance
weights), `delta_t = rho_t * (r_t + discount_t * V(x_{t+1}) - V(x_t))` and

    vs_t = V(x_t) + delta_t + discount_t * c_t * (vs_{t+1} - V(x_{t+1})),   vs_T = V(x_T)
    pg_advantage_t = min(rho_bar_pg, pi / mu) * (r_t + discount_t * vs_{t+1} - V(x_t)).

The recursion runs as a log-depth scan over time, vectorized over time and batch (no Python loop
over timesteps). A step whose importance weight is 0 (target log-prob -inf) gets `vs = V`: the
learner marks bootstrap and padding elements of its sequences that way.
"""

from __future__ import annotations

import torch


@torch.no_grad()
def vtrace_torch(
    *,
    target_action_log_probs: torch.Tensor,
    behaviour_action_log_probs: torch.Tensor,
    discounts: torch.Tensor,
    rewards: torch.Tensor,
    values: torch.Tensor,
    bootstrap_values: torch.Tensor,
    clip_rho_threshold: float | torch.Tensor | None = 1.0,
    clip_pg_rho_threshold: float | torch.Tensor | None = 1.0,
) -> tuple[torch.Tensor, torch.Tensor]:
    """`(vs, pg_advantages)`, both `[T, B]` and without gradient (RLlib's signature and semantics).

    Args:
        target_action_log_probs: `[T, B]` log-probs of the taken actions under the target policy.
        behaviour_action_log_probs: `[T, B]` log-probs under the behaviour policy (the runner's).
        discounts: `[T, B]` gamma, 0 after a termination.
        rewards: `[T, B]` rewards.
        values: `[T, B]` value estimates V(x_t).
        bootstrap_values: `[B]` V(x_T), the value after the last step.
        clip_rho_threshold: rho-bar, the clip of the weights in `vs` (None: no clipping).
        clip_pg_rho_threshold: the clip of the weights in the advantages (None: no clipping).
    """
    rhos = torch.exp(target_action_log_probs - behaviour_action_log_probs)
    clipped_rhos = rhos if clip_rho_threshold is None else torch.clamp(rhos, max=clip_rho_threshold)
    cs = torch.clamp(rhos, max=1.0)
    bootstrap = bootstrap_values.unsqueeze(0)
    next_values = torch.cat([values[1:], bootstrap])
    deltas = clipped_rhos * (rewards + discounts * next_values - values)
    vs = values + reverse_linear_scan(deltas, discounts * cs)
    next_vs = torch.cat([vs[1:], bootstrap])
    pg_rhos = rhos if clip_pg_rho_threshold is None else torch.clamp(rhos, max=clip_pg_rho_threshold)
    return vs, pg_rhos * (rewards + discounts * next_vs - values)


def reverse_linear_scan(x: torch.Tensor, a: torch.Tensor) -> torch.Tensor:
    """Solves `y_t = x_t + a_t * y_{t+1}` along dim 0 (y past the end = 0) in log2(T) steps.

    After the step with shift `s`, `y_t` holds the terms `t .. t+2s-1` and `a_t` the product of the
    coefficients over that span (the weight of `y_{t+2s}`).
    """
    y, a = x, a
    shift, length = 1, x.shape[0]
    while shift < length:
        pad = torch.zeros_like(x[:shift])
        y = y + torch.cat([a[:-shift] * y[shift:], pad])
        a = torch.cat([a[:-shift] * a[shift:], pad])
        shift *= 2
    return y
