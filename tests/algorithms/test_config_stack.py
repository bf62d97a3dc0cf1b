"""RLlib 2.60 config calls flywheel accepts: api_stack(), framework(), learner_config_dict, and the
learner settings RLlib still takes in training()."""

import logging

import pytest

from flywheel import AlgorithmConfig, PPOConfig
from flywheel.errors import ConfigError


def test_api_stack_accepts_the_new_stack():
    config = PPOConfig()
    assert (
        config.api_stack(enable_rl_module_and_learner=True, enable_env_runner_and_connector_v2=True) is config
    )
    assert config.api_stack() is config
    assert config.enable_rl_module_and_learner is True and config.enable_env_runner_and_connector_v2 is True


@pytest.mark.parametrize(
    ("kwargs", "named"),
    [
        ({"enable_rl_module_and_learner": False}, "enable_rl_module_and_learner=False"),
        (
            {"enable_rl_module_and_learner": False, "enable_env_runner_and_connector_v2": False},
            "enable_rl_module_and_learner=False, enable_env_runner_and_connector_v2=False",
        ),
    ],
)
def test_api_stack_refuses_the_old_stack(kwargs, named):
    with pytest.raises(ConfigError, match=rf"api_stack\({named}\): flywheel has only RLlib's new API stack"):
        AlgorithmConfig().api_stack(**kwargs)


def test_framework_accepts_torch_and_its_options():
    config = PPOConfig()
    assert config.framework("torch") is config and config.framework_str == "torch"
    config.framework(
        framework="torch", eager_tracing=True, torch_skip_nan_gradients=True, torch_ddp_kwargs={}
    )
    assert config.to_dict() == PPOConfig().to_dict()  # nothing stored: flywheel trains the same way


@pytest.mark.parametrize("framework", ["tf2", "tf", "jax"])
def test_framework_refuses_other_frameworks(framework):
    with pytest.raises(ConfigError, match=rf"framework\('{framework}'\): flywheel runs on torch only"):
        PPOConfig().framework(framework)


def test_framework_rejects_unknown_options():
    with pytest.raises(TypeError, match=r"framework\(\) got unexpected keywords \['torch_compile'\]"):
        PPOConfig().framework("torch", torch_compile=True)


def test_torch_compile_warns_once(caplog, monkeypatch):
    from flywheel.algorithms import config_stack

    monkeypatch.setattr(config_stack, "_WARNED", set())
    with caplog.at_level(logging.WARNING, logger="flywheel.algorithms.config_stack"):
        PPOConfig().framework("torch", torch_compile_learner=True, torch_compile_worker=True)
        PPOConfig().framework("torch", torch_compile_learner=True)
        PPOConfig().framework("torch", torch_compile_learner=False)
    assert [r.getMessage() for r in caplog.records] == [
        "framework(torch_compile_learner=True, torch_compile_worker=True): flywheel does not torch.compile "
        "modules or updates; they run eagerly and the option is ignored. Fix: drop the option to silence "
        "this warning."
    ]


def test_learner_config_dict_merges_as_rllibs_does():
    config = PPOConfig().learners(learner_config_dict={"a": 1})
    config.training(learner_config_dict={"b": 2})
    config.learners(learner_config_dict={"a": 3})
    assert config.learner_config_dict == {"a": 3, "b": 2}
    assert PPOConfig().learner_config_dict == {}


def test_training_takes_the_learner_settings_rllib_still_takes_there():
    def hook(obs_space, act_space):
        return []

    config = PPOConfig().training(
        lr=0.1, learner_connector=hook, add_default_connectors_to_learner_pipeline=False
    )
    assert config.learner_connector is hook and config.add_default_connectors_to_learner_pipeline is False
    assert config.lr == 0.1 and config.section_of("learner_connector") == "learners"


def test_get_config_for_module_is_the_config():
    config = PPOConfig()
    assert config.get_config_for_module("p0") is config


def test_get_rl_module_spec_takes_rllibs_env_spaces_and_inference_only():
    import gymnasium as gym

    env = gym.make("CartPole-v1")
    spec = PPOConfig().get_rl_module_spec(env=env, inference_only=True)
    assert (spec.observation_space, spec.action_space, spec.inference_only) == (
        env.observation_space,
        env.action_space,
        True,
    )
    box = gym.spaces.Box(-1.0, 1.0, (2,))
    spec = PPOConfig().get_rl_module_spec(spaces={"p1": (box, env.action_space)}, module_id="p1")
    assert spec.observation_space == box
    from flywheel import DQNConfig, SACConfig

    assert DQNConfig().get_rl_module_spec(env=env).observation_space == env.observation_space
    pendulum = gym.make("Pendulum-v1")
    assert SACConfig().get_rl_module_spec(env=pendulum).action_space == pendulum.action_space
