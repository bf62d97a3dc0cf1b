"""check_multi_agent_env: passing envs, and one explanatory error per contract violation."""

import re

import gymnasium as gym
import numpy as np
import pytest

from flywheel.env.multi_agent_checks import check_multi_agent_env
from flywheel.errors import EnvError
from flywheel.testing.multi_agent_envs import BrokenMultiAgentEnv, JoinLeaveEnv, MultiCartPole, TurnBasedEnv


def expect(message):
    return pytest.raises(EnvError, match=re.escape(message))


class Scripted(TurnBasedEnv):
    """TurnBasedEnv whose reset/step results can be replaced by fixed ones."""

    def __init__(self, reset_returns=None, step_returns=None):
        super().__init__()
        self.reset_returns, self.step_returns = reset_returns, step_returns
        self.closed = False

    def reset(self, *, seed=None, options=None):
        return self.reset_returns if self.reset_returns is not None else super().reset(seed=seed)

    def step(self, action_dict):
        return self.step_returns if self.step_returns is not None else super().step(action_dict)

    def close(self):
        self.closed = True


OBS = np.array([1.0], np.float32)
NOT_DONE = {"__all__": False}


@pytest.mark.parametrize(
    "env",
    [TurnBasedEnv(), TurnBasedEnv({"truncate": True, "episode_len": 3}), JoinLeaveEnv(), MultiCartPole()],
    ids=["turn_based", "turn_based_truncated", "join_leave", "cartpoles"],
)
def test_scripted_envs_pass(env):
    check_multi_agent_env(env, num_steps=25)


def test_passing_env_stays_open():
    env = Scripted()
    check_multi_agent_env(env)
    assert not env.closed  # the caller's env: a runner goes on to use it


class RewardBeforeFirstObservation(TurnBasedEnv):
    """p1 gets 0.5 at env step 1, before its first observation (RLlib keeps it for p1's next step)."""

    def step(self, action_dict):
        obs, rewards, terminateds, truncateds, infos = super().step(action_dict)
        if self.t == 1:
            rewards["p1"] = 0.5
        return obs, rewards, terminateds, truncateds, infos


def test_reward_for_an_agent_that_never_observed_passes():
    check_multi_agent_env(RewardBeforeFirstObservation(), num_steps=25)


def test_data_for_an_agent_after_it_is_done():
    with expect(
        "env BrokenMultiAgentEnv.step() at env step 2 returned an observation for agent 'p0' after it was done "
        "(terminated or truncated earlier). Fix: return no data for an agent once it is done."
    ):
        check_multi_agent_env(BrokenMultiAgentEnv({"problem": "data_after_done"}))


def test_agent_outside_possible_agents_and_missing_space():
    with expect(
        "env BrokenMultiAgentEnv.step() at env step 1 returned an observation for agent 'ghost', which is not one "
        "of possible_agents ['p0', 'p1']."
    ):
        check_multi_agent_env(BrokenMultiAgentEnv({"problem": "unknown_agent"}))
    with expect(
        "BrokenMultiAgentEnv.observation_spaces has no space for agent 'p1' (it has spaces for ['p0'])."
    ):
        check_multi_agent_env(BrokenMultiAgentEnv({"problem": "missing_space"}))


def test_done_flags_without_all_pass_and_need_bools():
    """A missing "__all__" reads as False, as in RLlib (its rock-paper-scissors env returns truncateds {})."""
    check_multi_agent_env(Scripted(step_returns=({"p0": OBS}, {"p0": 1.0}, {}, {}, {})))
    env = Scripted(step_returns=({"p1": OBS}, {"p0": 1.0}, {"__all__": 0}, NOT_DONE, {}))
    with expect("returned terminateds['__all__']=0 (type int); expected a bool. Fix: return bool(flag)."):
        check_multi_agent_env(env)


def test_unsupported_space_and_observation_outside_space():
    env = TurnBasedEnv()
    env.action_spaces["p1"] = gym.spaces.Text(5)
    with expect("env TurnBasedEnv.action_spaces['p1'] is Text(1, 5, charset="):
        check_multi_agent_env(env)
    env = Scripted(reset_returns=({"p0": np.array([-1.0, 0.0], np.float32)}, {}))
    with expect(
        "env Scripted.reset(seed=0) returned an observation for agent 'p0' outside its observation space: got "
        "array([-1.,  0.], dtype=float32) (dtype float32, shape (2,)), expected Box(0.0, 1e+06, (1,), float32): the "
        "shape is wrong"
    ):
        check_multi_agent_env(env)


