"""MetricsLogger behaves as RLlib 2.60's where RLlib users rely on it: defaults, reduce kinds, root loggers,
deprecated arguments, peek/compile/delete, and aggregating other loggers' reduce() results."""

import math
import pickle
import warnings
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from flywheel.errors import MetricKeyError, MetricsError
from flywheel.metrics import MetricsLogger, ReducedMetrics
from flywheel.metrics import metrics_logger as metrics_logger_module
from flywheel.metrics import settings as settings_module


@pytest.fixture
def clock(monkeypatch):
    fake = SimpleNamespace(now=100.0)
    monkeypatch.setattr(metrics_logger_module, "time", SimpleNamespace(perf_counter=lambda: fake.now))
    return fake


@pytest.fixture
def fresh_warnings(monkeypatch):
    """Each test sees the deprecation warnings as a fresh process would (once each)."""
    monkeypatch.setattr(settings_module, "_warned", set())


# ------------------------------------------------------------------------------------ defaults


def test_no_reduce_means_ema_with_coeff_0_01_and_with_a_window_mean():
    logger = MetricsLogger(root=True)
    logger.log_value("loss", 0.1)
    logger.log_value("loss", 0.2)
    assert logger.peek("loss") == pytest.approx(0.101)  # 0.99 * 0.1 + 0.01 * 0.2
    assert logger.reduce()["loss"] == pytest.approx(0.101)
    for v in (0.1, 0.2, 0.3):
        logger.log_value("window_loss", v, window=2)
    assert logger.peek("window_loss") == pytest.approx(0.25)


def test_ema_coeff_formula():
    logger = MetricsLogger()
    logger.log_value("fast", 0.1, ema_coeff=0.5)
    logger.log_value("fast", 0.2)
    logger.log_value("fast", 0.3)
    assert logger.peek("fast") == pytest.approx(0.225)  # 0.5 * (0.5 * 0.1 + 0.5 * 0.2) + 0.5 * 0.3
    expected = 1.0
    logger.log_value("custom", 1.0, reduce="ema", ema_coeff=0.2)
    for _ in range(100):
        logger.log_value("custom", 5.0)
        expected = 0.8 * expected + 0.2 * 5.0
    assert logger.peek("custom") == pytest.approx(expected)


def test_windows_of_mean_min_and_sum():
    logger = MetricsLogger()
    for v in (0.1, 0.2, 0.3, 0.4):
        logger.log_value("w3", v, window=3)
    for v in (0.3, 0.1, 0.2):
        logger.log_value("min", v, reduce="min", window=2)
    for v in (10, 20, 30):
        logger.log_value("sum", v, reduce="sum", window=2)
    assert logger.peek("w3") == pytest.approx(0.3)
    assert (logger.peek("min"), logger.peek("sum")) == (0.1, 50)


def test_log_dict_defaults_to_mean_and_log_time_to_ema(clock):
    logger = MetricsLogger()
    logger.log_dict({"a": 1.0, "b": {"c": 3.0}})
    logger.log_dict({"a": 2.0, "b": {"c": 5.0}})
    for seconds in (1.0, 3.0):
        with logger.log_time("t"):
            clock.now += seconds
    with logger.log_time("tw", window=5):
        clock.now += 2.0
    assert logger.reduce() == {"a": 1.5, "b": {"c": 4.0}, "t": pytest.approx(1.02), "tw": 2.0}


def test_later_logs_without_settings_never_conflict(clock):
    logger = MetricsLogger()
    logger.log_value("s", 1, reduce="sum")
    logger.log_value("s", 2)  # RLlib's default (None) means "as first logged"
    logger.log_dict({"s": 3})
    with logger.log_time("s"):
        clock.now += 0.5
    assert logger.peek("s") == 6.5


# ---------------------------------------------------------------------------- item / series


