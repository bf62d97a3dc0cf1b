"""`model_config` keys of the default models, their defaults, and name lookups.

The keys and defaults are RLlib's, so a `model_config` written for RLlib builds the same
network here. The default modules check it (`DefaultModelConfig`'s keys, values of the right type);
custom modules read their own keys from the same dict, unchecked.
"""

from __future__ import annotations

import copy
import difflib
from types import MappingProxyType

from torch import nn

from flywheel.core.rl_module.default_model_config import as_model_config_dict, model_config_problems
from flywheel.errors import ModuleError

DEFAULT_MODEL_CONFIG = MappingProxyType(
    {
        # Hidden layer sizes of the MLP encoder (1-D observations) and of the LSTM's input MLP.
        "fcnet_hiddens": [256, 256],
        # Activation between hidden layers: "tanh", "relu", "linear", "swish"/"silu", "elu".
        "fcnet_activation": "tanh",
        # True: policy and value share the encoder (fewer weights, coupled losses).
        # Recurrent modules always share the LSTM (see the rl_modules concept page).
        "vf_share_layers": False,
        # Put an LSTM after the encoder; the module becomes stateful ({"h", "c"}).
        "use_lstm": False,
        "lstm_cell_size": 256,
        # Length of the training sequences the learner cuts episodes into (recurrent modules).
        "max_seq_len": 20,
        # CNN layers for image (H, W, C) observations: [[out_channels, kernel, stride], ...];
        # None picks RLlib's default for 96x96, 84x84, 64x64, 42x42 and 10x10 images.
        "conv_filters": None,
        "conv_activation": "relu",
        # Hidden layers of the policy and value heads (after the encoder).
        "head_fcnet_hiddens": [],
        "head_fcnet_activation": "relu",
        # Box actions: a learned, state-independent log-std instead of one computed per state.
        "free_log_std": False,
        # Box actions: the initial log-std (the free parameter, or the bias of the log-std outputs).
        "log_std_init": 0.0,
        # Box actions: log-stds are clipped to [-log_std_clip_param, log_std_clip_param].
        "log_std_clip_param": 20.0,
        # Weight and bias initializers of the encoder's layers and of the heads' layers: None keeps
        # torch's default (as RLlib's), else a torch.nn.init in-place name ("orthogonal_") or a
        # callable, called as init(tensor, **kwargs).
        "fcnet_kernel_initializer": None,
        "fcnet_kernel_initializer_kwargs": None,
        "fcnet_bias_initializer": None,
        "fcnet_bias_initializer_kwargs": None,
        "head_fcnet_kernel_initializer": None,
        "head_fcnet_kernel_initializer_kwargs": None,
        "head_fcnet_bias_initializer": None,
        "head_fcnet_bias_initializer_kwargs": None,
        # The kwargs of head_fcnet_kernel_initializer for the output layer of policy heads and of
        # value heads (e.g. {"gain": 0.01} and {"gain": 1.0}); None: head_fcnet_kernel_initializer_kwargs.
        "pi_output_kernel_initializer_kwargs": None,
        "vf_output_kernel_initializer_kwargs": None,
        # SAC's critic for Box actions as RLlib builds it (`FusionEncoder`): observation and action
        # encoders, then these layers over their concatenated embeddings. Only SAC reads them.
        "fusionnet_hiddens": [256, 256],
        "fusionnet_activation": "tanh",
        "fusionnet_kernel_initializer": None,
        "fusionnet_kernel_initializer_kwargs": None,
        "fusionnet_bias_initializer": None,
        "fusionnet_bias_initializer_kwargs": None,
    }
)

_ACTIVATIONS: dict[str, type[nn.Module] | None] = {
    "tanh": nn.Tanh,
    "relu": nn.ReLU,
    "linear": None,
    "swish": nn.SiLU,
    "silu": nn.SiLU,
    "elu": nn.ELU,
}

