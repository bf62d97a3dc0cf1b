"""Flywheel algorithms as Ray Tune trials: grid search, stop criteria, checkpoints for inference,
retries after a failure and `Tuner.restore`."""

import functools
import sys
from pathlib import Path

import numpy as np
import pytest
import ray
from ray import tune

import flywheel.tune
from flywheel import Algorithm
from flywheel.inference import load_policy

from .conftest import RETURN, run_config, tiny_config

pytestmark = pytest.mark.ray
# The callback below is defined here, so trial processes (which cannot import this file) get it by value.
ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])


def test_a_grid_of_two_trials_queues_and_its_best_checkpoint_restores_for_inference(ray_session, tmp_path):
    # One remote runner per trial: each trial needs both of the session's 2 CPUs, so they queue.
    config = tiny_config(lr=tune.grid_search([1e-3, 1e-4])).env_runners(num_env_runners=1)
    config.rl_module(model_config={"fcnet_hiddens": tune.grid_search([[16]])})
    tuner = tune.Tuner(
        flywheel.tune.trainable("PPO"),
        param_space=config,
        tune_config=tune.TuneConfig(
            reuse_actors=True
        ),  # the second trial starts afresh in the first's process
        run_config=run_config(
            tmp_path,
            stop={"training_iteration": 2},
            checkpoint_config=tune.CheckpointConfig(checkpoint_at_end=True),
        ),
    )
    results = tuner.fit()

    assert results.errors == [] and Path(results.experiment_path).is_relative_to(tmp_path)
    assert sorted(r.config["lr"] for r in results) == [1e-4, 1e-3]
    assert [
        (r.metrics["training_iteration"], r.metrics["num_env_steps_sampled_lifetime"]) for r in results
    ] == [
        (2, 400),
        (2, 400),
    ]
    best = results.get_best_result(metric=RETURN, mode="max")
    assert best.metrics["env_runners"]["episode_return_mean"] == max(
        r.metrics["env_runners"]["episode_return_mean"] for r in results
    )
    path = best.checkpoint.path
    assert not list(Path(path).rglob("ctor_pickled.pkl"))  # Tune's resolved values are plain data

    policy = load_policy(path)
    assert policy.module.model_config["fcnet_hiddens"] == [16]
    assert policy.compute_single_action(np.zeros(4, np.float32)) in (0, 1)
    restored = Algorithm.from_checkpoint(path)
    assert (restored.iteration, restored.config.lr) == (2, best.config["lr"])
    assert restored.train()["num_env_steps_sampled_lifetime"] == 600
    restored.stop()


def test_a_stop_criterion_on_the_return_stops_a_trial_registered_by_name(ray_session, tmp_path):
    flywheel.tune.register("PPO")  # RLlib's form: the trainable by name
    tuner = tune.Tuner(
        "PPO",
        param_space=tiny_config(lr=1e-3),
        run_config=run_config(tmp_path, stop={RETURN: 20.0, "training_iteration": 5}),
    )
    (result,) = tuner.fit()

    returns = result.metrics_dataframe[RETURN].tolist()
    assert result.metrics["training_iteration"] == len(returns) < 5
    assert all(value < 20.0 for value in returns[:-1]) and returns[-1] >= 20.0
    assert Path(result.path).parent.name.startswith("PPO_")
    assert not [
        name for name in sys.modules if name.startswith("ray.rllib")
    ]  # Tune did not fall back to RLlib


def raise_once(*, result, marker, **kwargs):
    """`on_train_result` hook that fails the second iteration, the first time only."""
    if result["training_iteration"] == 2 and not Path(marker).exists():
        Path(marker).touch()
        raise RuntimeError("injected failure")


def failing_once_tuner(tmp_path, max_failures):
    config = tiny_config().callbacks(
        on_train_result=functools.partial(raise_once, marker=str(tmp_path / "failed"))
    )
    return tune.Tuner(
        flywheel.tune.trainable("PPO"),
        param_space=config,
        run_config=run_config(
            tmp_path,
            name="failing_once",
            stop={"training_iteration": 3},
            checkpoint_config=tune.CheckpointConfig(checkpoint_frequency=1),
            failure_config=tune.FailureConfig(max_failures=max_failures),
        ),
    )


def assert_continued_from_the_first_checkpoint(result, tmp_path):
    assert (tmp_path / "failed").exists()
    assert result.metrics_dataframe["training_iteration"].tolist() == [1, 2, 3]
    assert result.metrics["iterations_since_restore"] == 2  # restored after iteration 1
    assert result.metrics["num_env_steps_sampled_lifetime"] == 600


def test_a_trial_that_raises_once_is_retried_from_its_checkpoint(ray_session, tmp_path):
    (result,) = failing_once_tuner(tmp_path, max_failures=1).fit()
    assert result.error is None
    assert_continued_from_the_first_checkpoint(result, tmp_path)


def test_tuner_restore_continues_an_interrupted_experiment(ray_session, tmp_path):
    (failed,) = failing_once_tuner(tmp_path, max_failures=0).fit()
    assert "injected failure" in str(failed.error)
    assert failed.metrics["training_iteration"] == 1

    tuner = tune.Tuner.restore(
        str(tmp_path / "ray_results" / "failing_once"),
        trainable=flywheel.tune.trainable("PPO"),
        resume_errored=True,
    )
    (result,) = tuner.fit()
    assert result.error is None
    assert_continued_from_the_first_checkpoint(result, tmp_path)
