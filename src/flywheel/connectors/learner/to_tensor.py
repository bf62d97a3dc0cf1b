"""`NumpyToTensor` (learner version): the finished numpy train batch → torch tensors."""

from __future__ import annotations

from typing import Any

import numpy as np

from flywheel.connectors.env_to_module.to_tensor import NumpyToTensor as EnvToModuleNumpyToTensor


class NumpyToTensor(EnvToModuleNumpyToTensor):
    """Turns every numpy array of every module's columns into a torch tensor (nested columns leaf-wise).

    The last default piece of the off-policy learner pipelines (as in RLlib's), so pieces inserted
    after it (`insert_after(NumpyToTensor, piece)`) see tensors, e.g. to run a module on the batch.
    float64 becomes float32; object arrays stay numpy. Tensors share memory with the arrays on the
    CPU; with `device` set, they are moved there (the learner moves the rest to its device).

    A subclass of the env-to-module piece, so that (as RLlib's one `NumpyToTensor` class) either
    class finds it in a pipeline; it converts `{module_id: {column: array}}` without reading the
    episodes.
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
        return {module_id: self._leaves_to_tensors(columns) for module_id, columns in batch.items()}

    def _leaves_to_tensors(self, data: Any) -> Any:
        if isinstance(data, np.ndarray):
            return data if data.dtype == object else self._to_tensor(data)
        if isinstance(data, dict):
            return {key: self._leaves_to_tensors(value) for key, value in data.items()}
        if isinstance(data, tuple):
            return tuple(self._leaves_to_tensors(value) for value in data)
        return data
