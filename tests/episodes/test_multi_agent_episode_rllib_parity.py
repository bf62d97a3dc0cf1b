"""RLlib 2.60's documented `MultiAgentEpisode` behaviour, one test per RLlib unit test
(rllib/env/tests/test_multi_agent_episode.py), written for flywheel with public behaviour only
(RLlib's tests also read private caches such as ``_hanging_actions_end``; here the getters show
the same steps).

Agent timesteps follow RLlib 2.60's source: an episode built from data starts each agent at
``agent_t_started`` (default 0) at the chunk start, so steps in the lookback have negative
timesteps. Documented differences (docs/porting.md), each pinned where RLlib's test expects
otherwise: `slice` starts each agent at its last observation at or before the slice start (RLlib:
the first inside, losing the step across the start); `cut` keeps an agent whose step is in flight
(RLlib drops it when its last observation is the chunk's first).
"""

import copy

import gymnasium as gym
import numpy as np
import pytest

from flywheel import MultiAgentEnv
from flywheel.episodes import MultiAgentEpisode

S = MultiAgentEpisode.SKIP_ENV_TS_TAG


class RandomAgentsEnv(MultiAgentEnv):
    """RLlib's test env: random agents of ten observe each step; agent_1 ends at t=50, agent_5 at
    t=100, all are truncated at t=200. Extra rewards go to waiting agents only (flywheel's contract)."""

    def __init__(self):
        super().__init__()
        self.possible_agents = [f"agent_{i}" for i in range(10)]
        self.observation_spaces = {a: gym.spaces.Discrete(201) for a in self.possible_agents}
        self.action_spaces = {a: gym.spaces.Discrete(200) for a in self.possible_agents}

    def reset(self, *, seed=None, options=None):
        self.rng, self.t = np.random.default_rng(seed), 0
        self.alive, self.waiting = set(self.possible_agents), set()
        first = self._some(self.alive)
        return {a: 0 for a in first}, {a: {} for a in first}

    def _some(self, agents):
        agents = sorted(agents)
        return set(self.rng.choice(agents, self.rng.integers(1, len(agents) + 1), replace=False).tolist())

    def step(self, action_dict):
        self.t += 1
        self.waiting |= set(action_dict)
        stepping = self.alive if self.t >= 200 else self._some(self.alive)
        ending = {50: "agent_1", 100: "agent_5"}.get(self.t)
        stepping |= {ending} if ending else set()
        rewards = {a: 1.0 for a in stepping | (self._some(self.waiting) if self.waiting else set())}
        rewards = {a: r for a, r in rewards.items() if a in self.waiting}
        self.waiting -= stepping
        terminateds = {"__all__": False, **({ending: True} if ending else {})}
        self.alive -= {ending}
        truncateds = {"__all__": self.t >= 200, **dict.fromkeys(stepping, self.t >= 200)}
        return {a: self.t for a in stepping}, rewards, terminateds, truncateds, {a: {} for a in stepping}


def play(episode, env, steps, *, reset=True, seed=0):
    if reset:
        obs, infos = env.reset(seed=seed)
        episode.add_env_reset(observations=obs, infos=infos)
    for _ in range(steps):
        actions = {a: env.t + 1 for a in episode.get_agents_to_act()}
        obs, rewards, terminateds, truncateds, infos = env.step(actions)
        extras = {a: {"extra": 10.5} for a in actions}
        episode.add_env_step(obs, actions, rewards, infos, terminateds=terminateds, truncateds=truncateds,
                             extra_model_outputs=extras)  # fmt: skip
    return episode


def simple(observations, len_lookback_buffer=0):
    """RLlib's `_create_simple_episode`: every observing agent acts its observation; reward = obs / 10."""
    return MultiAgentEpisode(
        observations=observations,
        actions=observations[:-1],
        rewards=[{a: o / 10 for a, o in step.items()} for step in observations[:-1]],
        len_lookback_buffer=len_lookback_buffer,
    )


def mock_records():
    """RLlib's `_mock_multi_agent_records`: agent_2 waits after env step 0, agents 1 and 3 after step 1."""
    observations = [
        {"agent_1": 0, "agent_2": 0, "agent_3": 0},
        {"agent_1": 1, "agent_3": 1, "agent_4": 1},
        {"agent_2": 2, "agent_4": 2},
    ]
    actions = [{"agent_1": 0, "agent_2": 0, "agent_3": 0}, {"agent_1": 1, "agent_3": 1, "agent_4": 1}]
    rewards = [
        {"agent_1": 0.5, "agent_2": 0.6, "agent_3": 0.7},
        {"agent_1": 1.1, "agent_3": 1.2, "agent_4": 1.3},
    ]
    infos = [
        {"agent_1": {"a1_i0": 1}, "agent_2": {"a2_i0": 2}, "agent_3": {"a3_i0": 3}},
        {"agent_1": {"a1_i1": 1.1}, "agent_3": {"a3_i1": 3.1}, "agent_4": {"a4_i1": 4.1}},
        {"agent_2": {"a2_i2": 2.2}, "agent_4": {"a4_i2": 4.2}},
    ]
    flags = {"__all__": False, "agent_1": False, "agent_3": False, "agent_4": False}
    return dict(observations=observations, actions=actions, rewards=rewards, infos=infos,
                terminateds=flags, truncateds=dict(flags))  # fmt: skip


def mocked(**kwargs):
    return MultiAgentEpisode(**mock_records(), **kwargs)


def rounded(data):
    if isinstance(data, dict):
        return {k: rounded(v) for k, v in data.items()}
    if isinstance(data, list):
        return [rounded(v) for v in data]
    return round(float(data), 6) if isinstance(data, float | np.floating) else data


