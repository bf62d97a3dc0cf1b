"""RLlib programs' forms of a Tune run on flywheel: `Tuner(config.algo_class, param_space=config)` and
`Tuner("PPO", param_space=config.to_dict())` (what `flywheel port` makes of `tune.Tuner`), and an env
registered with Tune's own `register_env`."""

import sys

import gymnasium as gym
import pytest
import ray
from ray import tune

from flywheel import APPO, PPO
from flywheel.errors import ConfigError
from flywheel.tune import Tuner
from flywheel.tune.tuner import as_tune_trainable, check_gpus_here

from .conftest import run_config, tiny_config

pytestmark = pytest.mark.ray
# The env creator below is defined here, so trial processes (which cannot import this file) get it by value.
ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])


def make_cartpole(env_config):
    return gym.make("CartPole-v1")


def test_a_flywheel_algorithm_class_or_name_becomes_flywheels_trainable(monkeypatch):
    config = tiny_config()
    # Other tests register built-in names with Tune (Tune's registry lives as long as the process).
    monkeypatch.setattr("flywheel.tune.tuner.is_tune_registered_trainable", lambda name: False)
    by_class, by_name = as_tune_trainable(PPO, config), as_tune_trainable("APPO", config.to_dict())
    assert issubclass(by_class, tune.Trainable) and by_class.algo_class is PPO
    assert issubclass(by_name, tune.Trainable) and by_name.algo_class is APPO
    monkeypatch.setattr("flywheel.tune.tuner.is_tune_registered_trainable", lambda name: True)
    assert as_tune_trainable("APPO", config.to_dict()) == "APPO"  # registered with Tune: Tune resolves it
    assert as_tune_trainable("MyRegisteredName") == "MyRegisteredName"  # Tune's own names: as given


def test_tuner_runs_config_algo_class_and_a_name_on_a_tune_registered_env(ray_session, tmp_path):
    tune.register_env("cartpole_via_tune", make_cartpole)
    config = tiny_config().environment("cartpole_via_tune")
    stop = {"training_iteration": 1}
    for trainable, space in [(config.algo_class, config), ("PPO", config.to_dict())]:
        grid = Tuner(trainable, param_space=space, run_config=run_config(tmp_path, stop=stop)).fit()
        assert grid.errors == [] and grid[0].metrics["training_iteration"] == 1
        assert grid[0].metrics["env_runners"]["num_env_steps_sampled"] == 200


def test_fit_refuses_gpus_this_machine_lacks_before_starting_ray(monkeypatch):
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.setattr("torch.cuda.device_count", lambda: 0)
    monkeypatch.setattr(ray, "is_initialized", lambda: False)  # as in a fresh process (Tune would start Ray)
    config = (
        APPO.get_default_config().environment("CartPole-v1").learners(num_learners=1, num_gpus_per_learner=1)
    )
    with pytest.raises(ConfigError, match=r"asks for 1 GPU\(s\).*this machine has 0.*num_gpus_per_learner=0"):
        Tuner(config.algo_class, param_space=config).fit()
    with pytest.raises(ConfigError, match=r"asks for 2 GPU\(s\)"):
        Tuner(
            "PPO", param_space={**tiny_config().to_dict(), "num_learners": 2, "num_gpus_per_learner": 1}
        ).fit()


def test_gpus_are_not_checked_against_a_cluster_or_a_search_space(monkeypatch):
    monkeypatch.setattr("torch.cuda.device_count", lambda: 0)
    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setenv("RAY_ADDRESS", "10.0.0.1:6379")
    check_gpus_here(APPO.get_default_config().learners(num_gpus_per_learner=1))
    monkeypatch.delenv("RAY_ADDRESS")
    check_gpus_here({"num_gpus_per_learner": tune.choice([0, 1])})
    check_gpus_here(APPO.get_default_config())  # no GPU asked


def test_restore_takes_config_algo_class_and_a_name_as_the_tuner_does(ray_session, tmp_path, monkeypatch):
    # RLlib's programs resume with `tune.Tuner.restore(path, trainable=config.algo_class)` (or "PPO").
    monkeypatch.setattr("flywheel.tune.tuner.is_tune_registered_trainable", lambda name: False)
    config = tiny_config()
    stop = {"training_iteration": 1}
    grid = Tuner(config.algo_class, param_space=config, run_config=run_config(tmp_path, stop=stop)).fit()
    for trainable in (config.algo_class, "PPO"):
        restored = Tuner.restore(grid.experiment_path, trainable=trainable).fit()
        assert restored.errors == [] and restored[0].metrics["training_iteration"] == 1
        assert restored[0].metrics["num_env_steps_sampled_lifetime"] == 200
    assert not [name for name in sys.modules if name.startswith("ray.rllib")]  # never RLlib's PPO
