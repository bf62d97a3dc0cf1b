"""DefaultTQCTorchRLModule: SAC's policy, n_critics critics of n_quantiles outputs each, their target
copies, what runners hold, and Discrete actions refused."""

import gymnasium as gym
import numpy as np
import pytest
import torch

from flywheel import Columns
from flywheel.algorithms.sac.rl_module import QF_PREDS
from flywheel.algorithms.tqc import DefaultTQCTorchRLModule
from flywheel.errors import ModuleError

OBS = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)
ACT = gym.spaces.Box(-2.0, 2.0, (2,), np.float32)


def module(**model_config):
    return DefaultTQCTorchRLModule(OBS, ACT, model_config={"fcnet_hiddens": [8], **model_config})


def test_quantiles_of_every_critic_and_target():
    tqc = module(n_quantiles=5, n_critics=3)
    batch = {Columns.OBS: torch.randn(4, 3), Columns.ACTIONS: torch.rand(4, 2) * 2 - 1}
    q = tqc.compute_q_values(batch)
    assert list(q) == [QF_PREDS] and q[QF_PREDS].shape == (4, 3, 5)
    torch.testing.assert_close(tqc.forward_target(batch)[QF_PREDS], q[QF_PREDS])  # copies at first
    assert [head.out_features for head in tqc.qfs] == [5, 5, 5]
    assert len(tqc.get_target_network_pairs()) == 2  # (qf_encoders, target_...), (qfs, target_...)
    n_critic_params = sum(p.numel() for p in tqc.critic_parameters())
    assert n_critic_params == 3 * ((5 * 8 + 8) + (8 * 5 + 5))  # [obs, action] -> 8 -> 5, three times
    inputs = tqc.forward_exploration({Columns.OBS: batch[Columns.OBS]})[Columns.ACTION_DIST_INPUTS]
    assert inputs.shape == (4, 4)  # SAC's squashed Gaussian: mean and log-std per action dimension


def test_defaults_are_two_critics_of_25_and_fusion_encoders_work():
    assert module().compute_q_values({Columns.OBS: torch.zeros(2, 3), Columns.ACTIONS: torch.zeros(2, 2)})[
        QF_PREDS
    ].shape == (2, 2, 25)
    fused = module(n_quantiles=4, fusionnet_hiddens=[6], fusionnet_activation="relu")
    q = fused.compute_q_values({Columns.OBS: torch.zeros(2, 3), Columns.ACTIONS: torch.zeros(2, 2)})[QF_PREDS]
    assert q.shape == (2, 2, 4) and [layer.out_features for layer in fused.qf_encoders[1].fusion] == [6]


def test_runners_hold_the_policy_only():
    runner = DefaultTQCTorchRLModule(OBS, ACT, model_config={"fcnet_hiddens": [8]}, inference_only=True)
    assert not hasattr(runner, "qfs") and not hasattr(runner, "target_qfs")
    learner_side = module()
    assert set(learner_side.get_non_inference_attributes()) == {
        "qf_encoders", "qfs", "target_qf_encoders", "target_qfs"
    }  # fmt: skip
    runner.load_state_dict(
        {k: v for k, v in learner_side.state_dict().items() if k.startswith("pi")}
    )  # the policy's weights are the same layers


def test_discrete_actions_and_bad_keys_are_refused():
    with pytest.raises(
        ModuleError,
        match=r"TQC's critics read \[observation, action\] for a 1-D Box action space, "
        r"got Discrete\(2\). Fix: use SAC",
    ):
        DefaultTQCTorchRLModule(OBS, gym.spaces.Discrete(2), model_config={})
    with pytest.raises(ModuleError, match=r"model_config\['n_quantiles'\] must be an int >= 1, got 0"):
        module(n_quantiles=0)
