"""Helpers for checkpoint tests: exact comparison of nested states."""

import numpy as np


def assert_states_equal(actual, expected, path="state"):
    """Nested dicts/lists/tuples equal in structure and type, numpy arrays equal in dtype, shape and bits."""
    assert type(actual) is type(expected), f"{path}: {type(actual).__name__} != {type(expected).__name__}"
    if isinstance(expected, dict):
        assert list(actual) == list(expected), f"{path}: keys {list(actual)} != {list(expected)}"
        for key in expected:
            assert_states_equal(actual[key], expected[key], f"{path}/{key}")
    elif isinstance(expected, list | tuple):
        assert len(actual) == len(expected), f"{path}: length {len(actual)} != {len(expected)}"
        for i, (a, e) in enumerate(zip(actual, expected)):
            assert_states_equal(a, e, f"{path}/{i}")
    elif isinstance(expected, np.ndarray | np.generic):
        assert actual.dtype == expected.dtype and actual.shape == expected.shape, path
        np.testing.assert_array_equal(actual, expected, err_msg=path)
    else:
        assert actual == expected, f"{path}: {actual!r} != {expected!r}"
