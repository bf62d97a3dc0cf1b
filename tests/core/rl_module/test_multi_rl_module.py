import gymnasium as gym
import numpy as np
import pytest
import torch
from torch import nn

from flywheel import Columns, MultiRLModule, RLModule, RLModuleSpec, TorchRLModule
from flywheel.errors import ModuleError
from flywheel.typing import DEFAULT_MODULE_ID

OBS = gym.spaces.Box(-1.0, 1.0, (2,))
ACT = gym.spaces.Discrete(2)


class Affine(TorchRLModule):
    def setup(self):
        self.layer = nn.Linear(2, 1)

    def _forward(self, batch, **kwargs):
        return {"out": self.layer(batch["x"]), "training": self.training}


def make():
    torch.manual_seed(0)
    return MultiRLModule({"p0": Affine(OBS, ACT), "p1": Affine(OBS, ACT)})


def test_dict_behaviour():
    multi = make()
    assert isinstance(multi, nn.Module)
    assert list(multi.keys()) == ["p0", "p1"] and list(multi) == ["p0", "p1"]
    assert len(multi) == 2 and "p0" in multi and "p2" not in multi
    assert isinstance(multi["p1"], Affine)
    assert [mid for mid, _ in multi.items()] == ["p0", "p1"]
    assert list(multi.values()) == [multi["p0"], multi["p1"]]
    assert len(list(multi.parameters())) == 4
    with pytest.raises(
        KeyError, match=r"No module with id 'p9' in this MultiRLModule; it has \['p0', 'p1'\]"
    ):
        multi["p9"]
    assert len(MultiRLModule()) == 0


def test_built_from_specs_as_rllib_builds_it():
    """RLlib's `MultiRLModule(rl_module_specs=...)`: one module per spec, with the global settings kept."""
    spec = RLModuleSpec(Affine, OBS, ACT, model_config={"size": 3})
    multi = MultiRLModule(
        rl_module_specs={"a": spec, "b": spec}, observation_space=OBS, model_config={"g": 1}
    )
    assert list(multi.keys()) == ["a", "b"] and multi["a"] is not multi["b"]
    assert isinstance(multi["a"], Affine) and multi["a"].model_config == {"size": 3}
    assert (multi.observation_space, multi.action_space, multi.model_config) == (OBS, None, {"g": 1})
    assert multi.inference_only is False and spec.inference_only is False
    forced = MultiRLModule(rl_module_specs={"a": spec}, inference_only=True)
    assert forced.inference_only is True and forced["a"].inference_only is True
    assert spec.inference_only is False  # the given spec is left as it was
    with pytest.raises(
        ModuleError, match=r"takes a dict mapping module ids to RLModuleSpecs; got \{'a': 'int'\}"
    ):
        MultiRLModule(rl_module_specs={"a": 3})
    with pytest.raises(ValueError, match=r"not both; got modules \['x'\] and specs \['a'\]\. Fix: pass one"):
        MultiRLModule({"x": Affine(OBS, ACT)}, rl_module_specs={"a": spec})


def test_as_multi_rl_module_wraps_the_module_itself():
    single = Affine(OBS, ACT)
    multi = single.as_multi_rl_module()
    assert type(multi) is MultiRLModule and list(multi.keys()) == [DEFAULT_MODULE_ID]
    assert multi[DEFAULT_MODULE_ID] is single  # same weights (RLlib builds a fresh copy from the spec)
    assert multi.as_multi_rl_module() is multi


def test_add_and_remove_modules():
    multi = make()
    extra = Affine(OBS, ACT)
    multi.add_module("p2", extra)
    assert multi["p2"] is extra and len(list(multi.parameters())) == 6
    with pytest.raises(ModuleError, match="Module id 'p2' is already in this MultiRLModule"):
        multi.add_module("p2", Affine(OBS, ACT))
    replacement = Affine(OBS, ACT)
    multi.add_module("p2", replacement, override=True)
    assert multi["p2"] is replacement
    multi.remove_module("p2")
    assert list(multi.keys()) == ["p0", "p1"]
    with pytest.raises(KeyError, match="No module with id 'p2' to remove"):
        multi.remove_module("p2")
    multi.remove_module("p2", raise_err_if_not_found=False)


def test_add_module_rejects_non_modules_and_bad_ids():
    multi = make()
    with pytest.raises(ModuleError, match="MultiRLModule holds RLModules, got Linear for 'x'"):
        multi.add_module("x", nn.Linear(1, 1))
    with pytest.raises(ModuleError, match=r"'a.b' cannot be a module id"):
        multi.add_module("a.b", Affine(OBS, ACT))


