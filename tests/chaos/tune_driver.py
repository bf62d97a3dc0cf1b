"""A Tune driver for test_tune_faults.py to SIGKILL: 4 PPO trials on CartPole under ASHA, in a Ray of its
own (2 CPUs, so 2 trials run at a time), every event logged to FOLDER/events.jsonl::

    python tune_driver.py FOLDER STOP EVERY

Trials stop at STOP iterations (or earlier, at an ASHA rung) and save a checkpoint every EVERY
iterations; the experiment is FOLDER/ray_results/resume. The log has one JSON line per event: "result"
(trial, iteration, steps: its num_env_steps_sampled_lifetime), "checkpoint" (trial, iteration) and
"complete" (trial, iteration), each with its `time`.

Once a trial has completed, the next result of a trial that has a checkpoint writes FOLDER/ready and
blocks the driver: nothing more happens until the test kills it. Tune saves the experiment state on
every step of its loop here (TUNE_GLOBAL_CHECKPOINT_S=0), so the state a restore reads is the one the
log describes: every logged event in it, the blocked result not.
"""

import json
import os
import sys
import time
from pathlib import Path

from ray import tune


class EventLog(tune.Callback):
    """Logs results, checkpoints and completions to `folder`/events.jsonl and blocks once (see above)."""

    def __init__(self, folder: str) -> None:
        self.folder = Path(folder)
        self.completed, self.checkpointed = set(), set()

    def on_trial_result(self, iteration, trials, trial, result, **info):
        ready = self.folder / "ready"
        if self.completed and trial.trial_id in self.checkpointed and not ready.exists():
            ready.write_text(trial.trial_id)
            time.sleep(600)
        self._log(
            event="result",
            trial=trial.trial_id,
            iteration=result["training_iteration"],
            steps=result["num_env_steps_sampled_lifetime"],
        )

    def on_checkpoint(self, iteration, trials, trial, checkpoint, **info):
        self.checkpointed.add(trial.trial_id)
        self._log(event="checkpoint", trial=trial.trial_id, iteration=trial.last_result["training_iteration"])

    def on_trial_complete(self, iteration, trials, trial, **info):
        self.completed.add(trial.trial_id)
        self._log(event="complete", trial=trial.trial_id, iteration=trial.last_result["training_iteration"])

    def _log(self, **line) -> None:
        with open(self.folder / "events.jsonl", "a") as file:
            file.write(json.dumps({**line, "time": round(time.time(), 2)}) + "\n")


def tuner(folder: str, stop: int, every: int):
    from ray.tune.schedulers import ASHAScheduler

    import flywheel.tune
    from flywheel import PPOConfig

    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .training(
            lr=tune.grid_search([1e-2, 3e-3, 1e-3, 3e-4]),
            train_batch_size_per_learner=100,
            minibatch_size=100,
            num_epochs=1,
        )
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .debugging(seed=0)
    )
    return tune.Tuner(
        flywheel.tune.trainable("PPO"),
        param_space=config,
        tune_config=tune.TuneConfig(
            scheduler=ASHAScheduler(max_t=stop, grace_period=every, reduction_factor=2),
            metric="env_runners/episode_return_mean",
            mode="max",
            reuse_actors=True,  # a trial (new or resumed) may continue in an earlier trial's process
        ),
        run_config=tune.RunConfig(
            storage_path=str(Path(folder) / "ray_results"),
            name="resume",
            verbose=0,
            stop={"training_iteration": stop},
            checkpoint_config=tune.CheckpointConfig(checkpoint_frequency=every),
            callbacks=[EventLog(folder)],
        ),
    )


if __name__ == "__main__":
    import ray

    folder, stop, every = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    os.environ["TUNE_GLOBAL_CHECKPOINT_S"] = "0"
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    tuner(folder, stop, every).fit()
