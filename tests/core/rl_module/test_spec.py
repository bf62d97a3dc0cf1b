import gymnasium as gym
import pytest
from torch import nn

from flywheel import MultiRLModule, MultiRLModuleSpec, RLModuleSpec, TorchRLModule
from flywheel.errors import ModuleError

OBS = gym.spaces.Box(-1.0, 1.0, (2,))
ACT = gym.spaces.Discrete(3)


class Small(TorchRLModule):
    def setup(self):
        self.layer = nn.Linear(2, self.model_config.get("out", 3))


def test_build_passes_every_field():
    module = RLModuleSpec(Small, OBS, ACT, inference_only=True, model_config={"out": 5}).build()
    assert isinstance(module, Small)
    assert module.observation_space == OBS and module.action_space == ACT
    assert module.inference_only is True and module.layer.out_features == 5


def test_build_without_module_class():
    with pytest.raises(ModuleError, match="RLModuleSpec.build\\(\\) needs a module_class, got None"):
        RLModuleSpec(observation_space=OBS, action_space=ACT).build()


def test_build_with_a_class_that_is_not_an_rl_module():
    with pytest.raises(
        ModuleError, match="must be an RLModule subclass, got <class 'torch.nn.modules.linear.Linear'>"
    ):
        RLModuleSpec(nn.Linear, OBS, ACT).build()


def test_build_without_spaces_names_them():
    with pytest.raises(ModuleError, match="for Small needs observation_space and action_space, got None"):
        RLModuleSpec(Small).build()
    with pytest.raises(ModuleError, match="for Small needs action_space, got None"):
        RLModuleSpec(Small, OBS).build()


def test_update_overrides_fields_that_are_not_none():
    spec = RLModuleSpec(Small, OBS, None, model_config={"out": 1})
    result = spec.update(RLModuleSpec(action_space=ACT, inference_only=True))
    assert result is spec
    assert (spec.module_class, spec.observation_space, spec.action_space) == (Small, OBS, ACT)
    assert spec.inference_only is True and spec.model_config == {"out": 1}
    spec.update(RLModuleSpec(model_config={"out": 2}))
    assert spec.model_config == {"out": 2}


def test_multi_spec_builds_every_module():
    class MyMulti(MultiRLModule):
        pass

    multi = MultiRLModuleSpec(
        rl_module_specs={"p0": RLModuleSpec(Small, OBS, ACT), "p1": RLModuleSpec(Small, OBS, ACT)}
    ).build()
    assert type(multi) is MultiRLModule and list(multi.keys()) == ["p0", "p1"]
    custom = MultiRLModuleSpec(MyMulti, {"a": RLModuleSpec(Small, OBS, ACT)}).build()
    assert type(custom) is MyMulti and isinstance(custom["a"], Small)
    assert len(MultiRLModuleSpec().build()) == 0
