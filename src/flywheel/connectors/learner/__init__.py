"""Learner connector pieces: episodes → train batch `{module_id: {column: array}}`.

The learner pipeline runs once per update on the sampled episodes::

    batch = learner_pipeline(rl_module=multi_rl_module, batch={}, episodes=episodes, shared_data={})

Custom pieces (`config.learners(learner_connector=...)`) run first, then
`default_learner_connectors()`; PPO adds `AddOneTsToEpisodesAndTruncate` at the front and
`GeneralAdvantageEstimation` at the end; IMPALA and APPO add `AddOneTsToEpisodesAndTruncate` at the
front and `AddTimeDimToBatchAndBootstrap` (in place of `AddTimeDimToBatchAndZeroPad`) at the end.
"""

from flywheel.connectors.learner.add_columns import AddColumnsFromEpisodesToTrainBatch
from flywheel.connectors.learner.add_observations import AddObservationsFromEpisodesToBatch
from flywheel.connectors.learner.add_one_ts_and_truncate import AddOneTsToEpisodesAndTruncate
from flywheel.connectors.learner.add_time_dim import AddTimeDimToBatchAndZeroPad
from flywheel.connectors.learner.add_time_dim_and_bootstrap import AddTimeDimToBatchAndBootstrap
from flywheel.connectors.learner.batch import BatchIndividualItems
from flywheel.connectors.learner.gae import GeneralAdvantageEstimation
from flywheel.connectors.learner.module_episodes import module_episodes


def default_learner_connectors() -> list:
    """The default learner pieces, in the order the config appends them after the user's pieces."""
    return [
        AddObservationsFromEpisodesToBatch(),
        AddColumnsFromEpisodesToTrainBatch(),
        AddTimeDimToBatchAndZeroPad(),
        BatchIndividualItems(),
    ]


__all__ = [
    "AddColumnsFromEpisodesToTrainBatch",
    "AddObservationsFromEpisodesToBatch",
    "AddOneTsToEpisodesAndTruncate",
    "AddTimeDimToBatchAndBootstrap",
    "AddTimeDimToBatchAndZeroPad",
    "BatchIndividualItems",
    "GeneralAdvantageEstimation",
    "default_learner_connectors",
    "module_episodes",
]
