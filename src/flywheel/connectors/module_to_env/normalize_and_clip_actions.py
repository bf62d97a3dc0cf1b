"""`NormalizeAndClipActions`: maps the module's actions into what the env accepts."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeGuard

import gymnasium as gym
import numpy as np

from flywheel.columns import Columns
from flywheel.connectors.connector import ConnectorV2
from flywheel.connectors.env_to_module.agent_rows import is_multi_agent
from flywheel.errors import ConnectorError

if TYPE_CHECKING:
    from flywheel.typing import EpisodeType


class NormalizeAndClipActions(ConnectorV2):
    """Writes `batch[ACTIONS_FOR_ENV]` from `batch[ACTIONS]` (numpy, leading batch dimension).

    Modules act in a normalized space: for a float `Box` action space with `normalize_actions`, the
    actions are unsquashed from [-1, 1] to [low, high] (`low + (a + 1) * (high - low) / 2`) and then
    clipped to the bounds, since Gaussian samples fall outside [-1, 1]; dimensions with an infinite
    bound pass through. Else with `clip_actions`, they are clipped to [low, high]. Other action
    spaces (and neither option) send `ACTIONS` unchanged. `ACTIONS` itself is kept: it is what the
    episodes store and what the log-probs belong to. For `MultiAgentEpisode`s each module's columns
    (`batch[module_id]`) are mapped with that module's action space.
    """

    def __init__(
        self,
        input_observation_space: gym.Space | None = None,
        input_action_space: gym.Space | None = None,
        *,
        normalize_actions: bool = True,
        clip_actions: bool = False,
        **kwargs: object,
    ):
        self.normalize_actions = normalize_actions
        self.clip_actions = clip_actions
        self._to_env: Callable[[np.ndarray], np.ndarray] = _missing_action_space
        self._to_env_per_module: dict[Any, Callable[[np.ndarray], np.ndarray]] = {}
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
        if is_multi_agent(episodes):
            for module_id, columns in batch.items():
                to_env = self._to_env_per_module.get(module_id)
                if to_env is None:  # once per module: its action space decides the transform
                    to_env = self._to_env_per_module[module_id] = self._transform_for(
                        rl_module[module_id].action_space
                    )
                columns[Columns.ACTIONS_FOR_ENV] = to_env(columns[Columns.ACTIONS])
        else:
            batch[Columns.ACTIONS_FOR_ENV] = self._to_env(batch[Columns.ACTIONS])
        return batch

    def recompute_output_action_space(
        self, input_observation_space: gym.Space | None, input_action_space: gym.Space
    ) -> gym.Space:
        # Choose the per-call transform once, here, so __call__ does no checks.
        self._to_env = self._transform_for(input_action_space)
        return input_action_space

    def _transform_for(self, space: gym.Space) -> Callable[[np.ndarray], np.ndarray]:
        if not isinstance(space, gym.spaces.Box):
            return _identity
        low, high = space.low, space.high
        if normalizes(space, self.normalize_actions):
            center, half_range = box_center_and_half_range(space)
            return lambda actions: np.clip(center + actions * half_range, low, high).astype(
                space.dtype, copy=False
            )
        if self.clip_actions:
            return lambda actions: np.clip(actions, low, high).astype(space.dtype, copy=False)
        return _identity

    def __repr__(self) -> str:
        return f"NormalizeAndClipActions(normalize_actions={self.normalize_actions}, clip_actions={self.clip_actions})"


def box_center_and_half_range(space: gym.spaces.Box) -> tuple[np.ndarray, np.ndarray]:
    """The center and half-range of a Box's bounds: env actions are `center + a * half_range` for
    normalized actions `a` in [-1, 1]; dimensions with an infinite bound get center 0, half-range 1."""
    bounded = np.isfinite(space.low) & np.isfinite(space.high)
    finite_low, finite_high = np.where(bounded, space.low, -1.0), np.where(bounded, space.high, 1.0)
    center = ((finite_low + finite_high) / 2.0).astype(space.dtype)
    half_range = ((finite_high - finite_low) / 2.0).astype(space.dtype)
    return center, half_range


def normalizes(space: gym.Space, normalize_actions: bool) -> TypeGuard[gym.spaces.Box]:
    """Whether modules act in [-1, 1] for this action space: a float Box with `normalize_actions`."""
    return bool(
        normalize_actions and isinstance(space, gym.spaces.Box) and np.issubdtype(space.dtype, np.floating)
    )


def normalized_actions(space: gym.spaces.Box, actions: np.ndarray) -> np.ndarray:
    """Env actions mapped from the Box's [low, high] to the module's [-1, 1]: the inverse of
    `NormalizeAndClipActions`' unsquashing (dimensions with an infinite bound unchanged)."""
    center, half_range = box_center_and_half_range(space)
    return ((actions - center) / half_range).astype(space.dtype, copy=False)


def _identity(actions: np.ndarray) -> np.ndarray:
    return actions


def _missing_action_space(actions: np.ndarray) -> np.ndarray:
    raise ConnectorError(
        "NormalizeAndClipActions has no input action space, expected the env's action space. Build it "
        "inside a ConnectorPipelineV2 with input_action_space set (or pass input_action_space=...)."
    )
