"""A small algorithm checkpoint to attack, copied fresh for every test, and the file payloads would create."""

import shutil

import pytest

from flywheel import PPOConfig
from flywheel.testing import CountingEnv


@pytest.fixture(scope="package")
def saved(tmp_path_factory):
    config = (
        PPOConfig()
        .environment(CountingEnv, env_config={"episode_len": 4})
        .training(train_batch_size_per_learner=32, minibatch_size=16, num_epochs=1)
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .debugging(seed=0)
    )
    algo = config.build_algo()
    algo.train()
    path = algo.save_to_path(tmp_path_factory.mktemp("saved") / "ckpt")
    algo.stop()
    return path


@pytest.fixture
def ckpt(saved, tmp_path):
    """A copy of the saved checkpoint this test may tamper with."""
    return shutil.copytree(saved, tmp_path / "ckpt")


@pytest.fixture
def proof(tmp_path):
    """The file a payload creates if it runs: every test asserts it is absent."""
    path = tmp_path / "pwned"
    yield path
    assert not path.exists(), "a payload from the checkpoint was executed"
