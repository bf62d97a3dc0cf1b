"""cut / slice / concat_episode on the counting scenario."""

import numpy as np
import pytest
from episode_scenarios import counting_episode, obs, step_more, values

from flywheel import MultiAgentEpisode
from flywheel.errors import EpisodeConcatError, EpisodeError, EpisodeIndexError


@pytest.mark.parametrize("numpy", [False, True])
def test_cut_carries_last_observation_and_lookback(numpy):
    episode = counting_episode(5)
    episode.agent_id, episode.module_id, episode.multi_agent_episode_id = "a0", "p0", "ma"
    episode.custom_data["hits"] = [1]
    if numpy:
        episode.to_numpy()
    chunk = episode.cut(len_lookback_buffer=2)
    assert chunk.id_ == episode.id_ and (chunk.agent_id, chunk.module_id, chunk.multi_agent_episode_id) == (
        "a0",
        "p0",
        "ma",
    )
    assert chunk.t_started == 5 and chunk.t == 5 and len(chunk) == 0 and not chunk.is_numpy
    assert chunk.observation_space == episode.observation_space and chunk.action_space == episode.action_space
    assert values(chunk.get_observations()) == [5]
    assert chunk.get_infos() == [{"t": 5}]
    assert values(chunk.get_observations(slice(-2, 1), neg_index_as_lookback=True)) == [3, 4, 5]
    assert values(chunk.get_actions(slice(-2, 0), neg_index_as_lookback=True)) == [0, 1]
    assert values(chunk.get_rewards(slice(-3, 0), neg_index_as_lookback=True, fill=0.0)) == [0.0, 4.0, 5.0]
    assert values(chunk.get_extra_model_outputs("logp", slice(-2, 0), neg_index_as_lookback=True)) == [
        -2.0,
        -2.5,
    ]
    assert chunk.get_extra_model_outputs("state_out", -1, neg_index_as_lookback=True)["h"].tolist() == [
        5.0,
        5.0,
    ]
    assert chunk.custom_data == {"hits": [1]}
    chunk.custom_data["hits"].append(2)
    assert episode.custom_data == {"hits": [1]}


def test_cut_successor_keeps_recording():
    episode = counting_episode(5)
    chunk = episode.cut(len_lookback_buffer=1)
    step_more(chunk, 6)
    step_more(chunk, 7, terminated=True)
    chunk.validate()
    assert len(chunk) == 2 and chunk.t == 7 and chunk.is_terminated
    assert values(chunk.get_observations()) == [5, 6, 7]
    assert values(chunk.get_rewards()) == [6.0, 7.0] and chunk.get_return() == 13.0
    assert values(chunk.get_actions(slice(-1, None), neg_index_as_lookback=True)) == [1, 0, 1]
    assert len(episode) == 5 and episode.t == 5


def test_cut_without_lookback_and_beyond_the_data():
    episode = counting_episode(3)
    bare = episode.cut()
    assert bare.observations.lookback == 0 and bare.actions.lookback == 0
    with pytest.raises(EpisodeIndexError, match="Cannot get at index"):
        bare.get_actions(-1, neg_index_as_lookback=True)
    deep = episode.cut(len_lookback_buffer=10)
    assert deep.actions.lookback == 3 and deep.observations.lookback == 3
    assert values(deep.get_observations(slice(-10, 1), neg_index_as_lookback=True)) == [0, 1, 2, 3]


def test_cut_of_a_done_episode_starts_undone():
    chunk = counting_episode(2, terminated_at=2).cut()
    assert not chunk.is_done and chunk.t_started == 2


def test_cut_rejects_negative_lookback():
    with pytest.raises(EpisodeError, match="Expected len_lookback_buffer >= 0 for cut"):
        counting_episode(2).cut(len_lookback_buffer=-1)


@pytest.mark.parametrize("numpy", [False, True])
def test_slice_middle(numpy):
    episode = counting_episode(5, terminated_at=5)
    if numpy:
        episode.to_numpy()
    part = episode.slice(slice(1, 4))
    assert part.id_ == episode.id_ and len(part) == 3 and part.t_started == 1 and part.t == 4
    assert not part.is_done and part.is_numpy == numpy
    assert values(part.get_observations()) == [1, 2, 3, 4]
    assert values(part.get_actions()) == [0, 1, 0]
    assert values(part.get_rewards()) == [2.0, 3.0, 4.0]
    assert values(part.get_extra_model_outputs("logp")) == [-1.0, -1.5, -2.0]
    assert part.get_infos() == [{"t": 1}, {"t": 2}, {"t": 3}, {"t": 4}]
    assert part.observations.lookback == 0


