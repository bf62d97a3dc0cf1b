"""TQCTorchLearner: the quantile Huber loss and the truncated targets against numpy on hand-made
numbers, every loss term of a linear module by hand, gradients reaching only their own
parameters, and Discrete policies refused."""

import math

import gymnasium as gym
import numpy as np
import pytest
import torch
from torch import nn

from flywheel import Columns, RLModuleSpec, TargetNetworkAPI, TorchRLModule
from flywheel.algorithms.sac.rl_module import QF_PREDS
from flywheel.algorithms.tqc import TQCConfig, TQCTorchLearner
from flywheel.algorithms.tqc.learner import quantile_huber_loss, truncated_quantiles
from flywheel.core.distributions import Categorical, distribution_for_space
from flywheel.errors import LearnerError
from flywheel.metrics.keys import TD_ERROR_KEY
from flywheel.utils.torch_utils import convert_to_torch_tensor

from ..replayed import update
from ..sac.test_learner import BATCH, squashed_sample

OBS = gym.spaces.Box(-10.0, 10.0, (1,), np.float32)
ACT = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)


def numpy_quantile_huber(quantiles, targets, kappa=1.0):
    """[N] quantiles against [K] targets: sum_j sum_k |tau_j - 1{y_k < z_j}| * huber(y_k - z_j), by loops."""
    n = len(quantiles)
    total = 0.0
    for j, z in enumerate(quantiles):
        tau = (2 * j + 1) / (2 * n)
        for y in targets:
            u = y - z
            huber = 0.5 * u**2 if abs(u) <= kappa else kappa * (abs(u) - 0.5 * kappa)
            total += abs(tau - (1.0 if u < 0 else 0.0)) * huber
    return total


def test_quantile_huber_loss_on_hand_made_numbers():
    quantiles = torch.tensor([[[0.0, 1.0], [0.5, 3.0]], [[-2.0, -1.0], [0.0, 0.25]]], dtype=torch.float64)
    targets = torch.tensor([[0.5, 2.0, -1.0], [-3.0, 0.0, 4.0]], dtype=torch.float64)
    loss = quantile_huber_loss(quantiles, targets)
    # Row 0, critic 0 (tau 1/4, 3/4): z=0 against 0.5, 2, -1: 0.25*0.125 + 0.25*1.5 + 0.75*0.5 = 0.78125,
    # z=1: 0.25*0.125 + 0.75*0.5 + 0.25*1.5 = 0.78125.
    assert float(loss[0, 0]) == pytest.approx(1.5625)
    expected = [
        [numpy_quantile_huber(q.numpy(), y.numpy()) for q in row] for row, y in zip(quantiles, targets)
    ]
    np.testing.assert_allclose(loss.numpy(), expected, rtol=1e-12)
    assert loss.shape == (2, 2)
    wide = quantile_huber_loss(quantiles, targets, kappa=2.0)[1, 1]
    assert float(wide) == pytest.approx(numpy_quantile_huber([0.0, 0.25], [-3.0, 0.0, 4.0], kappa=2.0))


def test_truncation_pools_sorts_and_drops_the_top_of_all_critics():
    quantiles = torch.tensor([[[1.0, 5.0, 2.0], [9.0, -1.0, 3.0]], [[0.0, 0.0, 7.0], [6.0, 8.0, 4.0]]])
    torch.testing.assert_close(
        truncated_quantiles(quantiles, 1), torch.tensor([[-1.0, 1.0, 2.0, 3.0], [0.0, 0.0, 4.0, 6.0]])
    )  # 2 critics x (3 - 1): the two largest of each row's six go
    torch.testing.assert_close(
        truncated_quantiles(quantiles, 0)[0], torch.tensor([-1.0, 1.0, 2.0, 3.0, 5.0, 9.0])
    )


def critic(weights, offsets):
    """Quantile j = weights . [s, a] + offsets[j]."""
    layer = nn.Linear(2, len(offsets))
    with torch.no_grad():
        layer.weight.copy_(torch.tensor([weights] * len(offsets)))
        layer.bias.copy_(torch.tensor(offsets))
    return layer


