"""IQLConfig and IQL: RLlib 2.60's names and defaults, the problems validate() reports, training from
recorded Pendulum (Box) and CartPole (Discrete) transitions with evaluation on env runners, a
checkpoint round trip, and fine-tuning online with SAC afterwards."""

import math

import gymnasium as gym
import numpy as np
import pytest
import torch

import flywheel
from flywheel import IQL, Columns, DQNConfig, RLModuleSpec, SACConfig, SingleAgentEnvRunner
from flywheel.algorithms.iql import DefaultIQLTorchRLModule, IQLConfig
from flywheel.algorithms.registry import config_class
from flywheel.algorithms.sac.rl_module import DefaultSACTorchRLModule
from flywheel.errors import ConfigError

MODULE = "learner_group/learner/rl_module/default_policy"

IQL_DEFAULTS = {
    "beta": 0.1,
    "expectile": 0.8,
    "actor_lr": 3e-4,
    "critic_lr": 3e-4,
    "value_lr": 3e-4,
    "lr": None,
    "twin_q": True,
    "tau": 1.0,
    "target_network_update_freq": 0,
    "train_batch_size": 2000,
    "minibatch_size": None,
    "rollout_fragment_length": 200,
    "min_sample_timesteps_per_iteration": 0,
}


def record(tmp_path_factory, name, config, num_episodes):
    folder = tmp_path_factory.mktemp(name)
    runner = SingleAgentEnvRunner(
        config=config.offline_data(
            output=str(folder), output_write_episodes=False, output_max_rows_per_file=500
        )
    )
    runner.sample(num_episodes=num_episodes)
    runner.stop()
    return folder


@pytest.fixture(scope="module")
def pendulum_data(tmp_path_factory):
    """400 Pendulum steps of an untrained SAC policy (two episodes, one row per step)."""
    return record(tmp_path_factory, "pendulum", SACConfig().environment("Pendulum-v1").debugging(seed=0), 2)


@pytest.fixture(scope="module")
def cartpole_data(tmp_path_factory):
    """Ten CartPole episodes of an untrained DQN policy."""
    return record(tmp_path_factory, "cartpole", DQNConfig().environment("CartPole-v1").debugging(seed=0), 10)


def iql_config(folder, env="Pendulum-v1", **training):
    return (
        IQLConfig()
        .environment(env)
        .offline_data(input_=str(folder), dataset_num_iters_per_learner=2)
        .training(train_batch_size_per_learner=64, **training)
        .rl_module(model_config={"fcnet_hiddens": [32, 32]})
        .debugging(seed=0)
    )


def test_rllib_names_and_defaults():
    config = IQLConfig()
    assert {name: getattr(config, name) for name in IQL_DEFAULTS} == IQL_DEFAULTS
    assert config.algo_class is IQL
    assert (flywheel.IQLConfig, flywheel.IQL, config_class("IQL")) == (IQLConfig, IQL, IQLConfig)
    assert config.get_default_rl_module_spec().module_class is DefaultIQLTorchRLModule
    config = config.training(beta=3.0, expectile=0.7, value_lr=1e-3, tau=0.005, twin_q=False)
    assert (config.beta, config.expectile, config.value_lr, config.tau, config.twin_q) == (
        3.0,
        0.7,
        1e-3,
        0.005,
        False,
    )
    assert config.get_rl_module_spec(module_id="default_policy").model_config["twin_q"] is False


@pytest.mark.parametrize(
    "training, message",
    [
        (
            {"beta": 0.0},
            r"beta=0\.0 must be a number > 0\. Fix: pass a number > 0 to config\.training\(beta=\.\.\.\)",
        ),
        ({"expectile": 1.0}, r"expectile=1\.0 must be a number in \(0, 1\) .* Fix: pass e\.g\. 0\.7 or 0\.9"),
        ({"expectile": 0}, r"expectile=0 must be a number in \(0, 1\)"),
        ({"value_lr": 0.0}, r"value_lr=0\.0 must be"),
        ({"actor_lr": -1.0}, r"actor_lr=-1\.0 must be"),
        ({"tau": 0.0}, r"tau=0\.0 must be a number in \(0, 1\]"),
        ({"twin_q": 1}, r"twin_q=1 must be True or False"),
        ({"target_network_update_freq": -1}, r"target_network_update_freq=-1 must be an int >= 0"),
        (
            {"lr": 1e-3},
            r"lr=0\.001: IQL does not use lr; its three optimizers have their own rates, actor_lr=0\.0003, "
            r"critic_lr=0\.0003 and value_lr=0\.0003\. Fix: pass the rates to config\.training\(actor_lr=\.\.\., "
            r"critic_lr=\.\.\., value_lr=\.\.\.\) and leave lr=None",
        ),
    ],
)
def test_bad_settings_are_reported(training, message):
    with pytest.raises(ConfigError, match=message):
        IQLConfig().environment("Pendulum-v1").offline_data(input_="data").training(**training).validate()


def test_iql_needs_offline_input():
    with pytest.raises(
        ConfigError,
        match=r"IQLConfig trains on offline data, but input_ is None\. Fix: config\.offline_data\(input_=",
    ):
        IQLConfig().environment("Pendulum-v1").validate()


