"""PrevActionsPrevRewards: each episode's newest observation becomes RLlib's Dict of the observation, the last
n actions (one-hot / raw) and the last n rewards, zeros before the start."""

import gymnasium as gym
import numpy as np
import pytest

from flywheel.connectors import ConnectorPipelineV2
from flywheel.connectors.env_to_module import FlattenObservations, PrevActionsPrevRewards
from flywheel.episodes import MultiAgentEpisode
from flywheel.errors import ConnectorError

from ..conftest import episode_from

OBS_SPACE = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)


def obs(t):
    return np.array([t, -t], np.float32)


def episode(actions, rewards=None):
    return episode_from([obs(t) for t in range(len(actions) + 1)], actions=actions, rewards=rewards)


def call(piece, episodes):
    return piece(rl_module=None, batch={}, episodes=episodes)


def newest(episode):
    """The newest observation's Dict as plain lists (to compare with `==`)."""
    return {key: np.asarray(value).tolist() for key, value in episode.get_observations(-1).items()}


def test_output_space_is_rllibs_dict():
    piece = PrevActionsPrevRewards(OBS_SPACE, gym.spaces.Discrete(3), n_prev_actions=2, n_prev_rewards=1)
    assert piece.observation_space == gym.spaces.Dict(
        {
            "_orig_obs": OBS_SPACE,
            "prev_n_actions": gym.spaces.Box(0.0, 1.0, (6,), np.float32),
            "prev_n_rewards": gym.spaces.Box(-np.inf, np.inf, (1,), np.float32),
        }
    )
    assert piece.required_episode_lookback == 2


def test_discrete_actions_are_one_hot_and_zero_before_the_start_in_the_episodes():
    piece = PrevActionsPrevRewards(OBS_SPACE, gym.spaces.Discrete(3), n_prev_actions=2, n_prev_rewards=1)
    episodes = [episode([]), episode([2]), episode([0, 1, 2], rewards=[1.0, 2.0, 3.5])]
    assert call(piece, episodes) == {}  # the batch is left to the default pieces
    assert [newest(e) for e in episodes] == [
        {"_orig_obs": [0, 0], "prev_n_actions": [0, 0, 0, 0, 0, 0], "prev_n_rewards": [0]},
        {"_orig_obs": [1, -1], "prev_n_actions": [0, 0, 0, 0, 0, 1], "prev_n_rewards": [1]},
        {"_orig_obs": [3, -3], "prev_n_actions": [0, 1, 0, 0, 0, 1], "prev_n_rewards": [3.5]},
    ]
    assert episodes[2].get_observations(-1)["prev_n_actions"].dtype == np.float32
    assert episodes[2].get_observations(0).tolist() == [0, 0]  # older observations stay as they were


def test_discrete_with_a_start_offset():
    piece = PrevActionsPrevRewards(
        OBS_SPACE, gym.spaces.Discrete(2, start=5), n_prev_actions=2, n_prev_rewards=0
    )
    target = episode([6])
    call(piece, [target])
    assert newest(target) == {"_orig_obs": [1, -1], "prev_n_actions": [0, 0, 0, 1], "prev_n_rewards": []}


def test_box_actions_are_raw_and_several_rewards():
    action_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    piece = PrevActionsPrevRewards(OBS_SPACE, action_space, n_prev_actions=1, n_prev_rewards=2)
    assert piece.observation_space["prev_n_actions"] == action_space
    target = episode([np.array([0.5, -0.25], np.float32)], rewards=[4.0])
    call(piece, [target])
    assert newest(target) == {"_orig_obs": [1, -1], "prev_n_actions": [0.5, -0.25], "prev_n_rewards": [0, 4]}


def test_continued_chunk_reads_actions_and_rewards_from_its_lookback():
    chunk = episode([0, 1, 2], rewards=[1.0, 2.0, 3.0]).cut(len_lookback_buffer=2)
    piece = PrevActionsPrevRewards(OBS_SPACE, gym.spaces.Discrete(3), n_prev_actions=2, n_prev_rewards=2)
    call(piece, [chunk])
    assert newest(chunk) == {
        "_orig_obs": [3, -3],
        "prev_n_actions": [0, 1, 0, 0, 0, 1],
        "prev_n_rewards": [2, 3],
    }


def test_flatten_observations_after_it_gives_obs_actions_rewards():
    piece = PrevActionsPrevRewards(OBS_SPACE, gym.spaces.Discrete(3), n_prev_actions=1, n_prev_rewards=1)
    pipeline = ConnectorPipelineV2(
        OBS_SPACE, gym.spaces.Discrete(3), connectors=[piece, FlattenObservations()]
    )
    assert pipeline.observation_space == gym.spaces.Box(
        np.array([-1, -1, 0, 0, 0, -np.inf], np.float32), np.array([1, 1, 1, 1, 1, np.inf], np.float32)
    )
    target = episode([1], rewards=[2.5])
    pipeline(rl_module=None, batch={}, episodes=[target])
    assert target.get_observations(-1).dtype == np.float32
    assert target.get_observations(-1).tolist() == [1, -1, 0, 1, 0, 2.5]


def test_multi_agent_rewrites_the_agents_that_stepped_with_their_own_spaces():
    obs_spaces = gym.spaces.Dict({"a": OBS_SPACE, "b": OBS_SPACE})
    act_spaces = gym.spaces.Dict(
        {"a": gym.spaces.Discrete(2), "b": gym.spaces.Box(-2.0, 2.0, (1,), np.float32)}
    )
    piece = PrevActionsPrevRewards(obs_spaces, act_spaces, multi_agent=True)
    assert piece.observation_space["a"]["prev_n_actions"] == gym.spaces.Box(0.0, 1.0, (2,), np.float32)
    assert piece.observation_space["b"]["prev_n_actions"] == gym.spaces.Box(-2.0, 2.0, (1,), np.float32)
    ma_episode = MultiAgentEpisode()
    ma_episode.add_env_reset(observations={"a": obs(0), "b": obs(0)})
    ma_episode.add_env_step(
        observations={"a": obs(1)},
        actions={"a": 1, "b": np.array([1.5], np.float32)},
        rewards={"a": 2.0, "b": 3.0},
    )
    call(piece, [ma_episode])
    assert newest(ma_episode.agent_episodes["a"]) == {
        "_orig_obs": [1, -1],
        "prev_n_actions": [0, 1],
        "prev_n_rewards": [2],
    }
    assert ma_episode.agent_episodes["b"].get_observations(-1).tolist() == [0, 0]  # b did not observe


def test_as_learner_connector_is_refused_with_the_fix():
    with pytest.raises(
        ConnectorError,
        match=r"PrevActionsPrevRewards\(as_learner_connector=True\): the piece rewrites the observations in "
        r"the episodes on the env runners .* Fix: keep it in env_to_module_connector only",
    ):
        PrevActionsPrevRewards(as_learner_connector=True)


def test_output_space_waits_for_the_action_space():
    pipeline = ConnectorPipelineV2(OBS_SPACE, None, connectors=[PrevActionsPrevRewards()])
    assert pipeline.observation_space is None
    pipeline.input_action_space = gym.spaces.Discrete(2)
    assert pipeline.observation_space["prev_n_actions"].shape == (2,)


def test_invalid_spaces():
    with pytest.raises(
        ConnectorError,
        match=r"PrevActionsPrevRewards needs a Discrete or Box action space, got MultiDiscrete",
    ):
        PrevActionsPrevRewards(OBS_SPACE, gym.spaces.MultiDiscrete([2, 2]))
