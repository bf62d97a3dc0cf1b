"""TQC with two remote learners: each updates on its share of every replayed batch, and both hold
identical weights (quantile critics, their targets, the policy, alpha) after every update."""

import pytest

from flywheel import TQCConfig

from ..test_off_policy_remote import assert_identical, states

pytestmark = pytest.mark.ray


def test_two_learners_keep_identical_weights(ray_session):
    config = (
        TQCConfig()
        .environment("Pendulum-v1")
        .training(
            num_steps_sampled_before_learning_starts=8,
            train_batch_size_per_learner=16,
            n_quantiles=5,
            n_critics=3,
            top_quantiles_to_drop_per_net=1,
        )
        .rl_module(model_config={"fcnet_hiddens": [16]})
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
        algo.train()  # reports the training steps above too
        start = algo.learner_group.weights_seq_no
        result = algo.train()
        updates = algo.learner_group.weights_seq_no - start
        first, second = states(algo)
    finally:
        algo.stop()
    assert_identical(first, second)
    assert seq_nos == [0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5]  # an update per training step from env step 8 on
    assert first["rl_module"]["default_policy"]["qfs.2.weight"].shape == (5, 16)
    assert first["log_alphas"]["default_policy"] != 0.0  # alpha moved, the same on both
    counters = result["learners"]["__all_modules__"]
    assert (
        updates >= 40 and counters["num_env_steps_trained"] == updates * 32
    )  # 16 rows on each of two learners
