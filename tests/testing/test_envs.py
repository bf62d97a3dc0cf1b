import re

import gymnasium as gym
import numpy as np
import pytest

from flywheel.env import EnvContext
from flywheel.errors import EnvError
from flywheel.testing import (
    OBS_HIGH,
    CountingContinuousEnv,
    CountingEnv,
    FailingEnv,
    ObsOutOfSpaceEnv,
    WrongSpaceTypeEnv,
)


def rollout(env, num_steps, action=0):
    """[(obs, reward, terminated, truncated)] of ``num_steps`` steps after a reset."""
    obs, info = env.reset(seed=0)
    assert info == {}
    steps = [(obs.tolist(), None, None, None)]
    for _ in range(num_steps):
        obs, reward, terminated, truncated, info = env.step(action)
        assert info == {}
        steps.append((obs.tolist(), reward, terminated, truncated))
    return steps


def test_counting_env_spaces():
    env = CountingEnv()
    assert env.observation_space == gym.spaces.Box(0.0, OBS_HIGH, (1,), np.float32)
    assert env.action_space == gym.spaces.Discrete(2)
    assert OBS_HIGH == 1e6 and env.config == {}


def test_counting_env_terminates_after_five_steps_by_default():
    assert rollout(CountingEnv(), 5) == [
        ([0.0], None, None, None),
        ([1.0], 1.0, False, False),
        ([2.0], 2.0, False, False),
        ([3.0], 3.0, False, False),
        ([4.0], 4.0, False, False),
        ([5.0], 5.0, True, False),
    ]


def test_counting_env_truncates_when_asked_and_resets_to_zero():
    env = CountingEnv({"episode_len": 2, "truncate": True})
    assert rollout(env, 2) == [
        ([0.0], None, None, None),
        ([1.0], 1.0, False, False),
        ([2.0], 2.0, False, True),
    ]
    obs, _ = env.reset()
    assert obs.tolist() == [0.0] and obs.dtype == np.float32 and env.t == 0


def test_counting_env_returns_exact_types():
    env = CountingEnv()
    env.reset()
    obs, reward, terminated, truncated, _ = env.step(1)
    assert type(reward) is float and type(terminated) is bool and type(truncated) is bool
    assert obs.dtype == np.float32 and obs.shape == (1,)


def test_counting_env_keeps_its_env_context():
    ctx = EnvContext({"episode_len": 3}, worker_index=1, num_workers=2, vector_index=4)
    env = CountingEnv(ctx)
    assert env.config is ctx and env.episode_len == 3


def test_counting_continuous_env_has_box_actions_and_the_same_trajectory():
    env = CountingContinuousEnv({"episode_len": 2})
    assert env.action_space == gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
    action = np.array([0.3], np.float32)
    assert rollout(env, 2, action) == [
        ([0.0], None, None, None),
        ([1.0], 1.0, False, False),
        ([2.0], 2.0, True, False),
    ]


@pytest.mark.parametrize(
    "problem, reset_obs, step_obs",
    [("bounds", [-1.0], [-1.0]), ("dtype", [0.0], [1.0]), ("shape", [0.0, 0.0], [1.0, 1.0])],
)
def test_obs_out_of_space_env_breaks_only_where_asked(problem, reset_obs, step_obs):
    at_reset = ObsOutOfSpaceEnv({"problem": problem})
    obs, _ = at_reset.reset()
    assert obs.tolist() == reset_obs and not at_reset.observation_space.contains(obs)
    assert at_reset.observation_space.contains(at_reset.step(0)[0])

    at_step = ObsOutOfSpaceEnv({"problem": problem, "at": "step"})
    assert at_step.observation_space.contains(at_step.reset()[0])
    obs, reward, terminated, truncated, info = at_step.step(0)
    assert obs.tolist() == step_obs and not at_step.observation_space.contains(obs)
    assert (reward, terminated, truncated, info) == (1.0, False, False, {})


def test_obs_out_of_space_env_dtype_problem_is_float64():
    obs, _ = ObsOutOfSpaceEnv({"problem": "dtype"}).reset()
    assert obs.dtype == np.float64


@pytest.mark.parametrize("attribute", ["observation_space", "action_space"])
def test_wrong_space_type_env(attribute):
    env = WrongSpaceTypeEnv({"attribute": attribute})
    assert getattr(env, attribute) == (0.0, 1.0)
    other = "action_space" if attribute == "observation_space" else "observation_space"
    assert isinstance(getattr(env, other), gym.spaces.Space)


def test_failing_env_fails_after_fail_after_steps_over_episodes():
    env = FailingEnv({"fail_after": 3, "episode_len": 2})
    env.reset()
    env.step(0)
    env.step(0)
    env.reset()
    obs, reward, *_ = env.step(0)
    assert obs.tolist() == [1.0] and reward == 1.0 and env.total_steps == 3
    with pytest.raises(
        RuntimeError,
        match=re.escape("FailingEnv.step() failed on purpose after 3 steps (config['fail_after']=3)"),
    ):
        env.step(0)
    with pytest.raises(RuntimeError, match=re.escape("FailingEnv.reset() failed on purpose after 3 steps")):
        env.reset()


def test_failing_env_with_a_marker_fails_once_over_all_its_instances(tmp_path):
    config = {"fail_after": 1, "fail_once_marker": str(tmp_path / "failed")}
    first = FailingEnv(config)
    first.reset()
    first.step(0)
    with pytest.raises(RuntimeError, match=re.escape("FailingEnv.step() failed on purpose after 1 steps")):
        first.step(0)
    assert (tmp_path / "failed").exists()
    assert first.step(0)[1] == 2.0 and first.total_steps == 2
    later = FailingEnv(config)
    later.reset()
    assert [later.step(0)[1] for _ in range(3)] == [1.0, 2.0, 3.0] and later.total_steps == 3


def test_failing_env_fails_only_on_listed_workers():
    healthy = FailingEnv(EnvContext({"fail_after": 0, "fail_on_worker_indices": [1]}, worker_index=2))
    healthy.reset()
    assert healthy.step(0)[1] == 1.0
    failing = FailingEnv(EnvContext({"fail_after": 0, "fail_on_worker_indices": [1]}, worker_index=1))
    with pytest.raises(RuntimeError, match=re.escape("FailingEnv.reset() failed on purpose after 0 steps")):
        failing.reset()


def test_failing_env_requires_fail_after():
    with pytest.raises(
        EnvError,
        match=re.escape("FailingEnv needs config['fail_after'] (steps before it fails), got config {}."),
    ):
        FailingEnv({})


def test_failing_env_fails_only_on_listed_sub_envs():
    config = {"fail_after": 0, "fail_on_vector_indices": [1]}
    assert FailingEnv(EnvContext(config, vector_index=0)).fails is False
    failing = FailingEnv(EnvContext(config, vector_index=1))
    with pytest.raises(RuntimeError, match=re.escape("FailingEnv.reset() failed on purpose after 0 steps")):
        failing.reset()