class LinearTQC(TorchRLModule, TargetNetworkAPI):
    """pi(s) = squashed N(0.5 s, 0.5^2); two critics of 3 quantiles: Z1 = s + 2a + (-1, 0, 1),
    Z2 = s + a + (0, 1, 3); targets Z1' = 2s + (-1, 0, 2), Z2' = 3s + a + (-2, 0.5, 1)."""

    def setup(self):
        self.pi = nn.Linear(1, 2)
        with torch.no_grad():
            self.pi.weight.copy_(torch.tensor([[0.5], [0.0]]))
            self.pi.bias.copy_(torch.tensor([0.0, math.log(0.5)]))
        self.qfs = nn.ModuleList([critic([1.0, 2.0], [-1.0, 0.0, 1.0]), critic([1.0, 1.0], [0.0, 1.0, 3.0])])
        self.make_target_networks()

    def make_target_networks(self):
        self.target_qfs = nn.ModuleList(
            [critic([2.0, 0.0], [-1.0, 0.0, 2.0]), critic([3.0, 1.0], [-2.0, 0.5, 1.0])]
        )

    def get_target_network_pairs(self):
        return [(self.qfs, self.target_qfs)]

    def get_train_action_dist_cls(self):
        return distribution_for_space(ACT, squashed=True)

    def _forward(self, batch, **kwargs):
        return {Columns.ACTION_DIST_INPUTS: self.pi(batch[Columns.OBS])}

    @staticmethod
    def _z(batch, heads):
        x = torch.cat([batch[Columns.OBS], batch[Columns.ACTIONS]], -1)
        return {QF_PREDS: torch.stack([head(x) for head in heads], 1)}

    def compute_q_values(self, batch):
        return self._z(batch, self.qfs)

    def forward_target(self, batch):
        return self._z(batch, self.target_qfs)

    def policy_parameters(self):
        return list(self.pi.parameters())

    def critic_parameters(self):
        return list(self.qfs.parameters())


def build(module_class=LinearTQC, action_space=ACT, **training):
    settings = {
        "gamma": 0.5,
        "initial_alpha": 2.0,
        "target_entropy": -1.0,
        "top_quantiles_to_drop_per_net": 1,
    }
    config = TQCConfig().training(**{**settings, **training}).debugging(seed=0)
    learner = TQCTorchLearner(config=config, module_spec=RLModuleSpec(module_class, OBS, action_space))
    learner.build()
    return learner


def z(s, a, weights, offsets):
    return weights[0] * s[:, None] + weights[1] * a[:, None] + np.array(offsets)[None, :]


def expected_terms(seed):
    """Every TQC term for BATCH, with the noise the learner draws after torch.manual_seed(seed)."""
    torch.manual_seed(seed)
    next_noise = torch.randn(3, 1).double().numpy()[:, 0]
    noise = torch.randn(3, 1).double().numpy()[:, 0]
    obs, actions = BATCH[Columns.OBS][:, 0].astype(float), BATCH[Columns.ACTIONS][:, 0].astype(float)
    next_obs = BATCH[Columns.NEXT_OBS][:, 0].astype(float)
    next_a, next_logp = squashed_sample(0.5 * next_obs, next_noise)
    pooled = np.concatenate(
        [z(next_obs, next_a, (2, 0), (-1, 0, 2)), z(next_obs, next_a, (3, 1), (-2, 0.5, 1))], axis=1
    )
    kept = np.sort(pooled, axis=1)[:, :4]  # 2 critics x (3 quantiles - 1 dropped)
    discount = (0.5 ** BATCH[Columns.N_STEP]) * np.array([1.0, 1.0, 0.0])
    targets = BATCH[Columns.REWARDS][:, None] + discount[:, None] * (kept - 2.0 * next_logp[:, None])
    weights = BATCH[Columns.WEIGHTS].astype(float)
    z1, z2 = z(obs, actions, (1, 2), (-1, 0, 1)), z(obs, actions, (1, 1), (0, 1, 3))
    critic_loss = sum(
        np.mean([w * numpy_quantile_huber(zi[b], targets[b]) for b, w in enumerate(weights)])
        for zi in (z1, z2)
    )
    a, logp = squashed_sample(0.5 * obs, noise)
    q_policy = (z(obs, a, (1, 2), (-1, 0, 1)).sum(1) + z(obs, a, (1, 1), (0, 1, 3)).sum(1)) / 6
    actor = np.mean(2.0 * logp - q_policy)
    alpha = -np.mean(math.log(2.0) * (logp - 1.0))
    td = np.abs((z1.sum(1) + z2.sum(1)) / 6 - targets.mean(1))
    return {"critic": critic_loss, "actor": actor, "alpha": alpha, "td": td, "targets": targets, "logp": logp}


