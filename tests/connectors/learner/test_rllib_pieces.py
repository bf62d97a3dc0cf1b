"""The learner pieces RLlib's example learners use: ComputeReturnsToGo, next observations, NumpyToTensor,
and `flywheel.connectors.common` (one name for a piece of either pipeline, found by `insert_after`)."""

import numpy as np
import pytest
import torch

from flywheel.columns import Columns
from flywheel.connectors import common, env_to_module, learner
from flywheel.connectors.pipeline import ConnectorPipelineV2
from flywheel.episodes import SingleAgentEpisode
from flywheel.typing import DEFAULT_MODULE_ID


def chunk(obs, rewards, *, terminated=True, module_id=None):
    episode = SingleAgentEpisode(
        observations=[np.array([o], np.float32) for o in obs],
        actions=[0] * len(rewards),
        rewards=list(rewards),
        terminated=terminated,
        len_lookback_buffer=0,
        module_id=module_id,
    )
    return episode.to_numpy()


class Stateless:
    def is_stateful(self):
        return False


def run(pieces, episodes):
    modules = {DEFAULT_MODULE_ID: Stateless(), "p1": Stateless()}
    return ConnectorPipelineV2(connectors=pieces)(
        rl_module=modules, batch={}, episodes=episodes, shared_data={}
    )


def test_returns_to_go_per_chunk_as_rllibs_vpg_learner_prepends_it():
    episodes = [
        chunk([0, 1, 2, 3], [1.0, 2.0, 4.0]),
        chunk([5, 6], [8.0], module_id="p1"),
        chunk([7, 8, 9], [1.0, 1.0]),
    ]
    batch = run([learner.ComputeReturnsToGo(gamma=0.5), *learner.default_learner_connectors()], episodes)
    # G_t = r_t + 0.5 * G_{t+1}, to each chunk's end.
    np.testing.assert_allclose(batch[DEFAULT_MODULE_ID][Columns.RETURNS_TO_GO], [3.0, 4.0, 4.0, 1.5, 1.0])
    np.testing.assert_allclose(batch["p1"][Columns.RETURNS_TO_GO], [8.0])
    assert batch[DEFAULT_MODULE_ID][Columns.RETURNS_TO_GO].dtype == torch.float32


def test_next_observations_without_and_with_the_bootstrap_row():
    episodes = [chunk([0, 1, 2], [1.0, 1.0]), chunk([5, 6], [1.0])]
    pieces = [*learner.default_learner_connectors()]
    pieces.insert(1, learner.AddNextObservationsFromEpisodesToTrainBatch())
    cols = run(pieces, episodes)[DEFAULT_MODULE_ID]
    assert cols[Columns.OBS][:, 0].tolist() == [0, 1, 5]
    assert cols[Columns.NEXT_OBS][:, 0].tolist() == [1, 2, 6]
    cols = run([learner.AddOneTsToEpisodesAndTruncate(), *pieces], episodes)[DEFAULT_MODULE_ID]
    assert cols[Columns.OBS][:, 0].tolist() == [0, 1, 2, 5, 6]
    assert cols[Columns.NEXT_OBS][:, 0].tolist() == [1, 2, 2, 6, 6]  # the bootstrap row repeats the last


def test_numpy_to_tensor_puts_every_module_column_on_the_device_and_keeps_object_arrays():
    piece = learner.NumpyToTensor(device="cpu")
    infos = np.array([{"a": 1}], dtype=object)
    batch = {
        "p": {"x": np.ones(2, np.float64), "n": {"i": np.arange(2)}, "infos": infos, "t": torch.zeros(1)}
    }
    out = piece(rl_module=None, batch=batch, episodes=[])["p"]
    assert out["x"].dtype == torch.float32 and out["n"]["i"].dtype == torch.int64
    assert out["infos"] is infos and isinstance(out["t"], torch.Tensor)


def test_common_names_build_either_pipelines_piece_and_match_both():
    assert type(common.NumpyToTensor()) is env_to_module.NumpyToTensor
    built = common.NumpyToTensor(as_learner_connector=True, device="cpu")
    assert type(built) is learner.NumpyToTensor and built.device == torch.device("cpu")
    assert type(common.AddObservationsFromEpisodesToBatch(as_learner_connector=True)) is (
        learner.AddObservationsFromEpisodesToBatch
    )
    for cls in (env_to_module.BatchIndividualItems, learner.BatchIndividualItems):
        assert isinstance(cls(), common.BatchIndividualItems)
    assert not isinstance(learner.BatchIndividualItems(), common.NumpyToTensor)
    pipeline = ConnectorPipelineV2(connectors=learner.default_learner_connectors())
    marker = learner.ComputeReturnsToGo(gamma=0.9)
    pipeline.insert_after(common.NumpyToTensor, marker)  # as RLlib's curiosity learner does
    pipeline.insert_after(
        common.AddObservationsFromEpisodesToBatch, learner.AddNextObservationsFromEpisodesToTrainBatch()
    )
    assert [piece.name for piece in pipeline.connectors] == [
        "AddObservationsFromEpisodesToBatch",
        "AddNextObservationsFromEpisodesToTrainBatch",
        "AddColumnsFromEpisodesToTrainBatch",
        "AddTimeDimToBatchAndZeroPad",
        "BatchIndividualItems",
        "NumpyToTensor",
        "ComputeReturnsToGo",
    ]


