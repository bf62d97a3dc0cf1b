"""DQNTorchLearner / OffPolicyTorchLearner: the TD loss by hand (double Q, n-step, weights) on replayed
transitions run through the learner pipeline, TD errors and replay indices in the results, target
updates (tau, frequency), the epsilon schedule, state and bad modules."""

import gymnasium as gym
import numpy as np
import pytest
import torch
from torch import nn

from flywheel import (
    Columns,
    MultiRLModuleSpec,
    RLModuleSpec,
    TargetNetworkAPI,
    TorchRLModule,
)
from flywheel.algorithms.dqn import DQNConfig
from flywheel.algorithms.dqn.learner import DQNTorchLearner
from flywheel.algorithms.dqn.rl_module import QF_PREDS, DefaultDQNTorchRLModule
from flywheel.core.learner.utils import update_target_network
from flywheel.core.rl_module import SelfSupervisedLossAPI
from flywheel.errors import LearnerError
from flywheel.metrics.keys import TD_ERROR_KEY
from flywheel.replay import INDICES
from flywheel.utils.torch_utils import convert_to_torch_tensor

from ..replayed import update as replayed_update

OBS = gym.spaces.Box(-10.0, 10.0, (2,), np.float32)
ACT = gym.spaces.Discrete(2)
ONLINE = [[1.0, 0.0], [0.0, 1.0]]  # Q(s) = s
TARGET = [[2.0, 0.0], [0.0, -1.0]]  # Q_target(s) = [2 s0, -s1]
MODEL = {"fcnet_hiddens": [2], "fcnet_activation": "linear", "head_fcnet_hiddens": [], "dueling": False}


def build(**training):
    config = (
        DQNConfig().training(**{"lr": 0.1, "grad_clip": None, "gamma": 0.5, **training}).debugging(seed=0)
    )
    learner = DQNTorchLearner(
        config=config, module_spec=RLModuleSpec(DefaultDQNTorchRLModule, OBS, ACT, model_config=MODEL)
    )
    learner.build()
    module = learner.module["default_policy"]
    with torch.no_grad():
        for encoder in (module.encoder, module.target_encoder):
            encoder[0].weight.copy_(torch.eye(2))
            encoder[0].bias.zero_()
        module.af.weight.copy_(torch.tensor(ONLINE))
        module.target_af.weight.copy_(torch.tensor(TARGET))
        module.af.bias.zero_()
        module.target_af.bias.zero_()
    return learner


def batch(weights=(1.0, 1.0, 1.0)):
    return {
        Columns.OBS: np.array([[1.0, 2.0], [3.0, 0.0], [0.0, 0.5]], np.float32),
        Columns.ACTIONS: np.array([1, 0, 1]),
        Columns.REWARDS: np.array([1.0, 0.5, -1.0], np.float32),
        Columns.NEXT_OBS: np.array([[1.0, 3.0], [2.0, 1.0], [4.0, 0.0]], np.float32),
        Columns.TERMINATEDS: np.array([False, False, True]),
        Columns.TRUNCATEDS: np.array([False, False, False]),
        Columns.N_STEP: np.array([1, 3, 2]),
        Columns.WEIGHTS: np.array(weights, np.float32),
    }


def update(learner, t):
    return replayed_update(learner, t, batch(), observation_space=OBS, action_space=ACT)


# Q(s, a) for the batch: s[a] = [2, 3, 0.5].
# Next states: online Q(s') = s' -> argmax [1, 0, 0]; target Q(s') = [[2, -3], [4, -1], [8, 0]].
DOUBLE_Q_NEXT = np.array([-3.0, 4.0, 8.0])  # target network at the online argmax
MAX_Q_NEXT = np.array([2.0, 4.0, 8.0])  # max over the target network
DISCOUNTS = np.array([0.5, 0.125, 0.25])  # gamma ** n_step with gamma 0.5
NOT_DONE = np.array([1.0, 1.0, 0.0])


def expected_targets(q_next):
    return np.array([1.0, 0.5, -1.0]) + DISCOUNTS * NOT_DONE * q_next


def huber(x):
    return np.where(np.abs(x) <= 1.0, 0.5 * x * x, np.abs(x) - 0.5)