def test_an_observation_outside_the_box_bounds_warns_once():
    env = Scripted(reset_returns=({"p0": np.array([-1.0], np.float32)}, {}))
    with pytest.warns(UserWarning) as caught:
        check_multi_agent_env(env, num_steps=0)
    assert [str(w.message) for w in caught] == [
        "env Scripted.reset(seed=0) returned an observation for agent 'p0' outside the bounds of its observation "
        "space Box(0.0, 1e+06, (1,), float32): value -1.0 at index (0,) is below low 0.0 (got array([-1.], "
        "dtype=float32) (dtype float32, shape (1,))). Sampling goes on with the observation as it is; this "
        "warning is given once (gymnasium's env checker warns the same). Fix: clip the observation into the "
        "space's bounds, or widen the space."
    ]


def test_reset_and_step_shapes():
    with expect(
        "env Scripted.reset(seed=0) returned ({'p0': array([1.], dtype=float32)},) (type tuple); expected"
    ):
        check_multi_agent_env(Scripted(reset_returns=({"p0": OBS},)))
    with expect(
        "env Scripted.step() at env step 1 returned ({}, {}, {}, {}) (type tuple); expected five dicts"
    ):
        check_multi_agent_env(Scripted(step_returns=({}, {}, {}, {})))
    with expect(
        "returned reward '1' (type str) for agent 'p0'; expected a float. Fix: return float(reward)."
    ):
        check_multi_agent_env(Scripted(step_returns=({"p1": OBS}, {"p0": "1"}, NOT_DONE, NOT_DONE, {})))


def test_infos_only_for_observing_agents():
    env = Scripted(step_returns=({"p1": OBS}, {"p0": 1.0}, NOT_DONE, NOT_DONE, {"p0": {}}))
    with expect(
        "env Scripted.step() at env step 1 returned infos for agents ['p0'] that got no observation in this step; "
        "infos travel with observations."
    ):
        check_multi_agent_env(env)


def test_truncating_a_waiting_agent_needs_a_final_observation():
    env = Scripted(step_returns=({"p1": OBS}, {}, NOT_DONE, {"__all__": True}, {}))
    with expect(
        "env Scripted.step() at env step 1 truncated agent 'p0' while it waited for its next observation and gave "
        "it none, so its last step has nothing to bootstrap from."
    ):
        check_multi_agent_env(env)


def test_no_agent_left_without_all():
    env = Scripted(step_returns=({"p0": OBS}, {"p0": 1.0}, {"p0": True, "__all__": False}, NOT_DONE, {}))
    with expect(
        "env Scripted.step() at env step 1: no agent observes and none waits for its next observation, but "
        "'__all__' is False, so no agent could act next."
    ):
        check_multi_agent_env(env)


def test_errors_raised_by_the_env_are_wrapped_and_the_env_left_to_the_caller():
    class Exploding(Scripted):
        def step(self, action_dict):
            raise RuntimeError("boom")

    env = Exploding()
    with pytest.raises(
        EnvError, match=r"env Exploding\.step\(\{'p0': np\.int64\(\d\)\}\) raised RuntimeError: boom\."
    ):
        check_multi_agent_env(env)
    assert not env.closed


class TruncatedsWithoutAll(MultiCartPole):
    """RLlib's envs may leave '__all__' out of truncateds (RLlib reads it as False)."""

    def step(self, action_dict):
        obs, rewards, terminateds, truncateds, infos = super().step(action_dict)
        del truncateds["__all__"]
        return obs, rewards, terminateds, truncateds, infos


def test_truncateds_may_leave_out_all_in_the_checks_and_the_vector_env():
    from flywheel.env.multi_agent_vector_env import make_multi_agent_vector_env

    check_multi_agent_env(TruncatedsWithoutAll({"num_agents": 2}))
    vector_env = make_multi_agent_vector_env(TruncatedsWithoutAll, {"num_agents": 2}, num_envs=2)
    vector_env.reset(seed=0)
    steps = 0
    while steps < 200:  # episodes end (terminated) and reset without an error
        vector_env.step([{"agent_0": 0, "agent_1": 1}] * 2)
        steps += 1
    vector_env.close()


def test_a_done_agents_flag_may_stay_true_as_in_rllib():
    """RLlib's DoubleRowCorridorEnv reports every agent's terminated flag each step: a flag is no data."""
    from flywheel.env import MultiAgentEnv

    class FlagsStayTrue(MultiAgentEnv):
        def __init__(self, config=None):
            super().__init__()
            self.possible_agents = self.agents = ["a", "b"]
            self.observation_spaces = {agent: gym.spaces.Discrete(4) for agent in self.agents}
            self.action_spaces = {agent: gym.spaces.Discrete(2) for agent in self.agents}

        def reset(self, *, seed=None, options=None):
            self.t = 0
            return {"a": 0, "b": 0}, {}

        def step(self, action_dict):
            self.t += 1
            obs = {"b": self.t} if self.t < 3 else {}
            rewards = {agent: 1.0 for agent in action_dict}
            terminateds = {"a": True, "b": self.t == 3, "__all__": self.t == 3}
            return obs, rewards, terminateds, {}, {}

    check_multi_agent_env(FlagsStayTrue())
