"""Offline data for the BC / MARWIL / CQL learning tests, recorded with the examples' helpers."""

import runpy
from pathlib import Path

import pytest

from flywheel import PPOConfig

EXAMPLE = runpy.run_path(
    str(Path(__file__).parents[2] / "examples/offline_bc_cartpole.py"), run_name="example"
)
CQL_EXAMPLE = runpy.run_path(
    str(Path(__file__).parents[2] / "examples/offline_cql_pendulum.py"), run_name="example"
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


@pytest.fixture(scope="session")
def sac_pendulum_replay(tmp_path_factory):
    """The replay data of a 20,000-step SAC run on Pendulum-v1 (the CQL example's `record_sac`: seed
    0, one update per 4 env steps; 20,000 rows), recorded once per test session; returns the folder
    and SAC's mean return over its last 10 episodes."""
    folder = tmp_path_factory.mktemp("sac-pendulum")
    return folder, CQL_EXAMPLE["record_sac"](str(folder), 20_000)
