"""MultiAgentEpisode on scripted turn-based and join/leave scenarios, with exact contents."""

import importlib.util
import re

import gymnasium as gym
import numpy as np
import pytest

from flywheel import MultiAgentEpisode
from flywheel.episodes.multi_agent_indexing import NOT_OBSERVED as X
from flywheel.errors import EpisodeError, EpisodeKeyError
from flywheel.testing.multi_agent_envs import JoinLeaveEnv, TurnBasedEnv

BOX = gym.spaces.Box(0.0, 1e6, (1,), np.float32)


def new_episode(env, **kwargs):
    return MultiAgentEpisode(
        observation_space=env.observation_spaces, action_space=env.action_spaces, **kwargs
    )


def act(episode):
    """Deterministic actions (1 before env step 3, then 0) and a "vf" output equal to the env step."""
    agents = sorted(episode.get_agents_to_act())
    actions = {a: int(episode.env_t < 3) for a in agents}
    return actions, {a: {"vf": float(episode.env_t)} for a in agents}


def play(env, episode=None, *, steps=None, cut_at=(), lookback=0):
    """Steps ``env`` into ``episode`` until done (or ``steps``); returns the chunks (cut at ``cut_at``)."""
    if episode is None:
        episode = new_episode(env)
        observations, infos = env.reset(seed=0)
        episode.add_env_reset(observations=observations, infos=infos)
    chunks = []
    while not episode.is_done and (steps is None or episode.env_t < steps):
        actions, extras = act(episode)
        obs, rewards, terminateds, truncateds, infos = env.step(actions)
        episode.add_env_step(
            obs,
            actions,
            rewards,
            infos,
            terminateds=terminateds,
            truncateds=truncateds,
            extra_model_outputs=extras,
        )
        if episode.env_t in cut_at:
            chunks.append(episode)
            episode = episode.cut(len_lookback_buffer=lookback)
    return [*chunks, episode]


def flat(data):
    """Observations/rewards/actions as plain numbers (one per item)."""
    return [float(np.asarray(x).reshape(-1)[0]) for x in data]


def contents(episode):
    """{agent: (observations, actions, rewards, vf outputs)} of the chunk, as plain numbers."""
    return {
        a: (
            flat(e.get_observations()),
            flat(e.get_actions()),
            flat(e.get_rewards()),
            flat(e.get_extra_model_outputs("vf")),
        )
        for a, e in episode.agent_episodes.items()
    }


def maps(episode):
    return {a: list(m.data) for a, m in episode.env_t_to_agent_t.items()}


# Turn-based: only the player to move observes; the waiting player's rewards pile up.


def test_turn_based_episode_exact_contents():
    (episode,) = play(TurnBasedEnv())
    assert contents(episode) == {
        "p0": ([0, 2, 4, 6], [1, 1, 0], [0.0, 2.0, 4.0], [0, 2, 4]),
        "p1": ([1, 3, 5, 6], [1, 0, 0], [1.0, 3.0, 6.0], [1, 3, 5]),
    }
    assert maps(episode) == {"p0": [0, X, 1, X, 2, X, 3], "p1": [X, 0, X, 1, X, 2, 3]}
    assert [i["t"] for i in episode.agent_episodes["p1"].get_infos()] == [1, 3, 5, 6]
    assert (
        len(episode) == 6 and episode.env_t == 6 and episode.env_steps() == 6 and episode.agent_steps() == 6
    )
    assert episode.get_return() == 16.0
    assert episode.is_terminated and episode.is_done and not episode.is_truncated
    assert all(e.is_terminated and not e.is_truncated for e in episode.agent_episodes.values())
    assert episode.get_agents_to_act() == set() and episode.get_agents_that_stepped() == {"p0", "p1"}
    episode.validate()