def loss_of(learner, rows):
    tensors = convert_to_torch_tensor(rows)
    module = learner.module["default_policy"]
    fwd_out = module.forward_train(tensors)
    return learner.compute_loss_for_module(
        module_id="default_policy", config=learner.config, batch=tensors, fwd_out=fwd_out
    )


@pytest.mark.parametrize(("double_q", "q_next"), [(True, DOUBLE_Q_NEXT), (False, MAX_Q_NEXT)])
def test_td_targets_use_double_q_and_n_step_discounts(double_q, q_next):
    learner = build(double_q=double_q)
    loss = loss_of(learner, batch())
    td = np.array([2.0, 3.0, 0.5]) - expected_targets(q_next)
    # double Q: targets [-0.5, 1.0, -1.0]; max over target: [2.0, 1.0, -1.0]
    assert float(loss.detach()) == pytest.approx(huber(td).mean())
    results = update(build(double_q=double_q), 1)["default_policy"]
    (td_errors,), (indices,) = results[TD_ERROR_KEY], results[INDICES]  # one array per minibatch
    np.testing.assert_allclose(td_errors, td, rtol=1e-6)
    np.testing.assert_array_equal(indices, [10, 11, 12])


def test_weights_and_squared_error_loss():
    learner = build(td_error_loss_fn="mse")
    loss = loss_of(learner, batch(weights=(0.5, 2.0, 0.0)))
    td = np.array([2.0, 3.0, 0.5]) - expected_targets(DOUBLE_Q_NEXT)
    assert float(loss.detach()) == pytest.approx(np.mean(np.array([0.5, 2.0, 0.0]) * td**2))


def test_update_on_replayed_transitions_steps_logs_and_counts():
    learner = build(target_network_update_freq=5)
    module = learner.module["default_policy"]
    before = module.af.weight.detach().clone()
    results = update(learner, 7)
    assert not torch.equal(module.af.weight, before)
    td = np.array([2.0, 3.0, 0.5]) - expected_targets(DOUBLE_Q_NEXT)
    assert results["default_policy"]["qf_loss"] == pytest.approx(huber(td).mean())
    assert results["default_policy"]["td_error_mean"] == pytest.approx(np.abs(td).mean())
    assert results["default_policy"]["qf_mean"] == pytest.approx(11 / 6)
    throughput = results["__all_modules__"].pop("num_env_steps_trained_lifetime_throughput")
    assert throughput > 0
    assert results["__all_modules__"] == {
        "num_env_steps_trained": 3,
        "num_env_steps_trained_lifetime": 3,  # what this update adds (the algorithm keeps the total)
        "num_non_finite_updates": 0,
        "weights_seq_no": 1,
        "num_target_updates": 1,  # lifetime count: 7 env steps since the last one (at 0) >= 5
    }


def test_update_target_network_moves_targets_by_tau():
    main, target = nn.Linear(2, 1), nn.Linear(2, 1)
    with torch.no_grad():
        main.weight.fill_(1.0), main.bias.fill_(2.0), target.weight.fill_(-1.0), target.bias.fill_(0.0)
    update_target_network(main, target, 0.25)
    torch.testing.assert_close(target.weight, torch.full((1, 2), -0.5))  # 0.75 * -1 + 0.25 * 1
    torch.testing.assert_close(target.bias, torch.tensor([0.5]))
    update_target_network(main, target, 1.0)
    torch.testing.assert_close(target.weight, main.weight)


def test_learner_moves_targets_with_tau_after_the_gradient_step():
    learner = build(tau=0.5, target_network_update_freq=0)
    module = learner.module["default_policy"]
    update(learner, 1)
    expected = 0.5 * torch.tensor(TARGET) + 0.5 * module.af.weight.detach()
    torch.testing.assert_close(module.target_af.weight, expected)
    torch.testing.assert_close(
        module.target_encoder[0].weight, torch.eye(2) * 0.5 + 0.5 * module.encoder[0].weight.detach()
    )


def test_targets_update_every_target_network_update_freq_sampled_steps():
    learner = build(target_network_update_freq=100)
    module = learner.module["default_policy"]
    copies = []
    for t in (50, 100, 150, 199, 200):
        update(learner, t)
        copies.append(torch.equal(module.target_af.weight, module.af.weight))
    assert copies == [False, True, False, False, True]
    assert learner.get_state(components="last_target_update_ts") == {"last_target_update_ts": 200}
    fresh = build(target_network_update_freq=100)
    fresh.set_state(learner.get_state())
    assert fresh.get_state(components="last_target_update_ts") == {"last_target_update_ts": 200}
    torch.testing.assert_close(fresh.module["default_policy"].target_af.weight, module.target_af.weight)


