"""SingleAgentEpisode: recording, getters/setters, to_numpy, validate, state (counting scenario)."""

import gymnasium as gym
import numpy as np
import pytest
from episode_scenarios import ACT_SPACE, OBS_SPACE, counting_episode, obs, step_more, values

from flywheel import SingleAgentEpisode
from flywheel.errors import EpisodeError, EpisodeIndexError


def test_recording_counts_steps_and_return():
    episode = counting_episode(5)
    assert len(episode) == 5 and episode.t == 5 and episode.t_started == 0
    assert episode.env_steps() == 5 and episode.agent_steps() == 5
    assert episode.get_return() == 15.0
    assert not episode.is_done and not episode.is_numpy
    assert len(episode.id_) == 32 and episode.id_ != counting_episode(1).id_
    assert episode.custom_data == {}


def test_done_flags():
    episode = counting_episode(3, terminated_at=3)
    assert episode.is_terminated and episode.is_done and not episode.is_truncated
    truncated = counting_episode(2)
    truncated.add_env_step(obs(3), 1, 3.0, truncated=True)
    assert truncated.is_truncated and truncated.is_done and not truncated.is_terminated


def test_stepping_a_done_episode_raises():
    episode = counting_episode(3, terminated_at=3)
    with pytest.raises(EpisodeError, match=r"is already done \(terminated=True, truncated=False\) at t=3"):
        step_more(episode, 4)


def test_stepping_a_numpy_episode_raises():
    episode = counting_episode(2).to_numpy()
    with pytest.raises(
        EpisodeError, match=r"was turned to numpy and cannot grow; call cut\(\) before to_numpy\(\)"
    ):
        step_more(episode, 3)


def test_second_reset_raises():
    episode = counting_episode(1)
    with pytest.raises(
        EpisodeError, match=r"add_env_reset\(\) needs a fresh episode, but episode \w+ already holds 2"
    ):
        episode.add_env_reset(obs(0))


def test_infos_default_to_empty_dicts():
    episode = SingleAgentEpisode()
    episode.add_env_reset(obs(0))
    episode.add_env_step(obs(1), 1, 1.0)
    assert episode.get_infos() == [{}, {}]


@pytest.mark.parametrize("numpy", [False, True])
def test_getters_with_every_index_kind(numpy):
    episode = counting_episode(5)
    if numpy:
        episode.to_numpy()
    assert values(episode.get_observations()) == [0, 1, 2, 3, 4, 5]
    assert episode.get_observations(-1).tolist() == [5.0]
    assert episode.get_observations(2).tolist() == [2.0]
    assert values(episode.get_observations(slice(1, 3))) == [1, 2]
    assert values(episode.get_observations([0, -1])) == [0, 5]
    assert values(episode.get_actions()) == [1, 0, 1, 0, 1]
    assert episode.get_actions(-1) == 1 and episode.get_actions(1) == 0
    assert values(episode.get_rewards(slice(-2, None))) == [4.0, 5.0]
    assert values(episode.get_rewards([0, 2])) == [1.0, 3.0]
    assert episode.get_infos(-1) == {"t": 5}
    assert episode.get_infos(slice(0, 2)) == [{"t": 0}, {"t": 1}]
    assert values(episode.get_extra_model_outputs("logp")) == [-0.5, -1.0, -1.5, -2.0, -2.5]
    assert episode.get_extra_model_outputs("state_out", -1)["h"].tolist() == [5.0, 5.0]
    everything = episode.get_extra_model_outputs(indices=0)
    assert set(everything) == {"logp", "state_out"} and everything["logp"] == -0.5
    containers = (np.ndarray,) if numpy else (list,)
    assert isinstance(episode.get_observations(slice(0, 2)), containers)
    assert isinstance(episode.get_infos(slice(0, 2)), list)


def test_numpy_getters_stack():
    episode = counting_episode(5).to_numpy()
    assert episode.get_observations(slice(0, 3)).shape == (3, 1)
    assert episode.get_actions().dtype == np.int64
    assert episode.get_extra_model_outputs("state_out", slice(0, 2))["h"].shape == (2, 2)