def test_simultaneous_steps_with_and_without_rewards():
    """Every agent acts and observes each step; "b" gets no reward at env step 2 (its step still
    completes, with 0.0). Rewards are summed onto 0.0, so ints become floats and float32 stays."""
    episode = MultiAgentEpisode()
    episode.add_env_reset(observations={"b": 0, "a": 0})
    flags = {"terminateds": {"__all__": False}, "truncateds": {"__all__": False}}
    for t in (1, 2, 3):  # env step 2: "b" acts without a reward (in flight until it observes)
        rewards = {"a": t, "b": np.float32(t / 2)} if t != 2 else {"a": t}
        extras = {"a": {"vf": t}, "b": {"vf": -t}}
        episode.add_env_step(
            {"b": t, "a": t}, {"a": 10 + t, "b": 20 + t}, rewards, extra_model_outputs=extras, **flags
        )
    a, b = episode.agent_episodes["a"], episode.agent_episodes["b"]
    assert a.get_rewards() == [1.0, 2.0, 3.0] and [type(r) for r in a.get_rewards()] == [float] * 3
    assert b.get_rewards() == [0.5, 0.0, 1.5]
    assert [type(r) for r in b.get_rewards()] == [np.float32, float, np.float32]
    assert (a.get_actions(), b.get_actions()) == ([11, 12, 13], [21, 22, 23])
    assert b.get_extra_model_outputs("vf") == [-1, -2, -3] and b.get_observations() == [0, 1, 2, 3]
    assert episode.env_t_to_agent_t["a"].data == [0, 1, 2, 3] and episode.get_agents_to_act() == {"a", "b"}
    assert episode.get_agents_that_stepped() == {"a", "b"} and episode.env_t == 3
    episode.validate()


def test_turn_based_agents_to_act_alternate():
    env = TurnBasedEnv()
    episode = new_episode(env)
    episode.add_env_reset(observations=env.reset()[0])
    seen = [sorted(episode.get_agents_to_act())]
    for steps in range(1, 7):
        (episode,) = play(env, episode, steps=steps)
        seen.append(sorted(episode.get_agents_to_act()))
    assert seen == [["p0"], ["p1"], ["p0"], ["p1"], ["p0"], ["p1"], []]


def test_in_flight_step_is_read_by_env_step_but_not_stored():
    (episode,) = play(TurnBasedEnv(), steps=3)  # p0 acted at env step 2 and waits.
    assert contents(episode)["p0"] == ([0, 2], [1], [0.0], [0])
    assert episode.get_actions(-1) == {"p0": 1}  # env step 2 is p0's, still in flight
    assert episode.get_rewards(-1) == {"p0": 3.0}  # the rewards of its step so far
    assert episode.get_extra_model_outputs("vf", -1) == {"p0": 2.0}
    assert episode.get_actions(slice(0, 3)) == {"p0": [1, 1], "p1": [1]}
    assert episode.get_actions(-1, env_steps=False) == {"p0": 1, "p1": 1}  # p0's newest step is in flight
    assert episode.get_actions(env_steps=False) == {"p0": [1], "p1": [1]}  # indices=None: stored steps only
    assert episode.get_return() == 1.0 and episode.get_return(include_hanging_rewards=True) == 4.0
    assert episode.agent_steps() == 2
    episode.validate()


def test_truncated_turn_based_episode():
    (episode,) = play(TurnBasedEnv({"truncate": True, "episode_len": 2}))
    assert episode.is_truncated and not episode.is_terminated
    assert contents(episode) == {"p0": ([0, 2], [1], [0.0], [0]), "p1": ([1, 2], [1], [2.0], [1])}
    assert all(e.is_truncated for e in episode.agent_episodes.values())


# Join late / finish early.


def test_join_late_and_finish_early_exact_contents():
    env = JoinLeaveEnv()
    (after_two,) = play(env, steps=2)
    assert not after_two.is_done and after_two.agent_episodes["b"].is_terminated
    assert after_two.get_agents_to_act() == {"a"} and after_two.get_agents_that_stepped() == {"a", "b"}
    (episode,) = play(env, after_two)
    assert contents(episode) == {
        "a": ([0, 1, 2, 3, 4, 5], [1, 1, 1, 0, 0], [1.0, 2.0, 3.0, 4.0, 5.0], [0, 1, 2, 3, 4]),
        "b": ([10, 11, 12], [1, 1], [11.0, 12.0], [0, 1]),
        "c": ([23, 24, 25], [0, 0], [24.0, 25.0], [3, 4]),
    }
    assert maps(episode) == {"a": [0, 1, 2, 3, 4, 5], "b": [0, 1, 2, X, X, X], "c": [X, X, X, 0, 1, 2]}
    assert episode.agent_ids == {"a", "b", "c"}
    assert episode.is_truncated and not episode.is_terminated
    assert episode.get_return() == 87.0 and episode.agent_steps() == 9
    episode.validate()


