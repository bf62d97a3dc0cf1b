"""CQLConfig and CQL: RLlib 2.60's names and defaults, the problems validate() reports, training
from recorded Pendulum transitions with evaluation on env runners, and a checkpoint round trip."""

import gymnasium as gym
import numpy as np
import pytest
import torch

import flywheel
from flywheel import CQL, Columns, SACConfig, SingleAgentEnvRunner
from flywheel.algorithms.cql import CQLConfig
from flywheel.algorithms.registry import config_class
from flywheel.errors import ConfigError
from flywheel.offline.reader import OfflineData

MODULE = "learner_group/learner/rl_module/default_policy"

CQL_DEFAULTS = {
    "bc_iters": 20_000,
    "temperature": 1.0,
    "num_actions": 10,
    "min_q_weight": 5.0,
    "lagrangian": False,
    "lagrangian_thresh": 5.0,
    "deterministic_backup": True,
    "lr": None,  # unused (the three below are); RLlib's unused default is 3e-4
    "actor_lr": 1e-4,
    "critic_lr": 1e-3,
    "alpha_lr": 1e-3,
    "min_sample_timesteps_per_iteration": 0,
    # SAC's, kept:
    "twin_q": True,
    "tau": 5e-3,
    "initial_alpha": 1.0,
    "train_batch_size": 256,
}


@pytest.fixture(scope="module")
def pendulum_data(tmp_path_factory):
    """400 Pendulum steps of an untrained SAC policy (two episodes, one row per step)."""
    folder = tmp_path_factory.mktemp("pendulum")
    config = SACConfig().environment("Pendulum-v1").debugging(seed=0)
    runner = SingleAgentEnvRunner(
        config=config.offline_data(
            output=str(folder), output_write_episodes=False, output_max_rows_per_file=500
        )
    )
    runner.sample(num_episodes=2)
    runner.stop()
    return folder


def cql_config(folder, **training):
    return (
        CQLConfig()
        .environment("Pendulum-v1")
        .offline_data(input_=str(folder), dataset_num_iters_per_learner=2)
        .training(train_batch_size_per_learner=64, num_actions=4, bc_iters=1, **training)
        .rl_module(model_config={"fcnet_hiddens": [32, 32]})
        .debugging(seed=0)
    )


def test_rllib_names_and_defaults():
    config = CQLConfig()
    assert {name: getattr(config, name) for name in CQL_DEFAULTS} == CQL_DEFAULTS
    assert isinstance(config, SACConfig) and config.algo_class is CQL
    assert (flywheel.CQLConfig, flywheel.CQL, config_class("CQL")) == (CQLConfig, CQL, CQLConfig)
    config = config.training(bc_iters=0, temperature=0.5, num_actions=4, min_q_weight=1.0, lagrangian=True)
    assert (
        config.bc_iters,
        config.temperature,
        config.num_actions,
        config.min_q_weight,
        config.lagrangian,
    ) == (
        0,
        0.5,
        4,
        1.0,
        True,
    )


@pytest.mark.parametrize(
    "training, message",
    [
        (
            {"num_actions": 0},
            r"num_actions=0 must be an int >= 1\. Fix: pass an int >= 1 to config\.training\(num_actions=\.\.\.\)",
        ),
        ({"num_actions": 2.5}, r"num_actions=2\.5 must be an int >= 1"),
        (
            {"min_q_weight": -1.0},
            r"min_q_weight=-1\.0 must be a number >= 0\. Fix: pass a number >= 0 to config\.training\(min_q_weight=\.\.\.\)",
        ),
        ({"temperature": 0.0}, r"temperature=0\.0 must be a number > 0"),
        ({"bc_iters": -1}, r"bc_iters=-1 must be an int >= 0"),
        ({"lagrangian": "yes"}, r"lagrangian='yes' must be"),
        ({"lagrangian_thresh": -2.0}, r"lagrangian_thresh=-2\.0 must be a number >= 0"),
        ({"deterministic_backup": 1}, r"deterministic_backup=1 must be"),
        ({"critic_lr": 0.0}, r"critic_lr=0\.0 must be"),  # SAC's checks still apply
    ],
)
def test_bad_settings_are_reported(training, message):
    with pytest.raises(ConfigError, match=message):
        CQLConfig().environment("Pendulum-v1").offline_data(input_="data").training(**training).validate()


def test_cql_needs_offline_input():
    with pytest.raises(
        ConfigError,
        match=r"CQLConfig trains on offline data, but input_ is None\. Fix: config\.offline_data\(input_=",
    ):
        CQLConfig().environment("Pendulum-v1").validate()