def test_epsilon_follows_its_schedule_in_the_module():
    learner = build(epsilon=[[0, 1.0], [100, 0.0]])
    module = learner.module["default_policy"]
    assert float(module.epsilon) == 1.0  # set at build, so runners start with it
    results = update(learner, 25)
    assert float(module.epsilon) == 0.75
    assert results["default_policy"]["curr_epsilon"] == 0.75
    assert learner.get_weights()["default_policy"]["epsilon"] == np.float32(0.75)


def test_a_ready_batch_takes_the_same_update_path():
    learner, other = build(), build()
    on_episodes = update(learner, 3)["default_policy"]
    on_batch = other.update(
        batch={"default_policy": {**batch(), INDICES: np.array([10, 11, 12])}},
        timesteps={"num_env_steps_sampled_lifetime": 3},
    )["default_policy"]
    assert on_batch["qf_loss"] == on_episodes["qf_loss"]
    np.testing.assert_array_equal(on_batch[TD_ERROR_KEY][0], on_episodes[TD_ERROR_KEY][0])
    for name, weight in learner.get_weights(inference_only=False)["default_policy"].items():
        np.testing.assert_array_equal(other.get_weights(inference_only=False)["default_policy"][name], weight)


class NoTargets(TorchRLModule):
    def setup(self):
        self.q = nn.Linear(2, 2)

    def _forward(self, batch, **kwargs):
        return {QF_PREDS: self.q(batch[Columns.OBS])}


class NoQValues(NoTargets, TargetNetworkAPI):
    def make_target_networks(self):
        self.target_q = None

    def get_target_network_pairs(self):
        return []

    def forward_target(self, batch):
        return {}


@pytest.mark.parametrize(
    ("module_class", "message"),
    [
        (
            NoTargets,
            r"DQNTorchLearner needs target networks, but module 'default_policy' \(NoTargets\) does not implement TargetNetworkAPI",
        ),
        (
            NoQValues,
            r"DQN needs Q-values, but module 'default_policy' \(NoQValues\) has no compute_q_values\(batch\)",
        ),
    ],
)
def test_modules_without_what_dqn_needs_fail_at_build(module_class, message):
    learner = DQNTorchLearner(config=DQNConfig(), module_spec=RLModuleSpec(module_class, OBS, ACT))
    with pytest.raises(LearnerError, match=message):
        learner.build()


class OwnLoss(NoTargets, SelfSupervisedLossAPI):
    """A model next to the Q-network with a loss of its own (as RLlib's curiosity model): no Q-values, no targets."""

    def compute_self_supervised_loss(self, *, learner, module_id, config, batch, fwd_out, **kwargs):
        return fwd_out[QF_PREDS].pow(2).mean()


def test_a_module_with_its_own_loss_trains_next_to_the_q_network():
    specs = {
        "default_policy": RLModuleSpec(DefaultDQNTorchRLModule, OBS, ACT, model_config=MODEL),
        "own": RLModuleSpec(OwnLoss, OBS, ACT),
    }
    config = DQNConfig().training(lr=0.1, target_network_update_freq=0, tau=1.0)
    learner = DQNTorchLearner(config=config, module_spec=MultiRLModuleSpec(rl_module_specs=specs))
    learner.build()  # neither TargetNetworkAPI nor compute_q_values asked of "own"
    own = learner.module["own"]
    before = own.q.weight.detach().clone()
    with torch.no_grad():
        own_loss = own.q(torch.as_tensor(batch()[Columns.OBS])).pow(2).mean()
    results = learner.update(
        batch={"default_policy": batch(), "own": batch()}, timesteps={"num_env_steps_sampled_lifetime": 3}
    )
    assert results["own"]["total_loss"] == pytest.approx(float(own_loss))
    assert "qf_loss" in results["default_policy"] and "qf_loss" not in results["own"]
    assert not torch.equal(own.q.weight, before)
    module = learner.module["default_policy"]
    assert torch.equal(module.target_af.weight, module.af.weight)  # tau=1: the Q-network's targets followed
