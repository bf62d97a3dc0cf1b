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
        # Synchronous: both trials reach each perturbation before the top one is saved and the other
        # clones it. (Asynchronous PBT skips an exploit when the top trial has not yet saved at a
        # perturbation, which on a loaded machine can happen at every one of the 3.)
        synch=True,
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
    # Whether an exploiting trial keeps its actor is Tune's choice (a new actor is built with the new
    # lr when none is free); a kept actor takes the new lr in place (test below).
    assert {float(lr) for lr in built_with.read_text().split()} >= {1e-3, 1e-4}


def test_a_reused_trial_takes_the_new_config_in_place_when_it_loads_a_checkpoint(tmp_path):
    built = []
    settings = (
        tiny_config(lr=1e-3).callbacks(on_algorithm_init=lambda algorithm, **kw: built.append(1)).to_dict()
    )
    trial = flywheel.tune.trainable("PPO")(config=settings)
    checkpoint = trial.save(str(tmp_path / "checkpoint"))
    algorithm = trial.algo

    assert trial.reset({**settings, "lr": 2e-3}) is True  # what Tune calls on a reused actor
    trial.restore(checkpoint)
    result = trial.train()

    assert trial.algo is algorithm and built == [1]
    assert result["config"]["lr"] == 2e-3
    assert result["learners"]["default_policy"]["default_optimizer_learning_rate"] == pytest.approx(2e-3)
    trial.stop()
