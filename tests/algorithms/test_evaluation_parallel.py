"""`evaluation_parallel_to_training=True`: evaluation runs on remote evaluation runners while the
iteration trains, on the weights from before the iteration (RLlib 2.60's meaning)."""

import sys
import time
from pathlib import Path

import pytest

from flywheel import PPOConfig
from flywheel.testing import CountingEnv

ray = pytest.importorskip("ray")
ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
pytestmark = pytest.mark.ray


class HandshakeEnv(CountingEnv):
    """Once the file `armed` exists (after the algorithm is built and has checked its envs): the
    evaluation env (`touch`) creates its file when it steps; the training env (`wait_for`) waits
    (up to 60 s) for that file at each step, so training goes on only while evaluation samples."""

    def step(self, action):
        if not Path(self.config["armed"]).exists():
            return super().step(action)
        if "touch" in self.config:
            Path(self.config["touch"]).touch()
        if "wait_for" in self.config:
            deadline = time.monotonic() + 60
            while not Path(self.config["wait_for"]).exists():
                if time.monotonic() > deadline:
                    raise RuntimeError(
                        "no evaluation step within 60 s of training: evaluation did not overlap"
                    )
                time.sleep(0.01)
        return super().step(action)


def config(folder):
    marker, armed = str(folder / "evaluation_stepped"), str(folder / "armed")
    return (
        PPOConfig()
        .environment(HandshakeEnv, env_config={"episode_len": 5, "wait_for": marker, "armed": armed})
        .training(train_batch_size_per_learner=20, minibatch_size=10, num_epochs=1)
        .evaluation(
            evaluation_interval=1,
            evaluation_duration=2,
            evaluation_num_env_runners=1,
            evaluation_parallel_to_training=True,
            evaluation_config={
                "env_config": {"episode_len": 5, "touch": marker, "armed": armed},
                "num_cpus_per_env_runner": 0,
            },
        )
        .debugging(seed=0)
    )


def test_evaluation_overlaps_training_and_evaluates_the_weights_from_before_it(ray_session, tmp_path):
    algo = config(tmp_path).build_algo()
    (tmp_path / "armed").touch()
    try:
        results = [algo.train() for _ in range(2)]
    finally:
        algo.stop()
    # The training env's first step waited for the evaluation env's: both ran at once.
    for iteration, result in enumerate(results, start=1):
        assert result["learners"]["__all_modules__"]["weights_seq_no"] == iteration
        assert result["evaluation"]["env_runners"]["weights_seq_no"] == iteration - 1
        assert result["evaluation"]["env_runners"]["num_episodes"] == 2
        assert result["evaluation"]["env_runners"]["episode_return_mean"] == 15
        assert result["env_runners"]["num_env_steps_sampled"] == 20
