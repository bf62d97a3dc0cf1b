"""`RemoveSingleTsTimeRankFromBatch`: undoes the env-to-module time axis on a recurrent module's outputs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import tree

from flywheel.columns import Columns
from flywheel.connectors.connector import ConnectorV2
from flywheel.connectors.env_to_module.add_time_dim import ADDED_SINGLE_TS_TIME_RANK
from flywheel.connectors.env_to_module.agent_rows import is_multi_agent, is_stateless

if TYPE_CHECKING:
    from flywheel.typing import EpisodeType


class RemoveSingleTsTimeRankFromBatch(ConnectorV2):
    """Squeezes the length-1 time axis out of every output column of a stateful module (numpy,
    `[B, 1, ...]` → `[B, ...]`), except `STATE_OUT`, which has none; only when the env-to-module
    `AddTimeDimToBatchAndZeroPad` added it in this step (RLlib's `shared_data` flag)."""

    def __call__(
        self,
        *,
        rl_module: Any,
        batch: dict[str, Any],
        episodes: list[EpisodeType],
        explore: bool | None = None,
        shared_data: dict | None = None,
        metrics: Any = None,
        **kwargs: object,
    ) -> dict[str, Any]:
        if not (shared_data or {}).get(ADDED_SINGLE_TS_TIME_RANK):
            return batch
        if is_multi_agent(episodes):
            for module_id, columns in batch.items():
                if rl_module[module_id].is_stateful():
                    _remove_time_axis(columns)
        else:
            _remove_time_axis(batch)
        return batch

    def is_noop_for(self, rl_module: Any) -> bool:
        # The env-to-module piece that adds the axis (and sets the flag) is skipped alike.
        return is_stateless(rl_module)


def _remove_time_axis(columns: dict[str, Any]) -> None:
    for column, data in columns.items():
        if column != Columns.STATE_OUT:
            columns[column] = tree.map_structure(_squeeze, data)


def _squeeze(leaf: Any) -> Any:
    return np.squeeze(leaf, 1) if isinstance(leaf, np.ndarray) and leaf.ndim >= 2 else leaf
