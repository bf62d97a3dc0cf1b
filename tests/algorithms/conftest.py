"""Fixtures and helpers the algorithm tests share."""

import pytest


@pytest.fixture
def build():
    """`build(config)` builds an algorithm that is stopped after the test."""
    algos = []

    def make(config):
        algo = config.build_algo()
        algos.append(algo)
        return algo

    yield make
    for algo in algos:
        algo.stop()


def train_until(algo, threshold: float, budget: int) -> tuple[float, int]:
    """Trains `algo` until its mean episode return reaches `threshold` or it sampled `budget` env
    steps; stops it; returns that return and the env steps sampled."""
    try:
        while True:
            result = algo.train()
            steps = result["env_runners"]["num_env_steps_sampled_lifetime"]
            ret = result["env_runners"]["episode_return_mean"]
            if ret >= threshold or steps >= budget:
                return ret, steps
    finally:
        algo.stop()
