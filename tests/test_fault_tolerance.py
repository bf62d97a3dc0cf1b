"""Fault tolerance of remote env runners: an env that fails (or hangs) on chosen runners at chosen
step counts, counted across runner restarts by a detached named actor.

Every run: PPO, 2 remote runners with 1 sub-env each, a train batch of 200 env steps, so each
runner samples exactly 100 steps per iteration. Worker 1's env fails at its 150th step overall,
i.e. 50 steps into the second iteration.
"""

import logging
import re
import sys
import time
import uuid

import pytest
import ray

from flywheel import PPOConfig
from flywheel.env_runners import remote_runners
from flywheel.errors import EnvError
from flywheel.testing.envs import CountingEnv

pytestmark = pytest.mark.ray
# The env below is defined here, so runner processes (which cannot import this file) get it by value.
ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])


class StepCounter:
    """Env steps per worker index, over every env instance that ever ran on that worker."""

    def __init__(self) -> None:
        self.counts: dict[int, int] = {}

    def incr(self, worker: int) -> int:
        self.counts[worker] = self.counts.get(worker, 0) + 1
        return self.counts[worker]

    def get(self) -> dict[int, int]:
        return dict(self.counts)


class ScriptedFailures(CountingEnv):
    """`CountingEnv` that raises (or hangs, with `config["hang"]`) when its worker's step count
    reaches a number in `config["fail_at"][worker_index]`."""

    def __init__(self, config) -> None:
        super().__init__(config)
        self.worker = config.worker_index
        self.fail_at = set(config["fail_at"].get(self.worker, ()))
        self.counter = ray.get_actor(config["counter"])

    def step(self, action):
        count = ray.get(self.counter.incr.remote(self.worker))
        if count in self.fail_at:
            if self.config.get("hang"):
                time.sleep(600)
            raise RuntimeError(f"scripted failure at step {count} of worker {self.worker}")
        return super().step(action)


@pytest.fixture
def counter(ray_session):
    name = f"step_counter_{uuid.uuid4().hex[:8]}"
    actor = ray.remote(num_cpus=0)(StepCounter).options(name=name, lifetime="detached").remote()
    yield name, actor
    ray.kill(actor)


def build(counter_name, *, hang=False, sample_timeout_s=60.0, **fault_tolerance):
    config = (
        PPOConfig()
        .environment(
            ScriptedFailures,
            env_config={"counter": counter_name, "fail_at": {1: [150]}, "episode_len": 10, "hang": hang},
            disable_env_checking=True,
        )
        .env_runners(
            num_env_runners=2,
            num_envs_per_env_runner=1,
            num_cpus_per_env_runner=0,
            sample_timeout_s=sample_timeout_s,
        )
        .training(train_batch_size_per_learner=200, minibatch_size=100, num_epochs=1)
        .fault_tolerance(delay_between_env_runner_restarts_s=0, **fault_tolerance)
        .debugging(seed=0)
    )
    return config.build_algo()


def train(algo, iterations):
    return [algo.train() for _ in range(iterations)]


def group_logs(caplog):
    return [(r.levelname, r.getMessage()) for r in caplog.records if r.name == remote_runners.__name__]


FAILURE = "Env runner 1 failed: RuntimeError: scripted failure at step 150 of worker 1."


def test_failed_runner_is_restarted_with_the_current_weights_and_nothing_is_double_counted(counter, caplog):
    name, actor = counter
    algo = build(name)
    try:
        with caplog.at_level(logging.INFO, logger="flywheel"):
            first, second, third = train(algo, 3)
        assert group_logs(caplog) == [
            ("WARNING", f"{FAILURE} Restarting it in 0 s (restarts so far: 0 of at most 1000)."),
            ("INFO", "Restarted env runner 1 (restart 1)."),
        ]
        assert first["fault_tolerance"]["num_env_runner_restarts"] == 0
        assert first["num_env_steps_sampled_lifetime"] == 200
        # Iteration 2: worker 1 fails 50 steps in (those 50 are lost); the missing 100 steps come in
        # a second round from the restarted worker 1 (50) and worker 2 (50).
        assert second["env_runners"]["num_env_steps_sampled"] == 200
        assert second["num_env_steps_sampled_lifetime"] == 400
        assert second["fault_tolerance"]["num_env_runner_failures"] == 1
        assert second["fault_tolerance"]["num_env_runner_restarts"] == 1
        assert second["fault_tolerance"]["num_healthy_env_runners"] == 2
        assert second["fault_tolerance"]["num_env_runner_samples_dropped"] == 1
        assert third["num_env_steps_sampled_lifetime"] == 600
        assert ray.get(actor.get.remote()) == {1: 100 + 50 + 50 + 100, 2: 100 + 100 + 50 + 100}
        # The restarted runner holds the learners' current weights.
        seq_nos = algo.env_runner_group.foreach_env_runner(lambda runner: runner.weights_seq_no)
        assert seq_nos == [3, 3, 3]
    finally:
        algo.stop()


