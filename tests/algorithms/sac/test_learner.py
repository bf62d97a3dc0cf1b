"""SACTorchLearner: critic targets, actor and alpha losses by hand, gradients reach only their own
parameters, squashed log-probs, Polyak target updates, state, and what SAC refuses at build."""

import math

import gymnasium as gym
import numpy as np
import pytest
import torch
from torch import nn

from flywheel import Columns, RLModuleSpec, TargetNetworkAPI, TorchRLModule
from flywheel.algorithms.sac import SACConfig
from flywheel.algorithms.sac.learner import SACTorchLearner, sample_with_logp
from flywheel.algorithms.sac.rl_module import QF_PREDS, QF_TWIN_PREDS, DefaultSACTorchRLModule
from flywheel.core.distributions import DiagGaussian, distribution_for_space
from flywheel.errors import ConfigError, LearnerError
from flywheel.metrics.keys import TD_ERROR_KEY
from flywheel.utils.torch_utils import convert_to_torch_tensor

from ..replayed import update

OBS = gym.spaces.Box(-10.0, 10.0, (1,), np.float32)
ACT = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
SQUASHED = distribution_for_space(ACT, squashed=True)


def linear(weights, bias):
    layer = nn.Linear(len(weights), 1)
    with torch.no_grad():
        layer.weight.copy_(torch.tensor([weights]))
        layer.bias.fill_(bias)
    return layer


class LinearSAC(TorchRLModule, TargetNetworkAPI):
    """pi(s) = squashed N(0.5 s, 0.5^2); Q1 = s + 2a, Q2 = s + a + 1; targets Q1' = 2s, Q2' = 3s + a."""

    def setup(self):
        self.pi = nn.Linear(1, 2)
        with torch.no_grad():
            self.pi.weight.copy_(torch.tensor([[0.5], [0.0]]))
            self.pi.bias.copy_(torch.tensor([0.0, math.log(0.5)]))
        self.qf, self.qf_twin = linear([1.0, 2.0], 0.0), linear([1.0, 1.0], 1.0)
        self.make_target_networks()

    def make_target_networks(self):
        self.target_qf, self.target_qf_twin = linear([2.0, 0.0], 0.0), linear([3.0, 1.0], 0.0)

    def get_target_network_pairs(self):
        return [(self.qf, self.target_qf), (self.qf_twin, self.target_qf_twin)]

    def get_train_action_dist_cls(self):
        return SQUASHED

    def _forward(self, batch, **kwargs):
        return {Columns.ACTION_DIST_INPUTS: self.pi(batch[Columns.OBS])}

    def _q(self, batch, first, second):
        x = torch.cat([batch[Columns.OBS], batch[Columns.ACTIONS]], -1)
        return {QF_PREDS: first(x).squeeze(-1), QF_TWIN_PREDS: second(x).squeeze(-1)}

    def compute_q_values(self, batch):
        return self._q(batch, self.qf, self.qf_twin)

    def forward_target(self, batch):
        return self._q(batch, self.target_qf, self.target_qf_twin)

    def policy_parameters(self):
        return list(self.pi.parameters())

    def critic_parameters(self):
        return [*self.qf.parameters(), *self.qf_twin.parameters()]


def build(module_class=LinearSAC, action_space=ACT, **training):
    settings = {"gamma": 0.5, "initial_alpha": 2.0, "target_entropy": -1.0, **training}
    config = SACConfig().training(**settings).reporting(log_gradients=True).debugging(seed=0)
    learner = SACTorchLearner(config=config, module_spec=RLModuleSpec(module_class, OBS, action_space))
    learner.build()
    return learner


BATCH = {
    Columns.OBS: np.array([[1.0], [-2.0], [0.5]], np.float32),
    Columns.ACTIONS: np.array([[0.5], [-0.25], [0.0]], np.float32),
    Columns.REWARDS: np.array([1.0, -1.0, 0.5], np.float32),
    Columns.NEXT_OBS: np.array([[2.0], [0.0], [-1.0]], np.float32),
    Columns.TERMINATEDS: np.array([False, False, True]),
    Columns.TRUNCATEDS: np.array([False, False, False]),
    Columns.N_STEP: np.array([1, 2, 1]),
    Columns.WEIGHTS: np.array([1.0, 0.5, 2.0], np.float32),
}


