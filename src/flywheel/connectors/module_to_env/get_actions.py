"""`GetActions`: turns the module's action distribution inputs into actions (and their log-probs)."""

from __future__ import annotations

from typing import Any

from flywheel.columns import Columns
from flywheel.connectors.connector import ConnectorV2
from flywheel.connectors.env_to_module.agent_rows import is_multi_agent


class GetActions(ConnectorV2):
    """Samples `batch[ACTIONS]` from `batch[ACTION_DIST_INPUTS]` unless the module already chose them.

    Exploring: the module's exploration distribution, `sample()`, plus `ACTION_LOGP` (the learner
    needs it for importance ratios). Not exploring: the inference distribution's
    `to_deterministic().sample()` (e.g. argmax, Gaussian mean), no log-probs. For `MultiAgentEpisode`s
    each module's outputs (`batch[module_id]`) get actions from that module's distributions.
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
        if is_multi_agent(episodes):
            for module_id, columns in batch.items():
                _add_actions(rl_module[module_id], columns, explore)
        else:
            _add_actions(rl_module, batch, explore)
        return batch


def _add_actions(rl_module: Any, columns: dict[str, Any], explore: bool | None) -> None:
    if Columns.ACTIONS in columns:
        return
    if explore:
        dist = rl_module.get_exploration_action_dist_cls().from_logits(columns[Columns.ACTION_DIST_INPUTS])
        actions = dist.sample()
        columns[Columns.ACTION_LOGP] = dist.logp(actions)
    else:
        dist = rl_module.get_inference_action_dist_cls().from_logits(columns[Columns.ACTION_DIST_INPUTS])
        actions = dist.to_deterministic().sample()
    columns[Columns.ACTIONS] = actions
