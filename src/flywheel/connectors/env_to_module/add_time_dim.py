"""`AddTimeDimToBatchAndZeroPad` (env-to-module): recurrent modules act on `[B, 1, ...]` batches."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import tree

from flywheel.columns import Columns
from flywheel.connectors.connector import ConnectorV2
from flywheel.connectors.env_to_module.agent_rows import is_multi_agent, is_stateless

if TYPE_CHECKING:
    from flywheel.typing import EpisodeType

ADDED_SINGLE_TS_TIME_RANK = "_added_single_ts_time_rank"
"""`shared_data` key: set when this piece added the time axis, so `RemoveSingleTsTimeRankFromBatch`
removes it from the module's outputs (RLlib's key)."""


class AddTimeDimToBatchAndZeroPad(ConnectorV2):
    """Gives every batched column of a stateful module a time axis of length 1, as RLlib does.

    A recurrent module sees the same layout on runners as on learners: `OBS` (and any other column)
    `[B, 1, ...]`, and `STATE_IN` `[B, ...]` (states have no time axis). Its outputs come back as
    `[B, 1, ...]` and `STATE_OUT` as `[B, ...]`; the module-to-env piece
    `RemoveSingleTsTimeRankFromBatch` takes the time axis off again. Stateless modules' columns are
    left alone. On learners `flywheel.connectors.learner.AddTimeDimToBatchAndZeroPad` cuts episodes
    into zero-padded `max_seq_len` sequences instead.
    """

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
        if rl_module is None:
            return batch
        if is_multi_agent(episodes):
            added = False
            for module_id, columns in batch.items():
                if rl_module[module_id].is_stateful():
                    _add_time_axis(columns)
                    added = True
        elif rl_module.is_stateful():
            _add_time_axis(batch)
            added = True
        else:
            added = False
        if added and shared_data is not None:
            shared_data[ADDED_SINGLE_TS_TIME_RANK] = True
        return batch

    only_builds_batch = True

    def is_noop_for(self, rl_module: Any) -> bool:
        return is_stateless(rl_module)


def _add_time_axis(columns: dict[str, Any]) -> None:
    for column, data in columns.items():
        if column not in (Columns.STATE_IN, Columns.INFOS):
            columns[column] = tree.map_structure(_expand, data)


def _expand(leaf: Any) -> Any:
    return np.expand_dims(leaf, 1) if isinstance(leaf, np.ndarray) else leaf
