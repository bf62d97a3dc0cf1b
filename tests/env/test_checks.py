import re
import warnings

import gymnasium as gym
import numpy as np
import pytest

from flywheel.env import check_env
from flywheel.errors import EnvError
from flywheel.testing import CountingEnv, FailingEnv, ObsOutOfSpaceEnv, WrongSpaceTypeEnv

BOX = gym.spaces.Box(0.0, 1.0, (2,), np.float32)
GOOD_OBS = np.array([0.5, 0.5], np.float32)


class Scripted(gym.Env):
    """Returns fixed results from reset/step and records calls, so each check can be hit alone."""

    def __init__(self, observation_space=BOX, action_space=None, reset_returns=None, step_returns=None):
        self.observation_space = observation_space
        self.action_space = action_space if action_space is not None else gym.spaces.Discrete(2)
        self.reset_returns = reset_returns if reset_returns is not None else (GOOD_OBS, {})
        self.step_returns = step_returns if step_returns is not None else (GOOD_OBS, 0.0, False, False, {})
        self.resets = 0
        self.closed = False

    def reset(self, *, seed=None, options=None):
        self.resets += 1
        return self.reset_returns

    def step(self, action):
        return self.step_returns

    def close(self):
        self.closed = True


def expect(message):
    return pytest.raises(EnvError, match=re.escape(message))


# Envs that pass


@pytest.mark.parametrize("env_id", ["CartPole-v1", "Pendulum-v1"])
def test_gymnasium_envs_pass(env_id):
    check_env(gym.make(env_id))


def test_passing_env_stays_open_and_is_reset_when_episodes_end():
    env = Scripted(step_returns=(GOOD_OBS, np.float32(1.0), np.bool_(True), False, {}))
    check_env(env, num_steps=3)
    assert env.resets == 4 and not env.closed  # the caller's env: a runner goes on to use it


def test_nested_supported_spaces_pass():
    space = gym.spaces.Dict(
        {
            "box": BOX,
            "parts": gym.spaces.Tuple((gym.spaces.Discrete(3), gym.spaces.MultiBinary(2))),
            "md": gym.spaces.MultiDiscrete([2, 3]),
        }
    )
    obs = {"box": GOOD_OBS, "parts": (1, np.array([0, 1], np.int8)), "md": np.array([1, 2])}
    check_env(Scripted(space, reset_returns=(obs, {}), step_returns=(obs, 1, False, False, {})))


# Spaces


@pytest.mark.parametrize("attribute", ["observation_space", "action_space"])
def test_space_that_is_a_tuple(attribute):
    example = "Box(low, high, shape, dtype)" if attribute == "observation_space" else "Discrete(n)"
    with expect(
        f"env WrongSpaceTypeEnv.{attribute} is a tuple ((0.0, 1.0)); expected a gymnasium.spaces.Space "
        f"instance. Fix: set self.{attribute} = gymnasium.spaces.{example} in the env's __init__."
    ):
        check_env(WrongSpaceTypeEnv({"attribute": attribute}))


def test_space_that_is_a_class_or_missing():
    with expect("env Scripted.observation_space is the class Box, not an instance; expected a gymnasium"):
        check_env(Scripted(gym.spaces.Box))
    env = Scripted()
    del env.action_space
    with expect("env Scripted.action_space is missing; expected a gymnasium.spaces.Space instance."):
        check_env(env)
    assert not env.closed  # closing is the caller's (a runner's sub-env builder closes a failed env)


def test_unsupported_space_is_named_with_its_path():
    text = gym.spaces.Text(5)
    with expect(
        f"env Scripted.observation_space['note'] is {text}, a Text space, which flywheel does not support. "
        "Supported: Box, Discrete, MultiDiscrete, MultiBinary, Dict, Tuple (nested freely)."
    ):
        check_env(Scripted(gym.spaces.Dict({"pos": BOX, "note": text})))
    with expect("env Scripted.action_space[1] is "):
        check_env(Scripted(action_space=gym.spaces.Tuple((gym.spaces.Discrete(2), text))))


# reset()


@pytest.mark.parametrize(
    "problem, detail",
    [
        (
            "nan",
            "got array([nan], dtype=float32) (dtype float32, shape (1,)), expected Box(0.0, 1e+06, (1,), float32): "
            "the bounds are wrong (value nan at index (0,) is NaN). Fix: clip the observation into "
            "the space's bounds, or widen the space.",
        ),
        (
            "shape",
            "got array([0., 0.], dtype=float32) (dtype float32, shape (2,)), expected Box(0.0, 1e+06, (1,), "
            "float32): the shape is wrong ((2,) instead of (1,)). Fix: return an array of shape (1,), or declare "
            "the space with that shape.",
        ),
    ],
)
def test_reset_observation_outside_space(problem, detail):
    with pytest.raises(EnvError) as info:
        check_env(ObsOutOfSpaceEnv({"problem": problem}))
    assert str(info.value) == (
        "env ObsOutOfSpaceEnv.reset(seed=0) returned an observation outside observation_space: " + detail
    )


