"""PPO pieces that decide how fast it learns, checked against RLlib 2.60's rules written out by hand."""

import math

import gymnasium as gym
import numpy as np
import pytest
import torch
from torch import nn

from flywheel import Columns, PPOConfig
from flywheel.algorithms.ppo.loss_stats import LossStats
from flywheel.connectors.learner.gae import compute_gae, standardize
from flywheel.core.learner.minibatches import iter_minibatches

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


def cartpole_example_module():
    """The default module of RLlib's `cartpole_ppo` example: one shared linear layer of 32 units."""
    config = PPOConfig().rl_module(
        model_config={"fcnet_hiddens": [32], "fcnet_activation": "linear", "vf_share_layers": True}
    )
    spec = config.get_rl_module_spec(env=gym.make("CartPole-v1"))
    return spec.build()


def test_default_module_initializes_every_layer_as_rllibs_catalog():
    """RLlib 2.60's PPO catalog sets no initializer on its heads (nor, by default, on the encoder), so
    each Linear keeps torch's `reset_parameters`: kaiming_uniform_(a=sqrt(5)) weights, i.e. uniform
    within gain * sqrt(3 / fan_in) with gain sqrt(2 / (1 + a^2)) = 1 / sqrt(fan_in), and biases
    uniform within 1 / sqrt(fan_in). Its seeded module reproduces layer by layer from that formula."""
    torch.manual_seed(3)
    module = cartpole_example_module()
    torch.manual_seed(3)
    expected = []
    for fan_in, fan_out in [(4, 32), (32, 2), (32, 1)]:  # encoder, pi, vf: the order they are built in
        bound = math.sqrt(2 / (1 + 5)) * math.sqrt(3 / fan_in)
        weight = torch.empty(fan_out, fan_in).uniform_(-bound, bound)
        bias = torch.empty(fan_out).uniform_(-1 / math.sqrt(fan_in), 1 / math.sqrt(fan_in))
        expected += [weight, bias]
    linears = [module.encoder[0], module.pi, module.vf]
    assert all(isinstance(layer, nn.Linear) for layer in linears) and len(list(module.parameters())) == 6
    actual = [tensor for layer in linears for tensor in (layer.weight, layer.bias)]
    for got, want in zip(actual, expected, strict=True):
        assert torch.allclose(got, want)
    # Not near-uniform (normc 0.01 gave logits within ±0.05): the initial policy already prefers actions.
    logits = module.forward_inference({Columns.OBS: torch.tensor([[0.0, 1.0, 0.2, -1.0]])})
    assert logits[Columns.ACTION_DIST_INPUTS].abs().max() > 0.05


def rllib_value_targets(values, rewards, terminateds, truncateds, gamma, lambda_):
    """RLlib 2.60's `compute_value_targets`, written out: over the chunks laid end to end, each followed
    by its extra bootstrap row, with `terminateds` / `truncateds` set on each chunk's last real step."""
    targets, running = [0.0] * len(values), 0.0
    for t in reversed(range(len(values))):
        next_value = values[t + 1] if t + 1 < len(values) else 0.0
        delta = rewards[t] + gamma * (1 - terminateds[t]) * next_value - values[t]
        running = delta + gamma * lambda_ * (1 - terminateds[t]) * (1 - truncateds[t]) * running
        targets[t] = running + values[t]
    return targets


def test_gae_bootstraps_as_rllib_at_truncation_and_termination():
    # A terminated chunk of 3 steps, then a chunk of 2 steps cut by the sampler; each with its extra row.
    values = [0.5, 1.0, -0.3, 9.0, 2.0, 0.7, 4.0]
    rewards = [1.0, 0.0, 2.0, 0.0, 1.0, -1.0, 0.0]
    terminateds = [0, 0, 1, 0, 0, 0, 0]
    truncateds = [0, 0, 0, 0, 0, 1, 0]
    is_bootstrap = np.array([0, 0, 0, 1, 0, 0, 1], dtype=bool)
    gamma, lambda_ = 0.9, 0.8
    expected = rllib_value_targets(values, rewards, terminateds, truncateds, gamma, lambda_)
    advantages, targets = compute_gae(
        np.array(rewards), np.array(values), np.array(terminateds), is_bootstrap, gamma, lambda_
    )
    real = ~is_bootstrap
    assert targets[real] == pytest.approx(np.array(expected)[real], abs=1e-6)
    assert advantages[real] == pytest.approx((np.array(expected) - np.array(values))[real], abs=1e-6)
    # By hand: the terminated chunk's last step has no bootstrap; the cut chunk's bootstraps from V = 4.0.
    assert targets[2] == pytest.approx(2.0) and targets[5] == pytest.approx(-1.0 + 0.9 * 4.0)
    # Standardized over the real rows with numpy's std (ddof 0), floored at 1e-4, as RLlib's GAE piece.
    real_advantages = advantages[real]
    by_hand = (real_advantages - real_advantages.mean()) / max(1e-4, real_advantages.std())
    assert standardize(advantages, real)[real] == pytest.approx(by_hand)
    assert standardize(np.ones(3), np.ones(3, dtype=bool)) == pytest.approx(np.zeros(3))


def test_sequence_minibatches_hold_minibatch_size_timesteps_as_rllibs_iterator():
    """RLlib's cyclic iterator slices sequence batches by `int(B * minibatch_size / sum(seq_lens))`
    sequences (`SampleBatch` counts `sum(seq_lens)` timesteps), not `minibatch_size // max_seq_len`."""
    seq_lens = np.array([2, 3, 1, 4, 2, 2, 1, 1, 3, 1])  # 10 sequences of up to 4 steps, 20 steps
    batch = {
        "default_policy": {
            Columns.SEQ_LENS: seq_lens,
            Columns.LOSS_MASK: np.arange(4)[None] < seq_lens[:, None],
            Columns.OBS: np.arange(40.0).reshape(10, 4),
        }
    }
    minibatch_size = 8
    per_minibatch = int(10 * (minibatch_size / 20))  # 4, where 8 // 4 would give 2
    minibatches = list(
        iter_minibatches(batch, 1, minibatch_size, rng=None, take_rows=lambda columns, rows: columns)
    )
    sizes = [len(mb["default_policy"][Columns.SEQ_LENS]) for mb in minibatches]
    assert per_minibatch == 4 and sizes == [4, 3, 3]  # ceil(10 / 4) = 3 near-equal parts
    assert (
        np.concatenate([mb["default_policy"][Columns.SEQ_LENS] for mb in minibatches]).tolist()
        == seq_lens.tolist()
    )
