"""DreamerV3's model sizes (Hafner et al., 2023, table B.1, plus RLlib 2.60's four smaller debug sizes):
one name sets every layer width of the world model, actor and critic.

    dims = MODEL_SIZES["XS"]    # ModelDims(dense_units=256, num_dense_layers=1, gru_units=256, ...)
"""

from __future__ import annotations

from typing import NamedTuple

import gymnasium as gym

__all__ = ["MODEL_SIZES", "ModelDims", "model_dims", "uses_symlog_obs"]


class ModelDims(NamedTuple):
    """The layer sizes one `model_size` stands for."""

    dense_units: int
    """Width of every MLP layer (encoder, decoder, heads, actor, critic)."""
    num_dense_layers: int
    """Hidden layers of every MLP."""
    gru_units: int
    """Size of the deterministic state h (the GRU's)."""
    num_z_categoricals: int
    """Categorical variables in the stochastic state z."""
    num_z_classes: int
    """Classes of each of them."""
    cnn_multiplier: int
    """Channels of the first image-encoder layer (doubled at each of the four layers)."""


MODEL_SIZES: dict[str, ModelDims] = {
    "nano": ModelDims(16, 1, 16, 4, 4, 2),
    "micro": ModelDims(32, 1, 32, 8, 8, 4),
    "mini": ModelDims(64, 1, 64, 16, 16, 8),
    "XXS": ModelDims(128, 1, 128, 32, 32, 16),
    "XS": ModelDims(256, 1, 256, 32, 32, 24),
    "S": ModelDims(512, 2, 512, 32, 32, 32),
    "M": ModelDims(640, 3, 1024, 32, 32, 48),
    "L": ModelDims(768, 4, 2048, 32, 32, 64),
    "XL": ModelDims(1024, 5, 4096, 32, 32, 96),
}


def model_dims(model_size: str) -> ModelDims:
    """The dims of `model_size`; a clear error for an unknown name."""
    if model_size not in MODEL_SIZES:
        raise ValueError(
            f"model_size={model_size!r} is not one of {list(MODEL_SIZES)}. "
            "Fix: pass one of them to config.training(model_size=...), e.g. 'XS' (RLlib's default)."
        )
    return MODEL_SIZES[model_size]


def uses_symlog_obs(observation_space: gym.Space, symlog_obs: bool | str) -> bool:
    """Whether observations are regressed in symlog space: `symlog_obs` itself, or for "auto" yes
    unless the observations are images (2 or 3 axes)."""
    if symlog_obs != "auto":
        return bool(symlog_obs)
    shape = observation_space.shape or ()
    return len(shape) not in (2, 3)
