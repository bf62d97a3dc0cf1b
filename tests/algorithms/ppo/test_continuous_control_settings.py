"""PPO's CleanRL/SB3 settings: value clipping around the old value, advantage normalization per
minibatch, the warning for vf_clip_param clamping most value losses, Adam's epsilon."""

import logging

import numpy as np
import pytest
import torch

from flywheel import PPOConfig
from flywheel.columns import Columns
from flywheel.connectors.learner import GeneralAdvantageEstimation
from flywheel.errors import ConfigError

from .test_learner import build, loss_on, manual_terms, tiny_batch

OLD_VALUES = [1.5, 3.5, -2.1]  # V_old per row; the module's V = 2x is [2, 4, -2]


def test_vf_clip_range_takes_the_larger_of_the_clipped_and_unclipped_errors():
    learner = build(vf_clip_range=0.2, vf_clip_param=float("inf"))
    batch = {**tiny_batch(), Columns.VF_PREDS: torch.tensor(OLD_VALUES)}
    loss = loss_on(learner, batch)
    learner.log_loss_terms()
    logged = learner.metrics.reduce()["default_policy"]
    values, targets, old = np.array([2.0, 4.0, -2.0]), np.array([0.5, 3.0, 2.0]), np.array(OLD_VALUES)
    clipped = old + np.clip(values - old, -0.2, 0.2)  # [1.7, 3.7, -2.0]
    expected_vf = np.mean(np.maximum((values - targets) ** 2, (clipped - targets) ** 2))
    assert logged["vf_loss"] == pytest.approx(expected_vf, rel=1e-6)
    assert logged["vf_loss_clipped_fraction"] == 0.0  # vf_clip_param=inf clamps nothing
    expected = manual_terms(slice(None))
    total = expected["total"] - 0.5 * expected["vf_loss"] + 0.5 * expected_vf
    assert float(loss.detach()) == pytest.approx(total, rel=1e-6)


def test_clipped_values_get_no_gradient_beyond_the_range():
    learner = build(vf_clip_range=0.2, vf_clip_param=float("inf"), vf_loss_coeff=1.0)
    batch = {**tiny_batch(), Columns.VF_PREDS: torch.tensor([2.0, 4.0, -2.0]) - 1.0}  # V moved by +1
    # The targets lie beyond V: the clipped value V_old + 0.2 is further from them, its error is the
    # larger one and, clamped, has no gradient: the value head may not move past the range.
    batch[Columns.VALUE_TARGETS] = torch.tensor([10.0, 10.0, 10.0])
    learner.module["default_policy"].zero_grad()
    loss_on(learner, batch).backward()
    vf = learner.module["default_policy"].vf
    assert float(vf.weight.grad.abs().sum()) == 0.0 and float(vf.bias.grad.abs().sum()) == 0.0


def test_minibatch_advantage_normalization_standardizes_inside_the_loss():
    learner = build(advantage_normalization="minibatch")
    batch = tiny_batch()
    batch[Columns.ADVANTAGES] = torch.tensor([3.0, -1.0, 1.0])  # mean 1, unbiased std 2 -> [1, -1, 0]
    plain = tiny_batch()
    plain[Columns.ADVANTAGES] = torch.tensor([1.0, -1.0, 0.0])
    loss_on(learner, batch)
    learner.log_loss_terms()
    standardized = learner.metrics.reduce()["default_policy"]["policy_loss"]
    reference = build()
    loss_on(reference, plain)
    reference.log_loss_terms()
    assert standardized == pytest.approx(
        reference.metrics.reduce()["default_policy"]["policy_loss"], rel=1e-6
    )


def test_the_learner_pipeline_standardizes_over_the_batch_only_for_batch_normalization():
    def gae(normalization):
        config = PPOConfig().training(advantage_normalization=normalization)
        pieces = config.build_learner_connector(None, None).connectors
        (piece,) = [p for p in pieces if isinstance(p, GeneralAdvantageEstimation)]
        return piece.standardize

    assert (gae("batch"), gae("minibatch"), gae(None)) == (True, False, False)


