"""`NumpyToTensor` (learner version): the train batch's arrays as torch tensors on the learner's device."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import torch
import tree

from flywheel.connectors.connector import ConnectorV2

if TYPE_CHECKING:
    from flywheel.core.rl_module.rl_module import RLModule
    from flywheel.metrics.metrics_logger import MetricsLogger
    from flywheel.typing import EpisodeType


class NumpyToTensor(ConnectorV2):
    """Turns every array of every module's columns into a tensor on `device` (nested columns
    leaf-wise; float64 becomes float32; object arrays such as infos stay numpy).

    The last default learner piece, as in RLlib: pieces after it (PPO's
    `GeneralAdvantageEstimation`, or a custom piece inserted with
    `pipeline.insert_after(NumpyToTensor, piece)`) see tensors, and the learner trains on them as
    they are. The learner builds its pipeline with its own device.
    """

    def __init__(
        self,
        input_observation_space: Any = None,
        input_action_space: Any = None,
        *,
        device: str | torch.device | None = None,
        **kwargs: object,
    ):
        super().__init__(input_observation_space, input_action_space, **kwargs)
        self.device = torch.device("cpu") if device is None else torch.device(device)

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
        for columns in batch.values():
            for column, value in columns.items():
                columns[column] = tree.map_structure(self._to_tensor, value)
        return batch

    def _to_tensor(self, leaf: object) -> Any:
        if isinstance(leaf, np.ndarray):
            if leaf.dtype == object:
                return leaf
            if leaf.dtype == np.float64:
                leaf = leaf.astype(np.float32)
            return torch.from_numpy(leaf).to(self.device)
        if isinstance(leaf, torch.Tensor):
            return leaf.to(self.device)
        return leaf

    def __repr__(self) -> str:
        return f"NumpyToTensor(device={self.device})"
