"""Fuzzed policy inputs: `compute_single_action` / `compute_actions` on arrays of random dtypes, shapes
and values (NaN, inf, huge, empty), lists, scalars and other objects return actions in the action
space (one per row) or raise an InferenceError, never another exception."""

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from flywheel import PPOConfig
from flywheel.errors import InferenceError
from flywheel.inference import load_policy
from flywheel.testing import CountingContinuousEnv, CountingEnv

pytestmark = pytest.mark.chaos

ENVS = {
    "box_obs_discrete_actions": CountingEnv,
    "box_obs_box_actions": CountingContinuousEnv,
    "discrete_obs": "FrozenLake-v1",
}

_DTYPES = st.sampled_from(
    [
        "bool",
        "int8",
        "uint8",
        "int32",
        "int64",
        "uint64",
        "float16",
        "float32",
        "float64",
        "complex64",
        "U3",
        "O",
    ]
)
ARRAYS = _DTYPES.flatmap(
    lambda dtype: hnp.arrays(
        dtype, hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3),
        elements=None if dtype != "O" else st.none() | st.integers() | st.text(max_size=2),
    )
)  # fmt: skip
OTHERS = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats()
    | st.text(max_size=4)
    | st.lists(st.floats() | st.integers(-5, 5), max_size=3)
    | st.lists(st.lists(st.floats(), max_size=2), max_size=3)
    | st.dictionaries(st.text(max_size=2), st.integers(), max_size=2)
)
INPUTS = ARRAYS | OTHERS


@pytest.fixture(scope="module", params=list(ENVS), ids=list(ENVS))
def policy(request, tmp_path_factory):
    config = (
        PPOConfig()
        .environment(ENVS[request.param])
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .debugging(seed=0)
    )
    algo = config.build_algo()
    path = algo.save_to_path(tmp_path_factory.mktemp("policy") / "ckpt")
    algo.stop()
    return load_policy(path)


def _in_space(space: gym.Space, action) -> bool:
    return space.contains(
        np.asarray(action, dtype=space.dtype) if isinstance(space, gym.spaces.Box) else action
    )


@given(obs=INPUTS, explore=st.booleans())
@example(obs=-1, explore=False)  # was a RuntimeError (one-hot of a negative Discrete value)
@example(obs=np.array([1e300]), explore=False)  # became inf in float32 and was acted on
def test_single_actions_are_in_the_action_space_or_inference_errors(policy, obs, explore):
    try:
        action = policy.compute_single_action(obs, explore=explore)
    except InferenceError:
        return
    space = policy.module.action_space
    assert _in_space(space, action), f"{action!r} is not in {space}"


@given(obs=INPUTS, explore=st.booleans())
@example(obs=[16.0], explore=False)  # was a RuntimeError (16 is outside FrozenLake's Discrete(16))
def test_batched_actions_are_in_the_action_space_or_inference_errors(policy, obs, explore):
    try:
        actions = policy.compute_actions(obs, explore=explore)
    except InferenceError:
        return
    space = policy.module.action_space
    assert len(actions) == len(np.asarray(obs))
    for action in actions:
        assert _in_space(space, action), f"{action!r} is not in {space}"


def test_a_discrete_observation_outside_the_space_is_an_inference_error(policy):
    space = policy.env_to_module.input_observation_space
    if not isinstance(space, gym.spaces.Discrete):
        pytest.skip("FrozenLake's Discrete(16) observations only")
    with pytest.raises(
        InferenceError,
        match=r"^compute_actions\(obs_batch\) got 16\.0 in observation 1, outside Discrete\(16\) \(values from 0 "
        r"to 15\)\. Fix: pass observations the env returns\.$",
    ):
        policy.compute_actions([3, 16.0])
    with pytest.raises(
        InferenceError, match=r"^compute_single_action\(obs\) got -1 in observation 0, outside"
    ):
        policy.compute_single_action(-1)


def test_a_float64_observation_beyond_float32_is_an_inference_error(policy):
    space = policy.env_to_module.input_observation_space
    if not (isinstance(space, gym.spaces.Box) and space.dtype == np.float32):
        pytest.skip("float32 Box observations only")
    with pytest.raises(
        InferenceError,
        match=r"^compute_actions\(obs_batch\) got \[1e\+300\] in observation 1, beyond the range of float32 "
        r"\(the dtype of Box\(.*\)\)\. Fix: pass observations the env returns\.$",
    ):
        policy.compute_actions(np.array([[1.0], [1e300]]))


@given(explore=st.none() | st.integers() | st.text(max_size=3) | st.floats())
def test_explore_that_is_not_a_bool_is_an_inference_error(policy, explore):
    obs = policy.env_to_module.input_observation_space.sample()
    with pytest.raises(InferenceError, match=r"^explore must be True or False, got "):
        policy.compute_single_action(obs, explore=explore)
