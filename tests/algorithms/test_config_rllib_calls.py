"""Config calls RLlib 2.60's examples make: settings flywheel implements, those it accepts only at RLlib's
defaults (with the error for anything else), RLlib's deprecated spellings, hooks with RLlib's older
signatures, and a custom env runner class."""

import warnings

import pytest

from flywheel import PPOConfig, SingleAgentEnvRunner
from flywheel.connectors.env_to_module import FlattenObservations
from flywheel.errors import ConfigError


def test_sections_without_a_flywheel_meaning_accept_rllibs_defaults_only():
    config = PPOConfig()
    before = config.to_dict()
    assert (
        config.checkpointing(export_native_model_files=False, checkpoint_trainable_policies_only=False)
        .experimental(_validate_config=True, _disable_preprocessor_api=False, _torch_grad_scaler_class=None)
        .python_environment(extra_python_environs_for_driver={}, extra_python_environs_for_worker={})
        is config
    )
    assert config.to_dict() == before  # nothing stored
    with pytest.raises(
        ConfigError,
        match=r"^checkpointing\(export_native_model_files=True\) has no meaning in flywheel, which accepts only "
        r"RLlib's default False here\. Fix: drop the argument \(flywheel checkpoints hold the module's weights",
    ):
        config.checkpointing(export_native_model_files=True)
    with pytest.raises(
        ConfigError, match=r"^python_environment\(extra_python_environs_for_worker=\{'A': '1'\}\)"
    ):
        config.python_environment(extra_python_environs_for_worker={"A": "1"})
    with pytest.raises(TypeError, match=r"PPOConfig\.experimental\(\) got an unexpected keyword '_nope'"):
        config.experimental(_nope=1)


def test_accepted_rllib_settings_and_the_one_refused_value():
    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .evaluation(evaluation_parallel_to_training=True, evaluation_num_env_runners=1)
        .env_runners(create_env_on_local_worker=True, num_gpus_per_env_runner=0)
        .reporting(log_gradients=False)
        .debugging(log_sys_usage=False)
    )
    config.validate()
    config.env_runners(num_gpus_per_env_runner=1)
    with pytest.raises(
        ConfigError, match=r"- num_gpus_per_env_runner=1: flywheel's env runners act on the CPU"
    ):
        config.validate()


def test_num_sgd_iter_is_rllibs_old_name_of_num_epochs_and_model_is_refused():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        config = PPOConfig().training(num_sgd_iter=6)
    assert config.num_epochs == 6
    assert [str(w.message) for w in caught] == [
        "training(num_sgd_iter=...) is RLlib's old name of num_epochs."
    ]
    with pytest.raises(
        ConfigError, match=r"^training\(model=\{'fcnet_hiddens': \[8\]\}\) is RLlib's old-stack model"
    ):
        PPOConfig().training(model={"fcnet_hiddens": [8]})


class CountingRunner(SingleAgentEnvRunner):
    samples = 0

    def sample(self, **kwargs):
        type(self).samples += 1
        return super().sample(**kwargs)


def test_env_runner_cls_samples_for_the_algorithm():
    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(env_runner_cls=CountingRunner)
        .training(train_batch_size=64, minibatch_size=32, num_epochs=1)
    )
    algo = config.build_algo()
    assert type(algo.env_runner) is CountingRunner
    algo.train()
    algo.stop()
    assert CountingRunner.samples == 1


def test_connector_hooks_with_rllibs_older_signatures_get_the_leading_arguments():
    seen = []
    config = (
        PPOConfig()
        .environment("FrozenLake-v1")
        .env_runners(env_to_module_connector=lambda env: seen.append(env) or FlattenObservations())
    )
    runner = SingleAgentEnvRunner(config=config)
    assert len(seen) == 1 and hasattr(seen[0], "single_observation_space")
    assert runner.module.observation_space.shape == (16,)
    runner.stop()
    learner_config = PPOConfig().training(learner_connector=lambda *args, **kwargs: [])
    assert [piece.name for piece in learner_config.build_learner_connector(None, None).connectors][-1] == (
        "GeneralAdvantageEstimation"
    )
