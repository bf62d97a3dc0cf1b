"""config.environment(env_wrappers=[...]): gymnasium wrappers around every sub-env, no register_env."""

import gymnasium as gym
import numpy as np
import pytest

from flywheel import PPOConfig, SingleAgentEnvRunner
from flywheel.env import EnvContext, make_env_creator, make_vector_env
from flywheel.env.make import wrapped_creator
from flywheel.errors import ConfigError, EnvError


def config(*wrappers, **env_runners):
    return (
        PPOConfig()
        .environment("CartPole-v1", env_wrappers=list(wrappers))
        .env_runners(**env_runners)
        .training(train_batch_size_per_learner=128, minibatch_size=64, num_epochs=1)
        .debugging(seed=0)
    )


def test_creator_wraps_in_list_order_first_innermost():
    creator = wrapped_creator(
        make_env_creator("CartPole-v1"),
        [gym.wrappers.TimeAwareObservation, gym.wrappers.RecordEpisodeStatistics],
    )
    env = creator(EnvContext())
    assert isinstance(env, gym.wrappers.RecordEpisodeStatistics)
    assert isinstance(env.env, gym.wrappers.TimeAwareObservation)
    assert env.observation_space.shape == (5,)


def test_every_sub_env_of_a_runner_is_wrapped_and_episodes_follow_the_wrapper():
    runner = SingleAgentEnvRunner(
        config=config(lambda env: gym.wrappers.TimeLimit(env, 7), num_envs_per_env_runner=3)
    )
    episodes = runner.sample(num_timesteps=60, random_actions=True)
    finished = [len(e) for e in episodes if e.is_done]
    assert finished and max(finished) <= 7 and all(e.is_truncated for e in episodes if len(e) == 7)
    runner.stop()


def test_a_wrapper_that_changes_the_spaces_reaches_the_module_on_runners_and_learners():
    algo = config(gym.wrappers.TimeAwareObservation).build_algo()
    assert algo.get_module().observation_space.shape == (5,)
    assert algo.learner_group.foreach_learner(
        lambda learner: learner.module["default_policy"].observation_space.shape
    ) == [(5,)]
    result = algo.train()
    assert result["env_runners"]["num_env_steps_sampled_lifetime"] == 128
    algo.stop()
    learner = config(gym.wrappers.TimeAwareObservation).build_learner()  # spaces from one wrapped env
    assert learner.module["default_policy"].observation_space.shape == (5,)


@pytest.mark.ray
def test_remote_runners_wrap_their_sub_envs(ray_session):
    algo = config(lambda env: gym.wrappers.TimeLimit(env, 5), num_env_runners=1).build_algo()
    result = algo.train()
    assert result["env_runners"]["episode_len_max"] <= 5
    algo.stop()


def test_a_wrapper_that_returns_no_env_is_named():
    with pytest.raises(
        EnvError,
        match=r"env_wrappers: .*<lambda>\(env\) returned int, expected a gymnasium\.Env\. Fix: pass wrapper classes",
    ):
        wrapped_creator(make_env_creator("CartPole-v1"), [lambda env: 3])(EnvContext())


def test_vector_entry_point_has_no_sub_envs_to_wrap():
    with pytest.raises(
        EnvError,
        match=r"env_wrappers wrap each sub-env, but gym_env_vectorize_mode='vector_entry_point' builds no sub-envs",
    ):
        make_vector_env(
            "CartPole-v1", num_envs=2, vectorize_mode="vector_entry_point", wrappers=[gym.wrappers.ClipAction]
        )


@pytest.mark.parametrize(
    "settings, message",
    [
        (
            {"env_wrappers": gym.wrappers.ClipAction},
            r"env_wrappers=<class '.*ClipAction'> is not a list\. Fix: pass a list of wrapper classes",
        ),
        (
            {"env_wrappers": [gym.wrappers.ClipAction, "TimeLimit"]},
            r"env_wrappers holds 'TimeLimit', which is not callable\.",
        ),
        (
            {"env_wrappers": [gym.wrappers.ClipAction], "gym_env_vectorize_mode": "vector_entry_point"},
            r"env_wrappers wrap each sub-env, but gym_env_vectorize_mode='vector_entry_point' builds none",
        ),
        (
            {"env_wrappers": [gym.wrappers.ClipAction], "policies": {"p0"}},
            r"env_wrappers wrap single-agent gymnasium envs, but this config is multi-agent\. Fix: wrap the envs inside",
        ),
    ],
)
def test_bad_env_wrappers_are_rejected(settings, message):
    with pytest.raises(ConfigError, match=message):
        PPOConfig().environment("CartPole-v1").update_from_dict(settings).validate()


def test_wrapped_observations_are_what_the_episodes_hold():
    runner = SingleAgentEnvRunner(config=config(gym.wrappers.TimeAwareObservation))
    (episode, *_) = runner.sample(num_timesteps=10, random_actions=True)
    observations = np.asarray(episode.get_observations())
    assert observations.shape[1] == 5 and list(observations[:3, -1]) == [0, 1, 2]  # the wrapper's time step
    runner.stop()


def test_checkpoints_name_wrapper_classes_which_the_caller_passes_back(tmp_path):
    from flywheel import Algorithm
    from flywheel.errors import CheckpointError

    algo = config(gym.wrappers.TimeAwareObservation).build_algo()
    path = algo.save_to_path(str(tmp_path / "ckpt"))
    algo.stop()
    with pytest.raises(CheckpointError, match=r"TimeAwareObservation"):
        Algorithm.from_checkpoint(path)
    restored = Algorithm.from_checkpoint(path, classes=[gym.wrappers.TimeAwareObservation])
    assert restored.config.env_wrappers == [gym.wrappers.TimeAwareObservation]
    assert restored.get_module().observation_space.shape == (5,)
    restored.stop()
