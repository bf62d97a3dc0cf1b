"""BC and MARWIL learn CartPole from recorded data (issue 18's learning targets, fixed seeds)."""

import pytest

from flywheel import BCConfig, MARWILConfig

from .conftest import record

pytestmark = pytest.mark.learning


def train(cls, inputs, iterations=20):
    """The best greedy evaluation mean (10 episodes, every 5 iterations) within `iterations`."""
    config = (
        cls()
        .environment("CartPole-v1")
        .offline_data(input_=[str(folder) for folder in inputs])
        .training(lr=1e-3, train_batch_size_per_learner=2000, minibatch_size=250)
        .rl_module(model_config={"fcnet_hiddens": [64, 64]})
        .evaluation(evaluation_interval=5, evaluation_duration=10, evaluation_config={"explore": False})
        .debugging(seed=0)
    )
    algo = config.build_algo()
    best = max(
        result["evaluation"]["env_runners"]["episode_return_mean"]
        for result in (algo.train() for _ in range(iterations))
        if "evaluation" in result
    )
    algo.stop()
    return best


def test_bc_on_100_expert_episodes_reaches_475_within_20_iterations(expert_data):
    folder, expert_return = expert_data
    assert expert_return >= 475
    assert train(BCConfig, [folder]) >= 475


def test_marwil_on_expert_and_as_many_random_episodes_reaches_400(expert_data, tmp_path):
    folder, _ = expert_data
    record(tmp_path, num_episodes=100, seed=3)
    # 493.3 here. BC on the same mix reaches 500.0 too (random episodes are ~22 steps, so ~4% of
    # the rows), so "better than BC" cannot be asserted on this mix.
    assert train(MARWILConfig, [folder, tmp_path]) >= 400
