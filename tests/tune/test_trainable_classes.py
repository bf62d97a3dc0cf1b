"""`flywheel.tune.trainable()` and the trial config it builds, without running Tune: names, config
classes, Tune-only keys, unresolved search spaces, env registrations and resource requests."""

import subprocess
import sys

import pytest
from ray import tune
from ray.tune.search.variant_generator import generate_variants

import flywheel.tune
from flywheel import PPO, DQNConfig, PPOConfig, RLModuleSpec, register_env
from flywheel.errors import ConfigError
from flywheel.tune.algorithm_trainable import AlgorithmTrainable

from .conftest import tiny_config


class MyPPO(PPO):
    pass


def test_import_flywheel_tune_does_not_import_ray():
    code = "import sys, flywheel, flywheel.tune\nprint('ray' in sys.modules)\n"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout == "False\n", out.stderr[-2000:]


def test_names_and_algorithm_classes_give_trainables_named_after_the_algorithm():
    ppo, dqn, mine = (
        flywheel.tune.trainable("PPO"),
        flywheel.tune.trainable("DQN"),
        flywheel.tune.trainable(MyPPO),
    )
    assert all(issubclass(t, tune.Trainable) and issubclass(t, AlgorithmTrainable) for t in (ppo, dqn, mine))
    assert [t.__name__ for t in (ppo, dqn, mine)] == ["PPO", "DQN", "MyPPO"]
    assert (ppo.algo_class, ppo.config_class) == (PPO, PPOConfig)
    assert dqn.config_class is DQNConfig
    assert (mine.algo_class, mine.config_class) == (MyPPO, PPOConfig)  # the closest registered base's config
    assert mine.algorithm_config({"lr": 0.01}).algo_class is MyPPO


def test_unknown_algorithms_are_refused_with_the_choices():
    with pytest.raises(
        ConfigError,
        match=r"Unknown algorithm 'XPO'. Fix: use one of \['PPO', 'DQN', 'SAC', 'IMPALA', 'APPO', 'BC', 'MARWIL', 'CQL', 'IQL', 'TQC', 'DreamerV3'\]",
    ):
        flywheel.tune.trainable("XPO")
    with pytest.raises(
        ConfigError, match=r"expects an algorithm name such as 'PPO' or an Algorithm subclass, got 3"
    ):
        flywheel.tune.trainable(3)


def test_the_trial_config_is_the_settings_over_the_defaults_and_tune_only_keys_are_dropped():
    settings = tiny_config(lr=5e-4).to_dict()
    config = flywheel.tune.trainable("PPO").algorithm_config({**settings, "__trial_index__": 1})
    assert type(config) is PPOConfig and config.to_dict() == settings
    partial = flywheel.tune.trainable("PPO").algorithm_config({"env": "CartPole-v1", "clip_param": 0.1})
    assert (partial.clip_param, partial.lr, partial.env) == (0.1, 5e-5, "CartPole-v1")  # PPO's lr default


def map_to_p1(agent_id, episode, **kwargs):
    return "p1"


def test_search_spaces_nested_in_dicts_and_lists_resolve_into_valid_trial_configs():
    config = (
        tiny_config(lr=[[0, tune.choice([1e-3])], [1000, 1e-5]])
        .multi_agent(policies={"p0": None, "p1": tune.choice([RLModuleSpec()])}, policy_mapping_fn=map_to_p1)
        .rl_module(model_config={"fcnet_hiddens": tune.grid_search([[8], [16, 16]])})
    )
    trainable = flywheel.tune.trainable("PPO")
    # What Tune does with a param space (a config goes through its to_dict()).
    trial_configs = [trainable.algorithm_config(spec) for _, spec in generate_variants(config.to_dict())]
    for trial_config in trial_configs:
        trial_config.validate()
    assert [c.model_config for c in trial_configs] == [{"fcnet_hiddens": [8]}, {"fcnet_hiddens": [16, 16]}]
    assert [(c.lr, c.policies, c.policy_mapping_fn) for c in trial_configs] == [
        ([[0, 1e-3], [1000, 1e-5]], {"p0": None, "p1": RLModuleSpec()}, map_to_p1)
    ] * 2


def test_search_spaces_left_inside_objects_are_named_with_a_fix():
    spec = RLModuleSpec(model_config={"hidden": tune.choice([16, 32])})
    settings = {
        "rl_module_spec": spec,
        "policies": {"p0": RLModuleSpec(model_config={"h": tune.grid_search([1])})},
    }
    with pytest.raises(ConfigError) as error:  # Tune asks for the trial's resources first, on the driver
        flywheel.tune.trainable("PPO").default_resource_request(settings)
    assert str(error.value).startswith(
        "Ray Tune left search spaces unresolved at rl_module_spec.model_config['hidden'], "
        "policies['p0'].model_config['h']: Tune resolves them only inside dicts and lists"
    )


def test_envs_registered_before_the_call_travel_with_the_trainable():
    register_env("tune_test_env", lambda env_config: None)
    trainable = flywheel.tune.trainable("PPO")
    register_env("tune_test_env_later", lambda env_config: None)
    assert "tune_test_env" in trainable.env_registry and "tune_test_env_later" not in trainable.env_registry


@pytest.mark.parametrize(
    ("settings", "bundles"),
    [
        ({}, [{"CPU": 1}]),
        ({"num_env_runners": 1}, [{"CPU": 1}, {"CPU": 1}]),
        (
            {"num_env_runners": 2, "num_cpus_per_env_runner": 0.5, "num_cpus_for_main_process": 0.5},
            [{"CPU": 0.5}, {"CPU": 0.5}, {"CPU": 0.5}],
        ),
        ({"num_env_runners": 2, "num_cpus_per_env_runner": 0}, [{"CPU": 1}]),  # actors asking for nothing
        ({"num_gpus_per_learner": 1}, [{"CPU": 1, "GPU": 1}]),  # the main process learns on the GPU
        (
            {"num_learners": 2, "num_gpus_per_learner": 1, "evaluation_num_env_runners": 1},
            [{"CPU": 1}, {"CPU": 1}, {"CPU": 1, "GPU": 1}, {"CPU": 1, "GPU": 1}],
        ),
        (
            {"evaluation_num_env_runners": 1, "evaluation_config": {"num_cpus_per_env_runner": 2}},
            [{"CPU": 1}, {"CPU": 2}],
        ),
    ],
)
def test_a_trial_asks_for_its_main_process_runners_and_learners_as_one_placement_group(settings, bundles):
    request = flywheel.tune.trainable("PPO").default_resource_request({"env": "CartPole-v1", **settings})
    assert (request.bundles, request.strategy) == (bundles, "PACK")


def test_the_placement_strategy_comes_from_the_config():
    config = tiny_config().resources(placement_strategy="STRICT_SPREAD").env_runners(num_env_runners=1)
    request = flywheel.tune.trainable("PPO").default_resource_request(config.to_dict())
    assert (request.bundles, request.strategy) == ([{"CPU": 1}, {"CPU": 1}], "STRICT_SPREAD")


def test_resources_settings_are_validated():
    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .resources(num_cpus_for_main_process=0, placement_strategy="pack")
    )
    with pytest.raises(ConfigError) as error:
        config.validate()
    assert "num_cpus_for_main_process=0 must be a number > 0." in str(error.value)
    assert (
        "placement_strategy='pack' is not one of ['PACK', 'SPREAD', 'STRICT_PACK', 'STRICT_SPREAD']"
        in str(error.value)
    )
