"""AddTimeDimToBatchAndBootstrap: rows of runs of steps, each followed by its bootstrap element."""

import numpy as np
import pytest

from flywheel.algorithms.impala import IMPALAConfig
from flywheel.columns import Columns
from flywheel.connectors.learner import (
    AddOneTsToEpisodesAndTruncate,
    AddTimeDimToBatchAndBootstrap,
    AddTimeDimToBatchAndZeroPad,
    BatchIndividualItems,
    NumpyToTensor,
    default_learner_connectors,
)
from flywheel.connectors.learner.add_time_dim_and_bootstrap import row_layout
from flywheel.connectors.pipeline import ConnectorPipelineV2
from flywheel.episodes import SingleAgentEpisode
from flywheel.errors import ConnectorError


class Module:
    """What the piece asks a module: stateful or not, its max_seq_len and initial state."""

    def __init__(self, stateful=False, max_seq_len=3):
        self.stateful = stateful
        self.model_config = {"max_seq_len": max_seq_len}

    def is_stateful(self):
        return self.stateful

    def get_initial_state(self):
        return {"h": np.array([-1.0], np.float32)}


def chunk(first_t, steps, *, terminated=False, lookback=0):
    """Observation t at step t (t counts from `first_t`), action t % 2, reward t + 1, STATE_OUT h = [t]."""
    ts = list(range(first_t - lookback, first_t + steps + 1))
    episode = SingleAgentEpisode(
        observations=[np.array([t], np.float32) for t in ts],
        actions=[t % 2 for t in ts[:-1]],
        rewards=[float(t + 1) for t in ts[:-1]],
        extra_model_outputs={Columns.STATE_OUT: [{"h": np.array([t], np.float32)} for t in ts[:-1]]},
        terminated=terminated,
        t_started=first_t,
        len_lookback_buffer=lookback,
    )
    return episode.to_numpy()


def impala_pipeline(length):
    """IMPALA's learner pipeline up to the piece (without the final NumpyToTensor: NumPy rows to read)."""
    pieces = [AddOneTsToEpisodesAndTruncate(), *default_learner_connectors()]
    pipeline = ConnectorPipelineV2(connectors=pieces)
    pipeline.remove(AddTimeDimToBatchAndZeroPad)
    pipeline.remove(NumpyToTensor)
    pipeline.append(AddTimeDimToBatchAndBootstrap(sequence_length=length))
    return pipeline


def run(length, episodes, module):
    pipeline = impala_pipeline(length)
    return pipeline(rl_module={"default_policy": module}, batch={}, episodes=episodes, shared_data={})[
        "default_policy"
    ]


def test_stateless_rows_pack_chunks_and_repeat_the_observation_where_a_run_is_cut():
    # Chunk a: steps 0..4, terminated (bootstrap element: its terminal obs 5); chunk b: steps 20..22, cut
    # (bootstrap element: obs 23). Rows of 4: a run is at most 3 steps, and a row with one free place
    # left (no room for a step and its bootstrap element) is padded.
    cols = run(4, [chunk(0, 5, terminated=True), chunk(20, 3)], Module())
    assert cols[Columns.OBS].shape == (3, 4, 1)
    assert cols[Columns.OBS][..., 0].tolist() == [[0, 1, 2, 3], [3, 4, 5, 0], [20, 21, 22, 23]]
    assert cols[Columns.LOSS_MASK].astype(int).tolist() == [[1, 1, 1, 0], [1, 1, 0, 0], [1, 1, 1, 0]]
    assert cols[Columns.SEQ_LENS].tolist() == [4, 3, 4]
    assert cols[Columns.REWARDS].tolist() == [[1, 2, 3, 4], [4, 5, 0, 0], [21, 22, 23, 0]]
    # Termination flags: only on a's last step (obs 4); b was cut, so it is truncated at its last step.
    assert cols[Columns.TERMINATEDS].astype(int).tolist() == [[0, 0, 0, 0], [0, 1, 0, 0], [0, 0, 0, 0]]
    assert cols[Columns.TRUNCATEDS].astype(int).tolist() == [[0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 1, 0]]
    assert Columns.STATE_IN not in cols