def test_joining_agent_acts_from_its_first_observation():
    (episode,) = play(JoinLeaveEnv(), steps=3)
    assert episode.get_agents_to_act() == {"a", "c"}
    assert episode.agent_episodes["c"].t_started == 0 and len(episode.agent_episodes["c"]) == 0


# Done flags: per agent vs "__all__".


def two_agent_episode():
    episode = MultiAgentEpisode(observation_space={"x": BOX, "y": BOX}, action_space={"x": BOX, "y": BOX})
    episode.add_env_reset(observations={"x": [0.0], "y": [0.0]})
    return episode


def test_every_agent_done_ends_the_episode_without_all():
    episode = two_agent_episode()
    episode.add_env_step(
        {"x": [1.0], "y": [1.0]}, {"x": 0, "y": 0}, {"x": 1.0, "y": 1.0}, terminateds={"x": True}
    )
    assert not episode.is_done and episode.get_agents_to_act() == {"y"}
    episode.add_env_step({"y": [2.0]}, {"y": 0}, {"y": 1.0}, truncateds={"y": True})
    assert episode.is_terminated and not episode.is_truncated  # Mixed endings count as terminated.


def test_every_agent_truncated_truncates_the_episode():
    episode = two_agent_episode()
    episode.add_env_step({"x": [1.0], "y": [1.0]}, {"x": 0, "y": 0}, {}, truncateds={"x": True, "y": True})
    assert episode.is_truncated and not episode.is_terminated


def test_all_terminates_waiting_agents_on_a_copy_of_their_last_observation():
    env = TurnBasedEnv()
    (episode,) = play(env, steps=3)
    # p0 is waiting (acted at env step 2, +3.0 so far); the env ends without observing it.
    episode.add_env_step(
        {"p1": [3.5]},
        {"p1": 1},
        {"p0": -1.0, "p1": 4.0},
        terminateds={"__all__": True},
        extra_model_outputs={"p1": {"vf": 3.0}},
    )
    p0 = episode.agent_episodes["p0"]
    assert flat(p0.get_observations()) == [0, 2, 2] and flat(p0.get_rewards()) == [0.0, 2.0]
    assert p0.is_terminated and episode.is_terminated
    assert maps(episode)["p0"] == [0, X, 1, X, 2]
    assert episode.get_agents_that_stepped() == {"p0", "p1"} and episode.get_agents_to_act() == set()
    episode.validate()


def test_truncating_a_waiting_agent_without_observation_raises():
    (episode,) = play(TurnBasedEnv(), steps=3)
    with pytest.raises(
        EpisodeError,
        match=re.escape("Agent 'p0' was truncated at env step 4 of episode "),
    ) as error:
        episode.add_env_step({"p1": [4.0]}, {"p1": 1}, {}, truncateds={"__all__": True})
    assert "return a final observation for every agent it truncates" in str(error.value)


def test_stepping_a_done_episode_raises():
    (episode,) = play(TurnBasedEnv({"episode_len": 1}))
    with pytest.raises(
        EpisodeError, match=r"is already done \(terminated=True, truncated=False\) at env_t=1"
    ):
        episode.add_env_step({}, {}, {})


# Cut and concat with lookback.


