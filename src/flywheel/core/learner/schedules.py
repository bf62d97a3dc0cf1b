"""`Scheduler`: a hyperparameter that is a constant or a piecewise-linear schedule.

Settings such as `lr` and PPO's `entropy_coeff` accept either a float or a list of
`[timestep, value]` points; the timestep is the number of env steps sampled so far.
Learners keep one `Scheduler` per setting and module and ask it for the value at the
current timestep once per update, so the schedule costs nothing on the hot path.
"""

from collections.abc import Sequence

import numpy as np

from flywheel.errors import ConfigError

ScheduleLike = float | int | Sequence[Sequence[float]]


class Scheduler:
    """Evaluates a constant or piecewise-linear schedule at a timestep.

    `[[0, 3e-4], [100_000, 1e-5]]` interpolates linearly between the points and stays
    at the last value after the last point (and at the first value before the first).

        lr = Scheduler([[0, 1.0], [10, 0.0]])
        lr.value(5)    # 0.5
        lr.value(50)   # 0.0
    """

    def __init__(self, value_or_schedule: ScheduleLike, *, name: str = "value") -> None:
        self.name = name
        if isinstance(value_or_schedule, (int, float, np.number)):
            self._steps = np.zeros(1)
            self._values = np.array([float(value_or_schedule)])
        else:
            self._steps, self._values = _parse_points(value_or_schedule, name)

    @property
    def is_constant(self) -> bool:
        """Whether the value never changes (a plain number or a single point)."""
        return len(self._values) == 1

    def value(self, t: int | float) -> float:
        """The setting's value at timestep `t` (env steps sampled so far)."""
        if self.is_constant:
            return float(self._values[0])
        return float(np.interp(t, self._steps, self._values))

    def __eq__(self, other: object) -> bool:
        """Schedules are equal when they give the same value at every timestep (names aside)."""
        if not isinstance(other, Scheduler):
            return NotImplemented
        return np.array_equal(self._steps, other._steps) and np.array_equal(self._values, other._values)

    # With `__eq__` defined here and no `__hash__`, Python makes schedules unhashable (compared by value).

    def __repr__(self) -> str:
        points = [[int(s), float(v)] for s, v in zip(self._steps, self._values)]
        return f"Scheduler({self.name}={points[0][1] if self.is_constant else points})"


def _parse_points(schedule: Sequence[Sequence[float]], name: str) -> tuple[np.ndarray, np.ndarray]:
    try:
        points = [(float(step), float(value)) for step, value in schedule]
    except (TypeError, ValueError) as err:
        raise ConfigError(
            f"{name} must be a number or a list of [timestep, value] pairs, got {schedule!r}. "
            f"Fix: e.g. {name}=[[0, 3e-4], [100_000, 1e-5]]."
        ) from err
    if not points:
        raise ConfigError(f"{name} schedule is empty. Fix: give at least one [timestep, value] pair.")
    steps = np.array([p[0] for p in points])
    if np.any(np.diff(steps) <= 0):
        raise ConfigError(
            f"{name} schedule timesteps must increase strictly, got {steps.tolist()}. "
            "Fix: sort the [timestep, value] pairs and drop duplicate timesteps."
        )
    return steps, np.array([p[1] for p in points])
