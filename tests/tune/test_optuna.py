"""Optuna proposes the trials' settings through Ray Tune's `OptunaSearch`."""

import pytest
from ray import tune
from ray.tune.search.optuna import OptunaSearch

import flywheel.tune

from .conftest import RETURN, run_config, tiny_config

pytestmark = pytest.mark.ray


def test_optuna_search_runs_three_samples(ray_session, tmp_path):
    config = tiny_config(lr=tune.loguniform(1e-4, 1e-2), gamma=tune.uniform(0.9, 0.99))
    tuner = tune.Tuner(
        flywheel.tune.trainable("PPO"),
        param_space=config.to_dict(),  # a config's dict works as well as the config
        tune_config=tune.TuneConfig(
            search_alg=OptunaSearch(seed=0),
            metric=RETURN,
            mode="max",
            num_samples=3,
            max_concurrent_trials=2,
            reuse_actors=True,  # the third trial starts afresh in a finished trial's process
        ),
        run_config=run_config(tmp_path, stop={"training_iteration": 1}),
    )
    results = tuner.fit()

    assert results.errors == [] and len(results) == 3
    assert [
        (r.metrics["training_iteration"], r.metrics["num_env_steps_sampled_lifetime"]) for r in results
    ] == [(1, 200)] * 3
    lrs = [r.config["lr"] for r in results]
    assert len(set(lrs)) == 3 and all(1e-4 <= lr <= 1e-2 for lr in lrs)
    assert all(0.9 <= r.config["gamma"] <= 0.99 for r in results)
    best = results.get_best_result()
    assert best.metrics["env_runners"]["episode_return_mean"] == max(
        r.metrics["env_runners"]["episode_return_mean"] for r in results
    )