def test_cut_moves_in_flight_steps_and_keeps_lookback():
    first, second = play(TurnBasedEnv(), cut_at={3}, lookback=2)
    assert second.id_ == first.id_ and second.env_t_started == 3 and len(first) == 3 and len(second) == 3
    assert contents(first) == {"p0": ([0, 2], [1], [0.0], [0]), "p1": ([1, 3], [1], [1.0], [1])}
    # p0's step begun at env step 2 (+3.0 there) completes in the successor (-1.0): reward 2.0.
    assert contents(second) == {
        "p0": ([2, 4, 6], [1, 0], [2.0, 4.0], [2, 4]),
        "p1": ([3, 5, 6], [0, 0], [3.0, 6.0], [3, 5]),
    }
    assert [e.t_started for e in second.agent_episodes.values()] == [1, 1]
    assert maps(second) == {"p0": [X, 1, X, 2, X, 3], "p1": [0, X, 1, X, 2, 3]}
    assert first.get_return() + second.get_return() == 16.0
    lookback = second.get_observations(slice(-2, 1), neg_index_as_lookback=True, fill=-1.0)
    assert {a: flat(v) for a, v in lookback.items()} == {"p0": [-1, 2, -1], "p1": [1, -1, 3]}
    assert second.get_actions(-1, neg_index_as_lookback=True) == {"p0": 1}  # p0 acted at env step 2
    second.validate()


def test_cut_leaves_finished_agents_behind():
    first, second = play(JoinLeaveEnv(), steps=2, cut_at={2}, lookback=1)
    assert first.agent_ids == {"a", "b"} and second.agent_ids == {"a"}
    assert second.get_observations(agent_ids="b") == {}  # b took part, so asking is no error
    assert first.get_agents_that_stepped() == {"a", "b"} and second.get_agents_that_stepped() == {"a"}
    with pytest.raises(
        EpisodeError, match=r"Agent 'b' received an observation at env step 3 .* after it was done"
    ):
        second.add_env_step({"b": [1.0]}, {"a": 0}, {"a": 1.0})


def test_concat_of_chunks_equals_the_uncut_episode():
    (whole,) = play(JoinLeaveEnv())
    chunks = play(JoinLeaveEnv(), cut_at={2, 3}, lookback=2)
    assert [len(c) for c in chunks] == [2, 1, 2]
    joined = chunks[0]
    for chunk in chunks[1:]:
        joined.concat_episode(chunk)
    joined.validate()
    assert contents(joined) == contents(whole) and maps(joined) == maps(whole)
    assert len(joined) == 5 and joined.is_truncated and joined.get_return() == 87.0


def test_concat_to_a_numpy_chunk():
    first, second = play(TurnBasedEnv(), cut_at={3}, lookback=1)
    first.to_numpy().concat_episode(second)
    (whole,) = play(TurnBasedEnv())
    assert contents(first) == contents(whole) and maps(first) == maps(whole)


def test_concat_checks_order_and_ids():
    first, second = play(TurnBasedEnv(), steps=4, cut_at={2})
    with pytest.raises(EpisodeError, match=r"starting at env_t_started=2 to the chunk ending at env_t=4"):
        second.concat_episode(first.cut())
    other = new_episode(TurnBasedEnv())
    with pytest.raises(EpisodeError, match=r"expected the same id_"):
        first.concat_episode(other)


# Getters: env steps vs agent steps, fill, lists.


@pytest.mark.parametrize("numpy", [False, True])
def test_env_step_getters(numpy):
    (episode,) = play(TurnBasedEnv())
    if numpy:
        episode.to_numpy()
    assert {a: flat([v]) for a, v in episode.get_observations(-1).items()} == {"p0": [6], "p1": [6]}
    assert {a: flat([v]) for a, v in episode.get_observations(0).items()} == {"p0": [0]}
    assert {a: flat([v]) for a, v in episode.get_observations(0, fill=-1.0).items()} == {
        "p0": [0],
        "p1": [-1],
    }
    assert {a: flat(v) for a, v in episode.get_observations(slice(0, 3)).items()} == {"p0": [0, 2], "p1": [1]}
    assert {a: flat(v) for a, v in episode.get_actions().items()} == {"p0": [1, 1, 0], "p1": [1, 0, 0]}
    filled = episode.get_actions(fill=-1)
    assert {a: flat(v) for a, v in filled.items()} == {
        "p0": [1, -1, 1, -1, 0, -1],
        "p1": [-1, 1, -1, 0, -1, 0],
    }
    assert episode.get_rewards(-1) == {"p1": 6.0}
    assert {a: flat(v) for a, v in episode.get_rewards([0, 1], agent_ids="p0", fill=0.0).items()} == {
        "p0": [0, 0]
    }
    assert episode.get_infos(2) == {"p0": {"t": 2}}
    assert episode.get_extra_model_outputs(indices=-1) == {"p1": {"vf": 5.0}}
    assert {a: flat(v) for a, v in episode.get_extra_model_outputs("vf", slice(-2, None)).items()} == {
        "p0": [4],
        "p1": [5],
    }


