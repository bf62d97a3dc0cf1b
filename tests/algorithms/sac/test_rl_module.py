"""DefaultSACTorchRLModule: squashed policy in [-1, 1] (Box) or Categorical (Discrete), twin critics,
target copies, bad spaces."""

import math

import gymnasium as gym
import numpy as np
import pytest
import torch

from flywheel import Columns, RLModule
from flywheel.algorithms.sac.rl_module import LOG_STD_MAX, QF_PREDS, QF_TWIN_PREDS, DefaultSACTorchRLModule
from flywheel.core.distributions import Categorical, SquashedGaussian
from flywheel.errors import ModuleError

OBS = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)
ACT = gym.spaces.Box(-2.0, 2.0, (2,), np.float32)  # the policy still acts in [-1, 1]


def build(inference_only=False, **model_config):
    config = {"fcnet_hiddens": [8], "twin_q": True, **model_config}
    return DefaultSACTorchRLModule(OBS, ACT, inference_only=inference_only, model_config=config)


def test_policy_is_a_squashed_gaussian_in_the_unit_box():
    module = build(inference_only=True)
    dist_cls = module.get_exploration_action_dist_cls()
    assert issubclass(dist_cls, SquashedGaussian)
    assert module.get_inference_action_dist_cls() is dist_cls is module.get_train_action_dist_cls()
    assert dist_cls.low.tolist() == [-1.0, -1.0] and dist_cls.high.tolist() == [1.0, 1.0]
    with torch.no_grad():
        module.pi.bias.copy_(torch.tensor([0.0, 0.0, 50.0, -50.0]))  # log-stds far outside the clamp
        module.pi.weight.zero_()
    inputs = module.forward_exploration({Columns.OBS: torch.zeros(4, 3)})[Columns.ACTION_DIST_INPUTS]
    assert inputs.shape == (4, 4)
    assert inputs[0].tolist() == [0.0, 0.0, LOG_STD_MAX, -20.0]
    actions = dist_cls.from_logits(inputs).sample()
    assert actions.abs().max() <= 1.0


def test_twin_critics_read_observation_and_action():
    module = build()
    batch = {Columns.OBS: torch.randn(5, 3), Columns.ACTIONS: torch.rand(5, 2) * 2 - 1}
    q = module.compute_q_values(batch)
    assert sorted(q) == [QF_PREDS, QF_TWIN_PREDS] and q[QF_PREDS].shape == (5,)
    assert not torch.allclose(q[QF_PREDS], q[QF_TWIN_PREDS])  # independently initialized
    target = module.forward_target(batch)
    torch.testing.assert_close(target[QF_PREDS], q[QF_PREDS])
    torch.testing.assert_close(target[QF_TWIN_PREDS], q[QF_TWIN_PREDS])
    assert [type(m).__name__ for m, _ in module.get_target_network_pairs()] == ["MLPEncoder", "Linear"] * 2
    assert all(not p.requires_grad for _, t in module.get_target_network_pairs() for p in t.parameters())
    assert len(module.critic_parameters()) == 8 and len(module.policy_parameters()) == 4
    assert set(map(id, module.critic_parameters())).isdisjoint(map(id, module.policy_parameters()))

    single = build(twin_q=False)
    assert list(single.compute_q_values(batch)) == [QF_PREDS] and len(single.get_target_network_pairs()) == 2


def test_runners_get_the_policy_only():
    module = build()
    runner = build(inference_only=True)
    weights = module.get_state(inference_only=True)
    assert sorted({name.split(".")[0] for name in weights}) == ["pi", "pi_encoder"]
    runner.set_state(module.get_state())
    obs = {Columns.OBS: torch.randn(2, 3)}
    torch.testing.assert_close(
        runner.forward_inference(obs)[Columns.ACTION_DIST_INPUTS],
        module.forward_inference(obs)[Columns.ACTION_DIST_INPUTS],
    )
    assert not hasattr(runner, "qf")


def test_restored_from_a_checkpoint_with_its_target_critics(tmp_path):
    module = build()
    with torch.no_grad():
        module.target_qf.bias.add_(math.pi)
    restored = RLModule.from_checkpoint(module.save_to_path(tmp_path / "module"))
    batch = {Columns.OBS: torch.randn(3, 3), Columns.ACTIONS: torch.zeros(3, 2)}
    torch.testing.assert_close(
        restored.forward_target(batch)[QF_PREDS], module.forward_target(batch)[QF_PREDS]
    )


