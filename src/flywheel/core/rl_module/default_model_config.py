"""`DefaultModelConfig`: the settings of flywheel's default models, as RLlib 2.60's dataclass.

    config.rl_module(model_config=DefaultModelConfig(fcnet_hiddens=[64, 64], vf_share_layers=False))
    config.rl_module(model_config={"fcnet_hiddens": [64, 64]})     # the same keys as a dict

The fields, their names and their defaults are RLlib's, so a `DefaultModelConfig` written for
RLlib means the same here; as in RLlib, a dataclass counts as all of its fields (so
`vf_share_layers` is then True, its default), while a dict sets only the keys it holds (the
model's own defaults, `flywheel.core.models.DEFAULT_MODEL_CONFIG`, fill the rest).

Flywheel adds three fields RLlib does not have (at the end of the dataclass): `log_std_init` and
the output-layer initializer kwargs `pi_output_kernel_initializer_kwargs` /
`vf_output_kernel_initializer_kwargs` (CleanRL's and SB3's gains of 0.01 and 1.0 for the policy
and value outputs, next to sqrt(2) for the hidden layers).

`model_config_problems` checks a model_config meant for flywheel's default modules (PPO's, DQN's,
SAC's): every key must be one of these fields, with a value of the right type. Fields flywheel's
models do not implement (the CNN's and LSTM's initializers, layer norm, the LSTM's previous-action
inputs) are accepted only at RLlib's default, so nothing is silently ignored; the fusion-net keys
are SAC's (its critic for Box actions), and the other default modules refuse them unless at default. Custom
modules read any keys and are not checked. This module imports no torch: configs validate without it.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from collections.abc import Callable, Mapping
from typing import Any

from flywheel.checkpoints.registry import checkpoint_class

ACTIVATIONS = ("tanh", "relu", "linear", "swish", "silu", "elu")
INITIALIZERS = (
    "uniform_",
    "normal_",
    "trunc_normal_",
    "constant_",
    "ones_",
    "zeros_",
    "eye_",
    "dirac_",
    "xavier_uniform_",
    "xavier_normal_",
    "kaiming_uniform_",
    "kaiming_normal_",
    "orthogonal_",
    "sparse_",
)
"""The in-place initializers of `torch.nn.init` an initializer key may name (RLlib's convention)."""


@checkpoint_class
@dataclasses.dataclass
class DefaultModelConfig:
    """Settings of the default models (RLlib 2.60's fields and defaults; see the module docstring)."""

    fcnet_hiddens: list[int] = dataclasses.field(default_factory=lambda: [256, 256])
    fcnet_activation: str = "tanh"
    fcnet_kernel_initializer: str | Callable | None = None
    fcnet_kernel_initializer_kwargs: dict | None = None
    fcnet_bias_initializer: str | Callable | None = None
    fcnet_bias_initializer_kwargs: dict | None = None
    fcnet_use_layernorm: bool = False
    conv_filters: list | None = None
    conv_activation: str = "relu"
    conv_kernel_initializer: str | Callable | None = None
    conv_kernel_initializer_kwargs: dict | None = None
    conv_bias_initializer: str | Callable | None = None
    conv_bias_initializer_kwargs: dict | None = None
    head_fcnet_hiddens: list[int] = dataclasses.field(default_factory=list)
    head_fcnet_activation: str = "relu"
    head_fcnet_kernel_initializer: str | Callable | None = None
    head_fcnet_kernel_initializer_kwargs: dict | None = None
    head_fcnet_bias_initializer: str | Callable | None = None
    head_fcnet_bias_initializer_kwargs: dict | None = None
    head_fcnet_use_layernorm: bool = False
    free_log_std: bool = False
    log_std_clip_param: float = 20.0
    vf_share_layers: bool = True
    use_lstm: bool = False
    max_seq_len: int = 20
    lstm_cell_size: int = 256
    lstm_use_prev_action: bool = False
    lstm_use_prev_reward: bool = False
    lstm_kernel_initializer: str | Callable | None = None
    lstm_kernel_initializer_kwargs: dict | None = None
    lstm_bias_initializer: str | Callable | None = None
    lstm_bias_initializer_kwargs: dict | None = None
    fusionnet_hiddens: list[int] = dataclasses.field(default_factory=lambda: [256, 256])
    fusionnet_activation: str = "tanh"
    fusionnet_kernel_initializer: str | Callable | None = None
    fusionnet_kernel_initializer_kwargs: dict | None = None
    fusionnet_bias_initializer: str | Callable | None = None
    fusionnet_bias_initializer_kwargs: dict | None = None
    # Flywheel's own fields (RLlib 2.60 has none of these names).
    log_std_init: float = 0.0
    pi_output_kernel_initializer_kwargs: dict | None = None
    vf_output_kernel_initializer_kwargs: dict | None = None


def as_model_config_dict(model_config: Any) -> Any:
    """A `DefaultModelConfig` (or any dataclass) as the dict of its fields; anything else unchanged."""
    if dataclasses.is_dataclass(model_config) and not isinstance(model_config, type):
        return dataclasses.asdict(model_config)
    return model_config


def _int_list(value: Any) -> bool:
    return isinstance(value, list | tuple) and all(_positive_int(n) for n in value)


def _positive_int(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool) and int(value) >= 1


def _activation(value: Any) -> bool:
    return value is None or (isinstance(value, str) and value.lower() in ACTIVATIONS)


def _initializer(value: Any) -> bool:
    return value is None or callable(value) or (isinstance(value, str) and value in INITIALIZERS)


def _kwargs(value: Any) -> bool:
    return value is None or (isinstance(value, Mapping) and all(isinstance(k, str) for k in value))


def _number(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


_INITIALIZER = (
    _initializer,
    f"None (the default), a callable init_(tensor, **kwargs), or the name of one of torch.nn.init's "
    f"in-place initializers: {list(INITIALIZERS)}",
)
_KWARGS = (_kwargs, "None or a dict of keyword arguments for the initializer, e.g. {'gain': 1.41}")


def _conv_filters(value: Any) -> bool:
    def layer(spec: Any) -> bool:
        if not (isinstance(spec, list | tuple) and len(spec) == 3):
            return False
        out, kernel, stride = spec
        kernel_ok = _positive_int(kernel) or (_int_list(kernel) and len(kernel) == 2)
        return _positive_int(out) and kernel_ok and _positive_int(stride)

    return value is None or (isinstance(value, list | tuple) and len(value) > 0 and all(map(layer, value)))


# What flywheel's default models read, and what each value must be.
_CHECKS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "fcnet_hiddens": (_int_list, "a list of layer widths (ints >= 1), e.g. [256, 256]"),
    "fcnet_activation": (_activation, f"one of {list(ACTIVATIONS)}"),
    "conv_filters": (_conv_filters, "None or a list of [out_channels, kernel, stride] (ints >= 1)"),
    "conv_activation": (_activation, f"one of {list(ACTIVATIONS)}"),
    "head_fcnet_hiddens": (_int_list, "a list of layer widths (ints >= 1), e.g. [] or [256]"),
    "head_fcnet_activation": (_activation, f"one of {list(ACTIVATIONS)}"),
    "fcnet_kernel_initializer": _INITIALIZER,
    "fcnet_kernel_initializer_kwargs": _KWARGS,
    "fcnet_bias_initializer": _INITIALIZER,
    "fcnet_bias_initializer_kwargs": _KWARGS,
    "head_fcnet_kernel_initializer": _INITIALIZER,
    "head_fcnet_kernel_initializer_kwargs": _KWARGS,
    "head_fcnet_bias_initializer": _INITIALIZER,
    "head_fcnet_bias_initializer_kwargs": _KWARGS,
    "pi_output_kernel_initializer_kwargs": _KWARGS,
    "vf_output_kernel_initializer_kwargs": _KWARGS,
    "fusionnet_hiddens": (_int_list, "a list of layer widths (ints >= 1), e.g. [256, 256]"),
    "fusionnet_activation": (_activation, f"one of {list(ACTIVATIONS)}"),
    "fusionnet_kernel_initializer": _INITIALIZER,
    "fusionnet_kernel_initializer_kwargs": _KWARGS,
    "fusionnet_bias_initializer": _INITIALIZER,
    "fusionnet_bias_initializer_kwargs": _KWARGS,
    "free_log_std": (lambda v: isinstance(v, bool), "True or False"),
    "log_std_init": (lambda v: _number(v) and math.isfinite(v), "a finite number, e.g. 0.0 or -0.5"),
    "log_std_clip_param": (lambda v: _number(v) and v > 0, "a number > 0 (float('inf'): no clipping)"),
    "vf_share_layers": (lambda v: isinstance(v, bool), "True or False"),
    "use_lstm": (lambda v: isinstance(v, bool), "True or False"),
    "max_seq_len": (_positive_int, "an int >= 1"),
    "lstm_cell_size": (_positive_int, "an int >= 1"),
    # Set by the algorithm from its training settings (DQN's dueling and distributional support, SAC's twin_q).
    "dueling": (lambda v: isinstance(v, bool), "True or False"),
    "num_atoms": (_positive_int, "an int >= 1"),
    "v_min": (lambda v: _number(v) and math.isfinite(v), "a finite number"),
    "v_max": (lambda v: _number(v) and math.isfinite(v), "a finite number"),
    "twin_q": (lambda v: isinstance(v, bool), "True or False"),
    # TQC's quantile critics (set from TQCConfig's settings of the same names).
    "n_quantiles": (_positive_int, "an int >= 1"),
    "n_critics": (_positive_int, "an int >= 1"),
}


def _default(field: dataclasses.Field) -> Any:
    if field.default is not dataclasses.MISSING:
        return field.default
    assert field.default_factory is not dataclasses.MISSING  # every field has a default or a factory
    return field.default_factory()


_NOT_IMPLEMENTED = {
    f.name: _default(f) for f in dataclasses.fields(DefaultModelConfig) if f.name not in _CHECKS
}
KNOWN_KEYS = (*_CHECKS, *_NOT_IMPLEMENTED)


def model_config_problems(
    model_config: Any, where: str, closest: Callable[[str, Any], str | None]
) -> list[str]:
    """Every problem of `model_config` for flywheel's default modules, one line each with its fix.

    `where` names it in the messages (e.g. `"model_config"`); `closest(word, words)` suggests a key.
    """
    model_config = as_model_config_dict(model_config)
    if not isinstance(model_config, Mapping):
        return [f"{where}={model_config!r} is not a dict. Fix: pass a dict or a DefaultModelConfig."]
    problems = []
    for key, value in model_config.items():
        if key in _CHECKS:
            check, expected = _CHECKS[key]
            if not check(value):
                problems.append(
                    f"{where}[{key!r}] must be {expected}, got {value!r}. Fix: change it where the model_config is "
                    "set (config.rl_module(model_config=...) or the RLModuleSpec)."
                )
        elif key in _NOT_IMPLEMENTED:
            if value != _NOT_IMPLEMENTED[key]:
                problems.append(
                    f"{where}[{key!r}]={value!r}: flywheel's default models do not implement {key} (only RLlib's "
                    f"default, {_NOT_IMPLEMENTED[key]!r}). Fix: remove it, or write a custom RLModule."
                )
        else:
            hint = closest(str(key), KNOWN_KEYS)
            problems.append(
                f"{where} has an unknown key {key!r}"
                + (f". Did you mean {hint!r}?" if hint else "")
                + " Fix: use the keys of DefaultModelConfig for flywheel's default modules; a custom module "
                "(RLModuleSpec(module_class=...)) reads any keys."
            )
    return problems + _output_kwargs_problems(model_config, where)


def _output_kwargs_problems(model_config: Mapping, where: str) -> list[str]:
    """The output layers' kwargs are for `head_fcnet_kernel_initializer`; without one they mean nothing."""
    if model_config.get("head_fcnet_kernel_initializer") is not None:
        return []
    return [
        f"{where}[{key!r}]={model_config[key]!r} gives kwargs to head_fcnet_kernel_initializer, which is not set. "
        "Fix: set model_config['head_fcnet_kernel_initializer'] (e.g. 'orthogonal_'), or remove the kwargs."
        for key in ("pi_output_kernel_initializer_kwargs", "vf_output_kernel_initializer_kwargs")
        if model_config.get(key) is not None
    ]