def loss_terms(learner, seed=0):
    tensors = convert_to_torch_tensor(BATCH)
    fwd_out = learner.module["default_policy"].forward_train(tensors)
    torch.manual_seed(seed)
    total = learner.compute_loss_for_module(
        module_id="default_policy", config=learner.config, batch=tensors, fwd_out=fwd_out
    )
    return total, learner.metrics.reduce()["default_policy"]


def test_losses_match_the_formulas():
    learner = build()
    total, logged = loss_terms(learner)
    expected = expected_terms(0)
    assert logged["qf_loss"] == pytest.approx(expected["critic"], rel=1e-5)
    assert logged["policy_loss"] == pytest.approx(expected["actor"], rel=1e-5)
    assert logged["alpha_loss"] == pytest.approx(expected["alpha"], rel=1e-5)
    assert float(total.detach()) == pytest.approx(
        expected["critic"] + expected["actor"] + expected["alpha"], rel=1e-5
    )
    assert logged["entropy"] == pytest.approx(-expected["logp"].mean(), rel=1e-5)
    np.testing.assert_allclose(logged[TD_ERROR_KEY][0], expected["td"], rtol=1e-5)
    assert 1.0 < expected["critic"] < 1e3  # the numbers are not degenerate


def test_each_loss_reaches_only_its_own_parameters():
    learner = build()
    module = learner.module["default_policy"]
    total, _ = loss_terms(learner)
    total.backward()
    expected = expected_terms(0)
    # The critics get the critic loss's gradient alone (the actor scores its actions with frozen critics).
    reference = LinearTQC(OBS, ACT)
    batch = convert_to_torch_tensor(BATCH)
    quantiles = reference.compute_q_values(batch)[QF_PREDS]
    per_row = quantile_huber_loss(quantiles, torch.tensor(expected["targets"], dtype=torch.float32))
    (batch[Columns.WEIGHTS].unsqueeze(-1) * per_row).mean(0).sum().backward()
    for ours, theirs in zip(module.qfs.parameters(), reference.qfs.parameters(), strict=True):
        torch.testing.assert_close(ours.grad, theirs.grad, rtol=1e-4, atol=1e-6)
    assert float(learner.log_alphas["default_policy"].grad) == pytest.approx(
        -np.mean(expected["logp"] - 1.0), rel=1e-5
    )
    assert module.pi.weight.grad is not None and all(p.grad is None for p in module.target_qfs.parameters())
    assert all(p.requires_grad for p in module.critic_parameters())  # unfrozen again


def test_an_update_moves_the_targets_and_logs_sacs_metrics():
    learner = build(tau=0.25)
    module = learner.module["default_policy"]
    results = update(learner, 10, BATCH)
    expected = 0.75 * torch.tensor([[2.0, 0.0]] * 3) + 0.25 * module.qfs[0].weight.detach()
    torch.testing.assert_close(module.target_qfs[0].weight, expected)
    assert {
        "qf_loss",
        "policy_loss",
        "alpha_loss",
        "alpha_value",
        "entropy",
        "qf_mean",
        "td_error_mean",
    } <= set(results["default_policy"])
    np.testing.assert_array_equal(results["default_policy"]["replay_indices"], [[10, 11, 12]])


def test_discrete_policies_are_refused():
    class DiscreteTQC(LinearTQC):
        def get_train_action_dist_cls(self):
            return Categorical

    with pytest.raises(
        LearnerError,
        match=r"TQC's critics score sampled continuous actions, but module "
        r"'default_policy' has a Categorical policy. Fix: use TQC with a 1-D Box action space",
    ):
        build(DiscreteTQC, gym.spaces.Discrete(2))
