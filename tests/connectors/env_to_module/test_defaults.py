"""The default env-to-module pipeline: episodes → {OBS: Tensor[B, ...], STATE_IN?: {...}}."""

import gymnasium as gym
import numpy as np
import torch

from flywheel.columns import Columns
from flywheel.connectors import ConnectorPipelineV2
from flywheel.connectors.env_to_module import (
    AddObservationsFromEpisodesToBatch,
    AddStatesFromEpisodesToBatch,
    AddTimeDimToBatchAndZeroPad,
    BatchIndividualItems,
    NumpyToTensor,
    default_env_to_module_connectors,
)

from ..conftest import StubModule, episode_from


def test_default_pieces_and_order():
    pieces = default_env_to_module_connectors()
    assert [type(piece) for piece in pieces] == [
        AddObservationsFromEpisodesToBatch,
        AddStatesFromEpisodesToBatch,
        BatchIndividualItems,
        AddTimeDimToBatchAndZeroPad,
        NumpyToTensor,
    ]
    assert pieces[-1].device is None
    assert default_env_to_module_connectors(device="cpu")[-1].device == torch.device("cpu")


def test_default_pipeline_builds_the_module_batch(obs_rows):
    space = gym.spaces.Box(-10.0, 10.0, (2,), np.float32)
    pipeline = ConnectorPipelineV2(
        space, gym.spaces.Discrete(2), connectors=default_env_to_module_connectors()
    )
    assert pipeline.observation_space is space
    episodes = [episode_from(obs_rows[:k], actions=[0] * (k - 1)) for k in (1, 2, 3)]
    batch = pipeline(rl_module=StubModule(), batch={}, episodes=episodes, explore=True, shared_data={})
    assert list(batch) == [Columns.OBS]
    assert batch[Columns.OBS].dtype == torch.float32
    assert batch[Columns.OBS].tolist() == [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]


def test_default_pipeline_adds_states_for_stateful_modules(obs_rows):
    module = StubModule(initial_state={"h": np.zeros(4, np.float32)})
    pipeline = ConnectorPipelineV2(connectors=default_env_to_module_connectors())
    batch = pipeline(rl_module=module, batch={}, episodes=[episode_from(obs_rows)] * 2)
    assert batch[Columns.STATE_IN]["h"].shape == (2, 4)
    assert isinstance(batch[Columns.STATE_IN]["h"], torch.Tensor)


def test_state_and_time_axis_pieces_are_no_ops_only_for_one_stateless_module():
    from flywheel.algorithms.ppo.rl_module import DefaultPPOTorchRLModule
    from flywheel.core.rl_module.multi_rl_module import MultiRLModule

    spaces = (gym.spaces.Box(-1.0, 1.0, (2,), np.float32), gym.spaces.Discrete(2))
    stateless = DefaultPPOTorchRLModule(*spaces, inference_only=True, model_config={"fcnet_hiddens": [4]})
    recurrent = DefaultPPOTorchRLModule(
        *spaces, inference_only=True, model_config={"use_lstm": True, "lstm_cell_size": 4}
    )
    pieces = default_env_to_module_connectors()
    assert [piece.is_noop_for(stateless) for piece in pieces] == [False, True, False, True, False]
    assert [piece.is_noop_for(recurrent) for piece in pieces] == [False] * 5
    assert [piece.is_noop_for(MultiRLModule({"m": stateless})) for piece in pieces] == [False] * 5
    assert [piece.is_noop_for(None) for piece in pieces] == [False] * 5