def test_init():
    assert (MultiAgentEpisode().env_t_started, MultiAgentEpisode().env_t) == (0, 0)
    assert (MultiAgentEpisode(env_t_started=10).env_t_started, MultiAgentEpisode(env_t_started=10).env_t) == (
        10,
        10,
    )
    episode = MultiAgentEpisode(
        observations=[{"a0": 0, "a1": 0}, {"a1": 1}, {"a1": 2}, {"a1": 3}],
        actions=[{"a0": 0, "a1": 0}, {"a1": 1}, {"a1": 2}],
        rewards=[{"a0": 0.1, "a1": 0.1}, {"a1": 0.2}, {"a1": 0.3}],
    )  # All in the lookback ("auto"); a0's step from env step 0 is still in flight.
    a0, a1 = episode.agent_episodes["a0"], episode.agent_episodes["a1"]
    assert (a0.observations.data, a0.actions.data, a0.rewards.data) == ([0], [], [])
    assert a1.observations.data == [0, 1, 2, 3] and a1.actions.data == [0, 1, 2]
    assert a1.rewards.data == [0.1, 0.2, 0.3]
    assert episode.get_actions(-3) == {"a0": 0, "a1": 0} and episode.get_rewards(-3) == {"a0": 0.1, "a1": 0.1}
    assert episode.env_t_to_agent_t["a0"].data == [0, S, S, S]
    # Agent timesteps count from 0 at the chunk start (RLlib 2.60's agent_t_started default).
    assert episode.env_t_to_agent_t["a1"].data == [-3, -2, -1, 0]
    assert episode.env_t_to_agent_t["a0"].lookback == episode.env_t_to_agent_t["a1"].lookback == 3
    episode = MultiAgentEpisode(
        observations=[{"a0": 0}, {"a1": 1}, {"a0": 2, "a1": 2}, {"a1": 3}, {"a1": 4}],
        actions=[{"a0": 0}, {"a1": 1}, {"a0": 2, "a1": 2}, {"a1": 3}],
        rewards=[{"a0": 0.1}, {"a1": 0.2}, {"a0": 0.3, "a1": 0.3}, {"a1": 0.4}],
    )  # a0 does not observe right after the reset.
    a0, a1 = episode.agent_episodes["a0"], episode.agent_episodes["a1"]
    assert (a0.observations.data, a0.actions.data, a0.rewards.data) == ([0, 2], [0], [0.1])
    assert a1.observations.data == [1, 2, 3, 4] and a1.actions.data == [1, 2, 3]
    assert a1.rewards.data == [0.2, 0.3, 0.4]
    assert episode.get_actions(-2) == {"a0": 2, "a1": 2} and episode.get_rewards(-2) == {"a0": 0.3, "a1": 0.3}
    assert [m.data for m in episode.env_t_to_agent_t.values()] == [[-1, S, 0, S, S], [S, -3, -2, -1, 0]]


def test_init_from_env_data_with_final_flags():
    env = RandomAgentsEnv()
    obs, info = env.reset(seed=0)
    observations, actions, rewards, infos, terminateds, truncateds = [obs], [], [], [info], {}, {}
    for _ in range(100):
        action = {a: env.t + 1 for a in obs if a in env.alive}
        obs, reward, terminated, truncated, info = env.step(action)
        for data, item in ((observations, obs), (actions, action), (rewards, reward), (infos, info)):
            data.append(item)
        terminateds.update(terminated), truncateds.update(truncated)
    data = dict(observations=observations, actions=actions, rewards=rewards, infos=infos)
    episode = MultiAgentEpisode(**data, terminateds=terminateds, truncateds=truncateds, env_t_started=100)
    assert episode.env_t == episode.env_t_started == 100 and len(episode) == 0
    done = {a for a, e in episode.agent_episodes.items() if e.is_done}
    assert done == {"agent_1", "agent_5"} and all(episode.agent_episodes[a].is_terminated for a in done)
    for agent_id, mapping in episode.env_t_to_agent_t.items():  # marks exactly when each agent observed
        assert [t != S for t in mapping.data] == [agent_id in o for o in observations]
    for sa_episode in episode.agent_episodes.values():  # Everything is lookback: the newest observation is 0.
        assert (len(sa_episode), len(sa_episode.observations), sa_episode.t_started) == (0, 1, 0)


def test_add_env_reset():
    env = RandomAgentsEnv()
    episode = MultiAgentEpisode(observation_space=env.observation_spaces, action_space=env.action_spaces)
    obs, infos = env.reset(seed=0)
    episode.add_env_reset(observations=obs, infos=infos)
    assert episode.env_t == episode.env_t_started == 0 and episode.agent_ids == set(obs)
    assert all(
        episode.env_t_to_agent_t[a].data == [0] and len(episode.agent_episodes[a].infos) == 1 for a in obs
    )


def test_add_env_step():
    env = RandomAgentsEnv()
    episode = play(MultiAgentEpisode(), env, 100, seed=10)
    assert episode.env_t == 100 and not episode.is_done
    assert episode.agent_episodes["agent_1"].is_terminated and episode.agent_episodes["agent_5"].is_terminated
    # Their newest agent steps are their final ones (nothing in flight).
    done = episode.get_actions(-1, ["agent_1", "agent_5"], env_steps=False)
    assert done == {a: episode.agent_episodes[a].get_actions(-1) for a in ("agent_1", "agent_5")}
    play(episode, env, 100, reset=False)
    assert episode.is_truncated and all(e.is_done for e in episode.agent_episodes.values())
    assert (
        episode.agent_episodes["agent_1"].observations[-1]
        == 50
        >= episode.agent_episodes["agent_1"].actions[-1]
    )
    episode = mocked()
    episode.add_env_step(
        {"agent_1": 3, "agent_2": 3},
        {"agent_2": 3, "agent_4": 3},
        {"agent_1": 1.0, "agent_2": 1.0, "agent_3": 1.0},
    )
    assert episode.get_actions(-1) == {"agent_2": 3, "agent_4": 3}  # both in flight now
    assert episode.get_rewards(-2) == {"agent_1": 2.1, "agent_3": 2.2, "agent_4": 1.3}  # agent_3 still waits
    # agent_5 never observed: its reward is kept for its next step (RLlib: in its begin cache).
    before = episode.get_return(include_hanging_rewards=True)
    episode.add_env_step({"agent_1": 4}, {"agent_1": 4}, {"agent_5": 1.0})
    assert episode.get_return(include_hanging_rewards=True) == pytest.approx(before + 1.0)


