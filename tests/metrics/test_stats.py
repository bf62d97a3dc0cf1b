"""Tests for the reducers behind MetricsLogger (flywheel.metrics.stats)."""

import math
from fractions import Fraction

import numpy as np
import pytest
import torch

from flywheel.errors import MetricsError
from flywheel.metrics.settings import make_stats, make_stats_like
from flywheel.metrics.stats import EmaStats, SeriesStats, SumStats, to_number


@pytest.mark.parametrize(
    ("value", "expected", "kind"),
    [
        (3, 3, int),
        (2.5, 2.5, float),
        (True, 1, int),
        (np.float32(0.5), 0.5, float),
        (np.float64(0.25), 0.25, float),
        (np.int64(7), 7, int),
        (np.bool_(True), 1, int),
        (np.array(4.0), 4.0, float),
        (torch.tensor(3), 3, int),
        (torch.tensor(1.5, requires_grad=True), 1.5, float),
        (Fraction(1, 4), 0.25, float),
    ],
)
def test_to_number_gives_plain_python_numbers(value, expected, kind):
    number = to_number(value, "k")
    assert number == expected
    assert type(number) is kind


def test_to_number_rejects_arrays_with_more_than_one_element():
    with pytest.raises(
        MetricsError, match=r"Metric 'loss' expects a single number; got a ndarray of shape \(2,\)"
    ):
        to_number(np.zeros(2), "loss")
    with pytest.raises(MetricsError, match=r"got a Tensor of shape \(3,\)"):
        to_number(torch.zeros(3), "loss")


def test_to_number_rejects_non_numbers():
    with pytest.raises(
        MetricsError, match=r"Metric 'x' expects a number .*; got str 'high'\. Log numbers here"
    ):
        to_number("high", "x")


def test_series_window_keeps_last_values_across_reduces():
    stats = SeriesStats("mean", window=3)
    for v in (1, 2, 3, 4, 5):
        stats.push(v)
    assert stats.peek() == 4.0
    assert stats.reduce() == 4.0
    assert stats.reduce() == 4.0
    stats.push(9)
    assert stats.peek() == 6.0


def test_series_without_window_clears_and_keeps_last_value():
    stats = SeriesStats("max")
    assert math.isnan(stats.peek())
    stats.push(3)
    stats.push(7)
    assert stats.reduce() == 7.0
    assert stats.get_state()["values"] == []
    assert stats.peek() == 7.0
    stats.push(1)
    assert stats.reduce() == 1.0


def test_series_new_only_state_carries_only_values_since_reduce():
    stats = SeriesStats("mean", window=4)
    for v in (1.0, 2.0, 3.0):
        stats.push(v)
    stats.reduce()
    stats.push(4.0)
    stats.push(5.0)
    assert stats.get_state() == {
        "reduce": "mean",
        "window": 4,
        "values": [2.0, 3.0, 4.0, 5.0],
        "num_new": 2,
        "last": 2.0,
    }
    assert stats.get_state(new_only=True)["values"] == [4.0, 5.0]


def test_series_num_new_is_capped_by_the_window():
    stats = SeriesStats("min", window=2)
    for v in (5.0, 4.0, 3.0):
        stats.push(v)
    assert stats.get_state()["num_new"] == 2
    assert stats.get_state(new_only=True)["values"] == [4.0, 3.0]


def test_sum_keeps_ints_and_float_keys_stay_float():
    ints = SumStats("sum")
    ints.push(3)
    ints.push(4)
    assert ints.reduce() == 7 and type(ints.peek()) is int
    floats = SumStats("sum")
    floats.push(0.5)
    floats.push(0.25)
    assert floats.reduce() == 0.75
    assert floats.peek() == 0.0 and type(floats.peek()) is float


def test_lifetime_sum_reports_increment_and_total_on_a_root():
    stats = SumStats("lifetime_sum", with_throughput=True, root=True)
    stats.push(5)
    assert stats.increment == 5
    assert stats.reduce() == 5
    stats.push(3)
    assert (stats.increment, stats.peek()) == (3, 8)
    assert stats.reduce() == 8
    assert stats.increment == 0