def test_env_step_getters_as_list_of_dicts():
    (episode,) = play(TurnBasedEnv())
    assert episode.get_rewards(return_list=True) == [
        {"p0": 0.0},
        {"p1": 1.0},
        {"p0": 2.0},
        {"p1": 3.0},
        {"p0": 4.0},
        {"p1": 6.0},
    ]
    assert episode.get_actions(slice(0, 2), fill=-1, return_list=True) == [
        {"p0": 1, "p1": -1},
        {"p0": -1, "p1": 1},
    ]
    assert episode.get_rewards(-1, return_list=True) == [{"p1": 6.0}]
    assert episode.get_observations(slice(0, 2), agent_ids=[], return_list=True) == [{}, {}]


def test_agent_step_getters():
    (episode,) = play(TurnBasedEnv())
    assert episode.get_actions(-1, env_steps=False) == {"p0": 0, "p1": 0}
    assert episode.get_rewards(env_steps=False) == {"p0": [0.0, 2.0, 4.0], "p1": [1.0, 3.0, 6.0]}
    assert episode.get_extra_model_outputs("vf", 0, agent_ids=["p1"], env_steps=False) == {"p1": 1.0}
    assert episode.get_rewards(slice(-5, None), "p0", env_steps=False, fill=9.0) == {
        "p0": [9.0, 9.0, 0.0, 2.0, 4.0]
    }
    with pytest.raises(EpisodeError, match=r"get_rewards\(return_list=True\) needs env_steps=True"):
        episode.get_rewards(env_steps=False, return_list=True)


def test_out_of_range_env_step_raises_unless_filled():
    (episode,) = play(TurnBasedEnv())
    with pytest.raises(
        EpisodeError, match=r"Env-step index 6 is out of range: the episode chunk has 6 env steps"
    ):
        episode.get_actions(6)
    assert episode.get_actions(6, fill=-1) == {"p0": -1, "p1": -1}
    assert {a: flat(v) for a, v in episode.get_observations(slice(5, 9), fill=-1.0).items()} == {
        "p0": [-1, 6, -1, -1],
        "p1": [5, 6, -1, -1],
    }


def test_unknown_agent_ids_in_getters_raise():
    (episode,) = play(TurnBasedEnv(), steps=2)
    with pytest.raises(
        EpisodeError,
        match=re.escape("Unknown agent id(s) ['p2'] for episode ")
        + r"\w+"
        + re.escape(": its agents are ['p0', 'p1'] (possible: ['p0', 'p1']). Pass ids of agents"),
    ):
        episode.get_observations(agent_ids=["p0", "p2"])
    bare = MultiAgentEpisode()
    bare.add_env_reset(observations={"x": 1})
    with pytest.raises(
        EpisodeError, match=r"Unknown agent id\(s\) \['y'\] .*: its agents are \['x'\]\. Pass"
    ):
        bare.get_observations(agent_ids="y")


# Module mapping.