def test_get_observations():
    episode = mocked()
    assert episode.get_observations(-1) == {"agent_2": 2, "agent_4": 2}
    assert episode.get_observations([-1, -2]) == {
        "agent_1": [1],
        "agent_2": [2],
        "agent_3": [1],
        "agent_4": [2, 1],
    }
    assert episode.get_observations(slice(-2, None)) == {
        "agent_1": [1],
        "agent_2": [2],
        "agent_3": [1],
        "agent_4": [1, 2],
    }
    assert rounded(episode.get_observations(slice(-5, None), fill=-10)) == {
        "agent_1": [-10, -10, 0, 1, -10], "agent_2": [-10, -10, 0, -10, 2],
        "agent_3": [-10, -10, 0, 1, -10], "agent_4": [-10, -10, -10, 1, 2],
    }  # fmt: skip
    assert episode.get_observations(slice(100, 102), fill=9.9) == {
        f"agent_{i}": [9.9, 9.9] for i in range(1, 5)
    }
    back = {"neg_index_as_lookback": True}
    assert episode.get_observations([-2, -1], fill=-10, **back) == {
        "agent_1": [0, 1],
        "agent_2": [0, -10],
        "agent_3": [0, 1],
        "agent_4": [-10, 1],
    }
    assert episode.get_observations([-2, -1], **back) == {
        "agent_1": [0, 1],
        "agent_2": [0],
        "agent_3": [0, 1],
        "agent_4": [1],
    }
    assert episode.get_observations(-1, env_steps=False) == {
        "agent_1": 1,
        "agent_2": 2,
        "agent_3": 1,
        "agent_4": 2,
    }
    for ids in ("agent_1", ["agent_1"], ("agent_1",), {"agent_1"}):
        assert episode.get_observations(-1, ids, env_steps=False) == {"agent_1": 1}
    assert episode.get_observations([-1, -2], {"agent_4"}) == {"agent_4": [2, 1]}
    assert episode.get_observations([-1, -2], env_steps=False) == {
        "agent_1": [1, 0],
        "agent_2": [2, 0],
        "agent_3": [1, 0],
        "agent_4": [2, 1],
    }
    assert episode.get_observations(return_list=True) == [{"agent_2": 2, "agent_4": 2}]
    with pytest.raises(ValueError, match=r"get_observations\(return_list=True\) needs env_steps=True"):
        episode.get_observations(env_steps=False, return_list=True)
    assert episode.get_observations([-1, -2], return_list=True) == [
        {"agent_2": 2, "agent_4": 2},
        {"agent_1": 1, "agent_3": 1, "agent_4": 1},
    ]
    assert episode.get_observations(slice(-1, 1), return_list=True, fill=-8, **back) == [
        {"agent_1": 1, "agent_2": -8, "agent_3": 1, "agent_4": 1},
        {"agent_1": -8, "agent_2": 2, "agent_3": -8, "agent_4": 2},
    ]
    assert episode.get_observations(env_steps=False) == {
        "agent_1": [1],
        "agent_2": [2],
        "agent_3": [1],
        "agent_4": [2],
    }
    fresh = MultiAgentEpisode()
    fresh.add_env_reset(observations=mock_records()["observations"][0])
    assert (
        fresh.get_observations()
        == fresh.get_observations(env_steps=False)
        == {a: [0] for a in ("agent_1", "agent_2", "agent_3")}
    )
    assert fresh.get_observations(return_list=True) == [{"agent_1": 0, "agent_2": 0, "agent_3": 0}]


def test_get_infos():
    episode = mocked()
    infos = mock_records()["infos"]
    assert episode.get_infos(-1) == infos[-1]
    assert episode.get_infos([-1, -2]) == {
        "agent_1": [{"a1_i1": 1.1}],
        "agent_2": [{"a2_i2": 2.2}],
        "agent_3": [{"a3_i1": 3.1}],
        "agent_4": [{"a4_i2": 4.2}, {"a4_i1": 4.1}],
    }
    filled = episode.get_infos(slice(-5, None), fill={"4": "2"})
    assert filled["agent_2"] == [{"4": "2"}, {"4": "2"}, {"a2_i0": 2}, {"4": "2"}, {"a2_i2": 2.2}]
    assert episode.get_infos(slice(100, 102), fill=9.9)["agent_3"] == [9.9, 9.9]
    assert episode.get_infos([-2, -1], fill=-10, neg_index_as_lookback=True)["agent_4"] == [
        -10,
        {"a4_i1": 4.1},
    ]
    assert episode.get_infos(-1, env_steps=False) == {
        "agent_1": {"a1_i1": 1.1},
        "agent_2": {"a2_i2": 2.2},
        "agent_3": {"a3_i1": 3.1},
        "agent_4": {"a4_i2": 4.2},
    }
    assert episode.get_infos([-1, -2], {"agent_4"}) == {"agent_4": [{"a4_i2": 4.2}, {"a4_i1": 4.1}]}
    assert episode.get_infos([-1, -2], return_list=True)[1] == {
        "agent_1": {"a1_i1": 1.1},
        "agent_3": {"a3_i1": 3.1},
        "agent_4": {"a4_i1": 4.1},
    }
    with pytest.raises(ValueError):
        episode.get_infos(env_steps=False, return_list=True)
    assert episode.get_infos(env_steps=False)["agent_2"] == [{"a2_i2": 2.2}]


