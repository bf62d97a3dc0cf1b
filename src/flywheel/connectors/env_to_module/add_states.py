"""`AddStatesFromEpisodesToBatch`: feeds a recurrent module the state it produced one step earlier."""

from __future__ import annotations

from typing import Any

import numpy as np
import tree

from flywheel.columns import Columns
from flywheel.connectors.connector import ConnectorV2
from flywheel.connectors.env_to_module.agent_rows import agent_rows, is_multi_agent, is_stateless
from flywheel.utils.numpy import convert_to_numpy


class AddStatesFromEpisodesToBatch(ConnectorV2):
    """Sets `batch[STATE_IN]` to one state per episode, for stateful modules only.

    An episode at its very first step gets the module's initial state; an ongoing one gets its last
    `STATE_OUT` extra model output. A chunk that was just cut (no steps yet, `t_started > 0`) finds
    that output in its lookback buffer, so runners must cut with `len_lookback_buffer >= 1`.
    For `MultiAgentEpisode`s the same happens per stateful module, in `batch[module_id]`.
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
        **kwargs: object,
    ) -> dict[str, Any]:
        if is_multi_agent(episodes):
            for module_id, rows in agent_rows(episodes, shared_data).items():
                module = rl_module[module_id]
                columns = batch.setdefault(module_id, {})
                if Columns.STATE_IN not in columns and module.is_stateful():
                    columns[Columns.STATE_IN] = _states(module, rows.episodes)
        elif Columns.STATE_IN not in batch and rl_module.is_stateful():
            batch[Columns.STATE_IN] = _states(rl_module, episodes)
        return batch

    only_builds_batch = True

    def is_noop_for(self, rl_module: Any) -> bool:
        return is_stateless(rl_module)


def _states(rl_module: Any, episodes: list[Any]) -> list[Any]:
    """One input state per episode: its last STATE_OUT, or the module's initial state at its start."""
    initial_state = None
    states = []
    for episode in episodes:
        if len(episode) > 0:
            states.append(episode.get_extra_model_outputs(Columns.STATE_OUT, -1))
        elif episode.t_started > 0:
            states.append(episode.get_extra_model_outputs(Columns.STATE_OUT, -1, neg_index_as_lookback=True))
        else:
            if initial_state is None:
                # Modules may return tensors (even trainable ones); episodes hold numpy arrays.
                state = convert_to_numpy(rl_module.get_initial_state(), reduce_type=False)
                initial_state = tree.map_structure(np.asarray, state)
            states.append(initial_state)
    return states
