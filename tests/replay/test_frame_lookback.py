"""Replayed frames are stacked when a batch is sampled: the buffer stores each frame once, reads the
3 frames before `o_t` and `o_{t+n}` (`lookback`), and the learner's `FrameStacking` stacks them
exactly as the env-to-module `FrameStacking` stacked them for the module while acting."""

import tracemalloc

import gymnasium as gym
import numpy as np
import pytest

from flywheel import Columns
from flywheel.connectors import env_to_module, learner
from flywheel.episodes import SingleAgentEpisode
from flywheel.errors import ConfigError, ConnectorError
from flywheel.replay import EpisodeReplayBuffer, PrioritizedEpisodeReplayBuffer

FRAME = gym.spaces.Box(0, 255, (2, 3, 1), np.uint8)
ACTIONS = gym.spaces.Discrete(6)


def frame(value):
    return np.full(FRAME.shape, value, np.uint8)


def recorded_chunks(num_steps, cut_after, *, base, terminated=False):
    """An episode recorded as a runner records it (frame at t: every pixel base + t), cut with the
    3 frames of lookback `FrameStacking` asks runners for after each step in `cut_after`."""
    episode = SingleAgentEpisode(observation_space=FRAME, action_space=ACTIONS)
    episode.add_env_reset(frame(base))
    chunks = []
    for t in range(1, num_steps + 1):
        episode.add_env_step(frame(base + t), t % 6, 1.0, terminated=terminated and t == num_steps)
        if t in cut_after:
            successor = episode.cut(len_lookback_buffer=3)
            chunks.append(episode.to_numpy())
            episode = successor
    return [*chunks, episode.to_numpy()]


def acting_stack(base, t):
    """What the env-to-module `FrameStacking` gave the module at step t of the episode `base` (the
    frames up to t, the first one repeated before the episode start)."""
    episode = SingleAgentEpisode(observation_space=FRAME, action_space=ACTIONS)
    episode.add_env_reset(frame(base))
    for i in range(1, t + 1):
        episode.add_env_step(frame(base + i), 0, 0.0)
    batch = env_to_module.FrameStacking(FRAME, ACTIONS, num_frames=4)(
        rl_module=None, batch={}, episodes=[episode]
    )
    return batch[Columns.OBS][0]


def stacked_batch(buffer, **kwargs):
    sampled = buffer.sample(300, n_step=3, lookback=3, **kwargs)
    batch = learner.FrameStacking(FRAME, ACTIONS, num_frames=4)(rl_module=None, batch={}, episodes=sampled)
    return sampled, batch["default_policy"]


def test_stacks_equal_the_stacks_the_module_acted_on_across_chunks_and_episode_starts():
    buffer = EpisodeReplayBuffer(100, seed=0)
    buffer.add(recorded_chunks(12, {2, 7}, base=100, terminated=True))  # chunks of 2, 5 and 5 steps
    buffer.add(recorded_chunks(5, {1}, base=200))  # ongoing
    sampled, batch = stacked_batch(buffer)
    (block,) = sampled.blocks
    assert batch[Columns.OBS].shape == batch[Columns.NEXT_OBS].shape == (300, 2, 3, 4)
    assert batch[Columns.OBS].dtype == batch[Columns.NEXT_OBS].dtype == np.uint8
    bases = block.columns[Columns.OBS][:, 0, 0, 0] - block.t_started
    seen = set()
    for i, (base, t, n) in enumerate(zip(bases, block.t_started, block.columns[Columns.N_STEP], strict=True)):
        np.testing.assert_array_equal(batch[Columns.OBS][i], acting_stack(base, t))
        np.testing.assert_array_equal(batch[Columns.NEXT_OBS][i], acting_stack(base, t + n))
        seen.add((int(base), int(t)))
    assert seen == {(100, t) for t in range(12)} | {(200, t) for t in range(5)}
    # Each learner's share (num_learners=2) keeps its rows' lookback.
    first, second = (part.blocks[0] for part in sampled.split(2))
    assert first.lookback[Columns.NEXT_OBS].shape == (150, 3, 2, 3, 1)
    np.testing.assert_array_equal(second.lookback[Columns.OBS], block.lookback[Columns.OBS][150:])
    # Spelled out: t=1 repeats the first frame twice; t=9 (n=3) bootstraps from the last frame, 12.
    row = np.flatnonzero((bases == 100) & (block.t_started == 1))[0]
    assert batch[Columns.OBS][row, 0, 0].tolist() == [100, 100, 100, 101]
    row = np.flatnonzero((bases == 100) & (block.t_started == 9))[0]
    assert batch[Columns.NEXT_OBS][row, 0, 0].tolist() == [109, 110, 111, 112]


