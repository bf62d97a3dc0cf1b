"""TorchLearner: minibatching, gradient clipping, non-finite steps, schedules, state round trip."""

import logging

import gymnasium as gym
import numpy as np
import pytest
import torch
from torch import nn

from flywheel.algorithms.algorithm_config import AlgorithmConfig
from flywheel.columns import Columns
from flywheel.core.learner.torch_learner import TorchLearner
from flywheel.core.rl_module.rl_module import RLModule
from flywheel.core.rl_module.spec import RLModuleSpec
from flywheel.core.rl_module.torch_rl_module import TorchRLModule
from flywheel.episodes import SingleAgentEpisode
from flywheel.errors import ConfigError, LearnerError

OBS_SPACE = gym.spaces.Box(-10.0, 10.0, (2,), np.float32)
ACT_SPACE = gym.spaces.Discrete(2)


class Linear(TorchRLModule):
    """w = [1, 2], b = [3]: small enough to know every gradient."""

    def setup(self):
        self.w = nn.Parameter(torch.tensor([1.0, 2.0]))
        self.b = nn.Parameter(torch.tensor([3.0]))

    def _forward(self, batch, **kwargs):
        return {Columns.ACTION_DIST_INPUTS: (batch[Columns.OBS] * self.w).sum(-1, keepdim=True).repeat(1, 2)}


class KnownGradsLearner(TorchLearner):
    """loss = (w . [3, -4] + 12 b) * mean(reward): gradients [3, -4] and [12] (global norm 13)."""

    def compute_loss_for_module(self, *, module_id, config, batch, fwd_out):
        module = self.module[module_id]
        linear = (module.w * torch.tensor([3.0, -4.0])).sum() + 12 * module.b.sum()
        return linear * batch[Columns.REWARDS].mean()


class RegressionLearner(TorchLearner):
    """loss = mean((obs . w + b - reward)^2): depends on which rows each minibatch holds."""

    def compute_loss_for_module(self, *, module_id, config, batch, fwd_out):
        module = self.module[module_id]
        prediction = (batch[Columns.OBS] * module.w).sum(-1) + module.b
        return ((prediction - batch[Columns.REWARDS]) ** 2).mean()


def make_learner(cls=KnownGradsLearner, **training):
    config = AlgorithmConfig().training(**{"lr": 0.1, "num_epochs": 1, "minibatch_size": 128, **training})
    config.reporting(log_gradients=True).debugging(seed=0)
    learner = cls(config=config, module_spec=RLModuleSpec(Linear, OBS_SPACE, ACT_SPACE))
    learner.build()
    return learner


def episode(rewards, seed=0):
    rng = np.random.default_rng(seed)
    n = len(rewards)
    return SingleAgentEpisode(
        observations=list(rng.normal(size=(n + 1, 2)).astype(np.float32)),
        actions=[0] * n,
        rewards=list(rewards),
        len_lookback_buffer=0,
    ).to_numpy()


def weights(learner):
    return {name: value.copy() for name, value in learner.module["default_policy"].get_state().items()}


@pytest.mark.parametrize(
    ("clip", "by", "w_grad", "b_grad"),
    [
        (None, "global_norm", [3.0, -4.0], [12.0]),
        (2.0, "value", [2.0, -2.0], [2.0]),
        (6.0, "norm", [3.0, -4.0], [6.0]),  # per tensor: |w| = 5 stays, |b| = 12 -> 6
        (6.5, "global_norm", [1.5, -2.0], [6.0]),  # 13 -> 6.5: everything halved
    ],
)
def test_gradient_clipping(clip, by, w_grad, b_grad):
    learner = make_learner(grad_clip=clip, grad_clip_by=by)
    results = learner.update(episodes=[episode([1.0] * 4)])
    module = learner.module["default_policy"]
    np.testing.assert_allclose(module.w.grad.numpy(), w_grad, rtol=1e-6)
    np.testing.assert_allclose(module.b.grad.numpy(), b_grad, rtol=1e-6)
    assert results["default_policy"]["gradients_default_optimizer_global_norm"] == pytest.approx(13.0)


def test_invalid_grad_clip_by():
    with pytest.raises(
        ConfigError, match=r"grad_clip_by must be one of \['value', 'norm', 'global_norm'\], got 'max'"
    ):
        make_learner(grad_clip_by="max")


def test_update_before_build():
    learner = KnownGradsLearner(
        config=AlgorithmConfig(), module_spec=RLModuleSpec(Linear, OBS_SPACE, ACT_SPACE)
    )
    with pytest.raises(LearnerError, match=r"called before build\(\)"):
        learner.update(episodes=[episode([1.0])])


