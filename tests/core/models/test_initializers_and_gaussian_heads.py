"""model_config's initializers (RLlib's keys plus the output layers' kwargs), log_std_init and
log_std_clip_param: what the default modules build from them, and the errors for bad values."""

import math

import gymnasium as gym
import numpy as np
import pytest
import torch
from torch import nn

from flywheel import DQNConfig, PPOConfig, RLModuleSpec, SACConfig
from flywheel.algorithms.ppo.rl_module import DefaultPPOTorchRLModule
from flywheel.core.distributions import DiagGaussian
from flywheel.core.models import FreeLogStdHead, GaussianOutput, build_policy_head, resolve_model_config
from flywheel.core.rl_module.default_model_config import DefaultModelConfig
from flywheel.errors import ConfigError, ModuleError

OBS = gym.spaces.Box(-1.0, 1.0, (11,), np.float32)
ACT = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)
CLEANRL = {
    "fcnet_hiddens": [64, 64],
    "fcnet_kernel_initializer": "orthogonal_",
    "fcnet_kernel_initializer_kwargs": {"gain": math.sqrt(2)},
    "fcnet_bias_initializer": "constant_",
    "fcnet_bias_initializer_kwargs": {"val": 0.5},
    "head_fcnet_kernel_initializer": "orthogonal_",
    "head_fcnet_bias_initializer": "zeros_",
    "pi_output_kernel_initializer_kwargs": {"gain": 0.01},
    "vf_output_kernel_initializer_kwargs": {"gain": 1.0},
}


def ppo_module(model_config, action_space=ACT):
    return RLModuleSpec(DefaultPPOTorchRLModule, OBS, action_space, model_config=model_config).build()


def assert_orthogonal(weight, gain):
    """Orthogonal init: the smaller side's Gram matrix is gain^2 times the identity."""
    w = weight.detach().double()
    gram = w.T @ w if w.shape[0] >= w.shape[1] else w @ w.T
    torch.testing.assert_close(gram, gain**2 * torch.eye(len(gram), dtype=torch.float64), atol=1e-5, rtol=0)


def test_cleanrl_init_orthogonal_with_gains_per_layer_kind():
    torch.manual_seed(0)
    module = ppo_module(CLEANRL)
    for encoder in (module.encoder.actor_encoder, module.encoder.critic_encoder):
        linears = [m for m in encoder if isinstance(m, nn.Linear)]
        assert len(linears) == 2
        for layer in linears:
            assert_orthogonal(layer.weight, math.sqrt(2))
            assert torch.equal(layer.bias, torch.full_like(layer.bias, 0.5))
    assert isinstance(module.pi, GaussianOutput) and module.pi.out_features == 6
    assert_orthogonal(module.pi.weight, 0.01)
    assert_orthogonal(module.vf.weight, 1.0)
    assert torch.equal(module.vf.bias, torch.zeros(1)) and torch.equal(module.pi.bias, torch.zeros(6))


def test_head_kwargs_apply_to_every_head_layer_unless_an_output_overrides_them():
    config = {
        "head_fcnet_hiddens": [8],
        "head_fcnet_kernel_initializer": "orthogonal_",
        "head_fcnet_kernel_initializer_kwargs": {"gain": 2.0},
        "vf_output_kernel_initializer_kwargs": {"gain": 0.5},
    }
    module = ppo_module(config)
    assert_orthogonal(module.pi[0].weight, 2.0)
    assert_orthogonal(module.pi[2].weight, 2.0)  # no pi_output kwargs: the head's own
    assert_orthogonal(module.vf[0].weight, 2.0)
    assert_orthogonal(module.vf[2].weight, 0.5)


def test_a_callable_initializer_is_called_with_its_kwargs():
    calls = []

    def fill_(tensor, value):
        calls.append(tuple(tensor.shape))
        with torch.no_grad():
            tensor.fill_(value)

    module = ppo_module(
        {
            "fcnet_hiddens": [4],
            "fcnet_kernel_initializer": fill_,
            "fcnet_kernel_initializer_kwargs": {"value": 0.25},
        }
    )
    assert calls == [(4, 11), (4, 11)]  # the policy's and the value function's encoder
    assert torch.equal(module.encoder.actor_encoder[0].weight, torch.full((4, 11), 0.25))


def test_without_initializers_the_defaults_stay():
    torch.manual_seed(0)
    plain = ppo_module({"fcnet_hiddens": [4]})
    torch.manual_seed(0)
    explicit = ppo_module({"fcnet_hiddens": [4], "fcnet_kernel_initializer": None, "log_std_init": 0.0})
    assert all(torch.equal(a, b) for a, b in zip(plain.state_dict().values(), explicit.state_dict().values()))
    assert 0.5 * 4**-0.5 < plain.pi.weight.abs().max() <= 4**-0.5  # torch's default: within ±1/sqrt(fan_in)


def test_wrong_kwargs_name_the_key_and_the_fix():
    with pytest.raises(
        ModuleError,
        match=r"model_config\['fcnet_kernel_initializer'\]='orthogonal_' failed on a tensor of shape \(4, 11\) with "
        r"kwargs \{'std': 1\.0\}: .*Fix: pass the kwargs that initializer takes \(model_config\['fcnet_kernel_initializer_kwargs'\]\)",
    ):
        ppo_module(
            {
                "fcnet_hiddens": [4],
                "fcnet_kernel_initializer": "orthogonal_",
                "fcnet_kernel_initializer_kwargs": {"std": 1.0},
            }
        )


