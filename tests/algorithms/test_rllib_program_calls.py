"""The calls RLlib programs make around a config: get_trainable_cls, get_default_config, build(),
resources(num_gpus=...), default_resource_request, save()/restore(), and envs registered with Tune."""

import warnings

import pytest

from flywheel import PPO, PPOConfig
from flywheel.algorithms.registry import get_trainable_cls
from flywheel.algorithms.trainable_api import SaveResult
from flywheel.env.make import make_env_creator
from flywheel.errors import ConfigError


def tiny() -> PPOConfig:
    return (
        PPOConfig()
        .environment("CartPole-v1")
        .training(train_batch_size_per_learner=100, minibatch_size=50, num_epochs=1)
        .debugging(seed=0)
    )


def test_get_trainable_cls_returns_flywheel_algorithms_with_their_default_config():
    assert get_trainable_cls("PPO") is PPO
    config = get_trainable_cls("DQN").get_default_config()
    assert type(config).__name__ == "DQNConfig" and config.algo_class.__name__ == "DQN"
    with pytest.raises(ConfigError, match=r"Unknown algorithm 'PG'\. Fix: use one of \['PPO', 'DQN'"):
        get_trainable_cls("PG")


def test_a_subclass_default_config_builds_the_subclass():
    class MyPPO(PPO):
        pass

    config = MyPPO.get_default_config()
    assert type(config) is PPOConfig and config.algo_class is MyPPO


def test_build_is_build_algo_with_rllibs_deprecation_warning():
    with pytest.warns(
        DeprecationWarning,
        match=r"^AlgorithmConfig.build\(\) is deprecated: use AlgorithmConfig.build_algo\(\) instead\.$",
    ):
        algo = tiny().build()
    try:
        assert type(algo) is PPO
    finally:
        algo.stop()


def test_resources_takes_rllibs_old_stack_gpu_keywords_with_their_new_stack_meaning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        config = PPOConfig().resources(num_gpus=0, num_cpus_for_main_process=2, _fake_gpus=False)
    assert config.num_cpus_for_main_process == 2 and config.num_gpus_per_learner == 0
    with pytest.warns(
        UserWarning, match=r"resources\(num_gpus=1\) is RLlib's old API stack setting and has no effect"
    ):
        config.resources(num_gpus=1)
    assert config.to_dict() == PPOConfig().resources(num_cpus_for_main_process=2).to_dict()
    with pytest.raises(ConfigError, match=r"resources\(_fake_gpus=True\) simulates TensorFlow GPU towers"):
        config.resources(_fake_gpus=True)


def test_save_and_restore_as_rllib_spells_them(tmp_path):
    algo = tiny().build_algo()
    try:
        algo.train()
        saved = algo.save(tmp_path / "ckpt")
        assert isinstance(saved, SaveResult)
        assert saved.checkpoint.path == str(tmp_path / "ckpt") and saved.metrics == {"training_iteration": 1}
        algo.train()
        assert algo.iteration == algo.training_iteration == 2
        algo.restore(saved)
        assert algo.iteration == algo.training_iteration == 1
        algo.train()
        algo.restore(saved.checkpoint.path)
        assert algo.iteration == 1
        with pytest.raises(
            ConfigError,
            match=r"restore\(\) expects a checkpoint path, a Checkpoint or what save\(\) returned, got int",
        ):
            algo.restore(3)
    finally:
        algo.stop()


def test_default_resource_request_is_tunes_placement_group_of_one_trial():
    pytest.importorskip("ray.tune", reason="needs the `tune` extra: pip install flywheel[tune]")
    config = tiny().env_runners(num_env_runners=2).learners(num_learners=1)
    request = PPO.default_resource_request(config)
    assert request.bundles == [{"CPU": 1}, {"CPU": 1}, {"CPU": 1}, {"CPU": 1}]
    assert request.strategy == "PACK"
    assert PPO.default_resource_request({"num_env_runners": 1}).bundles == [{"CPU": 1}, {"CPU": 1}]


def test_an_env_registered_only_with_tune_is_found_by_flywheel():
    registry = pytest.importorskip(
        "ray.tune.registry", reason="needs the `tune` extra: pip install flywheel[tune]"
    )
    import gymnasium as gym

    def creator(env_config):
        return gym.make("CartPole-v1")

    registry.register_env("cartpole_registered_with_tune", creator)
    found = make_env_creator("cartpole_registered_with_tune")
    assert found({}).spec.id == "CartPole-v1"