def test_newest_observation_is_the_recorded_object():
    episode = counting_episode(2)
    last = obs(3)
    episode.add_env_step(last, 1, 3.0)
    assert episode.get_observations(-1) is last


@pytest.mark.parametrize("numpy", [False, True])
def test_lookback_and_fill(numpy):
    episode = SingleAgentEpisode(
        observations=[obs(t) for t in range(6)],
        actions=[t % 2 for t in range(1, 6)],
        rewards=[float(t) for t in range(1, 6)],
        observation_space=OBS_SPACE,
        action_space=ACT_SPACE,
        len_lookback_buffer=3,
        t_started=3,
    )
    if numpy:
        episode.to_numpy()
    assert len(episode) == 2 and episode.t == 5
    assert values(episode.get_observations()) == [3, 4, 5]
    assert episode.get_rewards(-1, neg_index_as_lookback=True) == 3.0
    assert values(episode.get_rewards(slice(-5, 1), neg_index_as_lookback=True, fill=0.0)) == [
        0,
        0,
        1,
        2,
        3,
        4,
    ]
    assert episode.get_actions(-4, neg_index_as_lookback=True, fill=0) == 0
    assert values(episode.get_observations(slice(-2, 5), fill=-1)) == [4, 5, -1, -1]
    filled = episode.get_observations(7, fill=0)
    assert filled.dtype == np.float32 and filled.tolist() == [0.0]
    with pytest.raises(
        EpisodeIndexError, match="Cannot get at index 7: out of range of the buffer's 3 lookback"
    ):
        episode.get_observations(7)
    assert episode.get_return() == 9.0


def test_missing_extra_output_key_raises():
    with pytest.raises(
        EpisodeError, match=r"has no extra model output 'vf_preds'; it has \['logp', 'state_out'\]"
    ):
        counting_episode(2).get_extra_model_outputs("vf_preds")


@pytest.mark.parametrize("numpy", [False, True])
def test_setters(numpy):
    episode = counting_episode(4)
    if numpy:
        episode.to_numpy()
    episode.set_observations(new_data=obs(40), at_indices=-1)
    episode.set_actions(new_data=[0, 0], at_indices=slice(0, 2))
    episode.set_rewards(new_data=[7.0, 8.0, 9.0, 10.0])
    episode.set_extra_model_outputs(key="logp", new_data=[-9.0], at_indices=[1])
    assert values(episode.get_observations()) == [0, 1, 2, 3, 40]
    assert values(episode.get_actions()) == [0, 0, 1, 0]
    assert episode.get_return() == 34.0
    assert values(episode.get_extra_model_outputs("logp")) == [-0.5, -9.0, -1.5, -2.0]
    with pytest.raises(EpisodeError, match="has no extra model output 'nope'"):
        episode.set_extra_model_outputs(key="nope", new_data=1.0, at_indices=0)


def test_scale_obs_connector_pattern():
    """What a custom env-to-module piece does every step (API.md section 4)."""
    episode = counting_episode(3)
    observation = episode.get_observations(-1)
    episode.set_observations(new_data=observation * 0.5, at_indices=-1)
    assert episode.get_observations(-1).tolist() == [1.5]
    assert values(episode.get_observations()) == [0, 1, 2, 1.5]


def test_to_numpy_dtypes_and_shapes():
    episode = counting_episode(4)
    assert episode.to_numpy() is episode
    assert episode.is_numpy
    assert episode.observations.data.dtype == np.float32 and episode.observations.data.shape == (5, 1)
    assert episode.actions.data.dtype == np.int64 and episode.actions.data.shape == (4,)
    assert episode.rewards.data.dtype == np.float32 and episode.rewards.data.tolist() == [1.0, 2.0, 3.0, 4.0]
    assert episode.extra_model_outputs["logp"].data.dtype == np.float64
    assert episode.extra_model_outputs["state_out"].data["h"].shape == (4, 2)
    assert isinstance(episode.infos.data, list)
    observations = episode.observations.data
    episode.to_numpy()
    assert episode.observations.data is observations


