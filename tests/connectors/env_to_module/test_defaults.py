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
