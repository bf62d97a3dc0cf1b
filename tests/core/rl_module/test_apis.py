import copy

import gymnasium as gym
import pytest
import torch
from torch import nn

from flywheel import TargetNetworkAPI, TorchRLModule, ValueFunctionAPI

OBS = gym.spaces.Box(-1.0, 1.0, (2,))
ACT = gym.spaces.Discrete(2)


class QModule(TorchRLModule, TargetNetworkAPI):
    def setup(self):
        self.q = nn.Linear(2, 2)

    def make_target_networks(self):
        self.target_q = copy.deepcopy(self.q)

    def get_target_network_pairs(self):
        return [(self.q, self.target_q)]

    def forward_target(self, batch):
        return {"q_target": self.target_q(batch["obs"])}


def test_target_network_api_implementation():
    module = QModule(OBS, ACT)
    module.make_target_networks()
    [(main, target)] = module.get_target_network_pairs()
    assert main is module.q and torch.equal(target.weight, main.weight)
    assert module.forward_target({"obs": torch.zeros(4, 2)})["q_target"].shape == (4, 2)


def test_apis_require_every_method():
    class HalfTarget(TorchRLModule, TargetNetworkAPI):
        def make_target_networks(self):
            pass

    with pytest.raises(TypeError, match="forward_target"):
        HalfTarget(OBS, ACT)
    assert isinstance(QModule(OBS, ACT), TargetNetworkAPI)
    assert not isinstance(QModule(OBS, ACT), ValueFunctionAPI)