def test_discrete_policy_is_a_categorical_over_logits():
    module = DefaultSACTorchRLModule(OBS, gym.spaces.Discrete(4), inference_only=True, model_config={})
    assert module.discrete
    assert module.get_exploration_action_dist_cls() is Categorical
    assert module.get_inference_action_dist_cls() is Categorical is module.get_train_action_dist_cls()
    with torch.no_grad():
        module.pi.bias.copy_(torch.tensor([0.0, 3.0, 1.0, -50.0]))
        module.pi.weight.zero_()
    logits = module.forward_exploration({Columns.OBS: torch.zeros(5, 3)})[Columns.ACTION_DIST_INPUTS]
    assert logits.shape == (5, 4) and logits[0].tolist() == [0.0, 3.0, 1.0, -50.0]  # no clamping
    assert Categorical.from_logits(logits).deterministic_sample().tolist() == [1] * 5  # greedy: argmax
    assert not hasattr(module, "qf")


def test_discrete_critics_give_one_q_value_per_action():
    module = DefaultSACTorchRLModule(OBS, gym.spaces.Discrete(4), model_config={"fcnet_hiddens": [8]})
    batch = {Columns.OBS: torch.randn(5, 3)}  # no ACTIONS: the critics value every action
    q = module.compute_q_values(batch)
    assert sorted(q) == [QF_PREDS, QF_TWIN_PREDS] and q[QF_PREDS].shape == q[QF_TWIN_PREDS].shape == (5, 4)
    assert not torch.allclose(q[QF_PREDS], q[QF_TWIN_PREDS])
    torch.testing.assert_close(module.forward_target(batch)[QF_PREDS], q[QF_PREDS])
    # Critic encoders read the observations alone: 3 inputs, not 3 + action.
    assert module.qf_encoder[0].in_features == 3 and module.qf.out_features == 4
    assert len(module.critic_parameters()) == 8 and len(module.policy_parameters()) == 4
    assert len(module.get_target_network_pairs()) == 4

    single = DefaultSACTorchRLModule(OBS, gym.spaces.Discrete(4), model_config={"twin_q": False})
    assert list(single.compute_q_values(batch)) == [QF_PREDS]


def test_discrete_actions_take_any_observation_the_default_encoders_read():
    module = DefaultSACTorchRLModule(gym.spaces.Discrete(5), gym.spaces.Discrete(3), model_config={})
    obs = {Columns.OBS: torch.tensor([0, 4])}
    assert module.compute_q_values(obs)[QF_PREDS].shape == (2, 3)
    assert module.forward_train(obs)[Columns.ACTION_DIST_INPUTS].shape == (2, 3)


@pytest.mark.parametrize(
    ("obs", "act", "model_config", "message"),
    [
        (
            OBS,
            gym.spaces.MultiDiscrete([2, 3]),
            {},
            r"The default SAC module needs a 1-D Box or a Discrete action space, got MultiDiscrete\(\[2 3\]\). "
            r"Fix: turn the actions into one Discrete",
        ),
        (OBS, gym.spaces.Box(-1.0, 1.0, (2, 2)), {}, r"needs a 1-D Box or a Discrete action space, got Box"),
        (
            OBS,
            gym.spaces.Discrete(3),
            {"use_lstm": True},
            r"DefaultSACTorchRLModule has no recurrent version",
        ),
        (
            gym.spaces.Box(0, 1, (4, 4, 1)),
            ACT,
            {},
            r"observations must be a 1-D Box, got Box\(0.0, 1.0, \(4, 4, 1\), float32\). Fix: add flywheel.connectors.env_to_module.FlattenObservations",
        ),
        (OBS, ACT, {"use_lstm": True}, r"DefaultSACTorchRLModule has no recurrent version"),
    ],
)
def test_unsupported_spaces_fail_at_build(obs, act, model_config, message):
    with pytest.raises(ModuleError, match=message):
        DefaultSACTorchRLModule(obs, act, model_config=model_config)
