import dataclasses
import os

import gymnasium as gym
import numpy as np
import pytest
import torch
from torch import nn

from flywheel import MultiRLModule, MultiRLModuleSpec, PPOConfig, RLModuleSpec, TorchRLModule
from flywheel.algorithms.ppo.catalog import PPOCatalog
from flywheel.algorithms.ppo.rl_module import DefaultPPOTorchRLModule
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
    custom = MultiRLModuleSpec(MyMulti, rl_module_specs={"a": RLModuleSpec(Small, OBS, ACT)}).build()
    assert type(custom) is MyMulti and isinstance(custom["a"], Small)
    # The spec's global settings reach the container (a custom class's setup() reads them).
    glob = MultiRLModuleSpec(
        MyMulti, OBS, ACT, model_config={"shared": 8}, rl_module_specs={"a": RLModuleSpec(Small, OBS, ACT)}
    )
    built = glob.build()
    assert (built.observation_space, built.action_space, built.model_config) == (OBS, ACT, {"shared": 8})
    assert len(MultiRLModuleSpec().build()) == 0


# RLlib 2.60 surface: from_module, update(override=...), add_modules, remove_modules, dicts.

OTHER_OBS = gym.spaces.Box(-2.0, 2.0, (2,))


def test_spec_positional_fields_and_keyword_only_learner_only():
    spec = RLModuleSpec(Small, OBS, ACT, True, {"out": 4}, learner_only=True)
    assert (spec.inference_only, spec.model_config, spec.learner_only) == (True, {"out": 4}, True)
    with pytest.raises(TypeError):
        RLModuleSpec(Small, OBS, ACT, True, {"out": 4}, True)


def test_from_module_rebuilds_an_equal_module():
    module = RLModuleSpec(Small, OBS, ACT, inference_only=True, model_config={"out": 5}).build()
    spec = RLModuleSpec.from_module(module)
    assert spec == RLModuleSpec(Small, OBS, ACT, inference_only=True, model_config={"out": 5})
    assert spec.build().layer.out_features == 5
    with pytest.raises(ModuleError, match=r"takes a single RLModule, got a MultiRLModule"):
        RLModuleSpec.from_module(MultiRLModule({"p0": module}))


def test_update_with_override_takes_what_other_sets():
    spec = RLModuleSpec(Small, OBS, None, model_config={"out": 1})
    spec.update(RLModuleSpec(observation_space=OTHER_OBS, action_space=ACT, model_config={"out": 2}))
    assert (spec.observation_space, spec.action_space, spec.model_config) == (OTHER_OBS, ACT, {"out": 2})
    spec.update(RLModuleSpec(model_config={}))  # an empty model_config sets nothing
    assert spec.module_class is Small and spec.model_config == {"out": 2}
    spec.update(RLModuleSpec(inference_only=False, learner_only=True))
    assert spec.inference_only is False and spec.learner_only is False  # learner_only needs both
    spec.update(RLModuleSpec(inference_only=True))
    assert spec.inference_only is True


def test_update_without_override_only_fills_unset_fields():
    spec = RLModuleSpec(None, OBS, None, model_config=None)
    spec.update(
        RLModuleSpec(Small, OTHER_OBS, ACT, inference_only=True, learner_only=True, model_config={"out": 3}),
        override=False,
    )
    assert (spec.module_class, spec.observation_space, spec.action_space) == (Small, OBS, ACT)
    assert spec.model_config == {"out": 3} and (spec.inference_only, spec.learner_only) == (False, False)
    with pytest.raises(ModuleError, match="takes another RLModuleSpec, got dict"):
        spec.update({"module_class": Small})


def test_model_config_dataclass_reaches_the_module_as_a_dict():
    @dataclasses.dataclass
    class Settings:
        out: int = 6

    module = RLModuleSpec(Small, OBS, ACT, model_config=Settings()).build()
    assert module.model_config == {"out": 6} and module.layer.out_features == 6


def test_as_multi_rl_module_spec_puts_the_spec_under_default_policy():
    spec = RLModuleSpec(Small, OBS, ACT)
    multi = spec.as_multi_rl_module_spec()
    assert multi.rl_module_specs == {"default_policy": spec} and multi["default_policy"] is spec
    assert multi.as_multi_rl_module_spec() is multi


