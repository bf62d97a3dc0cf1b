"""`MeanStdFilter`: normalizes observations with running mean and standard deviation."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np

from flywheel.connectors.connector import ConnectorV2
from flywheel.errors import ConnectorError
from flywheel.typing import StateDict


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


class MeanStdFilter(ConnectorV2):
    """Replaces each episode's newest observation by `clip((obs - mean) / (std + epsilon), ±clip)`.

    Runs as a custom env-to-module piece: it writes the normalized observation back into the episodes
    (so the learner trains on what the module saw), and the default pieces then batch it. The
    statistics are updated from every call's observations first (one array op over all episodes).

    Across runners the statistics stay exact: the state keeps the stats last received via `set_state`
    ("shared") apart from what this runner added since ("delta"); `merge_states` adds every runner's
    delta to the shared stats, and `set_state(merged)` makes that the new shared stats.
    """

    def __init__(
        self,
        input_observation_space: gym.Space | None = None,
        input_action_space: gym.Space | None = None,
        *,
        clip: float = 10.0,
        epsilon: float = 1e-8,
        update_stats: bool = True,
        **kwargs: Any,
    ):
        self.clip = clip
        self.epsilon = epsilon
        self.update_stats = update_stats
        self._shape: tuple[int, ...] | None = None
        self.reset_state()
        super().__init__(input_observation_space, input_action_space, **kwargs)

    def recompute_output_observation_space(
        self, input_observation_space: gym.Space, input_action_space: gym.Space | None
    ) -> gym.Space:
        if not isinstance(input_observation_space, gym.spaces.Box):
            raise ConnectorError(
                f"MeanStdFilter normalizes Box observations, got {input_observation_space}. Put "
                f"FlattenObservations before it to turn Dict/Tuple/Discrete observations into a Box."
            )
        if self._shape != input_observation_space.shape:
            self._shape = input_observation_space.shape
            self.reset_state()
        return gym.spaces.Box(-self.clip, self.clip, self._shape, np.float32)

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
        if not episodes:
            return batch
        observations = np.asarray([episode.get_observations(-1) for episode in episodes])
        if self.update_stats:
            moments = _Moments.of_batch(observations)
            self._delta = self._delta.combine(moments)
            self._total = self._total.combine(moments)
        normalized = self.normalize(observations)
        for episode, row in zip(episodes, normalized):
            episode.set_observations(new_data=row, at_indices=-1)
        return batch

    def normalize(self, observations: np.ndarray) -> np.ndarray:
        """Normalizes a batch of observations with the current statistics (no update)."""
        std = np.sqrt(self._total.var)
        normalized = (observations - self._total.mean) / (std + self.epsilon)
        return np.clip(normalized, -self.clip, self.clip).astype(np.float32)

    def get_state(self) -> StateDict:
        """`{"shared": {count, mean, var}, "delta": {count, mean, var}}` with numpy arrays."""
        return {"shared": self._shared.to_state(), "delta": self._delta.to_state()}

    def set_state(self, state: StateDict) -> None:
        """Takes the state's shared stats plus its delta as the new shared stats; clears the delta."""
        self._shared = _Moments.from_state(state["shared"]).combine(_Moments.from_state(state["delta"]))
        self._delta = _Moments.empty(self._shared.mean.shape)
        self._total = self._shared

    def merge_states(self, states: list[StateDict]) -> StateDict:
        """Shared stats plus every runner's delta.

        The shared stats with the largest count are taken: they only grow with syncs, so a runner
        restarted since the last sync (empty shared stats) cannot hide the others'.
        """
        shared = max((_Moments.from_state(state["shared"]) for state in states), key=lambda m: m.count)
        for state in states:
            shared = shared.combine(_Moments.from_state(state["delta"]))
        return {"shared": shared.to_state(), "delta": _Moments.empty(shared.mean.shape).to_state()}

    def reset_state(self) -> None:
        shape = self._shape or ()
        self._shared = self._delta = self._total = _Moments.empty(shape)

    def __repr__(self) -> str:
        return f"MeanStdFilter(clip={self.clip}, count={self._total.count})"
