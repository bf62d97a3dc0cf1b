"""MultiAgentEnv spaces, the sync/async multi-agent vector envs and make_multi_agent_vector_env."""

import multiprocessing
import os
import re

import gymnasium as gym
import numpy as np
import pytest

from flywheel import MultiAgentEnv, MultiAgentEpisode
from flywheel.env.multi_agent_vector_env import (
    FINAL_INFOS,
    FINAL_OBS,
    MultiAgentAsyncVectorEnv,
    MultiAgentSyncVectorEnv,
    VectorMultiAgentEnv,
    make_multi_agent_vector_env,
)
from flywheel.errors import EnvError
from flywheel.testing.multi_agent_envs import MultiCartPole, TurnBasedEnv

ARM_OBS = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)


class TwoArms(MultiAgentEnv):
    """The env of API.md section 7, as written there."""

    def __init__(self, config=None):
        super().__init__()
        self.possible_agents = ["a0", "a1"]
        self.agents = list(self.possible_agents)
        self.observation_spaces = {a: gym.spaces.Box(-1.0, 1.0, (2,), np.float32) for a in self.agents}
        self.action_spaces = {a: gym.spaces.Discrete(2) for a in self.agents}

    def reset(self, *, seed=None, options=None):
        self.t = 0
        return {a: np.zeros(2, np.float32) for a in self.agents}, {}

    def step(self, action_dict):
        self.t += 1
        obs = {a: np.full(2, self.t / 10, np.float32) for a in action_dict}
        rewards = {a: float(act == 1) for a, act in action_dict.items()}
        done = self.t >= 10
        return obs, rewards, {"__all__": done}, {"__all__": False}, {}


class ClassAttributes(MultiAgentEnv):
    possible_agents = ["x"]
    observation_spaces = {"x": ARM_OBS}
    action_spaces = {"x": gym.spaces.Discrete(3)}

    def __init__(self, config=None):
        super().__init__()
        self.config = config


def with_workers(make):
    """`make()` (an async vector env) and the worker processes it started, in sub-env order."""
    before = set(multiprocessing.active_children())
    vector_env = make()
    workers = [process for process in multiprocessing.active_children() if process not in before]
    return vector_env, sorted(workers, key=lambda process: process.name)


class Raising(TurnBasedEnv):
    def step(self, action_dict):
        raise RuntimeError("motor stalled")


def arm(value):
    return np.full(2, value, np.float32)


# MultiAgentEnv


def test_spaces_per_agent_and_as_dict_space():
    env = TwoArms()
    assert env.get_observation_space("a1") == ARM_OBS
    assert env.get_action_space("a0") == gym.spaces.Discrete(2)
    assert env.observation_space == gym.spaces.Dict({"a0": ARM_OBS, "a1": ARM_OBS})
    assert env.action_space == gym.spaces.Dict({"a0": gym.spaces.Discrete(2), "a1": gym.spaces.Discrete(2)})


def test_class_attributes_survive_init_and_defaults_are_fresh():
    env = ClassAttributes({"k": 1})
    assert env.possible_agents == ["x"] and env.get_action_space("x") == gym.spaces.Discrete(3)
    assert env.agents == []
    bare_a, bare_b = MultiAgentEnv(), MultiAgentEnv()
    bare_a.possible_agents.append("z")
    assert bare_b.possible_agents == [] and bare_b.observation_spaces == {}


def test_setting_the_dict_space_sets_the_per_agent_spaces():
    env = MultiAgentEnv()
    env.observation_space = gym.spaces.Dict({"u": ARM_OBS})
    env.action_space = {"u": gym.spaces.Discrete(2)}
    assert env.observation_spaces == {"u": ARM_OBS} and env.action_spaces == {"u": gym.spaces.Discrete(2)}
    with pytest.raises(
        EnvError, match=r"MultiAgentEnv\.observation_space/action_space must be a gymnasium space"
    ):
        env.observation_space = [ARM_OBS]


