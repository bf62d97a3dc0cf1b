"""`NumpyToTensor`: the last env-to-module step, numpy batch → torch tensors for the module."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import gymnasium as gym
import numpy as np
import torch
import tree

from flywheel.connectors.connector import ConnectorV2
from flywheel.connectors.env_to_module.agent_rows import column_dicts

if TYPE_CHECKING:
    from flywheel.core.rl_module.rl_module import RLModule
    from flywheel.metrics.metrics_logger import MetricsLogger
    from flywheel.typing import EpisodeType

_FLOAT64 = np.dtype(np.float64)


class NumpyToTensor(ConnectorV2):
    """Turns every numpy array in the batch into a torch tensor (nested columns leaf-wise).

    float64 arrays become float32, since modules compute in float32 and envs often return float64.
    Tensors share memory with the arrays on the CPU (`torch.from_numpy`, no copy); with `device` set,
    they are moved there. For `MultiAgentEpisode`s each module's columns (`batch[module_id]`) convert.
    """

    only_builds_batch = True

    def __init__(
        self,
        input_observation_space: gym.Space | None = None,
        input_action_space: gym.Space | None = None,
        *,
        device: str | torch.device | None = None,
        **kwargs: object,
    ):
        super().__init__(input_observation_space, input_action_space, **kwargs)
        self.device = None if device is None else torch.device(device)

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
            self._convert(columns)
        return batch

    def _convert(self, columns: dict[str, Any]) -> None:
        for column, value in columns.items():
            if isinstance(value, np.ndarray):
                columns[column] = self._to_tensor(value)
            elif isinstance(value, (dict, tuple, list)):
                columns[column] = tree.map_structure(self._to_tensor_if_array, value)

    def _to_tensor(self, array: np.ndarray) -> torch.Tensor:
        if array.dtype == _FLOAT64:  # (a dtype, not the type np.float64: compared 30% faster)
            array = array.astype(np.float32)
        tensor = torch.from_numpy(array)
        return tensor if self.device is None else tensor.to(self.device)

    def _to_tensor_if_array(self, leaf: object) -> Any:
        return self._to_tensor(leaf) if isinstance(leaf, np.ndarray) else leaf

    def __repr__(self) -> str:
        return f"NumpyToTensor(device={self.device})"
