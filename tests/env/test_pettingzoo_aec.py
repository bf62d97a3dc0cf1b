"""AECPettingZooEnv: a PettingZoo AEC env as a turn-based flywheel MultiAgentEnv (RLlib's PettingZooEnv)."""

import re

import pytest

pettingzoo = pytest.importorskip(
    "pettingzoo", reason="needs the `pettingzoo` extra: pip install flywheel[pettingzoo]"
)

from pettingzoo.classic.rps import rps  # noqa: E402 (the versioned aliases warn on import)
from pettingzoo.classic.tictactoe import tictactoe  # noqa: E402

from flywheel import AlgorithmConfig  # noqa: E402
from flywheel.env.multi_agent_checks import check_multi_agent_env  # noqa: E402
from flywheel.env.pettingzoo_aec import AECPettingZooEnv  # noqa: E402
from flywheel.env_runners.multi_agent import MultiAgentEnvRunner  # noqa: E402
from flywheel.errors import EnvError  # noqa: E402


def test_only_the_agent_to_move_observes_and_acts():
    env = AECPettingZooEnv(tictactoe.env())
    assert env.possible_agents == ["player_1", "player_2"] and env.action_spaces["player_2"].n == 9
    obs, infos = env.reset(seed=0)
    assert list(obs) == ["player_1"] and infos == {}
    assert obs["player_1"]["action_mask"].tolist() == [1] * 9
    obs, rewards, terminateds, truncateds, _ = env.step({"player_1": 4})
    assert list(obs) == ["player_2"] and obs["player_2"]["action_mask"][4] == 0
    assert rewards == {"player_2": 0} and terminateds == truncateds == {"player_2": False, "__all__": False}


def test_a_win_reports_every_agent_once_with_its_reward_and_ends_the_episode():
    env = AECPettingZooEnv(tictactoe.env())
    env.reset(seed=0)
    for agent, cell in [("player_1", 0), ("player_2", 3), ("player_1", 1), ("player_2", 4)]:
        env.step({agent: cell})
    obs, rewards, terminateds, truncateds, _ = env.step({"player_1": 2})  # the top row
    assert sorted(obs) == ["player_1", "player_2"] and rewards == {"player_2": -1, "player_1": 1}
    assert terminateds == {"player_2": True, "player_1": True, "__all__": True}
    assert truncateds == {"player_2": False, "player_1": False, "__all__": False} and env.agents == []


def test_running_out_of_cycles_truncates_the_episode():
    env = AECPettingZooEnv(rps.env(max_cycles=2))
    check_multi_agent_env(env, num_steps=12)
    obs, _ = env.reset(seed=0)
    results = []
    for _ in range(4):  # two rounds of two moves
        (agent,) = obs
        obs, rewards, terminateds, truncateds, _ = env.step({agent: 0})
        results.append((sorted(obs), truncateds["__all__"], terminateds["__all__"]))
    assert results == [
        (["player_1"], False, False),
        (["player_0"], False, False),
        (["player_1"], False, False),
        (["player_0", "player_1"], True, False),
    ]
    assert truncateds == {"player_0": True, "player_1": True, "__all__": True}


def test_a_runner_keeps_the_rewards_an_agent_gets_while_it_waits():
    config = (
        AlgorithmConfig()
        .environment(lambda cfg: AECPettingZooEnv(rps.env(max_cycles=5)))
        .multi_agent(policies={"p0", "p1"}, policy_mapping_fn=lambda agent_id, *a, **kw: f"p{agent_id[-1]}")
        .debugging(seed=0)
    )
    runner = MultiAgentEnvRunner(config)
    episodes = runner.sample(num_episodes=10, random_actions=True)
    runner.stop()
    returns = [[float(sum(e.get_rewards())) for e in ep.agent_episodes.values()] for ep in episodes]
    assert all(ep.is_truncated and len(ep) == 10 for ep in episodes)  # 5 rounds, one move a step
    assert all(sum(pair) == 0 for pair in returns)  # zero-sum: each round's reward reaches both players
    assert sum(abs(pair[0]) for pair in returns) > 0


def test_parallel_envs_and_other_objects_are_refused():
    with pytest.raises(EnvError, match=re.escape("AECPettingZooEnv expects a PettingZoo AEC env")):
        AECPettingZooEnv(rps.parallel_env())
    with pytest.raises(EnvError, match="got dict"):
        AECPettingZooEnv({})
