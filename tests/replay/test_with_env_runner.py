"""Replay on what a real SingleAgentEnvRunner hands out: every sampled window matches the recorded episode."""

import numpy as np
import pytest

from flywheel import Columns, PPOConfig, SingleAgentEnvRunner
from flywheel.replay import EpisodeReplayBuffer


@pytest.fixture(scope="module")
def chunks_and_reference():
    config = PPOConfig().environment("CartPole-v1").env_runners(num_envs_per_env_runner=3).debugging(seed=0)
    runner = SingleAgentEnvRunner(config=config)
    chunks = [runner.sample(num_timesteps=30, random_actions=True) for _ in range(20)]
    runner.stop()
    reference = {}  # id_ -> [observations, rewards, done]
    for episodes in chunks:
        for chunk in episodes:
            obs, rewards = list(chunk.get_observations()), list(chunk.get_rewards())
            if chunk.id_ in reference:
                stored = reference[chunk.id_]
                assert len(stored[1]) == chunk.t_started
                stored[0] += obs[1:]
                stored[1] += rewards
                stored[2] = chunk.is_terminated
            else:
                reference[chunk.id_] = [obs, rewards, chunk.is_terminated, chunk.t_started]
    return chunks, reference


@pytest.mark.parametrize("capacity", [10_000, 40])
def test_sampled_windows_match_the_recorded_episodes(chunks_and_reference, capacity):
    chunks, reference = chunks_and_reference
    buffer = EpisodeReplayBuffer(capacity, seed=0)
    for episodes in chunks:
        buffer.add(episodes)
    lengths = [len(e) for episodes in chunks for e in episodes]
    assert buffer.get_added_timesteps() == sum(lengths) > 40
    if capacity > sum(lengths):
        assert len(buffer) == sum(lengths)
    else:  # whole chunks were evicted until the newest fitted
        assert capacity - max(lengths) < len(buffer) <= capacity
    checked = 0
    for sampled in buffer.sample(300, n_step=(1, 4), gamma=0.9):
        obs, rewards, terminated, t_started = reference[sampled.id_]
        assert t_started == 0
        t, n = sampled.t_started, int(sampled.get_extra_model_outputs(Columns.N_STEP)[0])
        np.testing.assert_array_equal(sampled.get_observations(0), obs[t])
        np.testing.assert_array_equal(sampled.get_observations(1), obs[t + n])
        np.testing.assert_allclose(
            sampled.get_rewards(0), sum(rewards[t + j] * 0.9**j for j in range(n)), rtol=1e-6
        )
        assert sampled.is_terminated == (terminated and t + n == len(rewards))
        checked += 1
    assert checked == 300
