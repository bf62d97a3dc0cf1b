"""PPOConfig: defaults, PPO keywords in training(), its default classes and import laziness."""

import subprocess
import sys

import pytest

from flywheel import AlgorithmConfig, PPOConfig
from flywheel.algorithms.ppo import PPOConfig as PPOConfigFromPackage

PPO_DEFAULTS = {
    "lr": 5e-5,
    "num_epochs": 30,
    "clip_param": 0.3,
    "vf_clip_param": 10.0,
    "vf_loss_coeff": 1.0,
    "entropy_coeff": 0.0,
    "use_kl_loss": True,
    "kl_coeff": 0.2,
    "kl_target": 0.01,
    "lambda_": 1.0,
    "use_gae": True,
}


def test_defaults_and_the_shared_ones():
    config = PPOConfig()
    assert {name: getattr(config, name) for name in PPO_DEFAULTS} == PPO_DEFAULTS
    assert (config.gamma, config.minibatch_size, config.train_batch_size) == (0.99, 128, 4000)
    assert config.train_batch_size_per_learner is None
    assert PPOConfigFromPackage is PPOConfig and isinstance(config, AlgorithmConfig)


def test_training_takes_ppo_and_shared_keywords():
    config = PPOConfig().training(
        lr=[[0, 3e-4], [100_000, 1e-5]],
        gamma=0.98,
        num_epochs=10,
        clip_param=0.25,
        vf_clip_param=5.0,
        vf_loss_coeff=0.5,
        entropy_coeff=[[0, 0.01], [50_000, 0.0]],
        use_kl_loss=False,
        kl_coeff=0.1,
        kl_target=0.02,
        lambda_=0.9,
        use_gae=False,
    )
    assert (config.clip_param, config.vf_clip_param, config.vf_loss_coeff) == (0.25, 5.0, 0.5)
    assert config.entropy_coeff == [[0, 0.01], [50_000, 0.0]] and config.lr == [[0, 3e-4], [100_000, 1e-5]]
    assert (config.use_kl_loss, config.kl_coeff, config.kl_target, config.lambda_, config.use_gae) == (
        False,
        0.1,
        0.02,
        0.9,
        False,
    )
    assert config.gamma == 0.98 and config.num_epochs == 10
    config.environment("CartPole-v1").validate()


def test_ppo_keywords_belong_to_training_only():
    assert {n for n in PPO_DEFAULTS if PPOConfig.section_of(n) != "training"} == set()
    with pytest.raises(
        TypeError, match=r"^PPOConfig.env_runners\(\) got an unexpected keyword 'clip_param'. "
    ):
        PPOConfig().env_runners(clip_param=0.1)


def test_default_module_spec_and_learner_class():
    from flywheel.algorithms.ppo.rl_module import DefaultPPOTorchRLModule

    assert PPOConfig().get_default_rl_module_spec().module_class is DefaultPPOTorchRLModule
    from flywheel.algorithms.ppo.learner import PPOTorchLearner

    assert PPOConfig().get_default_learner_class() is PPOTorchLearner


def test_default_algo_class_is_ppo():
    from flywheel.algorithms import ppo as package
    from flywheel.algorithms.ppo.ppo import PPO

    assert PPOConfig().algo_class is PPO
    assert package.PPO is PPO


def test_unknown_package_attribute():
    from flywheel.algorithms import ppo as package

    with pytest.raises(AttributeError, match="module 'flywheel.algorithms.ppo' has no attribute 'PP0'"):
        package.PP0  # noqa: B018


def test_building_and_validating_a_config_imports_neither_ray_nor_torch():
    code = (
        "import sys\n"
        "from flywheel import PPOConfig\n"
        "c = PPOConfig().environment('CartPole-v1').training(lambda_=0.9)\n"
        "c.validate(); c.copy().to_dict(); c.build_callbacks()\n"
        "print('ray' in sys.modules, 'torch' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False False"
