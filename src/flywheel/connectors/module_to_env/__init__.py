"""Built-in module-to-env connector pieces and the default pipeline order."""

from __future__ import annotations

from flywheel.connectors.connector import ConnectorV2
from flywheel.connectors.module_to_env.get_actions import GetActions
from flywheel.connectors.module_to_env.normalize_and_clip_actions import NormalizeAndClipActions
from flywheel.connectors.module_to_env.remove_time_rank import RemoveSingleTsTimeRankFromBatch
from flywheel.connectors.module_to_env.to_numpy import TensorToNumpy

__all__ = [
    "GetActions",
    "NormalizeAndClipActions",
    "RemoveSingleTsTimeRankFromBatch",
    "TensorToNumpy",
    "default_module_to_env_connectors",
]


def default_module_to_env_connectors(
    *, normalize_actions: bool = True, clip_actions: bool = False
) -> list[ConnectorV2]:
    """The default module-to-env pieces, in order; user pieces run after them."""
    return [
        GetActions(),
        TensorToNumpy(),
        RemoveSingleTsTimeRankFromBatch(),
        NormalizeAndClipActions(normalize_actions=normalize_actions, clip_actions=clip_actions),
    ]
