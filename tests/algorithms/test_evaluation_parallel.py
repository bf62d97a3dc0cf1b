"""`evaluation_parallel_to_training=True`: evaluation runs on remote evaluation runners while the
iteration trains, on the weights from before the iteration (RLlib 2.60's meaning)."""

import sys
import time
from pathlib import Path

import pytest
import ray

from flywheel import PPOConfig
from flywheel.testing import CountingEnv

ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
pytestmark = pytest.mark.ray


class StepLogEnv(CountingEnv):
    """Once the file `armed` exists: the evaluation env (`log`) appends a byte to its file per step;
    the training env (`wait_for_steps`) waits (up to 60 s) until that file holds so many bytes."""

    def step(self, action):
        if Path(self.config["armed"]).exists():
            log = Path(self.config["log"])
            if "wait_for_steps" in self.config:
                deadline = time.monotonic() + 60
                while not log.exists() or log.stat().st_size < self.config["wait_for_steps"]:
                    if time.monotonic() > deadline:
                        raise RuntimeError("evaluation did not sample while training waited")
                    time.sleep(0.01)
            else:
                with log.open("ab") as file:
                    file.write(b".")
        return super().step(action)


class HandshakeEnv(CountingEnv):
    """Once the file `armed` exists (after the algorithm is built and has checked its envs): the
    evaluation env (`touch`) creates its file when it steps; the training env (`wait_for`) waits
    (up to 60 s) for that file at each step, so training goes on only while evaluation samples."""

    def step(self, action):
        if not Path(self.config["armed"]).exists():
            return super().step(action)
        if "touch" in self.config:
            Path(self.config["touch"]).touch()
        if "wait_for" in self.config:
            deadline = time.monotonic() + 60
            while not Path(self.config["wait_for"]).exists():
                if time.monotonic() > deadline:
                    raise RuntimeError(
                        "no evaluation step within 60 s of training: evaluation did not overlap"
                    )
                time.sleep(0.01)
        return super().step(action)


def config(folder):
    marker, armed = str(folder / "evaluation_stepped"), str(folder / "armed")
    return (
        PPOConfig()
        .environment(HandshakeEnv, env_config={"episode_len": 5, "wait_for": marker, "armed": armed})
        .training(train_batch_size_per_learner=20, minibatch_size=10, num_epochs=1)
        .evaluation(
            evaluation_interval=1,
            evaluation_duration=2,
            evaluation_num_env_runners=1,
            evaluation_parallel_to_training=True,
            evaluation_config={
                "env_config": {"episode_len": 5, "touch": marker, "armed": armed},
                "num_cpus_per_env_runner": 0,
            },
        )
        .debugging(seed=0)
    )


def test_evaluation_overlaps_training_and_evaluates_the_weights_from_before_it(ray_session, tmp_path):
    algo = config(tmp_path).build_algo()
    assert algo.eval_env_runner_group.probe_health() == 1  # built: its env check's steps are done
    (tmp_path / "armed").touch()
    try:
        results = [algo.train() for _ in range(2)]
    finally:
        algo.stop()
    # The training env's first step waited for the evaluation env's: both ran at once.
    for iteration, result in enumerate(results, start=1):
        assert result["learners"]["__all_modules__"]["weights_seq_no"] == iteration
        assert result["evaluation"]["env_runners"]["weights_seq_no"] == iteration - 1
        assert result["evaluation"]["env_runners"]["num_episodes"] == 2
        assert result["evaluation"]["env_runners"]["episode_return_mean"] == 15
        assert result["env_runners"]["num_env_steps_sampled"] == 20


def test_auto_duration_evaluates_for_as_long_as_training_takes(ray_session, tmp_path):
    """Training waits until evaluation sampled 25 env steps, so "auto" runs at least 3 calls of 10
    steps; every call is 10 steps (min = max = 10), every 5-step episode ends within the round."""
    log, armed = str(tmp_path / "evaluation_steps"), str(tmp_path / "armed")
    algo = (
        PPOConfig()
        .environment(StepLogEnv, env_config={"log": log, "armed": armed, "wait_for_steps": 25})
        .training(train_batch_size_per_learner=20, minibatch_size=10, num_epochs=1)
        .evaluation(
            evaluation_interval=1,
            evaluation_duration="auto",
            evaluation_auto_duration_min_env_steps_per_sample=10,
            evaluation_auto_duration_max_env_steps_per_sample=10,
            evaluation_num_env_runners=1,
            evaluation_parallel_to_training=True,
            evaluation_config={"env_config": {"log": log, "armed": armed}, "num_cpus_per_env_runner": 0},
        )
        .debugging(seed=0)
        .build_algo()
    )
    assert algo.eval_env_runner_group.probe_health() == 1  # built: its env check's steps are done
    Path(armed).touch()
    try:
        results = [algo.train() for _ in range(2)]
    finally:
        algo.stop()
    evaluated = [result["evaluation"]["env_runners"] for result in results]
    assert evaluated[0]["num_env_steps_sampled"] >= 30  # the training waited for 25 of them
    for iteration, evaluation in enumerate(evaluated, start=1):
        steps = evaluation["num_env_steps_sampled"]
        assert steps % 10 == 0 and steps >= 10
        assert evaluation["num_episodes"] == steps // 5
        assert evaluation["episode_len_mean"] == 5
        assert evaluation["weights_seq_no"] == iteration - 1
    assert Path(log).stat().st_size == sum(e["num_env_steps_sampled"] for e in evaluated)
