"""Torch helpers with RLlib's names and behaviour (`ray.rllib.utils.torch_utils`).

`FLOAT_MIN` / `FLOAT_MAX` are finite stand-ins for -inf / +inf that survive float32 arithmetic
(e.g. masking logits: `logits + torch.clamp(torch.log(mask), min=FLOAT_MIN)`).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import torch
import tree
from torch.nn import functional as F

from flywheel.errors import ArgumentError
from flywheel.utils.numpy import SMALL_NUMBER

FLOAT_MIN = -3.4e38
FLOAT_MAX = 3.4e38


def one_hot(x: torch.Tensor, space: gym.Space) -> torch.Tensor:
    """One-hot encodes int tensor `x` for a Discrete or MultiDiscrete `space` (ints, like torch's).

    Discrete(n): `[B] -> [B, n]`. MultiDiscrete(nvec): `[B, len(nvec)] -> [B, sum(nvec)]`, one block
    per component (a 2-D `nvec` is flattened, `x` reshaped to `[B, -1]` to match).

        one_hot(torch.tensor([0, 3]), gym.spaces.Discrete(4))  # [[1, 0, 0, 0], [0, 0, 0, 1]]
    """
    if isinstance(space, gym.spaces.Discrete):
        return F.one_hot(x.long(), int(space.n))
    if isinstance(space, gym.spaces.MultiDiscrete):
        nvec = np.ravel(space.nvec)
        x = x.reshape(x.shape[0], -1)
        return torch.cat([F.one_hot(x[:, i].long(), int(n)) for i, n in enumerate(nvec)], dim=-1)
    raise ArgumentError(
        f"one_hot needs a Discrete or MultiDiscrete space; got {space}. Fix: one-hot encode only "
        "discrete values (flatten other spaces first)."
    )


def convert_to_torch_tensor(
    x: object, device: str | torch.device | None = None, pin_memory: bool = False
) -> Any:
    """`x` (any nesting of dicts, lists and tuples) with every leaf made a torch tensor on `device`.

    As RLlib's: None leaves and numpy object or string arrays stay as they are; tensors are kept
    (and moved); other leaves go through `np.asarray`; floating tensors other than float16 become
    float32. `pin_memory` pins host memory before a copy to a CUDA device.
    """
    device = torch.device("cpu" if device is None else device)
    cuda = device.type == "cuda" and torch.cuda.is_available()

    def leaf(item: object) -> Any:
        if item is None:
            return None
        if isinstance(item, np.ndarray) and (item.dtype == object or item.dtype.kind == "U"):
            return item
        tensor = item if isinstance(item, torch.Tensor) else torch.as_tensor(np.asarray(item))
        if tensor.is_floating_point() and tensor.dtype != torch.float16:
            tensor = tensor.float()
        if pin_memory and cuda:
            tensor = tensor.pin_memory()
        return tensor.to(device, non_blocking=cuda)

    return tree.map_structure(leaf, x)


def explained_variance(y: torch.Tensor, pred: torch.Tensor) -> torch.Tensor:
    """`max(-1, 1 - Var(y - pred) / Var(y))` over the first axis (1: perfect; 0: as good as the mean).

    Variances are unbiased and `Var(y)` gets `SMALL_NUMBER` added, as in RLlib.
    """
    y = y.squeeze()
    y_var = torch.var(y, dim=0)
    diff_var = torch.var(y - pred.squeeze(), dim=0)
    return torch.clamp(1.0 - diff_var / (y_var + SMALL_NUMBER), min=-1.0)


def huber_loss(x: torch.Tensor, delta: float = 1.0) -> torch.Tensor:
    """Element-wise Huber loss: `0.5 * x**2` where `|x| < delta`, else `delta * (|x| - 0.5 * delta)`."""
    abs_x = torch.abs(x)
    return torch.where(abs_x < delta, 0.5 * x**2, delta * (abs_x - 0.5 * delta))


def l2_loss(x: torch.Tensor) -> torch.Tensor:
    """`0.5 * sum(x**2)` (half the squared L2 norm, no square root)."""
    return 0.5 * torch.sum(x**2)


def global_norm(tensors: list[torch.Tensor]) -> torch.Tensor:
    """The L2 norm over all elements of all `tensors`: `sqrt(sum(t**2 for t in tensors))`."""
    return torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(t) for t in tensors]))


def sequence_mask(
    lengths: torch.Tensor,
    maxlen: int | None = None,
    dtype: torch.dtype | None = None,
    time_major: bool = False,
) -> torch.Tensor:
    """`[B, maxlen]` mask, True where the time index is below each row's length (`[maxlen, B]` if
    `time_major`). `maxlen` defaults to the largest length; `dtype` (default bool) converts it.
    """
    maxlen = int(lengths.max()) if maxlen is None else int(maxlen)
    mask = torch.arange(maxlen, device=lengths.device) < lengths.unsqueeze(-1)
    if time_major:
        mask = mask.t()
    return mask if dtype is None else mask.to(dtype)
