"""Population Based Training: trials clone each other's checkpoints and perturb `lr`, which the
reused trial processes take in place (no new algorithm, runners or envs)."""

import sys

import pytest
import ray
from ray import tune
from ray.tune.schedulers import PopulationBasedTraining

import flywheel.tune

from .conftest import RETURN, run_config, tiny_config

pytestmark = pytest.mark.ray
# The callbacks below are defined here, so trial processes (which cannot import this file) get them by value.
ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])

LR = "learners/default_policy/default_optimizer_learning_rate"


def test_pbt_perturbs_lr_in_place_and_both_trials_finish(ray_session, tmp_path):
    built_with = tmp_path / "built_with_lr.txt"

    def record_lr(algorithm, **kwargs):
        with open(built_with, "a") as f:
            f.write(f"{algorithm.config.lr}\n")

    config = tiny_config(lr=tune.grid_search([1e-3, 1e-4])).callbacks(on_algorithm_init=record_lr)
    pbt = PopulationBasedTraining(
        time_attr="training_iteration",
        perturbation_interval=1,
        quantile_fraction=0.5,
        hyperparam_mutations={"lr": tune.loguniform(1e-5, 1e-2)},
    )
    tuner = tune.Tuner(
        flywheel.tune.trainable("PPO"),
        param_space=config,
        tune_config=tune.TuneConfig(scheduler=pbt, metric=RETURN, mode="max", reuse_actors=True),
        run_config=run_config(tmp_path, stop={"training_iteration": 4}),
    )
    results = tuner.fit()

    assert results.errors == []
    assert [r.metrics["training_iteration"] for r in results] == [4, 4]
    rows = [row for r in results for row in r.metrics_dataframe[["config/lr", LR]].itertuples(index=False)]
    # Every iteration trained with its trial's lr of that moment, and PBT changed some trial's lr.
    assert all(config_lr == pytest.approx(used_lr) for config_lr, used_lr in rows)
    assert {lr for lr, _ in rows} - {1e-3, 1e-4}
    # Algorithms (with their runners and envs) were built only for trials starting from scratch, never
    # with a perturbed lr: the trials that continued from a clone's checkpoint took the new lr in place.
    assert {float(lr) for lr in built_with.read_text().split()} <= {1e-3, 1e-4}
