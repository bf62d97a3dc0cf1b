"""Default models built from `model_config`: encoders (MLP, one-hot MLP, CNN, LSTM) and heads."""

from flywheel.core.models.catalog import (
    FreeLogStdHead,
    build_encoder,
    build_policy_head,
    build_value_head,
)
from flywheel.core.models.cnn import CNNEncoder
from flywheel.core.models.config import DEFAULT_MODEL_CONFIG, activation_layer, resolve_model_config
from flywheel.core.models.lstm import LSTMEncoder
from flywheel.core.models.mlp import MLPEncoder, OneHotMLPEncoder, mlp, normc_init_, normc_initializer
from flywheel.core.models.padding import same_padding, valid_padding

__all__ = [
    "CNNEncoder",
    "DEFAULT_MODEL_CONFIG",
    "FreeLogStdHead",
    "LSTMEncoder",
    "MLPEncoder",
    "OneHotMLPEncoder",
    "activation_layer",
    "build_encoder",
    "build_policy_head",
    "build_value_head",
    "mlp",
    "normc_init_",
    "normc_initializer",
    "resolve_model_config",
    "same_padding",
    "valid_padding",
]
