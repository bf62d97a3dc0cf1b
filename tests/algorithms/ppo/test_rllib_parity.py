"""PPO pieces that decide how fast it learns, checked against RLlib 2.60's rules written out by hand."""

import pytest
import torch

from flywheel.algorithms.ppo.loss_stats import LossStats

from .test_learner import build, one_step_episodes


def kls_per_minibatch(monkeypatch, kl_target):
    """One update of the tiny bandit learner; the mean KL of each of its minibatches and the result."""
    seen = []
    add = LossStats.add

    def recording_add(self, module_id, **terms):
        seen.append(float(terms["mean_kl"].detach()))
        add(self, module_id, **terms)

    monkeypatch.setattr(LossStats, "add", recording_add)
    learner = build(kl_target=kl_target, kl_coeff=0.2, lr=0.05, num_epochs=3, minibatch_size=8)
    torch.manual_seed(0)
    results = learner.update(episodes=one_step_episodes(learner.module["default_policy"], 16))
    monkeypatch.undo()
    return seen, results["default_policy"]


def test_kl_coeff_adapts_to_the_last_minibatch_kl_as_rllib(monkeypatch):
    """RLlib's PPOLearner adapts to `metrics.peek(KL)`, logged with window=1: the last minibatch's KL."""
    kls, _ = kls_per_minibatch(monkeypatch, kl_target=1.0)
    assert len(kls) == 6  # 3 epochs x 2 minibatches of 8
    mean_kl, last_kl = sum(kls) / len(kls), kls[-1]
    assert last_kl > 1.5 * mean_kl  # the policy moves away from the sampling policy during the update
    # A target between the two: RLlib's rule (x1.5 when the KL exceeds 2 x target) fires on the last
    # minibatch's KL; on the mean over minibatches it would leave the coefficient alone.
    target = (mean_kl + last_kl) / 4
    assert last_kl > 2 * target and 0.5 * target < mean_kl < 2 * target
    kls_again, stats = kls_per_minibatch(monkeypatch, kl_target=target)
    assert kls_again == pytest.approx(kls)
    assert stats["curr_kl_coeff"] == pytest.approx(0.2 * 1.5)
    assert stats["mean_kl_loss"] == pytest.approx(mean_kl)  # logged: the mean over minibatches
