"""Distributional DQN (C51): the categorical projection by hand, the module's logits and Q = sum(p * z)
(with and without dueling), the cross-entropy loss by hand, and that num_atoms=1 stays plain DQN."""

import gymnasium as gym
import numpy as np
import pytest
import torch

from flywheel import Columns, RLModuleSpec
from flywheel.algorithms.dqn import DQNConfig
from flywheel.algorithms.dqn.distributional import project_distribution, support
from flywheel.algorithms.dqn.learner import DQNTorchLearner
from flywheel.algorithms.dqn.rl_module import QF_LOGITS, QF_PREDS, DefaultDQNTorchRLModule
from flywheel.metrics.keys import TD_ERROR_KEY

from ..replayed import update as replayed_update

OBS = gym.spaces.Box(-10.0, 10.0, (2,), np.float32)
ACT = gym.spaces.Discrete(2)


def test_support_is_evenly_spaced_from_v_min_to_v_max():
    torch.testing.assert_close(support(5, -1.0, 1.0), torch.tensor([-1.0, -0.5, 0.0, 0.5, 1.0]))


def test_projection_by_hand():
    # Support [0, 1, 2, 3, 4]: atoms move to r + discount * z and split between their neighbours.
    probs = torch.tensor(
        [
            [0.1, 0.2, 0.3, 0.3, 0.1],  # r 0.5, discount 0.5: to [0.5, 1, 1.5, 2, 2.5]
            [0.2, 0.2, 0.2, 0.2, 0.2],  # terminal (discount 0), r 2.7: everything at 2.7
            [0.4, 0.2, 0.2, 0.1, 0.1],  # r 3, discount 0.9: to [3, 3.9, 4.8, 5.7, 6.6], clipped at 4
            [0.2, 0.2, 0.2, 0.2, 0.2],  # r -1, discount 0.5: to [-1, -0.5, 0, 0.5, 1], clipped at 0
        ]
    )
    projected = project_distribution(
        probs, torch.tensor([0.5, 2.7, 3.0, -1.0]), torch.tensor([0.5, 0.0, 0.9, 0.5]), 0.0, 4.0
    )
    expected = torch.tensor(
        [
            # 0.5 splits 0.1 half/half to atoms 0 and 1; 1.5 splits 0.3; 2.5 splits 0.1 to 2 and 3.
            [0.05, 0.05 + 0.2 + 0.15, 0.15 + 0.3 + 0.05, 0.05, 0.0],
            [0.0, 0.0, 0.3, 0.7, 0.0],  # 2.7: 30% to atom 2, 70% to atom 3
            [0.0, 0.0, 0.0, 0.4 + 0.02, 0.18 + 0.4],  # 3.9: 10% of 0.2 to atom 3, 90% to atom 4
            [0.6 + 0.1, 0.1 + 0.2, 0.0, 0.0, 0.0],
        ]
    )
    torch.testing.assert_close(projected, expected)
    torch.testing.assert_close(projected.sum(-1), torch.ones(4))


def build_module(dueling, num_atoms=3, inference_only=False):
    config = {
        "fcnet_hiddens": [2],
        "fcnet_activation": "linear",
        "head_fcnet_hiddens": [],
        "dueling": dueling,
        "num_atoms": num_atoms,
        "v_min": 0.0,
        "v_max": 2.0,
    }
    return DefaultDQNTorchRLModule(OBS, ACT, inference_only=inference_only, model_config=config)


# Advantage logits per (action, atom) = W @ s: action 0 -> [s0, 0, s1], action 1 -> [0, s0, 0].
ADVANTAGE_WEIGHTS = [[1.0, 0.0], [0.0, 0.0], [0.0, 1.0], [0.0, 0.0], [1.0, 0.0], [0.0, 0.0]]


def set_weights(module, advantages, value=None, target_advantages=None):
    """Identity encoder; advantage (and value) heads by hand, zero biases; the target copies alike."""
    pairs = [(module.encoder, module.af, module.vf, advantages)]
    if not module.inference_only:
        pairs.append((module.target_encoder, module.target_af, module.target_vf, target_advantages))
    with torch.no_grad():
        for encoder, af, vf, weights in pairs:
            encoder[0].weight.copy_(torch.eye(2))
            encoder[0].bias.zero_()
            af.weight.copy_(torch.tensor(weights if weights is not None else advantages))
            af.bias.zero_()
            if vf is not None:
                vf.weight.copy_(torch.tensor(value))
                vf.bias.zero_()


