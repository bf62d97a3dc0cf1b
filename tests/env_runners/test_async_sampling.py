"""EnvRunnerGroup.sample_async: runners sample while the caller does not wait, finished samples come as
they arrive, weights reach each runner with its next call, and a runner that fails mid-sample is
restarted with its sample dropped, counted and never returned."""

import sys
import time

import numpy as np
import pytest

from flywheel.columns import Columns
from flywheel.env_runners.group import EnvRunnerGroup
from flywheel.metrics import MetricsLogger
from flywheel.testing import CountingEnv, FailingEnv

from .conftest import counting_config

ray = pytest.importorskip("ray")
ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
ray.cloudpickle.register_pickle_by_value(sys.modules[counting_config.__module__])
pytestmark = pytest.mark.ray

FRAGMENT = 10  # env steps per sample() call: one sub-env, rollout_fragment_length 10


def group_of(env=CountingEnv, env_config=None, **fault_tolerance):
    config = (
        counting_config(
            env=env,
            episode_len=4,
            num_env_runners=2,
            num_cpus_per_env_runner=0,
            rollout_fragment_length=FRAGMENT,
        )
        .environment(env, env_config={"episode_len": 4, **(env_config or {})}, disable_env_checking=True)
        .fault_tolerance(delay_between_env_runner_restarts_s=0, **fault_tolerance)
    )
    config.freeze()
    return EnvRunnerGroup(config=config)


def collect(group, batches, timeout_s=60.0, block=True):
    """`sample_async` until `batches` samples came (or the time is up); returns their episode lists."""
    out, deadline = [], time.monotonic() + timeout_s
    while len(out) < batches and time.monotonic() < deadline:
        out += group.sample_async(block=block)
        if not block:
            time.sleep(0.05)
    return out


def steps_of(samples):
    return [sum(len(e) for e in episodes) for episodes in samples]


def seq_nos(samples):
    return {
        int(s)
        for episodes in samples
        for e in episodes
        for s in e.get_extra_model_outputs(Columns.WEIGHTS_SEQ_NO)
    }


def test_runners_keep_sampling_between_calls_that_do_not_wait(ray_session):
    group = group_of()
    try:
        assert group.sample_async(block=False) == []  # first call: both runners start their first sample
        samples = collect(group, 6, block=False)  # never waits: the runners sample on their own
        assert len(samples) >= 6 and set(steps_of(samples)) == {FRAGMENT}
        states = group.get_metrics_states()
        logger = MetricsLogger()
        logger.aggregate(states)
        assert len(states) == len(samples)
        assert logger.peek("num_env_steps_sampled") == sum(steps_of(samples))
        assert group.fault_tolerance_metrics()["num_env_runner_samples_dropped"] == 0
    finally:
        group.stop()


def test_weights_go_with_each_runners_next_sample_only_the_newest(ray_session):
    group = group_of()
    try:
        first = collect(group, 1)
        weights = {
            "default_policy": {
                name: np.zeros_like(value)
                for name, value in group.local_env_runner.module.get_state(inference_only=True).items()
            }
        }
        group.sync_weights(weights, 5)
        group.sync_weights(weights, 6)  # posted before any runner's next call: 5 never reaches one
        assert group.local_env_runner.weights_seq_no == 6
        later = collect(group, 6)
        assert seq_nos(first) == {0} and 5 not in seq_nos(later) and 6 in seq_nos(later)
        # Once a runner took new weights, its samples never go back to older ones.
        assert seq_nos(collect(group, 4)) == {6}
        assert group.foreach_env_runner(lambda runner: runner.weights_seq_no, local_env_runner=False) == [
            6,
            6,
        ]
    finally:
        group.stop()


def test_a_runner_failing_mid_sample_is_restarted_and_its_sample_dropped_once(ray_session, tmp_path):
    # Worker 1's env fails in its 26th step, 6 steps into its third sample (steps 21-30), once: the
    # restarted runner's env finds the marker file and runs on.
    fail = {"fail_after": 25, "fail_on_worker_indices": [1], "fail_once_marker": str(tmp_path / "failed")}
    group = group_of(FailingEnv, fail)
    try:
        samples, deadline = collect(group, 12), time.monotonic() + 60
        while group.num_healthy_env_runners < 2 and time.monotonic() < deadline:
            samples += group.sample_async()  # until the restarted runner has started
        counts = group.fault_tolerance_metrics()
        logger = MetricsLogger()
        logger.aggregate(group.get_metrics_states())
    finally:
        group.stop()
    assert counts["num_env_runner_failures"] == 1 and counts["num_env_runner_restarts"] == 1
    assert counts["num_env_runner_samples_dropped"] == 1 and counts["num_healthy_env_runners"] == 2
    # Only whole samples came back, each counted once: the 5 steps of the failed one are nowhere.
    assert set(steps_of(samples)) == {FRAGMENT}
    assert logger.peek("num_env_steps_sampled") == sum(steps_of(samples)) == FRAGMENT * len(samples)


def test_without_restarts_the_failure_reaches_the_caller(ray_session):
    group = group_of(
        FailingEnv, {"fail_after": 2, "fail_on_worker_indices": [1]}, restart_failed_env_runners=False
    )
    try:
        with pytest.raises(RuntimeError, match=r"^FailingEnv.step\(\) failed on purpose after 2 steps"):
            collect(group, 10)
    finally:
        group.stop()