def test_rllib_legacy_agent_ids_and_one_space_for_every_agent():
    """RLlib's older envs (e.g. its TwoStepGame) set `_agent_ids` after `super().__init__()` and one space
    for all agents; a Dict space that is not keyed by those ids is one shared observation (RLlib's reading)."""

    class Legacy(MultiAgentEnv):
        def __init__(self):
            super().__init__()
            self._agent_ids = {1, 0}
            self.observation_space = gym.spaces.Dict({"obs": ARM_OBS})
            self.action_space = gym.spaces.Discrete(2)

    env = Legacy()
    assert env.possible_agents == [0, 1] and env.get_action_space(1) == gym.spaces.Discrete(2)
    assert env.get_observation_space(0) == gym.spaces.Dict({"obs": ARM_OBS}) == env.observation_space
    with pytest.raises(EnvError, match=r"Agent 2 is not one of Legacy\.possible_agents \[0, 1\]"):
        env.get_action_space(2)


def test_unknown_agent_and_missing_space_errors_name_the_agent():
    env = TwoArms()
    with pytest.raises(
        EnvError,
        match=re.escape(
            "Agent 'a2' is not one of TwoArms.possible_agents ['a0', 'a1']. Fix: add it to possible_agents "
            "(with its spaces), or use one of those ids."
        ),
    ):
        env.get_observation_space("a2")
    del env.action_spaces["a1"]
    with pytest.raises(
        EnvError,
        match=re.escape(
            "TwoArms.action_spaces has no space for agent 'a1' (it has spaces for ['a0']). "
            "Fix: set self.action_spaces['a1'] = <a gymnasium space> in __init__."
        ),
    ):
        env.get_action_space("a1")


# Vector envs


def test_two_arms_steps_through_the_sync_vector_env_with_same_step_autoreset():
    vector_env = make_multi_agent_vector_env(TwoArms, num_envs=2)
    assert isinstance(vector_env, MultiAgentSyncVectorEnv) and vector_env.num_envs == 2
    assert vector_env.possible_agents == ["a0", "a1"] and vector_env.get_observation_space("a0") == ARM_OBS
    observations, infos = vector_env.reset(seed=0)
    assert [sorted(o) for o in observations] == [["a0", "a1"]] * 2 and infos == [{}, {}]
    for _ in range(9):
        observations, rewards, terminateds, truncateds, infos = vector_env.step([{"a0": 1, "a1": 0}] * 2)
    assert observations[0]["a0"].tolist() == arm(0.9).tolist() and rewards == [{"a0": 1.0, "a1": 0.0}] * 2
    assert terminateds == [{"__all__": False}] * 2 and infos == [{}, {}]
    observations, rewards, terminateds, truncateds, infos = vector_env.step([{"a0": 1, "a1": 0}, {"a1": 1}])
    assert terminateds == [{"__all__": True}] * 2 and truncateds == [{"__all__": False}] * 2
    assert rewards == [{"a0": 1.0, "a1": 0.0}, {"a1": 1.0}]
    assert [o["a0"].tolist() for o in observations] == [[0.0, 0.0]] * 2  # the new episodes' first
    assert sorted(infos[1][FINAL_OBS]) == ["a1"] and infos[1][FINAL_OBS]["a1"].tolist() == arm(1.0).tolist()
    assert infos[0][FINAL_INFOS] == {} and vector_env.get_attr("t") == [0, 0]
    vector_env.close()


