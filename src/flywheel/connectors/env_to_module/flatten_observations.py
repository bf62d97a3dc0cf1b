"""`FlattenObservations`: Dict / Tuple / n-D Box / Discrete observations → one flat float32 vector."""

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
    from flywheel.typing import EpisodeType


@dataclass(frozen=True)
class _Leaf:
    """One leaf of the observation space: where to find it and how to flatten it.

    `one_hot_sizes` is None for Box/MultiBinary leaves (values reshaped to a row) and the category
    counts for Discrete (one) or MultiDiscrete (one per component) leaves, which become one-hots.
    """

    path: tuple[Any, ...]
    one_hot_sizes: np.ndarray | None
    starts: np.ndarray | None


class FlattenObservations(ConnectorV2):
    """Rewrites each episode's newest observation as a 1-D float32 array.

    Leaves are concatenated in the space's order (Dict keys as the Dict orders them, Tuple in
    position order): Box and MultiBinary leaves flattened, Discrete leaves one-hot (`n` entries),
    MultiDiscrete leaves one one-hot per component. Like `MeanStdFilter`, it writes back into the
    episodes so the learner trains on the flat observations the module saw.

    With `multi_agent=True` (on a `MultiAgentEnvRunner`) the input space is the Dict of every
    agent's space; each agent's observations are flattened by its own space, the output is the
    Dict of the agents' flat Boxes, and every agent that observed in the newest step is rewritten.
    `agent_ids` (RLlib's keyword) limits that to those agents: the others keep their observations
    and spaces (e.g. heuristic modules that read the raw Discrete observation).
    """

    def __init__(
        self,
        input_observation_space: gym.Space | None = None,
        input_action_space: gym.Space | None = None,
        *,
        multi_agent: bool = False,
        agent_ids: Any = None,
        **kwargs: object,
    ):
        self.multi_agent = multi_agent
        self.agent_ids = None if agent_ids is None else set(agent_ids)
        self._leaves: list[_Leaf] = []
        self._agent_leaves: dict[Any, list[_Leaf]] = {}
        super().__init__(input_observation_space, input_action_space, **kwargs)

    def recompute_output_observation_space(
        self, input_observation_space: gym.Space, input_action_space: gym.Space | None
    ) -> gym.Space:
        if not self.multi_agent:
            self._leaves, flat_space = _flat_plan(input_observation_space)
            return flat_space
        if not isinstance(input_observation_space, gym.spaces.Dict):
            raise ConnectorError(
                f"FlattenObservations(multi_agent=True) expects a Dict of the agents' observation spaces, got "
                f"{input_observation_space}. Fix: drop multi_agent=True on a single-agent runner."
            )
        spaces = dict(input_observation_space.spaces)
        for agent_id, space in input_observation_space.spaces.items():
            if self.agent_ids is None or agent_id in self.agent_ids:
                self._agent_leaves[agent_id], spaces[agent_id] = _flat_plan(space)
        return gym.spaces.Dict(spaces)

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
        if not episodes:
            return batch
        if not self.multi_agent:
            _rewrite_newest(episodes, self._leaves)
            return batch
        per_agent: dict[Any, list[Any]] = {}
        for episode in episodes:
            for agent_id in episode.get_agents_that_stepped():
                if agent_id not in self._agent_leaves:
                    continue  # not in agent_ids
                per_agent.setdefault(agent_id, []).append(episode.agent_episodes[agent_id])
        for agent_id, agent_episodes in per_agent.items():
            _rewrite_newest(agent_episodes, self._agent_leaves[agent_id])
        return batch


def _rewrite_newest(episodes: list[EpisodeType], leaves: list[_Leaf]) -> None:
    """Replaces each (single-agent) episode's newest observation by its flat version."""
    flat = _flatten([episode.get_observations(-1) for episode in episodes], leaves)
    for episode, row in zip(episodes, flat):
        episode.set_observations(new_data=row, at_indices=-1)


def _flatten(observations: list[Any], leaves: list[_Leaf]) -> np.ndarray:
    """Flattens a list of observations into one float32 array `[len(observations), flat_dim]`."""
    parts = [_flatten_leaf(leaf, observations) for leaf in leaves]
    flat = parts[0] if len(parts) == 1 else np.concatenate(parts, axis=1)
    return flat.astype(np.float32, copy=False)


def _flat_plan(space: gym.Space) -> tuple[list[_Leaf], gym.spaces.Box]:
    """The leaves of `space` (in flattening order) and the flat Box they make up."""
    leaves: list[_Leaf] = []
    lows: list[np.ndarray] = []
    highs: list[np.ndarray] = []
    _plan(space, (), lows, highs, leaves)
    low, high = np.concatenate(lows), np.concatenate(highs)
    return leaves, gym.spaces.Box(low.astype(np.float32), high.astype(np.float32), low.shape, np.float32)


def _plan(space: gym.Space, path: tuple[Any, ...], lows: list, highs: list, leaves: list[_Leaf]) -> None:
    if isinstance(space, gym.spaces.Dict):
        for key, subspace in space.spaces.items():
            _plan(subspace, (*path, key), lows, highs, leaves)
    elif isinstance(space, gym.spaces.Tuple):
        for index, subspace in enumerate(space.spaces):
            _plan(subspace, (*path, index), lows, highs, leaves)
    elif isinstance(space, (gym.spaces.Box, gym.spaces.MultiBinary)):
        is_box = isinstance(space, gym.spaces.Box)
        lows.append(space.low.reshape(-1) if is_box else np.zeros(space.n).reshape(-1))
        highs.append(space.high.reshape(-1) if is_box else np.ones(space.n).reshape(-1))
        leaves.append(_Leaf(path, None, None))
    elif isinstance(space, (gym.spaces.Discrete, gym.spaces.MultiDiscrete)):
        sizes = np.asarray(space.n if isinstance(space, gym.spaces.Discrete) else space.nvec).reshape(-1)
        starts = np.asarray(space.start).reshape(-1)
        lows.append(np.zeros(sizes.sum()))
        highs.append(np.ones(sizes.sum()))
        leaves.append(_Leaf(path, sizes, starts))
    else:
        raise ConnectorError(
            f"FlattenObservations handles Box, MultiBinary, Discrete, MultiDiscrete and Dict/Tuple of "
            f"them, got {space} at {list(path) or 'the top level'}. Convert that part of the observation "
            f"with a custom piece before FlattenObservations."
        )


def _flatten_leaf(leaf: _Leaf, observations: list[Any]) -> np.ndarray:
    if leaf.path:
        observations = [_at_path(observation, leaf.path) for observation in observations]
    values = np.asarray(observations).reshape(len(observations), -1)
    sizes, starts = leaf.one_hot_sizes, leaf.starts
    if sizes is None:
        return values
    assert starts is not None  # set together with one_hot_sizes
    one_hots = [
        np.eye(size, dtype=np.float32)[values[:, index] - start]
        for index, (size, start) in enumerate(zip(sizes, starts))
    ]
    return one_hots[0] if len(one_hots) == 1 else np.concatenate(one_hots, axis=1)


def _at_path(observation: np.ndarray, path: tuple[Any, ...]) -> Any:
    for key in path:
        observation = observation[key]
    return observation