def test_holds_weightless_rl_modules_beside_torch_ones():
    """A plain RLModule (a heuristic policy, as RLlib's examples have) has no weights: it is held, acts,
    and has an empty state; the torch modules' parameters and state names are unchanged."""

    class Heuristic(RLModule):
        def _forward(self, batch, **kwargs):
            return {Columns.ACTIONS: np.zeros(len(batch[Columns.OBS]), np.int64)}

    multi = make()
    names = list(multi.state_dict())
    multi.add_module("h", Heuristic(OBS, ACT))
    assert list(multi.keys()) == ["p0", "p1", "h"] and list(multi.state_dict()) == names
    assert multi.get_state(components=["h"]) == {"h": {}}
    out = multi.forward_exploration({"h": {Columns.OBS: np.zeros((3, 2), np.float32)}})
    assert out["h"][Columns.ACTIONS].tolist() == [0, 0, 0]
    multi.add_module("p0", Heuristic(OBS, ACT), override=True)
    assert not any(name.startswith("_rl_modules.p0.") for name in multi.state_dict())
    multi.remove_module("h")
    assert list(multi.keys()) == ["p0", "p1"]


def test_foreach_module():
    multi = make()
    assert multi.foreach_module(lambda m: type(m).__name__) == ["Affine", "Affine"]


def test_forward_routes_sub_batches_by_module_id():
    multi = make()
    x = torch.ones(3, 2)
    out = multi.forward_exploration({"p1": {"x": x}})
    assert list(out) == ["p1"]
    assert torch.equal(out["p1"]["out"], multi["p1"].layer(x).detach())
    assert out["p1"]["training"] is False
    train_out = multi.forward_train({"p0": {"x": x}, "p1": {"x": x}})
    assert train_out["p0"]["training"] is True and train_out["p0"]["out"].requires_grad
    assert multi.forward_inference({"p0": {"x": x}})["p0"]["out"].shape == (3, 1)


def test_state_per_module_id_round_trip():
    source, target = make(), MultiRLModule({"p0": Affine(OBS, ACT), "p1": Affine(OBS, ACT)})
    state = source.get_state()
    assert sorted(state) == ["p0", "p1"] and sorted(state["p0"]) == ["layer.bias", "layer.weight"]
    assert sorted(source.get_state(components="p1")) == ["p1"]
    assert sorted(source.get_state(not_components=["p1"])) == ["p0"]
    target.set_state(state)
    for mid in ("p0", "p1"):
        for name, value in state[mid].items():
            assert np.array_equal(target.get_state()[mid][name], value)


def test_acting_passes_run_every_module_without_grad_and_pass_kwargs():
    seen = []

    class Recorder(TorchRLModule):
        def _forward(self, batch, **kwargs):
            seen.append((batch["x"], torch.is_grad_enabled(), self.training, kwargs))
            return {"x": batch["x"]}

    multi = MultiRLModule({"p0": Recorder(OBS, ACT), "p1": Recorder(OBS, ACT)})
    out = multi.forward_exploration({"p1": {"x": 1}, "p0": {"x": 0}}, phase="mine")
    assert out == {"p1": {"x": 1}, "p0": {"x": 0}}
    multi.forward_inference({"p0": {"x": 2}})
    assert seen == [
        (1, False, False, {"phase": "mine"}),
        (0, False, False, {"phase": "mine"}),
        (2, False, False, {}),
    ]
    assert torch.is_grad_enabled()
    with pytest.raises(
        KeyError, match=r"No module with id 'p9' in this MultiRLModule; it has \['p0', 'p1'\]"
    ):
        multi.forward_exploration({"p9": {"x": 0}})
    assert torch.is_grad_enabled()


class SharedTrunk(MultiRLModule):
    """RLlib's pattern: setup() keeps a sub-module, the private passes route through it."""

    def setup(self):
        self.trunk = self._rl_modules["trunk"]

    def _forward_train(self, batch, **kwargs):
        return {
            mid: {"out": self[mid].layer(self.trunk.layer(sub["x"]).expand(-1, 2))}
            for mid, sub in batch.items()
        }

    def _forward_exploration(self, batch, **kwargs):
        return {mid: {"explored": True, "grad": torch.is_grad_enabled()} for mid in batch}


def test_a_custom_container_runs_setup_and_its_own_passes_and_restores_from_a_checkpoint(tmp_path):
    torch.manual_seed(0)
    multi = SharedTrunk({"trunk": Affine(OBS, ACT), "p0": Affine(OBS, ACT)})
    assert multi.trunk is multi["trunk"]
    x = torch.ones(3, 2)
    out = multi.forward_train({"p0": {"x": x}})
    assert torch.allclose(out["p0"]["out"], multi["p0"].layer(multi["trunk"].layer(x).expand(-1, 2)))
    assert multi.forward_exploration({"p0": {}}) == {"p0": {"explored": True, "grad": False}}
    restored = MultiRLModule.from_checkpoint(
        multi.save_to_path(tmp_path / "multi"), classes=[SharedTrunk, Affine]
    )
    assert type(restored) is SharedTrunk and restored.trunk is restored["trunk"]
    assert torch.equal(restored.forward_train({"p0": {"x": x}})["p0"]["out"], out["p0"]["out"])
    assert multi["p0"].unwrapped() is multi["p0"]