def test_to_numpy_dict_observations():
    space = gym.spaces.Dict(
        {"pos": gym.spaces.Box(-10.0, 10.0, (3,), np.float32), "mode": gym.spaces.Discrete(4)}
    )
    episode = SingleAgentEpisode(
        observation_space=space, action_space=gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    )
    episode.add_env_reset({"pos": np.zeros(3), "mode": 0})
    for t in range(1, 4):
        episode.add_env_step({"pos": np.full(3, t), "mode": t}, np.full(2, 0.1 * t), 1.0)
    episode.to_numpy()
    data = episode.observations.data
    assert data["pos"].shape == (4, 3) and data["pos"].dtype == np.float32
    assert data["mode"].tolist() == [0, 1, 2, 3] and data["mode"].dtype == np.int64
    assert episode.actions.data.shape == (3, 2) and episode.actions.data.dtype == np.float32
    newest = episode.get_observations(-1)
    assert newest["mode"] == 3 and newest["pos"].tolist() == [3.0, 3.0, 3.0]
    assert episode.get_observations(slice(1, 3))["mode"].tolist() == [1, 2]


def test_empty_episode_to_numpy_uses_space_shapes():
    episode = SingleAgentEpisode(observation_space=OBS_SPACE, action_space=ACT_SPACE)
    episode.add_env_reset(obs(0))
    episode.to_numpy()
    assert episode.observations.data.shape == (1, 1)
    assert episode.actions.data.shape == (0,) and episode.rewards.data.shape == (0,)
    assert episode.get_return() == 0.0


def test_construct_from_arrays_with_lookback():
    episode = SingleAgentEpisode(
        "abc",
        observations=np.arange(6, dtype=np.float32).reshape(6, 1),
        actions=np.array([1, 0, 1, 0, 1]),
        rewards=np.arange(1, 6, dtype=np.float32),
        extra_model_outputs={"logp": np.zeros(5, np.float32)},
        len_lookback_buffer=1,
        terminated=True,
    )
    assert episode.is_numpy and episode.id_ == "abc"
    assert len(episode) == 4 and episode.t == 4 and episode.is_terminated
    assert episode.get_return() == 14.0
    assert episode.get_infos() == [{}, {}, {}, {}, {}]
    assert episode.get_actions(-1, neg_index_as_lookback=True) == 1


def test_auto_lookback_makes_all_given_steps_history():
    episode = SingleAgentEpisode(
        observations=[obs(0), obs(1), obs(2)], actions=[1, 0], rewards=[1.0, 2.0], t_started=2
    )
    assert len(episode) == 0 and episode.t == 2
    assert values(episode.get_observations()) == [2]
    assert values(episode.get_rewards(slice(-2, 0), neg_index_as_lookback=True)) == [1.0, 2.0]
    assert (
        len(
            SingleAgentEpisode(
                observations=[obs(0), obs(1)], actions=[1], rewards=[1.0], len_lookback_buffer=0
            )
        )
        == 1
    )


def test_bad_lookback_length_raises():
    with pytest.raises(
        EpisodeError, match="Expected len_lookback_buffer to be an int >= 0 or 'auto', got -1"
    ):
        SingleAgentEpisode(observations=[obs(0)], len_lookback_buffer=-1)


def test_validate_lists_every_problem():
    with pytest.raises(
        EpisodeError,
        match=r"\(observations: 3 in the chunk, so 2 steps\) is inconsistent: infos has 2 items, expected 3; "
        r"actions has 1 items, expected 2; extra_model_outputs\['logp'\] has 3 items, expected 2\. Record data",
    ):
        SingleAgentEpisode(
            observations=[obs(0), obs(1), obs(2)],
            infos=[{}, {}],
            actions=[1],
            rewards=[1.0, 2.0],
            extra_model_outputs={"logp": [0.0, 0.0, 0.0]},
            len_lookback_buffer=0,
        )


def test_validate_checks_t_and_done_flags():
    episode = counting_episode(3)
    episode.t = 7
    with pytest.raises(EpisodeError, match=r"t - t_started is 7, expected 3 \(one per step\)"):
        episode.validate()
    episode.t, episode.t_started = 2, -1
    with pytest.raises(EpisodeError, match="t_started is -1, expected >= 0"):
        episode.validate()
    with pytest.raises(
        EpisodeError, match=r"the episode is done but holds no observation \(add_env_reset\(\) never ran\)"
    ):
        SingleAgentEpisode(observations=[], terminated=True)
    counting_episode(3, terminated_at=3).validate()


