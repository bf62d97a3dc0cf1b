"""Fixtures for algorithm tests."""

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
