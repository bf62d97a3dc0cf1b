"""`set_learner_observations`: the learner-side half of observation-rewriting pieces.

`FrameStacking` and `PrevActionsPrevRewards` also run as learner connectors, where they rewrite
every observation of each episode at once; both group the episodes' rows by module the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from flywheel.columns import Columns
from flywheel.typing import DEFAULT_MODULE_ID


def set_learner_observations(
    batch: dict[str, Any], episodes: list[Any], rows_of: Callable[[Any, int], np.ndarray]
) -> None:
    """Sets `batch[module_id][OBS]` to the rows `rows_of(episode, len(episode))` of each module's
    episodes, concatenated in episode order (empty episodes have no rows and are skipped)."""
    rows: dict[str, list[np.ndarray]] = {}
    for episode in episodes:
        n = len(episode)
        if n == 0:
            continue
        rows.setdefault(episode.module_id or DEFAULT_MODULE_ID, []).append(rows_of(episode, n))
    for module_id, module_rows in rows.items():
        batch.setdefault(module_id, {})[Columns.OBS] = np.concatenate(module_rows)
