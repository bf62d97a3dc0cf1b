"""AddTimeDimToBatchAndZeroPad: sequences, zero padding, SEQ_LENS and STATE_IN at sequence starts."""

import numpy as np
import pytest

from flywheel.columns import Columns
from flywheel.connectors.learner import (
    AddOneTsToEpisodesAndTruncate,
    AddTimeDimToBatchAndZeroPad,
    GeneralAdvantageEstimation,
    default_learner_connectors,
)
from flywheel.connectors.pipeline import ConnectorPipelineV2
from flywheel.episodes import SingleAgentEpisode
from flywheel.errors import ConnectorError


class Recurrent:
    """Stateful stub: initial state h = [-1, -1], max_seq_len 3, V(s) = s[0] on [B, T, 1] obs."""

    model_config = {"max_seq_len": 3}

    def is_stateful(self):
        return True

    def get_initial_state(self):
        return {"h": np.array([-1.0, -1.0], np.float32)}

    def parameters(self):
        return iter([])

    def compute_values(self, batch, embeddings=None):
        assert batch[Columns.STATE_IN]["h"].shape[0] == batch[Columns.OBS].shape[0]
        return batch[Columns.OBS][..., 0]


def chunk(first_t, steps, *, t_started=0, lookback=0, terminated=False):
    """obs/state_out at step t are t (state h = [t, t]); `lookback` steps of history in front."""
    ts = list(range(first_t - lookback, first_t + steps + 1))
    episode = SingleAgentEpisode(
        observations=[np.array([t], np.float32) for t in ts],
        actions=[0] * (len(ts) - 1),
        rewards=[1.0] * (len(ts) - 1),
        extra_model_outputs={Columns.STATE_OUT: [{"h": np.array([t, t], np.float32)} for t in ts[:-1]]},
        terminated=terminated,
        t_started=t_started,
        len_lookback_buffer=lookback,
    )
    return episode.to_numpy()


def run(pieces, episodes):
    pipeline = ConnectorPipelineV2(connectors=pieces)
    return pipeline(rl_module={"default_policy": Recurrent()}, batch={}, episodes=episodes, shared_data={})


def test_sequences_padding_seq_lens_and_state_in():
    episodes = [chunk(0, 4, terminated=True), chunk(10, 2, t_started=10, lookback=1)]
    cols = run([AddOneTsToEpisodesAndTruncate(), *default_learner_connectors()], episodes)["default_policy"]
    # Chunk 1: 4 steps + 1 bootstrap row = 5 rows -> 2 sequences; chunk 2: 2 + 1 = 3 rows -> 1 sequence.
    assert cols[Columns.OBS].shape == (3, 3, 1)
    assert cols[Columns.OBS][..., 0].tolist() == [[0, 1, 2], [3, 4, 0], [10, 11, 12]]
    assert cols[Columns.SEQ_LENS].tolist() == [3, 2, 3]
    assert cols[Columns.LOSS_MASK].tolist() == [[True, True, True], [True, False, False], [True, True, False]]
    assert cols[Columns.REWARDS].tolist() == [[1, 1, 1], [1, 0, 0], [1, 1, 0]]
    # Initial state at the episode's first step; STATE_OUT of step 2 before the second sequence;
    # the lookback STATE_OUT (step 9) before the cut chunk.
    assert cols[Columns.STATE_IN]["h"].tolist() == [[-1, -1], [2, 2], [9, 9]]
    assert Columns.STATE_OUT not in cols


def test_without_bootstrap_rows_the_mask_is_created():
    cols = run(default_learner_connectors(), [chunk(0, 4)])["default_policy"]
    assert cols[Columns.SEQ_LENS].tolist() == [3, 1]
    assert cols[Columns.LOSS_MASK].tolist() == [[True, True, True], [True, False, False]]
    assert cols[Columns.ACTIONS].shape == (2, 3)


def test_gae_on_sequences_keeps_the_layout_and_masks_bootstrap_rows():
    pieces = [
        AddOneTsToEpisodesAndTruncate(),
        *default_learner_connectors(),
        GeneralAdvantageEstimation(gamma=1.0, lambda_=1.0),
    ]
    cols = run(pieces, [chunk(0, 4, terminated=True)])["default_policy"]
    # Terminated, gamma = lambda = 1: targets are the rewards to go [4, 3, 2, 1]; the masked
    # bootstrap row keeps V(s_T) = 4 (advantage 0), padding is 0.
    assert cols[Columns.VALUE_TARGETS].tolist() == [[4, 3, 2], [1, 4, 0]]
    assert cols[Columns.LOSS_MASK].tolist() == [[True, True, True], [True, False, False]]
    raw = np.array([4.0, 2.0, 0.0, -2.0])  # targets minus V(s) = s
    expected = (raw - raw.mean()) / raw.std()
    np.testing.assert_allclose(cols[Columns.ADVANTAGES], [expected[:3], [expected[3], 0, 0]], rtol=1e-6)


def test_a_preset_column_with_the_wrong_row_count_raises():
    class BadObs(AddTimeDimToBatchAndZeroPad):
        def __call__(self, *, batch, **kwargs):
            batch["default_policy"] = {Columns.OBS: np.zeros((2, 1), np.float32)}
            return batch

    with pytest.raises(ConnectorError, match=r"batch\['default_policy'\]\['obs'\] has 2 rows, expected 4"):
        run([BadObs(), *default_learner_connectors()], [chunk(0, 4)])
