"""Offline data for the BC / MARWIL tests, recorded with the example's helpers."""

import runpy
from pathlib import Path

import pytest

from flywheel import PPOConfig

EXAMPLE = runpy.run_path(
    str(Path(__file__).parents[2] / "examples/offline_bc_cartpole.py"), run_name="example"
)
EXPERT_RETURN = 490


def record(folder, *, num_episodes, seed, weights=None):
    """Records `num_episodes` CartPole episodes with `weights` (random actions when None); returns their mean return."""
    config = PPOConfig().environment("CartPole-v1").rl_module(model_config={"fcnet_hiddens": [64, 64]})
    return EXAMPLE["record"](config.debugging(seed=seed), weights, str(folder), num_episodes)


@pytest.fixture(scope="session")
def expert_data(tmp_path_factory):
    """100 episodes of a PPO CartPole policy trained to a mean return of 490 (seed 1: ~65k env steps),
    trained once per test session; returns the folder and their mean return."""
    _, weights = EXAMPLE["train_expert"](smoke=False, target=EXPERT_RETURN)
    folder = tmp_path_factory.mktemp("expert")
    return folder, record(folder, num_episodes=100, seed=2, weights=weights)
