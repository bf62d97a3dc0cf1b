"""Built-in env-to-module connector pieces and the default pipeline order."""

from __future__ import annotations

import torch

from flywheel.connectors.connector import ConnectorV2
from flywheel.connectors.env_to_module.add_observations import AddObservationsFromEpisodesToBatch
from flywheel.connectors.env_to_module.add_states import AddStatesFromEpisodesToBatch
from flywheel.connectors.env_to_module.add_time_dim import AddTimeDimToBatchAndZeroPad
from flywheel.connectors.env_to_module.batch import BatchIndividualItems
from flywheel.connectors.env_to_module.flatten_observations import FlattenObservations
from flywheel.connectors.env_to_module.frame_stacking import FrameStacking
from flywheel.connectors.env_to_module.mean_std_filter import MeanStdFilter
from flywheel.connectors.env_to_module.normalize_rewards import NormalizeRewards
from flywheel.connectors.env_to_module.observation_preprocessor import (
    MultiAgentObservationPreprocessor,
    SingleAgentObservationPreprocessor,
)
from flywheel.connectors.env_to_module.prev_actions_prev_rewards import PrevActionsPrevRewards
from flywheel.connectors.env_to_module.to_tensor import NumpyToTensor

__all__ = [
    "AddObservationsFromEpisodesToBatch",
    "AddStatesFromEpisodesToBatch",
    "AddTimeDimToBatchAndZeroPad",
    "BatchIndividualItems",
    "FlattenObservations",
    "FrameStacking",
    "MeanStdFilter",
    "NormalizeRewards",
    "MultiAgentObservationPreprocessor",
    "NumpyToTensor",
    "PrevActionsPrevRewards",
    "SingleAgentObservationPreprocessor",
    "default_env_to_module_connectors",
]


def default_env_to_module_connectors(*, device: str | torch.device | None = None) -> list[ConnectorV2]:
    """The default env-to-module pieces, in order; user pieces run before them. (RLlib adds the time
    axis before the states, flywheel after batching, leaving `STATE_IN` out: the same batch, one
    `np.expand_dims` per column instead of one per row.)"""
    return [
        AddObservationsFromEpisodesToBatch(),
        AddStatesFromEpisodesToBatch(),
        BatchIndividualItems(),
        AddTimeDimToBatchAndZeroPad(),
        NumpyToTensor(device=device),
    ]