def test_non_finite_steps_are_skipped_counted_and_reported_once(caplog):
    learner = make_learner()
    before = weights(learner)
    with caplog.at_level(logging.WARNING, logger="flywheel.core.learner.torch_learner"):
        results = learner.update(episodes=[episode([1.0, np.nan, 1.0, 1.0])], num_epochs=2, minibatch_size=2)
    # 2 epochs x 2 minibatches; whichever holds the NaN reward has a NaN loss; the
    # other has finite gradients, so count exactly the poisoned minibatches.
    assert results["__all_modules__"]["num_non_finite_updates"] == 2
    assert len(caplog.records) == 1
    message = caplog.records[0].getMessage()
    assert "Non-finite loss or gradients for module(s) ['default_policy'] in update 1" in message
    assert "weights_seq_no 0" in message
    assert results["__all_modules__"]["weights_seq_no"] == 1

    learner = make_learner()
    results = learner.update(episodes=[episode([np.nan] * 4)], num_epochs=3)
    assert results["__all_modules__"]["num_non_finite_updates"] == 3
    after = weights(learner)
    assert all(np.array_equal(before[k], after[k]) for k in before)
    assert learner.get_state()["optimizer"]["default_policy_default_optimizer"]["state"]["state"] == {}


def test_minibatches_cover_every_row_per_epoch():
    seen = []

    class Recording(RegressionLearner):
        def compute_loss_for_module(self, *, module_id, config, batch, fwd_out):
            seen.append(batch[Columns.REWARDS].tolist())
            return super().compute_loss_for_module(
                module_id=module_id, config=config, batch=batch, fwd_out=fwd_out
            )

    learner = make_learner(Recording)
    rewards = [float(i) for i in range(10)]
    results = learner.update(
        episodes=[episode(rewards)], num_epochs=2, minibatch_size=4, shuffle_batch_per_epoch=False
    )
    assert seen == [[0, 1, 2, 3], [4, 5, 6], [7, 8, 9]] * 2
    assert results["default_policy"]["num_module_steps_trained"] == 20
    assert results["__all_modules__"]["num_env_steps_trained"] == 20

    seen.clear()
    learner.update(episodes=[episode(rewards)], num_epochs=2, minibatch_size=4, shuffle_batch_per_epoch=True)
    assert [len(mb) for mb in seen] == [4, 3, 3] * 2
    assert sorted(sum(seen[:3], [])) == rewards and sum(seen[:3], []) != rewards

    seen.clear()  # one minibatch of all rows: not gathered in a new order (it would change only rounding)
    learner.update(episodes=[episode(rewards)], num_epochs=2, minibatch_size=10, shuffle_batch_per_epoch=True)
    assert seen == [rewards] * 2


def test_a_single_epoch_keeps_the_sampled_order():
    """RLlib 2.60 shuffles a train batch only between epochs (`shuffle_batch_per_epoch and num_epochs >
    1` in `Learner._create_iterator_if_necessary`): one pass takes its minibatches in sampled order."""
    seen = []

    class Recording(RegressionLearner):
        def compute_loss_for_module(self, *, module_id, config, batch, fwd_out):
            seen.append(batch[Columns.REWARDS].tolist())
            return super().compute_loss_for_module(
                module_id=module_id, config=config, batch=batch, fwd_out=fwd_out
            )

    learner = make_learner(Recording)
    rewards = [float(i) for i in range(10)]
    learner.update(episodes=[episode(rewards)], num_epochs=1, minibatch_size=4, shuffle_batch_per_epoch=True)
    assert seen == [[0, 1, 2, 3], [4, 5, 6], [7, 8, 9]]


def test_weights_seq_no_and_results():
    learner = make_learner(RegressionLearner)
    assert learner.weights_seq_no == 0
    results = learner.update(episodes=[episode([1.0, 2.0])])
    assert learner.weights_seq_no == 1
    assert set(results["default_policy"]) == {
        "total_loss",
        "num_module_steps_trained",
        "gradients_default_optimizer_global_norm",
        "default_optimizer_learning_rate",
    }
    throughput = results["__all_modules__"].pop("num_env_steps_trained_lifetime_throughput")
    assert throughput > 0
    assert results["__all_modules__"] == {
        "num_env_steps_trained": 2,
        "num_env_steps_trained_lifetime": 2,  # what this update adds (the algorithm keeps the total)
        "num_non_finite_updates": 0,
        "weights_seq_no": 1,
    }
    learner.update(episodes=[episode([1.0, 2.0])])
    assert learner.weights_seq_no == 2


