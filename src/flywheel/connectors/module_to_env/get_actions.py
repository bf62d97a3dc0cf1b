"""`GetActions`: turns the module's action distribution inputs into actions (and their log-probs)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NoReturn

from flywheel.columns import Columns
from flywheel.connectors.connector import ConnectorV2
from flywheel.connectors.env_to_module.agent_rows import is_multi_agent
from flywheel.errors import ModuleError

if TYPE_CHECKING:
    from flywheel.typing import EpisodeType


class GetActions(ConnectorV2):
    """Samples `batch[ACTIONS]` from `batch[ACTION_DIST_INPUTS]` unless the module already chose them.

    Exploring: the module's exploration distribution, `sample()`, plus `ACTION_LOGP` (the learner
    needs it for importance ratios). Not exploring: the inference distribution's
    `to_deterministic().sample()` (e.g. argmax, Gaussian mean), no log-probs. For `MultiAgentEpisode`s
    each module's outputs (`batch[module_id]`) get actions from that module's distributions.

    A module output it cannot act on (not a dict, or neither of the two columns) fails with a
    `ModuleError` naming the module, its forward method and the fix.
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
        if is_multi_agent(episodes):
            for module_id, columns in batch.items():
                _add_actions(rl_module[module_id], columns, explore)
        else:
            _add_actions(rl_module, batch, explore)
        return batch


def _add_actions(rl_module: Any, columns: Any, explore: bool | None) -> None:
    if isinstance(columns, dict) and Columns.ACTIONS in columns:
        return
    if not isinstance(columns, dict) or Columns.ACTION_DIST_INPUTS not in columns:
        _raise_unusable_output(rl_module, columns, explore)
    if explore:
        dist = rl_module.get_exploration_action_dist_cls().from_logits(columns[Columns.ACTION_DIST_INPUTS])
        actions = dist.sample()
        columns[Columns.ACTION_LOGP] = dist.logp(actions)
    else:
        dist = rl_module.get_inference_action_dist_cls().from_logits(columns[Columns.ACTION_DIST_INPUTS])
        actions = dist.to_deterministic().sample()
    columns[Columns.ACTIONS] = actions


def _raise_unusable_output(rl_module: Any, out: Any, explore: bool | None) -> NoReturn:
    name = type(rl_module).__name__
    method = f"{name}.{'forward_exploration' if explore else 'forward_inference'}()"
    if not isinstance(out, dict):
        raise ModuleError(
            f"{method} returned a {type(out).__name__}, expected a dict of columns. "
            f"Fix: return {{Columns.ACTION_DIST_INPUTS: logits}} from {name}._forward."
        )
    raise ModuleError(
        f"{method} returned the keys {sorted(out)}, but the runner's GetActions piece needs "
        f"Columns.ACTION_DIST_INPUTS ({Columns.ACTION_DIST_INPUTS!r}) to sample actions from, or "
        f"Columns.ACTIONS ({Columns.ACTIONS!r}) chosen by the module. Fix: return "
        f"{{Columns.ACTION_DIST_INPUTS: logits}} from {name}._forward (or the phase method)."
    )