def test_get_actions():
    observations = [{"a0": 0, "a1": 0}, {"a0": 1, "a1": 1}, {"a1": 2}, {"a1": 3}, {"a1": 4}]
    actions = [{"a0": 0, "a1": 0}, {"a0": 1, "a1": 1}, {"a1": 2}, {"a1": 3}]
    episode = MultiAgentEpisode(
        observations=observations, actions=actions, rewards=[{a: 1 for a in s} for s in actions]
    )
    # a0's action at env step -3 is in flight (a0 never observes again).
    assert [episode.get_actions(i) for i in (-1, -2, -3, -4)] == actions[::-1]
    for i in (0, 1, 4, -5, -9):
        with pytest.raises(
            IndexError, match=f"Env-step index {i} is out of range: the episode chunk has 0 env steps"
        ):
            episode.get_actions(i)
    assert [episode.get_actions(i) for i in ([-1, -2], [-2, -3], [-3, -4])] == [
        {"a1": [3, 2]},
        {"a0": [1], "a1": [2, 1]},
        {"a0": [1, 0], "a1": [1, 0]},
    ]
    assert episode.get_actions(slice(-2, -4, -1)) == {"a0": [1], "a1": [2, 1]}  # backwards
    assert episode.get_actions(slice(-3, -6, -1), fill="skip") == {"a0": [1, 0, "skip"], "a1": [1, 0, "skip"]}
    assert episode.get_actions(slice(1, -6, -1), fill="s") == {
        "a0": ["s"] * 4 + [1, 0, "s"],
        "a1": ["s", "s", 3, 2, 1, 0, "s"],
    }
    assert episode.get_actions(slice(0, -5, -1), fill="s") == {
        "a0": ["s"] * 3 + [1, 0],
        "a1": ["s", 3, 2, 1, 0],
    }
    assert episode.get_actions(-1, env_steps=False) == {"a0": 1, "a1": 3}  # a0's newest step is in flight
    assert episode.get_actions(-2, env_steps=False) == {"a0": 0, "a1": 2}
    assert episode.get_actions(-3, env_steps=False, fill="skip") == {"a0": "skip", "a1": 1}
    assert episode.get_actions(-4, "a1", env_steps=False) == {"a1": 0}
    episode.add_env_step({"a0": 5, "a1": 5}, {"a1": 4}, {"a1": 4})
    assert (episode.get_actions(0), episode.get_actions(-2)) == ({"a1": 4}, {"a1": 3})
    episode.add_env_step({"a1": 6}, {"a0": 5, "a1": 5}, {"a0": 5, "a1": 5})
    assert (episode.get_actions(0), episode.get_actions(1)) == ({"a1": 4}, {"a0": 5, "a1": 5})
    hanging = MultiAgentEpisode(
        observations=[{"a0": 0, "a1": 0}, {"a0": 0, "a1": 1}, {"a0": 2}],
        actions=[{"a0": 0, "a1": 0}, {"a0": 1, "a1": 1}],
        rewards=[{"a0": 0.0, "a1": 0.0}, {"a0": 0.1, "a1": 0.1}],
        len_lookback_buffer=0,
    )
    newest, first = {"a0": 1, "a1": 1}, {"a0": 0, "a1": 0}  # a1's newest action is in flight
    assert [hanging.get_actions(i) for i in (-1, -2, 0, 1)] == [newest, first, first, newest]
    for i in (2, -3):
        with pytest.raises(IndexError):
            hanging.get_actions(i)
    ended = MultiAgentEpisode()
    ended.add_env_reset(observations={"a0": 0, "a1": 0})
    ended.add_env_step(
        {"a0": 1, "a1": 1}, {"a0": 0, "a1": 0}, {"a0": 0.0, "a1": 0.0}, terminateds={"a1": True}
    )
    ended.add_env_step({"a0": 2}, {"a0": 1}, {"a0": 1.0})
    assert ended.get_actions(-1) == {"a0": 1}


def test_get_actions_of_mock_records():
    episode = mocked()
    assert episode.get_actions(-1) == {"agent_1": 1, "agent_3": 1, "agent_4": 1}
    assert episode.get_actions([-1, -2]) == {
        "agent_1": [1, 0],
        "agent_2": [0],
        "agent_3": [1, 0],
        "agent_4": [1],
    }
    assert episode.get_actions(slice(-5, None), fill=-10)["agent_2"] == [-10, -10, -10, 0, -10]
    assert episode.get_actions([-2, -1], fill=-10, neg_index_as_lookback=True)["agent_4"] == [-10, 1]
    assert episode.get_actions(-1, env_steps=False) == {
        "agent_1": 1,
        "agent_2": 0,
        "agent_3": 1,
        "agent_4": 1,
    }
    assert episode.get_actions(-2, "agent_4") == {} and episode.get_actions([-1, -2], "agent_4") == {
        "agent_4": [1]
    }
    with pytest.raises(IndexError):  # agent_4 acted twice, the first time still waits: no agent step -2
        episode.get_actions([-1, -2], "agent_4", env_steps=False)
    assert episode.get_actions([-2], "agent_4", env_steps=False, fill=-10) == {"agent_4": [-10]}
    assert episode.get_actions(return_list=True) == [] and episode.get_actions(env_steps=False) == {}
    assert episode.get_actions([-1, -2], return_list=True) == mock_records()["actions"][::-1]
    assert episode.get_actions(slice(-1, 1), return_list=True, fill=-8, neg_index_as_lookback=True) == [
        {"agent_1": 1, "agent_2": -8, "agent_3": 1, "agent_4": 1}, dict.fromkeys(["agent_1", "agent_2", "agent_3", "agent_4"], -8)
    ]  # fmt: skip
    fresh = MultiAgentEpisode()
    fresh.add_env_reset(observations=mock_records()["observations"][0])
    assert (
        fresh.get_actions() == {}
        and fresh.get_actions(return_list=True) == []
        and fresh.get_actions(env_steps=False) == {}
    )


