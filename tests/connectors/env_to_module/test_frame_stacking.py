"""FrameStacking: last num_frames observations along the last axis, first frame repeated at the start."""

import gymnasium as gym
import numpy as np
import pytest

from flywheel.columns import Columns
from flywheel.connectors import ConnectorPipelineV2, common
from flywheel.connectors.env_to_module import FrameStacking, default_env_to_module_connectors
from flywheel.errors import ConnectorError
from flywheel.typing import DEFAULT_MODULE_ID

from ..conftest import StubModule, episode_from

SPACE = gym.spaces.Box(-1.0, 100.0, (2,), np.float32)


def obs(t):
    """Observation at timestep t: [t, 10 t]."""
    return np.array([t, 10 * t], np.float32)


def counting_episode(n_steps, first=0, **kwargs):
    return episode_from([obs(t) for t in range(first, first + n_steps + 1)], actions=[0] * n_steps, **kwargs)


def call(piece, episodes):
    return piece(rl_module=None, batch={}, episodes=episodes)


def test_output_space_repeats_the_bounds_along_the_last_axis():
    assert FrameStacking(SPACE, num_frames=3).observation_space == gym.spaces.Box(
        -1.0, 100.0, (6,), np.float32
    )
    image = gym.spaces.Box(0.0, 255.0, (2, 2, 1), np.float32)
    assert FrameStacking(image, num_frames=4).observation_space.shape == (2, 2, 4)


def test_stacks_the_newest_frames_and_repeats_the_first_at_the_start():
    episodes = [counting_episode(1), counting_episode(3)]
    batch = call(FrameStacking(SPACE, num_frames=3), episodes)
    assert batch[Columns.OBS].shape == (2, 6)
    np.testing.assert_array_equal(batch[Columns.OBS][0], [0, 0, 0, 0, 1, 10])
    np.testing.assert_array_equal(batch[Columns.OBS][1], [1, 10, 2, 20, 3, 30])
    # The episodes keep single frames.
    np.testing.assert_array_equal(episodes[1].get_observations(-1), obs(3))


def test_frames_are_frame_major_along_the_channel_axis():
    space = gym.spaces.Box(0.0, 9.0, (1, 1, 2), np.float32)
    episode = episode_from([np.array([[[1, 2]]], np.float32), np.array([[[3, 4]]], np.float32)], actions=[0])
    batch = call(FrameStacking(space, num_frames=2), [episode])
    np.testing.assert_array_equal(batch[Columns.OBS], [[[[1, 2, 3, 4]]]])


def test_continued_chunk_reads_its_lookback():
    chunk = counting_episode(5).cut(len_lookback_buffer=2)
    chunk.add_env_step(obs(6), 0, 1.0)
    batch = call(FrameStacking(SPACE, num_frames=3), [chunk])
    np.testing.assert_array_equal(batch[Columns.OBS][0], [4, 40, 5, 50, 6, 60])
    # Without enough lookback, the oldest stored frame is repeated.
    short = counting_episode(5).cut(len_lookback_buffer=0)
    np.testing.assert_array_equal(
        call(FrameStacking(SPACE, num_frames=3), [short])[Columns.OBS][0], [5, 50] * 3
    )


def test_default_pipeline_keeps_the_stacked_obs():
    pipeline = ConnectorPipelineV2(
        SPACE, connectors=[FrameStacking(num_frames=2), *default_env_to_module_connectors()]
    )
    assert pipeline.observation_space.shape == (4,)
    batch = pipeline(rl_module=StubModule(), batch={}, episodes=[counting_episode(2)])
    assert batch[Columns.OBS].tolist() == [[1.0, 10.0, 2.0, 20.0]]


