"""`AddObservationsFromEpisodesToBatch`: the module's input observation is each episode's newest one."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from flywheel.columns import Columns
from flywheel.connectors.connector import ConnectorV2
from flywheel.connectors.env_to_module.agent_rows import agent_rows, is_multi_agent, place_episode_items
from flywheel.episodes.vector_recorder import newest_observations
from flywheel.utils.nested import stack

if TYPE_CHECKING:
    from flywheel.core.rl_module.rl_module import RLModule
    from flywheel.metrics.metrics_logger import MetricsLogger
    from flywheel.typing import EpisodeType


class AddObservationsFromEpisodesToBatch(ConnectorV2):
    """Sets `batch[OBS]` to each episode's newest observation, stacked in episode order (one array,
    leaf-wise for nested observations).

    When a runner's `VectorRecorder` holds the episodes and nothing has read or rewritten them since
    the env step, their newest observations are the env's observation batch itself, which is passed
    on as it is (`newest_observations`); otherwise each episode's is read and stacked. Either way it
    is what the episodes hold.

    Skipped when an earlier piece already set `OBS` (e.g. `FrameStacking`), so such pieces replace
    what the module sees without being undone here (columns custom pieces added per episode with
    `add_batch_item` are first moved into this piece's layout). For `MultiAgentEpisode`s it sets
    `batch[module_id][OBS]` instead, one row per agent to act (layout: `agent_rows`). The column it
    adds is whole (`adds_whole_columns`): after it alone, `BatchIndividualItems` has nothing to stack.
    """

    adds_whole_columns = True
    only_builds_batch = True

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
        if batch:  # (an empty batch, a runner's without custom pieces, has nothing to place: a call fewer)
            place_episode_items(batch, episodes, shared_data)  # the first default piece: custom pieces ran
        if is_multi_agent(episodes):
            for module_id, rows in agent_rows(episodes, shared_data).items():
                columns = batch.setdefault(module_id, {})
                if Columns.OBS not in columns:
                    columns[Columns.OBS] = _stacked(
                        [episode.get_observations(-1) for episode in rows.episodes]
                    )
        elif Columns.OBS not in batch:
            observations = newest_observations(episodes)
            if observations is None:
                observations = _stacked([episode.get_observations(-1) for episode in episodes])
            batch[Columns.OBS] = observations
        return batch


def _stacked(observations: list) -> Any:
    return stack(observations) if observations else observations
