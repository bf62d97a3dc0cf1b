"""`BatchIndividualItems`: turns per-episode item lists into arrays with a leading batch dimension."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from flywheel.connectors.batch_items import stack_rows
from flywheel.connectors.connector import ConnectorV2
from flywheel.connectors.env_to_module.agent_rows import column_dicts, place_episode_items

if TYPE_CHECKING:
    from flywheel.core.rl_module.rl_module import RLModule
    from flywheel.metrics.metrics_logger import MetricsLogger
    from flywheel.typing import EpisodeType


class BatchIndividualItems(ConnectorV2):
    """Stacks every list-valued column of the batch into one numpy array (row `i` = episode `i`).

    Flat items (arrays, numbers) are stacked with one `np.asarray` (several times faster than
    `np.stack` for a handful of small arrays); nested items (dicts, tuples, as in
    Dict observations or recurrent states) are stacked leaf-wise. Columns that are not lists (already
    batched by an earlier piece) are left as they are. For `MultiAgentEpisode`s the batch is
    `{module_id: {column: items}}` and each module's columns are stacked the same way. A pipeline
    skips it where it has nothing to stack: in a call that began with an empty batch, after pieces
    that each add whole columns only (the default observation piece, `adds_whole_columns`).
    """

    only_builds_batch = True

    def is_noop_after(self, pieces: Sequence[ConnectorV2]) -> bool:
        return all(piece.adds_whole_columns for piece in pieces)

    def __call__(
        self,
        *,
        rl_module: RLModule,
        batch: dict[str, Any],
        episodes: list[EpisodeType],
        explore: bool | None = None,
        shared_data: dict | None = None,
        metrics: MetricsLogger | None = None,
        **kwargs: object,
    ) -> dict[str, Any]:
        place_episode_items(batch, episodes, shared_data)
        for columns in column_dicts(batch, episodes):
            for column, items in columns.items():
                if type(items) is list and items:
                    columns[column] = stack_rows(items)
        return batch
