"""Remote learners (num_learners=2) under faults: a learner killed mid-update gives a named error and
no half-applied update, a stopped learner is reported while the update waits.

A learner announces that it is inside an update by writing a marker file from its loss; a thread of
the test waits for the file and then signals that learner's process.
"""

import logging
import os
import re
import signal
import sys
import threading
import time

import numpy as np
import pytest
import ray
import torch

from flywheel import Algorithm, PPOConfig, RLModule
from flywheel.algorithms.ppo.learner import PPOTorchLearner
from flywheel.core.learner import learner_hosts
from flywheel.errors import LearnerDiedError
from flywheel.testing import CountingEnv

pytestmark = pytest.mark.ray
# Learner classes defined here go to the learner processes by value (they cannot import this file).
ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])


def signaling_learner(marker, rank, sleep_s):
    """A PPO learner whose rank `rank` writes `marker` in the third loss call of its second update
    (after two optimizer steps of that update; each update is 2 epochs x 2 minibatches), then
    sleeps `sleep_s`. It signals once: not again after a restore."""

    class Signaling(PPOTorchLearner):
        calls = 0

        def compute_loss_for_module(self, **kwargs):
            if self.weights_seq_no == 1 and torch.distributed.get_rank() == rank and not marker.exists():
                self.calls += 1
                if self.calls == 3:
                    marker.write_text("in update")
                    time.sleep(sleep_s)
            return super().compute_loss_for_module(**kwargs)

    return Signaling


def config(learner_class, seed=0):
    return (
        PPOConfig()
        .environment(CountingEnv, env_config={"episode_len": 5})
        .training(train_batch_size_per_learner=20, minibatch_size=10, num_epochs=2)
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .learners(num_learners=2, num_cpus_per_learner=0.5, learner_class=learner_class)
        .debugging(seed=seed)
    )


def weights_of(algo):
    return algo.learner_group.get_weights(inference_only=False)["default_policy"]


def assert_weights_equal(actual, expected):
    assert sorted(actual) == sorted(expected)
    for name, value in expected.items():
        np.testing.assert_array_equal(actual[name], value, err_msg=name)


def signal_when_in_update(marker, pid, signum, then=None):
    """A started thread: waits (up to 2 minutes) for `marker`, sends `signum` to `pid`, then calls `then`."""

    def run():
        deadline = time.monotonic() + 120
        while not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        os.kill(pid, signum)
        if then is not None:
            then()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_a_learner_killed_mid_update_raises_its_rank_and_leaves_the_last_iteration(ray_session, tmp_path):
    marker = tmp_path / "in_update"
    algo = config(signaling_learner(marker, rank=1, sleep_s=60)).build_algo()
    try:
        first = algo.train()
        weights = weights_of(algo)
        pids = algo.learner_group.foreach_learner(lambda learner: os.getpid())
        killer = signal_when_in_update(marker, pids[1], signal.SIGKILL)
        with pytest.raises(
            LearnerDiedError,
            match=rf"^Learner rank 1 \(pid {pids[1]} on \S+\) died during update: The actor died unexpectedly",
        ) as failure:
            algo.train()
        killer.join()
        assert failure.value.ranks == [1]
        assert str(failure.value).endswith(
            "Fix: call algo.train() again (the learners restart from a live one's state), or restore the "
            "last checkpoint: algo.restore_from_path(path) (it restarts the learners) or "
            "Algorithm.from_checkpoint(path)."
        )
        # Rank 0 had applied two optimizer steps of the failed update: they are rolled back.
        assert algo.iteration == 1
        assert algo.learner_group.weights_seq_no == 1
        assert_weights_equal(weights_of(algo), weights)
        path = algo.save_to_path(tmp_path / "ckpt")
        # Training again restarts the learners from rank 0's state; the failed iteration left no count.
        second = algo.train()
        assert algo.learner_group.foreach_learner(lambda learner: learner.weights_seq_no) == [2, 2]
    finally:
        algo.stop()
    # Trained steps count each epoch (2), as RLlib's learners count them.
    assert first["num_env_steps_sampled_lifetime"] == first["num_env_steps_trained_lifetime"] / 2 == 40
    assert second["training_iteration"] == 2
    assert second["num_env_steps_sampled_lifetime"] == second["num_env_steps_trained_lifetime"] / 2 == 80
    assert second["learners"]["__all_modules__"]["weights_seq_no"] == 2
    restored = Algorithm.from_checkpoint(path, trusted=True)  # its learner class is a local one
    try:
        assert restored.iteration == 1
        assert_weights_equal(weights_of(restored), weights)
        assert restored.train()["num_env_steps_sampled_lifetime"] == 80
    finally:
        restored.stop()


def test_with_rank_0_killed_a_save_reads_the_rolled_back_state_of_rank_1(ray_session, tmp_path):
    marker = tmp_path / "in_update"
    algo = config(signaling_learner(marker, rank=0, sleep_s=60)).build_algo()
    try:
        algo.train()
        weights = weights_of(algo)
        pids = algo.learner_group.foreach_learner(lambda learner: os.getpid())
        killer = signal_when_in_update(marker, pids[0], signal.SIGKILL)
        with pytest.raises(LearnerDiedError, match=r"^Learner rank 0 \(pid \d+ on \S+\) died during update"):
            algo.train()
        killer.join()
        with pytest.raises(LearnerDiedError, match=r"^Learner rank 0 .* died during update"):
            algo.learner_group.foreach_learner(lambda learner: learner.weights_seq_no)
        path = algo.save_to_path(tmp_path / "ckpt")
    finally:
        algo.stop()
    module = RLModule.from_checkpoint(path + "/learner_group/learner/rl_module/default_policy")
    assert_weights_equal(module.get_state(), weights)


def test_a_stopped_learner_is_named_once_per_interval_while_the_update_waits(
    ray_session, tmp_path, monkeypatch, caplog
):
    marker = tmp_path / "in_update"
    algo = config(signaling_learner(marker, rank=1, sleep_s=2)).build_algo()

    def hang_warnings():
        return [r.getMessage() for r in caplog.records if r.name == learner_hosts.__name__]

    def resume_after_two_warnings():
        deadline = time.monotonic() + 60
        while len(hang_warnings()) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        os.kill(pids[1], signal.SIGCONT)

    try:
        algo.train()
        pids = algo.learner_group.foreach_learner(lambda learner: os.getpid())
        monkeypatch.setattr(learner_hosts, "HANG_WARNING_INTERVAL_S", 1.0)
        with caplog.at_level(logging.WARNING, logger="flywheel"):
            stopper = signal_when_in_update(marker, pids[1], signal.SIGSTOP, then=resume_after_two_warnings)
            result = algo.train()
            stopper.join()
        assert result["training_iteration"] == 2
        assert result["learners"]["__all_modules__"]["weights_seq_no"] == 2
    finally:
        algo.stop()
    warnings = hang_warnings()
    assert len(warnings) >= 2
    stopped = (
        rf"Not answering a health probe within 1 s \(stopped, hung or overloaded\): learner rank 1 "
        rf"\(pid {pids[1]} on \S+\)\. Alive and still in the call \(each rank waits for every other one "
        r"in a gradient exchange\): learner rank 0\. Training waits for them\."
    )
    assert any(re.search(stopped, warning) for warning in warnings), warnings
    assert all(re.match(r"^Learner update still running after \d+ s\. ", warning) for warning in warnings)
