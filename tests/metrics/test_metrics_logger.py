"""Tests for flywheel.metrics.metrics_logger.MetricsLogger."""

import json
import math
from types import SimpleNamespace

import msgpack
import numpy as np
import pytest
import torch

from flywheel import MetricsLogger
from flywheel.errors import MetricKeyError, MetricsError
from flywheel.metrics import metrics_logger as metrics_logger_module


@pytest.fixture
def clock(monkeypatch):
    """A settable clock standing in for time.perf_counter inside the logger."""
    fake = SimpleNamespace(now=100.0)
    monkeypatch.setattr(metrics_logger_module, "time", SimpleNamespace(perf_counter=lambda: fake.now))
    return fake


def test_api_snippet_values(clock):
    logger = MetricsLogger()
    for v in (1.0, 2.0, 3.0):
        logger.log_value("loss", v, reduce="mean", window=2)
    logger.log_value("steps", 10, reduce="sum")
    with logger.log_time("timers/update"):
        clock.now += 0.25
    assert logger.peek("loss") == 2.5
    assert logger.reduce() == {"loss": 2.5, "steps": 10, "timers": {"update": 0.25}}


def test_windowed_mean_min_max_keep_values_across_reduces():
    logger = MetricsLogger()
    for v in (1, 2, 3):
        logger.log_value("mean", v, window=2)
        logger.log_value("min", v, reduce="min", window=2)
        logger.log_value("max", v, reduce="max", window=2)
    assert logger.reduce() == {"mean": 2.5, "min": 2.0, "max": 3.0}
    assert logger.reduce() == {"mean": 2.5, "min": 2.0, "max": 3.0}
    for name, reduce in (("mean", "mean"), ("min", "min"), ("max", "max")):
        logger.log_value(name, 10, reduce=reduce)
    assert logger.reduce() == {"mean": 6.5, "min": 3.0, "max": 10.0}


def test_unwindowed_mean_covers_values_since_reduce_and_keeps_last():
    logger = MetricsLogger()
    logger.log_value("ret", 1, reduce="mean")
    logger.log_value("ret", 2)
    result = logger.reduce()
    assert result == {"ret": 1.5}
    assert logger.peek("ret") == 1.5
    assert logger.reduce() == {"ret": 1.5}
    logger.log_value("ret", 4)
    assert logger.peek("ret") == 4.0
    assert logger.reduce() == {"ret": 4.0}


def test_means_mins_maxes_are_floats_even_for_int_values():
    logger = MetricsLogger()
    for v in (3, 1, 2):
        logger.log_value("len_min", v, reduce="min")
        logger.log_value("len_mean", v, reduce="mean")
    result = logger.reduce()
    assert result == {"len_min": 1.0, "len_mean": 2.0}
    assert type(result["len_min"]) is float and type(result["len_mean"]) is float


def test_sum_clears_on_reduce_and_keeps_int_type():
    logger = MetricsLogger()
    logger.log_value("n", 3, reduce="sum")
    logger.log_value("n", 4, reduce="sum")
    result = logger.reduce()
    assert result == {"n": 7} and type(result["n"]) is int
    assert logger.reduce() == {"n": 0}
    logger.log_value("x", 0.5, reduce="sum")
    assert logger.reduce()["x"] == 0.5
    assert type(logger.reduce()["x"]) is float


def test_lifetime_sum_grows_across_reduces_on_a_root_logger():
    logger = MetricsLogger(root=True)
    logger.log_value("total", 5, reduce="lifetime_sum")
    assert logger.reduce() == {"total": 5}
    logger.log_value("total", 3, reduce="lifetime_sum")
    assert logger.peek("total") == 8
    assert logger.reduce() == {"total": 8}
    assert logger.reduce() == {"total": 8}


def test_ema_with_coeff_and_default():
    logger = MetricsLogger()
    logger.log_value("e", 4, reduce="ema", ema_coeff=0.5)
    logger.log_value("e", 8, reduce="ema")
    assert logger.reduce() == {"e": 6.0}
    logger.log_value("e", 2, reduce="ema")
    assert logger.reduce() == {"e": 4.0}
    logger.log_value("d", 10.0, reduce="ema")
    logger.log_value("d", 20.0, reduce="ema")
    assert logger.peek("d") == (1 - 0.01) * 10.0 + 0.01 * 20.0