def test_get_rewards():
    observations = [{"a0": 0, "a1": 0}, {"a0": 1, "a1": 1}, {"a1": 2}, {"a1": 3}, {"a1": 4}]
    rewards = [{"a0": 0.0, "a1": 0.0}, {"a0": 1.0, "a1": 1.0}, {"a1": 2.0}, {"a1": 3.0}]
    episode = MultiAgentEpisode(observations=observations, actions=observations[:-1], rewards=rewards)
    assert [episode.get_rewards(i) for i in (-1, -2, -3, -4)] == rewards[::-1]
    assert episode.get_rewards(slice(-3, -6, -1), fill=-10.0) == {
        "a0": [1.0, 0.0, -10.0],
        "a1": [1.0, 0.0, -10.0],
    }
    assert episode.get_rewards(slice(1, -6, -1), fill=-1) == {
        "a0": [-1] * 4 + [1, 0, -1],
        "a1": [-1, -1, 3, 2, 1, 0, -1],
    }
    assert episode.get_rewards(-1, env_steps=False) == {"a0": 1.0, "a1": 3.0}
    assert episode.get_rewards(-4, env_steps=False, fill=-5) == {"a0": -5, "a1": 0.0}
    episode = mocked()
    assert rounded(episode.get_rewards(-1)) == {"agent_1": 1.1, "agent_3": 1.2, "agent_4": 1.3}
    assert rounded(episode.get_rewards([-1, -2])) == {
        "agent_1": [1.1, 0.5],
        "agent_2": [0.6],
        "agent_3": [1.2, 0.7],
        "agent_4": [1.3],
    }
    assert rounded(episode.get_rewards(slice(-5, None), fill=-10)["agent_3"]) == [-10, -10, -10, 0.7, 1.2]
    assert rounded(episode.get_rewards(-1, env_steps=False)) == {
        "agent_1": 1.1,
        "agent_2": 0.6,
        "agent_3": 1.2,
        "agent_4": 1.3,
    }
    assert rounded(episode.get_rewards([-1, -2], {"agent_3"})) == {"agent_3": [1.2, 0.7]}
    assert episode.get_rewards(return_list=True) == [] and episode.get_rewards(env_steps=False) == {}
    with pytest.raises(IndexError):
        episode.get_rewards([-1, -2], "agent_4", env_steps=False)


def test_cut():
    successor = simple([{"a0": 0, "a1": 0}, {"a0": 1, "a1": 1}, {"a0": 2, "a1": 2}]).cut()
    assert (len(successor), successor.env_t_started, successor.env_t) == (0, 2, 2)
    assert {a: m.get() for a, m in successor.env_t_to_agent_t.items()} == {"a0": [2], "a1": [2]}
    assert [
        (len(e), e.t_started, e.t, e.get_observations(), e.get_actions())
        for e in successor.agent_episodes.values()
    ] == [(0, 2, 2, [2], [])] * 2
    episode = simple([{"a0": i, "a1": i} for i in range(4)], len_lookback_buffer=2)
    for n in (0, 2):
        successor = episode.cut(len_lookback_buffer=n)
        assert (len(successor), successor.env_t_started, successor.env_t) == (0, 1, 1)
        assert all(
            m.data == [-1, 0, 1][2 - n :] and m.lookback == n for m in successor.env_t_to_agent_t.values()
        )
        assert [(e.t_started, e.t, e.get_observations()) for e in successor.agent_episodes.values()] == [
            (1, 1, [3])
        ] * 2


def test_cut_keeps_agents_that_wait():
    episode = MultiAgentEpisode(
        observations=[{"a0": 0, "a1": 0}, {"a0": 1}, {"a0": 2}, {"a0": 3}],
        actions=[{"a0": 0, "a1": 0}, {"a0": 1}, {"a0": 2}],
        rewards=[{"a0": 0.0, "a1": 0.0}, {"a0": 0.1, "a1": 0.1}, {"a0": 0.2, "a1": 0.2}],
        len_lookback_buffer=0,
    )
    successor = episode.cut()
    assert successor.agent_ids == {"a0", "a1"}  # RLlib drops a1 here (its step from env step 0 is lost)
    assert successor.env_t_to_agent_t["a1"].lookback == 3 and successor.get_observations(-4) == {
        "a0": 0,
        "a1": 0,
    }
    assert rounded(successor.get_rewards(-3)) == {"a0": 0.0, "a1": 0.3}  # a1's step so far
    successor.add_env_step({"a0": 4}, {"a0": 3}, {"a0": 0.3, "a1": 0.3})
    successor.add_env_step({"a0": 5, "a1": 5}, {"a0": 4}, {"a0": 0.4, "a1": 0.4})
    a0, a1 = successor.agent_episodes["a0"], successor.agent_episodes["a1"]
    assert (a0.get_observations(), a0.get_actions(), rounded(a0.get_rewards())) == (
        [3, 4, 5],
        [3, 4],
        [0.3, 0.4],
    )
    assert (a1.get_observations(), a1.get_actions(), rounded(a1.get_rewards())) == ([0, 5], [0], [1.0])


