"""`NormalizeRewards`: scales rewards by the running standard deviation of the discounted return.

    config.env_runners(normalize_rewards=True)          # this piece, with config.gamma
    config.env_runners(env_to_module_connector=lambda env, spaces, device: NormalizeRewards(gamma=0.99, clip=5.0))

What SB3's `VecNormalize(norm_reward=True)` and gymnasium's `NormalizeReward` (CleanRL) do: per
sub-env a discounted return `G = gamma * G + r` (reset when an episode starts), a running variance
of every `G` seen, and each reward becomes `clip(r / sqrt(var + epsilon), -clip, clip)`. Rewards
keep their sign and are not shifted; only their scale changes, so value targets stay in a range
the critic can fit whatever the env's reward scale.
"""

from __future__ import annotations

import math
import numbers
from typing import TYPE_CHECKING, Any

import gymnasium as gym
import numpy as np

from flywheel.connectors.connector import ConnectorV2
from flywheel.errors import ConnectorError
from flywheel.typing import StateDict

if TYPE_CHECKING:
    from flywheel.typing import EpisodeType

_PRUNE_EVERY = 1000
"""Calls after which the discounted returns of episodes no call has passed since are dropped (runners
pass every ongoing episode on every call; an episode dropped without ending is forgotten this way)."""


class NormalizeRewards(ConnectorV2):
    """Rewrites each episode's newest rewards (those no earlier call saw) in place, normalized.

    Runs as an env-to-module piece on the runners, so the statistics follow every sub-env's reward
    stream step by step, and the episodes the learner trains on hold the normalized rewards. The
    runners' reported returns (`episode_return_mean`, ...) are summed from the env's raw rewards
    and stay raw; `episode.get_return()` in a callback is the normalized one.

    Statistics: the count, mean and variance of the discounted returns (Chan et al.'s parallel
    update, exact and order-free). As in `MeanStdFilter`, the state keeps what the runner received
    with `set_state` ("shared") apart from what it added since ("delta"), so `merge_states` over
    the runners adds up exactly, and checkpoints save the statistics (not the per-episode returns:
    episodes restart after a restore).

    Args:
        gamma: Discount of the running return (use the algorithm's `gamma`).
        clip: Normalized rewards are clipped to [-clip, clip] (float("inf"): no clipping).
        epsilon: Added to the variance before the square root.
        update_stats: False freezes the statistics (rewards are still normalized).
    """

    def __init__(
        self,
        input_observation_space: gym.Space | None = None,
        input_action_space: gym.Space | None = None,
        *,
        gamma: float = 0.99,
        clip: float = 10.0,
        epsilon: float = 1e-8,
        update_stats: bool = True,
        **kwargs: object,
    ):
        _check_args(gamma, clip, epsilon)
        self.gamma = float(gamma)
        self.clip = float(clip)
        self.epsilon = float(epsilon)
        self.update_stats = update_stats
        # Per open episode id: (env steps processed, i.e. the episode's t, discounted return so far, last call).
        self._open: dict[Any, tuple[int, float, int]] = {}
        self._calls = 0
        self.reset_state()
        super().__init__(input_observation_space, input_action_space, **kwargs)

    def __call__(
        self,
        *,
        rl_module: Any,
        batch: dict[str, Any],
        episodes: list[EpisodeType],
        explore: bool | None = None,
        shared_data: dict | None = None,
        metrics: Any = None,
        **kwargs: object,
    ) -> dict[str, Any]:
        self._calls += 1
        pending = []  # (episode, index of its first new reward or -1, new rewards, their returns)
        for episode in episodes:
            update = self._new_rewards(episode)
            if update is not None:
                pending.append(update)
        if pending:
            if self.update_stats:
                self._add_returns([ret for *_, returns in pending for ret in returns])
            scale = 1.0 / math.sqrt(self.variance + self.epsilon)
            for episode, start, rewards, _ in pending:
                if start == -1:  # one new step (a runner's every call): plain floats, no array
                    normalized = max(-self.clip, min(self.clip, rewards[0] * scale))
                    episode.set_rewards(new_data=normalized, at_indices=-1)
                else:
                    normalized = np.clip(np.asarray(rewards) * scale, -self.clip, self.clip)
                    episode.set_rewards(new_data=normalized, at_indices=slice(start, len(episode)))
        if self._calls % _PRUNE_EVERY == 0:
            oldest = self._calls - _PRUNE_EVERY
            self._open = {key: value for key, value in self._open.items() if value[2] > oldest}
        return batch

    def _new_rewards(self, episode: Any) -> tuple | None:
        """(episode, start, rewards, discounted returns) of the rewards no call saw yet, or None."""
        if not hasattr(episode, "get_rewards") or hasattr(episode, "agent_episodes"):
            raise ConnectorError(
                f"NormalizeRewards normalizes single-agent episodes, got {type(episode).__name__}. Fix: "
                "normalize rewards inside a multi-agent env, or leave normalize_rewards off for multi-agent runs."
            )
        key = episode.id_
        seen_t, ret, _ = self._open.get(key, (episode.t_started, 0.0, 0))
        if episode.t <= seen_t:
            if episode.is_done:
                self._open.pop(key, None)
            else:
                self._open[key] = (seen_t, ret, self._calls)
            return None
        if episode.t - seen_t == 1:
            start, rewards = -1, [float(episode.get_rewards(-1))]
        else:
            start = max(0, seen_t - episode.t_started)
            rewards = [float(r) for r in episode.get_rewards(slice(start, len(episode)))]
        returns = []
        for reward in rewards:
            ret = self.gamma * ret + reward
            returns.append(ret)
        if episode.is_done:
            self._open.pop(key, None)
        else:
            self._open[key] = (episode.t, ret, self._calls)
        return episode, start, rewards, returns

    # Statistics: plain floats (count, mean, M2), since a runner updates them once per env step.

    @property
    def variance(self) -> float:
        """The running (population) variance of the discounted returns; 1.0 before any data."""
        count, _, m2 = self._total
        return m2 / count if count else 1.0

    def _add_returns(self, returns: list[float]) -> None:
        count = len(returns)
        mean = sum(returns) / count
        batch = (count, mean, sum((ret - mean) ** 2 for ret in returns))
        self._delta = _combine(self._delta, batch)
        self._total = _combine(self._total, batch)

    def get_state(self) -> StateDict:
        """`{"shared": {count, mean, var}, "delta": {count, mean, var}}` of the discounted returns."""
        return {"shared": _to_state(self._shared), "delta": _to_state(self._delta)}

    def set_state(self, state: StateDict) -> None:
        """Takes the state's shared statistics plus its delta as the new shared ones; clears the delta."""
        self._shared = _combine(_from_state(state["shared"]), _from_state(state["delta"]))
        self._delta = (0, 0.0, 0.0)
        self._total = self._shared

    def merge_states(self, states: list[StateDict]) -> StateDict:
        """The largest shared statistics (they only grow with syncs) plus every runner's delta."""
        shared = max((_from_state(state["shared"]) for state in states), key=lambda moments: moments[0])
        for state in states:
            shared = _combine(shared, _from_state(state["delta"]))
        return {"shared": _to_state(shared), "delta": _to_state((0, 0.0, 0.0))}

    def reset_state(self) -> None:
        self._shared = self._delta = self._total = (0, 0.0, 0.0)

    def __repr__(self) -> str:
        return f"NormalizeRewards(gamma={self.gamma}, clip={self.clip}, count={self._total[0]})"