def test_item_keeps_the_latest_value_and_reduce_clears_it():
    logger = MetricsLogger()
    image = np.zeros((3, 4, 4), dtype=np.uint8)
    logger.log_value("config", "a", reduce="item")
    logger.log_value("config", "b", reduce="item")
    logger.log_value("image", torch.ones(2, 2), reduce="item")
    logger.log_value("scalar", torch.tensor(2.5), reduce="item")
    logger.log_value("frame", image, reduce="item")
    assert logger.peek("config") == "b"
    result = logger.reduce()
    assert result["config"] == "b" and result["scalar"] == 2.5 and result["frame"] is image
    assert isinstance(result["image"], np.ndarray) and result["image"].tolist() == [[1.0, 1.0], [1.0, 1.0]]
    assert logger.peek("config") is None and logger.reduce()["config"] is None


def test_item_series_lists_the_values_since_reduce_newest_window():
    logger = MetricsLogger()
    for action in (0, 1, 1, 2):
        logger.log_value("actions", action, reduce="item_series")
        logger.log_value("last_two", action, reduce="item_series", window=2)
    assert logger.peek("actions") == [0, 1, 1, 2]
    assert logger.reduce() == {"actions": [0, 1, 1, 2], "last_two": [1, 2]}
    assert math.isnan(logger.peek("actions"))  # RLlib's peek of an empty series
    assert logger.reduce() == {"actions": [], "last_two": []}


def test_items_aggregate_newest_item_and_all_series_items():
    runners = [MetricsLogger() for _ in range(3)]
    for i, runner in enumerate(runners):
        runner.log_value("videos", f"video{i}", reduce="item_series")
        if i < 2:
            runner.log_value("best", f"best{i}", reduce="item")
    algo = MetricsLogger(root=True)
    algo.aggregate([r.reduce() for r in runners], key="env_runners")
    assert algo.reduce() == {"env_runners": {"videos": ["video0", "video1", "video2"], "best": "best1"}}
    algo.aggregate([r.reduce() for r in runners], key="env_runners")  # nothing new
    assert algo.reduce() == {"env_runners": {"videos": [], "best": None}}


# ------------------------------------------------------------------------------- percentiles


def test_percentiles_defaults_custom_and_windows():
    logger = MetricsLogger()
    for v in range(101):
        logger.log_value("lat", float(v), reduce="percentiles")
        logger.log_value("p", float(v), reduce="percentiles", percentiles=[10, 50], window=11)
    logger.log_value("q", 1.0, percentiles=True)  # no reduce + percentiles: reduce="percentiles"
    logger.log_value("q", 2.0)
    state = logger.get_state()
    result = logger.reduce()
    assert result["lat"] == {0: 0.0, 50: 50.0, 75: 75.0, 90: 90.0, 95: 95.0, 99: 99.0, 100: 100.0}
    assert result["p"] == {10: 91.0, 50: 95.0}  # over the last 11 values: 90..100
    assert result["q"][50] == 1.5  # linear interpolation between sorted values
    empty = MetricsLogger()
    empty.aggregate([state])
    assert empty.peek("q") == {0: 1.0, 50: 1.5, 75: 1.75, 90: 1.9, 95: 1.95, 99: 1.99, 100: 2.0}
    never = MetricsLogger()
    unused = {**state["stats"]["p"], "values": [], "num_new": 0, "last": None}
    never.aggregate([{"stats": {"x": unused}}])
    assert never.reduce() == {"x": {10: None, 50: None}}


def test_percentiles_aggregate_raw_values_exactly():
    runners = [MetricsLogger(), MetricsLogger()]
    for runner, values in zip(runners, ([1.0, 2.0, 3.0], [4.0, 5.0])):
        for v in values:
            runner.log_value("lat", v, reduce="percentiles", percentiles=[0, 50, 100])
    algo = MetricsLogger(root=True)
    algo.aggregate([r.reduce() for r in runners])
    assert algo.reduce() == {"lat": {0: 1.0, 50: 3.0, 100: 5.0}}


def test_percentiles_reject_nan():
    logger = MetricsLogger()
    with pytest.raises(MetricsError, match=r"Metric 'lat': percentiles cannot hold NaN"):
        logger.log_value("lat", float("nan"), reduce="percentiles")


