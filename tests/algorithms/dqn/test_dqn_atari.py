"""DQN (with the Rainbow options) and discrete SAC on Atari ids: single uint8 frames in the replay
buffer, 4-frame stacks in the train batch, built when the batch is sampled."""

import gymnasium as gym
import numpy as np
import pytest

from flywheel import Columns, DQNConfig, SACConfig
from flywheel.connectors import learner
from flywheel.connectors.learner import (
    AddNextObservationsFromEpisodesToTrainBatch,
    AddObservationsFromEpisodesToBatch,
)

PONG = "ale_py:ALE/Pong-v5"
ENV_CONFIG = {"frameskip": 1, "repeat_action_probability": 0.0, "full_action_space": False}
STACKS = gym.spaces.Box(0, 255, (84, 84, 4), np.uint8)


def tiny(config):
    """Two iterations of 32 env steps, learning from the 16th, with a small CNN (84 -> 21 -> 11 -> 1)."""
    return (
        config.environment(PONG, env_config=ENV_CONFIG)
        .training(num_steps_sampled_before_learning_starts=16, replay_buffer_config={"capacity": 200})
        .rl_module(
            model_config={"conv_filters": [[8, 8, 4], [16, 4, 2], [32, 11, 1]], "head_fcnet_hiddens": [32]}
        )
        .reporting(min_sample_timesteps_per_iteration=32)
        .debugging(seed=0)
    )


def test_atari_configs_are_valid_and_their_learner_pipeline_stacks_before_the_defaults():
    for config in (DQNConfig(), SACConfig()):
        config = config.environment(PONG, env_config=ENV_CONFIG)
        config.validate()
        pieces = config.build_learner_connector(STACKS, gym.spaces.Discrete(6)).connectors
        names = [type(piece).__name__ for piece in pieces]
        stacking = next(i for i, piece in enumerate(pieces) if isinstance(piece, learner.FrameStacking))
        assert stacking < names.index(AddObservationsFromEpisodesToBatch.__name__)
        assert names.index(AddNextObservationsFromEpisodesToTrainBatch.__name__) > stacking
        assert pieces[stacking].required_episode_lookback == 3


@pytest.fixture(scope="module")
def rainbow():
    config = tiny(DQNConfig()).training(
        n_step=3,
        double_q=True,
        dueling=True,
        num_atoms=51,
        v_min=-10.0,
        v_max=10.0,
        replay_buffer_config={"type": "PrioritizedEpisodeReplayBuffer", "capacity": 200, "alpha": 0.5},
    )
    algo = config.build_algo()
    results = [algo.train() for _ in range(2)]
    yield algo, results
    algo.stop()


def test_rainbow_dqn_trains_two_iterations_on_pong(rainbow):
    algo, results = rainbow
    assert algo.get_module().observation_space == STACKS
    assert [r["num_env_steps_sampled_lifetime"] for r in results] == [32, 64]
    stats = results[-1]["learners"]["default_policy"]
    # One update of 32 transitions per training step (4 env steps) from the 16th sampled step on: 13.
    assert results[-1]["learners"]["__all_modules__"]["num_env_steps_trained_lifetime"] == 13 * 32
    assert np.isfinite(stats["qf_loss"]) and stats["qf_loss"] > 0


def test_the_buffer_holds_single_uint8_frames_and_samples_their_stacks(rainbow):
    algo, _ = rainbow
    buffer = algo.replay_buffer
    assert len(buffer) == 64
    sampled = buffer.sample(32, n_step=3, lookback=algo._lookback, beta=0.4)
    (block,) = sampled.blocks
    assert (
        block.columns[Columns.OBS].shape == (32, 84, 84, 1) and block.columns[Columns.OBS].dtype == np.uint8
    )
    assert block.lookback[Columns.NEXT_OBS].shape == (32, 3, 84, 84, 1)
    trainer = algo.learner_group._learner
    batch = trainer.learner_connector(rl_module=trainer.module, batch={}, episodes=sampled)["default_policy"]
    for column in (Columns.OBS, Columns.NEXT_OBS):
        assert tuple(batch[column].shape) == (32, 84, 84, 4) and str(batch[column].dtype) == "torch.uint8"
    # The newest frame of each stack is the replayed observation itself.
    np.testing.assert_array_equal(batch[Columns.OBS][..., 3:].numpy(), block.columns[Columns.OBS])
    np.testing.assert_array_equal(batch[Columns.NEXT_OBS][..., 3:].numpy(), block.columns[Columns.NEXT_OBS])
    np.testing.assert_array_equal(
        batch[Columns.OBS][..., :3].numpy(), np.moveaxis(block.lookback[Columns.OBS][..., 0], 1, -1)
    )


def test_discrete_sac_trains_two_iterations_on_pong():
    algo = tiny(SACConfig()).training(train_batch_size_per_learner=32).build_algo()
    results = [algo.train() for _ in range(2)]
    assert algo.get_module().observation_space == STACKS
    assert results[-1]["num_env_steps_sampled_lifetime"] == 64
    stats = results[-1]["learners"]["default_policy"]
    assert np.isfinite(stats["qf_loss"]) and np.isfinite(stats["policy_loss"])
    algo.stop()
