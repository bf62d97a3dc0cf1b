"""BC and MARWIL: RLlib 2.60's settings, offline training step, evaluation, BC's module in PPO."""

import numpy as np
import pytest
import torch

from flywheel import BC, MARWIL, BCConfig, MARWILConfig, PPOConfig
from flywheel.errors import ConfigError

from .conftest import record

MODULE = "learner_group/learner/rl_module/default_policy"


@pytest.fixture(scope="module")
def random_data(tmp_path_factory):
    folder = tmp_path_factory.mktemp("random")
    record(folder, num_episodes=30, seed=0)
    return folder


def offline_config(cls, folder, **training):
    return (
        cls()
        .environment("CartPole-v1")
        .offline_data(input_=str(folder))
        .training(train_batch_size_per_learner=200, minibatch_size=50, **training)
        .rl_module(model_config={"fcnet_hiddens": [64, 64]})
        .debugging(seed=0)
    )


def test_rllib_names_and_defaults():
    bc, marwil = BCConfig(), MARWILConfig()
    assert (bc.beta, marwil.beta) == (0.0, 1.0)
    assert (marwil.lr, marwil.vf_coeff, marwil.lambda_, marwil.bc_logstd_coeff) == (1e-4, 1.0, 1.0, 0.0)
    assert (marwil.moving_average_sqd_adv_norm_start, marwil.moving_average_sqd_adv_norm_update_rate) == (
        100.0,
        1e-8,
    )
    for config in (bc, marwil):  # one gradient step on the whole train batch of 2000 rows
        assert (config.train_batch_size, config.train_batch_size_per_learner) == (2000, None)
        assert (config.minibatch_size, config.num_epochs) == (None, 1)
    assert (marwil.train_batch_size, marwil.train_batch_size_per_learner, marwil.rollout_fragment_length) == (
        2000,
        None,
        200,
    )
    assert (
        marwil.total_train_batch_size,
        marwil.copy().learners(num_learners=2).learner_train_batch_size,
    ) == (
        2000,
        1000,
    )
    assert (bc.algo_class, marwil.algo_class) == (BC, MARWIL)


def test_rllibs_bc_batch_setting_trains_once_on_the_whole_batch(random_data):
    """RLlib's BC examples set train_batch_size_per_learner below 128 (flywheel's old minibatch default)."""
    config = BCConfig().environment("CartPole-v1").offline_data(input_=str(random_data))
    algo = (
        config.training(train_batch_size_per_learner=64)
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .build_algo()
    )
    steps = []
    algo.learner_group.foreach_learner(
        lambda learner: setattr(learner, "apply_gradients", _counting(learner, steps))
    )
    result = algo.train()
    algo.stop()
    assert len(steps) == 1  # minibatch_size None: one step on the whole batch
    assert result["learners"]["__all_modules__"]["num_env_steps_trained"] == 64


def _counting(learner, steps):
    apply = learner.apply_gradients

    def counted(gradients):
        steps.append(1)
        apply(gradients)

    return counted


def test_offline_algorithms_need_input():
    with pytest.raises(
        ConfigError,
        match=r"BCConfig trains on offline data, but input_ is None\. Fix: config\.offline_data\(input_=",
    ):
        BCConfig().environment("CartPole-v1").validate()
    with pytest.raises(ConfigError, match=r"beta=1\.5 must be"):
        MARWILConfig().environment("CartPole-v1").offline_data(input_="x").training(beta=1.5).validate()


def test_bc_trains_from_files_and_evaluates_on_env_runners(random_data):
    config = offline_config(BCConfig, random_data, lr=1e-3).offline_data(dataset_num_iters_per_learner=2)
    algo = config.evaluation(evaluation_interval=1, evaluation_duration=2).build_algo()
    result = algo.train()
    algo.stop()
    learner = result["learners"]["default_policy"]
    assert np.isfinite(learner["policy_loss"]) and "vf_loss" not in learner
    assert result["learners"]["__all_modules__"]["num_env_steps_trained"] >= 400  # two updates of >= 200 rows
    assert result["evaluation"]["env_runners"]["num_episodes"] == 2


@pytest.mark.parametrize(("cls", "runs_values"), [(BCConfig, False), (MARWILConfig, True)])
def test_only_losses_with_a_value_term_run_the_value_branch(random_data, cls, runs_values):
    algo = offline_config(cls, random_data).training(minibatch_size=200).build_algo()
    calls = []

    def count_value_branch(learner):
        module = learner.module["default_policy"]
        for part in (module.encoder.critic_encoder, module.vf):
            part.register_forward_hook(lambda *args: calls.append(1))

    algo.learner_group.foreach_learner(count_value_branch)
    algo.train()
    algo.stop()
    # BC's forward and loss skip the critic encoder and value head; MARWIL's GAE and loss run them.
    assert (len(calls) > 0) == runs_values and len(calls) % 2 == 0


def test_marwil_trains_a_value_function_and_keeps_its_moving_average(random_data, tmp_path):
    config = offline_config(MARWILConfig, random_data, moving_average_sqd_adv_norm_update_rate=0.5)
    algo = config.build_algo()
    result = algo.train()["learners"]["default_policy"]
    assert {"policy_loss", "vf_loss", "moving_avg_sqd_adv_norm"} <= set(result)
    [state] = algo.learner_group.foreach_learner(lambda learner: learner.get_state())
    average = state["moving_avg_sqd_adv_norms_per_module"]["default_policy"]
    assert average != 100.0  # followed the squared advantages at rate 0.5
    algo.save_to_path(tmp_path / "marwil")
    restored = MARWIL.from_checkpoint(tmp_path / "marwil")
    [again] = restored.learner_group.foreach_learner(lambda learner: learner.get_state())
    assert again["moving_avg_sqd_adv_norms_per_module"]["default_policy"] == average
    algo.stop()
    restored.stop()


def test_bc_module_state_loads_into_ppo(random_data, tmp_path):
    bc = offline_config(BCConfig, random_data, lr=1e-3).build_algo()
    bc.train()
    bc.save_to_path(tmp_path / "bc")
    ppo = (
        PPOConfig()
        .environment("CartPole-v1")
        .rl_module(model_config={"fcnet_hiddens": [64, 64]})
        .build_algo()
    )
    ppo.restore_from_path(tmp_path / "bc" / MODULE, component=MODULE)
    obs = torch.tensor(np.random.default_rng(0).normal(size=(5, 4)), dtype=torch.float32)
    expected = bc.get_module().forward_inference({"obs": obs})["action_dist_inputs"]
    got = ppo.get_module().forward_inference({"obs": obs})["action_dist_inputs"]
    torch.testing.assert_close(got, expected)
    ppo.train()  # and fine-tunes online
    bc.stop()
    ppo.stop()
