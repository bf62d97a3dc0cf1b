"""StatelessCartPole: CartPole-v1 minus the velocities, same dynamics, rewards and time limit."""

import gymnasium as gym
import numpy as np
import pytest

from flywheel.testing.stateless_cartpole import StatelessCartPole


def test_observes_position_and_angle_of_the_full_cartpole():
    env, full = StatelessCartPole(), gym.make("CartPole-v1")
    obs, _ = env.reset(seed=3)
    full_obs, _ = full.reset(seed=3)
    np.testing.assert_array_equal(obs, full_obs[[0, 2]])
    for action in (0, 1, 1, 0, 1):
        obs, reward, terminated, truncated, _ = env.step(action)
        full_obs, full_reward, *_ = full.step(action)
        np.testing.assert_array_equal(obs, full_obs[[0, 2]])
        assert (reward, terminated, truncated) == (full_reward, False, False)
    assert obs.dtype == np.float32 and obs.shape == (2,)


def test_space_keeps_cartpoles_bounds_for_the_kept_entries():
    space = StatelessCartPole({}).observation_space
    assert space == gym.spaces.Box(
        np.array([-4.8, -0.41887903], np.float32), np.array([4.8, 0.41887903], np.float32), dtype=np.float32
    )
    assert StatelessCartPole().action_space == gym.spaces.Discrete(2)


def test_truncates_after_500_steps():
    env = StatelessCartPole()
    env.reset(seed=0)
    env.unwrapped.theta_threshold_radians = np.inf  # never falls
    env.unwrapped.x_threshold = np.inf
    steps = 0
    truncated = terminated = False
    while not (terminated or truncated):
        _, _, terminated, truncated, _ = env.step(steps % 2)
        steps += 1
    assert (steps, terminated, truncated) == (500, False, True)


@pytest.mark.parametrize("mode", ["rgb_array", None])
def test_passes_render_mode_from_config(mode):
    assert StatelessCartPole({"render_mode": mode}).render_mode == mode
