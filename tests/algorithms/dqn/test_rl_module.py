"""DefaultDQNTorchRLModule: dueling aggregation, epsilon-greedy exploration, target networks, bad spaces."""

import gymnasium as gym
import numpy as np
import pytest
import torch

from flywheel import Columns, RLModule
from flywheel.algorithms.dqn.rl_module import QF_PREDS, DefaultDQNTorchRLModule
from flywheel.errors import ModuleError

OBS = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
ACT = gym.spaces.Discrete(3)


def build(dueling=True, inference_only=False, **model_config):
    config = {
        "fcnet_hiddens": [4],
        "fcnet_activation": "linear",
        "head_fcnet_hiddens": [],
        "dueling": dueling,
        **model_config,
    }
    return DefaultDQNTorchRLModule(OBS, ACT, inference_only=inference_only, model_config=config)


def set_linear_heads(module, advantages, value):
    """Identity encoder (2 -> 4 units, linear), advantage head A(x) and value head V(x) by hand."""
    with torch.no_grad():
        module.encoder[0].weight.copy_(torch.tensor([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0], [0.0, 0.0]]))
        module.encoder[0].bias.zero_()
        module.af.weight.copy_(torch.tensor(advantages))
        module.af.bias.zero_()
        if value is not None:
            module.vf.weight.copy_(torch.tensor([value]))
            module.vf.bias.fill_(0.5)


def test_dueling_q_is_value_plus_advantages_minus_their_mean():
    module = build()
    set_linear_heads(
        module,
        advantages=[[1.0, 0.0, 0, 0], [0.0, 2.0, 0, 0], [-1.0, -1.0, 0, 0]],
        value=[3.0, 1.0, 0, 0],
    )
    obs = torch.tensor([[1.0, 2.0], [0.5, 0.0]])
    q = module.compute_q_values({Columns.OBS: obs})
    # Row 0: A = [1, 4, -3] (mean 2/3), V = 3 + 2 + 0.5 = 5.5. Row 1: A = [0.5, 0, -0.5], V = 2.
    expected = torch.tensor([[5.5 + 1 - 2 / 3, 5.5 + 4 - 2 / 3, 5.5 - 3 - 2 / 3], [2.5, 2.0, 1.5]])
    torch.testing.assert_close(q, expected)
    torch.testing.assert_close(module.forward_train({Columns.OBS: obs})[QF_PREDS], expected)
    torch.testing.assert_close(
        module.forward_inference({Columns.OBS: obs})[Columns.ACTION_DIST_INPUTS], expected
    )


def test_without_dueling_q_is_the_advantage_head():
    module = build(dueling=False)
    assert module.vf is None and module.target_vf is None
    set_linear_heads(module, advantages=[[1.0, 0.0, 0, 0], [0.0, 2.0, 0, 0], [-1.0, -1.0, 0, 0]], value=None)
    q = module.compute_q_values({Columns.OBS: torch.tensor([[1.0, 2.0]])})
    torch.testing.assert_close(q, torch.tensor([[1.0, 4.0, -3.0]]))
    assert [target for _, target in module.get_target_network_pairs()] == [
        module.target_encoder,
        module.target_af,
    ]


def test_exploration_is_epsilon_greedy_with_the_module_epsilon():
    module = build(inference_only=True)
    set_linear_heads(
        module, advantages=[[0.0, 0.0, 0, 0], [1.0, 0.0, 0, 0], [0.0, 0.0, 0, 0]], value=[0, 0, 0, 0]
    )
    obs = torch.ones(20_000, 2)  # greedy action: 1
    torch.manual_seed(0)
    module.epsilon.fill_(0.0)
    out = module.forward_exploration({Columns.OBS: obs})
    assert list(out) == [Columns.ACTIONS] and (out[Columns.ACTIONS] == 1).all()
    module.epsilon.fill_(0.6)
    counts = np.bincount(module.forward_exploration({Columns.OBS: obs})[Columns.ACTIONS].numpy(), minlength=3)
    # Random with probability 0.6 (uniform over 3 actions), else greedy: 0.2, 0.6 * 1/3 + 0.4, 0.2.
    np.testing.assert_allclose(counts / 20_000, [0.2, 0.6, 0.2], atol=0.015)
    assert torch.equal(
        module.forward_inference({Columns.OBS: obs[:2]})[Columns.ACTION_DIST_INPUTS].argmax(-1),
        torch.tensor([1, 1]),
    )


def test_targets_start_as_frozen_copies_and_stay_out_of_runner_weights():
    module = build()
    pairs = module.get_target_network_pairs()
    assert [type(main).__name__ for main, _ in pairs] == ["MLPEncoder", "Linear", "Linear"]
    for main, target in pairs:
        assert main is not target
        for p, t in zip(main.parameters(), target.parameters()):
            assert torch.equal(p, t) and p.requires_grad and not t.requires_grad
    obs = {Columns.OBS: torch.randn(5, 2)}
    torch.testing.assert_close(module.forward_target(obs)[QF_PREDS], module.compute_q_values(obs))
    module.make_target_networks()  # already there: nothing changes
    assert module.get_target_network_pairs()[0][1] is pairs[0][1]

    runner_weights = module.get_state(inference_only=True)
    assert sorted(runner_weights) == [
        "af.bias",
        "af.weight",
        "encoder.0.bias",
        "encoder.0.weight",
        "epsilon",
        "vf.bias",
        "vf.weight",
    ]
    runner = build(inference_only=True)
    assert not hasattr(runner, "target_encoder")
    runner.set_state(module.get_state())  # the full learner state: target weights are skipped
    torch.testing.assert_close(runner.compute_q_values(obs), module.compute_q_values(obs))


def test_restored_from_a_checkpoint_with_its_target_networks(tmp_path):
    module = build()
    with torch.no_grad():
        module.target_af.weight.add_(1.0)
        module.epsilon.fill_(0.25)
    restored = RLModule.from_checkpoint(module.save_to_path(tmp_path / "module"))
    obs = {Columns.OBS: torch.randn(4, 2)}
    torch.testing.assert_close(restored.forward_target(obs)[QF_PREDS], module.forward_target(obs)[QF_PREDS])
    assert float(restored.epsilon) == 0.25


def test_box_actions_and_recurrent_config_are_rejected():
    with pytest.raises(
        ModuleError,
        match=r"DQN needs a Discrete action space \(one Q-value per action\), got Box\(-1.0, 1.0, \(1,\), float32\). Fix: use SAC",
    ):
        DefaultDQNTorchRLModule(OBS, gym.spaces.Box(-1.0, 1.0, (1,), np.float32))
    with pytest.raises(ModuleError, match=r"no recurrent version \(model_config\['use_lstm'\]=True\)"):
        build(use_lstm=True)