def test_module_for_calls_the_mapping_fn_once_per_agent():
    calls = []

    def mapping_fn(agent_id, episode, **kwargs):
        calls.append(agent_id)
        return "module_" + agent_id

    env = TurnBasedEnv()
    episode = new_episode(env, agent_to_module_mapping_fn=mapping_fn)
    episode.add_env_reset(observations=env.reset()[0])
    play(env, episode)
    assert calls == ["p0", "p1"]
    assert episode.module_for("p0") == "module_p0" and calls == ["p0", "p1"]
    assert [e.module_id for e in episode.agent_episodes.values()] == ["module_p0", "module_p1"]
    assert episode.cut().module_for("p1") == "module_p1" and calls == ["p0", "p1"]


def test_agents_without_extra_outputs_are_left_out():
    episode = two_agent_episode()
    episode.add_env_step(
        {"x": [1.0], "y": [1.0]},
        {"x": 0, "y": 1},
        {"x": 1.0, "y": 2.0},
        extra_model_outputs={"x": {"vf": 0.5}},
    )
    assert episode.get_extra_model_outputs() == {"x": {"vf": [0.5]}}
    assert episode.get_extra_model_outputs(indices=0) == {"x": {"vf": 0.5}}
    assert episode.get_extra_model_outputs("vf", 0, env_steps=False) == {"x": 0.5}


def test_an_extra_output_no_selected_agent_has_is_a_key_error():
    """As RLlib's KeyError: a key that none of the selected agents has (stored or in flight)."""
    episode = two_agent_episode()
    episode.add_env_step(
        {"x": [1.0], "y": [1.0]},
        {"x": 0, "y": 1},
        {"x": 1.0, "y": 2.0},
        extra_model_outputs={"x": {"vf": 0.5}},
    )
    for kwargs in ({}, {"env_steps": False}, {"agent_ids": "y"}):
        with pytest.raises(KeyError) as caught:
            episode.get_extra_model_outputs("vff", **kwargs)
        assert type(caught.value) is EpisodeKeyError
    assert str(caught.value) == (
        f"Episode {episode.id_} has no extra model output 'vff' for agents ['y']; they have [] "
        "(outputs are recorded via add_env_step(extra_model_outputs=...))."
    )


def test_module_ids_given_up_front_and_default():
    episode = MultiAgentEpisode(agent_module_ids={"x": "mx"}, agent_to_module_mapping_fn=lambda a, e: 1 / 0)
    assert episode.module_for("x") == "mx"
    assert MultiAgentEpisode().module_for("anyone") == "default_policy"


# Bad input.


def test_agent_without_space_raises_naming_it():
    episode = MultiAgentEpisode(observation_space={"a": BOX}, action_space={"a": BOX, "b": BOX})
    with pytest.raises(
        EpisodeError,
        match=r"Agent 'b' observed in episode \w+, but the episode's observation_space has no space for it "
        r"\(it has spaces for \['a'\]\)\. Expected every agent id to be one of the env's possible_agents",
    ):
        episode.add_env_reset(observations={"a": [0.0], "b": [0.0]})


def test_reward_for_an_agent_that_has_not_acted_is_kept_for_its_next_step():
    """As RLlib keeps it: p1 gets 0.5 before its first observation and 0.25 with it; its first step
    (acting at env step 1) starts with 0.75 and adds what it gets while in flight."""
    (episode,) = play(TurnBasedEnv(), steps=0)
    episode.add_env_step({"p0": [1.0]}, {"p0": 1}, {"p0": 1.0, "p1": 0.5})
    episode.add_env_step({"p1": [1.0]}, {"p0": 0}, {"p0": 2.0, "p1": 0.25})
    assert "p1" not in episode.get_rewards(env_steps=False)  # no p1 step yet
    assert episode.get_return() == 1.0 and episode.get_return(include_hanging_rewards=True) == 3.75
    episode.add_env_step({"p0": [2.0]}, {"p1": 1}, {"p1": 1.0})
    successor = episode.cut()  # the p1 step in flight keeps its rewards across the cut
    successor.add_env_step({"p1": [3.0]}, {"p0": 1}, {"p1": 0.5, "p0": -1.0})
    assert successor.agent_episodes["p1"].get_rewards() == [2.25]
    assert (
        MultiAgentEpisode.from_state(successor.get_state()).get_return(include_hanging_rewards=True) == 1.25
    )