def expected_q(logits):
    probs = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    return (probs * np.array([0.0, 1.0, 2.0])).sum(-1)


def test_module_outputs_logits_per_action_and_atom_and_q_as_their_expectation():
    module = build_module(dueling=False)
    assert module.af.weight.shape == (2 * 3, 2) and module.vf is None
    set_weights(module, ADVANTAGE_WEIGHTS)
    obs = torch.tensor([[1.0, 2.0], [3.0, 0.0]])
    out = module.forward_train({Columns.OBS: obs})
    logits = np.array([[[1.0, 0.0, 2.0], [0.0, 1.0, 0.0]], [[3.0, 0.0, 0.0], [0.0, 3.0, 0.0]]])
    assert out[QF_LOGITS].shape == (2, 2, 3) and out[QF_PREDS].shape == (2, 2)
    np.testing.assert_allclose(out[QF_LOGITS].detach().numpy(), logits)
    np.testing.assert_allclose(out[QF_PREDS].detach().numpy(), expected_q(logits), rtol=1e-6)
    inference = build_module(dueling=False, inference_only=True)
    set_weights(inference, ADVANTAGE_WEIGHTS)
    q = inference.forward_inference({Columns.OBS: obs})[Columns.ACTION_DIST_INPUTS]
    np.testing.assert_allclose(q.detach().numpy(), expected_q(logits), rtol=1e-6)
    inference.epsilon.fill_(0.0)
    greedy = inference.forward_exploration({Columns.OBS: obs})[Columns.ACTIONS]
    assert greedy.tolist() == np.argmax(expected_q(logits), -1).tolist() == [0, 1]


def test_dueling_adds_the_value_logit_of_each_atom_to_the_centred_advantage_logits():
    module = build_module(dueling=True)
    assert module.vf.weight.shape == (3, 2)  # one value logit per atom
    set_weights(module, ADVANTAGE_WEIGHTS, value=[[0.0, 1.0], [0.0, 0.0], [1.0, 0.0]])
    out = module.forward_train({Columns.OBS: torch.tensor([[1.0, 2.0]])})
    advantages = np.array([[1.0, 0.0, 2.0], [0.0, 1.0, 0.0]])  # s = [1, 2]
    value = np.array([2.0, 0.0, 1.0])
    logits = value + advantages - advantages.mean(0)
    np.testing.assert_allclose(out[QF_LOGITS].detach().numpy()[0], logits, rtol=1e-6)
    np.testing.assert_allclose(out[QF_PREDS].detach().numpy()[0], expected_q(logits), rtol=1e-6)


def test_one_atom_is_plain_dqn():
    module = build_module(dueling=True, num_atoms=1)
    assert module.af.weight.shape == (2, 2) and module.vf.weight.shape == (1, 2)
    assert not hasattr(module, "atoms")
    out = module.forward_train({Columns.OBS: torch.tensor([[1.0, 2.0]])})
    assert list(out) == [QF_PREDS]
    # The same weights as a module built without the distributional keys.
    plain = DefaultDQNTorchRLModule(
        OBS, ACT, model_config={"fcnet_hiddens": [2], "fcnet_activation": "linear", "dueling": True}
    )
    plain.load_state_dict(module.state_dict())
    torch.testing.assert_close(
        plain.forward_train({Columns.OBS: torch.tensor([[1.0, 2.0]])})[QF_PREDS], out[QF_PREDS]
    )


def build_learner(double_q):
    config = (
        DQNConfig()
        .training(lr=0.1, grad_clip=None, gamma=0.5, double_q=double_q, num_atoms=3, v_min=0.0, v_max=2.0)
        .debugging(seed=0)
    )
    model_config = {
        "fcnet_hiddens": [2],
        "fcnet_activation": "linear",
        "head_fcnet_hiddens": [],
        "dueling": False,
        "num_atoms": 3,
        "v_min": 0.0,
        "v_max": 2.0,
    }
    spec = RLModuleSpec(DefaultDQNTorchRLModule, OBS, ACT, model_config=model_config)
    learner = DQNTorchLearner(config=config, module_spec=spec)
    learner.build()
    # Target network: all logits 0, a uniform distribution for both actions (Q_target = 1 everywhere).
    set_weights(learner.module["default_policy"], ADVANTAGE_WEIGHTS, target_advantages=[[0.0, 0.0]] * 6)
    return learner


