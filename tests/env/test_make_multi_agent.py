"""make_multi_agent: RLlib 2.60's single-agent-to-multi-agent wrapper (agents 0..n-1, done handling)."""

import gymnasium as gym
import numpy as np
import pytest

from flywheel import MultiAgentEnv, PPOConfig, register_env
from flywheel.env import make_multi_agent
from flywheel.env.make import EnvContext
from flywheel.env.multi_agent_env import make_multi_agent as make_multi_agent_from_module
from flywheel.errors import EnvError


class Countdown(gym.Env):
    """Terminates after `length` steps (truncates instead with `truncate=True`); obs = steps left."""

    observation_space = gym.spaces.Box(0.0, 10.0, (1,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, config=None):
        config = config or {}
        self.length, self.truncate = config.get("length", 3), config.get("truncate", False)
        self.context = config

    def reset(self, *, seed=None, options=None):
        self.left = self.length
        return np.array([self.left], np.float32), {"seed": seed}

    def step(self, action):
        self.left -= 1
        done = self.left == 0
        obs = np.array([self.left], np.float32)
        return obs, float(action), done and not self.truncate, done and self.truncate, {}


def test_exported_from_flywheel_env_and_its_module():
    assert make_multi_agent is make_multi_agent_from_module


def test_gym_id_gives_one_copy_per_agent_with_int_ids_and_per_agent_spaces():
    cls = make_multi_agent("CartPole-v1")
    assert issubclass(cls, MultiAgentEnv) and cls.__name__ == "MultiAgentCartPole_v1"
    env = cls({"num_agents": 3})
    assert env.possible_agents == env.agents == [0, 1, 2]
    assert env.observation_spaces == {i: gym.make("CartPole-v1").observation_space for i in range(3)}
    assert env.get_action_space(2) == gym.spaces.Discrete(2)
    obs, infos = env.reset(seed=3)
    assert sorted(obs) == sorted(infos) == [0, 1, 2]
    assert all(np.array_equal(obs[0], obs[i]) for i in (1, 2))  # one seed for every copy, as RLlib
    assert len(cls().envs) == 1  # num_agents defaults to 1


def test_creator_gets_the_config_without_num_agents():
    cls = make_multi_agent(lambda config: Countdown(config))
    env = cls(EnvContext({"num_agents": 2, "length": 5}, worker_index=3))
    assert [copy.length for copy in env.envs] == [5, 5]
    assert dict(env.envs[0].context) == {"length": 5} and env.envs[0].context.worker_index == 3


def test_a_registered_name_works_too():
    register_env("countdown_for_make_multi_agent", lambda config: Countdown(config))
    env = make_multi_agent("countdown_for_make_multi_agent")({"num_agents": 2, "length": 2})
    assert env.envs[1].length == 2


def test_done_agents_stop_and_all_is_set_when_every_agent_is_done():
    env = make_multi_agent(Countdown)({"num_agents": 2, "length": 2})
    env.reset()
    obs, rewards, terminateds, truncateds, _ = env.step({0: 1, 1: 0})
    assert rewards == {0: 1.0, 1: 0.0} and terminateds == {0: False, 1: False, "__all__": False}
    env.envs[1].left = 5  # agent 1 plays longer
    obs, _, terminateds, truncateds, _ = env.step({0: 1, 1: 1})
    assert terminateds == {0: True, 1: False, "__all__": False} and truncateds["__all__"] is False
    obs, _, terminateds, truncateds, _ = env.step({1: 1})  # only agent 1 still acts
    assert list(obs) == [1] and terminateds["__all__"] is False
    env.envs[1].left = 1
    _, _, terminateds, truncateds, _ = env.step({1: 1})
    assert terminateds == {1: True, "__all__": True} and truncateds == {1: False, "__all__": False}


def test_all_is_truncated_only_when_every_agent_was_truncated():
    env = make_multi_agent(Countdown)({"num_agents": 2, "length": 1, "truncate": True})
    env.reset()
    _, _, terminateds, truncateds, _ = env.step({0: 0, 1: 0})
    assert terminateds["__all__"] is True and truncateds["__all__"] is True


def test_empty_action_dict_is_an_error():
    env = make_multi_agent(Countdown)({"num_agents": 2})
    env.reset()
    with pytest.raises(EnvError, match=r"got an empty action dict; expected an action for at least one of"):
        env.step({})


def test_render_puts_the_copies_side_by_side():
    env = make_multi_agent(lambda config: gym.make("CartPole-v1", render_mode="rgb_array"))({"num_agents": 2})
    env.reset(seed=0)
    frame = env.render()
    assert frame.shape == (800, 600, 3)  # 400x600 frames are wider than tall: stacked on top of each other


def test_ppo_trains_one_module_per_agent():
    cls = make_multi_agent("CartPole-v1")
    algo = (
        PPOConfig()
        .environment(cls, env_config={"num_agents": 2})
        .multi_agent(policies={"p0", "p1"}, policy_mapping_fn=lambda agent_id, episode, **kw: f"p{agent_id}")
        .training(train_batch_size_per_learner=256, minibatch_size=64, num_epochs=1)
        .debugging(seed=0)
        .build_algo()
    )
    result = algo.train()
    algo.stop()
    assert set(result["env_runners"]["module_episode_returns_mean"]) == {"p0", "p1"}
    assert set(result["learners"]) == {"p0", "p1", "__all_modules__"}
