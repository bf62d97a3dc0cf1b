"""A training iteration that raises leaves no trace: counters, metrics and learners stay as after the
last completed iteration, and a save then stores that state."""

import numpy as np
import pytest

from flywheel import Algorithm, PPOConfig
from flywheel.algorithms.ppo.learner import PPOTorchLearner
from flywheel.testing import CountingEnv


class LossFailsOnce(PPOTorchLearner):
    """Raises in its 7th loss call: the third minibatch of the second update (2 epochs x 2 minibatches
    per update), after two optimizer steps of that update."""

    calls = 0

    def compute_loss_for_module(self, **kwargs):
        self.calls += 1
        if self.calls == 7:
            raise ValueError("loss failed")
        return super().compute_loss_for_module(**kwargs)


def config():
    return (
        PPOConfig()
        .environment(CountingEnv, env_config={"episode_len": 5})
        .training(train_batch_size_per_learner=40, minibatch_size=20, num_epochs=2)
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .learners(learner_class=LossFailsOnce)
        .debugging(seed=0)
    )


def test_a_failed_iteration_moves_no_counter_and_a_save_stores_the_last_completed_one(tmp_path):
    algo = config().build_algo()
    try:
        first = algo.train()
        weights = algo.learner_group.get_weights(inference_only=False)["default_policy"]
        with pytest.raises(ValueError, match="^loss failed$"):
            algo.train()
        assert algo.iteration == 1
        assert algo.learner_group.weights_seq_no == algo.env_runner.weights_seq_no == 1
        for name, value in algo.learner_group.get_weights(inference_only=False)["default_policy"].items():
            np.testing.assert_array_equal(value, weights[name], err_msg=name)
        path = algo.save_to_path(tmp_path / "ckpt")
        # The next iteration counts as the second: the failed one's 40 sampled steps are not counted.
        second = algo.train()
    finally:
        algo.stop()
    # Trained steps count each epoch (2), as RLlib's learners count them.
    assert first["num_env_steps_sampled_lifetime"] == first["num_env_steps_trained_lifetime"] / 2 == 40
    assert second["training_iteration"] == 2
    assert second["num_env_steps_sampled_lifetime"] == second["num_env_steps_trained_lifetime"] / 2 == 80
    assert second["env_runners"]["num_env_steps_sampled"] == 40
    assert second["learners"]["__all_modules__"]["weights_seq_no"] == 2
    assert second["learners"]["default_policy"]["num_module_steps_trained"] == 80
    restored = Algorithm.from_checkpoint(path, classes=[LossFailsOnce])
    try:
        assert restored.iteration == 1
        for name, value in restored.learner_group.get_weights(inference_only=False)["default_policy"].items():
            np.testing.assert_array_equal(value, weights[name], err_msg=name)
        assert restored.train()["num_env_steps_sampled_lifetime"] == 80
    finally:
        restored.stop()