def _combine(a: tuple[int, float, float], b: tuple[int, float, float]) -> tuple[int, float, float]:
    """(count, mean, M2) of two sets together (Chan et al.'s parallel update)."""
    if b[0] == 0:
        return a
    if a[0] == 0:
        return b
    count = a[0] + b[0]
    delta = b[1] - a[1]
    return count, a[1] + delta * b[0] / count, a[2] + b[2] + delta * delta * a[0] * b[0] / count


def _to_state(moments: tuple[int, float, float]) -> StateDict:
    count, mean, m2 = moments
    return {"count": count, "mean": mean, "var": m2 / count if count else 1.0}


def _from_state(state: StateDict) -> tuple[int, float, float]:
    count = int(state["count"])
    return count, float(state["mean"]), float(state["var"]) * count


def _is_number(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _check_args(gamma: Any, clip: Any, epsilon: Any) -> None:
    problems = []
    if not (_is_number(gamma) and 0 <= gamma <= 1):
        problems.append(f"gamma={gamma!r} must be a number in [0, 1]")
    if not (_is_number(clip) and clip > 0):
        problems.append(f"clip={clip!r} must be a number > 0 (float('inf') for no clipping)")
    if not (_is_number(epsilon) and epsilon > 0):
        problems.append(f"epsilon={epsilon!r} must be a number > 0")
    if problems:
        raise ConnectorError(f"NormalizeRewards: {'; '.join(problems)}. Fix: pass valid values.")
