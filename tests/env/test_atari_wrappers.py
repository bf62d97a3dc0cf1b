"""wrap_atari_for_new_api_stack: RLlib's Atari wrappers, in RLlib's order, with its shapes and values."""

import gymnasium as gym
import numpy as np
import pytest

from flywheel.env.atari_wrappers import (
    EpisodicLifeEnv,
    FireResetEnv,
    FrameStack,
    GrayScaleAndResize,
    NoopResetEnv,
    NormalizedImageEnv,
    wrap_atari_for_new_api_stack,
)

ale_py = pytest.importorskip("ale_py", reason="needs the `ale` extra: pip install flywheel[ale]")
gym.register_envs(ale_py)
RAW = {"frameskip": 1, "repeat_action_probability": 0.0, "full_action_space": False}


class FakeAle:
    def __init__(self, lives):
        self.lives_left = lives

    def lives(self):
        return self.lives_left


class FakeAtari(gym.Env):
    """RGB frames whose pixels are all 10 * (steps since reset); a life is lost every `life_len` steps."""

    observation_space = gym.spaces.Box(0, 255, (6, 4, 3), np.uint8)
    action_space = gym.spaces.Discrete(3)

    def __init__(self, life_len=100, lives=3, meanings=("NOOP", "FIRE", "UP")):
        self.life_len, self.max_lives, self.meanings = life_len, lives, list(meanings)
        self.ale = FakeAle(lives)
        self.t, self.resets, self.actions = 0, 0, []

    def get_action_meanings(self):
        return self.meanings

    def frame(self):
        return np.full((6, 4, 3), 10 * self.t, np.uint8)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t, self.resets, self.ale.lives_left = 0, self.resets + 1, self.max_lives
        return self.frame(), {}

    def step(self, action):
        self.t += 1
        self.actions.append(action)
        if self.t % self.life_len == 0:
            self.ale.lives_left -= 1
        return self.frame(), 1.0, self.ale.lives_left == 0, False, {}


def chain(env):
    names = []
    while isinstance(env, gym.Wrapper):
        names.append(type(env).__name__)
        env = env.env
    return names


def test_pong_gets_64x64_float_frames_in_rllibs_wrapper_order():
    env = wrap_atari_for_new_api_stack(gym.make("ALE/Pong-v5", **RAW))
    assert chain(env)[:7] == [
        "FireResetEnv",
        "EpisodicLifeEnv",
        "NoopResetEnv",
        "MaxAndSkipObservation",
        "NormalizedImageEnv",
        "GrayScaleAndResize",
        "TimeLimit",
    ]
    assert env.observation_space == gym.spaces.Box(-1.0, 1.0, (64, 64, 1), np.float32)
    obs, _ = env.reset(seed=0)
    assert obs.shape == (64, 64, 1) and obs.dtype == np.float32
    assert -1.0 <= obs.min() < obs.max() < 1.0
    # Values are p / 128 - 1 for uint8 pixels p.
    np.testing.assert_array_equal((obs + 1.0) * 128.0, np.round((obs + 1.0) * 128.0))


def test_stacked_tiny_frames_and_no_wrapper_skipping_frames():
    env = wrap_atari_for_new_api_stack(gym.make("ALE/Pong-v5", **RAW), dim=42, frameskip=1, framestack=4)
    assert "MaxAndSkipObservation" not in chain(env) and isinstance(env, FrameStack)
    assert env.observation_space == gym.spaces.Box(-1.0, 1.0, (42, 42, 4), np.float32)
    obs, _ = env.reset(seed=0)
    assert obs.shape == (42, 42, 4) and obs.dtype == np.float32


def test_games_without_fire_are_not_fire_reset():
    env = wrap_atari_for_new_api_stack(gym.make("ALE/Freeway-v5", **RAW))
    assert isinstance(env, EpisodicLifeEnv)


def test_grayscale_resize_then_normalize_values():
    env = NormalizedImageEnv(GrayScaleAndResize(FakeAtari(), dim=2))
    assert env.observation_space == gym.spaces.Box(-1.0, 1.0, (2, 2, 1), np.float32)
    env.reset()
    for _ in range(12):
        obs, *_ = env.step(0)
    # All pixels are 120 (gray 120): 120 / 128 - 1.
    np.testing.assert_array_equal(obs, np.full((2, 2, 1), -0.0625, np.float32))
    color = GrayScaleAndResize(FakeAtari(), dim=3, grayscale=False)
    assert color.observation_space.shape == (3, 3, 3) and color.reset()[0].shape == (3, 3, 3)


def test_frame_stack_puts_the_oldest_frame_first_and_fills_with_the_reset_frame():
    env = FrameStack(GrayScaleAndResize(FakeAtari(), dim=2), k=3)
    assert env.observation_space == gym.spaces.Box(0, 255, (2, 2, 3), np.uint8)
    obs, _ = env.reset()
    assert obs[0, 0].tolist() == [0, 0, 0]
    for _ in range(4):
        obs, *_ = env.step(0)
    assert obs.dtype == np.uint8 and obs[1, 1].tolist() == [20, 30, 40]


def test_noop_reset_steps_1_to_noop_max_noops():
    fake = FakeAtari()
    env = NoopResetEnv(fake, noop_max=5)
    counts = set()
    for seed in range(20):
        obs, _ = env.reset(seed=seed)
        counts.add(fake.t)
        assert obs[0, 0, 0] == 10 * fake.t and set(fake.actions) == {0}
    assert counts <= {1, 2, 3, 4, 5} and len(counts) >= 3
    with pytest.raises(ValueError, match="NoopResetEnv needs action 0 to be NOOP"):
        NoopResetEnv(FakeAtari(meanings=("FIRE", "NOOP", "UP")))


def test_a_lost_life_ends_the_episode_and_the_next_reset_only_steps_a_noop():
    fake = FakeAtari(life_len=3, lives=2)
    env = EpisodicLifeEnv(fake)
    env.reset()
    terminated = [env.step(2)[2] for _ in range(3)]
    assert terminated == [False, False, True] and fake.resets == 1
    obs, _ = env.reset()
    assert fake.resets == 1 and fake.actions[-1] == 0 and obs[0, 0, 0] == 40
    # The game's last life: a real game over, and a real reset.
    assert [env.step(2)[2] for _ in range(2)] == [False, True]
    env.reset()
    assert fake.resets == 2 and fake.t == 0


def test_fire_reset_presses_fire_then_action_2():
    fake = FakeAtari()
    obs, _ = FireResetEnv(fake).reset()
    assert fake.actions == [1, 2] and obs[0, 0, 0] == 20
    with pytest.raises(ValueError, match="FireResetEnv needs action 1 to be FIRE"):
        FireResetEnv(FakeAtari(meanings=("NOOP", "UP", "DOWN")))