def test_cut_with_lookback_of_the_waiting_agent():
    first = simple([{"a0": 0, "a1": 0}, {"a1": 1}, {"a1": 2}, {"a1": 3}], len_lookback_buffer="auto")
    second = first.cut()
    assert second.id_ == first.id_ and len(first) == len(second) == 0 and first.env_t == second.env_t_started
    assert all(e.id_ == first.agent_episodes[a].id_ for a, e in second.agent_episodes.items())
    assert (second.env_t_to_agent_t["a0"].data, second.env_t_to_agent_t["a0"].lookback) == ([0, S, S, S], 3)
    assert second.get_observations(-1) == {"a1": 3} and second.get_observations(-1, env_steps=False) == {
        "a0": 0,
        "a1": 3,
    }
    assert second.get_observations(slice(-3, None)) == {"a1": [1, 2, 3]}
    assert second.get_observations(slice(-4, None)) == {"a0": [0], "a1": [0, 1, 2, 3]}
    assert (second.get_actions(), second.get_actions(-1), second.get_actions(-2)) == (
        {},
        {"a1": 2},
        {"a1": 1},
    )
    assert second.get_actions([-3]) == {"a0": [0], "a1": [0]} and second.get_actions(slice(-4, -3)) == {}
    with pytest.raises(IndexError):
        second.get_actions([-4])
    second.add_env_step({"a0": 1, "a1": 4}, {"a1": 4}, {"a1": 0.4})
    assert second.env_t_to_agent_t["a0"].data == [0, S, S, S, 1] and second.agent_episodes[
        "a0"
    ].actions.data == [0]
    assert second.get_observations(slice(-4, None)) == {"a0": [1], "a1": [1, 2, 3, 4]}
    assert (second.get_actions(), second.get_actions([-4])) == ({"a1": [4]}, {"a0": [0], "a1": [0]})
    with pytest.raises(IndexError):
        second.get_actions([-5])


def test_cut_stretches_the_lookback_to_waiting_agents():
    observations = [
        {"a0": 0},
        {"a2": 0},
        {"a2": 1},
        {"a2": 2},
        {"a0": 1},
        {"a2": 3},
        {"a2": 4},
        {"a2": 5},
        {"a0": 2},
        {"a1": 0},
    ]
    successor = simple(observations).cut(len_lookback_buffer=1)  # a2 waits since env step 7
    assert (len(successor), successor.env_t_started) == (0, 9)
    assert {a: (m.data, m.lookback) for a, m in successor.env_t_to_agent_t.items()} == {
        "a0": ([S, 2, S], 2), "a1": ([S, S, 0], 2), "a2": ([5, S, S], 2)
    }  # fmt: skip
    assert (
        successor.get_observations(0),
        successor.get_observations(-2),
        successor.get_observations(-3),
    ) == ({"a1": 0}, {"a0": 2}, {"a2": 5})
    for i in (1, -4):
        with pytest.raises(IndexError):
            successor.get_observations(i)


def slice_contents(piece):
    return {
        a: (e.t_started, e.get_observations(), e.get_actions(), rounded(e.get_rewards()), e.is_done)
        for a, e in piece.agent_episodes.items()
    }


def test_slice():
    episode = simple([{"a0": 0, "a1": 0}, {"a1": 1}, {"a1": 2}, {"a0": 3, "a1": 3}, {"a0": 4}, {"a0": 5, "a1": 5},
                      {"a0": 6, "a1": 6}, {"a1": 7}, {"a1": 8}, {"a0": 9}])  # fmt: skip
    empty = episode[100:100]
    assert (len(empty), empty.env_t_started, empty.env_t) == (0, 9, 9)
    whole = {"a0": (0, [0, 3, 4, 5, 6, 9], [0, 3, 4, 5, 6], [0.0, 0.3, 0.4, 0.5, 0.6], False)}
    whole["a1"] = (
        0,
        [0, 1, 2, 3, 5, 6, 7, 8],
        [0, 1, 2, 3, 5, 6, 7],
        [0.0, 0.1, 0.2, 0.3, 0.5, 0.6, 0.7],
        False,
    )
    for s in (slice(None), slice(-100, None), slice(None, 1000), slice(-1000, 1000)):
        assert slice_contents(episode[s]) == whole and len(episode[s]) == 9
    assert slice_contents(episode[:1]) == {
        "a0": (0, [0], [], [], False),
        "a1": (0, [0, 1], [0], [0.0], False),
    }
    assert episode[:1].get_actions(0) == {"a0": 0, "a1": 0}  # a0's step is in flight at the slice's end
    assert slice_contents(episode[:3])["a0"] == (0, [0, 3], [0], [0.0], False)
    assert episode[:-1].get_actions(-1, env_steps=False) == {"a0": 6, "a1": 7}
    assert slice_contents(episode[-3:]) == {
        "a0": (4, [6, 9], [6], [0.6], False),
        "a1": (5, [6, 7, 8], [6, 7], [0.6, 0.7], False),
    }
    assert slice_contents(episode[-4:-2]) == {
        "a0": (3, [5, 6], [5], [0.5], False),
        "a1": (4, [5, 6, 7], [5, 6], [0.5, 0.6], False),
    }
    # RLlib starts a0 at its first observation inside [2:] (3), losing its step 0 -> 3; flywheel keeps it.
    assert slice_contents(episode[2:])["a0"] == (
        0,
        [0, 3, 4, 5, 6, 9],
        [0, 3, 4, 5, 6],
        [0.0, 0.3, 0.4, 0.5, 0.6],
        False,
    )
    assert slice_contents(episode[2:])["a1"] == (
        2,
        [2, 3, 5, 6, 7, 8],
        [2, 3, 5, 6, 7],
        [0.2, 0.3, 0.5, 0.6, 0.7],
        False,
    )
    assert slice_contents(episode[-5:])["a1"] == (
        3,
        [3, 5, 6, 7, 8],
        [3, 5, 6, 7],
        [0.3, 0.5, 0.6, 0.7],
        False,
    )