def test_throughput_uses_seconds_since_previous_reduce(clock):
    logger = MetricsLogger(root=True)
    logger.log_value("env_runners/steps", 30, reduce="sum", with_throughput=True)
    logger.log_value("env_runners/steps_lifetime", 30, reduce="lifetime_sum", with_throughput=True)
    clock.now = 102.0
    assert logger.peek("env_runners/steps_throughput") == 15.0
    assert logger.peek("env_runners") == {
        "steps": 30,
        "steps_throughput": 15.0,
        "steps_lifetime": 30,
        "steps_lifetime_throughput": 15.0,
    }
    clock.now = 103.0
    assert logger.reduce() == {
        "env_runners": {
            "steps": 30,
            "steps_throughput": 10.0,
            "steps_lifetime": 30,
            "steps_lifetime_throughput": 10.0,
        }
    }
    logger.log_value("env_runners/steps", 20, reduce="sum")
    logger.log_value("env_runners/steps_lifetime", 20, reduce="lifetime_sum")
    clock.now = 108.0
    assert logger.reduce()["env_runners"] == {
        "steps": 20,
        "steps_throughput": 4.0,
        "steps_lifetime": 50,
        "steps_lifetime_throughput": 4.0,
    }
    result = logger.reduce()["env_runners"]
    assert math.isnan(result["steps_throughput"])  # no time passed


def test_throughput_key_absent_without_with_throughput():
    logger = MetricsLogger()
    logger.log_value("steps", 3, reduce="sum")
    assert logger.peek("steps_throughput", default=-1) == -1
    assert "steps_throughput" not in logger.reduce()


def test_log_time_logs_elapsed_seconds_only_on_success(clock):
    logger = MetricsLogger()
    with logger.log_time("timers/sample", reduce="max"):
        clock.now += 2.0
    with logger.log_time("timers/sample", reduce="max"):
        clock.now += 0.5
    with pytest.raises(RuntimeError, match="boom"), logger.log_time("timers/sample", reduce="max"):
        clock.now += 9.0
        raise RuntimeError("boom")
    assert logger.reduce() == {"timers": {"sample": 2.0}}


def test_string_and_tuple_keys_are_the_same_and_nest():
    logger = MetricsLogger()
    logger.log_value("timers/update", 1.0, reduce="mean")
    logger.log_value(("timers", "update"), 3.0)
    logger.log_value(["learners", "default_policy/loss"], 0.5)
    assert logger.peek(("timers", "update")) == 2.0
    assert logger.peek("timers") == {"update": 2.0}
    assert logger.peek("learners/default_policy/loss") == 0.5
    assert logger.reduce() == {"timers": {"update": 2.0}, "learners": {"default_policy": {"loss": 0.5}}}


def test_numpy_and_torch_values_become_plain_numbers():
    logger = MetricsLogger()
    logger.log_value("n", torch.tensor(3), reduce="sum")
    logger.log_value("n", np.int64(4), reduce="sum")
    logger.log_value("loss", np.float32(0.5), reduce="mean")
    logger.log_value("loss", torch.tensor(1.5, requires_grad=True))
    result = logger.reduce()
    assert result == {"n": 7, "loss": 1.0}
    assert type(result["n"]) is int


def test_log_dict_logs_every_leaf_under_key():
    logger = MetricsLogger()
    logger.log_dict({"a": 1, "b": {"c": 2, "d/e": 3}}, key="env_runners", reduce="sum")
    logger.log_dict({"a": 4}, key="env_runners", reduce="sum")
    assert logger.reduce() == {"env_runners": {"a": 5, "b": {"c": 2, "d": {"e": 3}}}}


def test_log_value_errors():
    logger = MetricsLogger()
    with pytest.raises(MetricsError, match=r"Metric 'x': reduce must be one of 'mean', 'ema', .*; got 'avg'"):
        logger.log_value("x", 1, reduce="avg")
    logger.log_value("x", 1, reduce="sum")
    logger.log_value("x", 2)  # no reduce: the key's own
    with pytest.raises(
        MetricsError, match=r"Metric 'x' was first logged with reduce='sum'; got reduce='mean'"
    ):
        logger.log_value("x", 1, reduce="mean")
    logger.log_value("w", 1, window=3)
    with pytest.raises(MetricsError, match=r"Metric 'w' was first logged with window=3; got window=4"):
        logger.log_value("w", 1, window=4)
    logger.log_value("w", 2, window=3)
    logger.log_value("w", 3)  # an omitted window keeps the fixed one
    assert logger.peek("w") == 2.0
    with pytest.raises(
        MetricsError,
        match=r"Metric 'x' was first logged with with_throughput=False; got with_throughput=True",
    ):
        logger.log_value("x", 1, reduce="sum", with_throughput=True)
    with pytest.raises(MetricsError, match=r"Metric keys are strings .*; got 3\."):
        logger.log_value(3, 1)
    with pytest.raises(MetricsError, match=r"Metric key 'a/' has an empty part"):
        logger.log_value("a/", 1)
    with pytest.raises(
        MetricsError, match=r"Metric 'v' expects a single number; got a ndarray of shape \(2,\)"
    ):
        logger.log_value("v", np.ones(2), reduce="mean")
    assert issubclass(MetricsError, ValueError)