def test_lifetime_sum_off_the_root_hands_over_its_increments():
    stats = SumStats("lifetime_sum")
    stats.push(5)
    assert stats.reduce() == 5
    stats.push(3)
    assert (stats.increment, stats.peek()) == (3, 3)
    assert stats.reduce() == 3
    assert stats.get_state() == {"reduce": "lifetime_sum", "with_throughput": False, "total": 0, "new": 0}


def test_nan_values_are_ignored_by_every_numeric_reduction():
    nan = float("nan")
    for mode, expected in (("mean", 2.0), ("min", 1.0), ("max", 3.0)):
        stats = SeriesStats(mode)
        for v in (nan, 1.0, nan, 3.0):
            stats.push(v)
        assert stats.reduce() == expected
        stats.push(nan)
        assert math.isnan(stats.reduce())
    windowed_sum = SeriesStats("sum", window=3)
    for v in (5.0, nan, 1.0, 2.0):
        windowed_sum.push(v)
    assert windowed_sum.peek() == 3.0  # the window holds nan, 1.0, 2.0
    total, ema = SumStats("sum"), EmaStats(0.5)
    for v in (nan, 2, nan, 4):
        total.push(v)
        ema.push(v)
    assert (total.reduce(), ema.reduce()) == (6, 3.0)


def test_ema_formula_and_merge_mean():
    stats = EmaStats(0.5)
    assert math.isnan(stats.peek())
    stats.push(4)
    stats.push(8)
    assert stats.reduce() == 6.0
    stats.merge({"value": 1.0})
    stats.merge({"value": 3.0})
    stats.merge({"value": None})
    assert stats.peek() == 2.0
    stats.reduce()
    stats.merge({"value": 10.0})
    assert stats.peek() == 10.0


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (
            {"mode": "median"},
            r"Metric 'k': reduce must be one of 'mean', 'ema', 'min', 'max', 'sum', 'lifetime_sum', "
            r"'percentiles', 'item', 'item_series'; got 'median'",
        ),
        (
            {"mode": "ema", "window": 5},
            r"window does not apply to reduce='ema' \(only to 'mean', 'min', 'max', 'sum', 'percentiles', "
            r"'item_series'\); got window=5\. Drop window",
        ),
        ({"mode": "mean", "window": 0}, r"window must be a positive int or None; got 0\."),
        ({"mode": "mean", "window": 2.5}, r"window must be a positive int or None; got 2\.5\."),
        ({"mode": "mean", "ema_coeff": 0.1}, r"ema_coeff only applies to reduce='ema'; got ema_coeff=0\.1"),
        ({"mode": "ema", "ema_coeff": 1.5}, r"ema_coeff must be in \(0, 1\]; got 1\.5\."),
        (
            {"mode": "max", "with_throughput": True},
            r"with_throughput only applies to reduce='sum' \(without window\) or 'lifetime_sum'; got "
            r"reduce='max', window=None",
        ),
        (
            {"mode": "sum", "window": 3, "with_throughput": True},
            r"with_throughput only applies to reduce='sum' \(without window\)",
        ),
        (
            {"mode": "mean", "percentiles": [50]},
            r"percentiles only apply to reduce='percentiles'; got percentiles=\[50\] with reduce='mean'",
        ),
        (
            {"mode": "percentiles", "percentiles": [50, 101]},
            r"percentiles must be True \(for \[0, 50, 75, 90, 95, 99, 100\]\) or a list of numbers in "
            r"\[0, 100\]; got \[50, 101\]\.",
        ),
    ],
)
def test_make_stats_rejects_bad_settings(kwargs, match):
    settings = {"window": None, "ema_coeff": None, "with_throughput": False, **kwargs}
    with pytest.raises(MetricsError, match=match):
        make_stats("k", settings.pop("mode"), **settings)


def test_make_stats_builds_each_family_with_defaults():
    assert isinstance(make_stats("k", "min", 3, None, False), SeriesStats)
    assert make_stats("k", "lifetime_sum", None, None, True).with_throughput is True
    assert make_stats("k", "ema", None, None, False).ema_coeff == 0.01


def test_make_stats_like_copies_settings_but_not_data():
    source = SeriesStats("mean", window=7)
    source.push(1.0)
    empty = make_stats_like("k", source.get_state())
    assert (empty.mode, empty.window, empty.get_state()["values"]) == ("mean", 7, [])