@pytest.mark.parametrize("data, env", [("pendulum_data", "Pendulum-v1"), ("cartpole_data", "CartPole-v1")])
def test_iql_trains_from_recorded_transitions_and_evaluates_on_env_runners(data, env, request):
    config = iql_config(request.getfixturevalue(data), env).evaluation(
        evaluation_interval=1, evaluation_duration=1
    )
    algo = config.build_algo()
    try:
        result = algo.train()
    finally:
        algo.stop()
    learner = result["learners"]["default_policy"]
    keys = ("qf_loss", "value_loss", "policy_loss", "qf_mean", "vf_mean", "exp_advantage_mean")
    assert all(np.isfinite(learner[key]) for key in keys), learner
    assert result["learners"]["__all_modules__"]["num_env_steps_trained"] >= 128  # two updates of >= 64 rows
    assert result["evaluation"]["env_runners"]["num_episodes"] == 1
    assert result["env_runners"].get("num_env_steps_sampled", 0) == 0  # offline: nothing sampled to train


def test_checkpoint_round_trip(pendulum_data, tmp_path):
    algo = iql_config(pendulum_data, tau=0.5).build_algo()
    algo.train()
    algo.save_to_path(tmp_path / "iql")
    restored = IQL.from_checkpoint(tmp_path / "iql")
    try:
        [state] = algo.learner_group.foreach_learner(lambda learner: learner.get_state())
        [again] = restored.learner_group.foreach_learner(lambda learner: learner.get_state())
        assert again["weights_seq_no"] == state["weights_seq_no"] == 2
        weights = state["rl_module"]["default_policy"]
        assert {"vf.weight", "vf_encoder.0.weight", "target_qf.weight", "target_qf_twin.weight"} <= set(
            weights
        )
        for name, value in weights.items():
            np.testing.assert_array_equal(again["rl_module"]["default_policy"][name], value, err_msg=name)
        assert restored.config.to_dict() == algo.config.to_dict()
        assert restored.train()["learners"]["__all_modules__"]["weights_seq_no"] == 4  # trains on
    finally:
        algo.stop()
        restored.stop()


def test_sac_fine_tunes_the_iql_module_online(pendulum_data, tmp_path):
    iql = iql_config(pendulum_data).build_algo()
    iql.train()
    iql.save_to_path(tmp_path / "iql")
    sac = (
        SACConfig()
        .environment("Pendulum-v1")
        .rl_module(
            rl_module_spec=RLModuleSpec(DefaultIQLTorchRLModule), model_config={"fcnet_hiddens": [32, 32]}
        )
        .training(num_steps_sampled_before_learning_starts=0, train_batch_size=32)
        .reporting(min_sample_timesteps_per_iteration=50)
        .debugging(seed=0)
        .build_algo()
    )
    try:
        sac.restore_from_path(tmp_path / "iql" / MODULE, component=MODULE)
        obs = torch.tensor(np.random.default_rng(0).normal(size=(5, 3)), dtype=torch.float32)
        expected = iql.get_module().forward_inference({"obs": obs})["action_dist_inputs"]
        torch.testing.assert_close(
            sac.get_module().forward_inference({"obs": obs})["action_dist_inputs"], expected
        )
        before = sac.learner_group.get_weights()["default_policy"]
        sac.train()  # SAC trains the policy and critics online and leaves V as IQL left it
        after = sac.learner_group.get_weights()["default_policy"]
        for name in ("pi.weight", "qf.weight", "qf_twin.weight"):
            assert not np.array_equal(after[name], before[name]), name
        for name in ("vf.weight", "vf_encoder.0.weight"):
            np.testing.assert_array_equal(after[name], before[name], err_msg=name)
    finally:
        iql.stop()
        sac.stop()


def test_the_policy_log_std_is_clamped_to_rllibs_bounds_not_sacs():
    """IQL's policy clamps log std to [-5, 2] (RLlib 2.60's squashed Gaussian and the IQL paper),
    SAC's to [-20, 2]: on a data action 0.5 away from the mean (atanh space), the actor's gradient
    on the mean is 0.5 / std**2, 1.1e4 at std = exp(-5) but 1.2e17 at SAC's exp(-20)."""
    obs, act = gym.spaces.Box(-1.0, 1.0, (3,), np.float32), gym.spaces.Box(-2.0, 2.0, (1,), np.float32)
    model_config = {"fcnet_hiddens": [8], "twin_q": True}
    iql = DefaultIQLTorchRLModule(obs, act, model_config=model_config)
    sac = DefaultSACTorchRLModule(obs, act, model_config=model_config)
    assert iql.log_std_bounds == (-5.0, 2.0) and sac.log_std_bounds == (-20.0, 2.0)
    for module, floor in ((iql, -5.0), (sac, -20.0)):
        with torch.no_grad():
            module.pi.weight.zero_()
            module.pi.bias.copy_(torch.tensor([0.0, -50.0]))
        inputs = module.forward_train({Columns.OBS: torch.zeros(2, 3)})[Columns.ACTION_DIST_INPUTS]
        assert inputs[:, 1].tolist() == [floor, floor]
        with torch.no_grad():
            module.pi.bias.copy_(torch.tensor([0.0, 50.0]))
        assert module.forward_train({Columns.OBS: torch.zeros(1, 3)})[Columns.ACTION_DIST_INPUTS][0, 1] == 2.0
        logits = torch.tensor([[0.0, floor]], requires_grad=True)
        action = torch.tanh(torch.tensor([[0.5]]))
        module.get_train_action_dist_cls().from_logits(logits).logp(action).sum().backward()
        assert float(logits.grad[0, 0]) == pytest.approx(0.5 / math.exp(2 * floor), rel=1e-3)