def test_spec_dict_round_trip():
    spec = RLModuleSpec(Small, OBS, ACT, learner_only=True, model_config={"out": 2})
    assert spec.to_dict() == {
        "module_class": Small, "observation_space": OBS, "action_space": ACT,
        "inference_only": False, "model_config": {"out": 2}, "learner_only": True,
        "catalog_class": None, "load_state_path": None,
    }  # fmt: skip
    assert RLModuleSpec.from_dict(spec.to_dict()) == spec
    multi = MultiRLModuleSpec(rl_module_specs={"p0": spec, "p1": RLModuleSpec(Small, OBS, ACT)})
    assert multi.to_dict()["rl_module_specs"]["p0"] == spec.to_dict()
    assert MultiRLModuleSpec.from_dict(multi.to_dict()) == multi
    with pytest.raises(ModuleError, match=r"got unknown keys \['catalog'\]"):
        RLModuleSpec.from_dict({**spec.to_dict(), "catalog": None})


def test_multi_spec_inference_only_follows_its_sub_specs():
    assert MultiRLModuleSpec(rl_module_specs={"a": RLModuleSpec(inference_only=True)}).inference_only is True
    mixed = {"a": RLModuleSpec(inference_only=True), "b": RLModuleSpec()}
    assert MultiRLModuleSpec(rl_module_specs=mixed).inference_only is False
    forced = MultiRLModuleSpec(inference_only=True, rl_module_specs={"p0": RLModuleSpec(Small, OBS, ACT)})
    assert forced.build()["p0"].inference_only is True
    assert forced["p0"].inference_only is False  # building does not change the sub-spec


def test_multi_spec_rejects_a_single_spec():
    with pytest.raises(
        ModuleError, match="rl_module_specs must be a dict mapping module ids to RLModuleSpecs"
    ):
        MultiRLModuleSpec(rl_module_specs=RLModuleSpec(Small))


def test_multi_spec_build_one_module_and_dict_access():
    multi = MultiRLModuleSpec(rl_module_specs={"p0": RLModuleSpec(Small, OBS, ACT, model_config={"out": 7})})
    single = multi.build(module_id="p0")
    assert type(single) is Small and single.layer.out_features == 7
    assert "p0" in multi and "p1" not in multi and len(multi) == 1
    with pytest.raises(
        KeyError, match=r"No RLModuleSpec for module id 'p1'; this MultiRLModuleSpec has \['p0'\]"
    ):
        multi["p1"]


def test_multi_spec_from_module():
    class MyMulti(MultiRLModule):
        pass

    built = MultiRLModuleSpec(
        MyMulti, rl_module_specs={"p0": RLModuleSpec(Small, OBS, ACT, model_config={"out": 2})}
    ).build()
    built.add_module("p1", RLModuleSpec(Small, OTHER_OBS, ACT, inference_only=True).build())
    spec = MultiRLModuleSpec.from_module(built)
    assert spec.multi_rl_module_class is MyMulti and spec.inference_only is False
    assert spec.rl_module_specs == {
        "p0": RLModuleSpec(Small, OBS, ACT, model_config={"out": 2}),
        "p1": RLModuleSpec(Small, OTHER_OBS, ACT, inference_only=True, model_config={}),
    }
    rebuilt = spec.build()
    assert type(rebuilt) is MyMulti and rebuilt["p0"].layer.out_features == 2
    with pytest.raises(ModuleError, match="takes a MultiRLModule, got Small"):
        MultiRLModuleSpec.from_module(built["p0"])


def test_add_modules_replaces_or_updates():
    multi = MultiRLModuleSpec(rl_module_specs={"p0": RLModuleSpec(Small, OBS, None, inference_only=True)})
    assert multi.inference_only is True
    multi.add_modules({"p0": RLModuleSpec(action_space=ACT)}, override=False)  # updated in place
    assert multi["p0"] == RLModuleSpec(Small, OBS, ACT, inference_only=True)
    multi.add_modules({"p0": RLModuleSpec(action_space=ACT), "p1": RLModuleSpec(Small)})  # replaced
    assert multi["p0"] == RLModuleSpec(action_space=ACT) and multi["p1"] == RLModuleSpec(Small)
    assert multi.inference_only is False  # a non-inference_only spec was added
    multi.remove_modules("p0")
    multi.remove_modules(["p1", "p9"])
    assert multi.rl_module_specs == {}