@pytest.mark.parametrize("rewards_change", [0.0, 10.0])
def test_gae_reads_the_rewards_from_the_tensor_batch(rewards_change):
    class ObsIsValue(Stateless):
        def parameters(self):
            return iter([])

        def compute_values(self, batch, embeddings=None):
            return batch[Columns.OBS][..., 0]

    class AddToRewards(learner.ComputeReturnsToGo):  # a piece between NumpyToTensor and GAE
        def __call__(self, *, batch, **kwargs):
            batch[DEFAULT_MODULE_ID][Columns.REWARDS] += rewards_change
            return batch

    pipeline = [
        learner.AddOneTsToEpisodesAndTruncate(),
        *learner.default_learner_connectors(),
        AddToRewards(),
        learner.GeneralAdvantageEstimation(gamma=1.0, lambda_=1.0),
    ]
    batch = ConnectorPipelineV2(connectors=pipeline)(
        rl_module={DEFAULT_MODULE_ID: ObsIsValue()},
        batch={},
        episodes=[chunk([0, 0, 0], [1.0, 1.0])],
        shared_data={},
    )
    targets = batch[DEFAULT_MODULE_ID][Columns.VALUE_TARGETS]
    # Terminated after 2 steps, V = 0: the targets are the (changed) returns; the bootstrap row's
    # reward changed too but is never summed into a terminated chunk's return.
    expected = [2.0 + 2 * rewards_change, 1.0 + rewards_change]
    assert isinstance(targets, torch.Tensor)
    np.testing.assert_allclose(targets.numpy(), expected)


RLLIB_SPELLINGS = [
    # (RLlib's import, the keywords RLlib code passes, the flywheel class it gives)
    (
        "ray.rllib.connectors.common:AddObservationsFromEpisodesToBatch",
        {},
        env_to_module.AddObservationsFromEpisodesToBatch,
    ),
    (
        "ray.rllib.connectors.common:AddObservationsFromEpisodesToBatch",
        {"as_learner_connector": True},
        learner.AddObservationsFromEpisodesToBatch,
    ),
    ("ray.rllib.connectors.common:BatchIndividualItems", {}, env_to_module.BatchIndividualItems),
    (
        "ray.rllib.connectors.common:BatchIndividualItems",
        {"as_learner_connector": True},
        learner.BatchIndividualItems,
    ),
    ("ray.rllib.connectors.common:NumpyToTensor", {"device": "cpu"}, env_to_module.NumpyToTensor),
    (
        "ray.rllib.connectors.common:NumpyToTensor",
        {"device": "cpu", "as_learner_connector": True},
        learner.NumpyToTensor,
    ),
    (
        "ray.rllib.connectors.common.frame_stacking:FrameStacking",
        {"num_frames": 3},
        env_to_module.FrameStacking,
    ),
    (
        "ray.rllib.connectors.common.frame_stacking:FrameStacking",
        {"num_frames": 3, "as_learner_connector": True},
        learner.FrameStacking,
    ),
    (
        "ray.rllib.connectors.env_to_module.frame_stacking:FrameStackingEnvToModule",
        {"num_frames": 3},
        env_to_module.FrameStacking,
    ),
    (
        "ray.rllib.connectors.learner.frame_stacking:FrameStackingLearner",
        {"num_frames": 3},
        learner.FrameStacking,
    ),
    ("ray.rllib.connectors.learner:NumpyToTensor", {"device": "cpu"}, learner.NumpyToTensor),
]


@pytest.mark.parametrize(("rllib_name", "kwargs", "expected"), RLLIB_SPELLINGS)
def test_rllib_spellings_of_a_piece_for_both_pipelines_build_that_pipelines_class(
    rllib_name, kwargs, expected
):
    """The port table's target for each RLlib name, called as RLlib code calls it, builds the pipeline's
    own class (the one the env-to-module or learner default pipeline holds), and RLlib's shared name
    matches it with isinstance."""
    from importlib import import_module

    from flywheel.porting import load_table

    target = load_table().name(*rllib_name.split(":"))
    piece = getattr(import_module(target.module), target.name)(**kwargs)
    assert type(piece) is expected
    shared = getattr(common, expected.__name__)
    assert isinstance(piece, shared)
    assert piece.get_ctor_args_and_kwargs() == (
        (),
        {k: v for k, v in kwargs.items() if k != "as_learner_connector"},
    )


def test_frame_stacking_of_either_spelling_stacks_as_before():
    """RLlib's FrameStacking(as_learner_connector=True) gives the learner rows the env-to-module piece's
    stacks were at each step: 3 frames of [t, 10 t] per step, the first frame repeated before the start."""
    episode = chunk([1, 2, 3, 4], [0.0, 0.0, 0.0])
    rows = common.FrameStacking(num_frames=3, as_learner_connector=True)(
        rl_module=None, batch={}, episodes=[episode], shared_data={}
    )[DEFAULT_MODULE_ID][Columns.OBS]
    assert rows.tolist() == [[1, 1, 1], [1, 1, 2], [1, 2, 3]]
    acting = common.FrameStacking(num_frames=3)(rl_module=None, batch={}, episodes=[episode])[Columns.OBS]
    assert acting.tolist() == [[2, 3, 4]]
