"""SAC (the algorithm): the off-policy loop on Pendulum, normalized actions, and discrete actions refused."""

import numpy as np
import pytest

from flywheel import Algorithm, Columns, ConnectorV2, SACConfig
from flywheel.algorithms.dqn import DQN
from flywheel.algorithms.sac import SAC
from flywheel.errors import ModuleError


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
        assert isinstance(algo, SAC) and isinstance(algo, DQN)
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


def test_discrete_actions_fail_at_build():
    with pytest.raises(
        ModuleError, match=r"SAC here supports continuous actions only: .* got Discrete\(2\). Fix: use DQN"
    ):
        SACConfig().environment("CartPole-v1").build_algo()


class RecordActions(ConnectorV2):
    """Module-to-env piece that records the actions sent to the env."""

    def __init__(self, input_observation_space=None, input_action_space=None, *, sink, **kwargs):
        super().__init__(input_observation_space, input_action_space, **kwargs)
        self.sink = sink

    def __call__(self, *, rl_module, batch, episodes, **kwargs):
        self.sink.append(np.array(batch[Columns.ACTIONS_FOR_ENV]))
        return batch