def test_a_key_cannot_be_both_value_and_group():
    logger = MetricsLogger()
    logger.log_value("a", 1)
    with pytest.raises(MetricsError, match=r"Metric 'a/b' cannot be created: 'a' already exists"):
        logger.log_value("a/b", 1)
    logger.log_value("c/d", 1)
    with pytest.raises(MetricsError, match=r"Metric 'c' cannot be created: 'c/d' already exists"):
        logger.log_value("c", 1)


def _runner(returns, steps, lifetime):
    runner = MetricsLogger()
    for r in returns:
        runner.log_value("episode_return_mean", r, window=100)
        runner.log_value("episode_return_min", r, reduce="min")
        runner.log_value("episode_return_max", r, reduce="max")
    runner.log_value("num_env_steps_sampled", steps, reduce="sum")
    runner.log_value("num_env_steps_sampled_lifetime", lifetime, reduce="lifetime_sum")
    return runner


def test_aggregate_three_runners_gives_true_mean_and_sums():
    runners = [_runner([1.0, 2.0], 10, 10), _runner([3.0], 20, 20), _runner([4.0, 5.0, 6.0], 30, 30)]
    algo = MetricsLogger(root=True)
    algo.aggregate([r.get_state() for r in runners], key="env_runners")
    assert algo.reduce() == {
        "env_runners": {
            "episode_return_mean": 3.5,  # a mean of the runners' means would be 3.1666...
            "episode_return_min": 1.0,
            "episode_return_max": 6.0,
            "num_env_steps_sampled": 60,
            "num_env_steps_sampled_lifetime": 60,
        }
    }


def test_aggregate_each_iteration_counts_every_value_once():
    runner = MetricsLogger()
    algo = MetricsLogger(root=True)
    expected = [(1.5, 2, 2), (2.0, 1, 3), (2.0, 0, 3)]
    batches = [[1.0, 2.0], [3.0], []]
    for batch, (mean, steps, lifetime) in zip(batches, expected, strict=True):
        for r in batch:
            runner.log_value("ret", r, window=10)
            runner.log_value("steps", 1, reduce="sum")
            runner.log_value("life", 1, reduce="lifetime_sum")
        state = runner.get_state()  # taken right before the runner reduces
        runner.reduce()
        algo.aggregate([state])
        assert algo.reduce() == {"ret": mean, "steps": steps, "life": lifetime}
    assert algo.get_state()["stats"]["ret"]["values"] == [1.0, 2.0, 3.0]


def test_reduce_to_state_hands_over_only_new_values_then_reduces():
    runner = MetricsLogger()
    for r in (1.0, 2.0, 3.0):
        runner.log_value("ret", r, window=10)
    runner.log_value("life", 5, reduce="lifetime_sum")
    first = runner.reduce_to_state()
    runner.log_value("ret", 4.0, window=10)
    runner.log_value("life", 2, reduce="lifetime_sum")
    second = runner.reduce_to_state()
    assert second["stats"]["ret"] == {
        "reduce": "mean",
        "window": 10,
        "values": [4.0],
        "num_new": 1,
        "last": 2.0,
    }
    assert second["stats"]["life"] == {
        "reduce": "lifetime_sum",
        "with_throughput": False,
        "total": 0,  # a runner (not root) hands its lifetime sums over and keeps no total
        "new": 2,
    }
    assert runner.peek("ret") == 2.5 and runner.peek("life") == 0
    algo = MetricsLogger(root=True)
    algo.aggregate([first])
    algo.aggregate([second])
    assert algo.reduce() == {"ret": 2.5, "life": 7}


def test_aggregated_lifetime_sum_grows_by_increments_with_throughput(clock):
    runners = [MetricsLogger(), MetricsLogger()]
    algo = MetricsLogger(root=True)
    for runner, amount in zip(runners, (10, 5), strict=True):
        runner.log_value("life", amount, reduce="lifetime_sum", with_throughput=True)
    clock.now = 105.0
    algo.aggregate([r.reduce_to_state() for r in runners])
    assert algo.reduce() == {"life": 15, "life_throughput": 3.0}
    runners[0].log_value("life", 7, reduce="lifetime_sum")
    clock.now = 107.0
    algo.aggregate([r.reduce_to_state() for r in runners])
    assert algo.reduce() == {"life": 22, "life_throughput": 3.5}


