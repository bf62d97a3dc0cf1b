"""Bad configs the first validation missed: misspelled attributes, model_config keys and values,
module ids that match no policy. Every check runs in validate(), never when a value is set."""

import gymnasium as gym
import numpy as np
import pytest

from flywheel import MultiRLModuleSpec, PPOConfig, RLModuleSpec, TorchRLModule
from flywheel.algorithms.ppo.config import PPOConfig as _PPOConfig
from flywheel.core.rl_module import DefaultModelConfig
from flywheel.errors import ConfigError


def _problems(config):
    with pytest.raises(ConfigError) as info:
        config.validate()
    return [line[2:] for line in str(info.value).split("\n")[1:]]


def test_a_misspelled_attribute_names_the_closest_setting():
    config = PPOConfig().environment("CartPole-v1")
    config.lrr = 0.1  # no error yet: values are checked in validate(), where Tune has resolved them
    config.zzz = 1
    assert _problems(config) == [
        "lrr=0.1 was set on the config, but PPOConfig has no setting 'lrr'. Did you mean 'lr'? "
        "Fix: config.training(lr=...).",
        "zzz=1 was set on the config, but PPOConfig has no setting 'zzz'. Fix: remove it (PPOConfig.setting_names() "
        "lists the settings; a config subclass declares its own attributes in __init__).",
    ]
    with pytest.raises(
        TypeError,
        match=r"unexpected keyword 'train_bach_size'\. Did you mean 'train_batch_size'\?",
    ):
        PPOConfig().training(train_bach_size=4000)


class _VPGConfig(_PPOConfig):
    """A custom config in RLlib's style: its own attributes are set in __init__."""

    def __init__(self, algo_class=None):
        super().__init__(algo_class=algo_class)
        self.num_episodes_per_train_batch = 10


def test_attributes_a_config_subclass_declares_are_fine():
    config = _VPGConfig().environment("CartPole-v1")
    config.num_episodes_per_train_batch = 20
    config.validate()
    config.num_episodes_per_train_batc = 20
    assert _problems(config)[0].startswith(
        "num_episodes_per_train_batc=20 was set on the config, but _VPGConfig"
    )


@pytest.mark.parametrize(
    "model_config, problem",
    [
        (
            {"fcnet_hiddens": "64"},
            "model_config['fcnet_hiddens'] must be a list of layer widths (ints >= 1), e.g. [256, 256], got '64'.",
        ),
        ({"fcnet_hiddens": [64, -8]}, "model_config['fcnet_hiddens'] must be a list of layer widths"),
        ({"head_fcnet_hiddens": [0]}, "model_config['head_fcnet_hiddens'] must be a list of layer widths"),
        ({"lstm_cell_size": 2.5}, "model_config['lstm_cell_size'] must be an int >= 1, got 2.5."),
        ({"use_lstm": "yes"}, "model_config['use_lstm'] must be True or False, got 'yes'."),
        ({"fcnet_activation": "sigmoid"}, "model_config['fcnet_activation'] must be one of ['tanh', 'relu'"),
        (
            {"conv_filters": [[16, 4]]},
            "model_config['conv_filters'] must be None or a list of [out_channels, kernel",
        ),
        (
            {"fcnet_hidden": [64]},
            "model_config has an unknown key 'fcnet_hidden'. Did you mean 'fcnet_hiddens'? Fix:",
        ),
        (
            {"fcnet_use_layernorm": True},
            "model_config['fcnet_use_layernorm']=True: flywheel's default models do not implement fcnet_use_layernorm "
            "(only RLlib's default, False). Fix: remove it, or write a custom RLModule.",
        ),
    ],
)
def test_model_config_keys_and_values_are_checked_for_the_default_modules(model_config, problem):
    config = PPOConfig().environment("CartPole-v1").rl_module(model_config=model_config)
    (found,) = _problems(config)
    assert found.startswith(problem), found


def test_search_spaces_may_sit_in_model_config_until_validate():
    class SearchSpace:  # stands in for a Ray Tune domain, resolved before the algorithm is built
        pass

    config = PPOConfig().environment("CartPole-v1").rl_module(model_config={"fcnet_hiddens": SearchSpace()})
    assert _problems(config)[0].startswith("model_config['fcnet_hiddens'] must be a list of layer widths")
    config.rl_module(model_config={"fcnet_hiddens": [16]}).validate()


class _Custom(TorchRLModule):
    def setup(self):
        self.width = self.model_config["my_width"]


def test_custom_modules_take_any_keys_and_user_spec_model_configs_are_checked():
    spec = RLModuleSpec(module_class=_Custom, model_config={"my_width": 3})
    PPOConfig().environment("CartPole-v1").rl_module(
        rl_module_spec=spec, model_config={"my_width": 3}
    ).validate()
    spec = RLModuleSpec(
        model_config={"fcnet_hiddens": [-1]}
    )  # the default module, with the user's model_config
    (problem,) = _problems(PPOConfig().environment("CartPole-v1").rl_module(rl_module_spec=spec))
    assert problem.startswith("rl_module_spec.model_config['fcnet_hiddens'] must be a list of layer widths")


def test_module_ids_of_a_multi_rl_module_spec_must_be_policies():
    specs = MultiRLModuleSpec(rl_module_specs={"p0": RLModuleSpec(), "q1": RLModuleSpec()})
    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .multi_agent(policies={"p0", "p1"}, policy_mapping_fn=lambda agent_id, episode, **kw: "p0")
        .rl_module(rl_module_spec=specs)
    )
    assert _problems(config) == [
        "rl_module_spec is a MultiRLModuleSpec with the module ids ['p0', 'q1'], but policies are ['p0', 'p1'], so "
        "['q1'] would never be built or trained. Fix: name them in config.multi_agent(policies=..., "
        "policy_mapping_fn=...) (a multi-agent env maps its agents to them), or remove them from the MultiRLModuleSpec."
    ]
    single = (
        PPOConfig().environment("CartPole-v1").rl_module(rl_module_spec=specs)
    )  # multi-agent specs, no policies
    assert _problems(single)[0].startswith(
        "rl_module_spec is a MultiRLModuleSpec with the module ids ['p0', 'q1'], "
        "but policies are ['default_policy']"
    )


def test_default_model_config_is_rllibs_dataclass():
    from flywheel.core.rl_module.default_model_config import DefaultModelConfig as FromModule

    assert FromModule is DefaultModelConfig
    assert (DefaultModelConfig().fcnet_hiddens, DefaultModelConfig().vf_share_layers) == ([256, 256], True)
    config = (
        PPOConfig().environment("CartPole-v1").rl_module(model_config=DefaultModelConfig(fcnet_hiddens=[32]))
    )
    assert config.model_config["fcnet_hiddens"] == [32] and config.model_config["vf_share_layers"] is True
    spaces = (gym.spaces.Box(-1.0, 1.0, (4,), np.float32), gym.spaces.Discrete(2))
    module = config.get_rl_module_spec(spaces=spaces).build()
    assert module.encoder.output_dim == 32 and module.shared_encoder  # RLlib's default: shared layers
    spec = RLModuleSpec(
        module_class=type(module),
        observation_space=spaces[0],
        action_space=spaces[1],
        model_config=DefaultModelConfig(fcnet_hiddens=[8], vf_share_layers=False),
    )
    built = spec.build()
    assert built.encoder.output_dim == 8 and not built.shared_encoder