@pytest.mark.parametrize("numpy", [False, True])
def test_state_round_trip(numpy):
    episode = counting_episode(4, terminated_at=4)
    episode.agent_id, episode.module_id, episode.multi_agent_episode_id = "a0", "p0", "ma1"
    episode.custom_data["seen"] = [1]
    if numpy:
        episode.to_numpy()
    state = episode.get_state()
    restored = SingleAgentEpisode.from_state(state)
    assert restored.id_ == episode.id_ and (restored.agent_id, restored.module_id) == ("a0", "p0")
    assert restored.multi_agent_episode_id == "ma1"
    assert restored.observation_space == OBS_SPACE and restored.action_space == ACT_SPACE
    assert len(restored) == 4 and restored.is_terminated and restored.is_numpy == numpy
    assert values(restored.get_actions()) == [1, 0, 1, 0]
    assert values(restored.get_extra_model_outputs("logp")) == [-0.5, -1.0, -1.5, -2.0]
    assert restored.custom_data == {"seen": [1]} and restored.custom_data is not episode.custom_data


def test_state_does_not_follow_later_appends():
    episode = counting_episode(2)
    state = episode.get_state()
    step_more(episode, 3)
    assert len(SingleAgentEpisode.from_state(state)) == 2


def test_repr_is_short():
    episode = counting_episode(2)
    episode.id_ = "0123456789abcdef"
    assert (
        repr(episode)
        == "SingleAgentEpisode(id_=01234567, len=2, t_started=0, terminated=False, truncated=False)"
    )


def test_api_snippet_runs_as_written():
    """API.md section 5, as written."""
    import gymnasium as gym

    from flywheel import SingleAgentEpisode

    env = gym.make("CartPole-v1")
    obs, info = env.reset(seed=0)
    episode = SingleAgentEpisode(observation_space=env.observation_space, action_space=env.action_space)
    episode.add_env_reset(observation=obs, infos=info)
    for _ in range(5):
        action = env.action_space.sample()
        obs, reward, terminated, truncated, info = env.step(action)
        episode.add_env_step(obs, action, reward, infos=info, terminated=terminated, truncated=truncated)
    assert len(episode) == 5 and episode.get_return() == 5.0
    chunk = episode.cut(len_lookback_buffer=1)  # successor chunk, same id_
    episode.to_numpy()
    print(episode.get_observations(slice(0, 3)).shape, episode.get_actions(-1), episode.get_rewards())
    assert episode.get_observations(slice(0, 3)).shape == (3, 4)
    assert episode.get_rewards().tolist() == [1.0] * 5
    assert chunk.id_ == episode.id_ and chunk.t_started == 5
    assert np.array_equal(chunk.get_observations(0), episode.get_observations(-1))
    env.close()


def test_docs_page_examples_run_in_order(run_doc_blocks):
    """docs/concepts/episodes.md: its code blocks continue one another, so they run in one namespace."""
    namespace = run_doc_blocks("docs/concepts/episodes.md", blocks=9)
    assert len(namespace["whole"]) == 6 and namespace["whole"].is_numpy


def test_an_episode_built_empty_reads_as_empty_before_and_after_copies():
    import copy
    import pickle

    obs_space, act_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32), gym.spaces.Discrete(3)
    for make in (lambda e: e, copy.deepcopy, lambda e: pickle.loads(pickle.dumps(e))):
        episode = make(SingleAgentEpisode(observation_space=obs_space, action_space=act_space, t_started=5))
        assert (len(episode), episode.t, episode.is_reset) == (0, 5, False)
        assert episode.observation_space == obs_space
        assert episode.extra_model_outputs == {}
        episode.add_env_reset(np.zeros(2, np.float32))
        episode.add_env_step(np.ones(2, np.float32), 2, 1.0)
        assert (len(episode), episode.t, episode.get_actions(-1)) == (1, 6, 2)
        assert episode.to_numpy().get_observations().dtype == np.float32