def test_two_arms_episodes_recorded_from_the_vector_env():
    """A runner-like loop: one MultiAgentEpisode per sub-env, final observations from the infos."""
    vector_env = make_multi_agent_vector_env(TwoArms, num_envs=2)
    spaces = {"observation_space": vector_env.observation_spaces, "action_space": vector_env.action_spaces}
    observations, infos = vector_env.reset(seed=0)
    episodes = [MultiAgentEpisode(**spaces) for _ in range(2)]
    for episode, obs in zip(episodes, observations):
        episode.add_env_reset(observations=obs)
    done = []
    for _ in range(12):
        actions = [
            {a: int(i == 0 or a == "a1") for a in e.get_agents_to_act()} for i, e in enumerate(episodes)
        ]
        observations, rewards, terminateds, truncateds, infos = vector_env.step(actions)
        for i, episode in enumerate(episodes):
            ended = terminateds[i]["__all__"] or truncateds[i]["__all__"]
            obs = infos[i][FINAL_OBS] if ended else observations[i]
            episode.add_env_step(
                obs, actions[i], rewards[i], terminateds=terminateds[i], truncateds=truncateds[i]
            )
            if ended:
                done.append(episode)
                episodes[i] = MultiAgentEpisode(**spaces)
                episodes[i].add_env_reset(observations=observations[i])
    vector_env.close()
    assert [len(e) for e in done] == [10, 10] and [len(e) for e in episodes] == [2, 2]
    assert [e.get_return() for e in done] == [20.0, 10.0]
    a0 = done[0].agent_episodes["a0"]
    assert [round(float(o[0]), 1) for o in a0.get_observations()] == [
        0.0,
        0.1,
        0.2,
        0.3,
        0.4,
        0.5,
        0.6,
        0.7,
        0.8,
        0.9,
        1.0,
    ]
    assert a0.is_terminated and done[1].get_rewards(-1) == {"a0": 0.0, "a1": 1.0}


@pytest.mark.parametrize("vectorize_mode", ["sync", "async"])
def test_sub_env_seeds_are_seed_plus_index(vectorize_mode):
    vector_env = make_multi_agent_vector_env(MultiCartPole, num_envs=2, vectorize_mode=vectorize_mode)
    observations, _ = vector_env.reset(seed=5)
    vector_env.close()
    expected = [gym.make("CartPole-v1").reset(seed=s)[0] for s in (5, 6, 6, 7)]
    got = [
        observations[0]["agent_0"],
        observations[0]["agent_1"],
        observations[1]["agent_0"],
        observations[1]["agent_1"],
    ]
    assert all(np.array_equal(g, e) for g, e in zip(got, expected))


@pytest.mark.parametrize("vectorize_mode", ["sync", "async"])
def test_both_vector_envs_are_rllibs_vector_multi_agent_env_and_unwrap_to_themselves(vectorize_mode):
    vector_env = make_multi_agent_vector_env(MultiCartPole, num_envs=2, vectorize_mode=vectorize_mode)
    vector_env.close()
    assert isinstance(vector_env, VectorMultiAgentEnv) and vector_env.unwrapped is vector_env
    assert not isinstance(MultiCartPole(), VectorMultiAgentEnv)


def test_async_matches_sync_step_for_step():
    sync = make_multi_agent_vector_env(TurnBasedEnv, {"episode_len": 3}, num_envs=2)
    parallel = make_multi_agent_vector_env(
        TurnBasedEnv, {"episode_len": 3}, num_envs=2, vectorize_mode="async"
    )
    assert isinstance(parallel, MultiAgentAsyncVectorEnv) and parallel.possible_agents == ["p0", "p1"]
    results = []
    for vector_env in (sync, parallel):
        trace = [vector_env.reset(seed=1)]
        for mover in ("p0", "p1", "p0", "p1"):
            trace.append(vector_env.step([{mover: 1}, {mover: 0}]))
        results.append(repr(trace))
        vector_env.close()
    assert results[0] == results[1]
    assert (
        "'__final_obs__': {'p0': array([3.], dtype=float32), 'p1': array([3.], dtype=float32)}" in results[1]
    )


def test_async_env_error_names_the_sub_env_and_keeps_the_worker():
    vector_env, workers = with_workers(
        lambda: make_multi_agent_vector_env(Raising, num_envs=2, vectorize_mode="async")
    )
    assert [worker.name for worker in workers] == ["flywheel-ma-env-0", "flywheel-ma-env-1"]
    vector_env.reset()
    with pytest.raises(
        EnvError,
        match=r"Sub-env 0 \(in its own process\) raised during step\(\):\n(.|\n)*RuntimeError: motor stalled",
    ):
        vector_env.step([{"p0": 1}, {"p0": 1}])
    assert [(list(obs), infos) for obs, infos in vector_env.call("reset")] == [(["p0"], {"p0": {"t": 0}})] * 2
    assert vector_env.get_attr("t") == [0, 0]
    assert all(worker.is_alive() for worker in workers)
    vector_env.close()
    vector_env.close()
    assert not any(worker.is_alive() for worker in workers)


