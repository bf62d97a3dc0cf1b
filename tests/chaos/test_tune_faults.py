"""Tune trials under faults: a remote learner SIGKILLed mid-run fails its trial with `LearnerDiedError`
and Tune retries the trial from its last checkpoint, the counters continuing from there
(docs/concepts/fault_tolerance.md, "Tune").

A learner announces that it is inside an update by writing its pid to a marker file from its loss; a
thread of the test waits for the file and SIGKILLs that process.
"""

import json
import os
import pickle
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import ray
import torch
from ray import tune

import flywheel.tune
from flywheel import PPOConfig
from flywheel.algorithms.ppo.learner import PPOTorchLearner
from flywheel.errors import LearnerDiedError

pytestmark = [pytest.mark.chaos, pytest.mark.ray]
# The learner class below goes to the learner processes by value (they cannot import this file).
ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])

LONG = os.environ.get("FLYWHEEL_FUZZ", "ci") == "long"
STEPS = 100  # env steps per iteration: 2 learners x train_batch_size_per_learner
STOP, EVERY = (24, 4) if LONG else (6, 2)  # iterations per trial, checkpoint frequency
DRIVER = Path(__file__).with_name("tune_driver.py")


def announcing_learner(marker: str, update: int):
    """A PPO learner whose rank 1 writes its pid to `marker` inside its `update`-th update (counting from
    1) and then sleeps until killed; once per experiment (not again after the retry)."""

    class Announcing(PPOTorchLearner):
        def compute_loss_for_module(self, **kwargs):
            path = Path(marker)
            if self.weights_seq_no == update - 1 and torch.distributed.get_rank() == 1 and not path.exists():
                path.write_text(str(os.getpid()))
                time.sleep(120)
            return super().compute_loss_for_module(**kwargs)

    return Announcing


def kill_when_announced(marker: Path) -> threading.Thread:
    """A started thread: waits (up to 2 minutes) for `marker` and SIGKILLs the pid written in it."""

    def run():
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if marker.exists() and marker.read_text():
                os.kill(int(marker.read_text()), signal.SIGKILL)
                return
            time.sleep(0.01)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_a_learner_killed_mid_run_fails_the_trial_which_tune_retries_from_its_last_checkpoint(
    ray_session, tmp_path
):
    """Killed in the update of iteration EVERY + 2 (ci: 4 of 6): the last checkpoint is iteration EVERY.
    Measured (ci, 6 runs): 72 s at load 5 on 2 cores, 73-97 s at load 10-16, 157 and 177 s at load 17-21;
    long: 173 s at load 24-27."""
    marker = tmp_path / "in_update"
    killed_in = EVERY + 2
    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .training(train_batch_size_per_learner=STEPS // 2, minibatch_size=STEPS // 2, num_epochs=1)
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .learners(
            num_learners=2,
            num_cpus_per_learner=0.5,
            learner_class=announcing_learner(str(marker), update=killed_in),
        )
        .debugging(seed=0)
    )
    tuner = tune.Tuner(
        flywheel.tune.trainable("PPO"),
        param_space=config,
        run_config=tune.RunConfig(
            storage_path=str(tmp_path / "ray_results"),
            name="learner_loss",
            verbose=0,
            stop={"training_iteration": STOP},
            checkpoint_config=tune.CheckpointConfig(checkpoint_frequency=EVERY),
            failure_config=tune.FailureConfig(max_failures=1),
        ),
    )
    killer = kill_when_announced(marker)
    (result,) = tuner.fit()
    killer.join()

    assert result.error is None
    # The failed attempt's error, as Tune recorded it: the named error, with the dead rank and its pid.
    error = pickle.loads((Path(result.path) / "error.pkl").read_bytes())
    assert isinstance(error, LearnerDiedError) and error.ranks == [1]
    assert f"Learner rank 1 (pid {marker.read_text()} on " in str(error)
    assert (Path(result.path) / "error.txt").read_text().startswith("Failure # 1 ")

    metrics = result.metrics
    assert metrics["training_iteration"] == STOP
    assert metrics["iterations_since_restore"] == STOP - EVERY  # the retry restored iteration EVERY
    # Counters continue from the checkpoint: no reset, and the failed iteration counted nowhere.
    assert metrics["num_env_steps_sampled_lifetime"] == STOP * STEPS
    assert metrics["num_env_steps_trained_lifetime"] == STOP * STEPS
    assert metrics["learners"]["__all_modules__"]["weights_seq_no"] == STOP
    rows = result.metrics_dataframe
    # Every iteration reported once per attempt: 1 .. killed_in - 1 before the kill, EVERY + 1 .. STOP after.
    before, after = list(range(1, killed_in)), list(range(EVERY + 1, STOP + 1))
    assert rows["training_iteration"].tolist() == before + after
    assert rows["num_env_steps_sampled_lifetime"].tolist() == [i * STEPS for i in before + after]