def test_aggregate_ema_is_mean_of_emas_since_last_reduce():
    emas = []
    for v in (2.0, 4.0, 9.0):
        runner = MetricsLogger()
        runner.log_value("e", v, reduce="ema", ema_coeff=0.1)
        emas.append(runner.get_state())
    algo = MetricsLogger()
    algo.aggregate(emas[:2])
    algo.aggregate(emas[2:])
    assert algo.peek("e") == 5.0
    assert algo.reduce() == {"e": 5.0}
    algo.aggregate(emas[:1])
    assert algo.reduce() == {"e": 2.0}
    assert algo.get_state()["stats"]["e"]["ema_coeff"] == 0.1


def test_aggregate_with_nothing_new_keeps_previous_and_never_logged_is_nan():
    runner = MetricsLogger()
    runner.log_value("ret", 3.0, reduce="mean")
    algo = MetricsLogger()
    algo.aggregate([runner.reduce_to_state()])
    assert algo.reduce() == {"ret": 3.0}
    algo.aggregate([runner.reduce_to_state()])
    assert algo.reduce() == {"ret": 3.0}
    fresh = MetricsLogger()
    fresh.aggregate([runner.get_state()])
    assert math.isnan(fresh.reduce()["ret"])


def test_aggregate_rejects_a_different_reduce():
    runner = MetricsLogger()
    runner.log_value("x", 1, reduce="sum")
    algo = MetricsLogger()
    algo.log_value("x", 1.0)
    with pytest.raises(
        MetricsError, match=r"Metric 'x' is reduced with 'ema' here but the results to aggregate have 'sum'"
    ):
        algo.aggregate([runner.get_state()])


def _busy_logger():
    logger = MetricsLogger()
    for v in (1.0, 2.0, 3.0):
        logger.log_value("w", v, window=2)
    logger.reduce()
    logger.log_value("w", 4.0, window=2)
    logger.log_value("u", 2, reduce="max")
    logger.log_value("s/a", 3, reduce="sum")
    logger.log_value("s/b", 4, reduce="lifetime_sum", with_throughput=True)
    logger.log_value("e", 6.0, reduce="ema", ema_coeff=0.5)
    return logger


def test_get_state_set_state_round_trip_is_plain_data(clock):
    logger = _busy_logger()
    state = logger.get_state()
    packed = msgpack.unpackb(msgpack.packb(state))
    assert json.loads(json.dumps(state)) == state == packed
    restored = MetricsLogger()
    restored.set_state(packed)
    assert restored.get_state() == state
    merged = MetricsLogger()
    merged.aggregate([state])
    for one in (logger, restored):
        one.log_value("w", 8.0)
        one.log_value("e", 2.0, reduce="ema")
    clock.now = 104.0
    expected = {"w": 6.0, "u": 2.0, "s": {"a": 3, "b": 4, "b_throughput": 1.0}, "e": 4.0}
    assert logger.reduce() == expected
    assert restored.reduce() == expected
    assert merged.reduce() == {"w": 4.0, "u": 2.0, "s": {"a": 3, "b": 4, "b_throughput": 1.0}, "e": 6.0}


def test_set_state_replaces_existing_metrics():
    logger = MetricsLogger()
    logger.log_value("old", 1)
    logger.set_state({"stats": {"new/x": {"reduce": "sum", "with_throughput": False, "total": 0, "new": 2}}})
    assert "old" not in logger
    assert logger.reduce() == {"new": {"x": 2}}


def test_delete_reset_contains_and_peek_default():
    logger = MetricsLogger()
    logger.log_value("a/b", 1.0)
    logger.log_value("a/c", 2.0)
    logger.log_value("d", 3.0)
    logger.log_value("n", 1, reduce="sum", with_throughput=True)
    assert "a" in logger and "a/b" in logger and ("a", "c") in logger and "n_throughput" in logger
    assert "a/z" not in logger and "n_throughput_x" not in logger
    assert logger.peek("missing", default=0.0) == 0.0
    assert logger.peek("missing", default=None) is None
    with pytest.raises(
        MetricKeyError, match=r"No metric 'missing' to peek; logged keys are \['a/b', 'a/c', 'd', 'n'\]"
    ):
        logger.peek("missing")
    logger.delete("a/b")
    assert logger.peek("a") == {"c": 2.0}
    logger.delete("a")
    assert "a" not in logger
    with pytest.raises(KeyError, match=r"No metric 'a' to delete; logged keys are \['d', 'n'\]"):
        logger.delete("a")
    logger.delete("a", key_error=False)
    logger.log_value("a", 5.0)  # the group is gone, so "a" can be a value now
    logger.reset()
    assert logger.reduce() == {}


def test_docs_page_examples_run(run_doc_blocks):
    namespace = run_doc_blocks("docs/concepts/metrics.md", blocks=6)
    assert namespace["result"]["env_runners"]["num_env_steps_sampled_lifetime"] == 256
