"""IQLTorchLearner: the three losses against a numpy reference on hand-made numbers (Box and
Discrete actions), each loss reaching only its own network, the advantage-weight clip, the expectile
loss, an update stepping every optimizer and the Polyak target update, and what IQL refuses."""

import math

import gymnasium as gym
import numpy as np
import pytest
import torch
from torch import nn

from flywheel import Columns, RLModuleSpec, TargetNetworkAPI, TorchRLModule
from flywheel.algorithms.iql import IQLConfig
from flywheel.algorithms.iql.learner import EXP_ADV_MAX, IQLTorchLearner, expectile_loss
from flywheel.algorithms.sac.rl_module import QF_PREDS, QF_TWIN_PREDS
from flywheel.core.distributions import Categorical
from flywheel.errors import LearnerError
from flywheel.utils.torch_utils import convert_to_torch_tensor

from ..sac.test_learner import ACT, OBS, LinearSAC, linear

BATCH = {
    Columns.OBS: np.array([[1.0], [-2.0], [0.5]], np.float32),
    Columns.ACTIONS: np.array([[0.5], [-0.25], [0.0]], np.float32),
    Columns.REWARDS: np.array([1.0, -1.0, 0.5], np.float32),
    Columns.NEXT_OBS: np.array([[2.0], [0.0], [-1.0]], np.float32),
    Columns.TERMINATEDS: np.array([False, False, True]),
    Columns.TRUNCATEDS: np.array([False, False, False]),
}  # offline rows: one step each
DISCRETE_BATCH = {**BATCH, Columns.ACTIONS: np.array([1, 0, 1])}


class LinearIQL(LinearSAC):
    """LinearSAC (pi(s) = squashed N(0.5 s, 0.5^2), Q1 = s + 2a, Q2 = s + a + 1, Q1' = 2s,
    Q2' = 3s + a) with V(s) = -s + 0.5."""

    def setup(self):
        super().setup()
        self.vf = linear([-1.0], 0.5)

    def compute_values(self, batch, embeddings=None):
        return self.vf(batch[Columns.OBS]).squeeze(-1)

    def value_parameters(self):
        return list(self.vf.parameters())


def rows(weights, biases):
    layer = nn.Linear(1, len(weights))
    with torch.no_grad():
        layer.weight.copy_(torch.tensor(weights).unsqueeze(-1))
        layer.bias.copy_(torch.tensor(biases))
    return layer


class LinearDiscreteIQL(TorchRLModule, TargetNetworkAPI):
    """Two actions: logits (s, -s); Q1 = (s, 2s), Q2 = (s + 1, -s); Q1' = (2s, 0), Q2' = (s, 1);
    V(s) = -s + 0.5."""

    def setup(self):
        self.pi = rows([1.0, -1.0], [0.0, 0.0])
        self.qf, self.qf_twin = rows([1.0, 2.0], [0.0, 0.0]), rows([1.0, -1.0], [1.0, 0.0])
        self.vf = linear([-1.0], 0.5)
        self.make_target_networks()

    def make_target_networks(self):
        self.target_qf, self.target_qf_twin = rows([2.0, 0.0], [0.0, 0.0]), rows([1.0, 0.0], [0.0, 1.0])

    def get_target_network_pairs(self):
        return [(self.qf, self.target_qf), (self.qf_twin, self.target_qf_twin)]

    def get_train_action_dist_cls(self):
        return Categorical

    def _forward(self, batch, **kwargs):
        return {Columns.ACTION_DIST_INPUTS: self.pi(batch[Columns.OBS])}

    def compute_q_values(self, batch):
        return {QF_PREDS: self.qf(batch[Columns.OBS]), QF_TWIN_PREDS: self.qf_twin(batch[Columns.OBS])}

    def forward_target(self, batch):
        obs = batch[Columns.OBS]
        return {QF_PREDS: self.target_qf(obs), QF_TWIN_PREDS: self.target_qf_twin(obs)}

    def compute_values(self, batch, embeddings=None):
        return self.vf(batch[Columns.OBS]).squeeze(-1)

    def value_parameters(self):
        return list(self.vf.parameters())

    def policy_parameters(self):
        return list(self.pi.parameters())

    def critic_parameters(self):
        return [*self.qf.parameters(), *self.qf_twin.parameters()]


def build(module_class=LinearIQL, action_space=ACT, **training):
    settings = {"gamma": 0.5, "beta": 2.0, "expectile": 0.7, **training}
    config = IQLConfig().training(**settings).offline_data(input_="unused").debugging(seed=0)
    learner = IQLTorchLearner(config=config, module_spec=RLModuleSpec(module_class, OBS, action_space))
    learner.build()
    return learner


