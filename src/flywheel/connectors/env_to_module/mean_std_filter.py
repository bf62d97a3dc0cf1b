"""`MeanStdFilter`: normalizes observations with running mean and standard deviation.

Every Box of the observation space is normalized on its own (the leaves of a Dict or Tuple space;
other leaves pass unchanged, as in RLlib), and with `multi_agent=True` every agent keeps its own
statistics (the pipeline's input space is then `Dict({agent_id: space})`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import gymnasium as gym
import numpy as np

from flywheel.connectors.batch_items import single_agent_episode_iterator
from flywheel.connectors.connector import ConnectorV2
from flywheel.errors import ConnectorError
from flywheel.typing import StateDict

if TYPE_CHECKING:
    from flywheel.core.rl_module.rl_module import RLModule
    from flywheel.metrics.metrics_logger import MetricsLogger


@dataclass(frozen=True)
class _Moments:
    """Count, mean and sum of squared deviations (M2) of a set of observations, in float64."""

    count: int
    mean: np.ndarray
    m2: np.ndarray

    @classmethod
    def empty(cls, shape: tuple[int, ...]) -> _Moments:
        return cls(0, np.zeros(shape), np.zeros(shape))

    @classmethod
    def of_batch(cls, values: np.ndarray) -> _Moments:
        mean = values.mean(axis=0, dtype=np.float64)
        return cls(len(values), mean, np.square(values - mean).sum(axis=0))

    @classmethod
    def from_state(cls, state: StateDict) -> _Moments:
        count = int(state["count"])
        return cls(count, np.asarray(state["mean"], np.float64), np.asarray(state["var"], np.float64) * count)

    def to_state(self) -> StateDict:
        return {"count": self.count, "mean": self.mean.copy(), "var": self.var}

    @property
    def var(self) -> np.ndarray:
        """Population variance; ones before any data, so an unfed filter only clips."""
        return self.m2 / self.count if self.count else np.ones_like(self.m2)

    def combine(self, other: _Moments) -> _Moments:
        """The moments of both sets together (Chan et al.'s parallel update: exact, order-free)."""
        if other.count == 0:
            return self
        if self.count == 0:
            return other
        count = self.count + other.count
        delta = other.mean - self.mean
        mean = self.mean + delta * (other.count / count)
        m2 = self.m2 + other.m2 + np.square(delta) * (self.count * other.count / count)
        return _Moments(count, mean, m2)


class _LeafStats:
    """One Box's statistics: shared (last received by `set_state`), delta (added here since), total."""

    def __init__(self, shape: tuple[int, ...]) -> None:
        self.shared = self.delta = self.total = _Moments.empty(shape)

    def update(self, values: np.ndarray) -> None:
        moments = _Moments.of_batch(values)
        self.delta = self.delta.combine(moments)
        self.total = self.total.combine(moments)

    def get_state(self) -> StateDict:
        return {"shared": self.shared.to_state(), "delta": self.delta.to_state()}

    def set_state(self, state: StateDict) -> None:
        self.shared = _Moments.from_state(state["shared"]).combine(_Moments.from_state(state["delta"]))
        self.delta = _Moments.empty(self.shared.mean.shape)
        self.total = self.shared

    @staticmethod
    def merge(states: list[StateDict]) -> StateDict:
        """Shared stats plus every runner's delta. The shared stats with the largest count are taken: they
        only grow with syncs, so a runner restarted since the last sync (empty shared stats) cannot hide
        the others'."""
        shared = max((_Moments.from_state(state["shared"]) for state in states), key=lambda m: m.count)
        for state in states:
            shared = shared.combine(_Moments.from_state(state["delta"]))
        return {"shared": shared.to_state(), "delta": _Moments.empty(shared.mean.shape).to_state()}


Path = tuple[Any, ...]  # an agent id (multi-agent) and the keys/indices down to a Box leaf


class MeanStdFilter(ConnectorV2):
    """Replaces each episode's newest observation by `clip((obs - mean) / (std + epsilon), ±clip)`, per
    Box leaf of the observation space (and per agent with `multi_agent=True`).

    Runs as a custom env-to-module piece: it writes the normalized observation back into the episodes
    (so the learner trains on what the module saw), and the default pieces then batch it. The
    statistics are updated from every call's observations first (one array op per leaf).

    Across runners the statistics stay exact: the state keeps the stats last received via `set_state`
    ("shared") apart from what this runner added since ("delta"); `merge_states` adds every runner's
    delta to the shared stats, and `set_state(merged)` makes that the new shared stats. A single Box
    space's state is `{"shared", "delta"}`; otherwise it holds one such entry per leaf, keyed
    `"<agent_id>/<key>/..."`.
    """

    def __init__(
        self,
        input_observation_space: gym.Space | None = None,
        input_action_space: gym.Space | None = None,
        *,
        multi_agent: bool = False,
        clip: float = 10.0,
        epsilon: float = 1e-8,
        update_stats: bool = True,
        **kwargs: object,
    ):
        self.multi_agent = multi_agent
        self.clip = clip
        self.epsilon = epsilon
        self.update_stats = update_stats
        self._leaves: dict[Path, tuple[int, ...]] = {}
        self._stats: dict[Path, _LeafStats] = {}
        super().__init__(input_observation_space, input_action_space, **kwargs)

    def recompute_output_observation_space(
        self, input_observation_space: gym.Space, input_action_space: gym.Space | None
    ) -> gym.Space:
        agents: dict[Any, gym.Space] = {None: input_observation_space}
        if self.multi_agent:
            if not isinstance(input_observation_space, gym.spaces.Dict):
                raise ConnectorError(
                    f"MeanStdFilter(multi_agent=True) needs the multi-agent space Dict({{agent_id: space}}), got "
                    f"{input_observation_space}. Fix: use MeanStdFilter() (multi_agent=False) for a single-agent env."
                )
            agents = dict(input_observation_space.spaces)
        leaves = {
            ((agent,) if self.multi_agent else ()) + path: shape
            for agent, space in agents.items()
            for path, shape in _box_leaves(space)
        }
        if not leaves:
            raise ConnectorError(
                f"MeanStdFilter normalizes Box observations (or the Boxes in Dict/Tuple observations), got "
                f"{input_observation_space}. Put FlattenObservations before it to turn Discrete observations into a Box."
            )
        if leaves != self._leaves:
            self._leaves = leaves
            self.reset_state()
        if not self.multi_agent:
            return self._clipped(input_observation_space)
        clipped: dict[Any, gym.Space] = {agent: self._clipped(space) for agent, space in agents.items()}
        return gym.spaces.Dict(clipped)

    def _clipped(self, space: gym.Space) -> gym.Space:
        if isinstance(space, gym.spaces.Box):
            return gym.spaces.Box(-self.clip, self.clip, space.shape, np.float32)
        if isinstance(space, gym.spaces.Dict):
            return gym.spaces.Dict({key: self._clipped(sub) for key, sub in space.spaces.items()})
        if isinstance(space, gym.spaces.Tuple):
            return gym.spaces.Tuple([self._clipped(sub) for sub in space.spaces])
        return space

    def __call__(
        self,
        *,
        rl_module: RLModule,
        batch: dict[str, Any],
        episodes: list[Any],
        explore: bool | None = None,
        shared_data: dict | None = None,
        metrics: MetricsLogger | None = None,
        **kwargs: object,
    ) -> dict[str, Any]:
        if not episodes:
            return batch
        by_agent: dict[Any, list[Any]] = {}
        for episode in single_agent_episode_iterator(episodes):
            by_agent.setdefault(episode.agent_id if self.multi_agent else None, []).append(episode)
        for agent, agent_episodes in by_agent.items():
            prefix = (agent,) if self.multi_agent else ()
            observations = [episode.get_observations(-1) for episode in agent_episodes]
            for path in [p for p in self._leaves if p[: len(prefix)] == prefix]:
                leaf = path[len(prefix) :]
                values = np.asarray([_get(obs, leaf) for obs in observations])
                if self.update_stats:
                    self._stats[path].update(values)
                normalized = self._normalize(path, values)
                observations = [
                    _set(obs, leaf, row) for obs, row in zip(observations, normalized, strict=True)
                ]
            for episode, obs in zip(agent_episodes, observations, strict=True):
                episode.set_observations(new_data=obs, at_indices=-1)
        return batch

    def normalize(self, observations: np.ndarray) -> np.ndarray:
        """Normalizes a batch of observations of a single Box space with the current statistics (no update)."""
        return self._normalize((), observations)

    def _normalize(self, path: Path, values: np.ndarray) -> np.ndarray:
        total = self._stats[path].total
        normalized = (values - total.mean) / (np.sqrt(total.var) + self.epsilon)
        return np.clip(normalized, -self.clip, self.clip).astype(np.float32)

    def get_state(self) -> StateDict:
        """`{"shared": {count, mean, var}, "delta": {count, mean, var}}` with numpy arrays (a single Box
        space), or one such entry per Box leaf keyed `"<agent_id>/<key>/..."`."""
        if list(self._stats) == [()]:
            return self._stats[()].get_state()
        return {_name(path): stats.get_state() for path, stats in self._stats.items()}

    def set_state(self, state: StateDict) -> None:
        """Takes the state's shared stats plus its delta as the new shared stats; clears the delta."""
        for name, leaf_state in self._by_name(state).items():
            path = next((p for p in self._stats if _name(p) == name), None)
            if path is None:
                path = self._path_for_unbuilt(name, leaf_state)
            self._stats[path].set_state(leaf_state)

    def merge_states(self, states: list[StateDict]) -> StateDict:
        """Shared stats plus every runner's delta, per leaf."""
        named = [self._by_name(state) for state in states]
        merged = {name: _LeafStats.merge([n[name] for n in named if name in n]) for name in named[0]}
        return merged[""] if list(merged) == [""] else merged

    def _by_name(self, state: StateDict) -> dict[str, StateDict]:
        return {"": state} if "shared" in state else dict(state)

    def _path_for_unbuilt(self, name: str, state: StateDict) -> Path:
        """A state restored before the input spaces are known: its leaf is named by `name` alone."""
        path: Path = tuple(name.split("/")) if name else ()
        shape = tuple(np.shape(state["shared"]["mean"]))
        self._leaves[path] = shape
        self._stats[path] = _LeafStats(shape)
        return path

    def reset_state(self) -> None:
        self._stats = {path: _LeafStats(shape) for path, shape in self._leaves.items()}

    def __repr__(self) -> str:
        counts = [stats.total.count for stats in self._stats.values()]
        return f"MeanStdFilter(clip={self.clip}, count={max(counts, default=0)})"


def _box_leaves(space: gym.Space, path: Path = ()) -> Iterator[tuple[Path, tuple[int, ...]]]:
    """`(path, shape)` of every Box in `space` (Dict keys and Tuple indices, in the space's order)."""
    if isinstance(space, gym.spaces.Box):
        yield path, space.shape
    elif isinstance(space, gym.spaces.Dict):
        for key, sub in space.spaces.items():
            yield from _box_leaves(sub, (*path, key))
    elif isinstance(space, gym.spaces.Tuple):
        for index, sub in enumerate(space.spaces):
            yield from _box_leaves(sub, (*path, index))


def _get(obs: Any, leaf: Path) -> Any:
    for key in leaf:
        obs = obs[key]
    return obs


def _set(obs: Any, leaf: Path, value: object) -> Any:
    """`obs` with the entry at `leaf` replaced (containers copied along the way, the rest shared)."""
    if not leaf:
        return value
    key, rest = leaf[0], leaf[1:]
    if isinstance(obs, tuple):
        return tuple(_set(item, rest, value) if i == key else item for i, item in enumerate(obs))
    return {**obs, key: _set(obs[key], rest, value)}


def _name(path: Path) -> str:
    return "/".join(map(str, path))
