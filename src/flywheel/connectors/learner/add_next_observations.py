"""`AddNextObservationsFromEpisodesToTrainBatch`: the observation after each step, as `NEXT_OBS`."""

from typing import Any

from flywheel.columns import Columns
from flywheel.connectors.connector import ConnectorV2
from flywheel.connectors.learner.module_episodes import (
    BOOTSTRAP_CHUNK_LENS,
    add_module_item,
    append_last,
    module_episodes,
    modules_with_column,
)


class AddNextObservationsFromEpisodesToTrainBatch(ConnectorV2):
    """Adds `NEXT_OBS`: for step `t` of a chunk the observation at `t + 1` (one row per step).

    With `AddOneTsToEpisodesAndTruncate` earlier in the pipeline, the bootstrap row's next
    observation repeats the chunk's last one (RLlib's extra timestep does the same). Modules whose
    `NEXT_OBS` an earlier piece set are left alone. Curiosity models (RLlib's ICM learners insert
    it after `AddObservationsFromEpisodesToBatch`) read it.
    """

    def __call__(
        self,
        *,
        rl_module: Any,
        batch: dict[str, Any],
        episodes: list[Any],
        explore: bool | None = None,
        shared_data: dict | None = None,
        metrics: Any = None,
        **kwargs: Any,
    ) -> dict[str, Any]:
        extend = shared_data is not None and BOOTSTRAP_CHUNK_LENS in shared_data
        preset = modules_with_column(batch, Columns.NEXT_OBS)
        for module_id, episode in module_episodes(episodes):
            if module_id in preset:
                continue
            next_obs = episode.get_observations(slice(1, len(episode) + 1))
            add_module_item(batch, module_id, Columns.NEXT_OBS, append_last(next_obs) if extend else next_obs)
        return batch
