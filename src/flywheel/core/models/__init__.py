"""Default models built from `model_config`: encoders (MLP, one-hot MLP, CNN, LSTM) and heads."""

from flywheel.core.models.catalog import (
    FreeLogStdHead,
    GaussianOutput,
    build_encoder,
    build_head,
    build_mlp_encoder,
    build_policy_head,
    build_value_head,
)
from flywheel.core.models.cnn import CNNEncoder
from flywheel.core.models.config import (
    DEFAULT_MODEL_CONFIG,
    GAUSSIAN_HEAD_KEYS,
    activation_layer,
    resolve_model_config,
)
from flywheel.core.models.initializers import LayerInit
from flywheel.core.models.lstm import LSTMEncoder
from flywheel.core.models.mlp import MLPEncoder, OneHotMLPEncoder, mlp, normc_init_

__all__ = [
    "CNNEncoder",
    "DEFAULT_MODEL_CONFIG",
    "GAUSSIAN_HEAD_KEYS",
    "FreeLogStdHead",
    "GaussianOutput",
    "LayerInit",
    "LSTMEncoder",
    "MLPEncoder",
    "OneHotMLPEncoder",
    "activation_layer",
    "build_encoder",
    "build_head",
    "build_mlp_encoder",
    "build_policy_head",
    "build_value_head",
    "mlp",
    "normc_init_",
    "resolve_model_config",
]
