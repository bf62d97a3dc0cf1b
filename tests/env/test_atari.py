"""Atari ids: DeepMind preprocessing in the env, uint8 frames in episodes, 4-frame stacks for the module."""

import gymnasium as gym
import numpy as np
import pytest

from flywheel import Columns, PPOConfig
from flywheel.connectors import common, learner
from flywheel.connectors.env_to_module import FrameStacking
from flywheel.env import EnvContext, is_atari_env, make_env_creator, register_env

PONG = "ale_py:ALE/Pong-v5"
RLLIB_ENV_CONFIG = {"frameskip": 1, "repeat_action_probability": 0.0, "full_action_space": False}


def test_atari_ids_get_84x84_grayscale_uint8_frames():
    assert is_atari_env(PONG) and is_atari_env("ALE/Breakout-v5")
    assert not is_atari_env("CartPole-v1") and not is_atari_env("MinAtar/Breakout-v1")
    env = make_env_creator(PONG, RLLIB_ENV_CONFIG)(EnvContext(RLLIB_ENV_CONFIG))
    assert isinstance(env, gym.wrappers.AtariPreprocessing)
    assert env.observation_space == gym.spaces.Box(0, 255, (84, 84, 1), np.uint8)
    obs, _ = env.reset(seed=0)
    assert obs.shape == (84, 84, 1) and obs.dtype == np.uint8
    # frameskip=1 (the default here) lets the wrapper skip 4 frames, max-pooling the last two.
    assert env.unwrapped.spec.kwargs["frameskip"] == 1 and env.frame_skip == 4
    assert make_env_creator(PONG)(EnvContext()).frame_skip == 4
    # With ALE skipping frames itself, the wrapper skips none.
    assert make_env_creator(PONG)(EnvContext({"frameskip": 4})).frame_skip == 1


def test_a_registered_atari_creator_is_not_preprocessed():
    register_env("raw_pong", lambda cfg: gym.make("ALE/Pong-v5", **cfg))
    assert not is_atari_env("raw_pong")
    assert make_env_creator("raw_pong")(EnvContext()).observation_space.shape == (210, 160, 3)


@pytest.fixture(scope="module")
def pong_algo():
    config = (
        PPOConfig()
        .environment(PONG, env_config=RLLIB_ENV_CONFIG)
        .env_runners(num_envs_per_env_runner=2)
        .training(train_batch_size_per_learner=64, minibatch_size=32, num_epochs=1)
        .debugging(seed=0)
    )
    algo = config.build_algo()
    yield algo
    algo.stop()


def test_ppo_on_atari_stacks_4_uint8_frames_in_both_pipelines(pong_algo):
    module = pong_algo.get_module()
    assert module.observation_space == gym.spaces.Box(0, 255, (84, 84, 4), np.uint8)
    assert type(module.encoder.actor_encoder).__name__ == "CNNEncoder" and module.encoder.output_dim == 256
    stacking = [p for p in pong_algo.env_runner.env_to_module.connectors if isinstance(p, FrameStacking)]
    assert [(type(p), p.num_frames) for p in stacking] == [(FrameStacking, 4)]
    learner_pieces = pong_algo.learner_group.foreach_learner(
        lambda learner: learner.learner_connector.connectors
    )[0]
    assert [(type(p), p.num_frames) for p in learner_pieces if isinstance(p, common.FrameStacking)] == [
        (learner.FrameStacking, 4)
    ]
    result = pong_algo.train()
    assert np.isfinite(result["learners"]["default_policy"]["total_loss"])
    assert result["num_env_steps_sampled_lifetime"] == 64


def test_episodes_hold_single_uint8_frames_and_chunks_carry_3_frames_of_lookback(pong_algo):
    runner = pong_algo.env_runner
    runner.sample(num_timesteps=16)
    chunks = runner.sample(num_timesteps=16)  # continue the episodes of the previous call
    chunk = next(c for c in chunks if c.t_started > 0)
    frames = chunk.get_observations(slice(-4, 1), neg_index_as_lookback=True)
    assert frames.shape == (4, 84, 84, 1) and frames.dtype == np.uint8
    batch = runner.env_to_module(
        rl_module=runner.module, batch={}, episodes=[chunk.cut(len_lookback_buffer=3)]
    )
    assert tuple(batch[Columns.OBS].shape) == (1, 84, 84, 4)


def test_a_frame_stacking_piece_of_the_user_replaces_the_automatic_one():
    config = (
        PPOConfig()
        .environment(PONG)
        .env_runners(env_to_module_connector=lambda env, spaces, device: FrameStacking(num_frames=2))
    )
    env = make_env_creator(PONG)(EnvContext())
    pipeline = config.build_env_to_module_connector(env, spaces=(env.observation_space, env.action_space))
    assert [p.num_frames for p in pipeline.connectors if isinstance(p, FrameStacking)] == [2]
    assert pipeline.observation_space.shape == (84, 84, 2)
