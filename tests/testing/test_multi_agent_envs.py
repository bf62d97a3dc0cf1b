"""The scripted multi-agent envs follow their documented trajectories exactly."""

import gymnasium as gym
import numpy as np

from flywheel.testing.multi_agent_envs import JoinLeaveEnv, MultiCartPole, TurnBasedEnv


def test_turn_based_env_alternates_observers_and_rewards():
    env = TurnBasedEnv({"episode_len": 3})
    assert env.reset(seed=0) == ({"p0": np.array([0.0], np.float32)}, {"p0": {"t": 0}})
    steps = [env.step({"p0": 1}), env.step({"p1": 1}), env.step({"p0": 1})]
    assert [sorted(s[0]) for s in steps] == [["p1"], ["p0"], ["p0", "p1"]]
    assert [s[1] for s in steps] == [{"p0": 1.0}, {"p1": 2.0, "p0": -1.0}, {"p0": 3.0, "p1": -1.0}]
    assert [s[2]["__all__"] for s in steps] == [False, False, True]


def test_join_leave_env_schedule():
    env = JoinLeaveEnv()
    observations, _ = env.reset()
    seen = [sorted(observations)]
    for _ in range(5):
        observations, rewards, terminateds, truncateds, _ = env.step({a: 0 for a in env.agents})
        seen.append(sorted(observations))
    assert seen == [["a", "b"], ["a", "b"], ["a", "b"], ["a", "c"], ["a", "c"], ["a", "c"]]
    assert rewards == {"a": 5.0, "c": 25.0} and truncateds["__all__"] and not terminateds["__all__"]


def steps_to_topple(seed):
    env = gym.make("CartPole-v1")
    env.reset(seed=seed)
    steps, done = 0, False
    while not done:
        _, _, terminated, truncated, _ = env.step(0)
        steps, done = steps + 1, terminated or truncated
    return steps


def test_multi_cartpole_agents_finish_on_their_own():
    env = MultiCartPole({"num_agents": 2})
    env.reset(seed=3)  # agent i's CartPole gets seed 3 + i
    finished_at, t = {}, 0
    while env.agents:
        _, rewards, terminateds, truncateds, _ = env.step({a: 0 for a in env.agents})
        t += 1
        finished_at.update({a: t for a in rewards if terminateds.get(a) or truncateds.get(a)})
    assert finished_at == {"agent_0": steps_to_topple(3), "agent_1": steps_to_topple(4)}
    assert terminateds["__all__"] and not truncateds["__all__"]
    env.close()
