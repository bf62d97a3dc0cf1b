"""SACConfig: defaults, keywords, problems, and the twin_q setting reaching the module."""

import gymnasium as gym
import pytest
import torch

from flywheel import Columns, SACConfig
from flywheel.algorithms.off_policy import OffPolicyConfig
from flywheel.algorithms.sac import SACConfig as SACConfigFromPackage
from flywheel.algorithms.sac.rl_module import QF_PREDS
from flywheel.errors import ConfigError

SAC_DEFAULTS = {
    "train_batch_size": 256,
    "train_batch_size_per_learner": None,
    "minibatch_size": None,
    "rollout_fragment_length": 1,
    "replay_buffer_config": {"type": "EpisodeReplayBuffer", "capacity": 1_000_000},
    "num_steps_sampled_before_learning_starts": 1500,
    "target_network_update_freq": 0,
    "tau": 5e-3,
    "n_step": 1,
    "training_intensity": None,
    "twin_q": True,
    "initial_alpha": 1.0,
    "target_entropy": "auto",
    "lr": None,  # RLlib 2.60's: SAC's three optimizers have rates of their own
    "actor_lr": 3e-5,
    "critic_lr": 3e-4,
    "alpha_lr": 3e-4,
}


def test_defaults():
    config = SACConfig()
    assert {name: getattr(config, name) for name in SAC_DEFAULTS} == SAC_DEFAULTS
    assert isinstance(config, OffPolicyConfig) and SACConfigFromPackage is SACConfig
    assert config.replay_buffer_settings() == {
        "type": "EpisodeReplayBuffer",
        "capacity": 1_000_000,
        "alpha": 0.6,
        "beta": 0.4,
        "store_in_checkpoints": False,
    }
    SACConfig().environment("Pendulum-v1").validate()
    SACConfig().environment("CartPole-v1").validate()  # Discrete actions too


def test_training_takes_sac_keywords():
    config = SACConfig().training(
        twin_q=False,
        initial_alpha=0.2,
        target_entropy=-2.0,
        actor_lr=1e-3,
        critic_lr=[[0, 1e-3], [1000, 1e-4]],
    )
    assert (config.twin_q, config.initial_alpha, config.target_entropy, config.actor_lr) == (
        False,
        0.2,
        -2.0,
        1e-3,
    )
    with pytest.raises(TypeError, match=r"SACConfig.training\(\) got an unexpected keyword 'dueling'"):
        SACConfig().training(dueling=True)  # a DQN keyword is not a SAC one
    spec = config.environment("Pendulum-v1").get_rl_module_spec()
    assert spec.module_class.__name__ == "DefaultSACTorchRLModule"
    assert spec.model_config == {"fcnet_hiddens": [256, 256], "fcnet_activation": "relu", "twin_q": False}
    discrete = SACConfig().get_rl_module_spec(spaces=(gym.spaces.Box(-1, 1, (4,)), gym.spaces.Discrete(2)))
    assert discrete.module_class is spec.module_class  # one module class for both kinds of actions
    assert discrete.build().compute_q_values({Columns.OBS: torch.zeros(3, 4)})[QF_PREDS].shape == (3, 2)


def test_problems():
    config = (
        SACConfig()
        .environment("Pendulum-v1")
        .training(
            initial_alpha=0.0, target_entropy="high", alpha_lr=-1.0, twin_q="yes", training_intensity=-1
        )
    )
    with pytest.raises(ConfigError) as info:
        config.validate()
    message = str(info.value)
    assert message.startswith("Invalid SACConfig (5 problems):\n")
    assert (
        "- target_entropy='high' must be 'auto' or a number (e.g. -1.0 per action dimension, or 0.5 * log(n)"
        in message
    )
    assert "- initial_alpha=0.0 must be a number > 0." in message
    assert "- alpha_lr=-1.0 must be a number > 0." in message
    assert "- twin_q='yes' must be True or False." in message
    assert "- training_intensity=-1 would never train" in message


def test_lr_none_is_accepted_and_a_rate_in_lr_is_refused_with_the_fix():
    config = SACConfig().environment("Pendulum-v1").training(lr=None, actor_lr=1e-4)
    config.validate()
    assert (config.lr, config.actor_lr) == (None, 1e-4)
    with pytest.raises(ConfigError) as info:
        SACConfig().environment("Pendulum-v1").training(lr=1e-3).validate()
    assert str(info.value) == (
        "Invalid SACConfig (1 problem):\n- lr=0.001: SAC does not use lr; its three optimizers have their own "
        "rates, actor_lr=3e-05, critic_lr=0.0003 and alpha_lr=0.0003. Fix: pass the rates to "
        "config.training(actor_lr=..., critic_lr=..., alpha_lr=...) and leave lr=None (the default)."
    )


def test_a_learner_takes_a_new_config_although_lr_is_none():
    config = SACConfig().environment("Pendulum-v1").rl_module(model_config={"fcnet_hiddens": [8]})
    learner = config.build_learner()
    learner.reset_config(config.copy(copy_frozen=False).training(gamma=0.9))
    assert learner.config.gamma == 0.9
    rates = {
        name: optimizer.param_groups[0]["lr"]
        for name, optimizer in learner.get_optimizers_for_module("default_policy")
    }
    assert rates == {"critic": 3e-4, "actor": 3e-5, "alpha": 3e-4}
