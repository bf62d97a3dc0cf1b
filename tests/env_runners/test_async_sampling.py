"""EnvRunnerGroup.sample_async: runners sample while the caller does not wait (each with
max_requests_in_flight_per_env_runner calls queued), finished samples come as they arrive, weights
reach each runner with its next call, and a runner that fails mid-sample is restarted with its samples
in flight dropped, counted and never returned."""

import sys
import time

import numpy as np
import pytest
import ray

from flywheel import SingleAgentEnvRunner
from flywheel.columns import Columns
from flywheel.connectors.env_to_module import MeanStdFilter
from flywheel.env_runners.group import EnvRunnerGroup
from flywheel.metrics import MetricsLogger
from flywheel.testing import CountingEnv, FailingEnv

from .conftest import counting_config

ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
ray.cloudpickle.register_pickle_by_value(sys.modules[counting_config.__module__])
pytestmark = pytest.mark.ray

FRAGMENT = 10  # env steps per sample() call: one sub-env, rollout_fragment_length 10


def group_of(env=CountingEnv, env_config=None, in_flight=1, connector=None, **fault_tolerance):
    config = (
        counting_config(
            env=env,
            episode_len=4,
            num_env_runners=2,
            num_cpus_per_env_runner=0,
            rollout_fragment_length=FRAGMENT,
            max_requests_in_flight_per_env_runner=in_flight,
            env_to_module_connector=connector,
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


@pytest.mark.parametrize(
    ("fail_after", "in_flight"),
    [
        (25, 1),  # fails 6 steps into its third sample (steps 21-30)
        (5, 2),  # fails 6 steps into its first sample, while its second is queued behind it
    ],
)
def test_a_runner_failing_mid_sample_is_restarted_and_its_samples_in_flight_dropped_once(
    ray_session, tmp_path, fail_after, in_flight
):
    # Worker 1's env fails once: the restarted runner's env finds the marker file and runs on.
    fail = {
        "fail_after": fail_after,
        "fail_on_worker_indices": [1],
        "fail_once_marker": str(tmp_path / "failed"),
    }
    group = group_of(FailingEnv, fail, in_flight=in_flight)
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
    assert counts["num_env_runner_samples_dropped"] == in_flight and counts["num_healthy_env_runners"] == 2
    # Only whole samples came back, each counted once: the 5 steps of the failed one are nowhere.
    assert set(steps_of(samples)) == {FRAGMENT}
    assert logger.peek("num_env_steps_sampled") == sum(steps_of(samples)) == FRAGMENT * len(samples)


def wait_for_queued_samples(group):
    """Returns once every remote runner ran all calls sent to it so far (an actor runs them in order)."""
    group.foreach_env_runner(lambda runner: None, local_env_runner=False)


@pytest.mark.parametrize("in_flight", [1, 3])
def test_each_runner_samples_at_most_its_in_flight_calls_ahead_of_the_caller(ray_session, in_flight):
    group = group_of(in_flight=in_flight)
    try:
        assert group.sample_async(block=False) == []  # sends in_flight calls to each runner
        wait_for_queued_samples(group)
        ahead = group.sample_async(block=False)  # all of them finished; the runners get as many new ones
        assert len(ahead) == 2 * in_flight and set(steps_of(ahead)) == {FRAGMENT}
        weights = {
            "default_policy": dict(group.local_env_runner.module.get_state(inference_only=True).items())
        }
        group.sync_weights(weights, 7)  # goes with each runner's next call, after those already queued
        wait_for_queued_samples(group)
        queued = group.sample_async(block=False)
        assert len(queued) == 2 * in_flight and seq_nos(queued) == {0}
        wait_for_queued_samples(group)
        later = group.sample_async(block=False)
        assert len(later) == 2 * in_flight and seq_nos(later) == {7}
        assert group.fault_tolerance_metrics()["num_env_runner_samples_dropped"] == 0
    finally:
        group.stop()


def test_with_calls_queued_each_observation_reaches_the_merged_filter_once(ray_session):
    group = group_of(in_flight=3, connector=lambda env, spaces, device: MeanStdFilter())
    alone = SingleAgentEnvRunner(config=group.config.copy().env_runners(num_env_runners=0))
    try:
        for _ in range(6):  # what each remote runner samples below: 6 fragments
            alone.sample()
        group.sample_async(block=False)
        taken = 0
        for _ in range(2):  # 3 queued calls per runner, twice
            wait_for_queued_samples(group)
            taken += len(group.sample_async(block=False))
        (merged,) = group.local_env_runner.env_to_module.get_state().values()
        (own,) = alone.env_to_module.get_state().values()
    finally:
        alone.stop()
        group.stop()
    assert taken == 12
    assert merged["shared"]["count"] + merged["delta"]["count"] == 2 * own["delta"]["count"] > 0


def test_without_restarts_the_failure_reaches_the_caller(ray_session):
    group = group_of(
        FailingEnv, {"fail_after": 2, "fail_on_worker_indices": [1]}, restart_failed_env_runners=False
    )
    try:
        with pytest.raises(RuntimeError, match=r"^FailingEnv.step\(\) failed on purpose after 2 steps"):
            collect(group, 10)
    finally:
        group.stop()
