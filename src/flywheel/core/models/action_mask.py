"""Action masking for the default modules: Dict observations ``{"observations": ..., "action_mask": ...}``.

An env whose observation space is exactly ``Dict({"observations": <space>, "action_mask": Box(0, 1,
(n,))})`` (RLlib's keys) with ``Discrete(n)`` actions gets a masked policy from flywheel's default PPO,
DQN and SAC modules: the encoder reads ``"observations"``, and actions whose mask entry is 0 get
`MASKED_LOGIT` as their logit (PPO, SAC) or Q-value (DQN), so they are never sampled, never the
greedy action, never a DQN target's argmax, and never an epsilon-greedy random action.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import torch

from flywheel.errors import ModuleError

ACTION_MASK = "action_mask"
"""The observation key of the mask: 1 (or True) for an allowed action, 0 for a forbidden one."""
MASKED_OBSERVATIONS = "observations"
"""The observation key of what the encoder reads."""
MASKED_LOGIT = -1e9
"""Logit (and Q-value) of a forbidden action: its probability is exactly 0 after the softmax, yet
terms like `alpha * log_prob` and `prob * log_prob` stay finite (with -inf or the float32 minimum,
`0 * -inf` makes the entropy and SAC's losses NaN)."""


def masked_observation_space(
    observation_space: gym.Space | None, action_space: gym.Space | None
) -> gym.Space | None:
    """The ``"observations"`` space when `observation_space` is an action-mask Dict (checked against
    `action_space`), else None."""
    if not (
        isinstance(observation_space, gym.spaces.Dict)
        and set(observation_space.spaces) == {ACTION_MASK, MASKED_OBSERVATIONS}
    ):
        return None
    mask_space = observation_space[ACTION_MASK]
    n = int(action_space.n) if isinstance(action_space, gym.spaces.Discrete) else None
    if n is None or not isinstance(mask_space, gym.spaces.Box | gym.spaces.MultiBinary):
        raise ModuleError(
            f"The observation space has an {ACTION_MASK!r} key, so the default module masks actions, which "
            f"needs Discrete actions and a Box or MultiBinary mask of shape (n,); got actions {action_space} "
            f"and mask {mask_space}. Fix: use Discrete actions, or rename the key if it is not an action mask."
        )
    if tuple(mask_space.shape) != (n,):
        raise ModuleError(
            f"observation[{ACTION_MASK!r}] has shape {tuple(mask_space.shape)}, but the action space "
            f"{action_space} needs one entry per action: expected ({n},). Fix: return one 0/1 flag per action."
        )
    return observation_space[MASKED_OBSERVATIONS]


def split_masked(obs: Any) -> tuple[Any, torch.Tensor]:
    """``(obs["observations"], obs["action_mask"] as a bool tensor)``."""
    return obs[MASKED_OBSERVATIONS], torch.as_tensor(obs[ACTION_MASK]) > 0


def mask_logits(values: torch.Tensor, allowed: torch.Tensor) -> torch.Tensor:
    """`values` ([..., n]) with `MASKED_LOGIT` wherever `allowed` (bool, [..., n]) is False."""
    return values.masked_fill(~allowed, MASKED_LOGIT)


def random_allowed_actions(allowed: torch.Tensor) -> torch.Tensor:
    """One action per row, uniform over the allowed ones (`allowed`: bool [..., n])."""
    scores = torch.rand(allowed.shape, device=allowed.device).masked_fill_(~allowed, -1.0)
    return torch.argmax(scores, dim=-1)
