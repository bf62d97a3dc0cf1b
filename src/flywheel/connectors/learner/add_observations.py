"""`AddObservationsFromEpisodesToBatch` (learner version): every chunk's observations as rows."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from flywheel.columns import Columns
from flywheel.connectors.connector import ConnectorV2
from flywheel.connectors.learner.module_episodes import (
    add_module_item,
    add_transition_column,
    module_episodes,
    modules_with_column,
    place_episode_items,
    transition_blocks,
)

if TYPE_CHECKING:
    from flywheel.core.rl_module.rl_module import RLModule
    from flywheel.metrics.metrics_logger import MetricsLogger
    from flywheel.typing import EpisodeType


class AddObservationsFromEpisodesToBatch(ConnectorV2):
    """Adds `OBS`: the observation at each step of each chunk (one slice per chunk, no per-step work).

    With `AddOneTsToEpisodesAndTruncate` earlier in the pipeline a chunk of `len` steps gives all
    its `len + 1` observations (the last one feeds the bootstrap value); otherwise the `len`
    observations the actions were taken on. Columns custom pieces added per episode
    (`add_batch_item` with an episode) are moved into the module-keyed layout first. Modules whose
    `OBS` a custom piece already set
    (e.g. frame stacking in learner mode) are skipped; such a piece must produce
    the same number of rows per chunk. Replayed transitions give their `o_t` column.
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
        place_episode_items(batch, episodes)  # the first default piece: custom pieces ran
        preset = modules_with_column(batch, Columns.OBS)
        blocks = transition_blocks(episodes)
        if blocks is not None:
            add_transition_column(batch, blocks, Columns.OBS, preset)
            return batch
        for module_id, episode in module_episodes(episodes):
            if module_id in preset:
                continue
            add_module_item(batch, module_id, Columns.OBS, episode.get_observations(slice(0, len(episode))))
        return batch
