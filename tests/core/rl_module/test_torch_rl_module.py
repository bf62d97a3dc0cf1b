import gymnasium as gym
import numpy as np
import pytest
import torch
from torch import nn

from flywheel import TorchRLModule
from flywheel.errors import ModuleError

OBS = gym.spaces.Box(-1.0, 1.0, (3,))
ACT = gym.spaces.Discrete(2)


class TwoBranches(TorchRLModule):
    """A policy branch runners need and a value branch they don't, plus a buffer."""

    def setup(self):
        self.pi = nn.Linear(3, 2)
        if not self.inference_only:
            self.vf = nn.Linear(3, 1)
        self.register_buffer("count", torch.tensor([5.0]))

    def get_non_inference_attributes(self):
        return ["vf"]


def test_get_state_is_numpy_copies_by_name():
    module = TwoBranches(OBS, ACT)
    state = module.get_state()
    assert sorted(state) == ["count", "pi.bias", "pi.weight", "vf.bias", "vf.weight"]
    assert all(isinstance(v, np.ndarray) for v in state.values())
    assert state["pi.weight"].shape == (2, 3) and state["count"].tolist() == [5.0]
    with torch.no_grad():
        module.pi.weight.add_(1.0)
    assert not np.array_equal(state["pi.weight"], module.pi.weight.detach().numpy())


def test_get_state_filters():
    module = TwoBranches(OBS, ACT)
    assert sorted(module.get_state(inference_only=True)) == ["count", "pi.bias", "pi.weight"]
    assert sorted(module.get_state(components="vf")) == ["vf.bias", "vf.weight"]
    assert sorted(module.get_state(components=["pi", "count"], not_components="pi.bias")) == [
        "count",
        "pi.weight",
    ]


def test_set_state_exact_round_trip_from_numpy_and_tensors():
    torch.manual_seed(0)
    source, target = TwoBranches(OBS, ACT), TwoBranches(OBS, ACT)
    state = source.get_state()
    target.set_state(state)
    assert all(np.array_equal(target.get_state()[k], v) for k, v in state.items())
    target.set_state({"pi.bias": torch.tensor([7.0, 8.0])})
    assert target.pi.bias.tolist() == [7.0, 8.0]
    assert np.array_equal(target.get_state()["pi.weight"], state["pi.weight"])


def test_set_state_takes_read_only_arrays_without_a_warning(recwarn):
    # Weights that come from Ray's object store are read-only numpy arrays.
    state = TwoBranches(OBS, ACT).get_state()
    for value in state.values():
        value.flags.writeable = False
    target = TwoBranches(OBS, ACT)
    target.set_state(state)
    assert [str(w.message) for w in recwarn] == []
    assert all(np.array_equal(target.get_state()[k], v) for k, v in state.items())


def test_inference_only_module_accepts_a_full_state():
    learner_module = TwoBranches(OBS, ACT)
    runner_module = TwoBranches(OBS, ACT, inference_only=True)
    runner_module.set_state(learner_module.get_state())
    assert torch.equal(runner_module.pi.weight, learner_module.pi.weight)
    assert not hasattr(runner_module, "vf")


def test_set_state_rejects_unknown_names_and_wrong_shapes():
    module = TwoBranches(OBS, ACT)
    with pytest.raises(ModuleError, match=r"got weights this module does not have: \['enc.weight'\]"):
        module.set_state({"enc.weight": np.zeros(2)})
    with pytest.raises(ModuleError, match=r"weight 'pi.bias' has shape \(3,\), expected \(2,\)"):
        module.set_state({"pi.bias": np.zeros(3, np.float32)})


def test_forward_is_the_training_pass():
    class Doubler(TorchRLModule):
        def _forward_train(self, batch, **kwargs):
            return {"y": batch["x"] * 2}

        def _forward_inference(self, batch, **kwargs):
            return {"y": batch["x"]}

    assert Doubler(OBS, ACT)({"x": 3}) == {"y": 6}
