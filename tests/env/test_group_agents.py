"""`MultiAgentEnv.with_agent_groups`: RLlib's grouped agents (tuple observations and actions, summed
rewards), as RLlib's `two_step_game_with_grouped_agents.py` example uses them, and training on them."""

import gymnasium as gym
import numpy as np
import pytest

from flywheel import PPOConfig
from flywheel.connectors.env_to_module import FlattenObservations
from flywheel.env import MultiAgentEnv
from flywheel.env.multi_agent_env import GROUP_INFO, GROUP_REWARDS
from flywheel.errors import EnvError
from flywheel.testing.multi_agent_envs import TurnBasedEnv


class SimultaneousPair(MultiAgentEnv):
    """Agents 0 and 1 act together for 3 steps; each is rewarded with its own action."""

    observation_space = gym.spaces.Box(0.0, 3.0, (1,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, config=None):
        super().__init__()
        self._agent_ids = {0, 1}
        self.t = 0

    def _obs(self):
        return {agent: np.array([self.t], np.float32) for agent in (0, 1)}

    def reset(self, *, seed=None, options=None):
        self.t = 0
        return self._obs(), {0: {"id": 0}, 1: {"id": 1}}

    def step(self, actions):
        self.t += 1
        done = self.t >= 3
        return (
            self._obs(),
            {agent: float(action) for agent, action in actions.items()},
            {0: done, 1: done, "__all__": done},
            {0: False, 1: False, "__all__": False},
            {},
        )


def grouped(config=None):
    env = SimultaneousPair()
    tuple_obs = gym.spaces.Tuple([env.observation_space, env.observation_space])
    tuple_act = gym.spaces.Tuple([env.action_space, env.action_space])
    return env.with_agent_groups(groups={"agents": [0, 1]}, obs_space=tuple_obs, act_space=tuple_act)


def test_a_group_observes_acts_and_is_rewarded_for_its_members():
    env = grouped()
    assert env.possible_agents == ["agents"]
    assert env.observation_space == gym.spaces.Tuple([SimultaneousPair.observation_space] * 2)
    assert env.get_action_space("agents") == gym.spaces.Tuple([gym.spaces.Discrete(2)] * 2)
    obs, infos = env.reset()
    assert list(obs) == ["agents"] and len(obs["agents"]) == 2
    assert infos == {"agents": {GROUP_INFO: [{"id": 0}, {"id": 1}]}}
    obs, rewards, terminateds, truncateds, infos = env.step({"agents": (1, 0)})
    np.testing.assert_array_equal(obs["agents"][1], [1.0])
    assert rewards == {"agents": 1.0} and infos == {"agents": {GROUP_REWARDS: [1.0, 0.0]}}
    assert terminateds == {"agents": False, "__all__": False} and truncateds["agents"] is False
    with pytest.raises(EnvError, match=r"Group 'agents' got 1 actions for its 2 members \[0, 1\]"):
        env.step({"agents": (1,)})


def test_default_group_spaces_are_tuples_of_the_members_and_bad_groups_are_named():
    env = TurnBasedEnv().with_agent_groups({"team": ["p0", "p1"]})
    assert env.get_observation_space("team") == gym.spaces.Tuple(
        [TurnBasedEnv().observation_spaces["p0"], TurnBasedEnv().observation_spaces["p1"]]
    )
    with pytest.raises(EnvError, match=r"Group 'team' misses members \['p1'\]"):
        env.reset()  # only p0 observes first: a group steps only when all its members do
    with pytest.raises(EnvError, match=r"Agent 'p0' is in groups 'a' and 'b'"):
        TurnBasedEnv().with_agent_groups({"a": ["p0"], "b": ["p0", "p1"]})


def test_ppo_trains_on_the_grouped_env():
    config = (
        PPOConfig()
        .environment(grouped)
        .multi_agent(policies={"shared"}, policy_mapping_fn=lambda agent_id, episode, **kw: "shared")
        .env_runners(
            env_to_module_connector=lambda env, spaces, device: FlattenObservations(multi_agent=True)
        )
        .training(train_batch_size=30, minibatch_size=15, num_epochs=1)
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .debugging(seed=0)
    )
    algo = config.build_algo()
    try:
        result = algo.train()
    finally:
        algo.stop()
    assert result["env_runners"]["num_episodes"] == 10  # 30 env steps of 3-step episodes
    assert 0.0 <= result["env_runners"]["episode_return_mean"] <= 6.0
