"""The parts of RLlib's episode surface that RLlib's own unit tests leave out: one-hot getters on
multi-agent episodes, setters' errors, ids and start timesteps, durations, `print()`, state."""

import re

import gymnasium as gym
import numpy as np
import pytest

from flywheel import MultiAgentEpisode, SingleAgentEpisode
from flywheel.episodes import LookbackBuffer
from flywheel.errors import EpisodeError, EpisodeKeyError

ACTIONS = {"a0": gym.spaces.Discrete(3), "a1": gym.spaces.Discrete(3)}
OBS = {"a0": gym.spaces.Discrete(9), "a1": gym.spaces.Discrete(9)}


def turn_based(**kwargs):
    """a0 and a1 alternate (a0 first); after env step 3, a1's step from env step 3 is in flight."""
    return MultiAgentEpisode(
        observations=[{"a0": 0}, {"a1": 1}, {"a0": 2}, {"a1": 3}, {"a0": 4}],
        actions=[{"a0": 0}, {"a1": 1}, {"a0": 2}, {"a1": 0}],
        rewards=[{"a0": 0.0}, {"a1": 1.0}, {"a0": 2.0, "a1": -1.0}, {"a1": 3.0, "a0": -1.0}],
        extra_model_outputs=[
            {"a0": {"vf": 0.5}},
            {"a1": {"vf": 1.5}},
            {"a0": {"vf": 2.5}},
            {"a1": {"vf": 3.5}},
        ],
        observation_space=OBS,
        action_space=ACTIONS,
        len_lookback_buffer=0,
        **kwargs,
    )


def test_one_hot_actions_by_env_step_and_agent_step():
    episode = turn_based()
    assert {a: v.tolist() for a, v in episode.get_actions(-1, one_hot_discrete=True).items()} == {
        "a1": [1, 0, 0]
    }
    by_env_step = episode.get_actions(slice(0, 4), fill=0, one_hot_discrete=True)
    assert {a: np.asarray(v).tolist() for a, v in by_env_step.items()} == {
        "a0": [[1, 0, 0], [0, 0, 0], [0, 0, 1], [0, 0, 0]],  # zero-hot where a0 did not act
        "a1": [[0, 0, 0], [0, 1, 0], [0, 0, 0], [1, 0, 0]],  # a1's last action is in flight
    }
    by_agent_step = episode.get_actions([-1, -2], env_steps=False, one_hot_discrete=True)
    assert {a: np.asarray(v).tolist() for a, v in by_agent_step.items()} == {
        "a0": [[0, 0, 1], [1, 0, 0]],
        "a1": [[1, 0, 0], [0, 1, 0]],
    }
    assert episode.get_observations(-1, one_hot_discrete=True)["a0"].tolist() == [0, 0, 0, 0, 1, 0, 0, 0, 0]


def test_in_flight_extra_outputs_of_a_first_step_are_read():
    episode = MultiAgentEpisode()
    episode.add_env_reset(observations={"a0": 0, "a1": 0})
    episode.add_env_step({"a0": 1}, {"a0": 0, "a1": 1}, {"a0": 1.0}, extra_model_outputs={"a1": {"vf": 9.0}})
    assert episode.agent_episodes["a1"].extra_model_outputs == {}  # nothing stored yet
    assert episode.get_extra_model_outputs(indices=-1) == {"a1": {"vf": 9.0}}
    assert episode.get_extra_model_outputs("vf", [-1], env_steps=False) == {"a1": [9.0]}


def test_constructor_ids_and_start_timesteps():
    episode = turn_based(agent_episode_ids={"a0": "zero"}, agent_t_started={"a1": 10}, id_="ep")
    assert episode.id_ == "ep" and episode.agent_episode_ids["a0"] == "zero"
    assert episode.agent_t_started == {"a0": 0, "a1": 10} and episode.agent_episodes["a1"].t == 11
    assert episode.env_t_to_agent_t["a1"].data == ["S", 10, "S", 11, "S"]
    assert episode.cut().agent_episode_ids == episode.agent_episode_ids
    assert episode.is_reset and not MultiAgentEpisode().is_reset
    ended = MultiAgentEpisode(terminateds=True)
    assert ended.is_terminated and ended.get_terminateds() == {"__all__": True}