def test_ignored_failure_continues_with_fewer_runners(counter, caplog):
    name, actor = counter
    algo = build(name, restart_failed_env_runners=False, ignore_env_runner_failures=True)
    try:
        with caplog.at_level(logging.INFO, logger="flywheel"):
            first, second, third = train(algo, 3)
        assert group_logs(caplog) == [
            (
                "WARNING",
                f"{FAILURE} Continuing without it (ignore_env_runner_failures=True): 1 remote runner(s) left.",
            )
        ]
        assert second["num_env_steps_sampled_lifetime"] == 400
        assert second["fault_tolerance"]["num_healthy_env_runners"] == 1
        assert second["fault_tolerance"]["num_env_runner_restarts"] == 0
        assert second["fault_tolerance"]["num_env_runner_failures"] == 1
        assert third["num_env_steps_sampled_lifetime"] == 600
        # Worker 2 alone: 100 + (100 + 100 in the second round) + 200.
        assert ray.get(actor.get.remote()) == {1: 150, 2: 500}
    finally:
        algo.stop()


def test_without_restart_or_ignore_the_original_exception_reaches_the_user(counter):
    name, _ = counter
    algo = build(name, restart_failed_env_runners=False, ignore_env_runner_failures=False)
    try:
        algo.train()
        with pytest.raises(RuntimeError, match=r"^scripted failure at step 150 of worker 1$"):
            algo.train()
    finally:
        algo.stop()


def test_restarts_stop_at_the_maximum(counter):
    name, _ = counter
    algo = build(name, max_num_env_runner_restarts=0)
    try:
        algo.train()
        with pytest.raises(EnvError, match=r"Env runner 1 failed after 0 runner restarts, the maximum"):
            algo.train()
    finally:
        algo.stop()


def test_hanging_runner_is_dropped_counted_and_restarted(counter, caplog):
    name, actor = counter
    algo = build(name, hang=True, sample_timeout_s=20.0)
    try:
        with caplog.at_level(logging.INFO, logger="flywheel"):
            first, second = train(algo, 2)
        assert group_logs(caplog) == [
            (
                "WARNING",
                "Env runner 1 failed: TimeoutError: Env runner 1 did not finish sample() within "
                "sample_timeout_s=20.0. It was dropped for this iteration. Fix: a faster env, or "
                "config.env_runners(sample_timeout_s=...) higher. Restarting it in 0 s (restarts so far: 0 of "
                "at most 1000).",
            ),
            ("INFO", "Restarted env runner 1 (restart 1)."),
        ]
        assert second["fault_tolerance"]["num_env_runner_timeouts"] == 1
        assert second["fault_tolerance"]["num_env_runner_restarts"] == 1
        assert second["num_env_steps_sampled_lifetime"] == 400
        assert ray.get(actor.get.remote()) == {1: 200, 2: 250}
    finally:
        algo.stop()


def test_failed_sub_env_is_rebuilt_inside_its_runner_without_a_runner_restart(counter):
    name, actor = counter
    algo = build(name, restart_failed_sub_environments=True)
    try:
        first, second, third = train(algo, 3)
        assert first["env_runners"]["num_sub_env_restarts"] == 0
        # Iteration 2: worker 1's step call 150 fails, so its sub-env is rebuilt and the ongoing
        # 10-step episode (steps 141-149) is dropped; the runner records 40 + 60 = 100 steps anyway
        # (calls 101-149 and 151-210) and its runner process lives on.
        assert second["env_runners"]["num_sub_env_restarts"] == 1
        assert second["env_runners"]["num_sub_env_restarts_lifetime"] == 1
        assert second["env_runners"]["num_env_steps_sampled"] == 200
        assert second["env_runners"]["num_episodes"] == 20
        assert second["num_env_steps_sampled_lifetime"] == 400
        assert second["fault_tolerance"]["num_env_runner_failures"] == 0
        assert second["fault_tolerance"]["num_env_runner_restarts"] == 0
        assert third["env_runners"]["num_sub_env_restarts"] == 0
        assert third["env_runners"]["num_sub_env_restarts_lifetime"] == 1
        assert third["num_env_steps_sampled_lifetime"] == 600
        assert ray.get(actor.get.remote()) == {1: 100 + 110 + 100, 2: 300}
    finally:
        algo.stop()


def test_runners_that_cannot_be_placed_end_train_within_the_timeout_with_the_cause(ray_session, caplog):
    """Each runner asks for 3 CPUs of the session's 2: Ray can never place them."""
    config = (
        PPOConfig()
        .environment(CountingEnv)
        .env_runners(num_env_runners=2, num_cpus_per_env_runner=3, sample_timeout_s=2.0)
        .training(train_batch_size_per_learner=20, minibatch_size=10, num_epochs=1)
    )
    algo = config.build_algo()
    try:
        start = time.monotonic()
        with caplog.at_level(logging.INFO, logger="flywheel"), pytest.raises(EnvError) as error:
            algo.train()
        assert time.monotonic() - start < 30
        assert algo.iteration == 0
    finally:
        algo.stop()
    cause = (
        r"env runner\(s\) \[{}\] did not start within sample_timeout_s=2.0 s\. Either Ray cannot place them "
        r"\(each asks for 3 CPU\(s\); the cluster has 2 CPU\(s\), [\d.]+ free; e\.g\. a node was lost\), or "
        r"their constructor hangs \(env creation\)\. Fix: add nodes or free CPUs, lower "
        r"config\.env_runners\(num_cpus_per_env_runner=\.\.\.\), or raise sample_timeout_s\.$"
    )
    assert re.match("^No remote env runner can sample: " + cause.format("1, 2"), str(error.value))
    logs = group_logs(caplog)
    assert [level for level, _ in logs] == ["WARNING", "WARNING"]
    for (_, message), index in zip(logs, (1, 2), strict=True):
        assert re.match(f"^Leaving env runner {index} out for now: " + cause.format(index), message), message