def cartpole(**training):
    return (
        PPOConfig()
        .environment("CartPole-v1")
        .training(train_batch_size_per_learner=256, minibatch_size=64, num_epochs=1, **training)
        .debugging(seed=0)
    )


def clamp_updates(learner, targets):
    """One logged update per entry of `targets` (tiny_batch's rows, V = [2, 4, -2], against those
    value targets)."""
    for row_targets in targets:
        loss_on(learner, {**tiny_batch(), Columns.VALUE_TARGETS: torch.tensor(row_targets)})
        learner.log_loss_terms()


ALL_CLAMPED = [50.0, 60.0, -40.0]  # squared errors 2304, 3136, 1444: all above vf_clip_param=10
ONE_CLAMPED = [0.5, 3.0, 2.0]  # squared errors 2.25, 1, 16: a third clamped


def ppo_warnings(caplog):
    return [r.getMessage() for r in caplog.records if r.name == "flywheel.algorithms.ppo.learner"]


def test_vf_clip_param_clamping_most_value_losses_for_ten_updates_warns_once(caplog):
    learner = build()
    with caplog.at_level(logging.WARNING, logger="flywheel.algorithms.ppo.learner"):
        clamp_updates(learner, [ALL_CLAMPED] * 9)
        assert ppo_warnings(caplog) == []  # a new critic far from the returns: it may still catch up
        clamp_updates(learner, [ALL_CLAMPED])
        clamp_updates(learner, [ALL_CLAMPED] * 3)
    assert ppo_warnings(caplog) == [
        "PPO: more than half of the value losses of module 'default_policy' exceeded vf_clip_param=10.0 and "
        "were clamped in each of the last 10 updates (100% in the last one), which gives them no gradient: the "
        "value function is not catching up with this return scale. Fix: config.training(vf_clip_param="
        "float('inf')) (or a value above the squared value errors), and/or config.env_runners("
        "normalize_rewards=True) to shrink the returns. (Warned once; "
        "learners/default_policy/vf_loss_clipped_fraction tracks it.)"
    ]


def test_a_critic_that_catches_up_between_clamped_updates_gets_no_warning(caplog):
    learner = build()
    with caplog.at_level(logging.WARNING, logger="flywheel.algorithms.ppo.learner"):
        clamp_updates(learner, [ALL_CLAMPED] * 9 + [ONE_CLAMPED] + [ALL_CLAMPED] * 9)
    assert ppo_warnings(caplog) == []


def test_no_warning_without_clamping(caplog):
    algo = cartpole(vf_clip_param=float("inf")).build_algo()
    with caplog.at_level(logging.WARNING, logger="flywheel.algorithms.ppo.learner"):
        result = algo.train()
    algo.stop()
    assert result["learners"]["default_policy"]["vf_loss_clipped_fraction"] == 0.0
    assert not [r for r in caplog.records if r.name == "flywheel.algorithms.ppo.learner"]


def test_adam_epsilon_reaches_the_optimizer():
    def eps(config):
        (slot,) = config.build_learner().optimizer_slots()
        return slot.optimizer.param_groups[0]["eps"]

    assert (eps(cartpole(adam_epsilon=1e-5)), eps(cartpole())) == (1e-5, 1e-8)


@pytest.mark.parametrize(
    "training, message",
    [
        (
            {"vf_clip_range": 0},
            r"vf_clip_range=0 must be a number > 0 or None\. Fix: pass a number > 0 or None",
        ),
        ({"vf_clip_range": "0.2"}, r"vf_clip_range='0\.2' must be a number > 0 or None"),
        (
            {"advantage_normalization": "minibatches"},
            r"advantage_normalization='minibatches' is not None nor one of \['batch', 'minibatch'\]\. Fix: use one "
            r"of them, e\.g\. config\.training\(advantage_normalization='minibatch'\)",
        ),
        ({"advantage_normalization": True}, r"advantage_normalization=True is not None nor one of"),
        (
            {"adam_epsilon": 0.0},
            r"adam_epsilon=0\.0 must be a number > 0\. Fix: pass a number > 0 to config\.training",
        ),
    ],
)
def test_bad_values_are_rejected(training, message):
    with pytest.raises(ConfigError, match=r"- " + message):
        cartpole(**training).validate()
