"""`BatchIndividualItems` (learner version): per-chunk items → one array per module and column."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from flywheel.connectors.connector import ConnectorV2
from flywheel.connectors.learner.module_episodes import place_episode_items
from flywheel.errors import ConnectorError
from flywheel.utils.nested import concat, num_rows

if TYPE_CHECKING:
    from flywheel.core.rl_module.rl_module import RLModule
    from flywheel.metrics.metrics_logger import MetricsLogger
    from flywheel.typing import EpisodeType


class BatchIndividualItems(ConnectorV2):
    """Concatenates each `batch[module_id][column]` list of per-chunk items along the first axis
    (leaf-wise for nested columns such as `STATE_IN`); columns already built as arrays stay.

    Afterwards every column of a module has the same leading dimension (timesteps, or sequences
    for stateful modules); a mismatch means a custom piece produced the wrong number of rows and
    raises `ConnectorError` naming the column.
    """

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
        place_episode_items(batch, episodes)
        for module_id, columns in batch.items():
            for column, items in columns.items():
                if isinstance(items, list):
                    columns[column] = concat(items)
            _check_rows(module_id, columns)
        return batch


def _check_rows(module_id: str, columns: dict[str, Any]) -> None:
    rows = {column: num_rows(data) for column, data in columns.items()}
    if len(set(rows.values())) > 1:
        raise ConnectorError(
            f"The learner batch of module {module_id!r} has columns of different lengths: {rows}. "
            "Expected one row per timestep in every column (with AddOneTsToEpisodesAndTruncate: "
            "len(chunk) + 1 rows per chunk). Fix the custom piece that added the odd column."
        )