_DEFAULT_CONV_FILTERS: dict[tuple[int, ...], list] = {
    (96, 96): [[16, [8, 8], 4], [32, [4, 4], 2], [256, [11, 11], 2]],
    (84, 84): [[16, [8, 8], 4], [32, [4, 4], 2], [256, [11, 11], 1]],
    (64, 64): [[16, [4, 4], 2], [32, [4, 4], 2], [64, [4, 4], 2], [128, [4, 4], 2]],
    (42, 42): [[16, [4, 4], 2], [32, [4, 4], 2], [256, [11, 11], 1]],
    (10, 10): [[16, [5, 5], 2], [32, [5, 5], 2]],
}


GAUSSIAN_HEAD_KEYS = ("free_log_std", "log_std_init", "log_std_clip_param")
"""The keys only PPO's Gaussian policy head reads (SAC's squashed head clips its log-stds itself)."""
FUSION_KEYS = tuple(key for key in DEFAULT_MODEL_CONFIG if key.startswith("fusionnet_"))
"""The keys only SAC's critic for Box actions reads (`flywheel.core.models.fusion.FusionEncoder`)."""


def resolve_model_config(
    model_config: dict | None, *, check: bool = True, unused: tuple[str, ...] = (), module: str = ""
) -> dict:
    """A new dict: the defaults, overridden by `model_config`'s entries. With `check`, a ModuleError
    lists every key or value the default models cannot use (a subclass of a default module that reads
    keys of its own sets `uses_default_model_config = False`, which passes `check=False`), and every
    key of `unused` (keys the calling `module` does not read) set to other than its default."""
    problems = model_config_problems(model_config or {}, "model_config", _closest) if check else []
    given = as_model_config_dict(model_config) or {}
    problems += [
        f"model_config[{key!r}]={given[key]!r}: {module or 'this module'} does not use {key}. Fix: remove it."
        for key in unused
        if check and key in given and given[key] != DEFAULT_MODEL_CONFIG[key]
    ]
    if problems:
        raise ModuleError(
            f"Invalid model_config for a default module ({len(problems)} problem(s)):\n- "
            + "\n- ".join(problems)
        )
    resolved = copy.deepcopy(dict(DEFAULT_MODEL_CONFIG))
    resolved.update(as_model_config_dict(model_config) or {})
    return resolved


def _closest(word: str, words: tuple[str, ...]) -> str | None:
    matches = difflib.get_close_matches(word, words, n=1)
    return matches[0] if matches else None


def activation_layer(name: str | None) -> nn.Module | None:
    """A new activation module for `name` (None for "linear"/None)."""
    cls = get_activation_fn(name)
    return cls() if cls is not None else None


def get_activation_fn(name: str | None = None, framework: str = "torch") -> type[nn.Module] | None:
    """RLlib's helper: the torch activation class for `name` (None for "linear"/None)."""
    if framework != "torch":
        raise ModuleError(
            f"get_activation_fn(framework={framework!r}): flywheel is torch-only. Fix: pass 'torch'."
        )
    key = "linear" if name is None else str(name).lower()
    if key not in _ACTIVATIONS:
        raise ModuleError(f"Unknown activation {name!r}. Expected one of {sorted(_ACTIVATIONS)}.")
    return _ACTIVATIONS[key]


def default_conv_filters(image_shape: tuple[int, ...]) -> list:
    """RLlib's default CNN stack for an (H, W, C) image, or a ModuleError asking for one."""
    filters = _DEFAULT_CONV_FILTERS.get(tuple(image_shape[:2]))
    if filters is None:
        raise ModuleError(
            f"No default conv_filters for images of shape {tuple(image_shape)}; defaults exist for "
            f"{sorted(_DEFAULT_CONV_FILTERS)} (H, W). Fix: set model_config['conv_filters'] = "
            "[[out_channels, kernel, stride], ...], e.g. [[16, 4, 2], [32, 4, 2], [64, 4, 1]]."
        )
    return copy.deepcopy(filters)
