"""A copy of the small algorithm checkpoint (`saved`, tests/conftest.py) for every test to attack, and the
file payloads would create."""

import shutil

import pytest


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