def test_async_creation_failure_and_a_dead_worker_raise_env_errors():
    def creator(cfg):
        if cfg.vector_index == 1:
            raise ValueError("no such map")
        return TurnBasedEnv(cfg)

    with pytest.raises(
        EnvError,
        match=r"Sub-env 1 \(in its own process\) raised during creating the env:\n(.|\n)*no such map",
    ):
        make_multi_agent_vector_env(creator, num_envs=2, vectorize_mode="async")
    vector_env, workers = with_workers(
        lambda: make_multi_agent_vector_env(TurnBasedEnv, num_envs=2, vectorize_mode="async")
    )
    assert workers[1].name == "flywheel-ma-env-1"
    os.kill(workers[1].pid, 9)
    workers[1].join()
    with pytest.raises(
        EnvError,
        match=re.escape(
            "Sub-env 1 (in its own process) raised during reset():\nits process ended unexpectedly (exit code -9)"
        ),
    ):
        vector_env.reset()
    vector_env.close()


def test_sub_envs_get_their_env_context():
    vector_env = make_multi_agent_vector_env(
        ClassAttributes, {"k": 2}, num_envs=3, worker_index=1, num_workers=4
    )
    configs = vector_env.get_attr("config")
    assert [c.vector_index for c in configs] == [0, 1, 2] and {c.worker_index for c in configs} == {1}
    assert configs[2]["k"] == 2 and configs[2].num_workers == 4


def test_missing_all_in_step_reads_as_false_as_in_rllib():
    class NoAll(MultiAgentEnv):
        def __init__(self, config=None):
            super().__init__()
            self.possible_agents = self.agents = ["a"]
            self.observation_spaces = {"a": gym.spaces.Discrete(2)}
            self.action_spaces = {"a": gym.spaces.Discrete(2)}
            self.t = 0

        def reset(self, *, seed=None, options=None):
            self.t = 0
            return {"a": 0}, {}

        def step(self, action_dict):
            self.t += 1
            return {"a": 1}, {"a": 1.0}, {"__all__": self.t == 2}, {}, {}

    vector_env = make_multi_agent_vector_env(NoAll, {}, num_envs=1)
    vector_env.reset()
    _, _, terminateds, truncateds, infos = vector_env.step([{"a": 1}])
    assert terminateds == [{"__all__": False}] and truncateds == [{}] and "__final_obs__" not in infos[0]
    _, _, terminateds, _, infos = vector_env.step([{"a": 1}])
    assert terminateds == [{"__all__": True}] and infos[0]["__final_obs__"] == {"a": 1}


def test_make_rejects_bad_modes_counts_and_envs():
    with pytest.raises(EnvError, match=r"Unknown vectorize mode 'vector_entry_point' for a multi-agent env"):
        make_multi_agent_vector_env(TwoArms, vectorize_mode="vector_entry_point")
    with pytest.raises(EnvError, match=r"num_envs must be an int >= 1, got 0"):
        make_multi_agent_vector_env(TwoArms, num_envs=0)
    with pytest.raises(
        EnvError,
        match=re.escape(
            "The env creator gymnasium.make('CartPole-v1') returned TimeLimit, expected a flywheel MultiAgentEnv."
        ),
    ):
        make_multi_agent_vector_env("CartPole-v1")


def test_make_hints_at_the_pettingzoo_adapter_and_wraps_creator_errors():
    class LooksLikePettingZoo:
        possible_agents = ["x"]

    with pytest.raises(EnvError, match=r"It looks like a PettingZoo ParallelEnv: wrap it"):
        make_multi_agent_vector_env(lambda cfg: LooksLikePettingZoo())

    def failing(cfg):
        raise KeyError("size")

    with pytest.raises(
        EnvError,
        match=r"Creating multi-agent sub-env 0 on worker 0 with .*failing\(EnvContext\(\{\}.* raised KeyError",
    ) as error:
        make_multi_agent_vector_env(failing)
    assert isinstance(error.value.__cause__, KeyError)
