"""`AddColumnsFromEpisodesToTrainBatch`: actions, rewards, done flags and extra model outputs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from flywheel.columns import Columns
from flywheel.connectors.connector import ConnectorV2
from flywheel.connectors.learner.module_episodes import (
    add_module_item,
    module_episodes,
    modules_with_column,
    terminated_column,
    transition_blocks,
)
from flywheel.utils.nested import stack

if TYPE_CHECKING:
    from flywheel.typing import EpisodeType

_OWN_COLUMNS = (Columns.ACTIONS, Columns.REWARDS, Columns.TERMINATEDS, Columns.TRUNCATEDS)
_OBSERVATIONS = (Columns.OBS, Columns.NEXT_OBS)  # the observation pieces add these


class AddColumnsFromEpisodesToTrainBatch(ConnectorV2):
    """Adds one row per step of each chunk: `ACTIONS`, `REWARDS`, `TERMINATEDS`, `TRUNCATEDS`, and
    every extra model output the runner recorded (`ACTION_LOGP`, `ACTION_DIST_INPUTS`, `VF_PREDS`,
    `WEIGHTS_SEQ_NO`, ...) except `STATE_OUT`, which `AddTimeDimToBatchAndZeroPad` turns into `STATE_IN`.

    Done flags are True only on a chunk's last step (terminated / truncated). With
    `AddOneTsToEpisodesAndTruncate` earlier in the pipeline the chunks end in their bootstrap
    timestep (last action and extra outputs repeated, reward 0.0) and that piece's done flags are kept.
    A column an earlier piece set for a module is left alone for that module. Replayed transitions
    give their columns as they are (`REWARDS`: the n-step sums; `N_STEP`, `WEIGHTS`, ... as extra
    model outputs).
    """

    def __call__(
        self,
        *,
        rl_module: Any,
        batch: dict[str, Any],
        episodes: list[EpisodeType],
        explore: bool | None = None,
        shared_data: dict | None = None,
        metrics: Any = None,
        **kwargs: object,
    ) -> dict[str, Any]:
        blocks = transition_blocks(episodes)
        if blocks is not None:
            preset_columns = {module_id: set(columns) for module_id, columns in batch.items()}
            for module_id, block in blocks:
                preset_here = preset_columns.get(module_id, ())
                for column, data in block.columns.items():
                    if column not in _OBSERVATIONS and column not in preset_here:
                        add_module_item(batch, module_id, column, data)
            return batch
        preset = {column: modules_with_column(batch, column) for column in _OWN_COLUMNS}
        preset_extra: dict[str, set] = {}
        for module_id, episode in module_episodes(episodes):
            steps = slice(0, len(episode))
            columns = {
                Columns.ACTIONS: stack(episode.get_actions(steps)),
                Columns.REWARDS: np.asarray(episode.get_rewards(steps), dtype=np.float32),
            }
            rows = len(columns[Columns.REWARDS])
            columns[Columns.TERMINATEDS] = terminated_column(rows, len(episode) - 1, episode.is_terminated)
            columns[Columns.TRUNCATEDS] = terminated_column(rows, len(episode) - 1, episode.is_truncated)
            for column, data in columns.items():
                if module_id not in preset[column]:
                    add_module_item(batch, module_id, column, data)
            self._add_extra_model_outputs(batch, module_id, episode, steps, preset_extra)
        return batch

    @staticmethod
    def _add_extra_model_outputs(
        batch: dict, module_id: str, episode: Any, steps: slice, preset: dict[str, set]
    ) -> None:
        for key, data in episode.get_extra_model_outputs(None, steps).items():
            if key == Columns.STATE_OUT:
                continue
            if key not in preset:
                preset[key] = modules_with_column(batch, key)
            if module_id in preset[key]:
                continue
            add_module_item(batch, module_id, key, stack(data))
