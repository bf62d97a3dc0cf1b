"""`TensorToNumpy`: module outputs → numpy, so the env and the episodes never see tensors."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch
import tree

from flywheel.connectors.connector import ConnectorV2
from flywheel.connectors.env_to_module.agent_rows import column_dicts

if TYPE_CHECKING:
    from flywheel.core.rl_module.rl_module import RLModule
    from flywheel.metrics.metrics_logger import MetricsLogger
    from flywheel.typing import EpisodeType


class TensorToNumpy(ConnectorV2):
    """Turns every torch tensor in the batch into a numpy array (nested columns leaf-wise).

    Tensors are detached and moved to the CPU first, so outputs of a module on a GPU or with
    gradients convert too. The arrays are copies, not views of the tensors' memory: runners keep
    each step's arrays until `sample()` returns, and thousands of live tensors behind them made
    Python's garbage collector walk them again and again (7 us per step at one sub-env; a copy of
    a step's small outputs costs well under one). For `MultiAgentEpisode`s each module's outputs
    (`batch[module_id]`) convert.
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
        for columns in column_dicts(batch, episodes):
            _convert(columns)
        return batch


def _convert(columns: dict[str, Any]) -> None:
    for column, value in columns.items():
        if isinstance(value, torch.Tensor):
            try:
                # What a runner's module returns (on the CPU, under inference mode) needs no forcing:
                # `numpy()` is 0.2 us cheaper than `numpy(force=True)`, on each output every step
                # (and converted here rather than in `_leaf_to_numpy`: one call fewer per output).
                columns[column] = value.numpy().copy()
            except (RuntimeError, TypeError):  # gradients, another device, a conjugate or negative view
                columns[column] = value.numpy(force=True).copy()
        elif isinstance(value, (dict, tuple, list)):
            columns[column] = tree.map_structure(_leaf_to_numpy, value)


def _leaf_to_numpy(leaf: object) -> Any:
    # (Leaves of nested outputs, e.g. recurrent states: forced, which converts every tensor.)
    return leaf.numpy(force=True).copy() if isinstance(leaf, torch.Tensor) else leaf
