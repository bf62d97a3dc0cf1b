"""The off-policy learner pipeline on replayed transitions: the batch from the columns (untouched
episodes) equals the batch from the episode objects (after a piece read them), per module; NEXT_OBS on
ordinary chunks; NumpyToTensor; pieces inserted relative to the defaults, as RLlib code does."""

import gymnasium as gym
import numpy as np
import pytest
import torch

from flywheel import Columns, ConnectorV2, DQNConfig
from flywheel.connectors.learner import (
    AddNextObservationsFromEpisodesToTrainBatch,
    AddObservationsFromEpisodesToBatch,
    AddOneTsToEpisodesAndTruncate,
    NumpyToTensor,
)
from flywheel.episodes import SingleAgentEpisode
from flywheel.replay import INDICES, MultiAgentEpisodeReplayBuffer

OBS = gym.spaces.Dict({"pos": gym.spaces.Box(-1e3, 1e3, (2,), np.float32), "id": gym.spaces.Discrete(99)})
ACT = gym.spaces.Discrete(3)


class Stateless:
    def is_stateful(self):
        return False


MODULES = {"p0": Stateless(), "p1": Stateless()}


def stored(base, steps, module_id, *, terminated=True):
    """An episode of `module_id` whose observation at t is {"pos": [base + t, -t], "id": t}."""
    observations = [{"pos": np.array([base + t, -t], np.float32), "id": t} for t in range(steps + 1)]
    episode = SingleAgentEpisode(
        observations=observations,
        observation_space=OBS,
        actions=[t % 3 for t in range(steps)],
        action_space=ACT,
        rewards=[float(t) for t in range(steps)],
        extra_model_outputs={"logp": [-0.1 * t for t in range(steps)]},
        terminated=terminated,
        len_lookback_buffer=0,
        module_id=module_id,
    )
    return episode.to_numpy()


@pytest.fixture
def replay():
    buffer = MultiAgentEpisodeReplayBuffer(capacity=100, seed=0)
    buffer.add([stored(0, 6, "p0"), stored(100, 4, "p1", terminated=False), stored(200, 5, "p0")])
    return buffer


def pipeline(**learners):
    return DQNConfig().learners(**learners).build_learner_connector(OBS, ACT)


def run(pipeline, episodes):
    return pipeline(rl_module=MODULES, batch={}, episodes=episodes, shared_data={})


def assert_batches_equal(a, b):
    assert sorted(a) == sorted(b)
    for module_id in a:
        assert sorted(a[module_id]) == sorted(b[module_id])
        for column in a[module_id]:
            for x, y in zip(_leaves(a[module_id][column]), _leaves(b[module_id][column]), strict=True):
                assert x.dtype == y.dtype, (module_id, column)
                np.testing.assert_array_equal(x, y, err_msg=f"{module_id}/{column}")


def _leaves(data):
    return [leaf for value in data.values() for leaf in _leaves(value)] if isinstance(data, dict) else [data]


def test_columns_and_episode_objects_give_the_same_batch(replay):
    sampled = replay.sample(16, n_step=3, gamma=0.5, include_extra_model_outputs=True)
    from_columns = run(pipeline(), sampled)
    assert not sampled.touched
    for episode in sampled:  # what a custom piece does: read the episodes
        assert len(episode) == 1
    from_episodes = run(pipeline(), sampled)
    assert_batches_equal(from_columns, from_episodes)
    p1 = from_columns["p1"]
    assert sorted(p1) == sorted(
        [Columns.OBS, Columns.NEXT_OBS, Columns.ACTIONS, Columns.REWARDS, Columns.TERMINATEDS,
         Columns.TRUNCATEDS, Columns.N_STEP, Columns.WEIGHTS, INDICES, "logp"]
    )  # fmt: skip
    assert isinstance(p1[Columns.REWARDS], torch.Tensor) and p1[Columns.OBS]["pos"].shape == (16, 2)
    t = p1[Columns.OBS]["id"].numpy()
    n = p1[Columns.N_STEP].numpy()
    np.testing.assert_array_equal(p1[Columns.NEXT_OBS]["id"].numpy(), t + n)  # o_{t+n}
    np.testing.assert_array_equal(n, np.minimum(3, 4 - t))  # ongoing: stops at the newest stored obs
    np.testing.assert_allclose(p1["logp"].numpy(), -0.1 * t, rtol=1e-6)


def test_changes_a_custom_piece_makes_to_the_episodes_reach_the_batch(replay):
    class DoubleRewards(ConnectorV2):
        def __call__(self, *, episodes, batch, **kwargs):
            for episode in episodes:
                episode.set_rewards(new_data=episode.get_rewards(0) * 2, at_indices=0)
            return batch

    sampled = replay.sample(8, n_step=2, gamma=0.5)
    plain = run(pipeline(), sampled)  # before the episodes were touched
    doubled = run(pipeline(learner_connector=lambda obs, act: DoubleRewards()), sampled)
    for module_id in ("p0", "p1"):
        torch.testing.assert_close(doubled[module_id][Columns.REWARDS], 2 * plain[module_id][Columns.REWARDS])


def test_a_piece_that_adds_a_column_per_episode(replay):
    class AddT(ConnectorV2):
        def __call__(self, *, episodes, batch, **kwargs):
            for episode in episodes:
                self.add_batch_item(batch, "t", episode.t_started, single_agent_episode=episode)
            return batch

    batch = run(pipeline(learner_connector=lambda obs, act: AddT()), replay.sample(8))
    for columns in batch.values():
        np.testing.assert_array_equal(columns["t"].numpy(), columns[Columns.OBS]["id"].numpy())


def test_rllib_style_insertions_relative_to_the_default_pieces(replay):
    seen = {}

    class AfterTensors(ConnectorV2):
        def __call__(self, *, batch, **kwargs):
            seen["types"] = {type(columns[Columns.NEXT_OBS]["pos"]) for columns in batch.values()}
            return batch

    learner_pipeline = pipeline()
    learner_pipeline.insert_after(
        AddObservationsFromEpisodesToBatch, AddNextObservationsFromEpisodesToTrainBatch()
    )
    learner_pipeline.insert_after(NumpyToTensor, AfterTensors())
    assert learner_pipeline.connectors[-1].name == "AfterTensors"
    run(learner_pipeline, replay.sample(4))
    assert seen["types"] == {torch.Tensor}


def test_next_observations_of_ordinary_chunks_with_and_without_a_bootstrap_row():
    chunk = SingleAgentEpisode(
        observations=[np.array([t], np.float32) for t in range(4)],
        actions=[0, 1, 0],
        rewards=[1.0, 1.0, 1.0],
        len_lookback_buffer=0,
    ).to_numpy()
    piece = AddNextObservationsFromEpisodesToTrainBatch()
    batch = piece(rl_module=MODULES, batch={}, episodes=[chunk], shared_data={})
    assert batch["default_policy"][Columns.NEXT_OBS][0][:, 0].tolist() == [1.0, 2.0, 3.0]
    shared = {}
    AddOneTsToEpisodesAndTruncate()(rl_module=MODULES, batch={}, episodes=[chunk], shared_data=shared)
    batch = piece(rl_module=MODULES, batch={}, episodes=[chunk], shared_data=shared)
    assert batch["default_policy"][Columns.NEXT_OBS][0][:, 0].tolist() == [1.0, 2.0, 3.0, 3.0]
