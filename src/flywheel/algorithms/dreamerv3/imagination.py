"""Imagined rollouts and the actor and critic losses on them (Hafner et al., 2023, section 3).

From every replayed posterior state (B x T of them, detached: the world model learns only from its
own loss), the actor acts in the world model for `horizon_H` steps:

    s_0 = sg(posterior state),   a_t ~ pi(s_t),   s_{t+1} = (h from the sequence model, z ~ prior)

Rewards and continues are the world model's predictions (c_0 is the replayed one); values the critic's.
Then λ-returns R_t, weights w_t (lambda_returns.py), advantages (R_t - v_t) / max(1, S)
(return_normalization.py), and the two losses of actor.py and critic.py.

Discrete actions learn by REINFORCE, so the rollout needs no graph (no_grad). Box actions learn by
backpropagating the returns through the dynamics: the rollout keeps the graph to the actor while the
world model's and critic's weights are frozen, so the actor loss reaches only the actor.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from typing import NamedTuple

import torch
from torch import nn

from flywheel.algorithms.dreamerv3.actor import Actor
from flywheel.algorithms.dreamerv3.critic import Critic
from flywheel.algorithms.dreamerv3.lambda_returns import imagination_weights, lambda_returns
from flywheel.algorithms.dreamerv3.rssm import RSSMState
from flywheel.algorithms.dreamerv3.world_model import WorldModel, model_state

__all__ = ["ActorCriticLosses", "Imagined", "actor_critic_losses", "frozen", "imagine"]


class Imagined(NamedTuple):
    """An imagined rollout, time-major over steps 0..H: states (h (H+1, N, H_size), z (H+1, N, C, K)),
    their features `[h, flatten(z)]` (H+1, N, D) and the actions taken in them (H+1, N, A)."""

    states: RSSMState
    features: torch.Tensor
    actions: torch.Tensor


class ActorCriticLosses(NamedTuple):
    actor: torch.Tensor
    critic: torch.Tensor
    returns: torch.Tensor
    """λ-returns (H, N), detached."""
    values: torch.Tensor
    """The critic's values of steps 0..H (H+1, N), detached."""
    entropy: torch.Tensor


@contextmanager
def frozen(*modules: nn.Module) -> Iterator[None]:
    """Within the block, the modules' parameters get no gradients (inputs still do)."""
    params = [p for module in modules for p in module.parameters() if p.requires_grad]
    for p in params:
        p.requires_grad_(False)
    try:
        yield
    finally:
        for p in params:
            p.requires_grad_(True)


def imagine(
    world_model: WorldModel,
    actor: Actor,
    start: RSSMState,
    horizon: int,
    generator: torch.Generator | None = None,
) -> Imagined:
    """`horizon` steps of the actor in the world model from the (detached) `start` states (N rows)."""
    state = RSSMState(start.h.detach(), start.z.detach())
    hs, zs, features, actions = [], [], [], []
    for t in range(horizon + 1):
        feature = model_state(state)
        action = actor.sample(actor.distribution(feature), generator)
        hs.append(state.h)
        zs.append(state.z)
        features.append(feature)
        actions.append(action)
        if t < horizon:
            state = world_model.rssm.imagine_step(state, action, generator)
    return Imagined(RSSMState(torch.stack(hs), torch.stack(zs)), torch.stack(features), torch.stack(actions))


def actor_critic_losses(
    world_model: WorldModel,
    actor: Actor,
    critic: Critic,
    start: RSSMState,
    start_continues: torch.Tensor,
    *,
    horizon: int,
    gamma: float,
    lambda_: float,
    entropy_scale: float,
    generator: torch.Generator | None = None,
) -> ActorCriticLosses:
    """Imagine from `start` (N rows, with their replayed continue flags) and return both losses."""
    backprop = not actor.discrete
    with frozen(world_model, critic), nullcontext() if backprop else torch.no_grad():
        imagined = imagine(world_model, actor, start, horizon, generator)
        rewards = world_model.predicted_rewards(imagined.states)
        predicted_continues = world_model.predicted_continues(imagined.states)[1:]
        continues = torch.cat([start_continues[None].float(), predicted_continues])
        values = critic.value(imagined.features)
    returns = lambda_returns(rewards, values, continues, gamma=gamma, lambda_=lambda_)
    weights = imagination_weights(continues.detach(), gamma=gamma)[:-1]
    actor.return_normalizer.update(returns)
    advantages = actor.return_normalizer.advantages(returns, values[:-1])
    dist = actor.distribution(imagined.features[:-1] if backprop else imagined.features[:-1].detach())
    entropy = dist.entropy()
    if backprop:
        objective = advantages
    else:
        objective = advantages.detach() * dist.log_prob(imagined.actions[:-1].detach())
    actor_loss = -(weights * (objective + entropy_scale * entropy)).mean()
    critic_loss = critic.loss(imagined.features[:-1].detach(), returns.detach(), weights)
    return ActorCriticLosses(
        actor_loss, critic_loss, returns.detach(), values.detach(), entropy.detach().mean()
    )
