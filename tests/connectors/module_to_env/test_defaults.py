"""The default module-to-env pipeline: module output tensors → numpy actions, logp, ACTIONS_FOR_ENV."""

import gymnasium as gym
import numpy as np
import torch

from flywheel.columns import Columns
from flywheel.connectors import ConnectorPipelineV2
from flywheel.connectors.module_to_env import (
    GetActions,
    NormalizeAndClipActions,
    RemoveSingleTsTimeRankFromBatch,
    TensorToNumpy,
    default_module_to_env_connectors,
)
from flywheel.core.distributions import Categorical, DiagGaussian

from ..conftest import StubModule


def test_default_pieces_and_order():
    pieces = default_module_to_env_connectors(normalize_actions=False, clip_actions=True)
    assert [type(piece) for piece in pieces] == [
        GetActions,
        TensorToNumpy,
        RemoveSingleTsTimeRankFromBatch,
        NormalizeAndClipActions,
    ]
    assert (pieces[3].normalize_actions, pieces[3].clip_actions) == (False, True)
    defaults = default_module_to_env_connectors()[3]
    assert (defaults.normalize_actions, defaults.clip_actions) == (True, False)


def test_time_rank_piece_is_a_no_op_only_for_one_stateless_module():
    from flywheel.algorithms.ppo.rl_module import DefaultPPOTorchRLModule
    from flywheel.core.rl_module.multi_rl_module import MultiRLModule

    spaces = (gym.spaces.Box(-1.0, 1.0, (2,), np.float32), gym.spaces.Discrete(2))
    stateless = DefaultPPOTorchRLModule(*spaces, inference_only=True, model_config={"fcnet_hiddens": [4]})
    recurrent = DefaultPPOTorchRLModule(
        *spaces, inference_only=True, model_config={"use_lstm": True, "lstm_cell_size": 4}
    )
    pieces = default_module_to_env_connectors()
    assert [piece.is_noop_for(stateless) for piece in pieces] == [False, False, True, False]
    assert [piece.is_noop_for(recurrent) for piece in pieces] == [False] * 4
    assert [piece.is_noop_for(MultiRLModule({"m": stateless})) for piece in pieces] == [False] * 4


def test_discrete_pipeline_returns_numpy_rows_per_sub_env():
    pipeline = ConnectorPipelineV2(
        gym.spaces.Box(-1, 1, (4,), np.float32),
        gym.spaces.Discrete(3),
        connectors=default_module_to_env_connectors(),
    )
    out = {Columns.ACTION_DIST_INPUTS: torch.tensor([[0.0, 0.0, 60.0]] * 4), Columns.VF_PREDS: torch.zeros(4)}
    batch = pipeline(rl_module=StubModule(dist_cls=Categorical), batch=out, episodes=[], explore=True)
    assert batch[Columns.ACTIONS].tolist() == [2, 2, 2, 2]
    assert batch[Columns.ACTIONS_FOR_ENV] is batch[Columns.ACTIONS]
    assert isinstance(batch[Columns.ACTION_LOGP], np.ndarray) and batch[Columns.ACTION_LOGP].shape == (4,)
    np.testing.assert_allclose(batch[Columns.ACTION_LOGP], 0.0, atol=1e-6)
    assert isinstance(batch[Columns.VF_PREDS], np.ndarray)


def test_box_pipeline_unsquashes_the_greedy_action():
    space = gym.spaces.Box(0.0, 4.0, (2,), np.float32)
    pipeline = ConnectorPipelineV2(None, space, connectors=default_module_to_env_connectors())
    out = {Columns.ACTION_DIST_INPUTS: torch.tensor([[-1.0, 0.5, 0.0, 0.0]])}
    batch = pipeline(rl_module=StubModule(dist_cls=DiagGaussian), batch=out, episodes=[], explore=False)
    np.testing.assert_array_equal(batch[Columns.ACTIONS], [[-1.0, 0.5]])
    np.testing.assert_array_equal(batch[Columns.ACTIONS_FOR_ENV], [[0.0, 3.0]])
