"""SACTorchLearner with Discrete actions: the exact-expectation target, critic, actor and alpha losses
by hand on a linear module, gradients reaching only their own parameters, and the "auto" target entropy."""

import math

import gymnasium as gym
import numpy as np
import pytest
import torch
from torch import nn

from flywheel import Columns, RLModuleSpec, TargetNetworkAPI, TorchRLModule
from flywheel.algorithms.sac import DefaultSACTorchRLModule, SACConfig
from flywheel.algorithms.sac.learner import SACTorchLearner
from flywheel.algorithms.sac.rl_module import QF_PREDS, QF_TWIN_PREDS
from flywheel.core.distributions import Categorical
from flywheel.metrics.keys import TD_ERROR_KEY
from flywheel.utils.torch_utils import convert_to_torch_tensor

from ..replayed import update

OBS = gym.spaces.Box(-10.0, 10.0, (1,), np.float32)
ACT = gym.spaces.Discrete(2)


def linear(weights, bias):
    """A Linear(1, 2) with output k = weights[k] * s + bias[k]."""
    layer = nn.Linear(1, 2)
    with torch.no_grad():
        layer.weight.copy_(torch.tensor(weights).unsqueeze(-1))
        layer.bias.copy_(torch.tensor(bias))
    return layer


class LinearDiscreteSAC(TorchRLModule, TargetNetworkAPI):
    """logits [0, s] (pi(1|s) = sigmoid(s)); Q1 = [s, 2s], Q2 = [s + 1, s]; Q1' = [2s, 1], Q2' = [3s, s]."""

    def setup(self):
        self.pi = linear([0.0, 1.0], [0.0, 0.0])
        self.qf, self.qf_twin = linear([1.0, 2.0], [0.0, 0.0]), linear([1.0, 1.0], [1.0, 0.0])
        self.make_target_networks()

    def make_target_networks(self):
        self.target_qf = linear([2.0, 0.0], [0.0, 1.0]).requires_grad_(False)
        self.target_qf_twin = linear([3.0, 1.0], [0.0, 0.0]).requires_grad_(False)

    def get_target_network_pairs(self):
        return [(self.qf, self.target_qf), (self.qf_twin, self.target_qf_twin)]

    def get_train_action_dist_cls(self):
        return Categorical

    def _forward(self, batch, **kwargs):
        return {Columns.ACTION_DIST_INPUTS: self.pi(batch[Columns.OBS])}

    def compute_q_values(self, batch):
        obs = batch[Columns.OBS]
        return {QF_PREDS: self.qf(obs), QF_TWIN_PREDS: self.qf_twin(obs)}

    def forward_target(self, batch):
        obs = batch[Columns.OBS]
        return {QF_PREDS: self.target_qf(obs), QF_TWIN_PREDS: self.target_qf_twin(obs)}

    def policy_parameters(self):
        return list(self.pi.parameters())

    def critic_parameters(self):
        return [*self.qf.parameters(), *self.qf_twin.parameters()]


def build(module_class=LinearDiscreteSAC, action_space=ACT, **training):
    settings = {"gamma": 0.5, "initial_alpha": 2.0, "target_entropy": 0.5, **training}
    config = SACConfig().training(**settings).debugging(seed=0)
    learner = SACTorchLearner(config=config, module_spec=RLModuleSpec(module_class, OBS, action_space))
    learner.build()
    return learner


BATCH = {
    Columns.OBS: np.array([[1.0], [-2.0], [0.5]], np.float32),
    Columns.ACTIONS: np.array([1, 0, 1]),
    Columns.REWARDS: np.array([1.0, -1.0, 0.5], np.float32),
    Columns.NEXT_OBS: np.array([[2.0], [0.0], [-1.0]], np.float32),
    Columns.TERMINATEDS: np.array([False, False, True]),
    Columns.TRUNCATEDS: np.array([False, False, False]),
    Columns.N_STEP: np.array([1, 2, 1]),
    Columns.WEIGHTS: np.array([1.0, 0.5, 2.0], np.float32),
}