ROWS = {
    Columns.OBS: np.array([[1.0, 2.0], [3.0, 0.0], [0.0, 0.5]], np.float32),
    Columns.ACTIONS: np.array([0, 1, 1]),
    Columns.REWARDS: np.array([1.0, 0.5, 0.0], np.float32),
    Columns.NEXT_OBS: np.array([[1.0, 3.0], [2.0, 1.0], [4.0, 0.0]], np.float32),
    Columns.TERMINATEDS: np.array([False, True, False]),
    Columns.TRUNCATEDS: np.array([False, False, False]),
    Columns.N_STEP: np.array([1, 1, 2]),
    Columns.WEIGHTS: np.array([1.0, 0.5, 2.0], np.float32),
}
# Target distributions on the support [0, 1, 2], from the uniform next-state distribution:
# row 0: 1 + 0.5 * z = [1, 1.5, 2] -> [0, 1/3 + 1/6, 1/6 + 1/3]; row 1 (terminal): all at 0.5;
# row 2: 0 + 0.25 * z = [0, 0.25, 0.5] -> atom 0 gets 1/3 + 3/4 * 1/3 + 1/2 * 1/3, atom 1 the rest.
TARGETS = np.array([[0.0, 0.5, 0.5], [0.5, 0.5, 0.0], [0.75, 0.25, 0.0]])
# Online logits of the taken actions (ADVANTAGE_WEIGHTS at OBS).
TAKEN_LOGITS = np.array([[1.0, 0.0, 2.0], [0.0, 3.0, 0.0], [0.0, 0.0, 0.0]])


def cross_entropies():
    log_probs = TAKEN_LOGITS - np.log(np.exp(TAKEN_LOGITS).sum(-1, keepdims=True))
    return -(TARGETS * log_probs).sum(-1)


@pytest.mark.parametrize("double_q", [True, False])
def test_loss_is_the_weighted_cross_entropy_to_the_projected_target(double_q):
    results = replayed_update(build_learner(double_q), 1, ROWS, observation_space=OBS, action_space=ACT)
    module_results = results["default_policy"]
    (td_errors,) = module_results[TD_ERROR_KEY]
    np.testing.assert_allclose(td_errors, cross_entropies(), rtol=1e-5)
    assert module_results["qf_loss"] == pytest.approx(
        np.mean(ROWS[Columns.WEIGHTS] * cross_entropies()), rel=1e-5
    )
    assert module_results["qf_mean"] == pytest.approx(expected_q(TAKEN_LOGITS).mean(), rel=1e-5)


@pytest.mark.parametrize(("double_q", "target_atom"), [(True, 1), (False, 2)])
def test_the_next_action_is_picked_by_online_expected_values_with_double_q(double_q, target_atom):
    learner = build_learner(double_q)
    module = learner.module["default_policy"]
    with torch.no_grad():
        # Online: logits [0, 0, 1] for action 0 and [0, 0, 2] for action 1 anywhere (Q higher for action 1).
        module.af.weight.zero_()
        module.af.bias.copy_(torch.tensor([0.0, 0.0, 1.0, 0.0, 0.0, 2.0]))
        # Target: action 0 all on atom 2 (Q 2), action 1 all on atom 0 (Q 0).
        module.target_af.weight.zero_()
        module.target_af.bias.copy_(torch.tensor([0.0, 0.0, 50.0, 50.0, 0.0, 0.0]))
    rows = {key: torch.as_tensor(value[:1]) for key, value in ROWS.items()}  # action 0, r 1, discount 0.5
    loss = learner.compute_loss_for_module(
        module_id="default_policy", config=learner.config, batch=rows, fwd_out=module.forward_train(rows)
    )
    # Double Q bootstraps from action 1 (atom 0 -> 1 + 0.5 * 0 = atom 1), max Q from action 0 (atom 2 ->
    # 1 + 0.5 * 2 = atom 2); the cross-entropy is -log softmax([0, 0, 1])[target_atom].
    log_probs = np.array([0.0, 0.0, 1.0]) - np.log(2.0 + np.e)
    assert float(loss.detach()) == pytest.approx(-log_probs[target_atom], rel=1e-6)
