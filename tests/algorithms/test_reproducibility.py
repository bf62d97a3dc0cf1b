"""A seeded run repeats exactly at any num_env_runners and num_learners: same weights, same metrics."""

import numpy as np
import pytest

from flywheel import PPOConfig


def config(num_env_runners, num_learners):
    return (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_env_runners=num_env_runners, num_envs_per_env_runner=2, num_cpus_per_env_runner=0.5)
        .learners(num_learners=num_learners, num_cpus_per_learner=0.5)
        .training(train_batch_size_per_learner=100, minibatch_size=50, num_epochs=2)
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .debugging(seed=3)
    )


def deterministic(result):
    """The result without wall-clock numbers (timers, throughputs, times)."""
    return {
        key: deterministic(value) if isinstance(value, dict) else value
        for key, value in result.items()
        if key not in ("timers", "time_this_iter_s", "time_total_s") and not key.endswith("_throughput")
    }


def run(num_env_runners, num_learners):
    algo = config(num_env_runners, num_learners).build_algo()
    try:
        results = [deterministic(algo.train()) for _ in range(2)]
        return results, algo.learner_group.get_weights(inference_only=False)["default_policy"]
    finally:
        algo.stop()


@pytest.mark.parametrize(
    ("num_env_runners", "num_learners"),
    [(0, 0), pytest.param(2, 0, marks=pytest.mark.ray), pytest.param(0, 2, marks=pytest.mark.ray)],
)
def test_two_seeded_runs_give_identical_weights_and_metrics(num_env_runners, num_learners, request):
    if num_env_runners or num_learners:
        request.getfixturevalue("ray_session")
    (first, first_weights), (second, second_weights) = (run(num_env_runners, num_learners) for _ in range(2))
    assert first == second
    assert first[1]["learners"]["__all_modules__"]["weights_seq_no"] == 2
    assert first[1]["num_env_steps_sampled_lifetime"] >= 200 * max(num_learners, 1)
    assert sorted(first_weights) == sorted(second_weights)
    for name, value in first_weights.items():
        np.testing.assert_array_equal(second_weights[name], value, err_msg=name)
