"""The EnvPool backend at episode boundaries: what a runner records from an EnvPool batch is what
gymnasium's CartPole does with the same actions.

EnvPool's CartPole draws its reset states from its own RNG, so the two backends cannot start from
the same states, even with the same seeds. The tests compare what is fixed given the states and
actions instead: every recorded transition (observation, action) -> (next observation, reward,
terminated) is stepped again in gymnasium's `CartPoleEnv` set to that observation, and must come out
the same. A step lost or duplicated at a reset (EnvPool's NEXT_STEP autoreset ignores the action of
the step that resets) would pair an observation with the wrong action, or a final observation with a
reset one, and fail this. Lengths are checked against EnvPool's own step counter (`elapsed_step`),
truncation against the time limit, returns against the sums of rewards, and the metrics of both
backends against their episodes.
"""

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.envs.classic_control import CartPoleEnv

from flywheel import PPOConfig
from flywheel.env.envpool_vector import EnvPoolVectorEnv

NUM_ENVS = 4
LIMIT = 20  # CartPole's random-policy episodes last ~22 steps: some end terminated, some truncated


def _config(mode, **env_runners):
    env_config = {"max_episode_steps": LIMIT}
    return (
        PPOConfig()
        .environment("CartPole-v1", env_config=env_config)
        .env_runners(num_envs_per_env_runner=NUM_ENVS, gym_env_vectorize_mode=mode, **env_runners)
        .debugging(seed=3)
    )


def _replay(chunk, gym_env):
    """Steps every recorded transition of `chunk` again in gymnasium's CartPole; returns the number of
    transitions that ended an episode by termination."""
    obs, actions, rewards = chunk.get_observations(), chunk.get_actions(), chunk.get_rewards()
    ended = 0
    for t in range(len(chunk)):
        gym_env.state, gym_env.steps_beyond_terminated = obs[t].astype(np.float64), None
        next_obs, reward, terminated, _, _ = gym_env.step(int(actions[t]))
        np.testing.assert_allclose(obs[t + 1], next_obs, rtol=0, atol=1e-5)
        assert reward == rewards[t]
        last = t == len(chunk) - 1
        assert terminated == (last and chunk.is_terminated)
        ended += terminated
    return ended


def test_every_recorded_transition_replays_in_gymnasium_cartpole(make_runner):
    runner = make_runner(_config("envpool", rollout_fragment_length=25))
    chunks = [chunk for _ in range(4) for chunk in runner.sample(num_timesteps=100)]
    gym_env = CartPoleEnv()
    gym_env.reset(seed=0)
    terminated = sum(_replay(chunk, gym_env) for chunk in chunks)
    truncated = sum(chunk.is_truncated for chunk in chunks)
    assert terminated >= 5 and truncated >= 5  # both kinds of boundary were crossed
    for chunk in chunks:
        # A chunk's length is EnvPool's own count of the steps its sub-env took in the episode.
        assert chunk.get_infos()[-1]["elapsed_step"] == chunk.t_started + len(chunk)
        assert chunk.is_truncated == (chunk.t_started + len(chunk) == LIMIT and not chunk.is_terminated)
        assert chunk.get_return() == len(chunk)  # CartPole: reward 1 per step
    assert sum(map(len, chunks)) == runner.get_metrics()["num_env_steps_sampled_lifetime"] >= 400


@pytest.mark.parametrize("mode", ["sync", "envpool"])
def test_episodes_and_metrics_agree_as_on_the_sync_backend(make_runner, mode):
    runner = make_runner(_config(mode))
    episodes = runner.sample(num_episodes=24)
    lengths = [len(e) for e in episodes]
    metrics = runner.get_metrics()
    assert len(episodes) == metrics["num_episodes"] == 24
    assert all(e.is_done and e.t_started == 0 for e in episodes)
    assert all(1 <= n <= LIMIT for n in lengths)
    assert [e.get_return() for e in episodes] == [float(n) for n in lengths]
    assert metrics["episode_len_mean"] == pytest.approx(np.mean(lengths))
    assert metrics["episode_return_mean"] == pytest.approx(np.mean(lengths))
    assert metrics["num_env_steps_sampled"] == sum(lengths)


def test_a_balanced_pole_is_truncated_at_500_and_its_sub_env_resets_in_the_next_step():
    env = EnvPoolVectorEnv("CartPole-v1", num_envs=2)
    obs, _ = env.reset(seed=0)
    for step in range(1, 501):
        actions = (obs[:, 2] + 0.5 * obs[:, 3] > 0).astype(np.int64)  # push the cart under the pole
        obs, rewards, terminated, truncated, infos = env.step(actions)
        assert not terminated.any()
        assert truncated.all() == (step == 500)
    assert infos["elapsed_step"].tolist() == [500, 500]
    assert rewards.dtype == np.float64
    obs, rewards, terminated, truncated, infos = env.step(np.zeros(2, np.int64))
    # NEXT_STEP: this step only reset the sub-envs (the action is ignored).
    assert (rewards.tolist(), terminated.any(), truncated.any()) == ([0.0, 0.0], False, False)
    assert infos["elapsed_step"].tolist() == [0, 0]
    assert np.abs(obs).max() <= 0.05  # a reset state: every component in [-0.05, 0.05]
    assert env.metadata["autoreset_mode"] == gym.vector.AutoresetMode.NEXT_STEP
    env.close()


def test_atari_through_envpools_preprocessing_gives_stacked_uint8_frames(make_runner):
    """EnvPool's Atari ids skip 4 frames, resize to 84x84 grayscale and stack the last 4 frames
    itself: the runner adds no frame-stacking piece and the CNN reads (84, 84, 4) uint8 frames."""
    config = (
        PPOConfig()
        .environment("Pong-v5")
        .env_runners(num_envs_per_env_runner=2, gym_env_vectorize_mode="envpool")
        .debugging(seed=0)
    )
    runner = make_runner(config)
    assert "FrameStacking" not in [type(piece).__name__ for piece in runner.env_to_module]
    (chunk, *_) = runner.sample(num_timesteps=40)
    obs = chunk.get_observations()
    assert (obs.shape, obs.dtype) == ((21, 84, 84, 4), np.uint8)
    # Channels are the last 4 frames, oldest first: each step shifts them by one.
    np.testing.assert_array_equal(obs[1:, ..., :3], obs[:-1, ..., 1:])
    assert obs[-1, ..., -1].std() > 0  # a real frame, not a blank one
