"""An algorithm used after stop(): a StoppedError that says so, with local and with remote runners."""

import pytest

from flywheel import PPOConfig
from flywheel.errors import StoppedError


def tiny(num_env_runners=0):
    return (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_env_runners=num_env_runners)
        .training(train_batch_size_per_learner=64, minibatch_size=32, num_epochs=1)
        .debugging(seed=0)
    )


def message(method):
    return (
        f"PPO.{method}() was called after stop(), which released its env runners and learners. Fix: call "
        "stop() only once you are done with the algorithm; to go on later, save_to_path() before stop() and "
        "load it again with Algorithm.from_checkpoint(path)."
    )


def assert_refused_after_stop(algo, tmp_path):
    algo.stop()
    algo.stop()  # a second stop does nothing
    with pytest.raises(StoppedError) as raised:
        algo.train()
    assert str(raised.value) == message("train")
    with pytest.raises(StoppedError) as raised:
        algo.evaluate()
    assert str(raised.value) == message("evaluate")
    with pytest.raises(StoppedError) as raised:
        algo.save_to_path(tmp_path / "checkpoint")
    assert str(raised.value) == message("save_to_path")
    assert not (tmp_path / "checkpoint").exists()
    assert algo.iteration == 1


def test_train_evaluate_and_save_after_stop_raise_with_a_local_runner(tmp_path):
    algo = tiny().build_algo()
    algo.train()
    assert_refused_after_stop(algo, tmp_path)  # it used to train on, on a stopped runner


@pytest.mark.ray
def test_train_after_stop_raises_with_remote_runners(ray_session, tmp_path):
    algo = tiny(num_env_runners=1).build_algo()
    algo.train()
    assert_refused_after_stop(algo, tmp_path)  # it used to say every env runner had failed