def test_lr_schedule_follows_sampled_env_steps():
    learner = make_learner(RegressionLearner, lr=[[0, 0.1], [100, 0.0]])
    optimizer = learner.get_optimizer("default_policy")
    results = learner.update(episodes=[episode([1.0])], timesteps={"num_env_steps_sampled_lifetime": 25})
    assert results["default_policy"]["default_optimizer_learning_rate"] == pytest.approx(0.075)
    assert optimizer.param_groups[0]["lr"] == pytest.approx(0.075)
    results = learner.update(episodes=[episode([1.0])], timesteps={"num_env_steps_sampled_lifetime": 500})
    assert results["default_policy"]["default_optimizer_learning_rate"] == 0.0


def assert_same(a, b, path="state"):
    if isinstance(a, dict):
        assert a.keys() == b.keys(), path
        for key in a:
            assert_same(a[key], b[key], f"{path}/{key}")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b)):
            assert_same(x, y, f"{path}/{i}")
    else:
        assert np.array_equal(a, b), path


def test_state_round_trip_is_exact_and_training_continues_identically():
    episodes = [episode([float(i) for i in range(12)], seed=3)]
    original = make_learner(RegressionLearner)
    for _ in range(2):
        original.update(episodes=episodes, minibatch_size=5)
    state = original.get_state()
    assert state["weights_seq_no"] == 2
    assert state["optimizer"]["default_policy_default_optimizer"]["state"]["state"][0]["exp_avg"].shape == (
        2,
    )

    restored = make_learner(RegressionLearner)
    restored.set_state(state)
    assert_same(restored.get_state(), state)

    original.update(episodes=episodes, minibatch_size=5)
    restored.update(episodes=episodes, minibatch_size=5)
    assert_same(restored.get_state(), original.get_state())
    assert set(original.get_state(components=["weights_seq_no", "timestep"])) == {
        "weights_seq_no",
        "timestep",
    }
    assert "optimizer" not in original.get_state(not_components="optimizer")


def test_weights_helpers():
    learner = make_learner(RegressionLearner)
    learner.set_weights(
        {"default_policy": {"w": np.array([5.0, 6.0], np.float32), "b": np.array([7.0], np.float32)}}
    )
    assert learner.get_weights()["default_policy"]["w"].tolist() == [5.0, 6.0]


def test_modules_not_in_policies_to_train_do_not_change():
    config = AlgorithmConfig().training(lr=0.1, num_epochs=1)
    config.multi_agent(policies={"default_policy"}, policies_to_train=[])
    learner = RegressionLearner(config=config, module_spec=RLModuleSpec(Linear, OBS_SPACE, ACT_SPACE))
    learner.build()
    before = weights(learner)
    results = learner.update(episodes=[episode([1.0, 2.0])])
    assert all(np.array_equal(before[k], weights(learner)[k]) for k in before)
    assert "default_policy" not in results
    assert learner.get_optimizers_for_module("default_policy") == []


def test_get_parameters_of_a_weightless_module_is_empty():
    class Heuristic(RLModule):
        def _forward(self, batch, **kwargs):
            return {Columns.ACTIONS: np.zeros(len(batch[Columns.OBS]), np.int64)}

    learner = KnownGradsLearner(config=AlgorithmConfig(), module=Linear(OBS_SPACE, ACT_SPACE))
    assert learner.get_parameters(Heuristic(OBS_SPACE, ACT_SPACE)) == []
    assert [p.tolist() for p in learner.get_parameters(Linear(OBS_SPACE, ACT_SPACE))] == [[1.0, 2.0], [3.0]]


class ThreadCountingLearner(KnownGradsLearner):
    """Records torch's thread count in each loss call."""

    seen: list[int] = []

    def compute_loss_for_module(self, *, module_id, config, batch, fwd_out):
        self.seen.append(torch.get_num_threads())
        return super().compute_loss_for_module(
            module_id=module_id, config=config, batch=batch, fwd_out=fwd_out
        )


@pytest.mark.parametrize("cpus", [2, 0.5])
def test_updates_run_on_num_cpus_per_learner_threads_then_restore(cpus):
    learner = make_learner(ThreadCountingLearner)
    learner.config.learners(num_cpus_per_learner=cpus)
    before = torch.get_num_threads()
    torch.set_num_threads(1)  # as a local env runner leaves it
    try:
        ThreadCountingLearner.seen = []
        learner.update(episodes=[episode([1.0] * 4)])
        assert ThreadCountingLearner.seen == [max(1, int(cpus))]
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)
