"""`AddOneTsToEpisodesAndTruncate`: one bootstrap timestep at the end of every episode chunk."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from flywheel.columns import Columns
from flywheel.connectors.connector import ConnectorV2
from flywheel.connectors.learner.module_episodes import (
    BOOTSTRAP_CHUNK_LENS,
    add_module_item,
    module_episodes,
    terminated_column,
)
from flywheel.errors import ConnectorError

if TYPE_CHECKING:
    from flywheel.core.rl_module.rl_module import RLModule
    from flywheel.metrics.metrics_logger import MetricsLogger
    from flywheel.typing import EpisodeType


class AddOneTsToEpisodesAndTruncate(ConnectorV2):
    """Gives every chunk one extra row holding its last observation, for value bootstrapping.

    Value-based losses need V(s_T) of the observation after a chunk's last step: the bootstrap
    value of a truncated or cut chunk. With this piece in the pipeline, each chunk of `len`
    steps contributes `len + 1` rows: the later pieces take all `len + 1` observations, repeat
    the last action and extra model outputs and add a 0.0 reward on the extra row. Every chunk
    is then treated as truncated at its last real step unless it terminated there.

    The episodes themselves are not touched (no copies, no appends): the piece records the
    chunk lengths in `shared_data` and writes the columns that describe the extra row:
    `LOSS_MASK` (False on the extra row), `TERMINATEDS` (True on the last real step of a
    terminated chunk) and `TRUNCATEDS` (True on the last real step of every other chunk).
    `GeneralAdvantageEstimation` uses the extra rows and removes them again.
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
        if shared_data is None:
            raise ConnectorError(
                "AddOneTsToEpisodesAndTruncate got shared_data=None, expected a dict: it records there "
                "which chunks got a bootstrap timestep. Call the pipeline with shared_data={}."
            )
        chunk_lens: dict[str, list[int]] = {}
        for module_id, episode in module_episodes(episodes):
            steps = len(episode)
            chunk_lens.setdefault(module_id, []).append(steps + 1)
            loss_mask = np.ones(steps + 1, dtype=bool)
            loss_mask[-1] = False
            terminated = bool(episode.is_terminated)
            add_module_item(batch, module_id, Columns.LOSS_MASK, loss_mask)
            add_module_item(
                batch, module_id, Columns.TERMINATEDS, terminated_column(steps + 1, -2, terminated)
            )
            add_module_item(
                batch, module_id, Columns.TRUNCATEDS, terminated_column(steps + 1, -2, not terminated)
            )
        shared_data[BOOTSTRAP_CHUNK_LENS] = chunk_lens
        return batch