def expected_terms(discrete=False, beta=2.0, expectile=0.7):
    """IQL's losses for BATCH (float64), from the modules' formulas above."""
    batch = DISCRETE_BATCH if discrete else BATCH
    s, s_next = batch[Columns.OBS][:, 0].astype(float), batch[Columns.NEXT_OBS][:, 0].astype(float)
    values, next_values = -s + 0.5, -s_next + 0.5
    targets = batch[Columns.REWARDS] + 0.5 * np.array([1.0, 1.0, 0.0]) * next_values
    if discrete:
        a = batch[Columns.ACTIONS]
        pick = lambda per_action: np.choose(a, per_action)  # noqa: E731
        q1, q2 = pick([s, 2 * s]), pick([s + 1, -s])
        target_q = pick([np.minimum(2 * s, s), np.minimum(0 * s, 1 + 0 * s)])
        logits = np.stack([s, -s], axis=1)
        logp = pick(list((logits - np.log(np.exp(logits).sum(1, keepdims=True))).T))
    else:
        a = batch[Columns.ACTIONS][:, 0].astype(float)
        q1, q2 = s + 2 * a, s + a + 1
        target_q = np.minimum(2 * s, 3 * s + a)
        u = np.arctanh(a)
        logp = (
            -0.5 * ((u - 0.5 * s) / 0.5) ** 2 - math.log(0.5) - 0.5 * math.log(2 * math.pi) - np.log(1 - a**2)
        )
    diff = target_q - values
    weights = np.minimum(np.exp(beta * diff), EXP_ADV_MAX)
    return {
        "value_loss": np.mean(np.where(diff < 0, 1 - expectile, expectile) * diff**2),
        "qf_loss": np.mean((q1 - targets) ** 2) + np.mean((q2 - targets) ** 2),
        "policy_loss": -np.mean(weights * logp),
        "diff": diff,
        "weights": weights,
        "q1_error": q1 - targets,
    }


def loss_terms(learner, batch=BATCH):
    tensors = convert_to_torch_tensor(batch)
    module = learner.module["default_policy"]
    fwd_out = module.forward_train(tensors)
    total = learner.compute_loss_for_module(
        module_id="default_policy", config=learner.config, batch=tensors, fwd_out=fwd_out
    )
    return total, learner.metrics.reduce()["default_policy"]


@pytest.mark.parametrize("discrete", [False, True])
def test_the_losses_match_the_numpy_reference(discrete):
    learner = build(LinearDiscreteIQL, gym.spaces.Discrete(2)) if discrete else build()
    total, logged = loss_terms(learner, DISCRETE_BATCH if discrete else BATCH)
    expected = expected_terms(discrete)
    for key in ("value_loss", "qf_loss"):
        assert logged[key] == pytest.approx(expected[key], rel=1e-5), key
    # float32 log-probabilities (atanh of the data's actions) against float64: 1e-4.
    assert logged["policy_loss"] == pytest.approx(expected["policy_loss"], rel=1e-4)
    assert logged["exp_advantage_mean"] == pytest.approx(np.mean(expected["weights"]), rel=1e-5)
    assert float(total.detach()) == pytest.approx(
        expected["value_loss"] + expected["qf_loss"] + expected["policy_loss"], rel=1e-4
    )


def test_each_loss_reaches_only_its_own_network():
    learner = build()
    module = learner.module["default_policy"]
    loss_terms(learner)[0].backward()
    expected = expected_terms()
    # d value_loss / d vf.bias = mean(-2 * w * diff): nothing else (V(s') in the critics' targets,
    # the actor's weights) sends gradient into V.
    diff = expected["diff"]
    weight = np.where(diff < 0, 0.3, 0.7)
    assert float(module.vf.bias.grad) == pytest.approx(np.mean(-2 * weight * diff), rel=1e-5)
    assert float(module.qf.bias.grad) == pytest.approx(np.mean(2 * expected["q1_error"]), rel=1e-5)
    assert module.target_qf.weight.grad is None and module.target_qf_twin.weight.grad is None


def test_higher_beta_weights_the_better_actions_more_and_the_weights_are_clipped():
    low, high = expected_terms(beta=0.1), expected_terms(beta=2.0)
    assert np.argmax(high["weights"]) == np.argmax(high["diff"])
    assert high["weights"].max() / high["weights"].min() > low["weights"].max() / low["weights"].min()
    _, logged = loss_terms(build(beta=100.0))
    clipped = expected_terms(beta=100.0)
    assert clipped["weights"].max() == EXP_ADV_MAX  # exp(100 * 2.5) without the clip
    assert logged["policy_loss"] == pytest.approx(clipped["policy_loss"], rel=1e-4)


def test_expectile_loss_on_hand_made_numbers():
    diff = torch.tensor([2.0, -1.0, 0.0])
    torch.testing.assert_close(expectile_loss(diff, 0.9), torch.tensor([0.9 * 4.0, 0.1 * 1.0, 0.0]))
    # Its minimizer over a constant V is the expectile: for targets (0, 1) and expectile 0.8, V = 0.8.
    targets = torch.tensor([0.0, 1.0])
    grid = torch.linspace(0.0, 1.0, 101)
    losses = torch.stack([expectile_loss(targets - v, 0.8).mean() for v in grid])
    assert float(grid[losses.argmin()]) == pytest.approx(0.8)


def test_an_update_steps_every_optimizer_and_moves_the_targets_by_tau():
    learner = build(tau=0.5, value_lr=1e-2, critic_lr=2e-2, actor_lr=3e-2)
    module = learner.module["default_policy"]
    before = {name: p.detach().clone() for name, p in module.named_parameters()}
    results = learner.update(batch={"default_policy": dict(BATCH)})["default_policy"]
    assert (
        results["value_learning_rate"],
        results["critic_learning_rate"],
        results["actor_learning_rate"],
    ) == (
        1e-2,
        2e-2,
        3e-2,
    )
    for name in ("vf.weight", "qf.weight", "qf_twin.weight", "pi.weight"):
        assert not torch.equal(dict(module.named_parameters())[name], before[name]), name
    torch.testing.assert_close(
        module.target_qf.weight.detach(), 0.5 * before["target_qf.weight"] + 0.5 * module.qf.weight.detach()
    )


def test_a_module_without_a_value_network_is_refused():
    with pytest.raises(
        LearnerError,
        match=r"IQL needs a value network, but module 'default_policy' \(LinearSAC\) "
        r"lacks \['compute_values', 'value_parameters'\]\. Fix: subclass",
    ):
        build(LinearSAC)