def test_slice_with_an_agent_done_early_and_with_lookback():
    episode = MultiAgentEpisode(
        observations=[{"a0": 0, "a1": 0}, {"a0": 1, "a1": 1}, {"a1": 2}, {"a1": 3}],
        actions=[{"a0": 0, "a1": 0}, {"a1": 1}, {"a1": 2}],
        rewards=[{"a0": 0.0, "a1": 0.0}, {"a1": 0.1}, {"a1": 0.2}],
        terminateds={"a0": True},
        len_lookback_buffer=0,
    )
    assert slice_contents(episode[:1]) == {
        "a0": (0, [0, 1], [0], [0.0], True),
        "a1": (0, [0, 1], [0], [0.0], False),
    }
    assert slice_contents(episode[:2])["a1"] == (0, [0, 1, 2], [0, 1], [0.0, 0.1], False)
    assert slice_contents(episode[2:]) == {"a1": (2, [2, 3], [2], [0.2], False)}
    observations = [{"a0": 0, "a1": 0}, {"a0": 1, "a1": 1}, {"a1": 2}, {"a1": 3}, {"a1": 4}, {"a0": 5, "a1": 5},
                    {"a0": 6}, {"a0": 7, "a1": 7}, {"a0": 8}, {"a1": 9}]  # fmt: skip
    episode = simple(observations, len_lookback_buffer=2)
    assert slice_contents(episode[1:3])["a1"] == (1, [3, 4, 5], [3, 4], [0.3, 0.4], False)
    assert slice_contents(episode[None:4])["a1"] == (0, [2, 3, 4, 5], [2, 3, 4], [0.2, 0.3, 0.4], False)
    assert slice_contents(episode[-3:-1])["a0"] == (2, [6, 7, 8], [6, 7], [0.6, 0.7], False)
    assert slice_contents(episode[-1:])["a0"] == (4, [8], [], [], False)


@pytest.mark.parametrize("split", [4, 6, 7, 8])
def test_concat_episode(split):
    pair = simple([{"a0": 0, "a1": 0}, {"a0": 1, "a1": 1}, {"a0": 2, "a1": 2}])
    first, second = pair[:1], pair[1:]
    first.concat_episode(second)
    assert slice_contents(first) == {a: (0, [0, 1, 2], [0, 1], [0.0, 0.1], False) for a in ("a0", "a1")}
    base = simple([{"a0": 0, "a1": 0}, {"a0": 1, "a1": 1}, {"a1": 2}, {"a1": 3}, {"a1": 4}, {"a0": 5, "a1": 5},
                   {"a0": 6}, {"a0": 7, "a1": 7}, {"a0": 8}, {"a1": 9}])  # fmt: skip
    first, second = base[:split], base[split:]
    assert (len(first), len(second)) == (split, 9 - split)
    first.concat_episode(second)
    assert (len(first), first.env_t_started, first.env_t) == (9, 0, 9)
    assert slice_contents(first) == slice_contents(base)
    assert slice_contents(first)["a0"] == (
        0,
        [0, 1, 5, 6, 7, 8],
        [0, 1, 5, 6, 7],
        [0.0, 0.1, 0.5, 0.6, 0.7],
        False,
    )


def test_concat_episode_with_a_step_in_flight_throughout():
    observations = [{"a0": 0, "a1": 0}, {"a0": 1}, {"a0": 2}, {"a0": 3}, {"a0": 4}]
    rewards = [{"a0": 0.0, "a1": 0.0}, {"a0": 0.1, "a1": 1.0}, {"a0": 0.2, "a1": 2.0}, {"a0": 0.3, "a1": 3.0}]
    base = MultiAgentEpisode(
        observations=observations, actions=observations[:-1], rewards=rewards, len_lookback_buffer=0
    )
    assert base.get_return(include_hanging_rewards=True) - base.get_return() == 6.0
    first, second = base[:2], base[2:]
    first.concat_episode(second)
    assert slice_contents(first) == {
        "a0": (0, [0, 1, 2, 3, 4], [0, 1, 2, 3], [0.0, 0.1, 0.2, 0.3], False),
        "a1": (0, [0], [], [], False),
    }
    assert first.get_rewards(0) == {
        "a0": 0.0,
        "a1": 6.0,
    }  # a1's step is still in flight, with all its rewards


def test_get_return():
    env = RandomAgentsEnv()
    given = []
    step = env.step
    env.step = lambda actions: (result := step(actions), given.append(sum(result[1].values())))[0]
    episode = play(MultiAgentEpisode(), env, 100, seed=42)
    agent_returns = sum(e.get_return() for e in episode.agent_episodes.values())
    assert episode.get_return() == agent_returns < sum(given)  # some steps are still in flight
    assert episode.get_return(include_hanging_rewards=True) == sum(given)


def test_len():
    observations = [
        {"a0": 0, "a1": 0},
        {"a1": 1},
        {"a0": 2},
        {"a0": 3, "a1": 3},
        {"a1": 4},
        {"a0": 5, "a1": 5},
        {"a0": 6},
    ]
    for n in range(4, 8):
        obs = observations[:n]
        assert (
            len(
                MultiAgentEpisode(observations=obs, actions=obs[:-1], rewards=obs[:-1], len_lookback_buffer=0)
            )
            == n - 1
        )
    env = RandomAgentsEnv()
    episode = play(MultiAgentEpisode(), env, 100)
    successor = play(episode.cut(), env, 100, reset=False)
    assert (len(episode), len(successor), episode.env_steps()) == (100, 100, 100)


def test_get_state_and_from_state():
    episode = simple([{"a0": 0, "a1": 0}, {"a1": 1}, {"a1": 2}, {"a0": 3, "a1": 3}, {"a0": 4}, {"a0": 5, "a1": 5},
                      {"a0": 6, "a1": 6}, {"a1": 7}, {"a1": 8}, {"a0": 9}])  # fmt: skip
    restored = MultiAgentEpisode.from_state(episode.get_state())
    same = (
        "id_",
        "agent_to_module_mapping_fn",
        "env_t_started",
        "env_t",
        "agent_t_started",
        "is_terminated",
        "is_truncated",
    )
    assert all(getattr(restored, name) == getattr(episode, name) for name in same)
    assert (
        restored.env_t_to_agent_t == episode.env_t_to_agent_t
        and restored.agent_episode_ids == episode.agent_episode_ids
    )
    assert (
        restored.get_actions(-1, env_steps=False)
        == episode.get_actions(-1, env_steps=False)
        == {"a0": 6, "a1": 8}
    )
    assert slice_contents(restored) == slice_contents(episode)


