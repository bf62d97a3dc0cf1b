"""Config calls RLlib 2.60's examples make: settings flywheel implements, those it accepts only at RLlib's
defaults (with the error for anything else), RLlib's deprecated spellings, hooks with RLlib's older
signatures, and a custom env runner class."""

import logging
import warnings

import pytest

from flywheel import BCConfig, PPOConfig, SingleAgentEnvRunner
from flywheel.algorithms import config_rllib_sections
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


def test_num_sgd_iter_is_rllibs_old_name_of_num_epochs():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        config = PPOConfig().training(num_sgd_iter=6)
    assert config.num_epochs == 6
    assert [str(w.message) for w in caught] == [
        "training(num_sgd_iter=...) is RLlib's old name of num_epochs."
    ]


@pytest.fixture
def rllib_warnings(caplog, monkeypatch):
    """The messages config_rllib_sections logs (its once-per-process memory starts empty)."""
    monkeypatch.setattr(config_rllib_sections, "_WARNED", set())
    with caplog.at_level(logging.WARNING, logger="flywheel.algorithms.config_rllib_sections"):
        yield lambda: [record.getMessage() for record in caplog.records]


def test_training_model_is_ignored_as_in_rllibs_new_stack_with_one_warning(rllib_warnings):
    config = PPOConfig().training(model={"fcnet_hiddens": [8]}, lr=1e-4).training(model={"use_lstm": True})
    assert config.lr == 1e-4 and config.model_config == {}
    assert "model" not in config.to_dict()
    assert rllib_warnings() == [
        "training(model={'fcnet_hiddens': [8]}): the old API stack's model dict, which RLlib 2.60's new stack "
        "and flywheel ignore. Fix: pass model settings (fcnet_hiddens, use_lstm, ...) as "
        "config.rl_module(model_config={...})."
    ]


def test_overrides_exploration_changes_nothing_as_in_rllib_and_warns_once(rllib_warnings):
    assert PPOConfig.overrides(exploration=False, explore=False) == {"explore": False}
    assert PPOConfig.overrides(exploration=False) == {}
    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .evaluation(evaluation_config=PPOConfig.overrides(exploration=False))
    )
    assert config.get_evaluation_config_object().explore is True
    assert rllib_warnings() == [
        "overrides(exploration=False): `exploration` is no setting (RLlib 2.60 accepts the key and ignores it, "
        "so its evaluation still explores); flywheel ignores it too. Fix: overrides(explore=False) samples "
        "deterministic actions."
    ]


def test_settings_for_rllibs_machinery_are_stored_and_warn_once_when_not_at_the_no_op_value(rllib_warnings):
    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .learners(num_aggregator_actors_per_learner=0)
        .env_runners(episodes_to_numpy=True)
        .offline_data(map_batches_kwargs={})
    )
    assert rllib_warnings() == []
    config.learners(num_aggregator_actors_per_learner=2).learners(num_aggregator_actors_per_learner=1)
    config.env_runners(episodes_to_numpy=False).offline_data(map_batches_kwargs={"concurrency": 2})
    config.validate()
    assert (config.num_aggregator_actors_per_learner, config.episodes_to_numpy) == (1, False)
    assert config.map_batches_kwargs == {"concurrency": 2}
    assert rllib_warnings() == [
        "learners(num_aggregator_actors_per_learner=2): flywheel starts no aggregator actors; each learner runs "
        "its learner pipeline (episodes to train batch) itself, with the same result. Fix: drop the argument to "
        "silence this warning.",
        "env_runners(episodes_to_numpy=False): flywheel's runners always return numpy'ized episodes (they are "
        "built from the vector env's arrays), so connectors and callbacks read the same values either way. "
        "Fix: drop the argument to silence this warning.",
        "offline_data(map_batches_kwargs={'concurrency': 2}): flywheel has no Ray Data map_batches stage (each "
        "learner turns the rows it reads into episodes), so these keywords tune nothing. Fix: tune the read "
        "with input_read_method_kwargs / iter_batches_kwargs, and drop map_batches_kwargs.",
    ]
    runner = SingleAgentEnvRunner(config=config)
    assert all(episode.is_numpy for episode in runner.sample(num_timesteps=20))
    runner.stop()
    config.learners(num_aggregator_actors_per_learner=-1).env_runners(episodes_to_numpy="no")
    config.offline_data(map_batches_kwargs=[1])
    with pytest.raises(ConfigError) as caught:
        config.validate()
    assert str(caught.value).splitlines()[1:] == [
        "- num_aggregator_actors_per_learner=-1 must be an int >= 0. Fix: pass an int >= 0 to "
        "config.learners(num_aggregator_actors_per_learner=...).",
        "- episodes_to_numpy='no' must be True or False. Fix: pass a bool to config.env_runners(episodes_to_numpy=...).",
        "- map_batches_kwargs=[1] must be a dict. Fix: pass a dict (or nothing) to "
        "config.offline_data(map_batches_kwargs=...).",
    ]


def test_prelearner_class_is_refused_with_the_reason_and_the_fix(tmp_path):
    class MyPreLearner:
        pass

    config = (
        BCConfig()
        .environment("CartPole-v1")
        .offline_data(input_=str(tmp_path), prelearner_class=MyPreLearner)
    )
    with pytest.raises(ConfigError) as caught:
        config.validate()
    assert str(caught.value).splitlines()[1] == (
        f"- prelearner_class={MyPreLearner!r}: flywheel has no OfflinePreLearner; each learner turns the rows it "
        "reads into episodes and its learner pipeline builds the train batch. Fix: move the transformation into "
        "a learner connector piece (config.learners(learner_connector=lambda obs_space, act_space: MyPiece())) "
        "and drop prelearner_class."
    )
    config.offline_data(prelearner_class=None, output_write_remaining_data=False)
    config.validate()


def test_is_atari_names_atari_ids_only():
    assert PPOConfig().environment("ale_py:ALE/Pong-v5").is_atari is True
    assert PPOConfig().environment("CartPole-v1").is_atari is False
    assert PPOConfig().is_atari is False


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