def squashed_sample(mean, noise):
    """Action and log-prob of tanh(N(mean, 0.5^2)) at the given standard-normal noise (float64)."""
    u = mean + 0.5 * noise
    logp = -0.5 * noise**2 - math.log(0.5) - 0.5 * math.log(2 * math.pi) - np.log(1 - np.tanh(u) ** 2)
    return np.tanh(u), logp


def expected_terms(seed):
    """Every SAC term for BATCH, with the noise the learner draws after torch.manual_seed(seed)."""
    torch.manual_seed(seed)
    next_noise = torch.randn(3, 1).double().numpy()[:, 0]
    noise = torch.randn(3, 1).double().numpy()[:, 0]
    obs, actions = BATCH[Columns.OBS][:, 0].astype(float), BATCH[Columns.ACTIONS][:, 0].astype(float)
    next_obs = BATCH[Columns.NEXT_OBS][:, 0].astype(float)
    next_a, next_logp = squashed_sample(0.5 * next_obs, next_noise)
    target_q = np.minimum(2 * next_obs, 3 * next_obs + next_a)
    discount = 0.5 ** BATCH[Columns.N_STEP]
    not_done = np.array([1.0, 1.0, 0.0])
    targets = BATCH[Columns.REWARDS] + discount * not_done * (target_q - 2.0 * next_logp)
    weights = BATCH[Columns.WEIGHTS].astype(float)
    td1, td2 = obs + 2 * actions - targets, obs + actions + 1 - targets
    critic = np.mean(weights * td1**2) + np.mean(weights * td2**2)
    a, logp = squashed_sample(0.5 * obs, noise)
    actor = np.mean(2.0 * logp - np.minimum(obs + 2 * a, obs + a + 1))
    alpha = -np.mean(math.log(2.0) * (logp - 1.0))
    td = (np.abs(td1) + np.abs(td2)) / 2
    return {"critic": critic, "actor": actor, "alpha": alpha, "td": td, "td1": td1, "logp": logp}


def loss_terms(learner, seed=0):
    tensors = convert_to_torch_tensor(BATCH)
    module = learner.module["default_policy"]
    torch.manual_seed(seed)
    fwd_out = module.forward_train(tensors)
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
    assert logged["alpha_value"] == pytest.approx(2.0)
    assert logged["entropy"] == pytest.approx(-expected["logp"].mean(), rel=1e-5)
    np.testing.assert_allclose(logged[TD_ERROR_KEY][0], expected["td"], rtol=1e-5)


def test_each_loss_reaches_only_its_own_parameters():
    learner = build()
    module = learner.module["default_policy"]
    total, _ = loss_terms(learner)
    total.backward()
    expected = expected_terms(0)
    # d alpha_loss / d log_alpha = -mean(logp + target_entropy); nothing else depends on log_alpha.
    alpha_grad = -np.mean(expected["logp"] - 1.0)
    assert float(learner.log_alphas["default_policy"].grad) == pytest.approx(alpha_grad, rel=1e-5)
    # The critics get the gradient of the critic loss alone (the actor's Q-values are frozen):
    # d/d bias of mean(w * td1**2) = mean(2 * w * td1).
    critic_bias_grad = np.mean(2 * BATCH[Columns.WEIGHTS] * expected["td1"])
    assert float(module.qf.bias.grad) == pytest.approx(critic_bias_grad, rel=1e-5)
    assert module.pi.weight.grad is not None and module.target_qf.weight.grad is None
    assert all(p.requires_grad for p in module.critic_parameters())  # unfrozen again


def test_sample_with_logp_is_exact_where_tanh_saturates():
    dist = SQUASHED.from_logits(torch.tensor([[0.3, math.log(0.5)], [-0.2, math.log(2.0)]]))
    torch.manual_seed(1)
    actions, logp = sample_with_logp(dist)
    torch.testing.assert_close(logp, dist.logp(actions), rtol=1e-4, atol=1e-4)  # agrees off the bounds

    dist = SQUASHED.from_logits(torch.tensor([[12.0, math.log(0.1)]]))
    torch.manual_seed(2)
    noise = torch.randn(1, 1).double()
    torch.manual_seed(2)
    actions, logp = sample_with_logp(dist)
    u = 12.0 + 0.1 * noise[0, 0]
    exact = -0.5 * float(noise[0, 0]) ** 2 - math.log(0.1) - 0.5 * math.log(2 * math.pi)
    exact -= 2 * (math.log(2) - float(u) - math.log1p(math.exp(-2 * float(u))))  # log(1 - tanh(u)**2)
    assert float(actions) == 1.0 and float(logp) == pytest.approx(exact, rel=1e-5)  # about 22.8
    assert float(dist.logp(actions)) < exact - 5  # inverting tanh at 1.0 loses u


