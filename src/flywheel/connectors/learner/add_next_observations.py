"""`AddNextObservationsFromEpisodesToTrainBatch`: the observation after each step (`NEXT_OBS`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from flywheel.columns import Columns
from flywheel.connectors.connector import ConnectorV2
from flywheel.connectors.learner.module_episodes import (
    add_module_item,
    add_transition_column,
    module_episodes,
    modules_with_column,
    transition_blocks,
)

if TYPE_CHECKING:
    from flywheel.core.rl_module.rl_module import RLModule
    from flywheel.metrics.metrics_logger import MetricsLogger
    from flywheel.typing import EpisodeType


class AddNextObservationsFromEpisodesToTrainBatch(ConnectorV2):
    """Adds `NEXT_OBS`: for each step of each chunk, the observation that followed it (a chunk of
    `len` steps gives its observations `1..len`), row for row with `AddObservationsFromEpisodesToBatch`'s
    `OBS`. For replayed n-step transitions that is `o_{t+n}`, the observation to bootstrap from.

    Off-policy algorithms (DQN, SAC) put it right after `AddObservationsFromEpisodesToBatch`. With
    `AddOneTsToEpisodesAndTruncate` earlier in the pipeline, the bootstrap timestep it appended
    repeats the last observation. Modules whose `NEXT_OBS` an earlier piece set are skipped.
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
        preset = modules_with_column(batch, Columns.NEXT_OBS)
        blocks = transition_blocks(episodes)
        if blocks is not None:
            add_transition_column(batch, blocks, Columns.NEXT_OBS, preset)
            return batch
        for module_id, episode in module_episodes(episodes):
            if module_id in preset:
                continue
            next_obs = episode.get_observations(slice(1, len(episode) + 1))
            add_module_item(batch, module_id, Columns.NEXT_OBS, next_obs)
        return batch
