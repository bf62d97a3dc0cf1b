"""DQN and SAC with two remote learners: each updates on its share of every replayed batch, both hold
identical weights (target networks, SAC's alpha) after every update, and the learner counters of an
iteration are its totals (weights_seq_no: the last update's; num_env_steps_trained: the sum)."""

import numpy as np
import pytest

from flywheel import DQNConfig, SACConfig
from flywheel.testing.multi_agent_envs import MultiCartPole

pytestmark = pytest.mark.ray


def dqn():
    return (
        DQNConfig()
        .environment(MultiCartPole, env_config={"num_agents": 2})
        # A lambda: learner processes cannot import this test module (cloudpickle sends it by value).
        .multi_agent(
            policies={"p0", "p1"}, policy_mapping_fn=lambda agent_id, episode, **kw: f"p{agent_id[-1]}"
        )
        .training(
            num_steps_sampled_before_learning_starts=8,
            train_batch_size_per_learner=32,
            training_intensity=32,  # 32 * 4 sampled / 64 per update (2 learners x 32) = 2 updates per step
            replay_buffer_config={"type": "PrioritizedEpisodeReplayBuffer", "capacity": 1000},
        )
        .rl_module(model_config={"fcnet_hiddens": [16], "head_fcnet_hiddens": [16]})
    )


def sac():
    return (
        SACConfig()
        .environment("Pendulum-v1")
        .training(num_steps_sampled_before_learning_starts=8, train_batch_size_per_learner=16)
        .rl_module(model_config={"fcnet_hiddens": [16]})
    )


def states(algo):
    return algo.learner_group.foreach_learner(
        lambda learner: learner.get_state(components=["rl_module", "weights_seq_no", "log_alphas"])
    )


def assert_identical(first, second, path=""):
    assert type(first) is type(second), path
    if isinstance(first, dict):
        assert sorted(first) == sorted(second), path
        for key in first:
            assert_identical(first[key], second[key], f"{path}/{key}")
    else:
        np.testing.assert_array_equal(first, second, err_msg=path)


@pytest.mark.parametrize(("make", "updates_per_step"), [(dqn, 2), (sac, 1)], ids=["DQN", "SAC"])
def test_two_learners_keep_identical_weights_and_report_the_iterations_totals(
    ray_session, make, updates_per_step
):
    config = (
        make()
        .learners(num_learners=2, num_cpus_per_learner=0)
        .reporting(min_sample_timesteps_per_iteration=40)
        .debugging(seed=0)
    )
    algo = config.build_algo()
    try:
        seq_nos = []
        for _ in range(12):
            algo.training_step()
            first, second = states(algo)
            assert_identical(first, second)
            seq_nos.append(first["weights_seq_no"])
        assert seq_nos[-1] > seq_nos[0] and seq_nos[-1] == algo.learner_group.weights_seq_no
        algo.train()
        start = algo.learner_group.weights_seq_no
        result = algo.train()
        assert_identical(*states(algo))
        end = algo.learner_group.weights_seq_no
    finally:
        algo.stop()
    counters = result["learners"]["__all_modules__"]
    assert counters["weights_seq_no"] == end  # the last update's
    updates = counters["weights_seq_no"] - start
    assert updates == updates_per_step * 40 // config.get_rollout_fragment_length()
    batch = config.total_train_batch_size * len(config.policies)  # per update, over both learners
    assert counters["num_env_steps_trained"] == updates * batch  # the iteration's sum