def test_an_evicted_chunk_leaves_the_oldest_stored_frame_repeated():
    buffer = EpisodeReplayBuffer(8, seed=0)
    chunks = recorded_chunks(9, {4}, base=0)
    buffer.add(chunks[0])  # t 0..3
    buffer.add(chunks[1])  # t 4..8: the first chunk goes
    sampled, batch = stacked_batch(buffer)
    (block,) = sampled.blocks
    first = np.flatnonzero(block.t_started == 4)[0]
    assert batch[Columns.OBS][first, 0, 0].tolist() == [4, 4, 4, 4]
    assert set(block.t_started.tolist()) == {4, 5, 6, 7, 8}


def test_prioritized_replay_and_restored_buffers_read_the_same_frames():
    buffer = PrioritizedEpisodeReplayBuffer(100, seed=3)
    buffer.add(recorded_chunks(10, {3, 6}, base=50, terminated=True))
    restored = PrioritizedEpisodeReplayBuffer(100)
    restored.set_state(buffer.get_state())
    _, batch = stacked_batch(buffer, beta=0.4)
    _, again = stacked_batch(restored, beta=0.4)
    np.testing.assert_array_equal(batch[Columns.OBS], again[Columns.OBS])
    np.testing.assert_array_equal(batch[Columns.NEXT_OBS], again[Columns.NEXT_OBS])
    assert batch[Columns.OBS][:, 0, 0, :].min() == 50 and batch[Columns.NEXT_OBS][:, 0, 0, -1].max() == 60


def test_episode_objects_a_custom_piece_changed_are_stacked_with_the_buffer_lookback():
    buffer = EpisodeReplayBuffer(100, seed=0)
    buffer.add(recorded_chunks(6, set(), base=10, terminated=True))
    sampled = buffer.sample(4, n_step=1, lookback=3)
    t = sampled.blocks[0].t_started
    for episode in sampled:  # a custom piece asks for the episode objects (and keeps them)
        assert len(episode) == 1
    batch = learner.FrameStacking(FRAME, ACTIONS, num_frames=4)(rl_module=None, batch={}, episodes=sampled)
    for i, start in enumerate(t):
        np.testing.assert_array_equal(batch["default_policy"][Columns.OBS][i], acting_stack(10, start))
        np.testing.assert_array_equal(
            batch["default_policy"][Columns.NEXT_OBS][i], acting_stack(10, start + 1)
        )


def test_too_little_lookback_is_an_error_saying_what_to_sample():
    buffer = EpisodeReplayBuffer(100, seed=0)
    buffer.add(recorded_chunks(6, set(), base=10))
    with pytest.raises(
        ConnectorError, match="needs the 3 observations before each replayed 'obs'.*lookback=3"
    ):
        learner.FrameStacking(FRAME, ACTIONS, num_frames=4)(
            rl_module=None, batch={}, episodes=buffer.sample(4, lookback=1)
        )
    with pytest.raises(ConfigError, match="lookback to be an int >= 0"):
        buffer.sample(4, lookback=-1)


def test_a_stored_atari_transition_costs_one_frame_plus_its_small_columns():
    """84x84 uint8 frames: 7,056 bytes each. Measured: 7,131 bytes per stored transition, 7,100 per row
    (frame, int64 action, float32 reward, 4 int64 row links) plus the episode table's final frames (16
    slots of 7,056 bytes over 4,000 rows). Stacked copies would take 28,224 bytes per observation."""
    frames = gym.spaces.Box(0, 255, (84, 84, 1), np.uint8)
    n, episode_len = 4_000, 1_000
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    buffer = EpisodeReplayBuffer(n, seed=0)
    for _ in range(n // episode_len):
        episode = SingleAgentEpisode(observation_space=frames, action_space=ACTIONS)
        episode.add_env_reset(np.zeros(frames.shape, np.uint8))
        for t in range(episode_len):
            episode.add_env_step(
                np.full(frames.shape, t % 256, np.uint8), 0, 0.0, terminated=t == episode_len - 1
            )
        buffer.add(episode.to_numpy())
        del episode
    used = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    assert len(buffer) == n
    assert 84 * 84 + 44 <= used / n <= 84 * 84 + 80, used / n
    batch = buffer.sample(32, lookback=3).blocks[0]
    assert batch.lookback[Columns.OBS].dtype == np.uint8
