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
    from flywheel.episodes import SingleAgentEpisode
    from flywheel.metrics.metrics_logger import MetricsLogger
    from flywheel.typing import EpisodeType

# `shared_data` key: the chunks this piece extended, each with its `is_truncated` from before.
_EXTENDED = "bootstrap_extended_chunks"


class AddOneTsToEpisodesAndTruncate(ConnectorV2):
    """Extends every chunk by one artificial timestep, for value bootstrapping, as RLlib's does.

    Value-based losses need V(s_T) of the observation after a chunk's last step: the bootstrap
    value of a truncated or cut chunk. This piece appends, in place, one timestep to each chunk
    that has steps: its last observation, info, action and extra model outputs again, and a 0.0
    reward; `len(chunk)` grows by one, and a chunk that did not end is marked truncated. The pieces
    after it (custom ones included) see the extended chunks and give `len(chunk)` rows each, the
    last one the bootstrap row.

    It writes the columns that describe the extra row: `LOSS_MASK` (False on it), `TERMINATEDS`
    (True on the last real step of a terminated chunk) and `TRUNCATEDS` (True on the last real step
    of every other chunk), and records the rows per chunk in `shared_data` (for
    `GeneralAdvantageEstimation`, which removes the extra rows again). `Learner.update` takes the
    extra timesteps off the episodes after its pipeline ran (`remove_bootstrap_timesteps`), so its
    caller gets them back as sampled.
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
        extended: list[tuple[SingleAgentEpisode, bool]] = shared_data.setdefault(_EXTENDED, [])
        for module_id, episode in module_episodes(episodes):
            steps = len(episode)
            terminated = bool(episode.is_terminated)
            extended.append((episode, bool(episode.is_truncated)))
            _add_one_timestep(episode)
            chunk_lens.setdefault(module_id, []).append(steps + 1)
            loss_mask = np.ones(steps + 1, dtype=bool)
            loss_mask[-1] = False
            add_module_item(batch, module_id, Columns.LOSS_MASK, loss_mask)
            add_module_item(
                batch, module_id, Columns.TERMINATEDS, terminated_column(steps + 1, -2, terminated)
            )
            add_module_item(
                batch, module_id, Columns.TRUNCATEDS, terminated_column(steps + 1, -2, not terminated)
            )
        shared_data[BOOTSTRAP_CHUNK_LENS] = chunk_lens
        return batch


def _add_one_timestep(episode: SingleAgentEpisode) -> None:
    episode.observations.append(episode.get_observations(-1))
    episode.infos.append(episode.get_infos(-1))
    episode.actions.append(episode.get_actions(-1))
    episode.rewards.append(0.0)
    for buffer in episode.extra_model_outputs.values():
        buffer.append(buffer.get(-1))
    episode.t += 1
    if not episode.is_done:
        episode.is_truncated = True


def remove_bootstrap_timesteps(shared_data: dict) -> None:
    """Takes the timestep `AddOneTsToEpisodesAndTruncate` added off each chunk it extended (in
    `shared_data`, the dict the pipeline ran with) and restores the chunk's `is_truncated`."""
    for episode, truncated in shared_data.pop(_EXTENDED, ()):
        for buffer in (episode.observations, episode.infos, episode.actions, episode.rewards):
            buffer.pop()
        for buffer in episode.extra_model_outputs.values():
            buffer.pop()
        episode.t -= 1
        episode.is_truncated = truncated
