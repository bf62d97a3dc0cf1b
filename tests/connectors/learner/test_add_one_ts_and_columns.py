"""AddOneTsToEpisodesAndTruncate + the column pieces: rows, extra bootstrap row, done flags."""

import numpy as np
import pytest
import torch

from flywheel.columns import Columns
from flywheel.connectors.connector import ConnectorV2
from flywheel.connectors.learner import (
    AddObservationsFromEpisodesToBatch,
    AddOneTsToEpisodesAndTruncate,
    BatchIndividualItems,
    default_learner_connectors,
    module_episodes,
)
from flywheel.connectors.learner.add_one_ts_and_truncate import remove_bootstrap_timesteps
from flywheel.connectors.learner.module_episodes import BOOTSTRAP_CHUNK_LENS
from flywheel.connectors.pipeline import ConnectorPipelineV2
from flywheel.episodes import SingleAgentEpisode
from flywheel.errors import ConnectorError


def chunk(obs, actions, rewards, *, terminated=False, truncated=False, t_started=0, module_id=None):
    """A numpy'd chunk with obs = the given scalars as shape-(1,) rows and logp = -action/10."""
    episode = SingleAgentEpisode(
        observations=[np.array([o], np.float32) for o in obs],
        actions=list(actions),
        rewards=list(rewards),
        extra_model_outputs={Columns.ACTION_LOGP: [-a / 10 for a in actions]},
        terminated=terminated,
        truncated=truncated,
        t_started=t_started,
        len_lookback_buffer=0,
        module_id=module_id,
    )
    return episode.to_numpy()


class Stateless:
    def is_stateful(self):
        return False


MODULES = {"default_policy": Stateless(), "p1": Stateless()}


def run(pieces, episodes, shared_data=None):
    shared_data = {} if shared_data is None else shared_data
    return ConnectorPipelineV2(connectors=pieces)(
        rl_module=MODULES, batch={}, episodes=episodes, shared_data=shared_data
    )


@pytest.fixture
def episodes():
    terminated = chunk([0, 1, 2, 3], [1, 0, 1], [1.0, 2.0, 3.0], terminated=True)
    cut = chunk([7, 8, 9], [0, 1], [4.0, 5.0], t_started=20)
    return [terminated, cut]


def test_add_one_ts_writes_mask_flags_and_chunk_lens(episodes):
    shared = {}
    batch = run([AddOneTsToEpisodesAndTruncate()], episodes, shared)
    cols = batch["default_policy"]
    assert [m.tolist() for m in cols[Columns.LOSS_MASK]] == [[True, True, True, False], [True, True, False]]
    assert [t.tolist() for t in cols[Columns.TERMINATEDS]] == [
        [False, False, True, False],
        [False, False, False],
    ]
    assert [t.tolist() for t in cols[Columns.TRUNCATEDS]] == [
        [False, False, False, False],
        [False, True, False],
    ]
    assert shared[BOOTSTRAP_CHUNK_LENS] == {"default_policy": [4, 3]}


def test_add_one_ts_extends_the_chunks_in_place_and_the_learner_takes_it_off(episodes):
    """As RLlib's: the chunks grow by one timestep (last obs/action/logp again, reward 0.0) and a
    chunk that did not end is truncated; `remove_bootstrap_timesteps` restores them exactly."""
    shared = {}
    run([AddOneTsToEpisodesAndTruncate()], episodes, shared)
    terminated, cut = episodes
    assert (len(terminated), len(cut)) == (4, 3)
    assert (terminated.t, cut.t) == (4, 23)
    assert terminated.get_rewards().tolist() == [1.0, 2.0, 3.0, 0.0]
    assert terminated.get_actions().tolist() == [1, 0, 1, 1]
    assert cut.get_observations()[:, 0].tolist() == [7, 8, 9, 9]
    np.testing.assert_allclose(cut.get_extra_model_outputs(Columns.ACTION_LOGP), [0, -0.1, -0.1])
    assert (terminated.is_terminated, terminated.is_truncated, cut.is_truncated) == (True, False, True)
    remove_bootstrap_timesteps(shared)
    assert (len(terminated), len(cut), terminated.t, cut.t) == (3, 2, 3, 22)
    assert cut.get_observations()[:, 0].tolist() == [7, 8, 9]
    assert terminated.get_rewards().tolist() == [1.0, 2.0, 3.0]
    assert cut.get_extra_model_outputs(Columns.ACTION_LOGP).tolist() == [0, -0.1]
    assert (terminated.is_truncated, cut.is_truncated) == (False, False)
    cut.validate()


class RewardsPerStep(ConnectorV2):
    """A user piece written as RLlib's examples write them: `len(episode)` rewards per chunk, the
    bootstrap timestep's 0.0 included (RLlib's `appo_custom_algorithm_w_shared_data_actor.py`)."""

    def __call__(self, *, episodes, batch, **kwargs):
        for episode in self.single_agent_episode_iterator(episodes):
            rewards = [10 * r for r in episode.get_rewards()]
            self.add_n_batch_items(batch, Columns.REWARDS, rewards, len(episode), episode)
        return batch


