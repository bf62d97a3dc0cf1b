"""`NumpyToTensor` (learner version): the finished numpy train batch → torch tensors."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import torch

from flywheel.connectors.connector import ConnectorV2


class NumpyToTensor(ConnectorV2):
    """Turns every numpy array of every module's columns into a torch tensor (nested columns leaf-wise).

    The last default piece of the off-policy learner pipelines (as in RLlib's), so pieces inserted
    after it (`insert_after(NumpyToTensor, piece)`) see tensors, e.g. to run a module on the batch.
    float64 becomes float32; object arrays stay numpy. Tensors share memory with the arrays on the
    CPU; with `device` set, they are moved there (the learner moves the rest to its device).
    """

    def __init__(
        self,
        input_observation_space: gym.Space | None = None,
        input_action_space: gym.Space | None = None,
        *,
        device: str | torch.device | None = None,
        **kwargs: Any,
    ):
        super().__init__(input_observation_space, input_action_space, **kwargs)
        self.device = None if device is None else torch.device(device)

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
        return {module_id: self._convert(columns) for module_id, columns in batch.items()}

    def _convert(self, data: Any) -> Any:
        if isinstance(data, np.ndarray):
            if data.dtype == object:
                return data
            tensor = torch.from_numpy(data.astype(np.float32) if data.dtype == np.float64 else data)
            return tensor if self.device is None else tensor.to(self.device)
        if isinstance(data, dict):
            return {key: self._convert(value) for key, value in data.items()}
        if isinstance(data, tuple):
            return tuple(self._convert(value) for value in data)
        return data

    def __repr__(self) -> str:
        return f"NumpyToTensor(device={self.device})"