def test_stateless_rows_that_fit_take_whole_chunks():
    cols = run(6, [chunk(0, 5), chunk(20, 2)], Module())
    assert cols[Columns.OBS][..., 0].tolist() == [[0, 1, 2, 3, 4, 5], [20, 21, 22, 0, 0, 0]]
    assert cols[Columns.LOSS_MASK].astype(int).tolist() == [[1, 1, 1, 1, 1, 0], [1, 1, 0, 0, 0, 0]]
    assert cols[Columns.ACTIONS].tolist() == [[0, 1, 0, 1, 0, 0], [0, 1, 1, 0, 0, 0]]


def test_stateful_rows_hold_one_run_each_and_start_from_the_state_before_it():
    # max_seq_len 3: runs of 2 steps. Chunk a (steps 0..4) from the episode start; chunk b continues an
    # episode at step 20 with one step of lookback (its STATE_OUT h = [19]).
    cols = run(99, [chunk(0, 5), chunk(20, 2, lookback=1)], Module(stateful=True))
    assert cols[Columns.OBS][..., 0].tolist() == [[0, 1, 2], [2, 3, 4], [4, 5, 0], [20, 21, 22]]
    assert cols[Columns.LOSS_MASK].astype(int).tolist() == [[1, 1, 0], [1, 1, 0], [1, 0, 0], [1, 1, 0]]
    assert cols[Columns.SEQ_LENS].tolist() == [3, 3, 2, 3]
    assert cols[Columns.STATE_IN]["h"][:, 0].tolist() == [-1, 1, 3, 19]


def test_a_custom_loss_mask_stays_false():
    class MaskFirstStep(AddOneTsToEpisodesAndTruncate):
        def __call__(self, *, batch, **kwargs):
            batch = super().__call__(batch=batch, **kwargs)
            batch["default_policy"][Columns.LOSS_MASK][0][0] = False
            return batch

    pipeline = impala_pipeline(4)
    pipeline.remove(AddOneTsToEpisodesAndTruncate)
    pipeline.prepend(MaskFirstStep())
    out = pipeline(rl_module={"default_policy": Module()}, batch={}, episodes=[chunk(0, 2)], shared_data={})
    assert out["default_policy"][Columns.LOSS_MASK].astype(int).tolist() == [[0, 1, 0, 0]]


def test_without_bootstrap_rows_the_piece_explains_what_is_missing():
    pipeline = ConnectorPipelineV2(
        connectors=[*default_learner_connectors(), AddTimeDimToBatchAndBootstrap()]
    )
    with pytest.raises(ConnectorError, match=r"no AddOneTsToEpisodesAndTruncate ran before it"):
        pipeline(rl_module={"default_policy": Module()}, batch={}, episodes=[chunk(0, 2)], shared_data={})


def test_rows_of_one_element_are_refused():
    with pytest.raises(ConnectorError, match=r"rows of at least 2 elements .* got 1"):
        run(1, [chunk(0, 2)], Module())


def test_row_layout_sources_and_masks():
    layout = row_layout([6, 4], 4, pack=True)
    assert layout.source.reshape(-1, 4).tolist() == [[0, 1, 2, 3], [3, 4, 5, 0], [6, 7, 8, 9]]
    assert layout.used.reshape(-1, 4).astype(int).tolist() == [[1, 1, 1, 1], [1, 1, 1, 0], [1, 1, 1, 1]]
    assert layout.starts == [(0, 0), (0, 3), (1, 0)]
    assert row_layout([], 4, pack=True).source.shape == (0,)


def test_impala_config_puts_the_piece_before_the_tensors_with_rows_of_the_fragment_length():
    config = IMPALAConfig().env_runners(rollout_fragment_length=32)
    pipeline = config.build_learner_connector(None, None)
    names = [type(piece) for piece in pipeline.connectors]
    assert names[0] is AddOneTsToEpisodesAndTruncate
    assert names[-3:] == [BatchIndividualItems, AddTimeDimToBatchAndBootstrap, NumpyToTensor]
    assert AddTimeDimToBatchAndZeroPad not in names
    assert pipeline.connectors[-2].sequence_length == 32