@pytest.mark.parametrize("numpy", [False, True])
@pytest.mark.parametrize(
    ("new_data", "indices"),
    [
        ({"a0": 7353.0, "a1": 8353.0}, 0),
        ({"a0": 7353.0, "a1": 8353.0}, 2),
        ({"a0": 7353.0, "a1": 8353.0}, -1),
        ({"a0": [7353.0], "a1": [8353.0]}, [1]),
        ({"a0": [73.0, 53.0, 35.0, 53.0], "a1": [83.0, 63.0, 45.0, 63.0]}, [1, 2, 3, 4]),
        ({"a0": [7353.0], "a1": [8353.0]}, slice(2, 3)),
        ({"a0": [7.0, 3.0, 5.0, 3.0], "a1": [17.0, 13.0, 15.0, 13.0]}, slice(2, 6)),
    ],
)
def test_setters(numpy, new_data, indices):
    episode = MultiAgentEpisode(
        observations=[{"a0": 100 + t, "a1": 200 + t} for t in range(7)],
        actions=[{"a0": t, "a1": 10 + t} for t in range(1, 7)],
        rewards=[{"a0": t / 10, "a1": 1 + t / 10} for t in range(1, 7)],
        extra_model_outputs=[{"a0": {"k": t / 100}, "a1": {"k": 1 + t / 100}} for t in range(1, 7)],
        len_lookback_buffer=0,
    )
    if numpy:
        episode = copy.deepcopy(episode).to_numpy()
    written = {a: np.array(v) if numpy and isinstance(v, list) else v for a, v in new_data.items()}
    for what in ("observations", "actions", "rewards"):
        getattr(episode, "set_" + what)(new_data=written, at_indices=indices)
        read = getattr(episode, "get_" + what)(indices)  # by env step: every agent steps each time
        assert {a: np.asarray(v).tolist() for a, v in read.items()} == new_data
    episode.set_extra_model_outputs(key="k", new_data=written, at_indices=indices)
    read = episode.get_extra_model_outputs("k", indices, env_steps=False)
    assert {a: np.asarray(v).tolist() for a, v in read.items()} == new_data


# RLlib's test_multi_agent_episode_concat.py: chunks cut every 8 env steps hold exactly the right data
# and concatenate back into the whole episode.
SCHEDULES = {
    "p_true": lambda t: True,
    "p_mod_2": lambda t: t % 2 == 0,
    "p_mod_3+": lambda t: t % 3 == 0 and t > 0,
    "p_in": lambda t: t in (2, 12, 18, 19),
}


def counting_chunks(length=20, every=8, lookback=1):
    """Each agent observes its own step count when its schedule says so; actions echo observations;
    every agent that acted gets reward 1 when it observes again; an agent ends at its last observation."""
    last = {a: max(t for t in range(length + 1) if on(t)) for a, on in SCHEDULES.items()}
    counts = dict.fromkeys(SCHEDULES, 0)

    def observe(t):
        observed = {a: counts[a] for a, on in SCHEDULES.items() if on(t)}
        for agent_id in observed:
            counts[agent_id] += 1
        return observed, {a: {"env_timestep": t} for a in observed}

    episode, chunks = MultiAgentEpisode(), []
    observations, infos = observe(0)
    episode.add_env_reset(observations=observations, infos=infos)
    for t in range(1, length + 1):
        actions = {a: episode.get_observations(-1, env_steps=False)[a] for a in episode.get_agents_to_act()}
        obs, infos = observe(t)
        terminateds = {a: t == last[a] for a in obs} | {"__all__": t == length}
        episode.add_env_step(
            obs, actions, {a: 1 for a in obs if counts[a] > 1}, infos, terminateds=terminateds
        )
        if t % every == 0 and not episode.is_done:
            chunks.append(episode)
            episode = episode.cut(len_lookback_buffer=lookback)
    return [*chunks, episode]


def expected_map(agent_id, start, stop):
    before = sum(SCHEDULES[agent_id](t) for t in range(start))
    return [
        before + sum(SCHEDULES[agent_id](u) for u in range(start, t)) if SCHEDULES[agent_id](t) else S
        for t in range(start, stop + 1)
    ]


def test_multi_agent_episode_concat():
    chunks = counting_chunks()
    assert [(c.env_t_started, c.env_t) for c in chunks] == [(0, 8), (8, 16), (16, 20)]
    for chunk in chunks:
        for agent_id, sa_episode in chunk.agent_episodes.items():
            steps = range(sa_episode.t_started, sa_episode.t)
            assert sa_episode.get_observations() == [
                *steps,
                sa_episode.t,
            ] and sa_episode.get_actions() == list(steps)
            assert sa_episode.get_rewards() == [1] * len(steps)
            assert chunk.env_t_to_agent_t[agent_id].get() == expected_map(
                agent_id, chunk.env_t_started, chunk.env_t
            )
            seen = [t for t in range(chunk.env_t + 1) if SCHEDULES[agent_id](t)][
                sa_episode.t_started : sa_episode.t + 1
            ]
            assert [info["env_timestep"] for info in sa_episode.get_infos()] == seen
    whole = chunks[0]
    for chunk in chunks[1:]:
        whole.concat_episode(chunk)
    whole.validate()
    for agent_id, sa_episode in whole.agent_episodes.items():
        observed = [t for t in range(21) if SCHEDULES[agent_id](t)]
        assert sa_episode.get_observations() == list(range(len(observed)))
        assert sa_episode.get_actions() == list(range(len(observed) - 1))
        assert whole.env_t_to_agent_t[agent_id].get() == expected_map(agent_id, 0, 20)
        assert [info["env_timestep"] for info in sa_episode.get_infos()] == observed
