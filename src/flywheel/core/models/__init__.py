"""Default models built from `model_config`: encoders (MLP, one-hot MLP, CNN, LSTM) and heads."""

from flywheel.core.models.action_mask import (
    ACTION_MASK,
    MASKED_LOGIT,
    MASKED_OBSERVATIONS,
    mask_logits,
    masked_observation_space,
    random_allowed_actions,
    split_masked,
)
from flywheel.core.models.catalog import (
    ENCODER_OUT,
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
    FUSION_KEYS,
    GAUSSIAN_HEAD_KEYS,
    activation_layer,
    get_activation_fn,
    resolve_model_config,
)
from flywheel.core.models.fusion import FusionEncoder
from flywheel.core.models.initializers import LayerInit
from flywheel.core.models.lstm import LSTMEncoder
from flywheel.core.models.mlp import NORMC_HEADS, MLPEncoder, OneHotMLPEncoder, mlp, normc_, normc_initializer
from flywheel.core.models.padding import same_padding, valid_padding

__all__ = [
    "ACTION_MASK",
    "MASKED_LOGIT",
    "MASKED_OBSERVATIONS",
    "CNNEncoder",
    "DEFAULT_MODEL_CONFIG",
    "NORMC_HEADS",
    "FUSION_KEYS",
    "FusionEncoder",
    "GAUSSIAN_HEAD_KEYS",
    "ENCODER_OUT",
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
    "mask_logits",
    "masked_observation_space",
    "get_activation_fn",
    "mlp",
    "normc_",
    "normc_initializer",
    "random_allowed_actions",
    "resolve_model_config",
    "same_padding",
    "split_masked",
    "valid_padding",
]
