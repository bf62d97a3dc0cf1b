"""RLlib's shared connector pieces (`ray.rllib.connectors.common`), for code written against them.

flywheel's convention for a piece that serves both the env-to-module and the learner pipeline: one
class per pipeline, each in its pipeline's folder and doing only that pipeline's job
(`flywheel.connectors.env_to_module.X`, `flywheel.connectors.learner.X`). RLlib has one class
for both and tells the pipelines apart with `as_learner_connector`; the names here are RLlib's
one name for each such pair:

- constructing one gives the env-to-module piece, or the learner piece with
  `as_learner_connector=True` (the class it gives is that pipeline's own, not this one);
- `isinstance(piece, X)` holds for both, so `pipeline.insert_after(X, new_piece)` finds the piece in
  either pipeline (RLlib's learners insert their own pieces next to `NumpyToTensor` this way).
"""

from __future__ import annotations

from typing import Any

from flywheel.connectors import env_to_module, learner
from flywheel.connectors.connector import ConnectorV2

__all__ = ["AddObservationsFromEpisodesToBatch", "BatchIndividualItems", "FrameStacking", "NumpyToTensor"]


class _SharedPiece(ConnectorV2):
    """A name for a pipeline's own class; `__new__` returns an instance of that class."""

    _env_to_module: type[ConnectorV2]
    _learner: type[ConnectorV2]

    def __new__(cls, *args: Any, as_learner_connector: bool = False, **kwargs: Any) -> ConnectorV2:
        piece_class = cls._learner if as_learner_connector else cls._env_to_module
        return piece_class(*args, **kwargs)

    @classmethod
    def _stand_for(cls, env_to_module_class: type, learner_class: type) -> None:
        cls._env_to_module, cls._learner = env_to_module_class, learner_class
        cls.register(env_to_module_class)
        cls.register(learner_class)


class AddObservationsFromEpisodesToBatch(_SharedPiece):
    """`flywheel.connectors.env_to_module.AddObservationsFromEpisodesToBatch` or, with
    `as_learner_connector=True`, `flywheel.connectors.learner.AddObservationsFromEpisodesToBatch`."""


class BatchIndividualItems(_SharedPiece):
    """`flywheel.connectors.env_to_module.BatchIndividualItems` or, with `as_learner_connector=True`,
    `flywheel.connectors.learner.BatchIndividualItems`."""


class FrameStacking(_SharedPiece):
    """`flywheel.connectors.env_to_module.FrameStacking` (RLlib's `FrameStackingEnvToModule`) or, with
    `as_learner_connector=True`, `flywheel.connectors.learner.FrameStacking` (RLlib's
    `FrameStackingLearner`); both take `num_frames=`."""


class NumpyToTensor(_SharedPiece):
    """`flywheel.connectors.env_to_module.NumpyToTensor` or, with `as_learner_connector=True`,
    `flywheel.connectors.learner.NumpyToTensor` (both take `device=`)."""


AddObservationsFromEpisodesToBatch._stand_for(
    env_to_module.AddObservationsFromEpisodesToBatch, learner.AddObservationsFromEpisodesToBatch
)
BatchIndividualItems._stand_for(env_to_module.BatchIndividualItems, learner.BatchIndividualItems)
FrameStacking._stand_for(env_to_module.FrameStacking, learner.FrameStacking)
NumpyToTensor._stand_for(env_to_module.NumpyToTensor, learner.NumpyToTensor)