def test_an_experiment_whose_driver_was_killed_resumes_every_unfinished_trial_from_its_last_checkpoint(
    request, tmp_path
):
    """tune_driver.py runs 4 trials under ASHA and is SIGKILLed once a trial has finished and another is
    past a checkpoint; `Tuner.restore` then finishes the experiment in this process.
    Measured (ci, 8 runs, with Ray already started here): 108-122 s at load 5-16 on 2 cores, 131 and 156 s
    at load 17-20; most of it process and Ray startup (the trials' 6 iterations take about 3 s). Long
    (24 iterations, rungs at 4, 8 and 16): 171 s at load 24-27."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "OPENBLAS_NUM_THREADS": "1"}
    with open(tmp_path / "driver.err", "w") as err:  # the driver has its own copy of the descriptor
        driver = subprocess.Popen(
            [sys.executable, str(DRIVER), str(tmp_path), str(STOP), str(EVERY)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
    try:
        deadline = time.monotonic() + 240
        while not (tmp_path / "ready").exists():
            logs = [tmp_path / "events.jsonl", tmp_path / "driver.err"]
            # Ended without blocking (no trial went on after one finished) or crashed:
            assert driver.poll() is None, "".join(path.read_text()[-3000:] for path in logs if path.exists())
            assert time.monotonic() < deadline, "the driver did not block within 240 s"
            time.sleep(0.05)
    finally:
        driver.send_signal(signal.SIGKILL)
        driver.wait()
    before = read_events(tmp_path)
    finished = {e["trial"]: e["iteration"] for e in before if e["event"] == "complete"}
    checkpointed = {e["trial"]: e["iteration"] for e in before if e["event"] == "checkpoint"}
    assert finished and set(checkpointed) - set(finished), before  # killed mid-experiment, as planned

    request.getfixturevalue("ray_session")  # this process's Ray, started after the driver's died
    tuner = tune.Tuner.restore(
        str(tmp_path / "ray_results" / "resume"), trainable=flywheel.tune.trainable("PPO")
    )
    results = tuner.fit()
    after = read_events(tmp_path)[len(before) :]

    table = results.get_dataframe()
    assert len(table) == 4 and results.errors == []
    rungs = [EVERY * 2**k for k in range(STOP) if EVERY * 2**k < STOP]
    for result in results:
        trial, final = result.metrics["trial_id"], result.metrics["training_iteration"]
        assert final == STOP or final in rungs, (trial, final)  # the stop criterion or an ASHA rung
        assert result.metrics["num_env_steps_sampled_lifetime"] == final * 100
        resumed = [e["iteration"] for e in after if e["trial"] == trial and e["event"] == "result"]
        if trial in finished:  # stays finished: not run again
            assert (final, resumed) == (finished[trial], []), trial
        else:  # continues after its last checkpoint (or from the start, never begun or never saved)
            start = checkpointed.get(trial, 0)
            assert resumed == list(range(start + 1, final + 1)), (trial, start, resumed)
            assert result.metrics["iterations_since_restore"] == final - start
    # Every result, before the kill and after it, counts its steps once: 100 per iteration from the start.
    assert all(e["steps"] == 100 * e["iteration"] for e in before + after if e["event"] == "result")
    assert sorted(table["training_iteration"]) == sorted(r.metrics["training_iteration"] for r in results)


def read_events(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / "events.jsonl").read_text().splitlines()]
