"""PPO pieces that decide how fast it learns, checked against RLlib 2.60's rules written out by hand."""

import math

import gymnasium as gym
import pytest
import torch
from torch import nn

from flywheel import Columns, PPOConfig
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
