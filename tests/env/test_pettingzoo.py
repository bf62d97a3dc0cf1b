"""PettingZooEnv: a PettingZoo ParallelEnv used as a flywheel MultiAgentEnv (optional extra)."""

import re

import gymnasium as gym
import numpy as np
import pytest

pettingzoo = pytest.importorskip(
    "pettingzoo", reason="needs the `pettingzoo` extra: pip install flywheel[pettingzoo]"
)

from pettingzoo.classic.rps import rps as rps_v2  # noqa: E402 (the versioned alias warns on import)

from flywheel import MultiAgentEpisode  # noqa: E402
from flywheel.env.multi_agent_checks import check_multi_agent_env  # noqa: E402
from flywheel.env.multi_agent_vector_env import FINAL_OBS, make_multi_agent_vector_env  # noqa: E402
from flywheel.env.pettingzoo import PettingZooEnv  # noqa: E402
from flywheel.errors import EnvError  # noqa: E402

SPACE = gym.spaces.Box(0.0, 100.0, (1,), np.float32)


class Race(pettingzoo.ParallelEnv):
    """ "fast" finishes (terminated) after 2 steps, "slow" is truncated after 4; obs [t], reward t."""

    metadata = {"name": "race_v0"}
    possible_agents = ["fast", "slow"]

    def observation_space(self, agent):
        return SPACE

    def action_space(self, agent):
        return gym.spaces.Discrete(2)

    def reset(self, seed=None, options=None):
        self.agents, self.t = list(self.possible_agents), 0
        return {a: np.zeros(1, np.float32) for a in self.agents}, {a: {} for a in self.agents}

    def step(self, actions):
        self.t += 1
        stepping = list(self.agents)
        terminations = {a: a == "fast" and self.t == 2 for a in stepping}
        truncations = {a: a == "slow" and self.t == 4 for a in stepping}
        self.agents = [a for a in stepping if not (terminations[a] or truncations[a])]
        obs = {a: np.full(1, self.t, np.float32) for a in stepping}
        return obs, {a: float(self.t) for a in stepping}, terminations, truncations, {a: {} for a in stepping}


def test_spaces_and_agents_come_from_the_parallel_env():
    env = PettingZooEnv(Race())
    assert env.possible_agents == ["fast", "slow"] and env.agents == []
    assert env.get_observation_space("slow") == SPACE and env.get_action_space("fast") == gym.spaces.Discrete(
        2
    )
    env.reset(seed=0)
    assert env.agents == ["fast", "slow"] and env.metadata == {"name": "race_v0"}


def test_all_is_added_when_the_last_agent_leaves():
    env = PettingZooEnv(Race())
    env.reset()
    flags = []
    for actions in ({"fast": 0, "slow": 0}, {"fast": 0, "slow": 0}, {"slow": 1}, {"slow": 1}):
        _, _, terminateds, truncateds, _ = env.step(actions)
        flags.append((terminateds["__all__"], truncateds["__all__"]))
    assert flags == [(False, False), (False, False), (False, False), (False, True)]
    assert env.agents == []


def test_rock_paper_scissors_truncates_all():
    env = PettingZooEnv(rps_v2.parallel_env(max_cycles=2))
    observations, _ = env.reset(seed=0)
    assert sorted(observations) == ["player_0", "player_1"]
    env.step({"player_0": 0, "player_1": 1})
    _, rewards, terminateds, truncateds, _ = env.step({"player_0": 2, "player_1": 1})
    assert rewards == {"player_0": 1, "player_1": -1}
    assert terminateds["__all__"] is False and truncateds == {
        "player_0": True,
        "player_1": True,
        "__all__": True,
    }


def test_adapted_envs_pass_the_multi_agent_check():
    check_multi_agent_env(PettingZooEnv(Race()), num_steps=12)
    check_multi_agent_env(PettingZooEnv(rps_v2.parallel_env(max_cycles=3)), num_steps=12)


def test_race_episode_through_the_vector_env():
    vector_env = make_multi_agent_vector_env(lambda cfg: PettingZooEnv(Race()), num_envs=1)
    observations, _ = vector_env.reset(seed=0)
    episode = MultiAgentEpisode(
        observation_space=vector_env.observation_spaces, action_space=vector_env.action_spaces
    )
    episode.add_env_reset(observations=observations[0])
    while not episode.is_done:
        actions = {a: 1 for a in episode.get_agents_to_act()}
        observations, rewards, terminateds, truncateds, infos = vector_env.step([actions])
        ended = terminateds[0]["__all__"] or truncateds[0]["__all__"]
        obs = infos[0][FINAL_OBS] if ended else observations[0]
        episode.add_env_step(obs, actions, rewards[0], terminateds=terminateds[0], truncateds=truncateds[0])
    vector_env.close()
    assert {a: e.get_rewards() for a, e in episode.agent_episodes.items()} == {
        "fast": [1.0, 2.0],
        "slow": [1.0, 2.0, 3.0, 4.0],
    }
    assert episode.agent_episodes["fast"].is_terminated and episode.agent_episodes["slow"].is_truncated
    assert episode.is_truncated and len(episode) == 4


def test_aec_envs_and_other_objects_are_rejected():
    with pytest.raises(
        EnvError,
        match=re.escape(
            "PettingZooEnv expects a PettingZoo ParallelEnv, got the AEC env OrderEnforcingWrapper."
        ),
    ):
        PettingZooEnv(rps_v2.env())
    with pytest.raises(
        EnvError, match=r"PettingZooEnv expects a PettingZoo ParallelEnv \(possible_agents, .*got dict"
    ):
        PettingZooEnv({})
