"""render_env: the first sub-env of each runner records its episodes as videos."""

import numpy as np
import pytest

from flywheel import PPOConfig
from flywheel.env import make_vector_env
from flywheel.env.recording import EPISODE_VIDEOS
from flywheel.errors import EnvError
from flywheel.testing import CountingEnv


class PaintedCountingEnv(CountingEnv):
    """CountingEnv whose frame after step t is a 4x6 RGB picture filled with t."""

    render_mode = "rgb_array"

    def render(self):
        return np.full((4, 6, 3), self.t, np.uint8)


class BlindCountingEnv(CountingEnv):
    render_mode = None

    def render(self):
        return None


def test_sub_env_0_records_each_episode_frame_by_frame_the_others_do_not():
    env = make_vector_env(PaintedCountingEnv, {"episode_len": 3}, num_envs=2, render_env=True)
    env.reset(seed=0)
    for _ in range(3):
        env.step(np.zeros(2, np.int64))
    first, second = env.call("flywheel_pop_episode_frames")
    assert second is None
    # reset frame + one per step, each 4x6 enlarged 21-fold to at least 84 pixels a side.
    assert first.shape == (4, 84, 126, 3) and first.dtype == np.uint8
    assert [int(frame.max()) for frame in first] == [0, 1, 2, 3] == [int(frame.min()) for frame in first]
    assert env.call("flywheel_pop_episode_frames") == (None, None)  # taken
    env.close()


def test_evaluation_with_render_env_logs_one_video_per_runner():
    config = (
        PPOConfig()
        .environment(PaintedCountingEnv, env_config={"episode_len": 5})
        .training(train_batch_size_per_learner=64, minibatch_size=32, num_epochs=1)
        .evaluation(evaluation_interval=1, evaluation_duration=3, evaluation_config={"render_env": True})
    )
    algo = config.build_algo()
    try:
        result = algo.train()
    finally:
        algo.stop()
    assert EPISODE_VIDEOS not in result["env_runners"]  # training runners do not record
    (video,) = result["evaluation"]["env_runners"][EPISODE_VIDEOS]
    assert video.shape == (1, 6, 84, 126, 3)


def test_an_env_that_does_not_render_rgb_frames_is_explained():
    env = make_vector_env(BlindCountingEnv, num_envs=1, render_env=True)
    with pytest.raises(
        EnvError,
        match=r"render_env=True records videos from env.render\(\), which returned "
        r"NoneType  \(render_mode=None\); expected an RGB frame \[H, W, 3\]\. Fix: create the env "
        r"with render_mode='rgb_array'",
    ):
        env.reset(seed=0)


def test_render_env_is_for_single_agent_configs():
    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .environment(render_env=True)
        .multi_agent(policies={"p0"}, policy_mapping_fn=lambda agent_id, episode, **kw: "p0")
    )
    with pytest.raises(ValueError, match="render_env=True records videos of single-agent envs only"):
        config.validate()
