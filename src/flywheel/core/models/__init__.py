"""Default models built from `model_config`: encoders (MLP, one-hot MLP, CNN, LSTM) and heads."""

from flywheel.core.models.catalog import (
    ENCODER_OUT,
    FreeLogStdHead,
    build_encoder,
    build_policy_head,
    build_value_head,
)
from flywheel.core.models.cnn import CNNEncoder
from flywheel.core.models.config import (
    DEFAULT_MODEL_CONFIG,
    activation_layer,
    get_activation_fn,
    resolve_model_config,
)
from flywheel.core.models.lstm import LSTMEncoder
from flywheel.core.models.mlp import MLPEncoder, OneHotMLPEncoder, mlp, normc_init_

__all__ = [
    "CNNEncoder",
    "DEFAULT_MODEL_CONFIG",
    "ENCODER_OUT",
    "FreeLogStdHead",
    "LSTMEncoder",
    "MLPEncoder",
    "OneHotMLPEncoder",
    "activation_layer",
    "build_encoder",
    "build_policy_head",
    "build_value_head",
    "get_activation_fn",
    "mlp",
    "normc_init_",
    "resolve_model_config",
]
