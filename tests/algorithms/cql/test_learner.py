"""CQLTorchLearner: the conservative term against a numpy reference (soft maximum over uniform,
current-policy and next-policy actions with importance correction), the critic targets, the switch
from behavior cloning to SAC's actor loss after `bc_iters` updates, the Lagrangian weight, state,
and what CQL refuses."""

import math

import gymnasium as gym
import numpy as np
import pytest
import torch

from flywheel import Columns, RLModuleSpec
from flywheel.algorithms.cql import CQLConfig
from flywheel.algorithms.cql.learner import CQLTorchLearner, conservative_gap
from flywheel.algorithms.sac.rl_module import DefaultSACTorchRLModule
from flywheel.errors import LearnerError
from flywheel.utils.torch_utils import convert_to_torch_tensor

from ..sac.test_learner import ACT, OBS, LinearSAC, squashed_sample

N = 2  # num_actions
BATCH = {
    Columns.OBS: np.array([[1.0], [-2.0], [0.5]], np.float32),
    Columns.ACTIONS: np.array([[0.5], [-0.25], [0.0]], np.float32),
    Columns.REWARDS: np.array([1.0, -1.0, 0.5], np.float32),
    Columns.NEXT_OBS: np.array([[2.0], [0.0], [-1.0]], np.float32),
    Columns.TERMINATEDS: np.array([False, False, True]),
    Columns.TRUNCATEDS: np.array([False, False, False]),
}  # offline rows: no N_STEP (one step each), no importance WEIGHTS


def build(**training):
    settings = {"gamma": 0.5, "initial_alpha": 2.0, "target_entropy": -1.0, "num_actions": N, **training}
    config = CQLConfig().training(**settings).offline_data(input_="unused").debugging(seed=0)
    learner = CQLTorchLearner(config=config, module_spec=RLModuleSpec(LinearSAC, OBS, ACT))
    learner.build()
    return learner


def logsumexp(x):
    top = x.max(axis=1, keepdims=True)
    return (top + np.log(np.exp(x - top).sum(axis=1, keepdims=True)))[:, 0]


def expected_terms(seed, temperature, min_q_weight, batch=BATCH):
    """CQL's terms for BATCH with LinearSAC (pi = squashed N(0.5 s, 0.5^2), Q1 = s + 2a,
    Q2 = s + a + 1, Q1' = 2s, Q2' = 3s + a), with the draws the learner makes after manual_seed(seed):
    the actor's sample, the next action, then N current-policy, N next-policy and N uniform actions
    per row."""
    torch.manual_seed(seed)
    noise = torch.randn(3, 1).double().numpy()[:, 0]
    next_noise = torch.randn(3, 1).double().numpy()[:, 0]
    current_noise = torch.randn(3 * N, 1).double().numpy()[:, 0]
    following_noise = torch.randn(3 * N, 1).double().numpy()[:, 0]
    uniform = -1.0 + 2.0 * torch.rand(3 * N, 1).double().numpy()[:, 0]
    obs, data = batch[Columns.OBS][:, 0].astype(float), batch[Columns.ACTIONS][:, 0].astype(float)
    next_obs = batch[Columns.NEXT_OBS][:, 0].astype(float)

    next_a, _ = squashed_sample(0.5 * next_obs, next_noise)  # deterministic backup: no entropy term
    targets = batch[Columns.REWARDS] + 0.5 * (1.0 - batch[Columns.TERMINATEDS]) * np.minimum(
        2 * next_obs, 3 * next_obs + next_a
    )
    q_data = [obs + 2 * data, obs + data + 1]
    td = sum(np.mean((q - targets) ** 2) for q in q_data)

    rows = np.repeat(obs, N)
    current, current_logp = squashed_sample(0.5 * rows, current_noise)
    following, following_logp = squashed_sample(0.5 * np.repeat(next_obs, N), following_noise)
    penalty = 0.0
    for q_fn, q in zip((lambda a: rows + 2 * a, lambda a: rows + a + 1), q_data, strict=True):
        corrected = np.concatenate(
            [
                (q_fn(uniform) - math.log(0.5)).reshape(3, N),  # uniform on [-1, 1]: density 1/2
                (q_fn(current) - current_logp).reshape(3, N),
                (q_fn(following) - following_logp).reshape(3, N),
            ],
            axis=1,
        )
        gap = np.mean(temperature * logsumexp(corrected / temperature)) - np.mean(q)
        penalty += min_q_weight * gap

    a, logp = squashed_sample(0.5 * obs, noise)
    u = np.arctanh(data)
    bc_logp = -0.5 * ((u - 0.5 * obs) / 0.5) ** 2 - math.log(0.5) - 0.5 * math.log(2 * math.pi)
    bc_logp -= np.log(1 - data**2)
    return {
        "qf_loss": td + penalty,
        "cql_loss": penalty,
        "bc_actor": np.mean(2.0 * logp - bc_logp),
        "sac_actor": np.mean(2.0 * logp - np.minimum(obs + 2 * a, obs + a + 1)),
        "alpha_loss": -np.mean(math.log(2.0) * (logp - 1.0)),
    }