# ---------------------------------------------------------------------------------- root


def test_lifetime_sums_hand_over_off_the_root_and_add_up_at_the_root():
    root, child1, child2 = MetricsLogger(root=True), MetricsLogger(), MetricsLogger()
    assert (root.root, child1.root) == (True, False)
    child1.log_value("lifetime", 10, reduce="lifetime_sum")
    child2.log_value("lifetime", 20, reduce="lifetime_sum")
    root.aggregate([child1.reduce(), child2.reduce()])
    assert root.peek("lifetime") == 30
    child1.log_value("lifetime", 5, reduce="lifetime_sum")
    child2.log_value("lifetime", 15, reduce="lifetime_sum")
    results = [child1.reduce(), child2.reduce()]
    assert [r["lifetime"] for r in results] == [5, 15]  # amounts since each child's last reduce
    root.aggregate(results)
    assert root.reduce() == {"lifetime": 50}
    assert root.reduce() == {"lifetime": 50}


# ------------------------------------------------------------------------ deprecated arguments


def test_clear_on_reduce_warns_once_and_false_with_sum_means_lifetime_sum(fresh_warnings):
    logger = MetricsLogger(root=True)
    with pytest.warns(FutureWarning, match=r"clear_on_reduce is deprecated \(as in RLlib 2\.60\)") as caught:
        logger.log_value("counter", 10, reduce="sum", clear_on_reduce=False)
        logger.log_value("counter", 5, reduce="sum", clear_on_reduce=False)
        logger.log_value("mean", 1.0, reduce="mean", clear_on_reduce=True)
    assert len(caught) == 1
    logger.reduce()
    assert logger.reduce()["counter"] == 15  # a lifetime sum: not cleared on the root
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        logger.log_value("counter", 1, clear_on_reduce=False)  # already warned in this process


def test_reduce_per_index_on_aggregate_warns_once(fresh_warnings):
    logger = MetricsLogger()
    with pytest.warns(FutureWarning, match=r"reduce_per_index_on_aggregate is deprecated") as caught:
        logger.log_dict({"a": 1.0, "b": 2.0}, reduce_per_index_on_aggregate=True)
        with logger.log_time("t", reduce_per_index_on_aggregate=False):
            pass
    assert len(caught) == 1


# --------------------------------------------------------------------- peek / compile / delete


def test_peek_everything_a_group_throughputs_and_missing_keys(clock):
    logger = MetricsLogger(root=True)
    logger.log_value("env/steps", 30, reduce="sum", with_throughput=True)
    logger.log_value("env/ret", 2.0, reduce="mean")
    logger.log_value("loss", 0.5, reduce="mean")
    clock.now = 102.0
    assert logger.peek() == {"env": {"steps": 30, "steps_throughput": 15.0, "ret": 2.0}, "loss": 0.5}
    assert logger.peek("env/steps", throughput=True) == 15.0
    assert logger.peek("env", throughput=True) == {"steps_throughput": 15.0}
    assert logger.peek(throughput=True) == {"env": {"steps_throughput": 15.0}}
    with pytest.raises(MetricsError, match=r"Metric 'loss' has no throughput: it was not logged with"):
        logger.peek("loss", throughput=True)
    with pytest.raises(KeyError):
        logger.peek("nope")
    assert issubclass(MetricKeyError, KeyError)


def test_compile_is_the_final_reduce_with_throughputs(clock):
    logger = MetricsLogger(root=True)
    logger.log_value("count", 1, reduce="sum", with_throughput=True)
    logger.log_value(["nested", "count"], 3, reduce="sum", with_throughput=True)
    logger.log_value("simple", 5.0)
    clock.now = 100.5
    assert logger.compile() == {
        "count": 1,
        "count_throughput": 2.0,
        "nested": {"count": 3, "count_throughput": 6.0},
        "simple": 5.0,
    }
    assert logger.peek("count") == 0