def test_slice_takes_lookback_from_before_the_start():
    episode = counting_episode(5, terminated_at=5)
    part = episode.slice(slice(3, None), len_lookback_buffer=2)
    assert part.is_terminated and len(part) == 2 and part.t_started == 3
    assert values(part.get_rewards(slice(-2, None), neg_index_as_lookback=True)) == [2.0, 3.0, 4.0, 5.0]
    assert values(part.get_observations(-2, neg_index_as_lookback=True)) == [1]
    capped = episode.slice(slice(1, 2), len_lookback_buffer=5)
    assert capped.actions.lookback == 1 and capped.observations.lookback == 1


def test_slice_inherits_the_lookback_depth_and_copies():
    episode = counting_episode(6).cut(len_lookback_buffer=3)
    for t in range(7, 10):
        step_more(episode, t)
    episode.to_numpy()
    part = episode.slice(slice(0, 2))
    assert part.actions.lookback == 3 and part.t_started == 6
    assert values(part.get_rewards(slice(-3, None), neg_index_as_lookback=True)) == [4.0, 5.0, 6.0, 7.0, 8.0]
    part.set_rewards(new_data=np.zeros(2, np.float32))
    assert values(episode.get_rewards()) == [7.0, 8.0, 9.0]


def test_slice_rejects_steps():
    with pytest.raises(EpisodeError, match=r"Expected a slice with step 1, got slice\(0, 4, 2\)"):
        counting_episode(5).slice(slice(0, 4, 2))


@pytest.mark.parametrize("numpy", [False, True])
def test_concat_rebuilds_the_whole_episode(numpy):
    first = counting_episode(3)
    second = first.cut(len_lookback_buffer=2)
    for t in range(4, 7):
        step_more(second, t, terminated=t == 6)
    second.get_infos(0)["late"] = True
    if numpy:
        first.to_numpy()
    first.concat_episode(second)
    first.validate()
    assert len(first) == 6 and first.t == 6 and first.is_terminated
    assert values(first.get_observations()) == [0, 1, 2, 3, 4, 5, 6]
    assert values(first.get_actions()) == [1, 0, 1, 0, 1, 0]
    assert first.get_return() == 21.0
    assert values(first.get_extra_model_outputs("logp")) == [-0.5, -1.0, -1.5, -2.0, -2.5, -3.0]
    assert first.get_infos(3) == {"t": 3, "late": True} and first.get_infos(-1) == {"t": 6}
    assert first.is_numpy == numpy


def test_concat_errors_name_the_mismatch():
    first = counting_episode(3)
    second = first.cut()
    step_more(second, 4)
    stranger = counting_episode(1, start=3)
    with pytest.raises(
        EpisodeError,
        match=rf"Cannot concat episode {stranger.id_} to episode {first.id_}: expected the same id_",
    ):
        first.concat_episode(stranger)
    stranger.id_ = first.id_
    stranger.t_started = 2
    with pytest.raises(EpisodeError, match="starting at t_started=2 to the chunk ending at t=3"):
        first.concat_episode(stranger)
    second.set_observations(new_data=obs(9), at_indices=0)
    with pytest.raises(
        EpisodeError,
        match=r"the other's first observation array\(\[9\.\], dtype=float32\) differs from this one's last array\(\[3\.\]",
    ):
        first.concat_episode(second)
    other_keys = first.cut()
    other_keys.extra_model_outputs.pop("logp")
    with pytest.raises(
        EpisodeError,
        match=r"extra model outputs \['state_out'\] differ from this one's \['logp', 'state_out'\]",
    ):
        first.concat_episode(other_keys)
    done = counting_episode(2, terminated_at=2)
    with pytest.raises(EpisodeError, match="it is already done at t=2"):
        done.concat_episode(done.cut())


def test_concat_errors_are_assertion_errors_as_in_rllib():
    """RLlib asserts in concat_episode; code that catches AssertionError there catches flywheel's too."""
    first = counting_episode(3)
    with pytest.raises(AssertionError) as caught:
        first.concat_episode(counting_episode(1, start=3))
    assert type(caught.value) is EpisodeConcatError and isinstance(caught.value, EpisodeError)
    two_agents = [
        MultiAgentEpisode(
            observations=[{"a": 0, "b": 0}, {"a": 1, "b": 1}],
            actions=[{"a": 0, "b": 0}],
            rewards=[{"a": 1.0, "b": 1.0}],
        )
        for _ in range(2)
    ]
    with pytest.raises(AssertionError, match="Cannot concat episode .* expected the same id_"):
        two_agents[0].concat_episode(two_agents[1])
