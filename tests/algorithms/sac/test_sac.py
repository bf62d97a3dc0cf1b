"""SAC (the algorithm): the off-policy loop on Pendulum (normalized actions) and on CartPole (discrete
actions), checkpoints, and action spaces refused."""

import math

import gymnasium as gym
import numpy as np
import pytest
import torch

from flywheel import Algorithm, Columns, ConnectorV2, SACConfig
from flywheel.algorithms.dqn import DQN
from flywheel.algorithms.off_policy import OffPolicyAlgorithm
from flywheel.algorithms.sac import SAC
from flywheel.errors import ModuleError
from flywheel.testing.envs import CountingEnv


def test_sac_learns_from_replay_and_acts_in_the_env_bounds():
    config = (
        SACConfig()
        .environment("Pendulum-v1")
        .env_runners(num_envs_per_env_runner=2)
        .training(num_steps_sampled_before_learning_starts=64, train_batch_size_per_learner=32)
        .rl_module(model_config={"fcnet_hiddens": [16]})
        .reporting(min_sample_timesteps_per_iteration=80)
        .debugging(seed=0)
    )
    sent = []
    config.env_runners(module_to_env_connector=lambda env, spaces: RecordActions(sink=sent))
    algo = config.build_algo()
    try:
        assert isinstance(algo, SAC) and isinstance(algo, OffPolicyAlgorithm) and not isinstance(algo, DQN)
        result = algo.train()
        stored = np.concatenate([e.get_actions() for e in algo.env_runner.sample(num_timesteps=20)])
    finally:
        algo.stop()
    assert result["num_env_steps_sampled_lifetime"] == 80  # 40 training steps of 2 sub-envs
    learner = result["learners"]["default_policy"]
    assert {"qf_loss", "policy_loss", "alpha_loss", "alpha_value", "entropy"} <= set(learner)
    assert algo.learner_group.weights_seq_no == 9  # one update per training step from 64 env steps on
    assert np.abs(stored).max() <= 1.0  # episodes keep the policy's [-1, 1] actions
    to_env = np.concatenate(sent)
    assert np.abs(to_env).max() <= 2.0 and np.abs(to_env).max() > 1.0  # unsquashed to Pendulum's [-2, 2]


def test_checkpoint_restores_alpha_and_the_critics(tmp_path):
    config = (
        SACConfig()
        .environment("Pendulum-v1")
        .training(num_steps_sampled_before_learning_starts=8, train_batch_size_per_learner=8)
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .reporting(min_sample_timesteps_per_iteration=0)
        .debugging(seed=0)
    )
    algo = config.build_algo()
    try:
        for _ in range(12):
            algo.training_step()
        path = algo.save_to_path(tmp_path / "ckpt")
        state = algo.learner_group.get_state()["learner"]
    finally:
        algo.stop()
    restored = Algorithm.from_checkpoint(path)
    try:
        restored_state = restored.learner_group.get_state()["learner"]
    finally:
        restored.stop()
    assert (
        restored_state["log_alphas"] == state["log_alphas"] != {"default_policy": 0.0}
    )  # 5 updates moved it
    for name, weights in state["rl_module"]["default_policy"].items():
        np.testing.assert_array_equal(restored_state["rl_module"]["default_policy"][name], weights)
    assert restored_state["weights_seq_no"] == 5


def discrete_config():
    return (
        SACConfig()
        .environment("CartPole-v1")
        .env_runners(num_envs_per_env_runner=2)
        .training(num_steps_sampled_before_learning_starts=64, train_batch_size_per_learner=32)
        .rl_module(model_config={"fcnet_hiddens": [16]})
        .reporting(min_sample_timesteps_per_iteration=80)
        .debugging(seed=0)
    )


def test_discrete_sac_trains_and_samples_from_the_categorical():
    algo = discrete_config().build_algo()
    try:
        result = algo.train()
        module = algo.env_runner.module
        with torch.no_grad():
            module.pi.weight.zero_()  # logits [0, 0]: a uniform policy
            module.pi.bias.zero_()
        explored = np.concatenate([e.get_actions() for e in algo.env_runner.sample(num_timesteps=400)])
        greedy = np.concatenate(
            [e.get_actions() for e in algo.env_runner.sample(num_timesteps=100, explore=False)]
        )
    finally:
        algo.stop()
    assert result["num_env_steps_sampled_lifetime"] == 80
    learner = result["learners"]["default_policy"]
    assert {"qf_loss", "policy_loss", "alpha_loss", "alpha_value", "entropy"} <= set(learner)
    assert 0.0 < learner["entropy"] <= math.log(2)  # an exact Categorical entropy
    assert algo.learner_group.weights_seq_no == 9  # one update per training step from 64 env steps on
    assert explored.dtype.kind == "i" and sorted(set(explored.tolist())) == [0, 1]
    assert 150 < explored.sum() < 250  # about half of 400 samples from the uniform policy
    assert greedy.tolist() == [0] * 100  # explore=False: argmax, the first of two equal logits


def test_discrete_checkpoint_round_trip(tmp_path):
    config = discrete_config().training(
        num_steps_sampled_before_learning_starts=8, train_batch_size_per_learner=8
    )
    algo = config.build_algo()
    try:
        for _ in range(12):
            algo.training_step()
        path = algo.save_to_path(tmp_path / "ckpt")
        state = algo.learner_group.get_state()["learner"]
        obs = torch.randn(4, 4)
        logits = algo.env_runner.module.forward_inference({Columns.OBS: obs})[Columns.ACTION_DIST_INPUTS]
    finally:
        algo.stop()
    restored = Algorithm.from_checkpoint(path)
    try:
        restored_state = restored.learner_group.get_state()["learner"]
        module = restored.env_runner.module
        restored_logits = module.forward_inference({Columns.OBS: obs})[Columns.ACTION_DIST_INPUTS]
        learner = restored.learner_group.foreach_learner(lambda learner: learner)[0]
    finally:
        restored.stop()
    assert restored_state["log_alphas"] == state["log_alphas"] != {"default_policy": 0.0}
    assert sorted(restored_state["rl_module"]["default_policy"]) == sorted(
        state["rl_module"]["default_policy"]
    )
    for name, weights in state["rl_module"]["default_policy"].items():
        np.testing.assert_array_equal(restored_state["rl_module"]["default_policy"][name], weights)
    torch.testing.assert_close(restored_logits, logits, rtol=0, atol=0)
    assert module.discrete and learner.discrete == {"default_policy": True}
    assert learner.target_entropies == {"default_policy": pytest.approx(0.5 * math.log(2))}


class MultiDiscreteEnv(CountingEnv):
    def __init__(self, config=None):
        super().__init__(config)
        self.action_space = gym.spaces.MultiDiscrete([2, 3])


def test_actions_neither_box_nor_discrete_fail_at_build():
    with pytest.raises(
        ModuleError,
        match=r"The default SAC module needs a 1-D Box or a Discrete action space, got MultiDiscrete\(\[2 3\]\)",
    ):
        SACConfig().environment(MultiDiscreteEnv).build_algo()


class RecordActions(ConnectorV2):
    """Module-to-env piece that records the actions sent to the env."""

    def __init__(self, input_observation_space=None, input_action_space=None, *, sink, **kwargs):
        super().__init__(input_observation_space, input_action_space, **kwargs)
        self.sink = sink

    def __call__(self, *, rl_module, batch, episodes, **kwargs):
        self.sink.append(np.array(batch[Columns.ACTIONS_FOR_ENV]))
        return batch