def test_final_flags_and_done_getters():
    episode = turn_based(truncateds={"a0": True})
    assert episode.get_truncateds() == {"a0": True, "a1": False, "__all__": False}
    assert episode.get_terminateds() == {"a0": False, "a1": False, "__all__": False}
    single = MultiAgentEpisode(
        observations=[{"a": 0}, {"a": 1}],
        actions=[{"a": 0}],
        rewards=[{"a": 1.0}],
        truncateds={"__all__": True},
    )
    assert single.get_truncateds() == {"a": True, "__all__": True}  # (RLlib 2.60 puts is_terminated here)
    assert single.get_terminateds() == {"a": False, "__all__": False}
    with pytest.raises(
        EpisodeError, match=r"Agent 'a1' was truncated at env step 4 .* while its step was in flight"
    ):
        turn_based(truncateds={"__all__": True})
    ended = turn_based(terminateds={"a1": True})  # a1's waiting step ends on a copy of its observation
    assert ended.agent_episodes["a1"].get_observations() == [1, 3, 3] and ended.get_actions(-1) == {"a1": 0}


def test_setters_by_agent_step_and_unknown_agents():
    episode = turn_based()
    episode.set_actions(new_data={"a0": 1}, at_indices=-1)
    episode.set_extra_model_outputs(key="vf", new_data={"a1": [7.0]}, at_indices=[0])
    assert episode.get_actions(env_steps=False) == {"a0": [0, 1], "a1": [1]}
    assert episode.get_extra_model_outputs("vf", env_steps=False) == {"a0": [0.5, 2.5], "a1": [7.0]}
    with pytest.raises(
        EpisodeKeyError,
        match=re.escape("Cannot set observations of agent(s) ['b'] in episode ")
        + r"\w+: its agents are \['a0', 'a1'\]",
    ):
        episode.set_observations(new_data={"b": 0}, at_indices=0)
    with pytest.raises(KeyError, match="Unknown agent id"):
        episode.get_observations(agent_ids="b")


def test_slice_syntax_and_print(capsys):
    episode = turn_based()
    with pytest.raises(EpisodeError, match=r"got episode\[0\]; read one step with get_observations\(0\)"):
        episode[0]
    assert episode[1:3].get_actions(-1) == {"a0": 2}
    episode.print()
    assert (
        capsys.readouterr().out == "t    0   1   2   3   4\na0   x   .   x   .   x\na1   .   x   .   x   .\n"
    )


def test_duration_of_chunks():
    assert turn_based().get_duration_s() == 0.0 and SingleAgentEpisode().get_duration_s() == 0.0
    episode = SingleAgentEpisode()
    episode.add_env_reset(0)
    episode.add_env_step(1, 0, 1.0)
    successor = episode.cut()
    assert episode.get_duration_s() == episode.get_duration_s() >= 0.0  # frozen once handed out
    assert successor.get_duration_s() >= 0.0
    multi = MultiAgentEpisode()
    multi.add_env_reset(observations={"a": 0})
    multi.to_numpy()
    assert multi.get_duration_s() == multi.get_duration_s() >= 0.0


def test_state_keeps_the_mapping_fn_and_in_flight_steps():
    def mapping_fn(agent_id, episode, **kwargs):
        return "m_" + agent_id

    episode = turn_based(agent_to_module_mapping_fn=mapping_fn)
    episode.custom_data["k"] = 1
    restored = MultiAgentEpisode.from_state(episode.get_state())
    assert restored.agent_to_module_mapping_fn is mapping_fn and restored.module_for("a1") == "m_a1"
    assert restored.get_actions(-1) == {"a1": 0} and restored.custom_data == {"k": 1}
    assert (
        restored.get_return(include_hanging_rewards=True)
        == episode.get_return(include_hanging_rewards=True)
        == 4.0
    )


def test_buffer_iteration_views_and_pop_into_the_lookback():
    buffer = LookbackBuffer([0, 1, 2, 3], lookback=2)
    assert list(buffer) == [2, 3] and buffer.with_item(4).get() == [2, 3, 4] and buffer.get() == [2, 3]
    assert buffer.pop(-3) == 1 and buffer.lookback == 1 and buffer.data == [0, 2, 3]
    buffer.extend(np.array([4, 5]))  # stacked items extend a list buffer item by item
    assert buffer.get() == [2, 3, 4, 5] and buffer != LookbackBuffer(
        [0, 2, 3, 4, 5], lookback=1, space=OBS["a0"]
    )
    with pytest.raises(EpisodeError, match=r"one_hot_discrete=True\) needs the buffer's space"):
        buffer.get(0, one_hot_discrete=True)


def test_a_single_agent_episode_takes_no_attributes_of_its_own_as_in_rllib():
    # Slots, as RLlib's: no instance dict per episode (one object less for the garbage collector).
    episode = SingleAgentEpisode(observations=[0.0], actions=[], rewards=[], len_lookback_buffer=0)
    with pytest.raises(AttributeError, match="'SingleAgentEpisode' object has no attribute 'my_note'"):
        episode.my_note = 1
    episode.custom_data["my_note"] = 1  # the place for a user's own data
    assert not hasattr(episode, "__dict__")
