import pytest
from torch import nn

from flywheel.core.models import DEFAULT_MODEL_CONFIG, activation_layer, resolve_model_config
from flywheel.core.models.config import default_conv_filters
from flywheel.errors import ModuleError


def test_defaults_are_rllibs():
    assert dict(DEFAULT_MODEL_CONFIG) == {
        "fcnet_hiddens": [256, 256],
        "fcnet_activation": "tanh",
        "vf_share_layers": False,
        "use_lstm": False,
        "lstm_cell_size": 256,
        "max_seq_len": 20,
        "conv_filters": None,
        "conv_activation": "relu",
        "head_fcnet_hiddens": [],
        "head_fcnet_activation": "relu",
        "free_log_std": False,
        "log_std_init": 0.0,
        "log_std_clip_param": 20.0,
        "fcnet_kernel_initializer": None,
        "fcnet_kernel_initializer_kwargs": None,
        "fcnet_bias_initializer": None,
        "fcnet_bias_initializer_kwargs": None,
        "head_fcnet_kernel_initializer": None,
        "head_fcnet_kernel_initializer_kwargs": None,
        "head_fcnet_bias_initializer": None,
        "head_fcnet_bias_initializer_kwargs": None,
        "pi_output_kernel_initializer_kwargs": None,
        "vf_output_kernel_initializer_kwargs": None,
        "fusionnet_hiddens": [256, 256],
        "fusionnet_activation": "tanh",
        "fusionnet_kernel_initializer": None,
        "fusionnet_kernel_initializer_kwargs": None,
        "fusionnet_bias_initializer": None,
        "fusionnet_bias_initializer_kwargs": None,
    }


def test_resolve_overrides_checks_and_copies():
    resolved = resolve_model_config({"fcnet_hiddens": [8], "vf_share_layers": True})
    assert resolved["fcnet_hiddens"] == [8] and resolved["vf_share_layers"] and resolved["max_seq_len"] == 20
    with pytest.raises(
        ModuleError,
        match=r"Invalid model_config for a default module \(2 problem\(s\)\):\n- model_config has an unknown key "
        r"'fcnet_hidden'\. Did you mean 'fcnet_hiddens'\? .*\n- model_config\['lstm_cell_size'\] must be an int >= 1, got -4",
    ):
        resolve_model_config({"fcnet_hidden": [8], "lstm_cell_size": -4})
    assert (
        resolve_model_config({"my_key": 1}, check=False)["my_key"] == 1
    )  # subclasses reading their own keys
    resolve_model_config(None)["head_fcnet_hiddens"].append(3)
    assert DEFAULT_MODEL_CONFIG["head_fcnet_hiddens"] == []


@pytest.mark.parametrize(
    ("name", "cls"),
    [
        ("tanh", nn.Tanh),
        ("relu", nn.ReLU),
        ("swish", nn.SiLU),
        ("silu", nn.SiLU),
        ("elu", nn.ELU),
        ("ReLU", nn.ReLU),
    ],
)
def test_activations(name, cls):
    assert type(activation_layer(name)) is cls


def test_linear_activation_is_none_and_unknown_raises():
    assert activation_layer("linear") is None and activation_layer(None) is None
    with pytest.raises(ModuleError, match=r"Unknown activation 'gelu'. Expected one of \['elu', "):
        activation_layer("gelu")


def test_default_conv_filters():
    assert default_conv_filters((84, 84, 3)) == [[16, [8, 8], 4], [32, [4, 4], 2], [256, [11, 11], 1]]
    assert default_conv_filters((10, 10, 1)) == [[16, [5, 5], 2], [32, [5, 5], 2]]
    with pytest.raises(
        ModuleError,
        match=r"No default conv_filters for images of shape \(32, 32, 3\).*Fix: set model_config\['conv_filters'\]",
    ):
        default_conv_filters((32, 32, 3))


def test_get_activation_fn_gives_rllibs_torch_classes():
    from torch import nn

    from flywheel.core.models import get_activation_fn

    assert get_activation_fn("relu", "torch") is nn.ReLU and get_activation_fn("Tanh") is nn.Tanh
    assert get_activation_fn("linear") is None and get_activation_fn(None) is None
    with pytest.raises(ModuleError, match=r"flywheel is torch-only"):
        get_activation_fn("relu", framework="tf2")
