"""PPOTorchLearner: loss terms by hand, KL adaptation, entropy schedule, and a bandit that it learns."""

import math

import gymnasium as gym
import numpy as np
import pytest
import torch
from torch import nn

from flywheel.algorithms.ppo.config import PPOConfig
from flywheel.algorithms.ppo.learner import PPOTorchLearner
from flywheel.columns import Columns
from flywheel.core.rl_module.apis import ValueFunctionAPI
from flywheel.core.rl_module.spec import RLModuleSpec
from flywheel.core.rl_module.torch_rl_module import TorchRLModule
from flywheel.episodes import SingleAgentEpisode
from flywheel.errors import LearnerError

OBS_SPACE = gym.spaces.Box(-5.0, 5.0, (1,), np.float32)
ACT_SPACE = gym.spaces.Discrete(2)


class TinyActorCritic(TorchRLModule, ValueFunctionAPI):
    """logits = [0.5 x, -0.5 x + 0.1], V = 2 x."""

    def setup(self):
        self.pi = nn.Linear(1, 2)
        self.vf = nn.Linear(1, 1)
        with torch.no_grad():
            self.pi.weight.copy_(torch.tensor([[0.5], [-0.5]]))
            self.pi.bias.copy_(torch.tensor([0.0, 0.1]))
            self.vf.weight.fill_(2.0)
            self.vf.bias.fill_(0.0)

    def _forward(self, batch, **kwargs):
        return {Columns.ACTION_DIST_INPUTS: self.pi(batch[Columns.OBS])}

    def compute_values(self, batch, embeddings=None):
        return self.vf(batch[Columns.OBS]).squeeze(-1)


def build(module_class=TinyActorCritic, **training):
    settings = {
        "clip_param": 0.2,
        "vf_clip_param": 10.0,
        "vf_loss_coeff": 0.5,
        "entropy_coeff": 0.01,
        "use_kl_loss": True,
        "kl_coeff": 0.3,
        **training,
    }
    config = PPOConfig().training(**settings).reporting(log_gradients=True).debugging(seed=0)
    learner = PPOTorchLearner(config=config, module_spec=RLModuleSpec(module_class, OBS_SPACE, ACT_SPACE))
    learner.build()
    return learner


def tiny_batch():
    return {
        Columns.OBS: torch.tensor([[1.0], [2.0], [-1.0]]),
        Columns.ACTIONS: torch.tensor([0, 1, 1]),
        Columns.ACTION_LOGP: torch.log(torch.tensor([0.5, 0.4, 0.7])),
        Columns.ACTION_DIST_INPUTS: torch.zeros(3, 2),
        Columns.ADVANTAGES: torch.tensor([1.0, -1.0, 0.5]),
        Columns.VALUE_TARGETS: torch.tensor([0.5, 3.0, 2.0]),
    }


def loss_on(learner, batch):
    """The learner's PPO loss on `batch` for the default module (its terms kept for logging)."""
    return learner.compute_loss_for_module(
        module_id="default_policy",
        config=learner.config,
        batch=batch,
        fwd_out=learner.module["default_policy"].forward_train(batch),
    )


def manual_terms(rows):
    """The PPO terms written out with numpy for the rows of tiny_batch() in `rows`."""
    x = np.array([1.0, 2.0, -1.0])[rows]
    logits = np.stack([0.5 * x, -0.5 * x + 0.1], -1)
    log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    actions = np.array([0, 1, 1])[rows]
    ratio = np.exp(log_probs[np.arange(len(x)), actions] - np.log([0.5, 0.4, 0.7])[rows])
    adv = np.array([1.0, -1.0, 0.5])[rows]
    policy_loss = -np.mean(np.minimum(ratio * adv, np.clip(ratio, 0.8, 1.2) * adv))
    vf_unclipped = (2 * x - np.array([0.5, 3.0, 2.0])[rows]) ** 2
    vf_loss = np.mean(np.minimum(vf_unclipped, 10.0))
    probs = np.exp(log_probs)
    entropy = np.mean(-(probs * log_probs).sum(-1))
    kl = np.mean((0.5 * (np.log(0.5) - log_probs)).sum(-1))  # KL(old uniform || new)
    total = policy_loss + 0.5 * vf_loss - 0.01 * entropy + 0.3 * kl
    return {
        "policy_loss": policy_loss,
        "vf_loss": vf_loss,
        "vf_loss_unclipped": np.mean(vf_unclipped),
        "entropy": entropy,
        "mean_kl_loss": kl,
        "total": total,
    }