def test_reward_kept_for_an_agent_survives_cut_and_state():
    (episode,) = play(TurnBasedEnv(), steps=0)
    episode.add_env_step({"p0": [1.0]}, {"p0": 1}, {"p0": 1.0, "p1": 0.5})  # p1 has not observed
    successor = MultiAgentEpisode.from_state(episode.cut().get_state())
    assert successor.get_return(include_hanging_rewards=True) == 0.5
    successor.add_env_step({"p1": [1.0]}, {"p0": 0}, {"p0": 2.0})
    successor.add_env_step({"p0": [2.0]}, {"p1": 1}, {})
    successor.add_env_step({"p1": [3.0]}, {"p0": 1}, {"p1": 1.0})
    assert successor.agent_episodes["p1"].get_rewards() == [1.5]


def test_data_after_done_and_observation_without_action_raise():
    episode = two_agent_episode()
    episode.add_env_step({"x": [1.0], "y": [1.0]}, {"x": 0, "y": 0}, {}, terminateds={"x": True})
    with pytest.raises(
        EpisodeError,
        match=r"Agent 'x' got reward 1.0 at env step 2 of episode \w+, but it is done\. Expected no data",
    ):
        episode.add_env_step({"y": [2.0]}, {"y": 0}, {"x": 1.0})
    episode = two_agent_episode()
    episode.add_env_step({"x": [1.0], "y": [1.0]}, {"x": 0, "y": 0}, {}, terminateds={"x": True})
    with pytest.raises(
        EpisodeError, match=r"Agent 'x' received an observation at env step 2 .* after it was done"
    ):
        episode.add_env_step({"x": [2.0], "y": [2.0]}, {"y": 0}, {})
    episode = two_agent_episode()
    with pytest.raises(
        EpisodeError,
        match=r"but it did not act on its previous observation\. Fix: send an action for every agent",
    ):
        episode.add_env_step({"x": [1.0], "y": [1.0]}, {"y": 0}, {})


def test_second_reset_raises():
    episode = two_agent_episode()
    with pytest.raises(
        EpisodeError, match=r"add_env_reset\(\) needs a fresh episode, .* agents \['x', 'y'\]"
    ):
        episode.add_env_reset(observations={"x": [0.0]})


# Slices, construction from data, state, numpy, validate.


def test_slice_takes_the_agent_steps_ending_inside():
    (episode,) = play(JoinLeaveEnv())
    piece = episode.slice(slice(1, 4))
    assert piece.env_t_started == 1 and len(piece) == 3 and not piece.is_done
    assert contents(piece) == {
        "a": ([1, 2, 3, 4], [1, 1, 0], [2.0, 3.0, 4.0], [1, 2, 3]),
        "b": ([11, 12], [1], [12.0], [1]),
        "c": ([23, 24], [0], [24.0], [3]),
    }
    assert piece.agent_episodes["b"].is_terminated
    later = episode.slice(slice(3, None))
    assert later.agent_ids == {"a", "c"} and later.is_truncated
    assert later.get_observations(agent_ids="b") == {}
    later.validate()
    piece.validate()


def test_slice_of_turn_based_starts_from_the_last_observation_before():
    (episode,) = play(TurnBasedEnv())
    piece = episode.slice(slice(3, 5), len_lookback_buffer=1)
    assert contents(piece) == {"p0": ([2, 4], [1], [2.0], [2]), "p1": ([3, 5], [0], [3.0], [3])}
    assert maps(piece) == {"p0": [1, X, 2, X], "p1": [X, 1, X, 2]}
    assert piece.get_agents_to_act() == {"p1"}
    piece.validate()