def test_a_user_piece_sees_the_extended_chunks(episodes):
    pieces = [AddOneTsToEpisodesAndTruncate(), RewardsPerStep(), *default_learner_connectors()]
    cols = run(pieces, episodes)["default_policy"]
    assert cols[Columns.REWARDS].tolist() == [10.0, 20.0, 30.0, 0.0, 40.0, 50.0, 0.0]
    assert cols[Columns.OBS][:, 0].tolist() == [0, 1, 2, 3, 7, 8, 9]
    assert cols[Columns.LOSS_MASK].tolist() == [True, True, True, False, True, True, False]


def test_columns_with_bootstrap_rows(episodes):
    pieces = [AddOneTsToEpisodesAndTruncate(), *default_learner_connectors()]
    cols = run(pieces, episodes)["default_policy"]
    assert cols[Columns.OBS].shape == (7, 1)
    assert cols[Columns.OBS][:, 0].tolist() == [0, 1, 2, 3, 7, 8, 9]
    assert cols[Columns.ACTIONS].tolist() == [1, 0, 1, 1, 0, 1, 1]
    assert cols[Columns.REWARDS].tolist() == [1.0, 2.0, 3.0, 0.0, 4.0, 5.0, 0.0]
    assert cols[Columns.REWARDS].dtype == torch.float32  # the last default piece is NumpyToTensor
    np.testing.assert_allclose(cols[Columns.ACTION_LOGP], [-0.1, 0, -0.1, -0.1, 0, -0.1, -0.1])
    assert cols[Columns.TERMINATEDS].tolist() == [False, False, True, False, False, False, False]
    assert cols[Columns.TRUNCATEDS].tolist() == [False, False, False, False, False, True, False]
    assert cols[Columns.LOSS_MASK].tolist() == [True, True, True, False, True, True, False]


def test_columns_without_bootstrap_rows(episodes):
    episodes[1].is_truncated = True
    cols = run(default_learner_connectors(), episodes)["default_policy"]
    assert cols[Columns.OBS][:, 0].tolist() == [0, 1, 2, 7, 8]
    assert cols[Columns.ACTIONS].tolist() == [1, 0, 1, 0, 1]
    assert cols[Columns.REWARDS].tolist() == [1.0, 2.0, 3.0, 4.0, 5.0]
    assert cols[Columns.TERMINATEDS].tolist() == [False, False, True, False, False]
    assert cols[Columns.TRUNCATEDS].tolist() == [False, False, False, False, True]
    assert Columns.LOSS_MASK not in cols


def test_module_ids_and_empty_chunks():
    p1 = chunk([0, 1], [1], [1.0], module_id="p1")
    empty = chunk([5], [], [], t_started=3)
    default = chunk([2, 3], [0], [2.0])
    assert [(mid, len(e)) for mid, e in module_episodes([p1, empty, default])] == [
        ("p1", 1),
        ("default_policy", 1),
    ]
    batch = run(default_learner_connectors(), [p1, empty, default])
    assert sorted(batch) == ["default_policy", "p1"]
    assert batch["p1"][Columns.OBS][:, 0].tolist() == [0]
    assert batch["default_policy"][Columns.REWARDS].tolist() == [2.0]


class SetObs(AddObservationsFromEpisodesToBatch):
    """A user piece that sets OBS for the whole module (rows given)."""

    def __init__(self, rows):
        super().__init__()
        self.rows = rows

    def __call__(self, *, batch, **kwargs):
        batch.setdefault("default_policy", {})[Columns.OBS] = np.full((self.rows, 1), -1.0, np.float32)
        return batch


def test_preset_obs_is_kept_and_wrong_row_count_raises(episodes):
    pieces = [AddOneTsToEpisodesAndTruncate(), SetObs(7), *default_learner_connectors()]
    assert run(pieces, episodes)["default_policy"][Columns.OBS][:, 0].tolist() == [-1.0] * 7
    pieces = [AddOneTsToEpisodesAndTruncate(), SetObs(5), *default_learner_connectors()]
    with pytest.raises(
        ConnectorError, match=r"module 'default_policy' has columns of different lengths: .*'obs': 5"
    ):
        run(pieces, episodes)


def test_add_one_ts_needs_shared_data(episodes):
    with pytest.raises(ConnectorError, match=r"got shared_data=None, expected a dict"):
        AddOneTsToEpisodesAndTruncate()(rl_module=None, batch={}, episodes=episodes, shared_data=None)


def test_batch_individual_items_keeps_arrays_and_concats_nested():
    batch = {
        "m": {
            "a": [np.array([1, 2]), np.array([3])],
            "s": [{"h": np.zeros((1, 2))}, {"h": np.ones((2, 2))}],
            "x": np.array([7, 8, 9]),
        }
    }
    out = BatchIndividualItems()(rl_module=None, batch=batch, episodes=[])["m"]
    assert out["a"].tolist() == [1, 2, 3]
    assert out["s"]["h"].tolist() == [[0, 0], [1, 1], [1, 1]]
    assert out["x"].tolist() == [7, 8, 9]