def policy(s):
    """probs and log-probs [B, 2] of logits [0, s] (float64)."""
    logits = np.stack([np.zeros_like(s), s], -1)
    logp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    return np.exp(logp), logp


def expected_terms():
    """Every discrete SAC term for BATCH (alpha = 2, target entropy 0.5), from the formulas in float64."""
    s, s_next = BATCH[Columns.OBS][:, 0].astype(float), BATCH[Columns.NEXT_OBS][:, 0].astype(float)
    taken = BATCH[Columns.ACTIONS]
    p_next, logp_next = policy(s_next)
    target_q = np.minimum(np.stack([2 * s_next, np.ones(3)], -1), np.stack([3 * s_next, s_next], -1))
    next_value = (p_next * (target_q - 2.0 * logp_next)).sum(-1)
    targets = BATCH[Columns.REWARDS] + 0.5 ** BATCH[Columns.N_STEP] * np.array([1.0, 1.0, 0.0]) * next_value
    q1, q2 = np.stack([s, 2 * s], -1), np.stack([s + 1, s], -1)
    rows = np.arange(3)
    td1, td2 = q1[rows, taken] - targets, q2[rows, taken] - targets
    weights = BATCH[Columns.WEIGHTS].astype(float)
    p, logp = policy(s)
    g = 2.0 * logp - np.minimum(q1, q2)  # what the actor minimizes the expectation of
    neg_entropy = (p * logp).sum(-1)
    return {
        "targets": targets,
        "critic": np.mean(weights * td1**2) + np.mean(weights * td2**2),
        "actor": np.mean((p * g).sum(-1)),
        "alpha": -np.mean(math.log(2.0) * (neg_entropy + 0.5)),
        "entropy": -neg_entropy.mean(),
        "td": (np.abs(td1) + np.abs(td2)) / 2,
        "td1": td1,
        "p": p,
        "g": g,
        "neg_entropy": neg_entropy,
    }


def loss_terms(learner):
    tensors = convert_to_torch_tensor(BATCH)
    module = learner.module["default_policy"]
    fwd_out = module.forward_train(tensors)
    total = learner.compute_loss_for_module(
        module_id="default_policy", config=learner.config, batch=tensors, fwd_out=fwd_out
    )
    return total, learner.metrics.reduce()["default_policy"]


def test_the_terms_by_hand():
    expected = expected_terms()
    # Row 0: s' = 2, pi(s') = softmax([0, 2]), min target Q = [min(4, 6), min(1, 2)] = [4, 1], so
    # V = sum pi * ([4, 1] - 2 log pi) and y = 1 + 0.5 * V. Row 2 is terminal: y = r = 0.5.
    p0 = np.array([1.0, math.exp(2.0)]) / (1.0 + math.exp(2.0))
    value0 = float((p0 * (np.array([4.0, 1.0]) - 2.0 * np.log(p0))).sum())
    # Row 1: s' = 0 gives a uniform policy and min target Q [0, 0]: V = 2 log 2, y = -1 + 0.5**2 * V.
    value1 = 2.0 * math.log(2.0)
    np.testing.assert_allclose(expected["targets"], [1 + 0.5 * value0, -1.0 + 0.25 * value1, 0.5], rtol=1e-12)
    np.testing.assert_allclose(expected["targets"], [2.04414, -0.65343, 0.5], atol=1e-5)