def test_an_update_on_replayed_transitions_moves_targets_with_tau_and_logs():
    learner = build(tau=0.25)
    module = learner.module["default_policy"]
    results = update(learner, 10, BATCH)
    expected = 0.75 * torch.tensor([[2.0, 0.0]]) + 0.25 * module.qf.weight.detach()
    torch.testing.assert_close(module.target_qf.weight, expected)
    assert not torch.equal(module.qf.weight, torch.tensor([[1.0, 2.0]]))  # the critic stepped
    assert math.exp(float(learner.log_alphas["default_policy"].detach())) != 2.0  # and alpha
    assert sorted(results["default_policy"]) == [
        "actor_learning_rate", "alpha_learning_rate", "alpha_loss", "alpha_value", "critic_learning_rate",
        "entropy", "gradients_actor_global_norm", "gradients_alpha_global_norm", "gradients_critic_global_norm",
        "num_module_steps_trained", "policy_loss", "qf_loss", "qf_mean", "replay_indices", "td_error",
        "td_error_mean", "total_loss",
    ]  # fmt: skip
    np.testing.assert_array_equal(results["default_policy"]["replay_indices"], [[10, 11, 12]])
    assert results["default_policy"]["critic_learning_rate"] == 3e-4


def test_learning_rates_and_target_entropy_settings():
    learner = build(actor_lr=1e-3, critic_lr=[[0, 2e-3], [100, 0.0]], alpha_lr=5e-4, target_entropy="auto")
    results = update(learner, 50, BATCH)
    rates = {k: v for k, v in results["default_policy"].items() if k.endswith("learning_rate")}
    assert rates == {"critic_learning_rate": 1e-3, "actor_learning_rate": 1e-3, "alpha_learning_rate": 5e-4}
    assert learner.target_entropies == {"default_policy": -1.0}  # -(action dimensions)
    assert learner.discrete == {"default_policy": False}


def test_log_alpha_is_part_of_the_state():
    learner = build()
    update(learner, 1, BATCH)
    state = learner.get_state()
    fresh = build()
    fresh.set_state(state)
    assert float(fresh.log_alphas["default_policy"].detach()) == float(
        learner.log_alphas["default_policy"].detach()
    )
    assert state["log_alphas"]["default_policy"] != math.log(2.0)
    assert "log_alphas" not in learner.get_state(components="rl_module")


def test_what_sac_refuses_at_build():
    with pytest.raises(
        ConfigError,
        match=r"SAC's policy acts in \[-1, 1\], but normalize_actions=False would send those actions to the env "
        r"unscaled, while its action space is Box\(-2.0, 2.0, \(1,\), float32\)",
    ):
        config = SACConfig().environment(normalize_actions=False)
        SACTorchLearner(
            config=config,
            module_spec=RLModuleSpec(
                DefaultSACTorchRLModule, OBS, gym.spaces.Box(-2.0, 2.0, (1,), np.float32)
            ),
        ).build()
    SACTorchLearner(  # [-1, 1] actions need no unsquashing
        config=SACConfig().environment(normalize_actions=False),
        module_spec=RLModuleSpec(DefaultSACTorchRLModule, OBS, ACT),
    ).build()

    class Unsquashed(LinearSAC):
        def get_train_action_dist_cls(self):
            return DiagGaussian

    with pytest.raises(
        LearnerError,
        match=r"SAC's actor loss needs a tanh-squashed Gaussian \(Box\) or a Categorical \(Discrete\) policy, but "
        r"module 'default_policy' uses DiagGaussian. Fix: return distribution_for_space\(box, squashed=True\)",
    ):
        build(Unsquashed)

    class NoCritics(TorchRLModule):
        def _forward(self, batch, **kwargs):
            return {}

    with pytest.raises(
        LearnerError,
        match=r"module 'default_policy' \(NoCritics\) lacks \['compute_q_values', 'forward_target', 'policy_parameters', 'critic_parameters'\]",
    ):
        build(NoCritics)
