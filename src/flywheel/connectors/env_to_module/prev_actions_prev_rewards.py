"""`PrevActionsPrevRewards`: the module also sees the last actions and rewards (e.g. for meta-RL)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from flywheel.columns import Columns
from flywheel.connectors.connector import ConnectorV2
from flywheel.connectors.env_to_module.learner_rows import set_learner_observations
from flywheel.errors import ConnectorError


class PrevActionsPrevRewards(ConnectorV2):
    """Observation → `concat(obs, last n actions, last n rewards)` as one flat float32 vector.

    Actions are one-hot for a Discrete action space and raw (flattened) for a Box one, oldest first;
    positions before the episode start (or before the stored history of a chunk) are zeros. A chunk
    that continues an earlier one needs `len_lookback_buffer >= max(n_prev_actions, n_prev_rewards)`
    to see the previous chunk's actions.

    The episodes are not rewritten; the piece sets `batch[OBS]` itself, so the default observation
    piece skips. With `as_learner_connector=True` it sets `batch[module_id][OBS]` instead: one row per
    step of each chunk (observation `j` with the actions/rewards of steps `j - n .. j - 1`, for
    `j = 0 .. len(chunk) - 1`, and `j = len(chunk)` too when `AddOneTsToEpisodesAndTruncate` added a
    bootstrap row), every agent's chunks of multi-agent episodes included.
    """

    def __init__(
        self,
        input_observation_space: gym.Space | None = None,
        input_action_space: gym.Space | None = None,
        *,
        n_prev_actions: int = 1,
        n_prev_rewards: int = 1,
        as_learner_connector: bool = False,
        **kwargs: Any,
    ):
        self.n_prev_actions = n_prev_actions
        self.n_prev_rewards = n_prev_rewards
        self.as_learner_connector = as_learner_connector
        super().__init__(input_observation_space, input_action_space, **kwargs)

    def recompute_output_observation_space(
        self, input_observation_space: gym.Space, input_action_space: gym.Space | None
    ) -> gym.Space | None:
        obs_space, act_space = input_observation_space, input_action_space
        if act_space is None:
            return None  # Unknown until the action space is set too.
        if not isinstance(obs_space, gym.spaces.Box):
            raise ConnectorError(
                f"PrevActionsPrevRewards needs Box observations, got {obs_space}. Put FlattenObservations "
                f"before it."
            )
        if isinstance(act_space, gym.spaces.Discrete):
            # One-hot rows; padded positions hold a valid action (masked to zeros after encoding).
            self._action_dim, self._discrete_start = int(act_space.n), int(act_space.start)
            self._action_pad = self._discrete_start
            self._action_shape: tuple[int, ...] = ()  # a Discrete action is a scalar
        elif isinstance(act_space, gym.spaces.Box):
            self._action_dim, self._discrete_start = int(np.prod(act_space.shape)), None
            self._action_pad = 0
            self._action_shape = act_space.shape
        else:
            raise ConnectorError(
                f"PrevActionsPrevRewards needs a Discrete or Box action space, got {act_space}; encode "
                f"other action spaces with a custom piece."
            )
        extra = self.n_prev_actions * self._action_dim + self.n_prev_rewards
        low = np.concatenate([obs_space.low.reshape(-1), np.full(extra, -np.inf)]).astype(np.float32)
        high = np.concatenate([obs_space.high.reshape(-1), np.full(extra, np.inf)]).astype(np.float32)
        return gym.spaces.Box(low, high, low.shape, np.float32)

    def __call__(
        self,
        *,
        rl_module: Any,
        batch: dict[str, Any],
        episodes: list[Any],
        explore: bool | None = None,
        shared_data: dict | None = None,
        metrics: Any = None,
        **kwargs: Any,
    ) -> dict[str, Any]:
        if self.as_learner_connector:
            set_learner_observations(batch, episodes, self._learner_rows, shared_data)
            return batch
        if not episodes:
            return batch
        n_a, n_r = self.n_prev_actions, self.n_prev_rewards
        obs = np.asarray([episode.get_observations(-1) for episode in episodes])
        parts = [obs.reshape(len(episodes), -1)]
        if n_a:
            histories = [episode.get_actions(slice(-n_a, None)) for episode in episodes]
            actions, valid = _pad_front(histories, n_a, self._action_shape, self._action_pad)
            parts.append(self._encode_actions(actions, valid).reshape(len(episodes), -1))
        if n_r:
            histories = [episode.get_rewards(slice(-n_r, None)) for episode in episodes]
            rewards, _ = _pad_front(histories, n_r, (), 0.0)
            parts.append(rewards)
        batch[Columns.OBS] = np.concatenate(parts, axis=1, dtype=np.float32)
        return batch

    def _learner_rows(self, episode: Any, n: int) -> np.ndarray:
        n_a, n_r = self.n_prev_actions, self.n_prev_rewards
        obs = np.asarray(episode.get_observations(slice(0, n)))
        parts = [obs.reshape(n, -1)]
        if n_a:
            # Actions -n_a .. n-2 (lookback included): window j covers the n_a actions before obs j.
            history = episode.get_actions(slice(-n_a, n - 1), neg_index_as_lookback=True)
            actions, valid = _pad_front([history], n + n_a - 1, self._action_shape, self._action_pad)
            encoded = self._encode_actions(actions, valid)[0]  # [n + n_a - 1, action_dim]
            windows = np.moveaxis(sliding_window_view(encoded, n_a, axis=0), -1, 1)
            parts.append(windows.reshape(n, -1))
        if n_r:
            history = episode.get_rewards(slice(-n_r, n - 1), neg_index_as_lookback=True)
            rewards, _ = _pad_front([history], n + n_r - 1, (), 0.0)
            parts.append(sliding_window_view(rewards[0], n_r))
        return np.concatenate(parts, axis=1, dtype=np.float32)

    def _encode_actions(self, actions: np.ndarray, valid: np.ndarray) -> np.ndarray:
        """`[B, T] (+ action shape)` actions → `[B, T, action_dim]` floats, zero where not `valid`."""
        if self._discrete_start is not None:
            eye = np.eye(self._action_dim, dtype=np.float32)
            return eye[actions.astype(np.int64) - self._discrete_start] * valid[..., None]
        return actions.reshape(*valid.shape, -1).astype(np.float32) * valid[..., None]

    def __repr__(self) -> str:
        return (
            f"PrevActionsPrevRewards(n_prev_actions={self.n_prev_actions}, "
            f"n_prev_rewards={self.n_prev_rewards}, as_learner_connector={self.as_learner_connector})"
        )


def _pad_front(
    histories: list[Any], length: int, item_shape: tuple[int, ...], value: Any
) -> tuple[np.ndarray, np.ndarray]:
    """Per-episode histories (newest last) → `[B, length, *item_shape]`, padded in front with `value`.

    Also returns the `[B, length]` mask of real (not padded) entries.
    """
    valid = np.ones((len(histories), length), dtype=bool)
    rows = []
    for index, history in enumerate(histories):
        history = np.asarray(history).reshape(-1, *item_shape)
        missing = length - len(history)
        if missing > 0:
            valid[index, :missing] = False
            history = np.concatenate([np.full((missing, *item_shape), value, history.dtype), history])
        rows.append(history)
    return np.asarray(rows), valid