def test_stats_view_and_rllib_compile_keywords(clock):
    logger = MetricsLogger(root=True)
    logger.log_value(("env", "steps"), 30, reduce="sum", with_throughput=True)
    logger.log_value("loss", 0.5, window=10)
    stats = logger.stats
    assert sorted(stats) == ["env", "loss"] and list(stats["env"]) == ["steps"]
    steps, loss = stats["env"]["steps"], stats["loss"]
    assert (steps.stats_cls_identifier, steps.has_throughputs, steps.window) == ("sum", True, None)
    assert (loss.stats_cls_identifier, loss.has_throughputs, loss.window, loss.ema_coeff) == (
        "mean",
        False,
        10,
        None,
    )
    clock.now = 102.0
    assert steps.peek() == 30 and steps.throughputs == 15.0 and loss.peek(compile=False) == 0.5
    logger.log_value(("env", "steps"), 10)  # the view reads the logger at each call
    assert steps.peek() == 40 and logger.peek("env/steps", compile=False) == 40
    assert repr(loss) == "StatsView(loss: mean, 0.5)"
    other = MetricsLogger(root=True)
    other.aggregate([logger.reduce(compile=False)])
    assert other.peek("env/steps") == 40


def test_delete_takes_key_parts_as_rllib_does():
    logger = MetricsLogger()
    logger.log_value(("a", "b"), 1.0)
    logger.log_value(("a", "c"), 2.0)
    logger.delete("a", "b")
    assert logger.peek("a") == {"c": 2.0}
    logger.delete(("a", "c"))
    with pytest.raises(MetricKeyError, match=r"No metric 'a/c' to delete"):
        logger.delete("a", "c")


# ---------------------------------------------------------------- aggregating reduce() results


def test_aggregate_reduce_results_is_exact():
    runners = [MetricsLogger() for _ in range(2)]
    for runner, returns in zip(runners, ([1.0, 2.0, 3.0, 4.0, 5.0], [15.0])):
        for r in returns:
            runner.log_value("episode_return_mean", r, window=100)
        runner.log_value("num_env_steps_sampled", 10, reduce="sum")
    results = [runner.reduce() for runner in runners]
    assert isinstance(results[0], ReducedMetrics) and results[0] == {
        "episode_return_mean": 3.0,
        "num_env_steps_sampled": 10,
    }
    algo = MetricsLogger(root=True)
    algo.aggregate(results, key="env_runners")
    # RLlib 2.60 merges the runners' means (mean of 3.0 and 15.0 = 9.0); flywheel the episodes.
    assert algo.reduce() == {"env_runners": {"episode_return_mean": 5.0, "num_env_steps_sampled": 20}}


def test_aggregate_skips_removed_keys_and_rejects_added_ones():
    runner = MetricsLogger()
    runner.log_value("a", 1.0, reduce="mean")
    runner.log_value("b", 2, reduce="sum", with_throughput=True)
    results = runner.reduce()
    del results["a"]
    algo = MetricsLogger()
    algo.aggregate([results])
    assert "a" not in algo and algo.peek("b") == 2
    results["extra"] = 3
    with pytest.raises(
        MetricsError, match=r"aggregate: 'extra' in the reduce\(\) result was added after reduce"
    ):
        algo.aggregate([results])


def test_aggregate_rejects_plain_dicts_and_non_lists():
    algo = MetricsLogger()
    with pytest.raises(MetricsError, match=r"got a dict with keys \['loss'\]\. A dict of plain numbers"):
        algo.aggregate([{"loss": 1.0}])
    with pytest.raises(MetricsError, match=r"aggregate expects a list .*; got a ReducedMetrics\. Fix: wrap"):
        algo.aggregate(MetricsLogger().reduce())


def test_reduce_results_pickle_with_their_state_for_ray():
    runner = MetricsLogger()
    runner.log_value("ret", 2.0, window=10)
    results = pickle.loads(pickle.dumps(runner.reduce()))
    algo = MetricsLogger()
    algo.aggregate([results])
    assert algo.peek("ret") == 2.0
