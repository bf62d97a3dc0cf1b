"""Scheduler: constants and piecewise-linear schedules over sampled env steps."""

import pytest

from flywheel.core.learner.schedules import Scheduler
from flywheel.errors import ConfigError


def test_constant():
    scheduler = Scheduler(3e-4)
    assert scheduler.is_constant
    assert scheduler.value(0) == 3e-4
    assert scheduler.value(10**9) == 3e-4


def test_piecewise_linear_values():
    scheduler = Scheduler([[0, 1.0], [100, 0.5], [300, 0.1]])
    assert not scheduler.is_constant
    assert [scheduler.value(t) for t in (0, 50, 100, 200, 300, 1000)] == pytest.approx(
        [1.0, 0.75, 0.5, 0.3, 0.1, 0.1]
    )


def test_before_the_first_point_the_first_value_holds():
    assert Scheduler([[10, 2.0], [20, 4.0]]).value(0) == 2.0


def test_invalid_schedules():
    with pytest.raises(
        ConfigError, match=r"lr must be a number or a list of \[timestep, value\] pairs, got 'fast'"
    ):
        Scheduler("fast", name="lr")
    with pytest.raises(ConfigError, match=r"lr schedule is empty"):
        Scheduler([], name="lr")
    with pytest.raises(ConfigError, match=r"timesteps must increase strictly, got \[0.0, 50.0, 50.0\]"):
        Scheduler([[0, 1.0], [50, 0.5], [50, 0.1]], name="lr")


def test_repr():
    assert repr(Scheduler(0.5, name="lr")) == "Scheduler(lr=0.5)"
    assert repr(Scheduler([[0, 1.0], [10, 0.0]], name="lr")) == "Scheduler(lr=[[0, 1.0], [10, 0.0]])"