@pytest.mark.parametrize(
    "model_config, message",
    [
        (
            {"fcnet_kernel_initializer": "orthogonal"},
            r"model_config\['fcnet_kernel_initializer'\] must be None \(the default\), a callable init_\(tensor, \*\*kwargs\), or the name of one of torch\.nn\.init's in-place initializers: \['uniform_'",
        ),
        ({"head_fcnet_bias_initializer": 3}, r"model_config\['head_fcnet_bias_initializer'\] must be None"),
        (
            {"fcnet_bias_initializer_kwargs": [1]},
            r"model_config\['fcnet_bias_initializer_kwargs'\] must be None or a dict of keyword arguments",
        ),
        (
            {"pi_output_kernel_initializer_kwargs": {"gain": 0.01}},
            r"model_config\['pi_output_kernel_initializer_kwargs'\]=\{'gain': 0\.01\} gives kwargs to head_fcnet_kernel_initializer, "
            r"which is not set\. Fix: set model_config\['head_fcnet_kernel_initializer'\]",
        ),
        (
            {"log_std_init": float("nan")},
            r"model_config\['log_std_init'\] must be a finite number, e\.g\. 0\.0 or -0\.5, got nan",
        ),
        (
            {"log_std_clip_param": 0},
            r"model_config\['log_std_clip_param'\] must be a number > 0 \(float\('inf'\): no clipping\), got 0",
        ),
    ],
)
def test_bad_values_fail_validation_with_the_fix(model_config, message):
    with pytest.raises(ConfigError, match=message):
        PPOConfig().environment("Pendulum-v1").rl_module(model_config=model_config).validate()


def test_log_std_init_for_free_and_state_dependent_heads():
    free = build_policy_head(
        8, ACT, DiagGaussian, resolve_model_config({"free_log_std": True, "log_std_init": -0.5})
    )
    assert isinstance(free, FreeLogStdHead) and torch.equal(free.log_std.detach(), torch.full((3,), -0.5))
    head = build_policy_head(8, ACT, DiagGaussian, resolve_model_config({"log_std_init": -0.5}))
    assert torch.equal(head.bias.detach()[3:], torch.tensor([-0.5, -0.5, -0.5]))
    assert torch.equal(head(torch.zeros(2, 8))[:, 3:], torch.full((2, 3), -0.5))


def test_log_stds_are_clipped_to_the_clip_param():
    free = build_policy_head(
        8,
        ACT,
        DiagGaussian,
        resolve_model_config({"free_log_std": True, "log_std_init": 5.0, "log_std_clip_param": 2.0}),
    )
    assert torch.equal(free(torch.zeros(1, 8))[0, 3:], torch.full((3,), 2.0))
    head = build_policy_head(
        8, ACT, DiagGaussian, resolve_model_config({"log_std_init": -30.0})
    )  # RLlib's 20
    out = head(torch.zeros(1, 8))[0]
    assert torch.equal(out[3:], torch.full((3,), -20.0)) and torch.equal(out[:3], head.bias.detach()[:3])
    big_means = head(torch.full((1, 8), 1e6))[0, :3]
    assert big_means.abs().max() > 20  # only the log-stds are clipped
    unclipped = build_policy_head(
        8, ACT, DiagGaussian, resolve_model_config({"log_std_clip_param": math.inf})
    )
    assert type(unclipped) is nn.Linear  # nothing to clip: a plain output layer


def test_gaussian_only_settings_with_discrete_actions_raise():
    with pytest.raises(
        ModuleError,
        match=r"log_std_init=-1\.0 needs a Gaussian action distribution \(Box actions\), got Categorical",
    ):
        ppo_module({"log_std_init": -1.0}, gym.spaces.Discrete(2))


def test_sac_and_dqn_refuse_the_gaussian_head_settings_they_do_not_read():
    with pytest.raises(
        ModuleError, match=r"DefaultSACTorchRLModule does not use free_log_std\. Fix: remove it"
    ):
        SACConfig().environment("Pendulum-v1").rl_module(model_config={"free_log_std": True}).build_algo()
    with pytest.raises(
        ModuleError, match=r"DefaultDQNTorchRLModule does not use pi_output_kernel_initializer_kwargs"
    ):
        DQNConfig().environment("CartPole-v1").rl_module(
            model_config={
                "head_fcnet_kernel_initializer": "orthogonal_",
                "pi_output_kernel_initializer_kwargs": {"gain": 1.0},
            }
        ).build_algo()


def test_sac_and_dqn_use_the_initializers():
    model_config = {
        "fcnet_hiddens": [8],
        "head_fcnet_hiddens": [],
        "fcnet_kernel_initializer": "zeros_",
        "head_fcnet_kernel_initializer": "ones_",
    }
    sac = (
        SACConfig()
        .environment("Pendulum-v1")
        .rl_module(model_config=model_config)
        .build_learner()
        .module["default_policy"]
    )
    assert not sac.qf_encoder[0].weight.any() and sac.qf.weight.all() and sac.pi.weight.all()
    dqn = (
        DQNConfig()
        .environment("CartPole-v1")
        .rl_module(model_config=model_config)
        .build_learner()
        .module["default_policy"]
    )
    assert not dqn.encoder[0].weight.any() and dqn.af.weight.all()


def test_default_model_config_has_flywheels_fields_at_their_defaults():
    config = DefaultModelConfig(fcnet_kernel_initializer="orthogonal_", log_std_init=-1.0)
    resolved = resolve_model_config(config)
    assert resolved["fcnet_kernel_initializer"] == "orthogonal_" and resolved["log_std_init"] == -1.0
    assert resolved["pi_output_kernel_initializer_kwargs"] is None and resolved["log_std_clip_param"] == 20.0