def loss_terms(learner, seed=0, batch=BATCH):
    tensors = convert_to_torch_tensor(batch)
    module = learner.module["default_policy"]
    torch.manual_seed(seed)
    fwd_out = module.forward_train(tensors)
    total = learner.compute_loss_for_module(
        module_id="default_policy", config=learner.config, batch=tensors, fwd_out=fwd_out
    )
    return total, learner.metrics.reduce()["default_policy"]


@pytest.mark.parametrize("temperature, min_q_weight", [(1.0, 5.0), (0.5, 2.0)])
def test_the_critic_loss_matches_the_numpy_reference(temperature, min_q_weight):
    learner = build(temperature=temperature, min_q_weight=min_q_weight)
    total, logged = loss_terms(learner)
    expected = expected_terms(0, temperature, min_q_weight)
    assert logged["cql_loss"] == pytest.approx(expected["cql_loss"], rel=1e-5)
    assert logged["qf_loss"] == pytest.approx(expected["qf_loss"], rel=1e-5)
    assert logged["alpha_loss"] == pytest.approx(expected["alpha_loss"], rel=1e-5)
    assert float(total.detach()) == pytest.approx(
        expected["qf_loss"] + expected["bc_actor"] + expected["alpha_loss"], rel=1e-4
    )


def test_truncated_rows_bootstrap_only_terminated_ones_do_not():
    # The last row ends by a time limit instead: its target keeps gamma * min Q'(s', a').
    truncated = {**BATCH, Columns.TERMINATEDS: np.array([False, False, False])}
    truncated[Columns.TRUNCATEDS] = np.array([False, False, True])
    _, logged = loss_terms(build(), batch=truncated)
    expected = expected_terms(0, 1.0, 5.0, batch=truncated)
    assert logged["qf_loss"] == pytest.approx(expected["qf_loss"], rel=1e-5)
    assert expected["qf_loss"] != pytest.approx(expected_terms(0, 1.0, 5.0)["qf_loss"], rel=1e-3)


def test_conservative_gap_on_hand_made_numbers():
    q_data = torch.tensor([1.0, 3.0])
    q_uniform, q_current, q_next = (
        torch.tensor([[0.0], [2.0]]),
        torch.tensor([[1.0], [1.0]]),
        torch.tensor([[4.0], [0.0]]),
    )
    logp_uniform = torch.full((2, 1), -math.log(2.0))
    logp_current, logp_next = torch.tensor([[0.5], [-1.0]]), torch.tensor([[2.0], [0.0]])
    gap = conservative_gap(
        q_data, q_uniform, q_current, q_next, logp_uniform, logp_current, logp_next, temperature=2.0
    )
    # Row 1: (0 + log 2, 1 - 0.5, 4 - 2) / 2; row 2: (2 + log 2, 1 + 1, 0 - 0) / 2.
    row1 = 2.0 * math.log(math.exp(math.log(2.0) / 2) + math.exp(0.25) + math.exp(1.0))
    row2 = 2.0 * math.log(math.exp((2 + math.log(2.0)) / 2) + math.exp(1.0) + 1.0)
    assert float(gap) == pytest.approx((row1 + row2) / 2 - 2.0, rel=1e-6)