def test_observation_outside_the_box_bounds_warns_once_and_the_check_goes_on():
    """Right shape and dtype, outside the bounds (RLlib's mean_std_filtering.py declares bounds its wrapper
    exceeds): one warning naming the env, the value and the bound, as gymnasium's env checker gives; every
    reset of the check returns such an observation, the warning comes once."""
    env = ObsOutOfSpaceEnv({"problem": "bounds", "episode_len": 1})
    with pytest.warns(UserWarning) as caught:
        check_env(env, num_steps=4)
    assert [str(w.message) for w in caught] == [
        "env ObsOutOfSpaceEnv.reset(seed=0) returned an observation outside the bounds of observation_space "
        "Box(0.0, 1e+06, (1,), float32): value -1.0 at index (0,) is below low 0.0 (got array([-1.], "
        "dtype=float32) (dtype float32, shape (1,))). Sampling goes on with the observation as it is; this "
        "warning is given once (gymnasium's env checker warns the same). Fix: clip the observation into the "
        "space's bounds, or widen the space."
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(ObsOutOfSpaceEnv({"problem": "bounds"}), warn_bounds=False)


def test_observation_in_space_only_after_conversion_warns():
    """RLlib's example envs often return float64 arrays (or lists) for float32 spaces; gymnasium's checker
    warns about it and its vector env converts them, so flywheel's check warns and passes too."""
    with pytest.warns(UserWarning) as caught:
        check_env(ObsOutOfSpaceEnv({"problem": "dtype"}))
    assert str(caught[0].message) == (
        "env ObsOutOfSpaceEnv.reset(seed=0) returned an observation that observation_space Box(0.0, 1e+06, (1,), "
        "float32) contains only after conversion to its dtypes (the dtype is wrong (float64 cannot be cast "
        "safely to float32)); flywheel converts every observation so (RLlib: gymnasium's env checker "
        "warns the same). Fix: return obs.astype(np.float32), or declare the space with dtype=np.float64."
    )


def test_random_steps_take_actions_the_observations_action_mask_allows():
    """An action-masking env may reject masked actions (RLlib's ActionMaskEnv raises on them)."""

    class MaskedEnv(gym.Env):
        observation_space = gym.spaces.Dict({"action_mask": gym.spaces.MultiBinary(5)})
        action_space = gym.spaces.Discrete(5)

        def reset(self, *, seed=None, options=None):
            return {"action_mask": np.array([0, 0, 1, 0, 0], np.int8)}, {}

        def step(self, action):
            if action != 2:
                raise ValueError(f"masked action {action}")
            return self.reset()[0], 0.0, False, False, {}

    check_env(MaskedEnv(), num_steps=20)


def test_step_observation_outside_space():
    with expect(
        "env ObsOutOfSpaceEnv.step() returned an observation outside observation_space: got array([1., 1.], "
        "dtype=float32) (dtype float32, shape (2,)), expected Box(0.0, 1e+06, (1,), float32): the shape is wrong"
    ):
        check_env(ObsOutOfSpaceEnv({"problem": "shape", "at": "step"}))


def test_reset_returning_obs_alone():
    with expect(
        "env Scripted.reset(seed=0) returned array([0.5, 0.5], dtype=float32) (dtype float32, shape (2,)); "
        "expected a tuple (obs, info). Fix: return obs, {}"
    ):
        check_env(Scripted(reset_returns=GOOD_OBS))


def test_reset_info_not_a_dict():
    with expect("env Scripted.reset(seed=0) returned info None (type NoneType); expected a dict."):
        check_env(Scripted(reset_returns=(GOOD_OBS, None)))


def test_reset_exception_is_wrapped_and_chained():
    class Broken(Scripted):
        def reset(self, *, seed=None, options=None):
            raise KeyError("map")

    env = Broken()
    with expect(
        "env Broken.reset(seed=0) raised KeyError: 'map'. This happened in flywheel's one-time env check"
    ) as info:
        check_env(env)
    assert isinstance(info.value.__cause__, KeyError)
    assert not env.closed


# step()


def test_step_exception_is_wrapped_and_chained():
    with expect(
        "env FailingEnv.step(np.int64(1)) raised RuntimeError: FailingEnv.step() failed on purpose after 2 "
        "steps (config['fail_after']=2). This happened"
    ) as info:
        check_env(FailingEnv({"fail_after": 2}))
    assert isinstance(info.value.__cause__, RuntimeError)


def test_step_returning_the_old_four_tuple():
    with expect(
        "env Scripted.step() returned (array([0.5, 0.5], dtype=float32), 0.0, False, {}) (type tuple); "
    ):
        check_env(Scripted(step_returns=(GOOD_OBS, 0.0, False, {})))


@pytest.mark.parametrize(
    "reward, described",
    [
        ("1", "'1' (type str)"),
        (np.array([1.0]), "array([1.]) (dtype float64, shape (1,))"),
        (None, "None (type NoneType)"),
    ],
)
def test_step_reward_not_a_float(reward, described):
    with expect(
        f"env Scripted.step() returned reward {described}; expected a float. Fix: return float(reward)."
    ):
        check_env(Scripted(step_returns=(GOOD_OBS, reward, False, False, {})))


def test_step_flags_not_bools():
    with expect(
        "env Scripted.step() returned terminated=0 (type int); expected a bool. Fix: return bool(terminated)."
    ):
        check_env(Scripted(step_returns=(GOOD_OBS, 0.0, 0, False, {})))
    with expect(
        "env Scripted.step() returned truncated=array([False]) (dtype bool, shape (1,)); expected a bool."
    ):
        check_env(Scripted(step_returns=(GOOD_OBS, 0.0, False, np.array([False]), {})))


def test_step_info_not_a_dict():
    with expect("env Scripted.step() returned info [] (type list); expected a dict."):
        check_env(Scripted(step_returns=(GOOD_OBS, 0.0, False, False, [])))


# Explanations per space type


def obs_error(space, obs):
    with pytest.raises(EnvError) as info:
        check_env(Scripted(space, reset_returns=(obs, {})))
    return str(info.value).split(f"expected {space}: ")[1]


@pytest.mark.filterwarnings("ignore:.*Casting input x to numpy array")
def test_explanations_for_box():
    assert obs_error(BOX, np.array([0.5, np.nan], np.float32)).startswith(
        "the bounds are wrong (value nan at index (1,) is NaN)."
    )
    with pytest.warns(UserWarning, match=r": value 2\.0 at index \(1,\) is above high 1\.0 \(got array"):
        check_env(Scripted(BOX, reset_returns=(np.array([0.5, 2.0], np.float32), {})), num_steps=0)
    assert (
        obs_error(BOX, "x")
        == "it is a str, not a numpy array. Fix: return np.asarray(obs, dtype=np.float32)."
    )


def test_explanations_for_discrete():
    space = gym.spaces.Discrete(3, start=1)
    assert obs_error(space, 0.5) == "it is a float, not an int. Fix: return int(obs)."
    assert obs_error(space, np.int64(4)) == (
        "the bounds are wrong (value 4 is outside [1, 4)). Fix: return an int in [1, 4), or enlarge the Discrete space."
    )


def test_explanations_for_multi_discrete_and_multi_binary():
    assert obs_error(gym.spaces.MultiDiscrete([2, 3]), np.array([1, 3])).startswith(
        "the bounds are wrong (value 3 at index (1,) is above high 2)."
    )
    assert obs_error(gym.spaces.MultiBinary(2), np.array([0, 2], np.int8)).startswith(
        "the bounds are wrong (value 2 at index (1,) is above high 1)."
    )
    assert obs_error(gym.spaces.MultiBinary(2), np.array([0, 1, 1], np.int8)).startswith(
        "the shape is wrong ((3,) instead of (2,))."
    )
    # In bounds but rejected by gymnasium (object dtype): the generic explanation.
    assert obs_error(gym.spaces.MultiDiscrete([2, 3]), np.array([1, 2], object)) == (
        "it is not contained in the space. Fix: return observations the space contains."
    )


@pytest.mark.filterwarnings("ignore:.*Casting input x to numpy array")
def test_explanations_for_dict_and_tuple():
    space = gym.spaces.Dict({"pos": BOX, "id": gym.spaces.Discrete(2)})
    assert (
        obs_error(space, [GOOD_OBS]) == "it is a list, not a dict. Fix: return a dict with the space's keys."
    )
    assert obs_error(space, {"pos": GOOD_OBS, "ids": 1}) == (
        "the keys are wrong (missing ['id'], unexpected ['ids']). Fix: return exactly the keys of the Dict space."
    )
    with pytest.warns(
        UserWarning, match=r"at \['pos'\] the bounds are wrong \(value 1\.5 at index \(0,\) is above"
    ):
        check_env(Scripted(space, reset_returns=({"pos": GOOD_OBS + 1, "id": 1}, {})), num_steps=0)
    pair = gym.spaces.Tuple((BOX, gym.spaces.Discrete(2)))
    assert obs_error(pair, (GOOD_OBS, 2)).startswith(
        "at [1] the bounds are wrong (value 2 is outside [0, 2))."
    )
    assert obs_error(pair, [GOOD_OBS]) == (
        "it is (array([0.5, 0.5], dtype=float32),) (type tuple), not a tuple of length 2. "
        "Fix: return a tuple with one item per sub-space (2)."
    )


def test_counting_env_passes():
    check_env(CountingEnv({"episode_len": 2}), num_steps=6)