@pytest.mark.parametrize("mask", [None, [True, True, False]])
def test_loss_terms_match_a_manual_computation(mask):
    learner = build()
    batch = tiny_batch()
    rows = slice(None) if mask is None else np.array(mask)
    if mask is not None:
        batch[Columns.LOSS_MASK] = torch.tensor(mask)
    loss = loss_on(learner, batch)
    expected = manual_terms(rows)
    learner.log_loss_terms()
    logged = learner.metrics.reduce()["default_policy"]
    assert float(loss.detach()) == pytest.approx(expected.pop("total"), rel=1e-6)
    for key, value in expected.items():
        assert logged[key] == pytest.approx(value, rel=1e-6), key
    # The clipped value loss really clipped: row 3's squared error is 16.
    assert (logged["vf_loss"] < logged["vf_loss_unclipped"]) == (mask is None)


def test_logged_terms_are_means_over_minibatches_of_unequal_sizes():
    # Minibatches of 3, 2 and 3 rows: each logged term is the mean of the three per-minibatch terms
    # (the two 3-row minibatches are reduced together, the 2-row one on its own).
    learner = build()
    for rows in (slice(None), slice(0, 2), slice(None)):
        batch = {column: value[rows] for column, value in tiny_batch().items()}
        loss_on(learner, batch)
    learner.log_loss_terms()
    logged = learner.metrics.reduce()["default_policy"]
    full, first_two = manual_terms(slice(None)), manual_terms(slice(0, 2))
    for key in ("policy_loss", "vf_loss", "vf_loss_unclipped", "entropy", "mean_kl_loss"):
        assert logged[key] == pytest.approx((2 * full[key] + first_two[key]) / 3, rel=1e-6), key
    targets = np.array([0.5, 3.0, 2.0])
    values = 2 * np.array([1.0, 2.0, -1.0])

    def explained(rows):
        return max(-1.0, 1 - np.var(targets[rows] - values[rows]) / np.var(targets[rows]))

    assert logged["vf_explained_var"] == pytest.approx(
        (2 * explained(slice(None)) + explained(slice(0, 2))) / 3
    )


def test_zero_entropy_and_kl_coefficients_leave_their_terms_out_of_the_loss_but_still_log_them():
    learner = build(entropy_coeff=0.0, use_kl_loss=False)
    batch = tiny_batch()
    loss = loss_on(learner, batch)
    expected = manual_terms(slice(None))
    assert float(loss.detach()) == pytest.approx(
        expected["policy_loss"] + 0.5 * expected["vf_loss"], rel=1e-6
    )
    learner.log_loss_terms()
    logged = learner.metrics.reduce()["default_policy"]
    assert logged["entropy"] == pytest.approx(expected["entropy"], rel=1e-6)
    assert logged["mean_kl_loss"] == 0.0
    # The entropy is not part of the graph (backward is most of a minibatch's cost): a tiny nonzero
    # coefficient adds its nodes.
    with_entropy = build(entropy_coeff=1e-12, use_kl_loss=False)
    loss_with_entropy = loss_on(with_entropy, batch)
    assert graph_size(loss_with_entropy) - graph_size(loss) == 7


def graph_size(tensor):
    """The number of autograd nodes `tensor.backward()` would visit."""
    seen, stack = set(), [tensor.grad_fn]
    while stack:
        node = stack.pop()
        if node is not None and node not in seen:
            seen.add(node)
            stack.extend(next_node for next_node, _ in node.next_functions)
    return len(seen)


def test_explained_variance_is_zero_for_constant_targets_and_floored_at_minus_one():
    learner = build()
    batch = tiny_batch()
    for targets in ([1.0, 1.0, 1.0], [0.0, 0.1, -0.1]):
        batch[Columns.VALUE_TARGETS] = torch.tensor(targets)
        loss_on(learner, batch)
        learner.log_loss_terms()
        assert learner.metrics.reduce()["default_policy"]["vf_explained_var"] == (0.0 if targets[0] else -1.0)