def test_cql_trains_from_recorded_transitions_and_evaluates_on_env_runners(pendulum_data):
    config = cql_config(pendulum_data).evaluation(evaluation_interval=1, evaluation_duration=1)
    algo = config.build_algo()
    try:
        result = algo.train()
    finally:
        algo.stop()
    learner = result["learners"]["default_policy"]
    assert {"qf_loss", "cql_loss", "policy_loss", "alpha_loss", "alpha_value", "td_error_mean"} <= set(
        learner
    )
    assert all(np.isfinite(learner[key]) for key in ("qf_loss", "cql_loss", "policy_loss"))
    assert result["learners"]["__all_modules__"]["num_env_steps_trained"] >= 128  # two updates of >= 64 rows
    assert result["evaluation"]["env_runners"]["num_episodes"] == 1
    assert result["env_runners"].get("num_env_steps_sampled", 0) == 0  # offline: nothing sampled to train


def test_checkpoint_round_trip(pendulum_data, tmp_path):
    algo = cql_config(pendulum_data, lagrangian=True).build_algo()
    algo.train()
    algo.save_to_path(tmp_path / "cql")
    restored = CQL.from_checkpoint(tmp_path / "cql")
    try:
        [state] = algo.learner_group.foreach_learner(lambda learner: learner.get_state())
        [again] = restored.learner_group.foreach_learner(lambda learner: learner.get_state())
        assert again["weights_seq_no"] == state["weights_seq_no"] == 2
        assert (
            again["log_alphas"] == state["log_alphas"]
            and again["log_alpha_primes"] == state["log_alpha_primes"]
        )
        for name, value in state["rl_module"]["default_policy"].items():
            np.testing.assert_array_equal(again["rl_module"]["default_policy"][name], value, err_msg=name)
        assert restored.config.to_dict() == algo.config.to_dict()
        assert restored.train()["learners"]["__all_modules__"]["weights_seq_no"] == 4  # trains on
    finally:
        algo.stop()
        restored.stop()


def test_the_cql_module_loads_into_sac(pendulum_data, tmp_path):
    cql = cql_config(pendulum_data).build_algo()
    cql.train()
    cql.save_to_path(tmp_path / "cql")
    sac = (
        SACConfig()
        .environment("Pendulum-v1")
        .rl_module(model_config={"fcnet_hiddens": [32, 32]})
        .build_algo()
    )
    try:
        sac.restore_from_path(tmp_path / "cql" / MODULE, component=MODULE)
        obs = torch.tensor(np.random.default_rng(0).normal(size=(5, 3)), dtype=torch.float32)
        expected = cql.get_module().forward_inference({"obs": obs})["action_dist_inputs"]
        torch.testing.assert_close(
            sac.get_module().forward_inference({"obs": obs})["action_dist_inputs"], expected
        )
    finally:
        cql.stop()
        sac.stop()


def test_time_limit_ends_reach_the_critics_as_truncated_not_terminated(pendulum_data):
    # Pendulum episodes end only by their 200-step limit; a row marked terminated there would cut
    # the critics' bootstrap and drag every Q-value towards the last rewards.
    env = gym.make("Pendulum-v1")
    config = cql_config(pendulum_data).offline_data(
        input_read_method_kwargs={"shuffle": False},
        iter_batches_kwargs={"local_shuffle_buffer_size": None},
    )
    episodes = OfflineData(config, env.observation_space, env.action_space).sample(num_rows=400)
    batch = train_batch(config, env, episodes)
    assert batch[Columns.TERMINATEDS].shape == (400,) and not batch[Columns.TERMINATEDS].any()
    assert batch[Columns.TRUNCATEDS].nonzero().flatten().tolist() == [199, 399]
    actions = batch[Columns.ACTIONS]
    assert actions.shape == (400, 1) and bool((actions.abs() <= 1.0).all())  # the module's [-1, 1]


def train_batch(config, env, episodes):
    learner = config.build_learner(env=env)
    pipeline = config.build_learner_connector(env.observation_space, env.action_space)
    return pipeline(rl_module=learner.module, batch={}, episodes=episodes, shared_data={})["default_policy"]


def test_shuffled_rows_keep_their_own_end_flags_and_next_observations(pendulum_data):
    # CQL's default shuffle hands out single rows: each keeps its truncation flag and its next
    # observation (the row's new_obs), so the critics bootstrap exactly as with whole episodes.
    env = gym.make("Pendulum-v1")
    config = cql_config(pendulum_data).offline_data(iter_batches_kwargs={"local_shuffle_buffer_size": 300})
    episodes = OfflineData(config, env.observation_space, env.action_space).sample(num_rows=256)
    assert len(episodes) >= 200 and sum(len(e) for e in episodes) == 256
    batch = train_batch(config, env, episodes)
    assert not batch[Columns.TERMINATEDS].any()
    ends = np.cumsum([len(e) for e in episodes]) - 1
    truncated = [int(end) for e, end in zip(episodes, ends, strict=True) if e.is_truncated]
    assert truncated and batch[Columns.TRUNCATEDS].nonzero().flatten().tolist() == truncated
    next_obs = np.concatenate([e.get_observations()[1:] for e in episodes])
    np.testing.assert_allclose(batch[Columns.NEXT_OBS].numpy(), next_obs)