def test_losses_match_the_formulas():
    learner = build()
    total, logged = loss_terms(learner)
    expected = expected_terms()
    assert logged["qf_loss"] == pytest.approx(expected["critic"], rel=1e-5)
    assert logged["policy_loss"] == pytest.approx(expected["actor"], rel=1e-5)
    assert logged["alpha_loss"] == pytest.approx(expected["alpha"], rel=1e-5)
    assert (expected["critic"], expected["actor"], expected["alpha"]) == pytest.approx(
        (0.85295, -0.82745, 0.02550), abs=1e-5
    )
    assert float(total.detach()) == pytest.approx(
        expected["critic"] + expected["actor"] + expected["alpha"], rel=1e-5
    )
    assert logged["alpha_value"] == pytest.approx(2.0)
    assert logged["entropy"] == pytest.approx(expected["entropy"], rel=1e-5)
    assert logged["qf_mean"] == pytest.approx(np.mean([2.0, -2.0, 1.0]), rel=1e-6)  # Q1 of the taken actions
    np.testing.assert_allclose(logged[TD_ERROR_KEY][0], expected["td"], rtol=1e-5)
    assert logged[TD_ERROR_KEY][0][2] == pytest.approx(0.25)  # (|1.0 - 0.5| + |0.5 - 0.5|) / 2


def test_each_loss_reaches_only_its_own_parameters():
    learner = build()
    module = learner.module["default_policy"]
    total, _ = loss_terms(learner)
    total.backward()
    expected = expected_terms()
    alpha_grad = -np.mean(expected["neg_entropy"] + 0.5)
    assert float(learner.log_alphas["default_policy"].grad) == pytest.approx(alpha_grad, rel=1e-5)
    # Critic 1's bias k gets mean(2 * w * td1 * [a == k]) from the critic loss and nothing from the actor.
    taken = np.eye(2)[BATCH[Columns.ACTIONS]]
    critic_grad = np.mean(2 * BATCH[Columns.WEIGHTS][:, None] * expected["td1"][:, None] * taken, 0)
    np.testing.assert_allclose(module.qf.bias.grad.numpy(), critic_grad, rtol=1e-5)
    # d/d logit_k of sum_a p_a * (alpha * log p_a - q_a) = p_k * (g_k - sum_a p_a g_a): the derivative of
    # log p_a adds alpha * sum_a p_a * (1[a == k] - p_k) = 0. Without a critic gradient, q stays fixed.
    p, g = expected["p"], expected["g"]
    policy_grad = np.mean(p * (g - (p * g).sum(-1, keepdims=True)), 0)
    np.testing.assert_allclose(module.pi.bias.grad.numpy(), policy_grad, rtol=1e-5, atol=1e-7)
    assert module.target_qf.weight.grad is None and module.target_qf_twin.weight.grad is None


def test_an_update_on_replayed_transitions_moves_targets_with_tau():
    learner = build(tau=0.25)
    module = learner.module["default_policy"]
    results = update(learner, 10, BATCH)
    expected = 0.75 * torch.tensor([0.0, 1.0]) + 0.25 * module.qf.bias.detach()
    torch.testing.assert_close(module.target_qf.bias, expected)
    assert not torch.equal(module.qf.bias, torch.zeros(2)) and not torch.equal(module.pi.bias, torch.zeros(2))
    assert results["default_policy"]["alpha_value"] == pytest.approx(2.0)  # the value the step started with
    assert results["default_policy"]["qf_loss"] == pytest.approx(expected_terms()["critic"], rel=1e-5)


@pytest.mark.parametrize(("n", "target"), [(2, 0.34657), (6, 0.89588)])
def test_auto_target_entropy_is_half_the_uniform_policys(n, target):
    learner = SACTorchLearner(
        config=SACConfig(), module_spec=RLModuleSpec(DefaultSACTorchRLModule, OBS, gym.spaces.Discrete(n))
    )
    learner.build()
    assert learner.target_entropies == {"default_policy": pytest.approx(target, abs=1e-5)}  # 0.5 * log(n)
    assert learner.discrete == {"default_policy": True}
    assert build(target_entropy=0.1).target_entropies == {"default_policy": 0.1}


def test_discrete_actions_need_no_action_normalization():
    learner = SACTorchLearner(
        config=SACConfig().environment(normalize_actions=False),
        module_spec=RLModuleSpec(DefaultSACTorchRLModule, OBS, ACT),
    )
    learner.build()
    assert learner.discrete == {"default_policy": True}
