"""A runner makes exactly one env per sub-env slot and closes it on `stop()` only: no env is made to
check the contract or to read spaces (RLlib's `EnvWithSubprocess` example: an env that starts a
process, holds a license or a GPU pays for each instance)."""

import os

import numpy as np
import pytest

from flywheel import MultiAgentEnvRunner, PPOConfig
from flywheel.env import make_multi_agent
from flywheel.errors import EnvError
from flywheel.testing import CountingEnv

from .conftest import counting_config


def events(folder):
    """The lines the counting envs wrote, e.g. `["made 0/1", "made 0/0", "closed 0/1", ...]`."""
    path = os.path.join(folder, "events")
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return f.read().split()


class LoggedEnv(CountingEnv):
    """`CountingEnv` that appends `made <worker>/<sub-env>` and `closed ...` to `<folder>/events`
    (a file, so remote runners' processes count too)."""

    def __init__(self, config=None):
        super().__init__(config)
        self.where = f"{getattr(config, 'worker_index', '-')}/{getattr(config, 'vector_index', '-')}"
        self._log("made")

    def close(self):
        self._log("closed")
        super().close()

    def _log(self, what):
        with open(os.path.join(self.config["folder"], "events"), "a") as f:
            f.write(f"{what}:{self.where}\n")


class WrongShapeEnv(LoggedEnv):
    """Observations of shape (2,) for a (1,)-shaped space: the one-time check refuses it."""

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(2, np.float32), {}


MultiLoggedEnv = make_multi_agent(LoggedEnv)


def logged_config(folder, **env_runners):
    return counting_config(env=LoggedEnv, **env_runners).environment(
        env_config={"folder": str(folder), "episode_len": 3}
    )


@pytest.mark.parametrize("disable_env_checking", [False, True])
def test_a_runner_makes_one_env_per_sub_env_and_closes_them_on_stop(
    make_runner, tmp_path, disable_env_checking
):
    config = logged_config(tmp_path, num_envs=2).environment(disable_env_checking=disable_env_checking)
    runner = make_runner(config)
    runner.sample(num_timesteps=10)
    assert events(tmp_path) == ["made:0/0", "made:0/1"]
    runner.stop()
    assert events(tmp_path) == ["made:0/0", "made:0/1", "closed:0/0", "closed:0/1"]


def test_an_env_that_fails_the_check_is_closed_and_the_error_raised(tmp_path):
    config = counting_config(env=WrongShapeEnv, num_envs=2).environment(env_config={"folder": str(tmp_path)})
    with pytest.raises(EnvError, match=r"the shape is wrong \(\(2,\) instead of \(1,\)\)"):
        config.build_algo()
    assert events(tmp_path) == ["made:0/0", "closed:0/0"]


def test_a_multi_agent_runner_makes_one_env_per_sub_env(tmp_path):
    config = (
        PPOConfig()
        .environment(MultiLoggedEnv, env_config={"folder": str(tmp_path), "num_agents": 2, "episode_len": 3})
        .env_runners(num_envs_per_env_runner=2)
        .multi_agent(policies={"p0"}, policy_mapping_fn=lambda agent_id, *args, **kwargs: "p0")
    )
    runner = MultiAgentEnvRunner(config=config)
    runner.sample(num_timesteps=10)
    # Each multi-agent sub-env plays two copies of the counting env (one per agent).
    assert events(tmp_path) == ["made:0/0", "made:0/0", "made:0/1", "made:0/1"]
    runner.stop()
    assert events(tmp_path)[4:] == ["closed:0/0", "closed:0/0", "closed:0/1", "closed:0/1"]


def test_an_algorithm_with_evaluation_makes_one_env_per_runner_sub_env(tmp_path):
    config = (
        logged_config(tmp_path)
        .training(train_batch_size=32, minibatch_size=16, num_epochs=1)
        .evaluation(evaluation_interval=1, evaluation_duration=2)
    )
    algo = config.build_algo()
    algo.train()
    assert events(tmp_path) == ["made:0/0", "made:0/0"]  # the training runner's and the evaluation runner's
    algo.stop()
    assert events(tmp_path)[2:] == ["closed:0/0", "closed:0/0"]