def test_build_from_data_with_lookback():
    episode = MultiAgentEpisode(
        observations=[{"p0": [0.0]}, {"p1": [1.0]}, {"p0": [2.0]}, {"p1": [3.0]}],
        actions=[{"p0": 1}, {"p1": 0}, {"p0": 1}],
        rewards=[{"p0": 1.0}, {"p1": 2.0, "p0": -1.0}, {"p0": 3.0, "p1": -1.0}],
        env_t_started=1,
        len_lookback_buffer=1,
    )
    assert episode.env_t_started == 1 and len(episode) == 2 and episode.env_t == 3
    assert maps(episode) == {"p0": [0, X, 1, X], "p1": [X, 0, X, 1]}
    assert {a: flat(e.get_rewards()) for a, e in episode.agent_episodes.items()} == {"p0": [0.0], "p1": [1.0]}
    assert episode.get_rewards(-1, neg_index_as_lookback=True) == {"p0": 0.0}  # begun in the lookback
    assert episode.get_actions(-1, neg_index_as_lookback=True) == {"p0": 1}
    assert episode.get_agents_to_act() == {"p1"}
    episode.validate()
    assert (
        len(MultiAgentEpisode(observations=[{"a": 0}, {"a": 1}], actions=[{"a": 0}], rewards=[{"a": 1.0}]))
        == 0
    )


def test_build_from_data_with_wrong_lengths_raises():
    with pytest.raises(
        EpisodeError,
        match=r"from 2 observation dicts \(1 env steps\): infos has 1 dicts, expected 2; rewards has 0 dicts, "
        r"expected 1\. Pass one dict per env step",
    ):
        MultiAgentEpisode(observations=[{"a": 0}, {"a": 1}], infos=[{}], actions=[{"a": 0}], rewards=[])


def test_state_round_trip_continues_stepping():
    env = TurnBasedEnv()
    (episode,) = play(env, steps=3)
    episode.custom_data["note"] = [1]
    restored = MultiAgentEpisode.from_state(episode.get_state())
    assert contents(restored) == contents(episode) and maps(restored) == maps(episode)
    assert restored.custom_data == {"note": [1]} and restored.get_agents_to_act() == {"p1"}
    (restored,) = play(env, restored)
    assert restored.get_return() == 16.0 and contents(restored)["p0"][2] == [0.0, 2.0, 4.0]


def test_to_numpy_stacks_every_agent():
    (episode,) = play(TurnBasedEnv())
    assert not episode.is_numpy
    episode.to_numpy()
    assert episode.is_numpy
    assert episode.agent_episodes["p0"].get_observations().shape == (4, 1)
    assert episode.get_rewards(env_steps=False)["p1"].dtype == np.float32
    assert episode.get_actions(fill=-1)["p0"].tolist() == [1, -1, 1, -1, 0, -1]


def test_validate_finds_a_broken_env_step_map():
    (episode,) = play(TurnBasedEnv())
    episode.env_t_to_agent_t["p1"].data[3] = 7
    with pytest.raises(
        EpisodeError,
        match=re.escape(
            "env_t_to_agent_t['p1'] lists agent timesteps [0, 7, 2, 3] in this chunk, expected consecutive "
            "timesteps ending at the agent's t=3"
        ),
    ):
        episode.validate()
    episode.env_t_to_agent_t["p0"].data.pop()
    with pytest.raises(
        EpisodeError, match=r"env_t_to_agent_t\['p0'\] has 6 chunk entries and 0 of lookback, expected 7"
    ):
        episode.validate()


def test_docs_page_code_blocks_run(run_doc_blocks):
    namespace = run_doc_blocks("docs/concepts/multi_agent.md", blocks=10)
    assert namespace["first"].get_return() == 7.0
    assert set(namespace["config"].policies) == {"main", "small"}
    if importlib.util.find_spec("pettingzoo") is not None:  # the optional extra
        assert namespace["make_rps"]({}).possible_agents == ["player_0", "player_1"]
        turns = namespace["make_rps_in_turns"]({})
        assert list(turns.reset(seed=0)[0]) == ["player_0"] and list(turns.step({"player_0": 1})[0]) == [
            "player_1"
        ]
    if importlib.util.find_spec("pyspiel") is not None:  # OpenSpiel, not a flywheel dependency
        game = namespace["make_game"]({"game": "tic_tac_toe"})
        obs, _ = game.reset(seed=0)
        assert list(obs) == [0] and obs[0].shape == (27,) and game.action_spaces[0].n == 9
