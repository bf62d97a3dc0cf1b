"""An algorithm with remote runners and learners: evaluation runners as a second remote group, and
checkpoints that bring the connector states back into the remote runners."""

import sys

import numpy as np
import pytest
import ray

from flywheel import Algorithm, PPOConfig
from flywheel.connectors.env_to_module import MeanStdFilter
from flywheel.testing import CountingEnv

ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
pytestmark = pytest.mark.ray


def filter_count(runner):
    (state,) = runner.env_to_module.get_state().values()
    return state["shared"]["count"] + state["delta"]["count"]


def config():
    return (
        PPOConfig()
        .environment(CountingEnv, env_config={"episode_len": 5})
        .env_runners(
            num_env_runners=1,
            num_cpus_per_env_runner=0,
            env_to_module_connector=lambda env, spaces, device: MeanStdFilter(),
        )
        .learners(num_learners=1, num_cpus_per_learner=0)
        .training(train_batch_size_per_learner=50, minibatch_size=25, num_epochs=1)
        .evaluation(evaluation_interval=1, evaluation_duration=2, evaluation_num_env_runners=1)
        .debugging(seed=0)
    )


def test_remote_evaluation_and_checkpoint_restore_into_remote_runners(ray_session, tmp_path):
    algo = config().build_algo()
    try:
        result = algo.train()
        assert result["evaluation"]["env_runners"]["num_episodes"] == 2
        assert result["evaluation"]["env_runners"]["episode_len_mean"] == 5
        # Evaluation runners use the training runners' merged filter.
        train_counts = algo.env_runner_group.foreach_env_runner(filter_count)
        eval_counts = algo.eval_env_runner_group.foreach_env_runner(filter_count, local_env_runner=False)
        assert train_counts[0] == train_counts[1] > 50
        path = algo.save_to_path(tmp_path / "ckpt")
        weights = algo.learner_group.get_weights(inference_only=False)["default_policy"]
    finally:
        algo.stop()
    assert eval_counts[0] >= train_counts[0]
    restored = Algorithm.from_checkpoint(path, trusted=True)  # its own checkpoint; the config holds a lambda
    try:
        assert restored.env_runner_group.foreach_env_runner(filter_count) == [train_counts[0]] * 2
        for name, value in restored.learner_group.get_weights(inference_only=False)["default_policy"].items():
            assert np.array_equal(weights[name], value), name
        assert restored.train()["training_iteration"] == 2
    finally:
        restored.stop()