def test_explained_variance_is_logged():
    learner = build()
    batch = tiny_batch()
    batch[Columns.VALUE_TARGETS] = torch.tensor([2.0, 4.0, -2.0]) + torch.tensor([0.1, -0.1, 0.0])
    loss_on(learner, batch)
    targets = np.array([2.1, 3.9, -2.0])
    expected = 1 - np.var(targets - [2.0, 4.0, -2.0]) / np.var(targets)
    learner.log_loss_terms()
    assert learner.metrics.reduce()["default_policy"]["vf_explained_var"] == pytest.approx(expected, rel=1e-5)


def one_step_episodes(module, n):
    """A two-armed bandit: one step per episode, reward 1 for action 1."""
    obs = torch.zeros((n, 1))
    logits = module.forward_exploration({Columns.OBS: obs})[Columns.ACTION_DIST_INPUTS]
    dist = module.get_exploration_action_dist_cls().from_logits(logits)
    actions = dist.sample()
    logp = dist.logp(actions)
    return [
        SingleAgentEpisode(
            observations=[np.zeros(1, np.float32)] * 2,
            actions=[int(actions[i])],
            rewards=[float(actions[i] == 1)],
            extra_model_outputs={
                Columns.ACTION_LOGP: [float(logp[i])],
                Columns.ACTION_DIST_INPUTS: [logits[i].numpy()],
            },
            terminated=True,
            len_lookback_buffer=0,
        ).to_numpy()
        for i in range(n)
    ]


def prob_of_action_1(module):
    logits = module.forward_inference({Columns.OBS: torch.zeros((1, 1))})[Columns.ACTION_DIST_INPUTS]
    return float(torch.softmax(logits, -1)[0, 1])


@pytest.mark.learning
def test_ppo_learns_a_bandit():
    torch.manual_seed(0)
    config = (
        PPOConfig()
        .training(lr=0.01, num_epochs=4, minibatch_size=32, clip_param=0.2, use_kl_loss=False, lambda_=0.95)
        .rl_module(model_config={"fcnet_hiddens": [16]})
        .debugging(seed=0)
    )
    learner = PPOTorchLearner(config=config, spaces=(OBS_SPACE, ACT_SPACE))
    learner.build()
    module = learner.module["default_policy"]
    # torch's default initialization of the policy output (RLlib's) starts this seed at 0.25.
    assert prob_of_action_1(module) == pytest.approx(0.248, abs=0.01)
    for _ in range(10):
        results = learner.update(episodes=one_step_episodes(module, 64))
    assert prob_of_action_1(module) > 0.95
    assert results["__all_modules__"]["weights_seq_no"] == 10


@pytest.mark.parametrize(("kl_target", "expected_coeff"), [(1e-12, 0.45), (100.0, 0.15)])
def test_kl_coeff_adapts_after_each_update(kl_target, expected_coeff):
    learner = build(kl_target=kl_target, lr=0.05, num_epochs=3, minibatch_size=8)
    torch.manual_seed(0)
    results = learner.update(episodes=one_step_episodes(learner.module["default_policy"], 16))
    assert results["default_policy"]["mean_kl_loss"] > 0.0
    assert results["default_policy"]["curr_kl_coeff"] == pytest.approx(expected_coeff)
    assert learner.get_state()["curr_kl_coeffs"] == {"default_policy": pytest.approx(expected_coeff)}

    restored = build(kl_target=kl_target)
    restored.set_state(learner.get_state())
    assert restored.curr_kl_coeffs["default_policy"] == pytest.approx(expected_coeff)


def test_without_kl_loss_the_kl_term_and_coeff_stay():
    learner = build(use_kl_loss=False, num_epochs=2, minibatch_size=8)
    torch.manual_seed(0)
    results = learner.update(episodes=one_step_episodes(learner.module["default_policy"], 16))
    assert results["default_policy"]["mean_kl_loss"] == 0.0
    assert results["default_policy"]["curr_kl_coeff"] == 0.3


def test_entropy_coeff_schedule():
    learner = build(entropy_coeff=[[0, 0.1], [100, 0.0]], minibatch_size=8)
    torch.manual_seed(0)
    episodes = one_step_episodes(learner.module["default_policy"], 8)
    results = learner.update(episodes=episodes, timesteps={"num_env_steps_sampled_lifetime": 50})
    assert results["default_policy"]["curr_entropy_coeff"] == pytest.approx(0.05)
    results = learner.update(episodes=episodes, timesteps={"num_env_steps_sampled_lifetime": 200})
    assert results["default_policy"]["curr_entropy_coeff"] == 0.0