def test_multi_spec_update_with_a_multi_spec():
    base = {"p0": RLModuleSpec(Small, OBS, None)}
    other = MultiRLModuleSpec(
        rl_module_specs={"p0": RLModuleSpec(action_space=ACT), "p1": RLModuleSpec(Small)}
    )
    merged = MultiRLModuleSpec(rl_module_specs=dict(base))
    merged.update(other)  # override=False (the default): existing specs are updated
    assert merged["p0"] == RLModuleSpec(Small, OBS, ACT) and merged["p1"] == RLModuleSpec(Small)
    replaced = MultiRLModuleSpec(rl_module_specs={"p0": RLModuleSpec(Small, OBS, None)})
    replaced.update(other, override=True)
    assert replaced["p0"] == RLModuleSpec(action_space=ACT)


def test_multi_spec_update_with_a_single_spec_fills_every_sub_spec():
    multi = MultiRLModuleSpec(
        rl_module_specs={"p0": RLModuleSpec(observation_space=OTHER_OBS), "p1": RLModuleSpec()}
    )
    multi.update(RLModuleSpec(Small, OBS, ACT, model_config={"out": 1}))
    assert multi["p0"] == RLModuleSpec(Small, OTHER_OBS, ACT, model_config={"out": 1})
    assert multi["p1"] == RLModuleSpec(Small, OBS, ACT, model_config={"out": 1})
    with pytest.raises(ModuleError, match="takes a MultiRLModuleSpec or an RLModuleSpec, got str"):
        multi.update("p0")


def test_load_state_path_builds_the_module_with_the_saved_weights(tmp_path):
    saved = RLModuleSpec(Small, OBS, ACT).build()
    saved.save_to_path(tmp_path / "module")
    spec = RLModuleSpec(Small, OBS, ACT, load_state_path=str(tmp_path / "module"))
    built = spec.build()
    assert all(torch.equal(a, b) for a, b in zip(built.parameters(), saved.parameters(), strict=True))
    assert RLModuleSpec(load_state_path="x").update(RLModuleSpec(Small)).load_state_path == "x"


def test_load_state_path_in_a_config_starts_training_from_pretrained_weights(tmp_path):
    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .training(train_batch_size=32, minibatch_size=16)
        .rl_module(model_config={"fcnet_hiddens": [8]})
    )
    first = config.build_algo()
    path = first.save_to_path(tmp_path / "ckpt")
    module_dir = os.path.join(path, "learner_group", "learner", "rl_module", "default_policy")
    pretrained = first.learner_group._learner.module["default_policy"].get_state()
    first.stop()
    second = config.copy().rl_module(rl_module_spec=RLModuleSpec(load_state_path=module_dir)).build_algo()
    try:
        loaded = second.learner_group._learner.module["default_policy"].get_state()
        assert all(np.array_equal(loaded[name], pretrained[name]) for name in pretrained)
        runner = second.get_module().get_state()
        assert all(np.array_equal(runner[name], pretrained[name]) for name in runner)
    finally:
        second.stop()


def test_catalog_class_other_than_none_or_the_modules_own_is_refused_with_the_fix():
    assert RLModuleSpec(Small, OBS, ACT, catalog_class=None).build() is not None
    with pytest.raises(
        ModuleError, match=r"^RLModuleSpec\(catalog_class=<class 'object'>\): flywheel has no model catalog"
    ):
        RLModuleSpec(Small, OBS, ACT, catalog_class=object).build()
    with pytest.raises(ModuleError, match=r"^RLModuleSpec\(catalog_class=<class '.*PPOCatalog'>\)"):
        RLModuleSpec(Small, OBS, ACT, catalog_class=PPOCatalog).build()  # not Small's


def test_ppo_catalog_names_the_default_ppo_modules_networks_as_in_rllib():
    # RLlib's pretraining_single_agent_training_multi_agent.py passes catalog_class=PPOCatalog.
    config = {"fcnet_hiddens": [8]}
    with_catalog = RLModuleSpec(
        DefaultPPOTorchRLModule, OBS, ACT, model_config=config, catalog_class=PPOCatalog
    ).build()
    plain = RLModuleSpec(DefaultPPOTorchRLModule, OBS, ACT, model_config=config).build()
    shapes = {name: tuple(p.shape) for name, p in plain.named_parameters()}
    assert {name: tuple(p.shape) for name, p in with_catalog.named_parameters()} == shapes
    assert shapes["encoder.actor_encoder.0.weight"] == (8, 2) and shapes["pi.weight"] == (3, 8)
    direct = DefaultPPOTorchRLModule(observation_space=OBS, action_space=ACT, catalog_class=PPOCatalog)
    assert direct.catalog is None  # flywheel has no catalog object