def test_learner_mode_gives_one_row_per_step():
    first = counting_episode(3).to_numpy()
    chunk = counting_episode(5).cut(len_lookback_buffer=1)
    chunk.add_env_step(obs(6), 0, 1.0)
    chunk.add_env_step(obs(7), 0, 1.0)
    other = counting_episode(1, first=20, module_id="p1")
    batch = call(
        common.FrameStacking(SPACE, num_frames=2, as_learner_connector=True), [first, chunk.to_numpy(), other]
    )
    assert list(batch) == [DEFAULT_MODULE_ID, "p1"]
    rows = batch[DEFAULT_MODULE_ID][Columns.OBS]
    assert rows.shape == (5, 4)
    np.testing.assert_array_equal(
        rows,
        [
            [0, 0, 0, 0],  # episode 1, obs 0 (first frame repeated)
            [0, 0, 1, 10],
            [1, 10, 2, 20],
            [4, 40, 5, 50],  # chunk, obs 0 = t 5, previous frame from the lookback
            [5, 50, 6, 60],
        ],
    )
    np.testing.assert_array_equal(batch["p1"][Columns.OBS], [[20, 200, 20, 200]])


def test_invalid_arguments():
    with pytest.raises(ConnectorError, match=r"FrameStacking needs num_frames >= 1, got 0\."):
        FrameStacking(num_frames=0)
    with pytest.raises(
        ConnectorError, match=r"use flywheel.connectors.learner.FrameStacking\(num_frames=...\)"
    ):
        FrameStacking(num_frames=4, as_learner_connector=True)
    with pytest.raises(
        ConnectorError,
        match=r"FrameStacking stacks Box observations with at least one dimension, got Discrete\(2\)",
    ):
        FrameStacking(gym.spaces.Discrete(2))


def test_the_piece_asks_runners_for_num_frames_minus_1_steps_of_lookback():
    assert FrameStacking(num_frames=4).required_episode_lookback == 3
    pipeline = ConnectorPipelineV2(
        SPACE, connectors=[FrameStacking(num_frames=3), *default_env_to_module_connectors()]
    )
    assert pipeline.required_episode_lookback == 2


def test_runners_cut_chunks_with_the_lookback_the_pipeline_needs():
    from flywheel import PPOConfig, SingleAgentEnvRunner
    from flywheel.testing import CountingEnv

    config = (
        PPOConfig()
        .environment(CountingEnv, env_config={"episode_len": 100})
        .env_runners(env_to_module_connector=lambda env, spaces, device: FrameStacking(num_frames=4))
    )
    assert config.episode_lookback_horizon == 1
    runner = SingleAgentEnvRunner(config=config)
    runner.sample(num_timesteps=5)
    (chunk,) = runner.sample(num_timesteps=2)
    assert chunk.t_started == 5
    assert chunk.get_observations(slice(-3, 0), neg_index_as_lookback=True).ravel().tolist() == [
        2.0,
        3.0,
        4.0,
    ]
    runner.stop()


def test_learner_mode_after_add_one_ts_adds_each_chunks_bootstrap_row():
    from flywheel.connectors.learner import AddOneTsToEpisodesAndTruncate

    chunk = counting_episode(2).to_numpy()
    pipeline = ConnectorPipelineV2(
        SPACE,
        connectors=[
            AddOneTsToEpisodesAndTruncate(),
            common.FrameStacking(num_frames=2, as_learner_connector=True),
        ],
    )
    batch = pipeline(rl_module=None, batch={}, episodes=[chunk], shared_data={})
    np.testing.assert_array_equal(
        batch[DEFAULT_MODULE_ID][Columns.OBS], [[0, 0, 0, 0], [0, 0, 1, 10], [1, 10, 2, 20]]
    )


def test_ppo_trains_with_the_piece_on_both_sides():
    """PPO's learner pipeline adds a bootstrap row per chunk: the learner-side piece gives it a row too
    (it used to give one row per step only, and the batch's columns disagreed)."""
    from flywheel import PPOConfig

    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(env_to_module_connector=lambda env, spaces, device: FrameStacking(num_frames=3))
        .training(
            learner_connector=lambda obs, act: common.FrameStacking(as_learner_connector=True, num_frames=3),
            train_batch_size=64,
            minibatch_size=32,
        )
    )
    algo = config.build_algo()
    assert algo.get_module().observation_space.shape == (12,)
    result = algo.train()["learners"][DEFAULT_MODULE_ID]
    algo.stop()
    assert result["num_module_steps_trained"] >= 64 and np.isfinite(result["total_loss"])