def test_a_module_without_value_function_is_refused():
    class PolicyOnly(TorchRLModule):
        def setup(self):
            self.pi = nn.Linear(1, 2)

        def _forward(self, batch, **kwargs):
            return {Columns.ACTION_DIST_INPUTS: self.pi(batch[Columns.OBS])}

    with pytest.raises(
        LearnerError, match=r"PPO needs a value function, but module 'default_policy' \(PolicyOnly\)"
    ):
        build(PolicyOnly)


def test_update_gives_the_episodes_back_as_sampled_and_counts_their_steps():
    """The pipeline extends each chunk by its bootstrap timestep in place, as RLlib's does; the
    learner takes it off again, so the caller's episodes (and the env steps trained) are as sampled."""
    learner = build(minibatch_size=8, num_epochs=1)
    episodes = one_step_episodes(learner.module["default_policy"], 8)
    rewards = [e.get_rewards().tolist() for e in episodes]
    results = learner.update(episodes=episodes)
    assert [len(e) for e in episodes] == [1] * 8
    assert [e.get_rewards().tolist() for e in episodes] == rewards
    assert [len(e.get_observations()) for e in episodes] == [2] * 8
    assert not any(e.is_truncated for e in episodes)
    assert results["__all_modules__"]["num_env_steps_trained"] == 8
    assert results["default_policy"]["num_module_steps_trained"] == 8


def test_result_keys():
    learner = build(minibatch_size=8)
    torch.manual_seed(0)
    results = learner.update(episodes=one_step_episodes(learner.module["default_policy"], 8))
    assert set(results["default_policy"]) == {
        "total_loss",
        "policy_loss",
        "vf_loss",
        "vf_loss_unclipped",
        "vf_loss_clipped_fraction",
        "vf_explained_var",
        "entropy",
        "mean_kl_loss",
        "curr_kl_coeff",
        "curr_entropy_coeff",
        "default_optimizer_learning_rate",
        "gradients_default_optimizer_global_norm",
        "num_module_steps_trained",
    }
    assert all(isinstance(v, (int, float)) and math.isfinite(v) for v in results["default_policy"].values())


def test_recurrent_module_trains_on_minibatches_of_whole_sequences():
    shapes = []

    class Recording(PPOTorchLearner):
        def compute_loss_for_module(self, *, module_id, config, batch, fwd_out):
            shapes.append((tuple(batch[Columns.OBS].shape), batch[Columns.SEQ_LENS].tolist()))
            return super().compute_loss_for_module(
                module_id=module_id, config=config, batch=batch, fwd_out=fwd_out
            )

    config = (
        PPOConfig()
        .training(num_epochs=1, minibatch_size=8, shuffle_batch_per_epoch=False)
        .rl_module(
            model_config={"use_lstm": True, "lstm_cell_size": 4, "max_seq_len": 4, "fcnet_hiddens": [8]}
        )
    )
    learner = Recording(config=config, spaces=(gym.spaces.Box(-1.0, 1.0, (3,), np.float32), ACT_SPACE))
    learner.build()
    state = {"h": np.zeros(4, np.float32), "c": np.zeros(4, np.float32)}
    episode = SingleAgentEpisode(
        observations=[np.full(3, 0.1 * t, np.float32) for t in range(10)],
        actions=[1] * 9,
        rewards=[1.0] * 9,
        extra_model_outputs={
            Columns.ACTION_LOGP: [np.log(0.5)] * 9,
            Columns.ACTION_DIST_INPUTS: [np.zeros(2, np.float32)] * 9,
            Columns.STATE_OUT: [state] * 9,
        },
        terminated=True,
        len_lookback_buffer=0,
    ).to_numpy()
    results = learner.update(episodes=[episode])
    # 9 steps + 1 bootstrap row = 10 rows -> sequences of 4, 4, 2; 8 // 4 = 2 sequences per minibatch.
    assert shapes == [((2, 4, 3), [4, 4]), ((1, 4, 3), [2])]
    assert results["default_policy"]["num_module_steps_trained"] == 9
