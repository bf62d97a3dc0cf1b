"""Observations that leave the space after the one-time check are reported with env, step and value: an
error, or, for an observation that leaves only a Box's bounds, one warning per runner."""

import warnings

import gymnasium as gym
import numpy as np
import pytest

from flywheel import MultiAgentEnv, MultiAgentEnvRunner, PPOConfig, SingleAgentEnvRunner
from flywheel.env.observation_checks import first_outside
from flywheel.errors import EnvError
from flywheel.testing import ObsOutOfSpaceEnv, TurnBasedEnv


def _runner(problem="bounds", disable=False, num_envs=2):
    config = (
        PPOConfig()
        .environment(
            ObsOutOfSpaceEnv,
            env_config={"at": "step", "after": 40, "episode_len": 100, "problem": problem},
            disable_env_checking=disable,
        )
        .env_runners(num_envs_per_env_runner=num_envs)
        .rl_module(model_config={"fcnet_hiddens": [4]})
    )
    return SingleAgentEnvRunner(config=config)


def test_an_observation_leaving_the_box_bounds_later_warns_once_and_sampling_goes_on():
    runner = _runner()  # the first 40 steps of each episode are fine, every later one is outside the bounds
    with pytest.warns(UserWarning) as caught:
        episodes = runner.sample(num_timesteps=200)
    assert [str(w.message) for w in caught] == [
        "env ObsOutOfSpaceEnv (sub-env 0 of runner 0) returned an observation at step 49 of its episode outside "
        "the bounds of observation_space Box(0.0, 1e+06, (1,), float32): value -1.0 at index (0,) is below low "
        "0.0 (got array([-1.], dtype=float32) (dtype float32, shape (1,))). Sampling goes on with the "
        "observation as it is; this warning is given once (gymnasium's env checker warns the same). Fix: clip "
        "the observation into the space's bounds, or widen the space."
    ]
    assert sum(len(e) for e in episodes) == 200 and episodes[0].get_observations(-1).tolist() == [-1.0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # given once per runner: no second warning
        runner.sample(num_timesteps=100)


def test_a_wrong_shape_later_stays_an_error():
    config = (
        PPOConfig()
        .environment(
            ObsOutOfSpaceEnv, env_config={"at": "step", "after": 40, "episode_len": 100, "problem": "shape"}
        )
        .env_runners(num_envs_per_env_runner=1)
        .rl_module(model_config={"fcnet_hiddens": [4]})
    )
    with pytest.raises((EnvError, ValueError)):
        SingleAgentEnvRunner(config=config).sample(num_timesteps=100)


def test_nan_observations_are_named_and_the_check_can_be_turned_off():
    with pytest.raises(EnvError, match=r"at step 49 of its episode: .*value nan at index \(0,\) is NaN"):
        _runner("nan", num_envs=1).sample(num_timesteps=100)
    episodes = _runner("nan", disable=True, num_envs=1).sample(num_timesteps=100)
    assert np.isnan(episodes[0].get_observations(-1)).all()


def test_first_outside_checks_a_whole_batch():
    box = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    assert first_outside(box, np.zeros((3, 2), np.float32)) is None
    assert first_outside(box, np.array([[0, 0], [0, 2], [np.nan, 0]], np.float32)) == 1
    assert first_outside(box, np.zeros((3, 3), np.float32)) == 0
    assert first_outside(gym.spaces.Discrete(3, start=1), np.array([1, 3, 0])) == 2
    assert first_outside(gym.spaces.MultiDiscrete([2, 2]), np.array([[1, 1], [1, 2]])) == 1
    space = gym.spaces.Dict({"a": box, "b": gym.spaces.Discrete(2)})
    assert first_outside(space, {"a": np.zeros((2, 2), np.float32), "b": np.array([0, 5])}) == 1


class _Drifting(MultiAgentEnv):
    """Two agents; agent "b"'s observation leaves its space after step 20."""

    def __init__(self, config=None):
        super().__init__()
        self.possible_agents = self.agents = ["a", "b"]
        self.observation_spaces = {a: gym.spaces.Box(0.0, 1.0, (1,), np.float32) for a in self.agents}
        self.action_spaces = {a: gym.spaces.Discrete(2) for a in self.agents}

    def reset(self, *, seed=None, options=None):
        self.t = 0
        return {a: np.zeros(1, np.float32) for a in self.agents}, {}

    def step(self, action_dict):
        self.t += 1
        obs = {"a": np.zeros(1, np.float32), "b": np.full(1, 5.0 if self.t > 20 else 0.5, np.float32)}
        return obs, {a: 0.0 for a in self.agents}, {"__all__": self.t >= 50}, {"__all__": False}, {}


def test_multi_agent_observations_are_checked_per_agent():
    config = (
        PPOConfig()
        .environment(_Drifting)
        .multi_agent(policies={"p"}, policy_mapping_fn=lambda agent_id, episode, **kw: "p")
        .rl_module(model_config={"fcnet_hiddens": [4]})
    )
    runner = MultiAgentEnvRunner(config=config)
    with pytest.warns(UserWarning) as caught:
        runner.sample(num_timesteps=100)
    assert [str(w.message) for w in caught] == [
        "env _Drifting (sub-env 0 of runner 0) returned an observation for agent 'b' at env step 33 of its episode "
        "outside the bounds of its observation space Box(0.0, 1.0, (1,), float32): value 5.0 at index (0,) is "
        "above high 1.0 (got array([5.], dtype=float32) (dtype float32, shape (1,))). Sampling goes on with the "
        "observation as it is; this warning is given once (gymnasium's env checker warns the same). Fix: clip "
        "the observation into the space's bounds, or widen the space."
    ]
    runner.stop()


def test_single_and_multi_agent_mix_ups_are_explained():
    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .multi_agent(policies={"p0", "p1"}, policy_mapping_fn=lambda agent_id, episode, **kw: "p0")
    )
    with pytest.raises(
        EnvError,
        match=r"env CartPole-v1 is a single-agent env \(not a MultiAgentEnv\), but the config is multi-agent "
        r"\(config\.multi_agent\(\) set policies other than 'default_policy' or a policy_mapping_fn\)\. Fix: remove "
        r"the multi_agent\(\) settings",
    ):
        config.build_algo()
    with pytest.raises(
        EnvError,
        match=r"env TurnBasedEnv is a MultiAgentEnv, but the config is single-agent \(policies is \{'default_policy'\} "
        r"and there is no policy_mapping_fn\)\. Fix: map its agents to modules with config\.multi_agent\(",
    ):
        PPOConfig().environment(TurnBasedEnv).build_algo()