def test_bc_iters_switches_the_actor_loss_from_behavior_cloning_to_sac():
    learner = build(bc_iters=5)
    expected = expected_terms(0, 1.0, 5.0)
    learner.set_state({"weights_seq_no": 4})  # the fifth update: still cloning the data's actions
    assert loss_terms(learner)[1]["policy_loss"] == pytest.approx(expected["bc_actor"], rel=1e-4)
    learner.set_state({"weights_seq_no": 5})
    assert loss_terms(learner)[1]["policy_loss"] == pytest.approx(expected["sac_actor"], rel=1e-5)
    assert loss_terms(build(bc_iters=0))[1]["policy_loss"] == pytest.approx(expected["sac_actor"], rel=1e-5)


def test_the_conservative_term_reaches_only_the_critics():
    learner = build(bc_iters=0)
    module = learner.module["default_policy"]
    without = build(bc_iters=0, min_q_weight=0.0)
    for candidate in (learner, without):
        loss_terms(candidate)[0].backward()
    # Same draws, so the policy's gradient is the same with and without the conservative term.
    torch.testing.assert_close(module.pi.weight.grad, without.module["default_policy"].pi.weight.grad)
    assert not torch.equal(module.qf.weight.grad, without.module["default_policy"].qf.weight.grad)


def test_deterministic_backup_false_adds_the_entropy_term_to_the_targets():
    deterministic, soft = build(), build(deterministic_backup=False, min_q_weight=0.0)
    plain = build(min_q_weight=0.0)
    assert loss_terms(soft)[1]["qf_loss"] != pytest.approx(loss_terms(plain)[1]["qf_loss"])
    assert loss_terms(deterministic)[1]["qf_loss"] == pytest.approx(
        expected_terms(0, 1.0, 5.0)["qf_loss"], rel=1e-5
    )


def test_the_lagrangian_weights_the_excess_gap_and_tunes_alpha_prime():
    plain = expected_terms(0, 1.0, 5.0)["cql_loss"]  # both critics' weighted gaps, summed
    learner = build(lagrangian=True, lagrangian_thresh=1.0)
    total, logged = loss_terms(learner)
    assert logged["alpha_prime_value"] == 1.0  # log alpha' starts at 0
    assert logged["cql_loss"] == pytest.approx(plain - 2 * 1.0, rel=1e-5)  # alpha' * (gap_i - thresh)
    total.backward()
    # d/d log alpha' of -alpha' * mean_i(gap_i - thresh) at alpha' = 1.
    grad = float(learner.log_alpha_primes["default_policy"].grad)
    assert grad == pytest.approx(-(plain / 2 - 1.0), rel=1e-5)
    state = learner.get_state()
    assert state["log_alpha_primes"] == {"default_policy": 0.0}
    assert "log_alpha_primes" not in build().get_state()


def test_an_update_steps_every_optimizer_and_restores_from_state():
    learner = build(lagrangian=True)
    results = learner.update(batch={"default_policy": dict(BATCH)})["default_policy"]
    assert {"alpha_prime_learning_rate", "cql_loss", "qf_loss", "policy_loss"} <= set(results)
    assert results["critic_learning_rate"] == results["alpha_prime_learning_rate"] == 1e-3
    log_alpha_prime = float(learner.log_alpha_primes["default_policy"].detach())
    assert log_alpha_prime != 0.0 and learner.weights_seq_no == 1
    fresh = build(lagrangian=True)
    fresh.set_state(learner.get_state())
    assert float(fresh.log_alpha_primes["default_policy"].detach()) == log_alpha_prime
    assert fresh.weights_seq_no == 1


def test_cql_refuses_discrete_actions():
    config = CQLConfig().offline_data(input_="unused")
    spec = RLModuleSpec(
        DefaultSACTorchRLModule, OBS, gym.spaces.Discrete(3), model_config={"fcnet_hiddens": [8]}
    )
    learner = CQLTorchLearner(config=config, module_spec=spec)
    with pytest.raises(
        LearnerError,
        match=r"CQL samples actions from the action bounds, but module 'default_policy' has the discrete action "
        r"space Discrete\(3\)\. Fix: use CQL with a Box action space",
    ):
        learner.build()
