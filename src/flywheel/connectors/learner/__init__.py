"""Learner connector pieces: episodes → train batch `{module_id: {column: array}}`.

The learner pipeline runs once per update on the sampled episodes::

    batch = learner_pipeline(rl_module=multi_rl_module, batch={}, episodes=episodes, shared_data={})

Custom pieces (`config.learners(learner_connector=...)`) run first, then
`default_learner_connectors()`; PPO adds `AddOneTsToEpisodesAndTruncate` at the front and
`GeneralAdvantageEstimation` at the end; DQN and SAC add `AddNextObservationsFromEpisodesToTrainBatch`
after `AddObservationsFromEpisodesToBatch`; IMPALA and APPO add `AddOneTsToEpisodesAndTruncate` at the
front and `AddTimeDimToBatchAndBootstrap` (in place of `AddTimeDimToBatchAndZeroPad`) at the end.
"""

from typing import Any

from flywheel.connectors.learner.add_columns import AddColumnsFromEpisodesToTrainBatch
from flywheel.connectors.learner.add_next_observations import AddNextObservationsFromEpisodesToTrainBatch
from flywheel.connectors.learner.add_observations import AddObservationsFromEpisodesToBatch
from flywheel.connectors.learner.add_one_ts_and_truncate import AddOneTsToEpisodesAndTruncate
from flywheel.connectors.learner.add_time_dim import AddTimeDimToBatchAndZeroPad
from flywheel.connectors.learner.add_time_dim_and_bootstrap import AddTimeDimToBatchAndBootstrap
from flywheel.connectors.learner.batch import BatchIndividualItems
from flywheel.connectors.learner.compute_returns_to_go import ComputeReturnsToGo
from flywheel.connectors.learner.frame_stacking import FrameStacking
from flywheel.connectors.learner.gae import GeneralAdvantageEstimation
from flywheel.connectors.learner.module_episodes import module_episodes
from flywheel.connectors.learner.to_tensor import NumpyToTensor


def default_learner_connectors(*, device: Any = None) -> list:
    """The default learner pieces, in the order the config appends them after the user's pieces
    (RLlib's order); `device` is where `NumpyToTensor` puts the batch (the learner's device)."""
    return [
        AddObservationsFromEpisodesToBatch(),
        AddColumnsFromEpisodesToTrainBatch(),
        AddTimeDimToBatchAndZeroPad(),
        BatchIndividualItems(),
        NumpyToTensor(device=device),
    ]


__all__ = [
    "AddColumnsFromEpisodesToTrainBatch",
    "AddNextObservationsFromEpisodesToTrainBatch",
    "AddObservationsFromEpisodesToBatch",
    "AddOneTsToEpisodesAndTruncate",
    "AddTimeDimToBatchAndBootstrap",
    "AddTimeDimToBatchAndZeroPad",
    "BatchIndividualItems",
    "ComputeReturnsToGo",
    "FrameStacking",
    "GeneralAdvantageEstimation",
    "NumpyToTensor",
    "default_learner_connectors",
    "module_episodes",
]
