"""`PrevActionsPrevRewards`: the module also sees the last actions and rewards (e.g. for meta-RL)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import gymnasium as gym
import numpy as np

from flywheel.connectors.connector import ConnectorV2
from flywheel.errors import ConnectorError

if TYPE_CHECKING:
    from flywheel.core.rl_module.rl_module import RLModule
    from flywheel.metrics.metrics_logger import MetricsLogger
    from flywheel.typing import AgentID, EpisodeType


@dataclass(frozen=True)
class _ActionCoding:
    """How one agent's actions become `prev_n_actions` rows: one-hot (Discrete) or raw (Box)."""

    dim: int  # entries per action
    shape: tuple[int, ...]  # of one action as stored
    discrete_start: int | None  # Discrete's `start`; None for Box actions
    pad: Any  # a valid action for positions before the start (masked to zeros after encoding)


class PrevActionsPrevRewards(ConnectorV2):
    """Observation → `{"_orig_obs": obs, "prev_n_actions": ..., "prev_n_rewards": ...}`, in the episodes.

    As RLlib's piece, it rewrites each episode's newest observation (on a multi-agent runner: each
    agent's that just observed) with that Dict, so the module acts on it and the learner trains on it,
    final observations and PPO's bootstrap row included. `prev_n_actions` holds the last
    `n_prev_actions` actions, oldest first (one-hot for a Discrete action space, flattened for a Box),
    `prev_n_rewards` the last `n_prev_rewards` rewards; positions before the episode start are zeros.
    Put `FlattenObservations` after it for a module that takes flat vectors (the default models): the
    flat row is `concat(obs, actions, rewards)`.

    With `multi_agent=True` the input spaces are the Dicts of every agent's spaces and the output is
    the Dict of every agent's Dict. The piece reads `max(n_prev_actions, n_prev_rewards)` steps of a
    continued chunk's lookback (`required_episode_lookback`), so runners keep that much history.
    """

    ORIG_OBS_KEY = "_orig_obs"
    PREV_ACTIONS_KEY = "prev_n_actions"
    PREV_REWARDS_KEY = "prev_n_rewards"

    def __init__(
        self,
        input_observation_space: gym.Space | None = None,
        input_action_space: gym.Space | None = None,
        *,
        multi_agent: bool = False,
        n_prev_actions: int = 1,
        n_prev_rewards: int = 1,
        as_learner_connector: bool = False,
        **kwargs: object,
    ):
        if as_learner_connector:
            raise ConnectorError(
                "PrevActionsPrevRewards(as_learner_connector=True): the piece rewrites the observations in "
                "the episodes on the env runners (as RLlib's does), so the learner already trains on them. "
                "Fix: keep it in env_to_module_connector only and drop it from learner_connector."
            )
        self.multi_agent = multi_agent
        self.n_prev_actions = n_prev_actions
        self.n_prev_rewards = n_prev_rewards
        self._codings: dict[Any, _ActionCoding] = {}  # per agent id (None: single-agent)
        super().__init__(input_observation_space, input_action_space, **kwargs)

    @property
    def required_episode_lookback(self) -> int:
        return max(self.n_prev_actions, self.n_prev_rewards)

    def recompute_output_observation_space(
        self, input_observation_space: gym.Space, input_action_space: gym.Space | None
    ) -> gym.Space | None:
        if input_action_space is None:
            return None  # Unknown until the action space is set too.
        if not self.multi_agent:
            return self._agent_space(None, input_observation_space, input_action_space)
        if not isinstance(input_observation_space, gym.spaces.Dict) or not isinstance(
            input_action_space, gym.spaces.Dict
        ):
            raise ConnectorError(
                f"PrevActionsPrevRewards(multi_agent=True) expects the Dicts of the agents' spaces, got "
                f"{input_observation_space} and {input_action_space}. Fix: drop multi_agent=True on a "
                "single-agent runner."
            )
        return gym.spaces.Dict(
            {
                agent_id: self._agent_space(agent_id, obs_space, input_action_space[agent_id])
                for agent_id, obs_space in input_observation_space.spaces.items()
            }
        )

    def _agent_space(self, agent_id: AgentID, obs_space: gym.Space, act_space: gym.Space) -> gym.spaces.Dict:
        if isinstance(act_space, gym.spaces.Discrete):
            coding = _ActionCoding(int(act_space.n), (), int(act_space.start), int(act_space.start))
            low, high = np.zeros(coding.dim), np.ones(coding.dim)
        elif isinstance(act_space, gym.spaces.Box):
            coding = _ActionCoding(int(np.prod(act_space.shape)), act_space.shape, None, 0)
            low, high = act_space.low.reshape(-1), act_space.high.reshape(-1)
        else:
            raise ConnectorError(
                f"PrevActionsPrevRewards needs a Discrete or Box action space, got {act_space}; encode "
                f"other action spaces with a custom piece."
            )
        self._codings[agent_id] = coding
        n_a, n_r = self.n_prev_actions, self.n_prev_rewards
        return gym.spaces.Dict(
            {
                self.ORIG_OBS_KEY: obs_space,
                self.PREV_ACTIONS_KEY: gym.spaces.Box(
                    np.tile(low, n_a).astype(np.float32),
                    np.tile(high, n_a).astype(np.float32),
                    dtype=np.float32,
                ),
                self.PREV_REWARDS_KEY: gym.spaces.Box(-np.inf, np.inf, (n_r,), np.float32),
            }
        )

    def __call__(
        self,
        *,
        rl_module: RLModule,
        batch: dict[str, Any],
        episodes: list[EpisodeType],
        explore: bool | None = None,
        shared_data: dict | None = None,
        metrics: MetricsLogger | None = None,
        **kwargs: object,
    ) -> dict[str, Any]:
        per_agent: dict[Any, list[Any]] = {}
        for episode in self.single_agent_episode_iterator(episodes):
            per_agent.setdefault(episode.agent_id if self.multi_agent else None, []).append(episode)
        for agent_id, agent_episodes in per_agent.items():
            self._rewrite_newest(agent_episodes, self._codings[agent_id])
        return batch

    def _rewrite_newest(self, episodes: list[EpisodeType], coding: _ActionCoding) -> None:
        """Replaces each episode's newest observation by its Dict (one agent's episodes: one coding)."""
        n_a, n_r = self.n_prev_actions, self.n_prev_rewards
        actions = np.zeros((len(episodes), n_a * coding.dim), np.float32)
        if n_a:
            histories = [episode.get_actions(slice(-n_a, None)) for episode in episodes]
            padded, valid = _pad_front(histories, n_a, coding.shape, coding.pad)
            actions = _encode_actions(padded, valid, coding).reshape(len(episodes), -1)
        rewards = np.zeros((len(episodes), n_r), np.float32)
        if n_r:
            rewards = _pad_front([e.get_rewards(slice(-n_r, None)) for e in episodes], n_r, (), 0.0)[0]
            rewards = rewards.astype(np.float32)
        for episode, episode_actions, episode_rewards in zip(episodes, actions, rewards):
            new_observation = {
                self.ORIG_OBS_KEY: episode.get_observations(-1),
                self.PREV_ACTIONS_KEY: episode_actions,
                self.PREV_REWARDS_KEY: episode_rewards,
            }
            episode.set_observations(new_data=new_observation, at_indices=-1)

    def __repr__(self) -> str:
        return (
            f"PrevActionsPrevRewards(multi_agent={self.multi_agent}, n_prev_actions={self.n_prev_actions}, "
            f"n_prev_rewards={self.n_prev_rewards})"
        )


def _encode_actions(actions: np.ndarray, valid: np.ndarray, coding: _ActionCoding) -> np.ndarray:
    """`[B, T] (+ action shape)` actions → `[B, T, dim]` floats, zero where not `valid`."""
    if coding.discrete_start is not None:
        eye = np.eye(coding.dim, dtype=np.float32)
        return eye[actions.astype(np.int64) - coding.discrete_start] * valid[..., None]
    return actions.reshape(*valid.shape, -1).astype(np.float32) * valid[..., None]


def _pad_front(
    histories: list[Any], length: int, item_shape: tuple[int, ...], value: object
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
