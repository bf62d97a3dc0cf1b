"""Fuzzed configs: `from_dict` on random dicts (known settings with values of any type, unknown keys)
gives a config or a ConfigError, and `validate()` on that config passes or raises a ConfigError,
never another exception."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from flywheel import (
    AlgorithmConfig,
    APPOConfig,
    BCConfig,
    CQLConfig,
    DQNConfig,
    IMPALAConfig,
    MARWILConfig,
    PPOConfig,
    SACConfig,
)
from flywheel.errors import ConfigError

pytestmark = pytest.mark.chaos

CONFIGS = [
    AlgorithmConfig,
    PPOConfig,
    DQNConfig,
    SACConfig,
    APPOConfig,
    IMPALAConfig,
    BCConfig,
    MARWILConfig,
    CQLConfig,
]
KNOWN = sorted({name for cls in CONFIGS for name in cls.setting_names()})

_LEAVES = (
    st.none()
    | st.booleans()
    | st.integers(-(2**40), 2**40)
    | st.sampled_from([0, 1, -1, 2, 2**63])
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=8)
    | st.sampled_from(["auto", "torch", "CartPole-v1", "default_policy", "truncate_episodes", "mean"])
    | st.sampled_from([math.sin, len, object(), int, PPOConfig])
)
VALUES = st.recursive(
    _LEAVES,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.tuples(inner, inner)
        | st.frozensets(st.integers(0, 3), max_size=3)
        | st.dictionaries(st.text(max_size=8) | st.sampled_from(KNOWN), inner, max_size=3)
    ),
    max_leaves=5,
)
SETTINGS = st.dictionaries(
    st.sampled_from(KNOWN) | st.text(max_size=10) | st.integers(-2, 2) | st.none(), VALUES, max_size=6
)


def _check(cls: type[AlgorithmConfig], settings: dict) -> None:
    try:
        config = cls.from_dict(settings)
    except ConfigError:
        return
    try:
        config.validate()
    except ConfigError:
        return
    assert cls.from_dict(config.to_dict()).validation_problems() == []


@pytest.mark.parametrize("cls", CONFIGS, ids=lambda cls: cls.__name__)
@given(settings=SETTINGS)
def test_from_dict_gives_a_config_or_a_config_error(cls, settings):
    _check(cls, settings)


@pytest.mark.parametrize("cls", CONFIGS, ids=lambda cls: cls.__name__)
@given(data=st.data(), value=VALUES)
def test_any_value_of_one_setting_validates_or_raises_a_config_error(cls, data, value):
    """One setting of the class changed at a time: each check meets values of every type on its own."""
    _check(cls, {data.draw(st.sampled_from(cls.setting_names()), label="name"): value})
