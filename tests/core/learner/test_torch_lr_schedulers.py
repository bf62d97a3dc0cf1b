"""`config.experimental(_torch_lr_scheduler_classes=...)`: torch lr schedulers over each optimizer, stepped
once after every learner update (RLlib 2.60's TorchLearner rule), saved in the learner state, and the
setup of RLlib's `learners/ppo_with_torch_lr_schedulers.py` example."""

import functools

import gymnasium as gym
import pytest
import torch
from torch.optim.lr_scheduler import ConstantLR, ExponentialLR, StepLR

from flywheel import PPOConfig, SingleAgentEnvRunner
from flywheel.core.learner.optimizers import DEFAULT_OPTIMIZER
from flywheel.errors import ConfigError
from flywheel.typing import DEFAULT_MODULE_ID

ENV = gym.make("CartPole-v1")


def config(schedulers, lr=0.01):
    return (
        PPOConfig()
        .environment("CartPole-v1")
        .training(lr=lr, train_batch_size=64, minibatch_size=16, num_epochs=2)
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .experimental(_torch_lr_scheduler_classes=schedulers)
        .debugging(seed=0)
    )


def lr_of(learner):
    return learner.get_optimizer(DEFAULT_MODULE_ID, DEFAULT_OPTIMIZER).param_groups[0]["lr"]


@pytest.fixture(scope="module")
def episodes():
    runner = SingleAgentEnvRunner(config=config(None))
    sampled = runner.sample(num_timesteps=64)
    runner.stop()
    return sampled


def test_step_lr_halves_the_lr_every_second_update_not_every_minibatch(episodes):
    learner = config([functools.partial(StepLR, step_size=2, gamma=0.5)]).build_learner(env=ENV)
    seen = [lr_of(learner)]
    for _ in range(5):
        results = learner.update(episodes=episodes)  # 2 epochs x 4 minibatches each
        seen.append(lr_of(learner))
    assert seen == pytest.approx([0.01, 0.01, 0.005, 0.005, 0.0025, 0.0025])
    # The logged lr is the one the update trained with (before the step that follows it).
    assert results[DEFAULT_MODULE_ID]["default_optimizer_learning_rate"] == pytest.approx(0.0025)


def test_per_module_dict_and_a_module_it_does_not_name(episodes):
    env = ENV
    named = config(
        {DEFAULT_MODULE_ID: [functools.partial(ConstantLR, factor=0.1, total_iters=2)]}
    ).build_learner(env=env)
    unnamed = config(
        {"other_module": [functools.partial(ConstantLR, factor=0.1, total_iters=2)]}
    ).build_learner(env=env)
    seen = {"named": [lr_of(named)], "unnamed": [lr_of(unnamed)]}
    for _ in range(3):
        named.update(episodes=episodes)
        unnamed.update(episodes=episodes)
        seen["named"].append(lr_of(named))
        seen["unnamed"].append(lr_of(unnamed))
    assert seen["named"] == pytest.approx([0.001, 0.001, 0.01, 0.01])
    assert seen["unnamed"] == pytest.approx([0.01] * 4)


def test_scheduler_state_is_part_of_the_learner_state(episodes):
    env = ENV
    make = config([functools.partial(StepLR, step_size=2, gamma=0.5)])
    first = make.build_learner(env=env)
    for _ in range(3):
        first.update(episodes=episodes)
    state = first.get_state()
    assert state["lr_schedulers"]["default_policy_default_optimizer"][0]["last_epoch"] == 3
    second = make.build_learner(env=env)
    second.set_state(state)
    assert lr_of(second) == pytest.approx(0.005)
    first.update(episodes=episodes)
    second.update(episodes=episodes)
    assert lr_of(first) == lr_of(second) == pytest.approx(0.0025)
    assert "lr_schedulers" not in config(None).build_learner(env=env).get_state()


def test_rllibs_example_setup_constant_then_exponential_per_training_iteration():
    """RLlib's `ppo_with_torch_lr_schedulers.py`: the example's own LRChecker arithmetic, per iteration."""
    factor, total_iters, gamma = 0.9, 3, 0.99
    algo = config(
        [
            functools.partial(torch.optim.lr_scheduler.ConstantLR, factor=factor, total_iters=total_iters),
            functools.partial(ExponentialLR, gamma=gamma),
        ],
        lr=0.03,
    ).build_algo()
    try:
        for iteration in range(1, total_iters + 2):
            algo.train()
            expected = 0.03 * (factor if iteration < total_iters else 1.0) * gamma**iteration
            actual = algo.learner_group._learner.get_optimizer(DEFAULT_MODULE_ID, DEFAULT_OPTIMIZER)
            assert actual.param_groups[0]["lr"] == pytest.approx(expected, rel=1e-9, abs=1e-9)
        assert algo.config._torch_lr_scheduler_classes[0].keywords["factor"] == factor
    finally:
        algo.stop()


def test_lr_schedule_with_schedulers_and_bad_classes_are_refused():
    with pytest.raises(ConfigError) as caught:
        config([functools.partial(StepLR, step_size=2)], lr=[[0, 0.01], [1000, 0.001]]).validate()
    assert str(caught.value).splitlines()[1] == (
        "- lr=[[0, 0.01], [1000, 0.001]] is a schedule, and _torch_lr_scheduler_classes also sets the learning "
        "rate (RLlib 2.60 then ignores the schedule after its first value). Fix: pass a number as lr (the "
        "schedulers' starting value), or drop _torch_lr_scheduler_classes."
    )
    with pytest.raises(ConfigError, match=r"- _torch_lr_scheduler_classes=\[1\] is not a list of callables"):
        config([1]).validate()
