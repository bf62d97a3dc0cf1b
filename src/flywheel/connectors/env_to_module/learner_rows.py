"""`set_learner_observations`: the learner-side half of pieces that set `batch[OBS]` themselves.

`FrameStacking` leaves the episodes with single frames and also runs as a learner connector, where it
stacks every observation of each episode at once, grouping the episodes' rows by module.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from flywheel.columns import Columns

if TYPE_CHECKING:
    from flywheel.typing import EpisodeType


def set_learner_observations(
    batch: dict[str, Any],
    episodes: list[EpisodeType],
    rows_of: Callable[[Any, int], np.ndarray],
    shared_data: dict | None = None,
) -> None:
    """Sets `batch[module_id][OBS]` to the rows `rows_of(episode, n)` of each module's episode chunks
    (agents' chunks of multi-agent episodes included), concatenated in the learner pipeline's chunk
    order. `n` is the chunk's row count: its steps, plus one when `AddOneTsToEpisodesAndTruncate`
    added a bootstrap row (so the rows match the other columns, e.g. in PPO's pipeline)."""
    # Imported here: the learner package imports `FrameStacking` (its learner-pipeline name) from this one.
    from flywheel.connectors.learner.module_episodes import chunk_rows, module_episodes

    rows: dict[str, list[np.ndarray]] = {}
    for module_id, episode in module_episodes(episodes):
        rows.setdefault(module_id, []).append(rows_of(episode, chunk_rows(episode, shared_data)))
    for module_id, module_rows in rows.items():
        batch.setdefault(module_id, {})[Columns.OBS] = np.concatenate(module_rows)
